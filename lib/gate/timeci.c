/* Adaptive timing's arithmetic: the order-statistic interval of a median,
 * the layout of the timing loop's phases and its stopping rule (see
 * kevo/timeci.h; the loop itself is in timing.c). */
#include "kevo/timeci.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HUGE_REL 1e9

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int kv_median_ci(const double *x, int n, double want, struct kv_median_ci *ci) {
  memset(ci, 0, sizeof *ci);
  if (n < 1 || !x)
    return -1;
  double *v = malloc(sizeof(double) * (size_t)n);
  if (!v)
    return -1;
  memcpy(v, x, sizeof(double) * (size_t)n);
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  ci->n = n;
  ci->median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  /* P(Bin(n, 1/2) <= i), from the pmf 2^-n C(n, i) in logs (n may be
   * large enough for 2^-n to underflow). k is the largest rank with
   * P(B <= k - 1) <= (1 - want) / 2; the interval is [v(k), v(n - k + 1)]
   * (1-based), of coverage 1 - 2 P(B <= k - 1). */
  double tail = (1 - want) / 2, cdf = 0, cdf_k = exp(-n * log(2.0));
  int k = 1;
  for (int i = 0; i < n / 2; i++) {
    cdf += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) - n * log(2.0));
    if (cdf > tail)
      break;
    k = i + 1; /* P(B <= k - 1) = cdf <= tail */
    cdf_k = cdf;
  }
  if (k > (n + 1) / 2)
    k = (n + 1) / 2;
  ci->lo = v[k - 1];
  ci->hi = v[n - k];
  ci->level = 1 - 2 * cdf_k;
  if (ci->level < 0)
    ci->level = 0;
  free(v);
  return 0;
}

double kv_median_ci_rel(const struct kv_median_ci *ci) {
  if (!(ci->median > 0) || ci->n < 1)
    return HUGE_REL;
  double r = (ci->hi - ci->lo) / 2 / ci->median;
  return isfinite(r) ? r : HUGE_REL;
}

void kv_timing_plan(double per_ns, double budget_s, int m_mem, double target,
                    struct kv_timing_plan *p) {
  memset(p, 0, sizeof *p);
  if (m_mem < 1)
    m_mem = 1;
  if (!(budget_s > 0))
    budget_s = 1.0;
  int n =
      per_ns > 0 ? (int)fmin(KV_TIMING_MAX_CALLS, budget_s * 1e9 / per_ns) : KV_TIMING_MAX_CALLS;
  if (n < KV_TIMING_MIN_CALLS)
    n = KV_TIMING_MIN_CALLS;
  int m = (n + 3) / 4;
  m = m > m_mem ? m_mem : m < 1 ? 1 : m;
  int P = (n + m - 1) / m;
  if (P < 2)
    P = 2;
  if (!(target > 0)) {
    p->m = m;
    p->rounds = p->min_rounds = P;
    p->valid_calls = P * m;
    return;
  }
  /* Adaptive: the budget's count is the most; split it finer where it
   * makes fewer rounds than an interval needs (slow calls). */
  if (P < KV_TIMING_MIN_ROUNDS) {
    m = (n + KV_TIMING_MIN_ROUNDS - 1) / KV_TIMING_MIN_ROUNDS;
    m = m > m_mem ? m_mem : m < 1 ? 1 : m;
    P = (n + m - 1) / m;
  }
  int mn = (KV_TIMING_MIN_CALLS + m - 1) / m;
  if (mn < KV_TIMING_MIN_ROUNDS)
    mn = KV_TIMING_MIN_ROUNDS;
  mn += mn & 1; /* whole ABBA pairs */
  if (P < mn)
    P = mn;
  p->m = m;
  p->rounds = P;
  p->min_rounds = mn;
  p->valid_calls = mn * m;
}

const char *kv_timing_stop_name(enum kv_timing_stop s) {
  switch (s) {
  case KV_TSTOP_GO:
    return "running";
  case KV_TSTOP_FIXED:
    return "fixed";
  case KV_TSTOP_CI:
    return "ci";
  case KV_TSTOP_MAX:
    return "max";
  case KV_TSTOP_DEADLINE:
    return "deadline";
  }
  return "?";
}

/* Relative half-width of the 95% interval of x's median; HUGE_REL when any
 * sample is unusable (not a positive finite number). */
static double rel_ci(const double *x, int n) {
  if (!x || n < 1)
    return HUGE_REL;
  for (int i = 0; i < n; i++)
    if (!(x[i] > 0) || !isfinite(x[i]))
      return HUGE_REL;
  struct kv_median_ci ci;
  if (kv_median_ci(x, n, 0.95, &ci) < 0)
    return HUGE_REL;
  return kv_median_ci_rel(&ci);
}

enum kv_timing_stop kv_timing_decide(const struct kv_timing_plan *p, double target,
                                     const double *ratio, const double *clock, int rounds,
                                     double elapsed_s, double deadline_s, double *hw,
                                     double *hw_clock) {
  double h = rel_ci(ratio, rounds), hc = rel_ci(clock, rounds);
  if (hw)
    *hw = h;
  if (hw_clock)
    *hw_clock = hc;
  if (rounds >= p->rounds)
    return target > 0 ? KV_TSTOP_MAX : KV_TSTOP_FIXED;
  if (!(target > 0) || rounds < p->min_rounds)
    return KV_TSTOP_GO;
  if (rounds % 2 == 0 && h <= target && hc <= fmax(target, KV_TIMING_CLOCK_CI))
    return KV_TSTOP_CI;
  if (deadline_s > 0 && elapsed_s >= deadline_s)
    return KV_TSTOP_DEADLINE;
  return KV_TSTOP_GO;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double sorted_median(const double *v, int n) {
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double kv_robust_sigma(const double *x, int n) {
  double *w = n >= 2 ? malloc(sizeof(double) * (size_t)n) : NULL;
  if (!w)
    return 0;
  memcpy(w, x, sizeof(double) * (size_t)n);
  qsort(w, (size_t)n, sizeof(double), cmp_dbl);
  double med = sorted_median(w, n);
  for (int i = 0; i < n; i++)
    w[i] = fabs(w[i] - med);
  qsort(w, (size_t)n, sizeof(double), cmp_dbl);
  double mad = sorted_median(w, n);
  free(w);
  return 1.4826 * mad;
}
