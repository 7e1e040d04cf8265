/* A test expert the gate rejects: every row's sum is off by one. */
// kevo:mechanism LANES -- two accumulators
#include <stddef.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
    float s = 1.0f;
#if KV_MECH_LANES
    float t = 0.0f;
    int c = 0;
    for (; c + 2 <= cols; c += 2) {
      s += xr[c];
      t += xr[c + 1];
    }
    for (; c < cols; c++)
      s += xr[c];
    s += t;
#else
    for (int c = 0; c < cols; c++)
      s += xr[c];
#endif
    y[r] = s;
  }
}
