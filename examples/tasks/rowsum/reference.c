/* rowsum reference (CPU ground truth): y[r] = sum over c of x[r][c].
 * Each row is accumulated in double and rounded once to float. */
#include <stddef.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += (double)xr[c];
    y[r] = (float)s;
  }
}
