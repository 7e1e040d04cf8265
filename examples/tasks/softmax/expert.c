/* softmax, annotated expert (CPU): the good kernel with its mechanisms
 * marked, so `kevo lineage extract` can walk it back to the naive three-pass
 * loop with no LLM. Per row: the maximum, e = exp(x - max), the sum, y = e/sum. */
// kevo:mechanism OMP_ROWS pipeline=rows-independent -- split the rows across OpenMP threads
// kevo:mechanism LANES_MAX anchor="mx[l] = xr[c + l] > mx[l] ? xr[c + l] : mx[l];" -- take the row maximum in 16 independent lanes so the compiler vectorizes the compares
// kevo:mechanism EXP_ONCE -- write exp(x - max) into y once, sum it, then scale y in place, instead of computing exp twice per element
// kevo:mechanism FAST_EXP requires=EXP_ONCE anchor="exp_shifted(xr, yr, cols, m);" -- an inline exp (Cody-Waite reduction, degree-7 polynomial, exponent bits) the compiler vectorizes, instead of libm's expf
// kevo:mechanism RECIP_MUL requires=EXP_ONCE anchor="yr[c] *= inv;" -- multiply by 1/sum instead of dividing every element
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LANES 16

#if KV_MECH_FAST_EXP
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
#endif

void softmax(const float *x, float *y, int rows, int cols) {
#if KV_MECH_OMP_ROWS
#pragma omp parallel for schedule(static)
#endif
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
#if KV_MECH_LANES_MAX
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
#else
    float m = -INFINITY;
    for (int c = 0; c < cols; c++)
      m = xr[c] > m ? xr[c] : m;
#endif
#if KV_MECH_EXP_ONCE
#if KV_MECH_FAST_EXP
    exp_shifted(xr, yr, cols, m);
#else
    for (int c = 0; c < cols; c++)
      yr[c] = expf(xr[c] - m);
#endif
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += yr[c];
#if KV_MECH_RECIP_MUL
    float inv = 1.0f / s;
    for (int c = 0; c < cols; c++)
      yr[c] *= inv;
#else
    for (int c = 0; c < cols; c++)
      yr[c] /= s;
#endif
#else
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += expf(xr[c] - m);
    for (int c = 0; c < cols; c++)
      yr[c] = expf(xr[c] - m) / s;
#endif
  }
}
