/* conv1d, good CPU candidate.
 * Work is split into (signal, chunk of CH outputs) items spread over OpenMP
 * threads. For a chunk, the outputs are zeroed and then updated one group of
 * four filter taps at a time: y[i] += w0*x[i+j] + w1*x[i+j+1] + ... over a
 * unit-stride range of i, which the compiler vectorizes; the chunk of y
 * (CH floats) and the matching window of x stay in L1. */
#include <stddef.h>

#ifndef CH
#define CH 1024
#endif

void conv1d(const float *x, const float *w, float *y, int batch, int n, int kw) {
  int nout = n - kw + 1;
  int nch = (nout + CH - 1) / CH;
  long items = (long)batch * nch;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < items; t++) {
    int b = (int)(t / nch), i0 = (int)(t % nch) * CH;
    int len = nout - i0 < CH ? nout - i0 : CH;
    const float *xb = x + (size_t)b * (size_t)n + (size_t)i0;
    float *yb = y + (size_t)b * (size_t)nout + (size_t)i0;
    for (int i = 0; i < len; i++)
      yb[i] = 0.0f;
    int j = 0;
    for (; j + 4 <= kw; j += 4) {
      float w0 = w[j], w1 = w[j + 1], w2 = w[j + 2], w3 = w[j + 3];
      const float *xj = xb + j;
      for (int i = 0; i < len; i++)
        yb[i] += w0 * xj[i] + w1 * xj[i + 1] + w2 * xj[i + 2] + w3 * xj[i + 3];
    }
    for (; j < kw; j++) {
      float wj = w[j];
      const float *xj = xb + j;
      for (int i = 0; i < len; i++)
        yb[i] += wj * xj[i];
    }
  }
}
