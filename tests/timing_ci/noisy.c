/* Adaptive timing, a noisy candidate: correct, but it waits 0.2 ms or 2 ms
 * by turns of 150 ms of the clock, so one phase takes up to 10x as long as
 * the next (as a kernel on a machine that someone else uses by fits would):
 * the interval never narrows, and the loop runs to the most rounds. */
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
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long turn = (long)((now.tv_sec % 1000) * 1000 + now.tv_nsec / 1000000) / 150;
    struct timespec ts = {0, turn % 2 ? 200000 : 2000000};
    nanosleep(&ts, 0);
  }
}
