/* layernorm reference (CPU ground truth), as torch.nn.LayerNorm:
 *   mean = sum_c x[r][c] / cols
 *   var  = sum_c (x[r][c] - mean)^2 / cols        (biased, two passes)
 *   y[r][c] = (x[r][c] - mean) / sqrt(var + eps) * gamma[c] + beta[c]
 * Statistics and the output expression are computed in double. */
#include <math.h>
#include <stddef.h>

void layernorm(const float *x, const float *gamma, const float *beta, float *y, float eps, int rows,
               int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += (double)xr[c];
    double mean = s / cols;
    double v = 0.0;
    for (int c = 0; c < cols; c++) {
      double d = (double)xr[c] - mean;
      v += d * d;
    }
    double rstd = 1.0 / sqrt(v / cols + (double)eps);
    for (int c = 0; c < cols; c++)
      yr[c] = (float)(((double)xr[c] - mean) * rstd * (double)gamma[c] + (double)beta[c]);
  }
}
