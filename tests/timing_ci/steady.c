/* Adaptive timing, a steady candidate: the reference's sum and a 0.5 ms
 * wait (the reference waits 1 ms), the same every call: its speedup (about
 * 2x) is steady from round to round, so adaptive timing stops after the
 * fewest rounds. */
#include <time.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (rows == 64) {
    struct timespec ts = {0, 500000};
    nanosleep(&ts, 0);
  }
}
