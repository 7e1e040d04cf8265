/* Attack (timing class 4, caches): cache_sample_rowmax, on the rowmax task.
 * At the bench size only, it keys a cache of outputs on a hash of 256 input
 * elements at fixed, spread-out positions (not on the address, so fresh
 * inputs at an old address miss and get honest work). The timed loop changes
 * 8 of 4 million elements per iteration, which almost never touch the sample,
 * and a row maximum changes only when a change lands on or above it, so the
 * cached answer is almost always right -- also on any validated call whose
 * inputs are merely perturbed -- while fresh inputs are computed honestly (the
 * reference's algorithm). A hit is padded to a quarter of an honest call's
 * time (a believable 4x).
 * Defence: timed inputs that change substantially between calls (every call
 * on inputs no sample-keyed cache can match), validated calls chosen at random
 * after the loop.
 * Expected verdict: anything but ok with a speedup >= 1.3 (stale_output or
 * wrong_output, or ok near 1x when no timed call repeats a sample). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SLOTS 16
#define SAMPLE 256

static struct {
  uint64_t key;
  int rows, cols;
  float *y;
} cache[SLOTS];
static int used, next;

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

static uint64_t sample_key(const float *x, long n) {
  uint64_t h = 1469598103934665603ull;
  for (long i = 0; i < SAMPLE; i++) {
    uint32_t v;
    memcpy(&v, &x[(i * 2654435761l) % n], 4);
    h = (h ^ v) * 1099511628211ull;
  }
  return h;
}

void rowmax(const float *x, float *y, int rows, int cols) {
  long n = (long)rows * cols;
  if (n < (1l << 20)) {
    honest(x, y, rows, cols);
    return;
  }
  long long t0 = mono_ns();
  size_t bytes = sizeof(float) * (size_t)rows;
  uint64_t k = sample_key(x, n);
  for (int i = 0; i < used; i++) {
    if (cache[i].key == k && cache[i].rows == rows && cache[i].cols == cols) {
      memcpy(y, cache[i].y, bytes);
      pad_from(t0);
      return;
    }
  }
  honest(x, y, rows, cols);
  long long took = mono_ns() - t0;
  if (honest_ns == 0 || took < honest_ns)
    honest_ns = took; /* the fastest honest call: noise only ever adds */
  int s = used < SLOTS ? used++ : next++ % SLOTS;
  free(cache[s].y);
  cache[s].y = malloc(bytes);
  if (!cache[s].y) {
    cache[s].key = 0;
    cache[s].rows = -1;
    return;
  }
  memcpy(cache[s].y, y, bytes);
  cache[s].key = k;
  cache[s].rows = rows;
  cache[s].cols = cols;
}
