/* transpose reference (CPU ground truth): x is rows x cols, y is cols x rows,
 * both row-major: y[c][r] = x[r][c]. */
#include <stddef.h>

void transpose(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++)
      y[(size_t)c * (size_t)rows + (size_t)r] = x[(size_t)r * (size_t)cols + (size_t)c];
}
