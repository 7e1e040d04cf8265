/* Adaptive timing's arithmetic (kevo/timeci.h): the order-statistic
 * interval of a median against an exact binomial computed here another way
 * and against simulated coverage; the plan (the fixed budget's layout is the
 * gate's historical one; the adaptive one never times fewer than 10 calls or
 * 6 rounds, and never much more than the budget's count); the stopping rule
 * (stops on steady figures after the fewest rounds, only on whole ABBA
 * pairs, never on figures that are steady only as reported, never past the
 * most rounds, at the deadline only after the fewest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kevo/timeci.h"

/* C(n, i) exactly for n <= 60. */
static uint64_t choose(int n, int i) {
  uint64_t c = 1;
  for (int k = 1; k <= i; k++)
    c = c * (uint64_t)(n - i + k) / (uint64_t)k;
  return c;
}

static void test_ci_exact(void **state) {
  (void)state;
  double x[60];
  for (int n = 1; n <= 60; n++) {
    for (int i = 0; i < n; i++) /* a permutation of 0..n-1, unsorted */
      x[i] = (double)(i % 2 ? i / 2 : n - 1 - i / 2);
    /* The largest k with P(B <= k - 1) <= 0.025, by exact integers. */
    int k = 1;
    uint64_t cum = 0;
    long double total = ldexpl(1.0L, n), cum_k = 1.0L;
    for (int i = 0; i < n / 2; i++) {
      cum += choose(n, i);
      if ((long double)cum / total > 0.025L)
        break;
      k = i + 1;
      cum_k = (long double)cum;
    }
    struct kv_median_ci ci;
    assert_int_equal(kv_median_ci(x, n, 0.95, &ci), 0);
    assert_int_equal(ci.n, n);
    assert_true(fabs(ci.lo - (k - 1)) < 1e-12);
    assert_true(fabs(ci.hi - (n - k)) < 1e-12);
    assert_true(fabs(ci.median - (n - 1) / 2.0) < 1e-12);
    double level = (double)(1.0L - 2.0L * cum_k / total);
    if (fabs(ci.level - level) > 1e-9)
      fail_msg("n=%d: level %.12f, expected %.12f", n, ci.level, level);
    if (n >= 6)
      assert_true(ci.level >= 0.95);
  }
  /* The known cases. */
  double six[6] = {3, 1, 2, 6, 5, 4}, ten[10] = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  struct kv_median_ci ci;
  kv_median_ci(six, 6, 0.95, &ci);
  assert_true(ci.lo == 1 && ci.hi == 6 && fabs(ci.level - (1 - 2.0 / 64)) < 1e-12);
  assert_true(six[0] == 3); /* the input is left as it was */
  kv_median_ci(ten, 10, 0.95, &ci);
  assert_true(ci.lo == 2 && ci.hi == 9 && fabs(ci.level - (1 - 22.0 / 1024)) < 1e-12);
  kv_median_ci(six, 4, 0.95, &ci); /* too few for 95%: (min, max), 87.5% */
  assert_true(ci.lo == 1 && ci.hi == 6 && fabs(ci.level - 0.875) < 1e-12);
  assert_int_equal(kv_median_ci(six, 0, 0.95, &ci), -1);
  /* Large n: no underflow, a narrow interval around the middle. */
  static double big[2001];
  for (int i = 0; i < 2001; i++)
    big[i] = i;
  kv_median_ci(big, 2001, 0.95, &ci);
  assert_true(ci.median == 1000 && ci.lo > 950 && ci.lo < 1000 && ci.hi < 1050 && ci.hi > 1000 &&
              ci.level >= 0.95 && ci.level < 0.96);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double unif(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return ((double)(rng >> 11) + 0.5) * 0x1p-53;
}

/* Coverage: skewed samples (log-normal, median 1) and heavy-tailed ones
 * (a ratio of two): the interval holds the true median about as often as
 * it says, whatever the distribution. */
static void test_ci_coverage(void **state) {
  (void)state;
  int sizes[] = {6, 9, 16, 40};
  for (int s = 0; s < 4; s++) {
    int n = sizes[s], hit = 0, trials = 4000;
    double level = 0;
    for (int t = 0; t < trials; t++) {
      double x[40];
      for (int i = 0; i < n; i++) {
        double g = sqrt(-2 * log(unif())) * cos(6.283185307179586 * unif());
        x[i] = t % 2 ? exp(0.3 * g) : 1.0 + 0.05 * tan(3.141592653589793 * (unif() - 0.5));
      }
      struct kv_median_ci ci;
      kv_median_ci(x, n, 0.95, &ci);
      level = ci.level;
      hit += ci.lo <= 1.0 && 1.0 <= ci.hi;
    }
    double cov = (double)hit / trials;
    if (cov < level - 0.015 || cov > level + 0.015)
      fail_msg("n=%d: coverage %.3f, the interval says %.3f", n, cov, level);
  }
}

/* The gate's layout before adaptive timing (timing.c, issue 8). */
static void old_plan(double per, double budget, int m_mem, int *m_out, int *p_out) {
  int n = per > 0 ? (int)fmin(1000, budget * 1e9 / per) : 1000;
  if (n < 10)
    n = 10;
  int m = (n + 3) / 4;
  m = m > m_mem ? m_mem : m < 1 ? 1 : m;
  int P = (n + m - 1) / m;
  if (P < 2)
    P = 2;
  *m_out = m;
  *p_out = P;
}

static void test_plan(void **state) {
  (void)state;
  double pers[] = {0, 1e3, 5e4, 2e5, 1e6, 2e7, 5e7, 1e8, 2.2e8, 1e9, 1e11};
  double budgets[] = {0.1, 0.2, 0.5, 1.0, 3.0};
  int mems[] = {1, 2, 3, 7, 64};
  for (int a = 0; a < 11; a++)
    for (int b = 0; b < 5; b++)
      for (int c = 0; c < 5; c++) {
        struct kv_timing_plan f, p;
        int om, op;
        old_plan(pers[a], budgets[b], mems[c], &om, &op);
        kv_timing_plan(pers[a], budgets[b], mems[c], 0, &f);
        assert_int_equal(f.m, om);
        assert_int_equal(f.rounds, op);
        assert_int_equal(f.min_rounds, op);
        assert_int_equal(f.valid_calls, om * op);
        kv_timing_plan(pers[a], budgets[b], mems[c], 0.01, &p);
        assert_true(p.m >= 1 && p.m <= mems[c] && p.m <= f.m);
        assert_true(p.min_rounds >= KV_TIMING_MIN_ROUNDS && p.min_rounds % 2 == 0);
        assert_true(p.min_rounds * p.m >= KV_TIMING_MIN_CALLS);
        assert_true(p.rounds >= p.min_rounds);
        assert_int_equal(p.valid_calls, p.min_rounds * p.m);
        /* The most: the budget's count, or the fewest where that is more. */
        int most = p.rounds * p.m, fixed = f.rounds * f.m;
        if (most > fixed * 1.25 && most > p.min_rounds * p.m)
          fail_msg("per %g budget %g m_mem %d: adaptive may time %d calls, fixed %d", pers[a],
                   budgets[b], mems[c], most, fixed);
        if (f.rounds >= KV_TIMING_MIN_ROUNDS && f.m * KV_TIMING_MIN_ROUNDS >= 10)
          assert_true(p.m == f.m &&
                      p.rounds == (f.rounds > p.min_rounds ? f.rounds : p.min_rounds));
      }
  /* Fast calls: 1000 calls in phases of 64, at least 6 rounds of 64. */
  struct kv_timing_plan p;
  kv_timing_plan(5e4, 1.0, 64, 0.01, &p);
  assert_true(p.m == 64 && p.rounds == 16 && p.min_rounds == 6);
  /* Slow calls: 10 calls as 6 rounds of 2 (not 4 of 3). */
  kv_timing_plan(2e8, 1.0, 64, 0.01, &p);
  assert_true(p.m == 2 && p.rounds == 6 && p.min_rounds == 6);
  /* One call per phase (huge buffers): never fewer than 10 calls. */
  kv_timing_plan(2e8, 1.0, 1, 0.01, &p);
  assert_true(p.m == 1 && p.min_rounds == 10 && p.rounds == 10);
}

static void fill(double *x, int n, double v, double amp) {
  for (int i = 0; i < n; i++)
    x[i] = v * (1 + amp * (i % 2 ? 1 : -1) * (1 + (i % 3)) / 3.0);
}

static void test_decide(void **state) {
  (void)state;
  struct kv_timing_plan p;
  kv_timing_plan(5e4, 1.0, 64, 0.01, &p); /* 6..16 rounds */
  const int most = p.rounds;
  double ratio[64], clock[64], hw, hc;
  /* Steady by both: stops at the fewest rounds, not before, and on no odd
   * round. */
  fill(ratio, 64, 2.0, 0.002);
  fill(clock, 64, 50e3, 0.003);
  for (int r = 1; r < 6; r++)
    assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, r, 0, 0, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 6, 0, 0, &hw, &hc), KV_TSTOP_CI);
  assert_true(hw > 0 && hw <= 0.01 && hc > 0 && hc <= 0.01);
  struct kv_timing_plan p7 = p;
  p7.min_rounds = 7; /* (never made by the plan) */
  assert_int_equal(kv_timing_decide(&p7, 0.01, ratio, clock, 7, 0, 0, NULL, NULL), KV_TSTOP_GO);
  /* A tighter target than the figures allow: on to the most. */
  for (int r = 6; r < most; r++)
    assert_int_equal(kv_timing_decide(&p, 0.001, ratio, clock, r, 0, 0, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.001, ratio, clock, most, 0, 0, NULL, NULL), KV_TSTOP_MAX);
  /* Noisy (a loaded host): never stops early. */
  fill(ratio, 64, 2.0, 0.1);
  for (int r = 1; r < most; r++)
    assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, r, 0, 0, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, most, 0, 0, NULL, NULL), KV_TSTOP_MAX);
  /* kevo's clock steady within KV_TIMING_CLOCK_CI (6.5%), not within the 1%
   * target nor the 3% it was: it may stop (the clock bounds a forgery, 13%
   * below it, and needs no 1%). */
  fill(ratio, 64, 2.0, 0.002);
  fill(clock, 64, 50e3, 0.05);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 6, 0, 0, NULL, &hc), KV_TSTOP_CI);
  assert_true(hc > 0.03 && hc <= KV_TIMING_CLOCK_CI);
  /* A cheater's steady report over phases that kevo's clock sees vary by
   * 15%: the loop goes on. */
  fill(ratio, 64, 2.0, 0.0);
  fill(clock, 64, 50e3, 0.15);
  for (int r = 1; r < most; r++)
    assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, r, 0, 0, NULL, NULL), KV_TSTOP_GO);
  /* kevo's clock cannot resolve the calls (the overhead is most of a
   * phase): no early stop. */
  fill(clock, 64, 50e3, 0.0);
  clock[3] = -10;
  for (int r = 6; r < most; r += 2)
    assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, r, 0, 0, NULL, &hc), KV_TSTOP_GO);
  assert_true(hc > 1);
  clock[3] = NAN;
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 6, 0, 0, NULL, NULL), KV_TSTOP_GO);
  /* One disturbed round among ten: the interval leaves it out once it can. */
  fill(ratio, 64, 2.0, 0.002);
  fill(clock, 64, 50e3, 0.002);
  ratio[2] = 3.0;
  clock[4] = 80e3;
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 6, 0, 0, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 8, 0, 0, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 10, 0, 0, NULL, NULL), KV_TSTOP_CI);
  /* The deadline: only once the fewest rounds ran. */
  fill(ratio, 64, 2.0, 0.1);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 5, 9, 3, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 6, 2, 3, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&p, 0.01, ratio, clock, 7, 9, 3, NULL, NULL),
                   KV_TSTOP_DEADLINE);
  /* A fixed budget: every round, whatever the figures. */
  struct kv_timing_plan f;
  kv_timing_plan(5e4, 1.0, 64, 0, &f);
  fill(ratio, 64, 2.0, 0.0);
  for (int r = 1; r < f.rounds; r++)
    assert_int_equal(kv_timing_decide(&f, 0, ratio, clock, r, 100, 1, NULL, NULL), KV_TSTOP_GO);
  assert_int_equal(kv_timing_decide(&f, 0, ratio, clock, f.rounds, 0, 0, NULL, NULL),
                   KV_TSTOP_FIXED);
  assert_string_equal(kv_timing_stop_name(KV_TSTOP_CI), "ci");
}

/* kv_robust_sigma: the clock slack's spread (issue 28 item 4). One host
 * hiccup among the empty phases (a 5 ms phase among 20 us ones) leaves it at
 * the phases' own noise, where the range it replaced became 5 ms (and at
 * 10 us calls drove kevo's clock floor to 0). */
static void test_robust_sigma(void **state) {
  (void)state;
  double x[21];
  for (int i = 0; i < 20; i++)
    x[i] = 20000 + ((i * 7) % 11 - 5) * 100.0; /* 20 us +- 0.5 us */
  double clean = kv_robust_sigma(x, 20);
  assert_true(clean > 100 && clean < 800);
  x[20] = 5e6; /* one hiccup */
  double hic = kv_robust_sigma(x, 21);
  assert_true(hic < 1.5 * clean);
  double lo = x[0], hi = x[0];
  for (int i = 1; i < 21; i++)
    lo = fmin(lo, x[i]), hi = fmax(hi, x[i]);
  assert_true(hi - lo > 1000 * hic); /* what the range made of it */
  /* A quarter of the phases disturbed (5 of 21): still the phases' noise. */
  for (int i = 0; i < 4; i++)
    x[i] = 5e6;
  assert_true(kv_robust_sigma(x, 21) < 3 * clean);
  assert_true(kv_robust_sigma(x, 1) == 0);
  assert_true(kv_robust_sigma(NULL, 0) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ci_exact),     cmocka_unit_test(test_ci_coverage),
      cmocka_unit_test(test_plan),         cmocka_unit_test(test_decide),
      cmocka_unit_test(test_robust_sigma),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
