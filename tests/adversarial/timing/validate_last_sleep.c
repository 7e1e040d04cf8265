/* Attack (timing class 3, what is validated): validate_last_sleep. The worker
 * sizes its timed loop from the second warm-up iteration (candidate call plus
 * reference call) and never runs fewer than the minimum of 5 iterations; only
 * the output of the last timed call is validated. So this candidate sleeps
 * 0.5 s in its second warm-up call at the bench size (the loop shrinks to the
 * minimum, n = 5) and then knows which call is checked: the fifth timed one
 * (its seventh call at the bench size). That call does the full work (an
 * exact copy of the reference); the four before it sum only a quarter of the
 * rows -- about 4x faster, modest enough to stay inside a roofline check.
 * Defence: which timed calls are validated is decided after the loop, at
 * random, on fresh inputs (and more than one of them); the iteration count is
 * not in the candidate's hands.
 * Expected verdict: anything but ok with a speedup >= 1.3 (stale_output or
 * wrong_output on a validated lazy call; ok near 1x if the gate validates
 * every call's work some other way). */
#include <time.h>

static int bench_calls;

static void sum_rows(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if ((long)rows * cols < (1l << 20)) {
    sum_rows(x, y, rows, cols); /* correctness checks: always honest */
    return;
  }
  int call = bench_calls++;
  if (call <= 1 || call == 6) {
    sum_rows(x, y, rows, cols); /* warm-up, and the validated call */
    if (call == 1) {
      struct timespec ts = {0, 500000000};
      nanosleep(&ts, NULL);
    }
    return;
  }
  sum_rows(x, y, rows / 4, cols); /* nobody looks */
}
