/* Attack (timing class 5, inputs modified during timing): mutate_last_call.
 * Uses validate_last_sleep's trick (a 0.5 s sleep in its second warm-up call
 * at the bench size shrinks the timed loop to the minimum of 5 iterations)
 * to know which call is the last of the timed loop, and from that call on,
 * after computing the right answer (the reference's algorithm), overwrites
 * its whole "const" input with zeros. The last timed output, the only one
 * validated, is right, and nothing reads the inputs afterwards. Otherwise
 * honest (speedup 1x).
 * Defence: inputs verified unchanged after timing, as after every check.
 * Expected verdict: anything but ok (input_mutated; stale_output or
 * wrong_output if later calls see the zeros). */
#include <stdint.h>
#include <string.h>
#include <time.h>

static int bench_calls;

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if ((long)rows * cols < (1l << 20))
    return;
  int call = bench_calls++;
  if (call == 1) {
    struct timespec ts = {0, 500000000};
    nanosleep(&ts, NULL);
  }
  if (call >= 6)
    memset((void *)(uintptr_t)x, 0, sizeof(float) * (size_t)rows * (size_t)cols);
}
