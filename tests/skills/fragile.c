/* A test expert: removing TAIL leaves columns unsummed (the gate must reject
 * that step, and ZERO_INIT, which TAIL requires, must then stay untried). */
// kevo:mechanism ZERO_INIT -- start each row's sum from an explicit zero
// kevo:mechanism TAIL requires=ZERO_INIT -- sum the columns the 4-wide loop leaves over
// kevo:mechanism UNROLL4 anchor="s += xr[c] + xr[c + 1] + xr[c + 2] + xr[c + 3];" -- add four columns per iteration
#include <stddef.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
#if KV_MECH_ZERO_INIT
    float s = 0.0f;
#else
    float s = -0.0f;
#endif
    int c = 0;
#if KV_MECH_UNROLL4
    for (; c + 4 <= cols; c += 4)
      s += xr[c] + xr[c + 1] + xr[c + 2] + xr[c + 3];
#endif
#if KV_MECH_TAIL
    for (; c < cols; c++)
      s += xr[c];
#endif
    y[r] = s;
  }
}
