/* The kernel-only contract without a GPU (NVRTC for sm_90, KEVO_CUDA_ARCH
 * set): every kernel-only candidate of tests/gpu/kcands/ and the six
 * examples' good_k.cu build the way the gate builds them (kv_build_cuda picks
 * the contract by what the source holds), and the compile-time defences hold:
 *  - a source with launch lines and no entry goes to NVRTC (a .kvk bundle
 *    and a cubin); with an entry, to nvcc;
 *  - a bad launch line is a compile error naming the line, the field, the fix;
 *  - `#include "/etc/shadow"` fails inside the compile sandbox;
 *  - a side stream or a launch from device code does not compile;
 *  - the policy passes printf/malloc/free and names the device runtime's
 *    symbols (a recorded -rdc cubin, which the gate never makes, stands in);
 *  - the build is cached, and kevo builds it again for a new #define (tune).
 * Runs where NVRTC and nvcc are (CI has them); skips elsewhere. */
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
#include "../../lib/gate/nvrtc.h"

static int nvrtc_found(void) {
  char lib[PATH_MAX];
  return kv_nvrtc_lib(env_opts(), lib, sizeof lib) == 0;
}

static char src[PATH_MAX], cache[PATH_MAX];

struct expect {
  const char *name;
  int kernel_only, compiles, violations;
  const char *log_has; /* in the compile log, or NULL */
};

static const struct expect cands[] = {
    {"good", 1, 1, 0, "kernel-only candidate"},
    {"pointer_cache", 1, 1, 0, NULL},
    {"stale_memory", 1, 1, 0, NULL},
    {"partial_output", 1, 1, 0, NULL},
    {"illegal_address", 1, 1, 0, NULL},
    {"trap", 1, 1, 0, NULL},
    {"endless", 1, 1, 0, NULL},
    {"too_much_smem", 1, 1, 0, NULL},
    {"input_mutation", 1, 1, 0, NULL},
    {"write_past_end", 1, 1, 0, NULL},
    {"wrong_params", 1, 1, 0, NULL},
    {"printf_flood", 1, 1, 0, NULL},
    {"include_host", 1, 0, 0, "#include of an absolute path (/etc/shadow)"},
    {"side_stream", 1, 0, 0, "cudaStreamCreateWithFlags"},
    {"dynamic_parallelism", 1, 0, 0, "device-side kernel launch"},
    {"bad_launch", 1, 0, 0, "candidate.cu:3: kevo:launch k: args[3]: 'width' is not a param"},
    {"both", 0, 1, 0, NULL},
};

static struct kv_task *load(const char *task) {
  char dir[PATH_MAX * 2], err[1024];
  snprintf(dir, sizeof dir, "%s/%s", src, task);
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  return t;
}

static int have_toolchain(void) {
  return nvrtc_found() && kv_nvcc_version(env_opts())[0];
}

static void build_one(struct kv_task *t, const char *path, struct kv_build *b) {
  char err[2048];
  if (kv_build_cuda(t, env_opts(), path, cache, 300, b, err, sizeof err) != 0)
    fail_msg("%s: %s", path, err);
}

static void test_candidates(void **state) {
  (void)state;
  if (!have_toolchain())
    skip();
  int bad = 0;
  struct kv_task *t = load("tests/gpu/rowsum");
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++) {
    const struct expect *e = &cands[i];
    char path[PATH_MAX * 2], err[2048], out[1024] = "";
    snprintf(path, sizeof path, "%s/tests/gpu/kcands/%s.cu", src, e->name);
    struct kv_build b;
    build_one(t, path, &b);
    int nv = 0;
    if (b.ok) {
      const struct kv_surface *sf = kv_surface_find("cuda");
      nv = sf->policy(&b, t, out, sizeof out, err, sizeof err);
      if (nv < 0)
        fail_msg("%s: policy: %s", e->name, err);
    }
    int ok = b.kernel_only == e->kernel_only && b.ok == e->compiles &&
             (nv > 0) == (e->violations > 0) &&
             (!e->log_has || (b.log && strstr(b.log, e->log_has)));
    if (ok && b.ok && b.kernel_only) {
      size_t l = strlen(b.so_path);
      ok = l > 4 && !strcmp(b.so_path + l - 4, ".kvk") && kv_path_exists(b.obj_path) &&
           b.nkernels >= 1;
    }
    printf("%s %-20s kernel_only=%d compiled=%d (%.3f s%s) kernels=%d violations=%d %s\n",
           ok ? "ok  " : "FAIL", e->name, b.kernel_only, b.ok, b.seconds,
           b.cached ? ", cached" : "", b.nkernels, nv, out);
    if (!ok)
      printf("%s\n", b.log ? b.log : "(no log)");
    bad += !ok;
    kv_build_release(&b);
  }
  kv_task_free(t);
  assert_int_equal(bad, 0);
}

/* The six examples' good kernels in the kernel-only form compile with NVRTC
 * (their launch lines hold at every check and bench size). */
static void test_examples(void **state) {
  (void)state;
  if (!have_toolchain())
    skip();
  static const char *ex[] = {"rowsum", "softmax", "layernorm", "transpose", "matmul", "conv1d"};
  for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++) {
    char dir[64], path[PATH_MAX * 2];
    snprintf(dir, sizeof dir, "examples/tasks/%s", ex[i]);
    struct kv_task *t = load(dir);
    snprintf(path, sizeof path, "%s/%s/good_k.cu", src, dir);
    struct kv_build b;
    build_one(t, path, &b);
    printf("%-10s good_k.cu kernel_only=%d compiled=%d %.3f s%s kernels=%d regs=%d\n", ex[i],
           b.kernel_only, b.ok, b.seconds, b.cached ? " (cached)" : "", b.nkernels,
           b.nkernels ? b.kernels[0].registers : 0);
    if (!b.ok || !b.kernel_only)
      fail_msg("%s/good_k.cu:\n%s", ex[i], b.log ? b.log : "");
    assert_true(b.nkernels >= 1 && b.kernels[0].registers > 0);
    kv_build_release(&b);
    kv_task_free(t);
  }
}

/* A second build is served from the cache; a tune variant (a #define put
 * first) is a new build, and its launch line sees the variant's value. */
static void test_cache_and_defines(void **state) {
  (void)state;
  if (!have_toolchain())
    skip();
  struct kv_task *t = load("tests/gpu/rowsum");
  char path[PATH_MAX * 2], err[1024];
  snprintf(path, sizeof path, "%s/variant.cu", cache);
  const char *body = "#ifndef NT\n#define NT 64\n#endif\n"
                     "// kevo:launch k grid=((rows + NT - 1) / NT) block=(NT) args=(x, y, rows, "
                     "cols)\n"
                     "__global__ void k(const float *x, float *y, int rows, int cols) {\n"
                     "  int r = blockIdx.x * NT + threadIdx.x;\n"
                     "  if (r < rows) y[r] = x[(size_t)r * cols];\n}\n";
  assert_int_equal(kv_write_file(path, body, strlen(body), err, sizeof err), 0);
  struct kv_build a, b, c;
  build_one(t, path, &a);
  assert_true(a.ok);
  build_one(t, path, &b);
  assert_true(b.ok && b.cached);
  assert_string_equal(a.key, b.key);
  char *v = malloc(strlen(body) + 64);
  sprintf(v, "#define NT 1024\n#line 1\n%s", body);
  assert_int_equal(kv_write_file(path, v, strlen(v), err, sizeof err), 0);
  build_one(t, path, &c);
  assert_true(c.ok && !c.cached);
  assert_string_not_equal(a.key, c.key);
  /* The bundle's plan carries the variant's value. */
  char *bundle = NULL;
  size_t len = 0;
  assert_int_equal(kv_read_file(c.so_path, 64 << 20, &bundle, &len, err, sizeof err), 0);
  assert_memory_equal(bundle, "KEVOKRN1\n", 9);
  assert_non_null(strstr(bundle, "\"block\":[\"(1024)\"]"));
  free(bundle);
  free(v);
  kv_build_release(&a);
  kv_build_release(&b);
  kv_build_release(&c);
  kv_task_free(t);
}

/* The kernel-only policy on recorded cubins: printf, malloc and free pass;
 * the device runtime's symbols (dynamic parallelism, only in an -rdc build,
 * which kevo never makes) are named. */
static void test_policy_fixtures(void **state) {
  (void)state;
  char path[PATH_MAX * 2], out[1024], err[1024];
  snprintf(path, sizeof path, "%s/tests/gpu/kcands/fixtures/printf_malloc.cubin", src);
  int n = kv_policy_check_nvrtc(path, out, sizeof out, err, sizeof err);
  if (n < 0)
    fail_msg("%s", err);
  assert_int_equal(n, 0);
  snprintf(path, sizeof path, "%s/tests/gpu/kcands/fixtures/cdp_rdc.cubin", src);
  n = kv_policy_check_nvrtc(path, out, sizeof out, err, sizeof err);
  assert_int_equal(n, 2);
  assert_non_null(strstr(out, "__cudaCDP2LaunchDeviceV2 (the device runtime"));
}

/* The contract is picked by what the source holds. */
static void test_pick(void **state) {
  (void)state;
  struct kv_task *t = load("tests/gpu/rowsum");
  const char *k = "// kevo:launch k grid=(1) block=(1) args=(y)\n__global__ void k(float *y) {}\n";
  const char *h = "// kevo:launch k grid=(1) block=(1) args=(y)\n"
                  "extern \"C\" void rowsum(const float *x, float *y, int rows, int cols,\n"
                  "                         cudaStream_t stream) {}\n";
  const char *n = "__global__ void k(float *y) {}\n";
  assert_int_equal(kv_cuda_is_kernel_only(t, k, strlen(k)), 1);
  assert_int_equal(kv_cuda_is_kernel_only(t, h, strlen(h)), 0);
  assert_int_equal(kv_cuda_is_kernel_only(t, n, strlen(n)), 0);
  kv_task_free(t);
}

int main(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  snprintf(src, sizeof src, "%s", s && *s ? s : KEVO_SOURCE_DIR);
  const char *c = getenv("KEVO_CACHE_DIR");
  snprintf(cache, sizeof cache, "%s/gpu-kcands", c && *c ? c : "/tmp/kevo-gpu-kcands");
  char err[512];
  kv_rmtree(cache); /* cold: the cache test counts on a first build */
  if (kv_mkdirs(cache, 0700, err, sizeof err) < 0) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  setenv("KEVO_CUDA_ARCH", "sm_90", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pick),
      cmocka_unit_test(test_policy_fixtures),
      cmocka_unit_test(test_candidates),
      cmocka_unit_test(test_examples),
      cmocka_unit_test(test_cache_and_defines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
