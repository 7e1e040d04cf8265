/* Control (timing suite): honest_matmul, an exact copy of the matmul
 * reference (the attacks on matmul compute this way when honest).
 * Expected verdict: ok with a speedup near 1x (0.67 to 1.3). */
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
