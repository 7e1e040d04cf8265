/* rowsum, annotated expert (CPU): the good kernel with its mechanisms marked,
 * so `kevo lineage extract` can walk it back to the naive loop with no LLM.
 * Memory-bound: one streaming read of x. */
// kevo:mechanism OMP_ROWS storage=global pipeline=rows-independent -- split the rows across OpenMP threads (one static chunk each)
// kevo:mechanism LANES anchor="acc[l] += xr[c + l];" -- sum each row in 16 independent accumulators, a pattern the compiler turns into SIMD adds, then add the tail
// kevo:mechanism TREE_COMBINE requires=LANES -- combine the 16 accumulators pairwise (log2 steps) instead of one after another
#include <stddef.h>

#define LANES 16

void rowsum(const float *x, float *y, int rows, int cols) {
#if KV_MECH_OMP_ROWS
#pragma omp parallel for schedule(static)
#endif
  for (int r = 0; r < rows; r++) {
    const float *xr = x + (size_t)r * (size_t)cols;
#if KV_MECH_LANES
    float acc[LANES];
    for (int l = 0; l < LANES; l++)
      acc[l] = 0.0f;
    int c = 0;
    for (; c + LANES <= cols; c += LANES)
      for (int l = 0; l < LANES; l++)
        acc[l] += xr[c + l];
    float tail = 0.0f;
    for (; c < cols; c++)
      tail += xr[c];
#if KV_MECH_TREE_COMBINE
    for (int w = LANES / 2; w > 0; w /= 2)
      for (int l = 0; l < w; l++)
        acc[l] += acc[l + w];
    y[r] = acc[0] + tail;
#else
    float s = tail;
    for (int l = 0; l < LANES; l++)
      s += acc[l];
    y[r] = s;
#endif
#else
    float s = 0.0f;
    for (int c = 0; c < cols; c++)
      s += xr[c];
    y[r] = s;
#endif
  }
}
