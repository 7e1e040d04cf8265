/* Adaptive timing, a noisy candidate: correct, but every call of one phase
 * waits 0.2 ms and every call of the next 2 ms, by turns (as a kernel on a
 * machine that someone else uses by fits would), so one round's speedup is
 * several times the next's: the interval never narrows, and the loop runs to
 * the most rounds. A phase starts where more than 1 ms passed since the last
 * call returned (calls of one phase come back to back; the reference's phase
 * of 64 calls of 1 ms lies between two of the candidate's). Turns by the
 * phase, not by the clock: turns of a fixed length could average out over
 * phases of about their length (as an ASan build's are). */
#include <time.h>

static long phase;
static double last_s = -1;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (rows == 64 && (last_s < 0 || now_s() - last_s > 1e-3))
    phase++;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (rows == 64) {
    struct timespec ts = {0, phase % 2 ? 200000 : 2000000};
    nanosleep(&ts, 0);
    last_s = now_s();
  }
}
