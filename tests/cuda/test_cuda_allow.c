/* Vendor libraries on the cuda surface without a GPU (nvcc only; CI runs
 * it): the level-2 task of tests/cuda/allow/ (GEMM + bias + ReLU) and its
 * candidates, built the way the gate builds them (kv_build_cuda for sm_90)
 * and judged by the policy under several "allow" lists:
 *   - a candidate calling cuBLAS (cublasSgemm), cuBLASLt or cuDNN compiles,
 *     links the library (DT_NEEDED) and passes the policy when the task
 *     allows it, and is refused with "X is not allowed by this task; add
 *     "allow": ["X"] ..." when it does not;
 *   - loading the library by hand (dlopen, or dlopen's address from dlsym)
 *     is refused whatever the task allows;
 *   - a missing library is an error naming it and how to install it; one the
 *     worker's sandbox cannot read is an error until $LD_LIBRARY_PATH names
 *     its directory; a wheel's layout (only libcudnn.so.9, a cuda_runtime.h
 *     of its own beside cudnn.h) links, its cuDNN headers alone staged;
 *   - a compile that fails on a vendor header the task does not allow says so
 *     first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/gate/internal.h"
#include "../../lib/gate/vendor.h"
#include "../gpu/env_opts.h"
#include "kevo/sandbox.h"

static char src[PATH_MAX], cache[PATH_MAX];

/* The task with its "allow" list replaced by `allow` (JSON, e.g. "[]"). */
static struct kv_task *task_with(const char *allow) {
  char path[PATH_MAX + 64], err[2048];
  snprintf(path, sizeof path, "%s/tests/cuda/allow/gemm_bias_relu/task.json", src);
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(path, 1 << 20, &text, &len, err, sizeof err) != 0)
    fail_msg("%s", err);
  char *at = strstr(text, "\"allow\": [\"cublas\"]");
  assert_non_null(at);
  size_t cap = len + strlen(allow) + 64;
  char *spec = malloc(cap);
  assert_non_null(spec);
  snprintf(spec, cap, "%.*s\"allow\": %s%s", (int)(at - text), text, allow,
           at + strlen("\"allow\": [\"cublas\"]"));
  struct kv_task *t = NULL;
  if (kv_task_parse(spec, strlen(spec), "task.json", &t, err, sizeof err) != 0)
    fail_msg("%s: %s", allow, err);
  free(spec);
  free(text);
  return t;
}

/* The libraries the task's allow list needs are on this machine. */
static int have(const struct kv_task *t) {
  struct kv_vendor *v = malloc(sizeof *v);
  char err[2048];
  int ok = v && kv_vendor_find(t, env_opts(), v, err, sizeof err) == 0;
  if (!ok)
    printf("skip: %s\n", err);
  free(v);
  return ok;
}

/* `readelf -d so` lists NEEDED lib (e.g. "libcublas.so"). */
static int needs(const char *so, const char *lib) {
  char cmd[PATH_MAX + 64], line[1024];
  snprintf(cmd, sizeof cmd, "readelf -d '%s'", so);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  int found = 0;
  while (fgets(line, sizeof line, p))
    if (strstr(line, "(NEEDED)") && strstr(line, lib))
      found = 1;
  pclose(p);
  return found;
}

/* Builds cands/<cand>.cu for allow; the policy's verdict into out. Returns
 * the number of violations; the build's shared object into so. */
static int judge(const char *cand, const char *allow, char *out, size_t cap, char *so,
                 size_t socap) {
  struct kv_task *t = task_with(allow);
  char path[PATH_MAX + 64], err[2048];
  snprintf(path, sizeof path, "%s/tests/cuda/allow/cands/%s.cu", src, cand);
  struct kv_build b;
  if (kv_build_cuda(t, env_opts(), path, cache, 300, &b, err, sizeof err) != 0)
    fail_msg("%s with allow %s: %s", cand, allow, err);
  if (!b.ok)
    fail_msg("%s with allow %s does not build:\n%s", cand, allow, b.log ? b.log : "");
  int nv = kv_policy_check_cuda(b.obj_path, t, out, cap, err, sizeof err);
  if (nv < 0)
    fail_msg("%s: policy: %s", cand, err);
  printf("%-16s allow %-22s violations %d %s\n", cand, allow, nv, out);
  if (so)
    snprintf(so, socap, "%s", b.so_path);
  kv_build_release(&b);
  kv_task_free(t);
  return nv;
}

static const char *refusal(const char *lib) {
  static char msg[256];
  snprintf(msg, sizeof msg,
           "%s is not allowed by this task; add \"allow\": [\"%s\"] to task.json or import with "
           "--allow %s",
           lib, lib, lib);
  return msg;
}

static void test_cublas(void **state) {
  (void)state;
  struct kv_task *t = task_with("[\"cublas\"]");
  int ok = have(t);
  kv_task_free(t);
  if (!ok)
    skip();
  char out[1024], so[PATH_MAX];
  assert_int_equal(judge("sgemm_epilogue", "[\"cublas\"]", out, sizeof out, so, sizeof so), 0);
  assert_true(needs(so, "libcublas.so"));
  /* Without allow: the same source compiles and is refused, saying how to allow it. */
  assert_int_equal(judge("sgemm_epilogue", "[]", out, sizeof out, NULL, 0), 1);
  assert_non_null(strstr(out, "cublasCreate_v2 ("));
  assert_non_null(strstr(out, refusal("cublas")));
  /* cuBLASLt alone allows cublasLt* only. */
  assert_int_equal(judge("sgemm_epilogue", "[\"cublaslt\"]", out, sizeof out, NULL, 0), 1);
  assert_non_null(strstr(out, refusal("cublas")));
}

static void test_cublaslt(void **state) {
  (void)state;
  struct kv_task *t = task_with("[\"cublaslt\"]");
  int ok = have(t);
  kv_task_free(t);
  if (!ok)
    skip();
  char out[1024], so[PATH_MAX];
  assert_int_equal(judge("lt_epilogue", "[\"cublaslt\"]", out, sizeof out, so, sizeof so), 0);
  assert_true(needs(so, "libcublasLt.so"));
  assert_false(needs(so, "libcublas.so"));
  /* "cublas" brings cuBLASLt with it (libcublas itself needs it). */
  assert_int_equal(judge("lt_epilogue", "[\"cublas\"]", out, sizeof out, so, sizeof so), 0);
  assert_true(needs(so, "libcublasLt.so"));
  assert_int_equal(judge("lt_epilogue", "[]", out, sizeof out, NULL, 0), 1);
  assert_non_null(strstr(out, refusal("cublaslt")));
}

static void test_cudnn(void **state) {
  (void)state;
  struct kv_task *t = task_with("[\"cublas\", \"cudnn\"]");
  int ok = have(t);
  kv_task_free(t);
  if (!ok)
    skip();
  char out[1024], so[PATH_MAX];
  assert_int_equal(judge("cudnn_relu", "[\"cublas\", \"cudnn\"]", out, sizeof out, so, sizeof so),
                   0);
  assert_true(needs(so, "libcudnn.so"));
  /* cuDNN's sub-libraries load with the candidate, before the lockdown. */
  assert_true(needs(so, "libcudnn_ops.so"));
  assert_true(needs(so, "libcudnn_graph.so"));
  assert_int_equal(judge("cudnn_relu", "[\"cublas\"]", out, sizeof out, NULL, 0), 1);
  assert_non_null(strstr(out, "cudnnActivationForward (")); /* the first, by name */
  assert_non_null(strstr(out, refusal("cudnn")));
  assert_int_equal(judge("cudnn_relu", "[]", out, sizeof out, NULL, 0), 2);
}

/* Loading the library by hand is refused, allowed or not. */
static void test_by_hand(void **state) {
  (void)state;
  char out[1024];
  assert_true(judge("dlopen_cublas", "[\"cublas\"]", out, sizeof out, NULL, 0) >= 2);
  assert_non_null(strstr(out, "dlopen"));
  assert_non_null(strstr(out, "dlsym"));
  assert_int_equal(judge("dlsym_dlopen", "[]", out, sizeof out, NULL, 0), 1);
  assert_string_equal(out, "dlsym");
}

/* A fake root for KEVO_CUDNN_DIR under dir: include/cudnn*.h and lib/ with
 * only versioned names (a wheel's layout), linked to the real ones. */
static int fake_root(const char *dir, char *real_lib, size_t cap) {
  struct kv_task *t = task_with("[\"cudnn\"]");
  struct kv_vendor *v = malloc(sizeof *v);
  char err[2048];
  int ok = v && kv_vendor_find(t, env_opts(), v, err, sizeof err) == 0;
  kv_task_free(t);
  if (!ok) {
    free(v);
    return -1;
  }
  /* summary: "cudnn: INC/cudnn.h, LIBDIR/FILE" */
  char inc[PATH_MAX], lib[PATH_MAX];
  const char *a = strstr(v->summary, ": ") + 2, *c = strstr(a, "/cudnn.h, ");
  snprintf(inc, sizeof inc, "%.*s", (int)(c - a), a);
  const char *l = c + strlen("/cudnn.h, ");
  snprintf(lib, sizeof lib, "%.*s", (int)(strrchr(l, '/') - l), l);
  snprintf(real_lib, cap, "%s", lib);
  free(v);
  char cmd[4 * PATH_MAX];
  snprintf(
      cmd, sizeof cmd,
      "rm -rf '%s' && mkdir -p '%s/include' '%s/lib' && ln -s '%s'/cudnn*.h '%s/include/' && "
      "for f in '%s'/libcudnn*.so.9; do ln -s \"$f\" '%s/lib/'; done && "
      "echo '#error a wheel cuda_runtime.h shadowed the toolkit one' > '%s/include/cuda_runtime.h'",
      dir, dir, dir, inc, dir, lib, dir, dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_where(void **state) {
  (void)state;
  char dir[PATH_MAX + 16], err[2048], real_lib[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/allow-root", cache);
  if (fake_root(dir, real_lib, sizeof real_lib) < 0)
    skip();
  struct kv_task *t = task_with("[\"cudnn\"]");
  struct kv_vendor *v = malloc(sizeof *v);
  assert_non_null(v);
  /* Nothing there: an error naming the library, where, and how to install it. */
  setenv("KEVO_CUDNN_DIR", "/nonexistent/cudnn", 1);
  assert_int_equal(kv_vendor_find(t, env_opts(), v, err, sizeof err), -1);
  printf("%s\n", err);
  assert_non_null(strstr(err, "task.json: allow: cudnn: cudnn.h and libcudnn.so* not found"));
  assert_non_null(strstr(err, "pip install nvidia-cudnn-cu13"));
  /* A wheel's layout outside what the worker's sandbox reads: refused... */
  setenv("KEVO_CUDNN_DIR", dir, 1);
  const char *ld = getenv("LD_LIBRARY_PATH");
  char *saved = ld ? strdup(ld) : NULL;
  unsetenv("LD_LIBRARY_PATH");
  char libdir[PATH_MAX + 32], real[PATH_MAX];
  snprintf(libdir, sizeof libdir, "%s/lib", dir);
  assert_non_null(realpath(libdir, real));
  if (kv_sandbox_worker_reads(real)) {
    printf("skip the unreadable case: %s is readable in the worker's sandbox\n", real);
  } else {
    assert_int_equal(kv_vendor_find(t, env_opts(), v, err, sizeof err), -1);
    printf("%s\n", err);
    assert_non_null(strstr(err, "the worker's sandbox cannot read it"));
    assert_non_null(strstr(err, "LD_LIBRARY_PATH"));
  }
  /* ... until LD_LIBRARY_PATH names it (the sandbox then reads it). */
  setenv("LD_LIBRARY_PATH", real, 1);
  assert_true(kv_sandbox_worker_reads(real));
  assert_int_equal(kv_vendor_find(t, env_opts(), v, err, sizeof err), 0);
  printf("%s\n", v->summary);
  int l_versioned = 0, rpath = 0;
  for (int i = 0; i < v->nlargs; i++) {
    l_versioned |= strstr(v->largs[i], "allow-root/lib/libcudnn.so.9") != NULL;
    rpath |= strstr(v->largs[i], "-rpath=") && strstr(v->largs[i], "allow-root/lib");
  }
  assert_true(l_versioned);
  assert_true(rpath);
  /* Its headers are staged alone: the directory's cuda_runtime.h stays out. */
  assert_int_equal(v->ncargs, 2);
  assert_string_equal(v->cargs[1], "kevo-vendor-include");
  assert_int_equal(v->nstage, 1);
  assert_string_equal(v->stage_glob[0], "cudnn*.h");
  /* It links from there (the compiler's sandbox is given the directory). */
  kv_task_free(t);
  char out[1024], so[PATH_MAX];
  assert_int_equal(judge("cudnn_relu", "[\"cublas\", \"cudnn\"]", out, sizeof out, so, sizeof so),
                   0);
  assert_true(needs(so, "libcudnn.so.9"));
  unsetenv("KEVO_CUDNN_DIR");
  if (saved)
    setenv("LD_LIBRARY_PATH", saved, 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  free(saved);
  free(v);
}

static void test_log_hint(void **state) {
  (void)state;
  struct kv_task *t = task_with("[\"cublas\"]");
  char hint[512];
  const char *log = "candidate.cu(3): catastrophic error: cannot open source file \"cudnn.h\"\n"
                    "In file included from candidate.cu:3:\n"
                    "fatal error: cudnn.h: No such file or directory\n";
  kv_vendor_log_hint(t, log, hint, sizeof hint);
  assert_string_equal(hint, "error: cudnn.h: cudnn is not allowed by this task; add \"allow\": "
                            "[\"cudnn\"] to task.json or import with --allow cudnn\n");
  kv_vendor_log_hint(t, "fatal error: cublas_v2.h: No such file or directory\n", hint, sizeof hint);
  assert_string_equal(hint, ""); /* allowed: the log speaks for itself */
  kv_task_free(t);
}

/* The sandbox's rule for the worker: system directories, and $LD_LIBRARY_PATH's. */
static void test_sandbox_reads(void **state) {
  (void)state;
  assert_true(kv_sandbox_worker_reads("/usr/lib"));
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/allow-ld", cache);
  char err[256];
  assert_int_equal(kv_mkdirs(dir, 0700, err, sizeof err), 0);
  char real[PATH_MAX];
  assert_non_null(realpath(dir, real));
  const char *ld = getenv("LD_LIBRARY_PATH");
  char *saved = ld ? strdup(ld) : NULL;
  unsetenv("LD_LIBRARY_PATH");
  int sys = kv_sandbox_worker_reads(real);
  char both[2 * PATH_MAX];
  snprintf(both, sizeof both, "relative/dir:/:%s", real);
  setenv("LD_LIBRARY_PATH", both, 1);
  assert_true(kv_sandbox_worker_reads(real));
  struct kv_sandbox_opts o;
  kv_sandbox_worker_defaults(&o, "/x");
  int listed = 0;
  for (int i = 0; i < o.nread_paths; i++) {
    listed |= !strcmp(o.read_paths[i], real);
    assert_string_not_equal(o.read_paths[i], "/"); /* never the whole tree */
    assert_true(o.read_paths[i][0] == '/');
  }
  assert_true(listed);
  if (!sys) {
    setenv("LD_LIBRARY_PATH", "/", 1);
    assert_false(kv_sandbox_worker_reads(real));
  }
  if (saved)
    setenv("LD_LIBRARY_PATH", saved, 1);
  else
    unsetenv("LD_LIBRARY_PATH");
  free(saved);
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s/cuda-allow", c && *c ? c : "/tmp/kevo-cuda-allow");
  char err[256];
  if (kv_mkdirs(cache, 0700, err, sizeof err) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  /* Build for sm_90 whatever this machine has (usually no GPU at all). */
  setenv("KEVO_CUDA_ARCH", "sm_90", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_log_hint), cmocka_unit_test(test_sandbox_reads),
      cmocka_unit_test(test_by_hand),  cmocka_unit_test(test_cublas),
      cmocka_unit_test(test_cublaslt), cmocka_unit_test(test_cudnn),
      cmocka_unit_test(test_where),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
