/* matmul, good CPU candidate.
 * Rows of c are split across OpenMP threads in blocks of MB rows; k is walked
 * in panels of KB so the rows of b in use stay in L2 (and a 16-column strip of
 * them in L1). The core is a 4 x 16 register tile of c: for each p it loads 16
 * contiguous floats of b once, broadcasts one float from each of 4 rows of a,
 * and does 64 multiply-adds into four 16-float accumulators (c0..c3) that the
 * compiler keeps in vector registers (`omp simd` on the 16-wide loop: one
 * 512-bit or two 256-bit registers per row). Leftover rows and columns take
 * plain loops. Accumulation is in float. */
#include <stddef.h>

#ifndef MB
#define MB 64
#endif
#ifndef KB
#define KB 256
#endif
#define TR 4
#define TC 16

static void tile_4x16(const float *a, const float *b, float *c, int n, int k, int p0, int p1) {
  float c0[TC], c1[TC], c2[TC], c3[TC];
  const float *a0 = a, *a1 = a + k, *a2 = a1 + k, *a3 = a2 + k;
  for (int l = 0; l < TC; l++) {
    c0[l] = c[l];
    c1[l] = c[(size_t)n + l];
    c2[l] = c[2 * (size_t)n + l];
    c3[l] = c[3 * (size_t)n + l];
  }
  for (int p = p0; p < p1; p++) {
    const float *bp = b + (size_t)p * (size_t)n;
    float x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];
#pragma omp simd
    for (int l = 0; l < TC; l++) {
      float bl = bp[l];
      c0[l] += x0 * bl;
      c1[l] += x1 * bl;
      c2[l] += x2 * bl;
      c3[l] += x3 * bl;
    }
  }
  for (int l = 0; l < TC; l++) {
    c[l] = c0[l];
    c[(size_t)n + l] = c1[l];
    c[2 * (size_t)n + l] = c2[l];
    c[3 * (size_t)n + l] = c3[l];
  }
}

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
      int j = 0;
      for (; j + TC <= n; j += TC) {
        int i = i0;
        for (; i + TR <= i1; i += TR)
          tile_4x16(a + (size_t)i * (size_t)k, b + j, c + (size_t)i * (size_t)n + (size_t)j, n, k,
                    p0, p1);
        for (; i < i1; i++) /* leftover rows */
          for (int p = p0; p < p1; p++) {
            float ap = a[(size_t)i * (size_t)k + (size_t)p];
            for (int l = 0; l < TC; l++)
              c[(size_t)i * (size_t)n + (size_t)(j + l)] +=
                  ap * b[(size_t)p * (size_t)n + (size_t)(j + l)];
          }
      }
      for (int i = i0; i < i1; i++) /* leftover columns */
        for (int p = p0; p < p1; p++) {
          float ap = a[(size_t)i * (size_t)k + (size_t)p];
          for (int jj = j; jj < n; jj++)
            c[(size_t)i * (size_t)n + (size_t)jj] += ap * b[(size_t)p * (size_t)n + (size_t)jj];
        }
    }
  }
}
