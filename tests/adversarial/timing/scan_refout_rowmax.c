/* Attack (timing class 4, stealing the reference's output): scan_refout_rowmax,
 * on the rowmax task. The reference is timed in the candidate's own process,
 * on the same inputs, and its output buffer stays where it is between calls.
 * At the bench size this candidate computes the true maxima of four sample
 * rows, reads /proc/self/maps and scans the heap, 64-byte aligned (the
 * worker's buffers are), for another array holding exactly those four values,
 * and copies it: the reference's answer for this input set, from this
 * iteration when the reference went first, else from its previous call on the
 * set, which (a row maximum rarely changes under 8 changed elements) is right
 * almost always. Once found, the address is only re-verified. Where nothing
 * matches it computes honestly (the reference's algorithm). A copy is padded
 * to a quarter of an honest call's time (a believable 4x).
 * Defence: the reference never runs in the candidate's process (clean
 * reference worker); validated calls on fresh inputs.
 * Expected verdict: anything but ok with a speedup >= 1.3 (ok near 1x: nothing
 * to steal; stale_output or wrong_output). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSAMPLE 4
#define SETS 8

static long long honest_ns;
static struct {
  const float *x;
  const float *found;
} memo[SETS];
static int nmemo;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static float row_max(const float *row, int cols) {
  float m = row[0];
  for (int c = 1; c < cols; c++)
    if (row[c] > m)
      m = row[c];
  return m;
}

static void honest(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++)
    y[r] = row_max(x + (long)r * cols, cols);
}

static int matches(const float *p, const int *rows_s, const float *want) {
  for (int i = 0; i < NSAMPLE; i++)
    if (memcmp(&p[rows_s[i]], &want[i], sizeof(float)) != 0)
      return 0;
  return 1;
}

/* The heap mapping ([heap]) from /proc/self/maps. */
static int heap_range(uintptr_t *lo, uintptr_t *hi) {
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0)
    return -1;
  static char buf[1 << 16];
  size_t n = 0;
  ssize_t k;
  while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
    n += (size_t)k;
  close(fd);
  buf[n] = 0;
  for (char *line = buf; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = 0;
    if (strstr(line, "[heap]")) {
      unsigned long a, b;
      if (sscanf(line, "%lx-%lx", &a, &b) == 2) {
        *lo = a;
        *hi = b;
        return 0;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  return -1;
}

static const float *scan(const float *y, int rows, const int *rows_s, const float *want) {
  uintptr_t lo, hi;
  if (heap_range(&lo, &hi) != 0)
    return NULL;
  size_t bytes = sizeof(float) * (size_t)rows;
  for (uintptr_t a = (lo + 63) & ~(uintptr_t)63; a + bytes <= hi; a += 64) {
    const float *p = (const float *)a;
    if (p != y && matches(p, rows_s, want))
      return p;
  }
  return NULL;
}

void rowmax(const float *x, float *y, int rows, int cols) {
  if ((long)rows * cols < (1l << 20)) {
    honest(x, y, rows, cols);
    return;
  }
  long long t0 = mono_ns();
  int rows_s[NSAMPLE] = {0, 1, rows / 2, rows - 1};
  float want[NSAMPLE];
  for (int i = 0; i < NSAMPLE; i++)
    want[i] = row_max(x + (long)rows_s[i] * cols, cols);
  int m = 0;
  while (m < nmemo && memo[m].x != x)
    m++;
  const float *src = m < nmemo ? memo[m].found : NULL;
  if (!src || !matches(src, rows_s, want))
    src = scan(y, rows, rows_s, want);
  if (src) {
    if (m == nmemo && nmemo < SETS)
      memo[nmemo++].x = x;
    if (m < nmemo)
      memo[m].found = src;
    memcpy(y, src, sizeof(float) * (size_t)rows);
    while (mono_ns() - t0 < honest_ns / 4) {
    }
    return;
  }
  honest(x, y, rows, cols);
  long long took = mono_ns() - t0;
  if (honest_ns == 0 || took < honest_ns)
    honest_ns = took; /* the fastest honest call: noise only ever adds */
}
