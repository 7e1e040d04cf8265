/* Vendor libraries on a real GPU (CTest label `gpu`; CI skips it): the
 * level-2 task of tests/cuda/allow/ (y = relu(x w^T + bias), a KernelBench
 * Gemm + bias + ReLU layer; reference.cu the ground truth) judged end to end
 * by kv_gate_eval on the cuda surface, the candidate's process sandboxed and
 * locked down as always:
 *   - sgemm_epilogue (cublasSgemm, then a fused bias + ReLU kernel), with
 *     "allow": ["cublas"]: ok, timed;
 *   - lt_epilogue (one cublasLtMatmul, bias + ReLU in its epilogue): ok;
 *   - cudnn_relu (cuBLAS GEMM, a bias kernel, cuDNN's ReLU) with "allow":
 *     ["cublas", "cudnn"]: ok (cuDNN's sub-libraries load with the
 *     candidate, before the lockdown);
 *   - the same sgemm_epilogue on the task without "allow": policy_violation
 *     saying "cublas is not allowed by this task; add ...";
 *   - dlopen_cublas (the library loaded by hand): policy_violation.
 * The tasks without or with other allow lists are written under the cache
 * directory from the one in the source tree. A table of verdicts and times
 * is printed at the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../gpu/env_opts.h"
#include "kevo/gate.h"
#include "kevo/task.h"
#include "kevo/util.h"

struct acase {
  const char *cand;  /* tests/cuda/allow/cands/<cand>.cu */
  const char *allow; /* the task's allow list (JSON) */
  enum kv_verdict want;
  const char *detail; /* the verdict's detail must contain it (NULL: anything) */
};

static const struct acase cases[] = {
    {"sgemm_epilogue", "[\"cublas\"]", KV_V_OK, NULL},
    {"lt_epilogue", "[\"cublas\"]", KV_V_OK, NULL},
    {"lt_epilogue", "[\"cublaslt\"]", KV_V_OK, NULL},
    {"cudnn_relu", "[\"cublas\", \"cudnn\"]", KV_V_OK, NULL},
    {"sgemm_epilogue", "[]", KV_V_POLICY_VIOLATION,
     "cublas is not allowed by this task; add \"allow\": [\"cublas\"] to task.json or import "
     "with --allow cublas"},
    {"cudnn_relu", "[\"cublas\"]", KV_V_POLICY_VIOLATION, "cudnn is not allowed by this task"},
    {"dlopen_cublas", "[\"cublas\"]", KV_V_POLICY_VIOLATION, "dlopen"},
};
#define NCASES (sizeof cases / sizeof cases[0])

static struct {
  char src[PATH_MAX], cache[PATH_MAX];
  char rows[NCASES][512];
} g;

/* A copy of the task under the cache directory with allow as its list. */
static void task_dir(const char *allow, int idx, char *dir, size_t cap) {
  char from[PATH_MAX + 64], err[1024];
  snprintf(from, sizeof from, "%s/tests/cuda/allow/gemm_bias_relu", g.src);
  snprintf(dir, cap, "%s/task-%d", g.cache, idx);
  assert_int_equal(kv_mkdirs(dir, 0700, err, sizeof err), 0);
  static const char *const files[] = {"reference.c", "reference.cu", "task.json"};
  for (size_t i = 0; i < 3; i++) {
    char p[PATH_MAX + 64], q[PATH_MAX + 64], *text = NULL;
    size_t len = 0;
    snprintf(p, sizeof p, "%s/%s", from, files[i]);
    snprintf(q, sizeof q, "%s/%s", dir, files[i]);
    if (kv_read_file(p, 1 << 20, &text, &len, err, sizeof err) != 0)
      fail_msg("%s", err);
    char *at = i == 2 ? strstr(text, "\"allow\": [\"cublas\"]") : NULL;
    if (i == 2) {
      assert_non_null(at);
      struct kv_buf b;
      kv_buf_init(&b, 1 << 20);
      kv_buf_appendf(&b, "%.*s\"allow\": %s%s", (int)(at - text), text, allow,
                     at + strlen("\"allow\": [\"cublas\"]"));
      assert_int_equal(kv_write_file(q, b.data, b.len, err, sizeof err), 0);
      kv_buf_release(&b);
    } else {
      assert_int_equal(kv_write_file(q, text, len, err, sizeof err), 0);
    }
    free(text);
  }
}

static void run_case(void **state) {
  const struct acase *c = *state;
  int idx = (int)(c - cases);
  char dir[PATH_MAX + 32], path[PATH_MAX + 64], err[2048] = "";
  task_dir(c->allow, idx, dir, sizeof dir);
  snprintf(path, sizeof path, "%s/tests/cuda/allow/cands/%s.cu", g.src, c->cand);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  struct kv_gate_opts o;
  env_opts_fill(&o);
  o.surface = "cuda";
  o.cache_dir = g.cache;
  o.time_budget_s = 0.5;
  o.timing = c->want == KV_V_OK;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  printf("[gpu] %s with allow %s ...\n", c->cand, c->allow);
  fflush(stdout);
  int rc = kv_gate_eval(t, path, &o, r, err, sizeof err);
  kv_task_free(t);
  if (rc != 0) {
    snprintf(g.rows[idx], sizeof g.rows[idx], "%-15s %-22s kevo error: %.300s", c->cand, c->allow,
             err);
    free(r);
    fail_msg("%s: kv_gate_eval: %s", c->cand, err);
  }
  char timing[160] = "";
  if (r->timed)
    snprintf(timing, sizeof timing, " %.1f us, reference %.1f us, %.2fx (%s)",
             r->timing.cand.median_us, r->timing.ref.median_us, r->timing.speedup,
             r->timing.cand_host_timer ? "host clock" : "events");
  int ok = r->verdict == c->want && (!c->detail || strstr(r->detail, c->detail));
  snprintf(g.rows[idx], sizeof g.rows[idx], "%-15s %-22s %-17s %s%s; %.250s", c->cand, c->allow,
           kv_verdict_name(r->verdict), ok ? "PASS" : "FAIL", timing, r->detail);
  printf("%s\n", g.rows[idx]);
  enum kv_verdict got = r->verdict;
  char detail[1024];
  snprintf(detail, sizeof detail, "%s", r->detail);
  int timed = r->timed;
  kv_gate_result_release(r);
  free(r);
  if (!ok)
    fail_msg("%s with allow %s: verdict %s (%s), expected %s%s%s", c->cand, c->allow,
             kv_verdict_name(got), detail, kv_verdict_name(c->want), c->detail ? " saying " : "",
             c->detail ? c->detail : "");
  if (c->want == KV_V_OK)
    assert_true(timed);
}

static int teardown(void **state) {
  (void)state;
  printf("\n%-15s %-22s %-17s result\n", "candidate", "allow", "verdict");
  for (size_t i = 0; i < NCASES; i++)
    if (g.rows[i][0])
      printf("%s\n", g.rows[i]);
  fflush(stdout);
  return 0;
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(g.src, sizeof g.src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(g.cache, sizeof g.cache, "%s/gpu-allow", c && *c ? c : "/tmp/kevo-gpu-allow");
  char err[256];
  if (kv_mkdirs(g.cache, 0700, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  static char names[NCASES][96];
  struct CMUnitTest tests[NCASES];
  for (size_t i = 0; i < NCASES; i++) {
    snprintf(names[i], sizeof names[i], "%s_%zu", cases[i].cand, i);
    tests[i] = (struct CMUnitTest){names[i], run_case, NULL, NULL, (void *)&cases[i]};
  }
  return cmocka_run_group_tests_name("gpu_allow", tests, NULL, teardown);
}
