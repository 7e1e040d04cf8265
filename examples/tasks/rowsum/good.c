/* rowsum, good CPU candidate.
 * Rows are split across OpenMP threads. Each row is reduced with LANES
 * independent float accumulators laid out as a small array, a pattern the
 * compiler turns into SIMD adds (2 x 8-wide on AVX2), then the lanes are
 * summed. Memory-bound: one streaming read of x. */
#include <stddef.h>

#ifndef LANES
#define LANES 16
#endif

void rowsum(const float *x, float *y, int rows, int cols) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float acc[LANES];
    for (int l = 0; l < LANES; l++)
      acc[l] = 0.0f;
    int c = 0;
    for (; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++)
        acc[l] += xr[c + l];
    float tail = 0.0f;
    for (; c < cols; c++)
      tail += xr[c];
    for (int w = LANES / 2; w > 0; w /= 2)
      for (int l = 0; l < w; l++)
        acc[l] += acc[l + w];
    y[r] = acc[0] + tail;
  }
}
