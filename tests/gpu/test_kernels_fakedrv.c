/* The kernel-only path end to end without a GPU: the gate builds each
 * candidate of tests/gpu/fakedrv/cands/ (and the task's kernel-only
 * reference) with NVRTC for sm_90, kevo-worker loads the bundle through a
 * stand-in libcuda.so.1 (tests/gpu/fakecuda.c: host memory, kernels run as
 * host functions chosen by name), evaluates the launch lines per call,
 * marshals the arguments, and the verdicts come out as on a GPU: ok for two
 * launches in order, unwritten_output, load_error for a kernel whose
 * parameters differ from its launch line, crash for a refused launch, ok when
 * kevo opts a kernel in to 100 KiB of shared memory, input_mutated, and
 * wrong_output for a write one element past the output (its guard zone);
 * then the attacks of issue 28 (relay on a descriptor, work finished after
 * the phase, a rewritten cuMemcpyDtoH entry), each rejected, and the old
 * path (no lending) said in the verdict.
 * The worker runs unsandboxed here (the stand-in driver lives in the build
 * tree); the sandbox is tested on its own. Needs NVRTC (skips without). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/gate/internal.h"
#include "env_opts.h"
#include "../../lib/gate/nvrtc.h"

static int nvrtc_found(void) {
  char lib[PATH_MAX];
  return kv_nvrtc_lib(env_opts(), lib, sizeof lib) == 0;
}

static char src[PATH_MAX], cache[PATH_MAX];

static const struct {
  const char *name;
  enum kv_verdict want;
  const char *detail_has;
} cases[] = {
    {"good", KV_V_OK, NULL},
    {"nothing", KV_V_UNWRITTEN_OUTPUT, NULL},
    {"three", KV_V_LOAD_ERROR, "the kernel takes 3 parameters but args names 4"},
    {"smem", KV_V_CRASH, "line 2"},
    {"smem_optin", KV_V_OK, NULL},
    {"scribble", KV_V_INPUT_MUTATED, NULL},
    {"overrun", KV_V_WRONG_OUTPUT, "guard zone after y["},
};

static void test_fakedrv(void **state) {
  (void)state;
  if (!nvrtc_found())
    skip();
  char dir[PATH_MAX * 2], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[PATH_MAX * 3];
    snprintf(path, sizeof path, "%s/cands/%s.cu", dir, cases[i].name);
    struct kv_gate_opts o;
    kv_gate_opts_default(&o);
    o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
    o.cache_dir = getenv("KEVO_CACHE_DIR");
    o.nvcc_path = getenv("KEVO_NVCC");
    o.cuda_arch = getenv("KEVO_CUDA_ARCH");
    o.surface = "cuda";
    o.cache_dir = cache;
    o.timing = 0;
    o.sandbox = 0;
    o.job_deadline_s = 60;
    struct kv_gate_result *r = calloc(1, sizeof *r);
    assert_non_null(r);
    if (kv_gate_eval(t, path, &o, r, err, sizeof err) != 0)
      fail_msg("%s: kv_gate_eval: %s", cases[i].name, err);
    int ok = r->verdict == cases[i].want &&
             (!cases[i].detail_has || strstr(r->detail, cases[i].detail_has));
    printf("%s %-11s %-18s %.200s\n", ok ? "ok  " : "FAIL", cases[i].name,
           kv_verdict_name(r->verdict), r->detail);
    if (!ok)
      printf("  expected %s%s%s\n%s\n", kv_verdict_name(cases[i].want),
             cases[i].detail_has ? " with " : "", cases[i].detail_has ? cases[i].detail_has : "",
             r->compile_log ? r->compile_log : "");
    bad += !ok;
    kv_gate_result_release(r);
    free(r);
  }
  kv_task_free(t);
  assert_int_equal(bad, 0);
}

/* The attacks of issue 28 on the stand-in driver (fakecuda.c runs each one
 * in the candidate's worker process: a relay on its descriptors, a rewritten
 * cuMemcpyDtoH entry, handles naming decoy buffers), timed as a real
 * evaluation is. Each must be rejected: the clean worker owns the checked
 * calls' buffers and reads the validated timed calls itself. KEVO_NO_LEND=1
 * (the old path, where the candidate's process carries its results) says so
 * in the verdict's detail; with it, the code before the clean worker lent
 * its buffers judged relay_reply, defer and hook ok. */
static const struct {
  const char *name;
  unsigned want; /* bits of kv_verdict */
} attacks[] = {
    {"relay_reply", 1u << KV_V_WRONG_OUTPUT},
    {"defer", 1u << KV_V_IMPLAUSIBLE | 1u << KV_V_STALE_OUTPUT},
    {"hook", 1u << KV_V_UNWRITTEN_OUTPUT},
    {"decoy", 1u << KV_V_WRONG_OUTPUT | 1u << KV_V_STALE_OUTPUT | 1u << KV_V_INPUT_MUTATED},
    /* the stand-in's CPU-backed "GPU" can read as interference on a loaded
     * host (CI at -j3): never an attack accepted */
    {"good", 1u << KV_V_OK | 1u << KV_V_INTERFERENCE},
};

static int eval_method; /* eval_timed's kv_gate_opts.timing_method */

static void eval_timed(const struct kv_task *t, const char *path, struct kv_gate_result *r) {
  struct kv_calib cal = {"cuda:kevo fake GPU sm_90 x4", 1e6, 1e9, 1 << 20, 4, 0};
  struct kv_gate_opts o;
  char err[2048];
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.nvcc_path = getenv("KEVO_NVCC");
  o.cuda_arch = getenv("KEVO_CUDA_ARCH");
  o.surface = "cuda";
  o.cache_dir = cache;
  o.sandbox = 0;
  o.calib = &cal;
  o.time_budget_s = 0.2;
  o.job_deadline_s = 60;
  o.timing_method = eval_method;
  if (kv_gate_eval(t, path, &o, r, err, sizeof err) != 0)
    fail_msg("%s: kv_gate_eval: %s", path, err);
}

static void test_fakedrv_attacks(void **state) {
  (void)state;
  if (!nvrtc_found())
    skip();
  unsetenv("KEVO_LEND"); /* the default lends (lend.c) */
  char dir[PATH_MAX * 2], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  int bad = 0;
  for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
    char path[PATH_MAX * 3];
    snprintf(path, sizeof path, "%s/cands/%s.cu", dir, attacks[i].name);
    struct kv_gate_result *r = calloc(1, sizeof *r);
    assert_non_null(r);
    eval_timed(t, path, r);
    /* defer may end its work before kevo stops its process on a loaded
     * host: then kevo's clock charges it (never ok at 1.3x or more). */
    int ok =
        ((attacks[i].want >> r->verdict) & 1) ||
        (!strcmp(attacks[i].name, "defer") && r->verdict == KV_V_OK && r->timing.speedup < 1.3);
    /* Never the old path silently: the lent buffers were used. */
    ok = ok && !strstr(r->detail, "through the candidate's own process");
    printf("%s attack %-12s %-18s %.300s\n", ok ? "ok  " : "FAIL", attacks[i].name,
           kv_verdict_name(r->verdict), r->detail);
    if (r->timed)
      printf("     candidate %.2f us (clamped %d, kevo's clock %.2f us a call, ratio %.2f), "
             "reference %.2f us\n",
             r->timing.cand.median_us, r->timing.cand_clamped, r->timing.parent_us,
             r->timing.clock_ratio, r->timing.ref.median_us);
    bad += !ok;
    kv_gate_result_release(r);
    free(r);
  }
  kv_task_free(t);
  assert_int_equal(bad, 0);
}

/* Without lending (KEVO_NO_LEND=1: as where the driver has no CUDA IPC) the
 * old path runs, and the verdict says that the candidate's process carried
 * its results. */
static void test_fakedrv_no_lend_said(void **state) {
  (void)state;
  if (!nvrtc_found())
    skip();
  char dir[PATH_MAX * 2], path[PATH_MAX * 3], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  snprintf(path, sizeof path, "%s/cands/good.cu", dir);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  setenv("KEVO_LEND", "1", 1);
  setenv("KEVO_NO_LEND", "1", 1);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  eval_timed(t, path, r);
  unsetenv("KEVO_NO_LEND");
  unsetenv("KEVO_LEND");
  printf("no lending: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  /* What is tested is the note; the stand-in's CPU-backed "GPU" can read as
   * interference on a loaded host (test_fakedrv_do_bench). */
  assert_true(r->verdict == KV_V_OK || r->verdict == KV_V_INTERFERENCE);
  assert_non_null(strstr(r->detail, "through the candidate's own process"));
  assert_non_null(strstr(r->detail, "KEVO_NO_LEND"));
  kv_gate_result_release(r);
  free(r);
  /* KEVO_LEND=0: the old path, said. */
  setenv("KEVO_LEND", "0", 1);
  r = calloc(1, sizeof *r);
  assert_non_null(r);
  eval_timed(t, path, r);
  unsetenv("KEVO_LEND");
  printf("KEVO_LEND=0: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_true(r->verdict == KV_V_OK || r->verdict == KV_V_INTERFERENCE);
  assert_non_null(strstr(r->detail, "KEVO_LEND is not 1"));
  kv_gate_result_release(r);
  free(r);
  /* The default (a C reference): lent, nothing said. */
  r = calloc(1, sizeof *r);
  assert_non_null(r);
  eval_timed(t, path, r);
  printf("default: %s: %s\n", kv_verdict_name(r->verdict), r->detail);
  assert_true(r->verdict == KV_V_OK || r->verdict == KV_V_INTERFERENCE);
  assert_null(strstr(r->detail, "through the candidate's own process"));
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

/* --timing do_bench: the worker flushes before every timed call (an event
 * before the fill, the fill, then the start event: the stand-in runs them
 * all) and the verdict names the method; the honest kernel stays ok. */
static void test_fakedrv_do_bench(void **state) {
  (void)state;
  if (!nvrtc_found())
    skip();
  char dir[PATH_MAX * 2], path[PATH_MAX * 3], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  snprintf(path, sizeof path, "%s/cands/good.cu", dir);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_gate_result *r = NULL;
  eval_method = KV_TIMING_DOBENCH;
  /* The stand-in's "GPU" is the host's CPU: on a loaded host its calls can
   * slow down between the reference's phases, which kevo calls
   * interference (rightly, for timing). That is the host, not the method:
   * up to three tries, each printed. */
  for (int try = 0; try < 3; try++) {
    if (r) {
      kv_gate_result_release(r);
      free(r);
    }
    r = calloc(1, sizeof *r);
    assert_non_null(r);
    eval_timed(t, path, r);
    printf("do_bench: %s: %s; %.1f us vs %.1f us\n", kv_verdict_name(r->verdict), r->detail,
           r->timing.cand.median_us, r->timing.ref.median_us);
    if (r->verdict != KV_V_INTERFERENCE)
      break;
  }
  eval_method = KV_TIMING_KEVO;
  assert_int_equal(r->verdict, KV_V_OK);
  assert_true(r->timed);
  assert_string_equal(r->timing.method, "do_bench");
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

static void phase_seen(void *ud, const char *phase, const struct kv_gate_result *r) {
  (void)r;
  size_t n = strlen(ud);
  snprintf((char *)ud + n, 128 - n, "%s ", phase);
}

/* The timed path too: phases of launches on fresh buffers, the events and
 * the host clock, on the stand-in's given ceilings (its PTX calibration
 * kernel cannot run). The kernel-only candidate and the kernel-only
 * reference do the same work. */
static void test_fakedrv_timed(void **state) {
  (void)state;
  if (!nvrtc_found())
    skip();
  char dir[PATH_MAX * 2], path[PATH_MAX * 3], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  snprintf(path, sizeof path, "%s/cands/good.cu", dir);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_calib cal = {"cuda:kevo fake GPU sm_90 x4", 1e6, 1e9, 1 << 20, 4, 0};
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.nvcc_path = getenv("KEVO_NVCC");
  o.cuda_arch = getenv("KEVO_CUDA_ARCH");
  o.surface = "cuda";
  o.cache_dir = cache;
  o.sandbox = 0;
  o.calib = &cal;
  o.time_budget_s = 0.2;
  char seen[128] = "";
  o.on_phase = phase_seen;
  o.phase_ud = seen;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  if (kv_gate_eval(t, path, &o, r, err, sizeof err) != 0)
    fail_msg("kv_gate_eval: %s", err);
  printf("timed good: %s: %s; %.1f us vs %.1f us\n", kv_verdict_name(r->verdict), r->detail,
         r->timing.cand.median_us, r->timing.ref.median_us);
  assert_true(r->timed);
  assert_true(r->timing.cand.median_us > 0 && r->timing.ref.median_us > 0);
  /* The static analysis ran beside the checks and timing, and its outcome
   * (a mix, or why there is none: no cuobjdump in CI) reached the result. */
  printf("static: done %d, %.2f s, note '%s'\n", r->static_done, r->static_s, r->static_note);
  assert_true(r->static_done || r->static_note[0]);
  if (r->static_done)
    assert_true(r->kernels[0].has_sass);
  /* The verdict went out before the analysis was joined. */
  printf("phases: %s\n", seen);
  assert_string_equal(seen, "compile checks timing verdict static ");
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

/* Listings (<key>.sass) the cache holds, however deep. */
static int nsass;
static int count_sass(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)f;
  size_t n = strlen(path);
  nsass += flag == FTW_F && n > 5 && !strcmp(path + n - 5, ".sass");
  return 0;
}

static int sass_in_cache(void) {
  nsass = 0;
  nftw(cache, count_sass, 16, FTW_PHYS);
  return nsass;
}

/* kv_gate_prebuild does the static analysis too (cuobjdump -sass, 0.45 s of
 * CPU each, off the evaluation's path): its listing is in the cache, and the
 * evaluation after it reads that listing without running cuobjdump (which
 * is then /bin/false: a dump now would say "not available"); with
 * prebuild_compile_only it makes none. Needs cuobjdump (CI: the PyPI wheel,
 * .ci/run). */
static void test_prebuild_analyses(void **state) {
  (void)state;
  char tool[PATH_MAX];
  kv_cuobjdump_path(env_opts(), tool, sizeof tool);
  if (!nvrtc_found() || !tool[0]) {
    printf("skipped: %s\n", tool[0] ? "no NVRTC" : "no cuobjdump (set KEVO_CUOBJDUMP)");
    skip();
  }
  char dir[PATH_MAX * 2], path[PATH_MAX * 3], err[2048];
  snprintf(dir, sizeof dir, "%s/tests/gpu/fakedrv", src);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  /* A candidate never built before (this process's id in a comment). */
  char *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/cands/good.cu", dir);
  assert_int_equal(kv_read_file(path, 1 << 20, &text, &len, err, sizeof err), 0);
  char fresh[PATH_MAX + 32], tail[64];
  snprintf(fresh, sizeof fresh, "%s/fresh.cu", cache);
  snprintf(tail, sizeof tail, "\n// a new candidate %d\n", (int)getpid());
  assert_int_equal(kv_write_file(fresh, text, len, err, sizeof err), 0);
  FILE *f = fopen(fresh, "a");
  assert_non_null(f);
  fputs(tail, f);
  fclose(f);
  free(text);
  struct kv_gate_opts o;
  env_opts_fill(&o);
  o.surface = "cuda";
  o.cache_dir = cache;
  o.timing = 0;
  o.sandbox = 0;
  o.job_deadline_s = 60;
  const char *one = fresh;
  int before = sass_in_cache();
  if (kv_gate_prebuild(t, &one, 1, &o, err, sizeof err) != 1)
    fail_msg("kv_gate_prebuild: %s", err);
  assert_int_equal(sass_in_cache(), before + 1);
  char *was = getenv("KEVO_CUOBJDUMP") ? strdup(getenv("KEVO_CUOBJDUMP")) : NULL;
  setenv("KEVO_CUOBJDUMP", "/bin/false", 1);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  int rc = kv_gate_eval(t, fresh, &o, r, err, sizeof err);
  if (was)
    setenv("KEVO_CUOBJDUMP", was, 1);
  else
    unsetenv("KEVO_CUOBJDUMP");
  free(was);
  if (rc != 0)
    fail_msg("kv_gate_eval: %s", err);
  printf("prebuilt: %s, compile cached %d; static: done %d, %.3f s, note '%s'\n",
         kv_verdict_name(r->verdict), r->compile_cached, r->static_done, r->static_s,
         r->static_note);
  assert_int_equal(r->verdict, KV_V_OK);
  assert_true(r->compile_cached);
  assert_true(r->static_done && r->kernels[0].has_sass && r->kernels[0].sass.total > 0);
  assert_int_equal(sass_in_cache(), before + 1);
  /* prebuild_compile_only (kevo eval's next candidate): no listing made. */
  FILE *g = fopen(fresh, "a");
  assert_non_null(g);
  fputs("// and another\n", g);
  fclose(g);
  o.prebuild_compile_only = 1;
  assert_int_equal(kv_gate_prebuild(t, &one, 1, &o, err, sizeof err), 1);
  assert_int_equal(sass_in_cache(), before + 1);
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s/fakedrv", c && *c ? c : "/tmp/kevo-fakedrv");
  setenv("KEVO_CUDA_ARCH", "sm_90", 1);
  kv_rmtree(cache); /* built afresh: what is judged is this build's */
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fakedrv),          cmocka_unit_test(test_fakedrv_timed),
      cmocka_unit_test(test_fakedrv_attacks),  cmocka_unit_test(test_fakedrv_no_lend_said),
      cmocka_unit_test(test_fakedrv_do_bench), cmocka_unit_test(test_prebuild_analyses)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
