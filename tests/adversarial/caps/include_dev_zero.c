/* Reads a device file: cpp would read /dev/zero forever. Refused before
 * compiling (an absolute path). */
static const char z[] = {
#include "/dev/zero"
};
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
