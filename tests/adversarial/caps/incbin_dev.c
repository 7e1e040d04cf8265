/* The assembler reads a device file into the object: refused. */
__asm__(".section .rodata\n.incbin \"/dev/urandom\"\n.text");
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
