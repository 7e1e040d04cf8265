/* layernorm, good CPU candidate.
 * Rows are split across OpenMP threads. Per row (16 KiB at cols=4096, so it
 * stays in L1/L2 between passes): two-pass mean and biased variance, each a
 * LANES-wide float reduction the compiler vectorizes; then one fused pass
 * y = (x*rstd - mean*rstd) * gamma + beta. The two-pass variance avoids the
 * cancellation of E[x^2] - E[x]^2. */
#include <math.h>
#include <stddef.h>

#ifndef LANES
#define LANES 16
#endif

void layernorm(const float *x, const float *gamma, const float *beta, float *y, float eps, int rows,
               int cols) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    float acc[LANES];
    int c;

    for (int l = 0; l < LANES; l++)
      acc[l] = 0.0f;
    for (c = 0; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++)
        acc[l] += xr[c + l];
    float s = 0.0f;
    for (; c < cols; c++)
      s += xr[c];
    for (int l = 0; l < LANES; l++)
      s += acc[l];
    float mean = s / (float)cols;

    for (int l = 0; l < LANES; l++)
      acc[l] = 0.0f;
    for (c = 0; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++) {
        float d = xr[c + l] - mean;
        acc[l] += d * d;
      }
    float v = 0.0f;
    for (; c < cols; c++) {
      float d = xr[c] - mean;
      v += d * d;
    }
    for (int l = 0; l < LANES; l++)
      v += acc[l];

    float rstd = 1.0f / sqrtf(v / (float)cols + eps);
    float shift = -mean * rstd;
    for (c = 0; c < cols; c++)
      yr[c] = (xr[c] * rstd + shift) * gamma[c] + beta[c];
  }
}
