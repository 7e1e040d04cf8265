/* matmul starter (CPU): a naive candidate to improve on.
 * Textbook i, j, p loops with a float dot product per output; b is read down
 * its columns (stride n), so nearly every load of b misses the cache. The dot
 * product uses NACC independent partial sums. Single-threaded.
 */
// kevo:tune NACC=1,2,4,8
#include <stddef.h>

#ifndef NACC
#define NACC 1
#endif

void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      const float *ai = a + (size_t)i * (size_t)k;
      float part[NACC];
      for (int q = 0; q < NACC; q++)
        part[q] = 0.0f;
      int p = 0;
      for (; p + NACC <= k; p += NACC)
        for (int q = 0; q < NACC; q++)
          part[q] += ai[p + q] * b[(size_t)(p + q) * (size_t)n + (size_t)j];
      for (; p < k; p++)
        part[0] += ai[p] * b[(size_t)p * (size_t)n + (size_t)j];
      float s = 0.0f;
      for (int q = 0; q < NACC; q++)
        s += part[q];
      c[(size_t)i * (size_t)n + (size_t)j] = s;
    }
}
