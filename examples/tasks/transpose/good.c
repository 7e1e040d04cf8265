/* transpose, good CPU candidate.
 * Cache-blocked: TB x TB tiles, tiles spread over OpenMP threads. Inside a
 * tile the inner loop writes a contiguous run of y while reading a column of
 * the tile of x, which sits in L1 (TB=32: 4 KiB per tile), so each cache line
 * of x and of y is brought in once instead of once per element. */
#include <stddef.h>

#ifndef TB
#define TB 32
#endif

void transpose(const float *x, float *y, int rows, int cols) {
  int tr = (rows + TB - 1) / TB, tc = (cols + TB - 1) / TB;
  long ntiles = (long)tr * tc;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < ntiles; t++) {
    int r0 = (int)(t / tc) * TB, c0 = (int)(t % tc) * TB;
    int r1 = r0 + TB < rows ? r0 + TB : rows;
    int c1 = c0 + TB < cols ? c0 + TB : cols;
    for (int c = c0; c < c1; c++) {
      float *yc = y + (size_t)c * (size_t)rows;
      for (int r = r0; r < r1; r++)
        yc[r] = x[(size_t)r * (size_t)cols + (size_t)c];
    }
  }
}
