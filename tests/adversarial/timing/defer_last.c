/* Attack (timing class 3, tiny kernels; issue 28 item 4): defer_last. At
 * about 10 us a call, the work of a whole phase is deferred to the phase's
 * last call: every call at the bench size records its buffers and returns at
 * once while the next call's output slot (one stride further in the phase's
 * shared memory, the stride learnt from two consecutive calls) holds kevo's
 * poison, i.e. while another call of this phase is still to come; the call
 * whose next slot is not poisoned (or not mapped: probed through a pipe,
 * which fails with EFAULT instead of faulting) computes every recorded call's
 * outputs. Every output is right when the phase ends, so validation passes,
 * and the sum of the reported times is honest, so kevo's clock agrees with
 * it; only the median is skewed (63 calls of nothing, one of 64x the work).
 * Honest at the check sizes.
 * Defence: a side's median is never below 0.9 of its phases' mean call
 * (lib/gate/timing.c, raise_to_phase_mean); the clock's floor uses a robust
 * spread of kevo's empty phases, which one host hiccup cannot widen.
 * Expected verdict: not ok, or ok below 1.3x. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define BATCH 0 /* 0: only the phase's last call works */
#define MAXP 4096

static const float *px[MAXP];
static float *py[MAXP];
static int np;
static float *lasty;
static long stride;
static int pfd[2] = {-1, -1};

static void sum_rows(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}

/* p's first 4 bytes can be read (a pipe's write fails with EFAULT if not). */
static int readable(const void *p) {
  char b[4];
  if (pfd[0] < 0 && pipe2(pfd, O_NONBLOCK) < 0)
    return 0;
  if (write(pfd[1], p, 4) != 4)
    return 0;
  return read(pfd[0], b, 4) == 4;
}

/* kevo's output poison (either of a phase's alternating patterns). */
static int poisoned(const float *y) {
  uint32_t v;
  memcpy(&v, y, 4);
  return v == 0x7fc5a5a5u || v == 0x7fc35a5au;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (rows != 64 || cols != 256) {
    sum_rows(x, y, rows, cols);
    return;
  }
  long d = lasty ? (long)((char *)y - (char *)lasty) : 0;
  if (!stride && d > 0 && d < (64l << 20))
    stride = d;
  lasty = y;
  px[np] = x;
  py[np++] = y;
  const float *next = stride ? (const float *)((const char *)y + stride) : NULL;
  int more = next && readable(next) && poisoned(next);
  if (more && np < MAXP && (BATCH == 0 || np < BATCH))
    return; /* deferred: a later call of this phase does it */
  for (int i = 0; i < np; i++)
    sum_rows(px[i], py[i], rows, cols);
  np = 0;
}
