/* softmax reference (CPU ground truth): for each row r,
 *   y[r][c] = exp(x[r][c] - m) / sum_j exp(x[r][j] - m),  m = max_j x[r][j].
 * Subtracting the row maximum keeps exp from overflowing; exponentials and
 * the row sum are computed in double, each output is rounded once. */
#include <math.h>
#include <stddef.h>

void softmax(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    double m = -INFINITY;
    for (int c = 0; c < cols; c++)
      if ((double)xr[c] > m)
        m = (double)xr[c];
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += exp((double)xr[c] - m);
    for (int c = 0; c < cols; c++)
      yr[c] = (float)(exp((double)xr[c] - m) / s);
  }
}
