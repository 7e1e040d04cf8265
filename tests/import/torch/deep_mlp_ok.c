/* deep_mlp.py as its generated table lays the weights out: weights_0 holds
 * layers.K.weight at K*(hidden*hidden + hidden) and layers.K.bias right
 * after it; weights_1 norm.weight, weights_2 norm.bias. The BatchNorm is in
 * training mode: batch statistics, biased variance, eps 1e-5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 18

void deep_mlp(const float *x, float scale, const float *weights_0, const float *weights_1,
              const float *weights_2, const int64_t *weights_3, float *out, int batch_size,
              int hidden) {
  (void)weights_3;
  int n = batch_size, h = hidden;
  float *a = malloc(sizeof(float) * (size_t)n * (size_t)h);
  float *b = malloc(sizeof(float) * (size_t)n * (size_t)h);
  if (!a || !b) {
    free(a);
    free(b);
    return;
  }
  for (int j = 0; j < h; j++) {
    double mean = 0, var = 0;
    for (int i = 0; i < n; i++)
      mean += x[i * h + j];
    mean /= n;
    for (int i = 0; i < n; i++)
      var += (x[i * h + j] - mean) * (x[i * h + j] - mean);
    var /= n;
    for (int i = 0; i < n; i++)
      a[i * h + j] =
          (float)((x[i * h + j] - mean) / sqrt(var + 1e-5) * weights_1[j] + weights_2[j]);
  }
  for (int k = 0; k < DEPTH; k++) {
    const float *w = weights_0 + (size_t)k * ((size_t)h * h + h), *bias = w + (size_t)h * h;
    for (int i = 0; i < n; i++)
      for (int o = 0; o < h; o++) {
        float s = bias[o];
        for (int c = 0; c < h; c++)
          s += a[i * h + c] * w[o * h + c];
        b[i * h + o] = k + 1 < DEPTH && s < 0 ? 0 : s;
      }
    memcpy(a, b, sizeof(float) * (size_t)n * (size_t)h);
  }
  for (int i = 0; i < n * h; i++)
    out[i] = a[i] * scale;
  free(a);
  free(b);
}
