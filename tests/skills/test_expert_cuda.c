/* Every annotated CUDA expert under examples/tasks (expert*.cu) compiles
 * with nvcc for sm_90 at every kernel its backward walk visits (all
 * mechanisms on, then one more off per step, in removal order), against
 * kevo's generated prototype and call shim. No GPU needed; the walks
 * themselves run on a GPU (skills_gpu, label gpu). */
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

#include "kevo/skills.h"
#include "kevo/task.h"
#include "kevo/util.h"

static const char *src_dir(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  return s ? s : KEVO_SOURCE_DIR;
}

static int compile_text(const struct kv_task *t, const char *text, size_t len, char *log,
                        size_t cap) {
  char tmp[PATH_MAX], err[512];
  if (kv_mkdtemp("/tmp", "kevo-expert", tmp, sizeof tmp, err, sizeof err) < 0)
    fail_msg("%s", err);
  char proto[65536], shim[65536], p1[PATH_MAX + 32], p2[PATH_MAX + 32], src[PATH_MAX + 32],
      out[PATH_MAX + 32];
  assert_true(kv_task_prototype(t, KV_LANG_CUDA, proto, sizeof proto) > 0);
  assert_true(kv_task_shim(t, KV_LANG_CUDA, shim, sizeof shim) > 0);
  snprintf(p1, sizeof p1, "%s/proto.h", tmp);
  snprintf(p2, sizeof p2, "%s/kevo_shim.cu", tmp);
  snprintf(src, sizeof src, "%s/cand.cu", tmp);
  snprintf(out, sizeof out, "%s/out.so", tmp);
  assert_int_equal(kv_write_file(p1, proto, strlen(proto), err, sizeof err), 0);
  assert_int_equal(kv_write_file(p2, shim, strlen(shim), err, sizeof err), 0);
  assert_int_equal(kv_write_file(src, text, len, err, sizeof err), 0);
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

static void test_cuda_experts_compile(void **state) {
  (void)state;
  char base[PATH_MAX];
  snprintf(base, sizeof base, "%s/examples/tasks", src_dir());
  DIR *d = opendir(base);
  assert_non_null(d);
  struct dirent *e;
  int experts = 0, compiled = 0, failed = 0;
  const char *only = getenv("KEVO_EXPERT_ONLY"); /* a task name, to iterate on one */
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.' || (only && strcmp(only, e->d_name)))
      continue;
    char dir[PATH_MAX * 2], err[2048];
    snprintf(dir, sizeof dir, "%s/%s", base, e->d_name);
    DIR *td = opendir(dir);
    if (!td)
      continue;
    struct dirent *f;
    while ((f = readdir(td))) {
      size_t n = strlen(f->d_name);
      if (strncmp(f->d_name, "expert", 6) || n < 4 || strcmp(f->d_name + n - 3, ".cu"))
        continue;
      struct kv_task *t;
      assert_int_equal(kv_task_load(dir, &t, err, sizeof err), 0);
      char path[PATH_MAX * 3], *src;
      size_t len;
      snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
      assert_int_equal(kv_read_file(path, KV_ANNOT_SRC_MAX, &src, &len, err, sizeof err), 0);
      static struct kv_annot a;
      if (kv_annot_parse(src, len, path, &a, err, sizeof err) != 0)
        fail_msg("%s", err);
      experts++;
      uint32_t all = a.n >= 32 ? 0xffffffffu : ((1u << a.n) - 1u), on = all;
      /* the walk's path when every step is accepted, then each mechanism
       * alone off (the path when the steps before it were rejected) */
      for (int k = -1; k < 2 * a.n - 1; k++) {
        if (k >= 0 && k < a.n)
          on &= ~(1u << a.order[k]);
        else if (k >= a.n)
          on = all & ~(1u << a.order[k - a.n + 1]);
        char *out;
        size_t olen;
        assert_int_equal(kv_annot_resolve(src, len, path, &a, on, &out, &olen, err, sizeof err), 0);
        char log[65536];
        int ok = compile_text(t, out, olen, log, sizeof log);
        printf("%s %s/%s %s%s\n", ok ? "ok  " : "FAIL", e->d_name, f->d_name,
               k < 0     ? "(all mechanisms)"
               : k < a.n ? "without up to "
                         : "without only ",
               k < 0 ? "" : a.m[a.order[k < a.n ? k : k - a.n + 1]].name);
        if (!ok) {
          printf("%s\n", log);
          failed++;
        }
        compiled++;
        free(out);
      }
      free(src);
      kv_task_free(t);
    }
    closedir(td);
  }
  closedir(d);
  printf("%d CUDA experts, %d kernels compiled, %d failed\n", experts, compiled, failed);
  if (!only)
    assert_true(experts >= 4);
  assert_int_equal(failed, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_experts_compile),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
