/* conv1d reference (CPU ground truth): valid cross-correlation of each of the
 * batch signals x[b] (length n) with the filter w (length kw):
 *   y[b][i] = sum_{j<kw} x[b][i+j] * w[j],  0 <= i < n-kw+1.
 * Each output is accumulated in double and rounded once to float. */
#include <stddef.h>

void conv1d(const float *x, const float *w, float *y, int batch, int n, int kw) {
  int nout = n - kw + 1;
  for (int b = 0; b < batch; b++) {
    const float *xb = x + (size_t)b * (size_t)n;
    float *yb = y + (size_t)b * (size_t)nout;
    for (int i = 0; i < nout; i++) {
      double s = 0.0;
      for (int j = 0; j < kw; j++)
        s += (double)xb[i + j] * (double)w[j];
      yb[i] = (float)s;
    }
  }
}
