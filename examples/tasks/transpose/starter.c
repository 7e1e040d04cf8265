/* transpose starter (CPU): a naive candidate to improve on.
 * Walks x in TB x TB tiles (TB=1 is the plain row-by-row loop whose writes
 * to y stride by `rows` floats and miss the cache on every element).
 * Single-threaded.
 */
// kevo:tune TB=1,8,16,32,64
#include <stddef.h>

#ifndef TB
#define TB 1
#endif

void transpose(const float *x, float *y, int rows, int cols) {
  for (int r0 = 0; r0 < rows; r0 += TB)
    for (int c0 = 0; c0 < cols; c0 += TB) {
      int r1 = r0 + TB < rows ? r0 + TB : rows;
      int c1 = c0 + TB < cols ? c0 + TB : cols;
      for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++)
          y[(size_t)c * (size_t)rows + (size_t)r] = x[(size_t)r * (size_t)cols + (size_t)c];
    }
}
