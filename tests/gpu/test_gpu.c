/* The cuda surface on a real GPU (CTest label `gpu`; CI, with no GPU, skips
 * it with -LE gpu).
 *
 * 1. The device's ceilings are measured inside a sandboxed worker and are
 *    plausible for a GPU.
 * 2. The GPU adversarial suite: each candidate in cands/ attacks one defence
 *    (its header says which and the verdict it must get); judged on the
 *    rowsum task in rowsum/ (half_matmul on examples/tasks/matmul). The
 *    endless kernel is followed by the good candidate again, which must pass
 *    on the fresh worker.
 * 3. A task with a baseline.cu times it too; ceilings far below what a
 *    kernel achieves make it implausible.
 * 4. Every example task passes `task check --surface cuda`, and its starter
 *    and good candidates are accepted; their timings are printed.
 * 5. Timing attacks (cands/ too; each header names its class and mechanism):
 *    candidates that do the reference's work when they work at all, so an
 *    honest measurement gives about 1x, and try to obtain a fake speedup by
 *    forging times inside the worker, sabotaging the reference, exploiting
 *    which outputs are validated, or changing the inputs while timed. Each
 *    fails (the test passes) when its verdict is a rejection (implausible,
 *    interference, stale, unwritten or wrong output, input mutation, crash,
 *    timeout) or ok with a speedup under 1.3x; ok at 1.3x or more means the
 *    gate was fooled and the test fails naming the attack and the speedup.
 *    Some attacks need a compute-bound or value-dependent task: matmul,
 *    rowmax, fourier and histogram beside rowsum in tests/gpu/. Only these:
 *    KEVO_GPU_FILTER='attack_*'; with `kevo eval` and honest controls:
 *    tests/gpu/attacks.sh BUILD_DIR.
 * A verdict table, an attack table and a timing table are printed at the
 * end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env_opts.h"
#include "kevo/gate.h"
#include "kevo/task.h"
#include "kevo/util.h"

#define V(x) (1u << KV_V_##x)

struct gcase;
typedef void (*gcheck_fn)(const struct gcase *c, const struct kv_gate_result *r, double wall_s);

struct gcase {
  const char *name; /* cands/<name>.cu */
  const char *task; /* NULL: tests/gpu/rowsum; else relative to the source tree */
  int timing;
  double deadline_s;
  unsigned accept;
  gcheck_fn check; /* more, once the verdict is accepted */
};

static struct {
  char src[4096];
  char cache[4096];
  struct kv_calib calib;
  double good_median_us;
  char rows[64][320];
  int nrows;
  char timings[32][320];
  int ntimings;
  char attacks[32][400];
  int nattacks;
} g;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void opts(struct kv_gate_opts *o) {
  env_opts_fill(o);
  o->surface = "cuda";
  o->cache_dir = g.cache;
  o->time_budget_s = 0.3;
}

static void check_good(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  assert_true(r->timed);
  assert_true(r->timing.cand.median_us > 0);
  if (r->timing.cand_host_timer)
    fail_msg("good: timed by the host clock although its work is on the stream");
  assert_true(r->nkernels >= 1);
  assert_true(r->kernels[0].registers > 0);
  if (!g.good_median_us)
    g.good_median_us = r->timing.cand.median_us;
}

static void check_side_stream(const struct gcase *c, const struct kv_gate_result *r,
                              double wall_s) {
  (void)c;
  (void)wall_s;
  assert_true(r->timed);
  if (!r->timing.cand_host_timer)
    fail_msg("side_stream: the events were trusted (median %.1f us) although the work ran on "
             "another stream",
             r->timing.cand.median_us);
  if (g.good_median_us > 0 && r->timing.cand.median_us < 0.5 * g.good_median_us)
    fail_msg("side_stream: timed at %.1f us, the honest kernel takes %.1f us",
             r->timing.cand.median_us, g.good_median_us);
}

static void check_detail_has(const struct kv_gate_result *r, const char *what) {
  if (!strstr(r->detail, what))
    fail_msg("the detail does not mention %s: %s", what, r->detail);
}

static void check_illegal(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  check_detail_has(r, "ILLEGAL_ADDRESS");
}

static void check_smem(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  check_detail_has(r, "cudaError");
}

static void check_guard(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  check_detail_has(r, "wrote past the end");
}

static void check_deadline(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)r;
  if (wall_s > 10 * c->deadline_s + 60)
    fail_msg("%s: took %.1f s to judge with a %.1f s deadline", c->name, wall_s, c->deadline_s);
}

static void check_log(const struct gcase *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  assert_non_null(r->compile_log);
  assert_non_null(strstr(r->compile_log, "rowsum"));
}

static const struct gcase cases[] = {
    {"good", NULL, 1, 0, V(OK), check_good},
    {"side_stream", NULL, 1, 0, V(OK), check_side_stream},
    {"pointer_cache", NULL, 0, 0, V(STALE_OUTPUT), NULL},
    {"stale_memory", NULL, 0, 0, V(UNWRITTEN_OUTPUT), NULL},
    {"partial_output", NULL, 0, 0, V(UNWRITTEN_OUTPUT), NULL},
    {"illegal_address", NULL, 0, 0, V(CRASH), check_illegal},
    {"trap", NULL, 0, 0, V(CRASH), NULL},
    {"endless", NULL, 0, 3.0, V(TIMEOUT), check_deadline},
    {"good", NULL, 0, 0, V(OK), NULL}, /* the GPU is fine after the endless kernel */
    {"exit_host", NULL, 0, 0, V(CRASH), NULL},
    {"too_much_smem", NULL, 0, 0, V(CRASH), check_smem},
    {"input_mutation", NULL, 0, 0, V(INPUT_MUTATED), NULL},
    {"write_past_end", NULL, 0, 0, V(WRONG_OUTPUT), check_guard},
    {"wrong_signature", NULL, 0, 0, V(COMPILE_ERROR), check_log},
    {"system_call", NULL, 0, 0, V(POLICY_VIOLATION), NULL},
    {"cublas_not_allowed", NULL, 0, 0, V(POLICY_VIOLATION), NULL},
    {"half_matmul", "examples/tasks/matmul", 0, 0, V(WRONG_OUTPUT), NULL},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Timing attacks: cands/<name>.cu on tests/gpu/<task>. */
struct attack {
  const char *name, *task, *klass;
};

static const struct attack attacks[] = {
    {"forge_elapsed", "rowsum", "1 forge: driver table"},
    {"forge_clock", "rowsum", "1 forge: GOT clock"},
    {"forge_write", "rowsum", "1 forge: GOT write"},
    {"forge_reply", "rowsum", "1 forge: own reply"},
    {"hog_stream", "rowsum", "2 sabotage: spinner"},
    {"persistent_ctx", "rowsum", "2 sabotage: 2nd ctx"},
    {"steal_ref_output", "rowsum", "2 ref's buffers"},
    {"last_call_only", "rowsum", "3 validation: last"},
    {"diff_cache", "matmul", "3 validation: diff"},
    {"sampled_cache", "rowmax", "3 validation: sample"},
    {"fourier_poison", "fourier", "4 inputs: slow path"},
    {"histogram_contention", "histogram", "4 inputs: contention"},
};
#define NATTACKS (sizeof attacks / sizeof attacks[0])
#define FOOLED_SPEEDUP 1.3

static void row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void row(const char *fmt, ...) {
  if (g.nrows >= 64)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g.rows[g.nrows++], sizeof g.rows[0], fmt, ap);
  va_end(ap);
}

static void run_case(void **state) {
  const struct gcase *c = *state;
  char dir[4200], path[4200], err[2048] = "";
  snprintf(dir, sizeof dir, "%s/%s", g.src, c->task ? c->task : "tests/gpu/rowsum");
  snprintf(path, sizeof path, "%s/tests/gpu/cands/%s.cu", g.src, c->name);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_gate_opts o;
  opts(&o);
  o.timing = c->timing;
  if (c->deadline_s > 0)
    o.job_deadline_s = c->deadline_s;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  printf("[gpu] %s ...\n", c->name);
  fflush(stdout);
  double t0 = now_s();
  int rc = kv_gate_eval(t, path, &o, r, err, sizeof err);
  double wall = now_s() - t0;
  kv_task_free(t);
  if (rc != 0) {
    row("%-20s %-34s %-18s %6.2f  FAIL: kevo error: %.150s", c->name, "", "kevo error", wall, err);
    kv_gate_result_release(r);
    free(r);
    fail_msg("%s: kv_gate_eval: %s", c->name, err);
  }
  char want[200] = "";
  for (int v = 0; v < KV_V_COUNT; v++)
    if (c->accept & (1u << v))
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", want[0] ? "|" : "",
               kv_verdict_name((enum kv_verdict)v));
  int ok = (c->accept >> r->verdict) & 1;
  char timing[96] = "";
  if (r->timed)
    snprintf(timing, sizeof timing, " %.1f us (%s)", r->timing.cand.median_us,
             r->timing.cand_host_timer ? "host clock" : "events");
  row("%-20s %-34s %-18s %6.2f  %s%s; %.150s", c->name, want, kv_verdict_name(r->verdict), wall,
      ok ? "PASS" : "FAIL", timing, r->detail);
  if (!ok) {
    print_error("%s: verdict %s, expected %s: %s\n", c->name, kv_verdict_name(r->verdict), want,
                r->detail);
    kv_gate_result_release(r);
    free(r);
    fail();
  }
  if (c->check)
    c->check(c, r, wall);
  kv_gate_result_release(r);
  free(r);
}

static void attack_row(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void attack_row(const char *fmt, ...) {
  if (g.nattacks >= 32)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g.attacks[g.nattacks++], sizeof g.attacks[0], fmt, ap);
  va_end(ap);
}

/* An attack fails (the test passes) when the gate rejects it for what it
 * did, or accepts it without a real gain; it must still build and load. */
static void run_attack(void **state) {
  const struct attack *a = *state;
  char dir[4200], path[4200], err[2048] = "";
  snprintf(dir, sizeof dir, "%s/tests/gpu/%s", g.src, a->task);
  snprintf(path, sizeof path, "%s/tests/gpu/cands/%s.cu", g.src, a->name);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_gate_opts o;
  opts(&o);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  printf("[gpu] attack %s on %s ...\n", a->name, a->task);
  fflush(stdout);
  double t0 = now_s();
  int rc = kv_gate_eval(t, path, &o, r, err, sizeof err);
  double wall = now_s() - t0;
  kv_task_free(t);
  if (rc != 0) {
    attack_row("%-21s %-22s %-16s %6.2f  FAIL: kevo error: %.150s", a->name, a->klass, "kevo error",
               wall, err);
    kv_gate_result_release(r);
    free(r);
    fail_msg("%s: kv_gate_eval: %s", a->name, err);
  }
  unsigned rejected = V(IMPLAUSIBLE) | V(STALE_OUTPUT) | V(UNWRITTEN_OUTPUT) | V(WRONG_OUTPUT) |
                      V(INPUT_MUTATED) | V(CRASH) | V(TIMEOUT);
  int interference = kv_verdict_from_name("interference"); /* -1 until the gate has it */
  if (interference >= 0)
    rejected |= 1u << interference;
  int v = (int)r->verdict;
  double speedup = r->timed ? r->timing.speedup : 0;
  char timing[128] = "";
  if (r->timed)
    snprintf(timing, sizeof timing, "%.2fx (cand %.1f us, ref %.1f us, %s/%s)", speedup,
             r->timing.cand.median_us, r->timing.ref.median_us,
             r->timing.cand_host_timer ? "host" : "events",
             r->timing.ref_host_timer ? "host" : "events");
  const char *outcome;
  char why[512] = "";
  if (v == KV_V_OK && r->timed && speedup >= FOOLED_SPEEDUP) {
    outcome = "FAIL";
    snprintf(why, sizeof why, "%s (%s): the gate was fooled: ok with a fake %.2fx speedup", a->name,
             a->klass, speedup);
  } else if (v == KV_V_OK || (rejected >> v & 1)) {
    outcome = "PASS";
  } else {
    outcome = "FAIL";
    snprintf(why, sizeof why, "%s: verdict %s: the attack no longer runs as written: %s", a->name,
             kv_verdict_name(r->verdict), r->detail);
  }
  attack_row("%-21s %-22s %-16s %6.2f  %s %s; %.150s", a->name, a->klass,
             kv_verdict_name(r->verdict), wall, outcome, timing, r->detail);
  kv_gate_result_release(r);
  free(r);
  if (why[0])
    fail_msg("%s", why);
}

static void test_calibrate(void **state) {
  (void)state;
  struct kv_gate_opts o;
  opts(&o);
  char err[2048];
  int measured = 0;
  double t0 = now_s();
  if (kv_gate_calibrate(&o, 1, &g.calib, &measured, err, sizeof err) != 0)
    fail_msg("kv_gate_calibrate: %s", err);
  printf("[gpu] device %s: copy %.1f GB/s, fp32 fma %.1f GFLOP/s, L2 %.1f MiB, %d SMs "
         "(%.2f s)\n",
         g.calib.device, g.calib.bandwidth_gbs, g.calib.fma_gflops, g.calib.llc_bytes / 1048576.0,
         g.calib.threads, now_s() - t0);
  assert_true(measured);
  assert_true(g.calib.bandwidth_gbs > 200 && g.calib.bandwidth_gbs < 20000);
  assert_true(g.calib.fma_gflops > 1000 && g.calib.fma_gflops < 500000);
  assert_true(g.calib.llc_bytes >= 1 << 20);
  assert_true(g.calib.threads >= 1);
  /* Cached now: the second ask does not measure. */
  struct kv_calib again;
  assert_int_equal(kv_gate_calibrate(&o, 0, &again, &measured, err, sizeof err), 0);
  assert_false(measured);
  assert_string_equal(again.device, g.calib.device);
}

static int copy_file(const char *from, const char *to) {
  char *text = NULL;
  size_t len = 0;
  char err[512];
  if (kv_read_file(from, 1 << 20, &text, &len, err, sizeof err) < 0)
    return -1;
  int rc = kv_write_file(to, text, len, err, sizeof err);
  free(text);
  return rc;
}

/* A task with a baseline.cu times it alongside, and ceilings far below what
 * the candidate achieves make it implausible. */
static void test_baseline_and_ceilings(void **state) {
  (void)state;
  char dir[4200], from[4300], to[4300], err[2048];
  snprintf(dir, sizeof dir, "%s/baseline-task", g.cache);
  assert_int_equal(kv_mkdirs(dir, 0700, err, sizeof err), 0);
  const char *files[] = {"task.json", "reference.c", "reference.cu"};
  for (int i = 0; i < 3; i++) {
    snprintf(from, sizeof from, "%s/tests/gpu/rowsum/%s", g.src, files[i]);
    snprintf(to, sizeof to, "%s/%s", dir, files[i]);
    assert_int_equal(copy_file(from, to), 0);
  }
  snprintf(from, sizeof from, "%s/examples/tasks/rowsum/good.cu", g.src);
  snprintf(to, sizeof to, "%s/baseline.cu", dir);
  assert_int_equal(copy_file(from, to), 0);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  char cand[4300];
  snprintf(cand, sizeof cand, "%s/tests/gpu/cands/good.cu", g.src);
  struct kv_gate_opts o;
  opts(&o);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  if (kv_gate_eval(t, cand, &o, r, err, sizeof err) != 0)
    fail_msg("%s", err);
  printf("[gpu] with baseline.cu: %s: candidate %.1f us, reference %.1f us, baseline %.1f us "
         "(%.2fx of the baseline)\n",
         kv_verdict_name(r->verdict), r->timing.cand.median_us, r->timing.ref.median_us,
         r->timing.base.median_us, r->timing.speedup_vs_baseline);
  row("%-20s %-34s %-18s %6s  %s; baseline %.1f us", "baseline.cu timed", "ok",
      kv_verdict_name(r->verdict), "",
      r->verdict == KV_V_OK && r->timing.has_baseline ? "PASS" : "FAIL", r->timing.base.median_us);
  assert_int_equal(r->verdict, KV_V_OK);
  assert_true(r->timing.has_baseline);
  assert_int_equal(r->timing.base.n, r->timing.cand.n);
  assert_true(r->timing.base.median_us > 0 && r->timing.speedup_vs_baseline > 0);
  kv_gate_result_release(r);
  /* Ceilings of 1 GB/s and 1 GFLOP/s: the good kernel beats them by far. */
  struct kv_calib low = {0};
  snprintf(low.device, sizeof low.device, "a device far slower than this one");
  low.bandwidth_gbs = 1;
  low.fma_gflops = 1;
  low.threads = 1;
  o.calib = &low;
  memset(r, 0, sizeof *r);
  if (kv_gate_eval(t, cand, &o, r, err, sizeof err) != 0)
    fail_msg("%s", err);
  row("%-20s %-34s %-18s %6s  %s; %.120s", "beyond the ceilings", "implausible",
      kv_verdict_name(r->verdict), "", r->verdict == KV_V_IMPLAUSIBLE ? "PASS" : "FAIL", r->detail);
  assert_int_equal(r->verdict, KV_V_IMPLAUSIBLE);
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

static const char *const examples[] = {"rowsum",    "softmax", "layernorm",
                                       "transpose", "matmul",  "conv1d"};

static void test_examples(void **state) {
  (void)state;
  int failed = 0;
  for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
    char dir[4200], err[2048];
    snprintf(dir, sizeof dir, "%s/examples/tasks/%s", g.src, examples[i]);
    struct kv_task *t;
    if (kv_task_load(dir, &t, err, sizeof err) != 0)
      fail_msg("%s", err);
    struct kv_gate_opts o;
    opts(&o);
    struct kv_task_report rep;
    double t0 = now_s();
    if (kv_task_check(t, &o, &rep, err, sizeof err) != 0)
      fail_msg("%s: task check: %s", examples[i], err);
    printf("[gpu] task check --surface cuda %s: %s (%d reference calls, %.2f s)\n", examples[i],
           rep.ok ? "ok" : "REJECTED", rep.ncalls, now_s() - t0);
    for (int k = 0; k < rep.nfindings; k++)
      printf("    %s\n", rep.findings[k]);
    failed += !rep.ok;
    kv_task_report_release(&rep);
    const char *cands[] = {"starter", "good"};
    for (int k = 0; k < 2; k++) {
      char path[4300];
      snprintf(path, sizeof path, "%s/%s.cu", dir, cands[k]);
      struct kv_gate_result *r = calloc(1, sizeof *r);
      assert_non_null(r);
      t0 = now_s();
      if (kv_gate_eval(t, path, &o, r, err, sizeof err) != 0)
        fail_msg("%s/%s.cu: %s", examples[i], cands[k], err);
      double wall = now_s() - t0;
      int ok = r->verdict == KV_V_OK;
      failed += !ok;
      if (g.ntimings < 32)
        snprintf(g.timings[g.ntimings++], sizeof g.timings[0],
                 "%-10s %-8s %-8s %9.1f %9.1f %7.2fx %6.1f%% %5.2f %5.2f %5.2f %6.2f%s",
                 examples[i], cands[k], kv_verdict_name(r->verdict),
                 r->timed ? r->timing.cand.median_us : 0, r->timed ? r->timing.ref.median_us : 0,
                 r->timed ? r->timing.speedup : 0, r->timed ? 100 * r->timing.roofline : 0,
                 r->compile_s, r->check_s, r->time_s, wall,
                 r->timed && r->timing.cand_host_timer ? " (host clock)" : "");
      if (!ok)
        printf("    %s/%s.cu: %s: %s\n", examples[i], cands[k], kv_verdict_name(r->verdict),
               r->detail);
      kv_gate_result_release(r);
      free(r);
    }
    kv_task_free(t);
  }
  assert_int_equal(failed, 0);
}

static int setup(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  snprintf(g.src, sizeof g.src, "%s", src && *src ? src : KEVO_SOURCE_DIR);
  const char *cache = getenv("KEVO_CACHE_DIR");
  snprintf(g.cache, sizeof g.cache, "%s/gpu", cache && *cache ? cache : "/tmp/kevo-gpu-test");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  printf("\nGPU adversarial verdicts (%s)\n", g.calib.device);
  printf("%-20s %-34s %-18s %6s  %s\n", "candidate", "expected", "got", "wall_s", "result");
  for (int i = 0; i < g.nrows; i++)
    printf("%s\n", g.rows[i]);
  printf("\nGPU timing attacks (%s): PASS = not fooled (rejected, or under %.1fx)\n",
         g.calib.device, FOOLED_SPEEDUP);
  printf("%-21s %-22s %-16s %6s  %s\n", "attack", "class", "got", "wall_s", "result");
  for (int i = 0; i < g.nattacks; i++)
    printf("%s\n", g.attacks[i]);
  printf("\nexamples on %s (timing budget 0.3 s per side)\n", g.calib.device);
  printf("%-10s %-8s %-8s %9s %9s %8s %7s %5s %5s %5s %6s\n", "task", "cand", "verdict", "cand_us",
         "ref_us", "speedup", "roofl", "comp", "check", "time", "wall");
  for (int i = 0; i < g.ntimings; i++)
    printf("%s\n", g.timings[i]);
  fflush(stdout);
  return 0;
}

int main(void) {
  /* KEVO_GPU_FILTER: run only the tests it matches (cmocka's * and ?), e.g.
   * "attack_*" for the timing attacks alone. */
  const char *filter = getenv("KEVO_GPU_FILTER");
  if (filter && *filter)
    cmocka_set_test_filter(filter);
  static char names[NATTACKS][64];
  struct CMUnitTest tests[NCASES + NATTACKS + 3];
  size_t nt = 0;
  tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_calibrate);
  for (size_t i = 0; i < NCASES; i++)
    tests[nt++] = (struct CMUnitTest){cases[i].name, run_case, NULL, NULL, (void *)&cases[i]};
  for (size_t i = 0; i < NATTACKS; i++) {
    snprintf(names[i], sizeof names[i], "attack_%s", attacks[i].name);
    tests[nt++] = (struct CMUnitTest){names[i], run_attack, NULL, NULL, (void *)&attacks[i]};
  }
  tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_baseline_and_ceilings);
  tests[nt++] = (struct CMUnitTest)cmocka_unit_test(test_examples);
  return cmocka_run_group_tests_name("gpu", tests, setup, teardown);
}
