/* Every example's CUDA sources (reference.cu and the .cu candidates) compile
 * with nvcc for sm_90 against kevo's generated CUDA prototype (force-included,
 * so a wrong signature fails) and link with the generated call shim. No GPU
 * is needed: this runs in CI; the GPU-labelled tests run them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/task.h"
#include "kevo/util.h"

static const char *src_dir(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  return s ? s : KEVO_SOURCE_DIR;
}

static int compile_cu(const struct kv_task *t, const char *dir, const char *cu, char *log,
                      size_t cap) {
  char tmp[PATH_MAX], err[512];
  if (kv_mkdtemp("/tmp", "kevo-nvcc", tmp, sizeof tmp, err, sizeof err) < 0)
    fail_msg("%s", err);
  char proto[65536], shim[65536], p1[PATH_MAX + 32], p2[PATH_MAX + 32], src[PATH_MAX * 2],
      out[PATH_MAX + 32];
  assert_true(kv_task_prototype(t, KV_LANG_CUDA, proto, sizeof proto) > 0);
  assert_true(kv_task_shim(t, KV_LANG_CUDA, shim, sizeof shim) > 0);
  snprintf(p1, sizeof p1, "%s/proto.h", tmp);
  snprintf(p2, sizeof p2, "%s/kevo_shim.cu", tmp);
  snprintf(out, sizeof out, "%s/out.so", tmp);
  snprintf(src, sizeof src, "%s/%s", dir, cu);
  assert_int_equal(kv_write_file(p1, proto, strlen(proto), err, sizeof err), 0);
  assert_int_equal(kv_write_file(p2, shim, strlen(shim), err, sizeof err), 0);
  char *argv[] = {"nvcc", "-arch=sm_90", "-O3", "-shared", "-Xcompiler", "-fPIC", "-include",
                  p1,     src,           p2,    "-o",      out,          NULL};
  struct kv_buf b;
  kv_buf_init(&b, 1 << 16);
  struct kv_proc_result r;
  int rc = kv_run(argv, NULL, NULL, 300, NULL, NULL, &b, &r, err, sizeof err);
  snprintf(log, cap, "%s", rc < 0 ? err : (b.data ? b.data : ""));
  int ok = rc == 0 && r.exited && r.status == 0 && kv_path_exists(out);
  kv_buf_release(&b);
  kv_rmtree(tmp);
  return ok;
}

/* Compiles dir/cu against t, printing "ok" or "FAIL" and the log under
 * `label`; counts it. */
static void compile_counted(const struct kv_task *t, const char *dir, const char *cu,
                            const char *label, int *compiled, int *failed) {
  char log[65536];
  int ok = compile_cu(t, dir, cu, log, sizeof log);
  printf("%s %s/%s\n", ok ? "ok  " : "FAIL", label, cu);
  if (!ok) {
    printf("%s\n", log);
    (*failed)++;
  }
  (*compiled)++;
}

static void test_examples_compile(void **state) {
  (void)state;
  char base[PATH_MAX];
  snprintf(base, sizeof base, "%s/examples/tasks", src_dir());
  DIR *d = opendir(base);
  assert_non_null(d);
  struct dirent *e;
  int compiled = 0, failed = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || e->d_name[0] == '_')
      continue;
    char dir[PATH_MAX * 2], err[1024];
    snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
    struct kv_task *t;
    if (kv_task_load(dir, &t, err, sizeof err) < 0)
      continue;
    const char *files[] = {"reference.cu", "starter.cu", "good.cu", "baseline.cu"};
    for (size_t i = 0; i < KV_ARRAY_LEN(files); i++) {
      char p[PATH_MAX * 2 + 32];
      snprintf(p, sizeof p, "%s/%s", dir, files[i]);
      if (!kv_path_exists(p)) {
        if (i == 0) {
          printf("FAIL %s: reference.cu is missing\n", e->d_name);
          failed++;
        }
        continue;
      }
      compile_counted(t, dir, files[i], e->d_name, &compiled, &failed);
    }
    kv_task_free(t);
  }
  closedir(d);
  printf("%d CUDA sources compiled, %d failed\n", compiled, failed);
  assert_true(compiled >= 6);
  assert_int_equal(failed, 0);
}

/* bench/kernelbench_cands: hand-written candidates of KernelBench problems
 * (bench/kernelbench_vs_harness.sh), each against the task `kevo import`
 * made of its problem (tasks/NAME/task.json, written by kevo import and kept
 * here: KernelBench is not in the tree). A candidate that stops following
 * the generated prototype fails here. */
static void test_kernelbench_cands_compile(void **state) {
  (void)state;
  char base[PATH_MAX];
  snprintf(base, sizeof base, "%s/bench/kernelbench_cands", src_dir());
  DIR *d = opendir(base);
  assert_non_null(d);
  struct dirent *e;
  int compiled = 0, failed = 0;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if (n < 4 || strcmp(e->d_name + n - 3, ".cu"))
      continue;
    char name[256], dir[PATH_MAX * 2], err[1024];
    snprintf(name, sizeof name, "%.*s", (int)(n - 3), e->d_name);
    char *w = strstr(name, ".wrong");
    if (w)
      *w = 0;
    snprintf(dir, sizeof dir, "%s/tasks/%s", base, name);
    struct kv_task *t;
    if (kv_task_load(dir, &t, err, sizeof err) < 0) {
      printf("FAIL %s: no task for it: %s\n", e->d_name, err);
      failed++;
      continue;
    }
    compile_counted(t, base, e->d_name, "kernelbench_cands", &compiled, &failed);
    kv_task_free(t);
  }
  closedir(d);
  printf("%d KernelBench candidates compiled, %d failed\n", compiled, failed);
  assert_true(compiled >= 6);
  assert_int_equal(failed, 0);
}

static void test_wrong_signature_fails(void **state) {
  (void)state;
  char dir[PATH_MAX], err[1024];
  snprintf(dir, sizeof dir, "%s/examples/tasks/rowsum", src_dir());
  struct kv_task *t;
  assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
  char tmp[PATH_MAX];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-sig", tmp, sizeof tmp, err, sizeof err), 0);
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/bad.cu", tmp);
  const char *bad = "extern \"C\" void rowsum(const double *x, float *y, int rows, int cols,\n"
                    "                       cudaStream_t stream) {}\n";
  assert_int_equal(kv_write_file(p, bad, strlen(bad), err, sizeof err), 0);
  char log[65536];
  assert_false(compile_cu(t, tmp, "bad.cu", log, sizeof log));
  assert_non_null(strstr(log, "rowsum"));
  kv_rmtree(tmp);
  kv_task_free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wrong_signature_fails),
      cmocka_unit_test(test_examples_compile),
      cmocka_unit_test(test_kernelbench_cands_compile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
