/* The best and runner-up a run's progress keeps, and when "best" may be
 * luck (kevo/run.h: kv_run_progress_accepted, kv_run_luck): what the live
 * line says while a run goes on, as the run's last words say it after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "kevo/run.h"

/* Told apart: the best's interval above the runner-up's, steady: no flag. */
static void test_told_apart(void **state) {
  (void)state;
  struct kv_run_progress p;
  memset(&p, 0, sizeof p);
  kv_run_progress_accepted(&p, "a", 1.50, 1.45, 1.55, 0.02);
  kv_run_progress_accepted(&p, "b", 2.40, 2.30, 2.50, 0.03);
  assert_true(p.best_speedup == 2.40);
  assert_string_equal(p.best_hash, "b");
  assert_true(p.second_speedup == 1.50);
  assert_int_equal(kv_run_luck(&p), 0);
}

/* The same kernel timed 1.56x, 2.42x, 2.49x in one run (issue 33): the
 * best draw's interval overlaps the runner-up's, and its times varied. */
static void test_overlap_and_noise(void **state) {
  (void)state;
  struct kv_run_progress p;
  memset(&p, 0, sizeof p);
  kv_run_progress_accepted(&p, "a", 1.56, 1.20, 1.90, 0.05);
  kv_run_progress_accepted(&p, "b", 2.42, 2.00, 2.80, 0.05);
  kv_run_progress_accepted(&p, "c", 2.49, 2.10, 2.90, 0.31);
  assert_true(p.second_speedup == 2.42);
  int f = kv_run_luck(&p);
  assert_true(f & KV_LUCK_OVERLAP);
  assert_true(f & KV_LUCK_NOISY);
  assert_false(f & KV_LUCK_SLOWER);
}

/* A best slower than the reference is said to be, whatever its interval. */
static void test_slower(void **state) {
  (void)state;
  struct kv_run_progress p;
  memset(&p, 0, sizeof p);
  kv_run_progress_accepted(&p, "a", 0.94, 0.93, 0.95, 0.01);
  assert_int_equal(kv_run_luck(&p), KV_LUCK_SLOWER);
}

/* The same source judged again is the same kernel: never its own
 * runner-up; a faster draw of it moves the best, not the runner-up. */
static void test_same_source(void **state) {
  (void)state;
  struct kv_run_progress p;
  memset(&p, 0, sizeof p);
  kv_run_progress_accepted(&p, "a", 2.00, 1.90, 2.10, 0.02);
  kv_run_progress_accepted(&p, "a", 1.95, 1.85, 2.05, 0.02);
  assert_true(p.second_speedup == 0);
  kv_run_progress_accepted(&p, "b", 1.50, 1.40, 1.60, 0.02);
  kv_run_progress_accepted(&p, "a", 2.20, 2.00, 2.40, 0.02);
  assert_true(p.best_speedup == 2.20);
  assert_true(p.second_speedup == 1.50);
  assert_int_equal(kv_run_luck(&p), 0);
  /* unknown intervals (resumed from a store without them) never overlap */
  kv_run_progress_accepted(&p, "c", 3.00, 0, 0, 0);
  assert_int_equal(kv_run_luck(&p), 0);
  /* not accepted, or untimed: nothing changes */
  kv_run_progress_accepted(&p, "d", 0, 0, 0, 0);
  assert_true(p.best_speedup == 3.00);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_told_apart),
      cmocka_unit_test(test_overlap_and_noise),
      cmocka_unit_test(test_slower),
      cmocka_unit_test(test_same_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
