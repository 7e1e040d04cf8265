/* kevo bench's score and suite discovery. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kevo/bench.h"
#include "kevo/util.h"

static struct kv_bench_task_row row(int level, const char *status, int correct, double speedup) {
  struct kv_bench_task_row r = {0};
  r.level = level;
  r.status = (char *)status;
  r.correct = correct;
  r.speedup = speedup;
  return r;
}

/* KernelBench's fast_p counts every task in the denominator; the geomean is
 * over the correct ones only. */
static void test_score(void **state) {
  (void)state;
  struct kv_bench_task_row rows[] = {
      row(1, "done", 1, 2.0),  row(1, "done", 1, 0.5), row(1, "done", 0, 0),
      row(2, "done", 1, 1.5),  row(2, "failed", 0, 0), row(2, "skipped", 0, 0),
      row(2, "running", 0, 0), row(3, "done", 1, 1.0),
  };
  struct kv_bench_summary s;
  kv_bench_summarize(rows, 8, &s);
  assert_int_equal(s.n, 8);
  assert_int_equal(s.correct, 4);
  assert_int_equal(s.done, 5);
  assert_int_equal(s.failed, 1);
  assert_int_equal(s.skipped, 1);
  assert_int_equal(s.pending, 1);
  assert_true(fabs(s.fast_p[0] - 4.0 / 8) < 1e-12); /* p = 0: correct */
  assert_true(fabs(s.fast_p[1] - 2.0 / 8) < 1e-12); /* > 1: 2.0 and 1.5 (1.0 is not faster) */
  assert_true(fabs(s.fast_p[2] - 1.0 / 8) < 1e-12); /* > 1.5: 2.0 only */
  assert_true(fabs(s.fast_p[3] - 0.0) < 1e-12);     /* > 2: none */
  assert_true(fabs(s.geomean - pow(2.0 * 0.5 * 1.5 * 1.0, 0.25)) < 1e-12);
  /* AdaExplore's score: every task in the mean, the incorrect ones as 0. */
  assert_true(fabs(s.ada - (2.0 + 0.5 + 1.5 + 1.0) / 8) < 1e-12);
  assert_int_equal(s.nlevels, 3);
  assert_int_equal(s.levels[0].level, 1);
  assert_int_equal(s.levels[0].n, 3);
  assert_int_equal(s.levels[0].correct, 2);
  assert_true(fabs(s.levels[0].geomean - 1.0) < 1e-12);
  assert_true(fabs(s.levels[0].ada - 2.5 / 3) < 1e-12);
  /* speedups clamped at 10 in AdaExplore's score, not in the geomean */
  struct kv_bench_task_row big[] = {row(1, "done", 1, 40.0), row(1, "done", 1, 2.0)};
  struct kv_bench_summary b;
  kv_bench_summarize(big, 2, &b);
  assert_true(fabs(b.ada - 6.0) < 1e-12);
  assert_true(fabs(b.geomean - sqrt(80.0)) < 1e-12);
  assert_int_equal(s.levels[1].level, 2);
  assert_int_equal(s.levels[1].n, 4);
  assert_true(fabs(s.levels[1].fast_p[1] - 0.25) < 1e-12);
  assert_int_equal(s.levels[2].level, 3);
  /* Nothing correct: geomean 0, not NaN. */
  struct kv_bench_task_row none[] = {row(0, "failed", 0, 0)};
  kv_bench_summarize(none, 1, &s);
  assert_true(s.geomean == 0);
  assert_true(s.fast_p[0] == 0);
  /* --no-timing: correct tasks count as correct (fast_0) with no speedup. */
  struct kv_bench_task_row untimed[] = {row(1, "done", 1, 0), row(1, "done", 1, 0),
                                        row(1, "done", 0, 0)};
  kv_bench_summarize(untimed, 3, &s);
  assert_int_equal(s.correct, 2);
  assert_true(fabs(s.fast_p[0] - 2.0 / 3) < 1e-12);
  assert_true(s.fast_p[1] == 0 && s.geomean == 0 && s.ada == 0);
  kv_bench_summarize(NULL, 0, &s);
  assert_int_equal(s.n, 0);
}

static void touch_task(const char *base, const char *rel) {
  char p[4096], err[256];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  assert_int_equal(kv_mkdirs(p, 0700, err, sizeof err), 0);
  strcat(p, "/task.json");
  assert_int_equal(kv_write_file(p, "{}", 2, err, sizeof err), 0);
}

static void test_discover(void **state) {
  (void)state;
  char base[4096], err[1024];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-bench", base, sizeof base, err, sizeof err), 0);
  touch_task(base, "level2/10_b");
  touch_task(base, "level2/2_a");
  touch_task(base, "level1/x");
  touch_task(base, "top");
  touch_task(base, "deep/a/b/toodeep"); /* three below: not found */
  touch_task(base, ".hidden");
  struct kv_bench_found *f;
  int n;
  assert_int_equal(kv_bench_discover(base, &f, &n, err, sizeof err), 0);
  assert_int_equal(n, 4);
  assert_string_equal(f[0].name, "level1/x");
  assert_int_equal(f[0].level, 1);
  assert_string_equal(f[1].name, "level2/2_a"); /* natural order: 2 before 10 */
  assert_string_equal(f[2].name, "level2/10_b");
  assert_int_equal(f[2].level, 2);
  assert_string_equal(f[3].name, "top");
  assert_int_equal(f[3].level, 0);
  kv_bench_found_free(f, n);
  /* A task is not a suite; a file is not a suite. */
  char p[4200];
  snprintf(p, sizeof p, "%s/top", base);
  assert_int_equal(kv_bench_discover(p, &f, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "this is one task"));
  snprintf(p, sizeof p, "%s/top/task.json", base);
  assert_int_equal(kv_bench_discover(p, &f, &n, err, sizeof err), -1);
  assert_non_null(strstr(err, "not a directory"));
  kv_rmtree(base);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_score),
      cmocka_unit_test(test_discover),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
