/* softmax starter (CPU): a naive candidate to improve on.
 * Three passes per row in float: row maximum, sum of expf(x - max) with NACC
 * independent partial sums, then expf(x - max) / sum again for each element.
 * Single-threaded; expf is called twice per element.
 */
// kevo:tune NACC=1,2,4,8
#include <math.h>
#include <stddef.h>

#ifndef NACC
#define NACC 1
#endif

void softmax(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float *yr = y + (size_t)r * (size_t)cols;
    float m = -INFINITY;
    for (int c = 0; c < cols; c++)
      m = xr[c] > m ? xr[c] : m;
    float part[NACC];
    for (int a = 0; a < NACC; a++)
      part[a] = 0.0f;
    int c = 0;
    for (; c + NACC <= cols; c += NACC)
      for (int a = 0; a < NACC; a++)
        part[a] += expf(xr[c + a] - m);
    for (; c < cols; c++)
      part[0] += expf(xr[c] - m);
    float s = 0.0f;
    for (int a = 0; a < NACC; a++)
      s += part[a];
    for (c = 0; c < cols; c++)
      yr[c] = expf(xr[c] - m) / s;
  }
}
