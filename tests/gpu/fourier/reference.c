/* Reference for the GPU timing-attack suite's fourier task. */
#include <math.h>

void fourier(const float *x, float *y, int n) {
  for (int i = 0; i < n; i++) {
    double v = (double)x[i], s = 0.0;
    for (int t = 1; t <= 16; t++)
      s += sin((double)t * v) / (double)t;
    y[i] = (float)s;
  }
}
