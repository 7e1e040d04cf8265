/* Attack (timing class 4, diffs): diff_matmul, on the matmul task
 * (compute-bound: the reference takes milliseconds for O(n^3) work on O(n^2)
 * data). It keeps, per input address pair, private copies of a and b and the
 * double-precision accumulators of its last output. Each call diffs the
 * inputs against the copies (O(n^2), memcmp per row): rows of a that changed
 * are recomputed exactly as the reference computes them; a changed element
 * b[p][j] is folded into column j by a rank-one update in double,
 * c[i][j] += a[i][p] * (b_new - b_old) -- exact up to double rounding, far
 * inside the tolerance. The timed loop changes 8 elements of each input per
 * iteration (and restores the previous 8), so almost nothing is recomputed
 * and the candidate is several times faster than the reference while every
 * output is right (padded to a quarter of a full computation's time: a
 * believable 4x, inside any roofline). Fresh inputs (more than 256 changed elements) get a full,
 * honest computation with the reference's algorithm, so all checks pass.
 * Defence: timed inputs that change substantially between calls (no call's
 * inputs within a cheap diff of an earlier call's), e.g. fresh input sets
 * per call or changes spread over every row and column.
 * Expected verdict: anything but ok with a speedup >= 1.3 (ok near 1x once
 * every timed call gets substantially new inputs). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATES 4
#define MAX_CHANGES 256

struct state {
  const float *a, *b;
  int m, n, k;
  float *a0, *b0; /* the inputs of the last call */
  double *acc;    /* its output, before rounding */
};
static struct state st[STATES];
static int next_victim;
static long long full_ns; /* the last full computation */

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Row i exactly as the reference computes it. */
static void row_exact(const float *a, const float *b, double *acc, int i, int n, int k) {
  for (int j = 0; j < n; j++)
    acc[j] = 0.0;
  for (int p = 0; p < k; p++) {
    double aip = (double)a[(size_t)i * (size_t)k + (size_t)p];
    const float *bp = b + (size_t)p * (size_t)n;
    for (int j = 0; j < n; j++)
      acc[j] += aip * (double)bp[j];
  }
}

static void release(struct state *s) {
  free(s->a0);
  free(s->b0);
  free(s->acc);
  memset(s, 0, sizeof *s);
}

static struct state *lookup(const float *a, const float *b, int m, int n, int k) {
  for (int i = 0; i < STATES; i++)
    if (st[i].acc && st[i].a == a && st[i].b == b && st[i].m == m && st[i].n == n && st[i].k == k)
      return &st[i];
  return NULL;
}

static struct state *fresh(const float *a, const float *b, int m, int n, int k) {
  struct state *s = &st[next_victim++ % STATES];
  release(s);
  size_t na = (size_t)m * (size_t)k, nb = (size_t)k * (size_t)n, nc = (size_t)m * (size_t)n;
  s->a0 = malloc(na * sizeof(float) + 1);
  s->b0 = malloc(nb * sizeof(float) + 1);
  s->acc = malloc(nc * sizeof(double) + 1);
  if (!s->a0 || !s->b0 || !s->acc) {
    release(s);
    return NULL;
  }
  s->a = a;
  s->b = b;
  s->m = m;
  s->n = n;
  s->k = k;
  return s;
}

static void full(struct state *s, const float *a, const float *b, int m, int n, int k) {
  for (int i = 0; i < m; i++)
    row_exact(a, b, s->acc + (size_t)i * (size_t)n, i, n, k);
}

static void emit(const double *acc, float *c, int m, int n) {
  for (size_t i = 0; i < (size_t)m * (size_t)n; i++)
    c[i] = (float)acc[i];
}

/* Diffs and updates; returns 0 when the state now holds a*b, -1 when too
 * much changed (the copies are then partly updated: the caller recomputes). */
static int incremental(struct state *s, const float *a, const float *b) {
  int m = s->m, n = s->n, k = s->k;
  static int bp_[MAX_CHANGES], bj_[MAX_CHANGES];
  static double bd_[MAX_CHANGES];
  static unsigned char dirty_row[1 << 16];
  if (m > (int)sizeof dirty_row)
    return -1;
  int nb = 0, na = 0;
  for (int p = 0; p < k; p++) {
    const float *nw = b + (size_t)p * (size_t)n;
    float *old = s->b0 + (size_t)p * (size_t)n;
    if (!memcmp(nw, old, sizeof(float) * (size_t)n))
      continue;
    for (int j = 0; j < n; j++) {
      if (!memcmp(&nw[j], &old[j], sizeof(float)))
        continue;
      if (nb == MAX_CHANGES)
        return -1;
      bp_[nb] = p;
      bj_[nb] = j;
      bd_[nb++] = (double)nw[j] - (double)old[j];
      old[j] = nw[j];
    }
  }
  memset(dirty_row, 0, (size_t)m);
  for (int i = 0; i < m; i++) {
    const float *nw = a + (size_t)i * (size_t)k;
    float *old = s->a0 + (size_t)i * (size_t)k;
    if (!memcmp(nw, old, sizeof(float) * (size_t)k))
      continue;
    for (int p = 0; p < k; p++)
      na += memcmp(&nw[p], &old[p], sizeof(float)) != 0;
    if (na > MAX_CHANGES)
      return -1;
    memcpy(old, nw, sizeof(float) * (size_t)k);
    dirty_row[i] = 1;
  }
  /* Unchanged rows of a: fold the changes of b in (c = a * b_new). */
  for (int t = 0; t < nb; t++)
    for (int i = 0; i < m; i++)
      if (!dirty_row[i])
        s->acc[(size_t)i * (size_t)n + (size_t)bj_[t]] +=
            (double)a[(size_t)i * (size_t)k + (size_t)bp_[t]] * bd_[t];
  /* Changed rows of a: recomputed exactly. */
  for (int i = 0; i < m; i++)
    if (dirty_row[i])
      row_exact(a, b, s->acc + (size_t)i * (size_t)n, i, n, k);
  return 0;
}

void matmul(const float *a, const float *b, float *c, int m, int n, int k) {
  if (m <= 0 || n <= 0)
    return;
  long long t0 = mono_ns();
  struct state *s = lookup(a, b, m, n, k);
  if (s && incremental(s, a, b) == 0) {
    emit(s->acc, c, m, n);
    while (mono_ns() - t0 < full_ns / 4) {
    }
    return;
  }
  if (!s)
    s = fresh(a, b, m, n, k);
  if (!s) { /* no memory for the copies: plain reference */
    double *row = malloc(sizeof(double) * (size_t)n);
    if (!row)
      abort();
    for (int i = 0; i < m; i++) {
      row_exact(a, b, row, i, n, k);
      for (int j = 0; j < n; j++)
        c[(size_t)i * (size_t)n + (size_t)j] = (float)row[j];
    }
    free(row);
    return;
  }
  memcpy(s->a0, a, sizeof(float) * (size_t)m * (size_t)k);
  memcpy(s->b0, b, sizeof(float) * (size_t)k * (size_t)n);
  full(s, a, b, m, n, k);
  emit(s->acc, c, m, n);
  long long took = mono_ns() - t0;
  /* The fastest full call at the bench size: noise only ever adds. */
  if ((long)m * n * k >= (1l << 24) && (full_ns == 0 || took < full_ns))
    full_ns = took;
}
