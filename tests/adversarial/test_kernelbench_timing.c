/* --timing kernelbench (kv_gate_opts.timing_method, issue 27 item 5): kevo's
 * gate timing by KernelBench's protocol on the rowsum10us task (calls of
 * about 10 us), cpu surface.
 *  - an exact copy of the reference (timing/tiny10_honest.c): ok, timed by
 *    the method named "kernelbench", KV_KB_TRIALS trials of one call per
 *    side, and the speedup is the reference's MEAN over the candidate's;
 *  - timing/kb_skip_trials.c, which stops writing its output once the
 *    inputs repeat: never ok (kevo poisons outputs before every trial and
 *    validates drawn trials, where KernelBench's harness would time empty
 *    calls).
 * The speedup's value is not asserted (speed is measured in bench/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/calib.h"
#include "kevo/gate.h"
#include "kevo/task.h"

static struct kv_task *task;
static struct kv_calib calib;
static int have_calib;

static int setup(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  char dir[4096], err[1024];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum10us", src ? src : ".");
  if (kv_task_load(dir, &task, err, sizeof err) != 0) {
    fprintf(stderr, "kv_task_load %s: %s\n", dir, err);
    return -1;
  }
  have_calib = kv_calib_cpu_measure(&calib, err, sizeof err) == 0;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  kv_task_free(task);
  return 0;
}

/* Judges timing/<name>.c by KernelBench's protocol into *r. */
static void judge(const char *name, struct kv_gate_result *r) {
  const char *src = getenv("KEVO_SOURCE_DIR");
  char path[4096], err[1024] = "";
  snprintf(path, sizeof path, "%s/tests/adversarial/timing/%s.c", src ? src : ".", name);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.timing = 1;
  o.timing_method = KV_TIMING_KERNELBENCH;
  o.calib = have_calib ? &calib : NULL;
  int rc = kv_gate_eval(task, path, &o, r, err, sizeof err);
  if (rc != 0)
    fail_msg("%s: kv_gate_eval: %s", name, err);
  printf("[kernelbench timing] %s: %s %.3fx (candidate mean %.2f us, reference mean %.2f us, "
         "n=%d): %.200s\n",
         name, kv_verdict_name(r->verdict), r->timed ? r->timing.speedup : 0,
         r->timing.cand.mean_us, r->timing.ref.mean_us, r->timing.cand.n, r->detail);
}

static void test_honest_copy(void **state) {
  (void)state;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  judge("tiny10_honest", r);
  assert_int_equal(r->verdict, KV_V_OK);
  assert_true(r->timed);
  assert_string_equal(r->timing.method, "kernelbench");
  assert_string_equal(kv_timing_method_name(KV_TIMING_KERNELBENCH), "kernelbench");
  assert_int_equal(r->timing.cand.n, KV_KB_TRIALS);
  assert_int_equal(r->timing.ref.n, KV_KB_TRIALS);
  assert_int_equal(r->timing.calls_per_phase, 1);
  assert_int_equal(r->timing.phases, KV_KB_TRIALS);
  assert_true(r->timing.validated_calls >= 1);
  /* The speedup is the ratio of the means (KernelBench's runtime). */
  double want = r->timing.ref.mean_us / r->timing.cand.mean_us;
  assert_true(fabs(r->timing.speedup - want) <= 1e-9 * want);
  kv_gate_result_release(r);
  free(r);
}

static void test_skipped_trials_caught(void **state) {
  (void)state;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  judge("kb_skip_trials", r);
  if (r->verdict == KV_V_OK)
    fail_msg("kb_skip_trials left its last output in place on trials of the same inputs and "
             "was judged ok at %.2fx",
             r->timing.speedup);
  kv_gate_result_release(r);
  free(r);
}

static void test_method_names(void **state) {
  (void)state;
  int m = -1;
  assert_int_equal(kv_timing_method_parse("kernelbench", &m), 0);
  assert_int_equal(m, KV_TIMING_KERNELBENCH);
  assert_int_equal(kv_timing_method_parse("kevo", &m), 0);
  assert_int_equal(m, KV_TIMING_KEVO);
  assert_int_equal(kv_timing_method_parse("do_bench", &m), 0);
  assert_int_equal(m, KV_TIMING_DOBENCH);
  assert_int_equal(kv_timing_method_parse("dobench", &m), -1);
  assert_int_equal(kv_timing_method_parse(NULL, &m), -1);
  assert_string_equal(kv_timing_method_name(KV_TIMING_KEVO), "kevo");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_method_names),
      cmocka_unit_test(test_honest_copy),
      cmocka_unit_test(test_skipped_trials_caught),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
