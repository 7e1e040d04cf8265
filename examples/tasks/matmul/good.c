/* matmul, good CPU candidate.
 * Rows of c are split across OpenMP threads in blocks of MB. For each block,
 * k is walked in panels of KB and n in panels of NB so that the panel of b
 * (KB x NB floats, 64 KiB at the defaults) stays in L2 while MB rows reuse it.
 * The innermost loop is c[i][j0:j1] += a[i][p] * b[p][j0:j1], four values of
 * p at a time: unit-stride, vectorized by the compiler, with the partial row
 * of c (NB floats) held in L1. Accumulation is in float. */
#include <stddef.h>

#ifndef MB
#define MB 32
#endif
#ifndef KB
#define KB 128
#endif
#ifndef NB
#define NB 128
#endif

void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  int nblk = (m + MB - 1) / MB;
#pragma omp parallel for schedule(dynamic, 1)
  for (int ib = 0; ib < nblk; ib++) {
    int i0 = ib * MB, i1 = i0 + MB < m ? i0 + MB : m;
    for (int i = i0; i < i1; i++)
      for (int j = 0; j < n; j++)
        c[(size_t)i * (size_t)n + (size_t)j] = 0.0f;
    for (int p0 = 0; p0 < k; p0 += KB) {
      int p1 = p0 + KB < k ? p0 + KB : k;
      for (int j0 = 0; j0 < n; j0 += NB) {
        int j1 = j0 + NB < n ? j0 + NB : n, len = j1 - j0;
        for (int i = i0; i < i1; i++) {
          float *ci = c + (size_t)i * (size_t)n + (size_t)j0;
          const float *ai = a + (size_t)i * (size_t)k;
          int p = p0;
          for (; p + 4 <= p1; p += 4) {
            float a0 = ai[p], a1 = ai[p + 1], a2 = ai[p + 2], a3 = ai[p + 3];
            const float *b0 = b + (size_t)p * (size_t)n + (size_t)j0;
            const float *b1 = b0 + n, *b2 = b1 + n, *b3 = b2 + n;
            for (int j = 0; j < len; j++)
              ci[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j];
          }
          for (; p < p1; p++) {
            float ap = ai[p];
            const float *bp = b + (size_t)p * (size_t)n + (size_t)j0;
            for (int j = 0; j < len; j++)
              ci[j] += ap * bp[j];
          }
        }
      }
    }
  }
}
