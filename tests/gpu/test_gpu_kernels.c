/* The kernel-only contract on a real GPU (CTest label `gpu`): the kernel-only
 * forms of the GPU adversarial suite (tests/gpu/kcands/, on the rowsum task
 * of tests/gpu/rowsum) get the verdicts their headers name, through the same
 * gate as host-entry candidates (NVRTC cubin, loaded and launched by
 * kevo-worker), and the six examples' good_k.cu are accepted. The endless
 * kernel is followed by the good one, which must pass on a fresh worker.
 * Prints a verdict table. KEVO_GPU_FILTER=NAME runs one candidate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env_opts.h"
#include "kevo/gate.h"
#include "kevo/task.h"

static char src[PATH_MAX], cache[PATH_MAX];
static char table[64][400];
static int nrows;

struct kcase {
  const char *name;
  unsigned accept; /* verdicts (bits) that pass */
  int timing;
  double deadline_s;
};

#define V(x) (1u << KV_V_##x)

static const struct kcase kcases[] = {
    {"good", V(OK), 1, 0},
    {"pointer_cache", V(STALE_OUTPUT) | V(WRONG_OUTPUT), 0, 0},
    {"stale_memory", V(UNWRITTEN_OUTPUT), 0, 0},
    {"partial_output", V(UNWRITTEN_OUTPUT), 0, 0},
    {"illegal_address", V(CRASH), 0, 0},
    {"trap", V(CRASH), 0, 0},
    {"endless", V(TIMEOUT), 0, 5},
    {"good", V(OK), 0, 0}, /* after the endless kernel: a fresh worker, a normal GPU */
    {"too_much_smem", V(CRASH) | V(LOAD_ERROR), 0, 0},
    {"input_mutation", V(INPUT_MUTATED), 0, 0},
    {"write_past_end", V(WRONG_OUTPUT), 0, 0},
    {"wrong_params", V(LOAD_ERROR) | V(WRONG_OUTPUT), 0, 0},
    {"printf_flood", V(OK), 0, 0},
    {"include_host", V(COMPILE_ERROR), 0, 0},
    {"side_stream", V(COMPILE_ERROR), 0, 0},
    {"dynamic_parallelism", V(COMPILE_ERROR), 0, 0},
    {"bad_launch", V(COMPILE_ERROR), 0, 0},
    {"both", V(OK), 0, 0},
};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int judge(const char *task_dir, const char *path, const char *label, unsigned accept,
                 int timing, double deadline_s) {
  char dir[PATH_MAX * 2], err[2048] = "";
  snprintf(dir, sizeof dir, "%s/%s", src, task_dir);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_gate_opts o;
  env_opts_fill(&o);
  o.surface = "cuda";
  o.cache_dir = cache;
  o.time_budget_s = 0.3;
  o.timing = timing;
  if (deadline_s > 0)
    o.job_deadline_s = deadline_s;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  printf("[gpu kernel-only] %s ...\n", label);
  fflush(stdout);
  double t0 = now_s();
  int rc = kv_gate_eval(t, path, &o, r, err, sizeof err);
  double wall = now_s() - t0;
  kv_task_free(t);
  if (rc != 0) {
    kv_gate_result_release(r);
    free(r);
    fail_msg("%s: kv_gate_eval: %s", label, err);
  }
  int ok = (accept >> r->verdict) & 1;
  char tm[96] = "";
  if (r->timed)
    snprintf(tm, sizeof tm, " %.1f us vs %.1f us (%.2fx)", r->timing.cand.median_us,
             r->timing.ref.median_us, r->timing.speedup);
  if (nrows < 64)
    snprintf(table[nrows++], sizeof table[0], "%-28s %-18s %6.2f  %s%s; %.200s", label,
             kv_verdict_name(r->verdict), wall, ok ? "PASS" : "FAIL", tm, r->detail);
  if (!ok)
    printf("%s: verdict %s: %s\n%s\n", label, kv_verdict_name(r->verdict), r->detail,
           r->compile_log ? r->compile_log : "");
  kv_gate_result_release(r);
  free(r);
  return ok;
}

static void test_kcands(void **state) {
  (void)state;
  const char *filter = getenv("KEVO_GPU_FILTER");
  int bad = 0;
  for (size_t i = 0; i < sizeof kcases / sizeof kcases[0]; i++) {
    const struct kcase *c = &kcases[i];
    if (filter && *filter && strcmp(filter, c->name) != 0)
      continue;
    char path[PATH_MAX * 2], label[64];
    snprintf(path, sizeof path, "%s/tests/gpu/kcands/%s.cu", src, c->name);
    snprintf(label, sizeof label, "kcands/%s", c->name);
    bad += !judge("tests/gpu/rowsum", path, label, c->accept, c->timing, c->deadline_s);
  }
  assert_int_equal(bad, 0);
}

static void test_examples(void **state) {
  (void)state;
  const char *filter = getenv("KEVO_GPU_FILTER");
  static const char *ex[] = {"rowsum", "softmax", "layernorm", "transpose", "matmul", "conv1d"};
  int bad = 0;
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    if (filter && *filter && strcmp(filter, ex[i]) != 0)
      continue;
    char dir[64], path[PATH_MAX * 2], label[64];
    snprintf(dir, sizeof dir, "examples/tasks/%s", ex[i]);
    snprintf(path, sizeof path, "%s/%s/good_k.cu", src, dir);
    snprintf(label, sizeof label, "%s/good_k", ex[i]);
    bad += !judge(dir, path, label, V(OK), 1, 0);
  }
  assert_int_equal(bad, 0);
}

static int print_table(void **state) {
  (void)state;
  printf("\nkernel-only verdicts\n%-28s %-18s %6s  %s\n", "candidate", "verdict", "wall_s",
         "result");
  for (int i = 0; i < nrows; i++)
    printf("%s\n", table[i]);
  return 0;
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s", c && *c ? c : "/tmp/kevo-gpu-kernels");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kcands),
      cmocka_unit_test(test_examples),
  };
  return cmocka_run_group_tests(tests, NULL, print_table);
}
