/* The GPU adversarial candidates, timing attacks included, build the way the
 * cuda surface builds them (nvcc for sm_90 through kv_build_cuda,
 * KEVO_CUDA_ARCH set, so no GPU is needed), and the policy judges each one as
 * test_gpu expects: this runs in CI, which has nvcc and no GPU. Also: the
 * ptxas resource report is parsed, and a task that allows cuBLAS links it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/gate/internal.h"
#include "env_opts.h"

static char src[PATH_MAX], cache[PATH_MAX];

struct expect {
  const char *name, *task;
  int compiles, violations;
};

static const struct expect cands[] = {
    {"good", NULL, 1, 0},
    {"side_stream", NULL, 1, 0},
    {"pointer_cache", NULL, 1, 0},
    {"stale_memory", NULL, 1, 0},
    {"partial_output", NULL, 1, 0},
    {"illegal_address", NULL, 1, 0},
    {"trap", NULL, 1, 0},
    {"endless", NULL, 1, 0},
    {"exit_host", NULL, 1, 0},
    {"too_much_smem", NULL, 1, 0},
    {"input_mutation", NULL, 1, 0},
    {"write_past_end", NULL, 1, 0},
    {"wrong_signature", NULL, 0, 0},
    {"system_call", NULL, 1, 1},
    {"cublas_not_allowed", NULL, 1, 1},
    {"half_matmul", "examples/tasks/matmul", 1, 0},
    /* Timing attacks (test_gpu's second table): each passes the policy. */
    {"forge_elapsed", NULL, 1, 0},
    {"forge_clock", NULL, 1, 0},
    {"forge_write", NULL, 1, 0},
    {"forge_reply", NULL, 1, 0},
    {"hog_stream", NULL, 1, 0},
    {"persistent_ctx", NULL, 1, 0},
    {"steal_ref_output", NULL, 1, 0},
    {"last_call_only", NULL, 1, 0},
    {"diff_cache", "tests/gpu/matmul", 1, 0},
    {"sampled_cache", "tests/gpu/rowmax", 1, 0},
    {"fourier_poison", "tests/gpu/fourier", 1, 0},
    {"histogram_contention", "tests/gpu/histogram", 1, 0},
    /* Issue 28's attacks on what the candidate's process carries
     * (test_gpu_verdict): each passes the policy. */
    {"relay_reply", NULL, 1, 0},
    {"relay_fetch", NULL, 1, 0},
    {"ctor_memcpy", NULL, 1, 0},
    {"queue_after", NULL, 1, 0},
};

static struct kv_task *load(const char *task) {
  char dir[PATH_MAX * 2], err[1024];
  snprintf(dir, sizeof dir, "%s/%s", src, task ? task : "tests/gpu/rowsum");
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  return t;
}

/* cuBLAS's headers come with the full toolkit, not with nvcc alone. */
static int have_cublas(void) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s", kv_nvcc_path(env_opts()));
  char *slash = strrchr(path, '/');
  if (!slash)
    return 0;
  strcpy(slash, "/../include/cublas_v2.h");
  return kv_path_exists(path);
}

static void test_candidates(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    const struct expect *e = &cands[i];
    if (strstr(e->name, "cublas") && !have_cublas()) {
      printf("skip %-20s (no cuBLAS headers beside nvcc)\n", e->name);
      continue;
    }
    struct kv_task *t = load(e->task);
    char path[PATH_MAX * 2], err[2048], out[512] = "";
    snprintf(path, sizeof path, "%s/tests/gpu/cands/%s.cu", src, e->name);
    struct kv_build b;
    if (kv_build_cuda(t, env_opts(), path, cache, 300, &b, err, sizeof err) != 0)
      fail_msg("%s: %s", e->name, err);
    int nv = b.ok ? kv_policy_check_cuda(b.obj_path, t, out, sizeof out, err, sizeof err) : 0;
    if (nv < 0)
      fail_msg("%s: policy: %s", e->name, err);
    int ok = b.ok == e->compiles && (nv > 0) == (e->violations > 0);
    printf("%s %-20s compiled=%d (%.2f s%s) kernels=%d violations=%d %s\n", ok ? "ok  " : "FAIL",
           e->name, b.ok, b.seconds, b.cached ? ", cached" : "", b.nkernels, nv, out);
    if (!ok && b.log)
      printf("%s\n", b.log);
    bad += !ok;
    if (!strcmp(e->name, "good")) {
      assert_true(b.nkernels >= 1);
      assert_true(b.kernels[0].registers > 0);
    }
    if (!strcmp(e->name, "wrong_signature"))
      assert_non_null(strstr(b.log ? b.log : "", "rowsum"));
    kv_build_release(&b);
    kv_task_free(t);
  }
  assert_int_equal(bad, 0);
}

/* With "allow": ["cublas"], the same cuBLAS call passes the policy and the
 * object links libcublas. */
static void test_allow_cublas(void **state) {
  (void)state;
  if (!have_cublas())
    skip();
  char dir[PATH_MAX], err[2048], out[512];
  snprintf(dir, sizeof dir, "%s/allow", cache);
  assert_int_equal(kv_mkdirs(dir, 0700, err, sizeof err), 0);
  char *spec = NULL;
  size_t len = 0;
  char tj[PATH_MAX * 2];
  snprintf(tj, sizeof tj, "%s/tests/gpu/rowsum/task.json", src);
  assert_int_equal(kv_read_file(tj, 1 << 20, &spec, &len, err, sizeof err), 0);
  char *brace = strrchr(spec, '}');
  assert_non_null(brace);
  *brace = 0;
  char *spec2 = malloc(len + 64);
  snprintf(spec2, len + 64, "%s, \"allow\": [\"cublas\"]}", spec);
  struct kv_task *t;
  if (kv_task_parse(spec2, strlen(spec2), "task.json", &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/tests/gpu/cands/cublas_not_allowed.cu", src);
  struct kv_build b;
  if (kv_build_cuda(t, env_opts(), path, cache, 300, &b, err, sizeof err) != 0)
    fail_msg("%s", err);
  if (!b.ok)
    fail_msg("does not build with cuBLAS allowed:\n%s", b.log ? b.log : "");
  assert_int_equal(kv_policy_check_cuda(b.obj_path, t, out, sizeof out, err, sizeof err), 0);
  kv_build_release(&b);
  kv_task_free(t);
  free(spec);
  free(spec2);
}

static void test_ptxas_report(void **state) {
  (void)state;
  const char *log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z3fooPf\n"
      "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 368 bytes cmem[0]\n"
      "ptxas info    : Function properties for _Z6helperv\n"
      "    32 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'bar' for 'sm_90'\n"
      "ptxas info    : Function properties for bar\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers\n";
  struct kv_kernel_res k[4];
  assert_int_equal(kv_parse_ptxas(log, k, 4), 2);
  assert_string_equal(k[0].name, "_Z3fooPf");
  assert_int_equal(k[0].registers, 40);
  assert_int_equal(k[0].barriers, 1);
  assert_int_equal(k[0].smem_bytes, 2048);
  assert_int_equal(k[0].cmem_bytes, 368);
  assert_int_equal(k[0].stack_bytes, 16);
  assert_int_equal(k[0].spill_store_bytes, 8);
  assert_int_equal(k[0].spill_load_bytes, 4);
  assert_string_equal(k[1].name, "bar");
  assert_int_equal(k[1].registers, 8);
  assert_int_equal(k[1].smem_bytes, 0);
  assert_int_equal(kv_parse_ptxas(log, k, 1), 1);
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s/gpu-cands", c && *c ? c : "/tmp/kevo-gpu-cands");
  /* Build for sm_90 whatever this machine has (usually no GPU at all). */
  setenv("KEVO_CUDA_ARCH", "sm_90", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptxas_report),
      cmocka_unit_test(test_candidates),
      cmocka_unit_test(test_allow_cublas),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
