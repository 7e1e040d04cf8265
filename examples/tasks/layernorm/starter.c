/* layernorm starter (CPU): a naive candidate to improve on.
 * Per row, in float: mean (pass 1), biased variance of x - mean (pass 2),
 * then y = (x - mean) / sqrtf(var + eps) * gamma + beta (pass 3). Reductions
 * use NACC independent partial sums. Single-threaded.
 */
// kevo:tune NACC=1,2,4,8
#include <math.h>
#include <stddef.h>

#ifndef NACC
#define NACC 1
#endif

void layernorm(const float *x, const float *gamma, const float *beta, float *y, float eps, int rows,
               int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    float part[NACC];
    int a, c;

    for (a = 0; a < NACC; a++)
      part[a] = 0.0f;
    for (c = 0; c + NACC <= cols; c += NACC)
      for (a = 0; a < NACC; a++)
        part[a] += xr[c + a];
    for (; c < cols; c++)
      part[0] += xr[c];
    float s = 0.0f;
    for (a = 0; a < NACC; a++)
      s += part[a];
    float mean = s / (float)cols;

    for (a = 0; a < NACC; a++)
      part[a] = 0.0f;
    for (c = 0; c + NACC <= cols; c += NACC)
      for (a = 0; a < NACC; a++) {
        float d = xr[c + a] - mean;
        part[a] += d * d;
      }
    for (; c < cols; c++) {
      float d = xr[c] - mean;
      part[0] += d * d;
    }
    float v = 0.0f;
    for (a = 0; a < NACC; a++)
      v += part[a];
    float rstd = 1.0f / sqrtf(v / (float)cols + eps);

    for (c = 0; c < cols; c++)
      yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
  }
}
