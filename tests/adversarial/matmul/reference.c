/* matmul reference for the timing-attack suite, a copy of
 * examples/tasks/matmul/reference.c (CPU ground truth):
 * c[i][j] = sum_p a[i][p] * b[p][j],
 * a is m x k, b is k x n, c is m x n, all row-major.
 * Each output row is accumulated in double (loop order i, p, j so that b is
 * read along its rows) and rounded once to float. */
#include <stddef.h>
#include <stdlib.h>

void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  double *acc = malloc((size_t)(n > 0 ? n : 1) * sizeof *acc);
  if (!acc)
    abort();
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++)
      acc[j] = 0.0;
    for (int p = 0; p < k; p++) {
      double aip = (double)a[(size_t)i * (size_t)k + (size_t)p];
      const float *bp = b + (size_t)p * (size_t)n;
      for (int j = 0; j < n; j++)
        acc[j] += aip * (double)bp[j];
    }
    for (int j = 0; j < n; j++)
      c[(size_t)i * (size_t)n + (size_t)j] = (float)acc[j];
  }
  free(acc);
}
