/* Attack: late_thread (work escaping the timer on another thread).
 * Returns immediately; a detached pthread sleeps 50 ms and only then computes
 * the row sums into y. Timed naively the call costs microseconds, and a
 * harness that reads the output late (or waits for the whole process to go
 * quiet) sees correct numbers.
 * Defence: the gate reads the output when the call returns; the poison is
 * still there.
 * Expected verdict (timing on): unwritten_output. Also accepted: crash (a late
 * thread touching buffers the worker already released), wrong_output or
 * stale_output (a late thread from an earlier call landing in a later call's
 * buffers). Never ok. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct job {
  const float *x;
  float *y;
  int rows, cols;
};

static void *late(void *arg) {
  struct job j = *(struct job *)arg;
  free(arg);
  struct timespec ts = {0, 50 * 1000 * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
  for (int r = 0; r < j.rows; r++) {
    const float *row = j.x + (long)r * j.cols;
    double s = 0.0;
    for (int c = 0; c < j.cols; c++)
      s += row[c];
    j.y[r] = (float)s;
  }
  return NULL;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  struct job *j = malloc(sizeof *j);
  if (!j)
    return;
  j->x = x;
  j->y = y;
  j->rows = rows;
  j->cols = cols;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &a, late, j) != 0)
    free(j);
  pthread_attr_destroy(&a);
}
