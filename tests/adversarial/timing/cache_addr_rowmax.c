/* Attack (timing class 4, caches): cache_addr_rowmax, on the rowmax task. At
 * the bench size only (the correctness checks, which call twice at the same
 * addresses with new contents, always get honest work), it keeps the output
 * of the first call on each input address and returns a copy of it for every
 * later call on that address. The timed loop rotates two input sets at fixed
 * addresses and changes 8 elements per iteration; a row maximum changes only
 * when one of them lands on or above the maximum of its row (a few in a
 * thousand), so the cached answer passes the validation of the last timed
 * call almost always. A hit is padded to a quarter of an honest call's time
 * (a believable 4x). Honest work is the reference's own algorithm.
 * Defence: validated calls on completely fresh inputs at the addresses the
 * timed calls use, chosen after the loop (a cache keyed on the address
 * returns the old answer there); timed inputs that change substantially
 * between calls.
 * Expected verdict: anything but ok with a speedup >= 1.3 (stale_output or
 * wrong_output). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 8

static struct {
  const float *x;
  int rows, cols;
  float *y;
} cache[SLOTS];
static int used;

/* A hit waits until a quarter of an honest call's time has passed: 4x looks
 * like a good kernel and stays far inside any roofline. */
static long long honest_ns;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void pad_from(long long t0) {
  while (mono_ns() - t0 < honest_ns / 4) {
  }
}

static void honest(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    float m = row[0];
    for (int c = 1; c < cols; c++)
      if (row[c] > m)
        m = row[c];
    y[r] = m;
  }
}

void rowmax(const float *x, float *y, int rows, int cols) {
  if ((long)rows * cols < (1l << 20)) {
    honest(x, y, rows, cols);
    return;
  }
  long long t0 = mono_ns();
  size_t bytes = sizeof(float) * (size_t)rows;
  for (int i = 0; i < used; i++) {
    if (cache[i].x == x && cache[i].rows == rows && cache[i].cols == cols) {
      memcpy(y, cache[i].y, bytes);
      pad_from(t0);
      return;
    }
  }
  honest(x, y, rows, cols);
  long long took = mono_ns() - t0;
  if (honest_ns == 0 || took < honest_ns)
    honest_ns = took; /* the fastest honest call: noise only ever adds */
  if (used < SLOTS && (cache[used].y = malloc(bytes)) != NULL) {
    memcpy(cache[used].y, y, bytes);
    cache[used].x = x;
    cache[used].rows = rows;
    cache[used].cols = cols;
    used++;
  }
}
