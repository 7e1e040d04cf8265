/* conv1d starter (CPU): a naive candidate to improve on.
 * One float dot product of length kw per output, NACC independent partial
 * sums. Single-threaded; every input element is loaded kw times.
 */
// kevo:tune NACC=1,2,4,8
#include <stddef.h>

#ifndef NACC
#define NACC 1
#endif

void conv1d(const float *x, const float *w, float *y, int batch, int n, int kw) {
  int nout = n - kw + 1;
  for (int b = 0; b < batch; b++)
    for (int i = 0; i < nout; i++) {
      const float *xi = x + (size_t)b * (size_t)n + (size_t)i;
      float part[NACC];
      for (int q = 0; q < NACC; q++)
        part[q] = 0.0f;
      int j = 0;
      for (; j + NACC <= kw; j += NACC)
        for (int q = 0; q < NACC; q++)
          part[q] += xi[j + q] * w[j + q];
      for (; j < kw; j++)
        part[0] += xi[j] * w[j];
      float s = 0.0f;
      for (int q = 0; q < NACC; q++)
        s += part[q];
      y[(size_t)b * (size_t)nout + (size_t)i] = s;
    }
}
