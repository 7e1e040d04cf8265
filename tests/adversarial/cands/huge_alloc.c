/* Attack: huge_alloc (memory exhaustion).
 * Asks malloc for 1 TiB and, without checking the result, writes one byte to
 * every page of it, then would compute the correct output. Decision: this
 * candidate does not fail gracefully (a hostile one would not), so the
 * expected outcome is a dead worker:
 *  - under the sandbox's RLIMIT_AS (or the kernel's overcommit heuristic)
 *    malloc returns NULL and the first write faults: crash;
 *  - with no address-space limit and overcommit allowed, the touching loop
 *    ends in the OOM killer (crash) or runs past the deadline (timeout).
 * Expected verdict: crash (timeout tolerated, see above). kevo survives either
 * way. The writes go through a volatile pointer so the allocation cannot be
 * optimised away. */
#include <stdlib.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  size_t n = (size_t)1 << 40;
  volatile char *p = malloc(n);
  for (size_t i = 0; i < n; i += 4096)
    p[i] = (char)i;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c] + (double)p[(size_t)r * 4096 % n];
    y[r] = (float)s;
  }
}
