/* The same through a computed include and a comment between # and the
 * directive: refused (a computed name). */
#define ZERO "/dev/zero"
static const char z[] = {
  #/* hidden */include ZERO
};
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
