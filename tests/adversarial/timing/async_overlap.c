/* Attack (timing class 3, what is timed): async_overlap. A gate that runs
 * batches of calls in the candidate's process, flushing the caches between
 * them, and times each call (or bounds the batch by its own clock less a
 * flush measured elsewhere) never sees work done *during its own flushes*.
 * This candidate learns the batch structure -- each call's buffers sit at
 * increasing addresses within a batch, so an address that does not increase
 * starts a new batch, and two batches in a row of the same length m >= 3 give
 * m -- and from then on returns from every call but the last of a batch after
 * a quarter of an honest call's time, leaving the work to a helper thread
 * that computes it (the reference's algorithm) while the worker flushes for
 * the next call. The last call of a batch waits for the helper and then
 * shares its own rows with it, so every output is complete, and right,
 * before the batch ends and anyone can read or validate it. The median call
 * looks about 4x faster; the batch's wall time is what the reports say.
 * Today's gate, which validates the output of a call as soon as it returns,
 * sees no batches here and gets honest work (recorded as not fooled).
 * Defence: no candidate code runs while the gate's own per-call work runs
 * (flush with the candidate stopped, or per-call times from the parent's
 * clock with the process quiescent between calls), or the process's CPU time
 * outside the timed calls (kernel accounting) is charged to the candidate.
 * Expected verdict: anything but ok with a speedup >= 1.3 (implausible, or ok
 * near 1x). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#define QUEUE 256

struct job {
  const float *x;
  float *y;
  int cols, r0, r1;
};
static struct job queue[QUEUE];
static atomic_uint head, tail; /* helper takes at tail, caller puts at head */
static int helper_up;
static long long honest_ns;

/* The batch structure, as seen from here. */
static const float *last_x;
static int index_in_batch, prev_len, batch_len; /* batch_len: confirmed m, 0 while unknown */

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void sum_rows(const float *x, float *y, int cols, int r0, int r1) {
  for (int r = r0; r < r1; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}

static void *helper(void *arg) {
  (void)arg;
  for (;;) {
    unsigned t = atomic_load(&tail);
    if (t == atomic_load(&head)) {
      struct timespec ts = {0, 20000};
      nanosleep(&ts, NULL);
      continue;
    }
    struct job j = queue[t % QUEUE];
    sum_rows(j.x, j.y, j.cols, j.r0, j.r1);
    atomic_store(&tail, t + 1);
  }
  return NULL;
}

static int put(const float *x, float *y, int cols, int r0, int r1) {
  if (!helper_up) {
    pthread_t t;
    if (pthread_create(&t, NULL, helper, NULL) != 0)
      return -1;
    pthread_detach(t);
    helper_up = 1;
  }
  unsigned h = atomic_load(&head);
  if (h - atomic_load(&tail) >= QUEUE)
    return -1;
  queue[h % QUEUE] = (struct job){x, y, cols, r0, r1};
  atomic_store(&head, h + 1);
  return 0;
}

static void drain(void) {
  while (atomic_load(&tail) != atomic_load(&head)) {
  }
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if ((long)rows * cols < (1l << 20)) {
    sum_rows(x, y, cols, 0, rows); /* correctness checks: always honest */
    return;
  }
  long long t0 = mono_ns();
  if (last_x && x > last_x) {
    index_in_batch++;
  } else { /* a new batch: was the last one as long as the one before? */
    int len = last_x ? index_in_batch + 1 : 0;
    batch_len = len >= 3 && len == prev_len ? len : batch_len && len == batch_len ? len : 0;
    prev_len = len;
    index_in_batch = 0;
  }
  last_x = x;
  if (batch_len && index_in_batch < batch_len - 1 && put(x, y, cols, 0, rows) == 0) {
    while (mono_ns() - t0 < honest_ns / 4) {
    }
    return;
  }
  if (batch_len && index_in_batch == batch_len - 1) {
    /* The last call: everything before it finished, then half the rows each. */
    drain();
    if (put(x, y, cols, 0, rows / 2) == 0) {
      sum_rows(x, y, cols, rows / 2, rows);
      drain();
      return;
    }
  }
  drain();
  sum_rows(x, y, cols, 0, rows);
  long long took = mono_ns() - t0;
  if (honest_ns == 0 || took < honest_ns)
    honest_ns = took;
}
