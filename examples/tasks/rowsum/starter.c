/* rowsum starter (CPU): a naive candidate to improve on.
 * One pass per row with NACC independent float partial sums (NACC=1 is the
 * plain sequential loop), combined at the end of the row. Single-threaded,
 * no blocking, no explicit vectorization.
 */
// kevo:tune NACC=1,2,4,8,16
#include <stddef.h>

#ifndef NACC
#define NACC 1
#endif

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float part[NACC];
    for (int a = 0; a < NACC; a++)
      part[a] = 0.0f;
    int c = 0;
    for (; c + NACC <= cols; c += NACC)
      for (int a = 0; a < NACC; a++)
        part[a] += xr[c + a];
    for (; c < cols; c++)
      part[0] += xr[c];
    float s = 0.0f;
    for (int a = 0; a < NACC; a++)
      s += part[a];
    y[r] = s;
  }
}
