/* softmax, good CPU candidate.
 * Rows are split across OpenMP threads. Per row (it stays in L1/L2):
 *   1. row maximum with LANES independent lanes (vectorizes),
 *   2. e = exp(x - max) written into y, with an inline exp that the compiler
 *      can vectorize (libm's expf cannot be without -ffast-math), summed in
 *      LANES float lanes,
 *   3. y *= 1/sum.
 * exp: e^v = 2^t * e^r, t = round(v*log2(e)), r = v - t*ln2 (two-constant
 * Cody-Waite split, |r| <= ln2/2), e^r by its degree-7 Taylor polynomial
 * (truncation error < 1e-8 relative), 2^t built from the exponent bits.
 * Arguments are <= 0 here; they are clamped at -87 so 2^t stays normal. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef LANES
#define LANES 16
#endif

static void exp_shifted(const float *x, float *e, int n, float m) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693145751953125f; /* few mantissa bits: t*ln2_hi is exact */
  const float ln2_lo = 1.42860682030941723e-6f;
  for (int i = 0; i < n; i++) {
    float v = x[i] - m;
    v = v < -87.0f ? -87.0f : v;
    float t = floorf(v * log2e + 0.5f);
    float r = (v - t * ln2_hi) - t * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t bits = ((int32_t)t + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    e[i] = p * s;
  }
}

void softmax(const float *x, float *y, int rows, int cols) {
#pragma omp parallel for schedule(static)
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    float mx[LANES];
    for (int l = 0; l < LANES; l++)
      mx[l] = -INFINITY;
    int c = 0;
    for (; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++)
        mx[l] = xr[c + l] > mx[l] ? xr[c + l] : mx[l];
    for (; c < cols; c++)
      mx[0] = xr[c] > mx[0] ? xr[c] : mx[0];
    float m = mx[0];
    for (int l = 1; l < LANES; l++)
      m = mx[l] > m ? mx[l] : m;

    exp_shifted(xr, yr, cols, m);

    float acc[LANES];
    for (int l = 0; l < LANES; l++)
      acc[l] = 0.0f;
    for (c = 0; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++)
        acc[l] += yr[c + l];
    float s = 0.0f;
    for (; c < cols; c++)
      s += yr[c];
    for (int l = 0; l < LANES; l++)
      s += acc[l];
    float inv = 1.0f / s;
    for (c = 0; c < cols; c++)
      yr[c] *= inv;
  }
}
