/* Generated prototypes and call shims: exact text for every role and dtype
 * in both languages, and real compilation: a C shim + entry built with
 * `cc -shared -fPIC` and called through dlopen, the same with nvcc for CUDA
 * (when nvcc is installed), and a candidate with a wrong signature refused
 * by the compiler against the force-included prototype. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kevo/task.h"

/* Every role and every dtype. */
static const char ALL[] =
    "{\"name\": \"all\", \"entry\": \"mix\", \"params\": ["
    "{\"name\": \"a\", \"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"n\"]},"
    "{\"name\": \"b\", \"role\": \"in\", \"dtype\": \"f64\", \"shape\": [\"n\"]},"
    "{\"name\": \"c\", \"role\": \"in\", \"dtype\": \"i32\", \"shape\": [\"n\"]},"
    "{\"name\": \"d\", \"role\": \"in\", \"dtype\": \"i64\", \"shape\": [\"n\"]},"
    "{\"name\": \"e\", \"role\": \"in\", \"dtype\": \"u8\", \"shape\": [\"n\"]},"
    "{\"name\": \"f\", \"role\": \"in\", \"dtype\": \"f16\", \"shape\": [\"n\"]},"
    "{\"name\": \"g\", \"role\": \"in\", \"dtype\": \"bf16\", \"shape\": [\"n\"]},"
    "{\"name\": \"o1\", \"role\": \"out\", \"dtype\": \"f64\", \"shape\": [\"n\"]},"
    "{\"name\": \"o2\", \"role\": \"out\", \"dtype\": \"f16\", \"shape\": [\"n\"]},"
    "{\"name\": \"o3\", \"role\": \"inout\", \"dtype\": \"i64\", \"shape\": [\"n\"]},"
    "{\"name\": \"o4\", \"role\": \"inout\", \"dtype\": \"bf16\", \"shape\": [\"n\"]},"
    "{\"name\": \"o5\", \"role\": \"out\", \"dtype\": \"u8\", \"shape\": []},"
    "{\"name\": \"n\", \"role\": \"size\"},"
    "{\"name\": \"s1\", \"role\": \"scalar\", \"dtype\": \"f32\", \"value\": 1.5},"
    "{\"name\": \"s2\", \"role\": \"scalar\", \"dtype\": \"f64\", \"value\": -2.25},"
    "{\"name\": \"s3\", \"role\": \"scalar\", \"dtype\": \"i32\", \"value\": -7},"
    "{\"name\": \"s4\", \"role\": \"scalar\", \"dtype\": \"i64\", \"value\": 9000000000},"
    "{\"name\": \"s5\", \"role\": \"scalar\", \"dtype\": \"u8\", \"value\": 200},"
    "{\"name\": \"s6\", \"role\": \"scalar\", \"dtype\": \"f16\", \"value\": 0.5},"
    "{\"name\": \"s7\", \"role\": \"scalar\", \"dtype\": \"bf16\", \"value\": 3},"
    "{\"name\": \"m\", \"role\": \"size\"}],"
    "\"check\": [{\"n\": 4, \"m\": 9}]}";

static const char ALL_C[] =
    "/* kevo: the entry of task 'all' (generated; do not edit) */\n"
    "#ifndef KEVO_ENTRY_PROTOTYPE\n"
    "#define KEVO_ENTRY_PROTOTYPE\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "void mix(const float *a, const double *b, const int32_t *c, const int64_t *d, const uint8_t "
    "*e, const uint16_t *f, const uint16_t *g, double *o1, uint16_t *o2, int64_t *o3, uint16_t "
    "*o4, uint8_t *o5, int n, float s1, double s2, int32_t s3, int64_t s4, uint8_t s5, uint16_t "
    "s6, uint16_t s7, int m);\n"
    "#endif\n";

static const char ALL_CUDA[] =
    "/* kevo: the entry of task 'all' (generated; do not edit) */\n"
    "#ifndef KEVO_ENTRY_PROTOTYPE\n"
    "#define KEVO_ENTRY_PROTOTYPE\n"
    "#include <cuda_runtime.h>\n"
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "extern \"C\" void mix(const float *a, const double *b, const int32_t *c, const int64_t *d, "
    "const uint8_t *e, const __half *f, const __nv_bfloat16 *g, double *o1, __half *o2, int64_t "
    "*o3, __nv_bfloat16 *o4, uint8_t *o5, int n, float s1, double s2, int32_t s3, int64_t s4, "
    "uint8_t s5, __half s6, __nv_bfloat16 s7, int m, cudaStream_t stream);\n"
    "#endif\n";

static const char ROWSUM[] =
    "{\"name\": \"rowsum\", \"entry\": \"rowsum\", \"params\": ["
    "{\"name\": \"x\", \"role\": \"in\", \"dtype\": \"f32\", \"shape\": [\"rows\", \"cols\"]},"
    "{\"name\": \"y\", \"role\": \"out\", \"dtype\": \"f32\", \"shape\": [\"rows\"]},"
    "{\"name\": \"rows\", \"role\": \"size\"}, {\"name\": \"cols\", \"role\": \"size\"}],"
    "\"check\": [{\"rows\": 7, \"cols\": 1001}]}";

static struct kv_task *load(const char *text) {
  struct kv_task *t = NULL;
  char err[512];
  if (kv_task_parse(text, strlen(text), "task.json", &t, err, sizeof err) != 0)
    fail_msg("%s", err);
  return t;
}

static void test_rowsum_text(void **state) {
  (void)state;
  struct kv_task *t = load(ROWSUM);
  char buf[4096];
  int n = kv_task_prototype(t, KV_LANG_C, buf, sizeof buf);
  assert_int_equal(n, (int)strlen(buf));
  assert_non_null(strstr(buf, "\nvoid rowsum(const float *x, float *y, int rows, int cols);\n"));
  n = kv_task_prototype(t, KV_LANG_CUDA, buf, sizeof buf);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "\nextern \"C\" void rowsum(const float *x, float *y, int rows, "
                              "int cols, cudaStream_t stream);\n"));
  n = kv_task_shim(t, KV_LANG_C, buf, sizeof buf);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "void kevo_shim_call(void *const *args) {\n  rowsum(\n    (const "
                              "float *)args[0],\n    (float *)args[1],\n    *(const int "
                              "*)args[2],\n    *(const int *)args[3]);\n}\n"));
  n = kv_task_shim(t, KV_LANG_CUDA, buf, sizeof buf);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "extern \"C\" void kevo_shim_call(void *const *args, cudaStream_t "
                              "stream) {\n"));
  assert_non_null(strstr(buf, "*(const int *)args[3],\n    stream);\n}\n"));
  kv_task_free(t);
}

static void test_every_role_and_dtype(void **state) {
  (void)state;
  struct kv_task *t = load(ALL);
  char buf[8192];
  int n = kv_task_prototype(t, KV_LANG_C, buf, sizeof buf);
  assert_string_equal(buf, ALL_C);
  assert_int_equal(n, (int)strlen(ALL_C));
  n = kv_task_prototype(t, KV_LANG_CUDA, buf, sizeof buf);
  assert_string_equal(buf, ALL_CUDA);
  assert_int_equal(n, (int)strlen(ALL_CUDA));
  n = kv_task_shim(t, KV_LANG_CUDA, buf, sizeof buf);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "(const __half *)args[5],\n"));
  assert_non_null(strstr(buf, "(__nv_bfloat16 *)args[10],\n"));
  assert_non_null(strstr(buf, "*(const __nv_bfloat16 *)args[19],\n"));
  assert_non_null(strstr(buf, "*(const int *)args[20],\n    stream);\n"));

  /* Every cap too small by one byte fails; the exact size succeeds. */
  int (*fns[2])(const struct kv_task *, enum kv_lang, char *, size_t) = {kv_task_prototype,
                                                                         kv_task_shim};
  for (int f = 0; f < 2; f++)
    for (int lang = 0; lang < 2; lang++) {
      int len = fns[f](t, (enum kv_lang)lang, buf, sizeof buf);
      assert_true(len > 0);
      char *exact = malloc((size_t)len + 1);
      assert_int_equal(fns[f](t, (enum kv_lang)lang, exact, (size_t)len + 1), len);
      assert_string_equal(exact, buf);
      assert_true(fns[f](t, (enum kv_lang)lang, exact, (size_t)len) < 0);
      assert_true(strlen(exact) < (size_t)len);
      assert_true(fns[f](t, (enum kv_lang)lang, exact, 1) < 0);
      assert_true(fns[f](t, (enum kv_lang)lang, NULL, 100) < 0);
      free(exact);
    }
  kv_task_free(t);
}

/* ---- compiling for real ------------------------------------------------------ */

static char tmpdir[] = "/tmp/kevo_test_proto_XXXXXX";

static void write_file(const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* Runs a shell command in tmpdir with its output in tmpdir/log; returns its status. */
static int sh(const char *fmt, ...) {
  char cmd[2048], full[2600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "cd %s && (%s) >log 2>&1", tmpdir, cmd);
  return system(full);
}

static void show_log(void) {
  char path[512], line[512];
  snprintf(path, sizeof path, "%s/log", tmpdir);
  FILE *f = fopen(path, "r");
  if (!f)
    return;
  while (fgets(line, sizeof line, f))
    fprintf(stderr, "  | %s", line);
  fclose(f);
}

static const char *cc(void) {
  const char *c = getenv("CC");
  return c && *c ? c : "cc";
}

/* The entry for ALL: checks every argument, writes outputs. Returns through
 * o1[0] a checksum of what it saw. */
static const char ENTRY_BODY[] =
    "  int ok = n == 4 && m == 9 && s1 == 1.5f && s2 == -2.25 && s3 == -7 &&\n"
    "           s4 == 9000000000LL && s5 == 200 && S6 == 0x3800 && S7 == 0x4040;\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    ok = ok && a[i] == (float)i && b[i] == i * 0.5 && c[i] == -i && d[i] == 10 * i &&\n"
    "         e[i] == i + 1 && F(i) == 0x3c00 && G(i) == 0x3f80;\n"
    "    o1[i] = ok ? 42.0 + i : -1.0;\n"
    "    O2(i) = 0x4000;\n"
    "    o3[i] += 100;\n"
    "    O4(i) = 0x4000;\n"
    "  }\n"
    "  *o5 = (uint8_t)(ok ? 7 : 0);\n";

static void call_all(void *fn_shim, int cuda) {
  float a[4];
  double b[4], o1[4];
  int32_t c[4];
  int64_t d[4], o3[4];
  uint8_t e[4], o5 = 0;
  uint16_t f[4], g[4], o2[4], o4[4];
  for (int i = 0; i < 4; i++) {
    a[i] = (float)i, b[i] = i * 0.5, c[i] = -i, d[i] = 10 * i, e[i] = (uint8_t)(i + 1);
    f[i] = 0x3c00, g[i] = 0x3f80, o1[i] = 0, o2[i] = 0, o3[i] = i, o4[i] = 0;
  }
  int n = 4, m = 9;
  float s1 = 1.5f;
  double s2 = -2.25;
  int32_t s3 = -7;
  int64_t s4 = 9000000000LL;
  uint8_t s5 = 200;
  uint16_t s6 = 0x3800, s7 = 0x4040;
  void *args[] = {a,   b,  c,   d,   e,   f,   g,   o1,  o2,  o3, o4,
                  &o5, &n, &s1, &s2, &s3, &s4, &s5, &s6, &s7, &m};
  if (cuda)
    ((void (*)(void *const *, void *))fn_shim)(args, NULL);
  else
    ((void (*)(void *const *))fn_shim)(args);
  for (int i = 0; i < 4; i++) {
    assert_true(o1[i] == 42.0 + i);
    assert_int_equal(o2[i], 0x4000);
    assert_int_equal(o3[i], i + 100);
    assert_int_equal(o4[i], 0x4000);
  }
  assert_int_equal(o5, 7);
}

static void test_c_shim_compiles_and_calls(void **state) {
  (void)state;
  struct kv_task *t = load(ALL);
  char buf[8192], src[4096];
  assert_true(kv_task_prototype(t, KV_LANG_C, buf, sizeof buf) > 0);
  write_file("proto.h", buf);
  assert_true(kv_task_shim(t, KV_LANG_C, buf, sizeof buf) > 0);
  write_file("shim.c", buf);
  snprintf(src, sizeof src,
           "#define S6 s6\n#define S7 s7\n#define F(i) f[i]\n#define G(i) g[i]\n"
           "#define O2(i) o2[i]\n#define O4(i) o4[i]\n"
           "void mix(const float *a, const double *b, const int32_t *c, const int64_t *d,\n"
           "         const uint8_t *e, const uint16_t *f, const uint16_t *g, double *o1,\n"
           "         uint16_t *o2, int64_t *o3, uint16_t *o4, uint8_t *o5, int n, float s1,\n"
           "         double s2, int32_t s3, int64_t s4, uint8_t s5, uint16_t s6, uint16_t s7,\n"
           "         int m) {\n%s}\n",
           ENTRY_BODY);
  write_file("entry.c", src);
  int rc = sh("%s -std=c11 -Wall -Wextra -Werror -include proto.h -shared -fPIC -o libc.so "
              "shim.c entry.c",
              cc());
  if (rc != 0) {
    show_log();
    fail_msg("the C shim did not compile");
  }
  char so[512];
  snprintf(so, sizeof so, "%s/libc.so", tmpdir);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    fail_msg("dlopen: %s", dlerror());
  void *fn = dlsym(h, "kevo_shim_call");
  assert_non_null(fn);
  call_all(fn, 0);
  dlclose(h);
  kv_task_free(t);
}

static void test_wrong_signature_refused(void **state) {
  (void)state;
  struct kv_task *t = load(ROWSUM);
  char buf[4096];
  assert_true(kv_task_prototype(t, KV_LANG_C, buf, sizeof buf) > 0);
  write_file("rowsum.h", buf);
  write_file("good.c", "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                       "  for (int r = 0; r < rows; r++) {\n"
                       "    float s = 0;\n"
                       "    for (int c = 0; c < cols; c++) s += x[r * cols + c];\n"
                       "    y[r] = s;\n  }\n}\n");
  write_file("bad1.c", "void rowsum(float *x, float *y, int rows, int cols) {\n"
                       "  (void)x, (void)y, (void)rows, (void)cols;\n}\n");
  write_file("bad2.c", "void rowsum(const float *x, float *y, long rows, int cols) {\n"
                       "  (void)x, (void)y, (void)rows, (void)cols;\n}\n");
  write_file("bad3.c", "void rowsum(const double *x, double *y, int rows, int cols) {\n"
                       "  (void)x, (void)y, (void)rows, (void)cols;\n}\n");
  write_file("bad4.c", "int rowsum(const float *x, float *y, int rows, int cols) {\n"
                       "  (void)x, (void)y, (void)rows, (void)cols; return 0;\n}\n");
  if (sh("%s -std=c11 -Wall -Wextra -Werror -include rowsum.h -c good.c -o good.o", cc()) != 0) {
    show_log();
    fail_msg("the right signature did not compile");
  }
  for (int i = 1; i <= 4; i++) {
    if (sh("%s -std=c11 -include rowsum.h -c bad%d.c -o bad%d.o", cc(), i, i) == 0)
      fail_msg("bad%d.c compiled against the prototype", i);
    if (sh("%s -std=c11 -include rowsum.h -c bad%d.c -o bad%d.o 2>&1 | grep -q 'conflicting "
           "types'",
           cc(), i, i) != 0) {
      show_log();
      fail_msg("bad%d.c: the compiler did not say 'conflicting types'", i);
    }
  }
  kv_task_free(t);
}

static const char *find_nvcc(void) {
  static char path[512];
  const char *envpath = getenv("PATH");
  if (envpath) {
    const char *p = envpath;
    while (*p) {
      const char *end = strchr(p, ':');
      size_t len = end ? (size_t)(end - p) : strlen(p);
      snprintf(path, sizeof path, "%.*s/nvcc", (int)len, p);
      if (len && access(path, X_OK) == 0)
        return path;
      if (!end)
        break;
      p = end + 1;
    }
  }
  if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
    return "/usr/local/cuda/bin/nvcc";
  return NULL;
}

static void test_cuda_shim_compiles_and_calls(void **state) {
  (void)state;
  const char *nvcc = find_nvcc();
  if (!nvcc) {
    printf("[  SKIP    ] nvcc not found on PATH or in /usr/local/cuda/bin: CUDA shim not "
           "compiled\n");
    skip();
  }
  struct kv_task *t = load(ALL);
  char buf[8192], src[4096];
  assert_true(kv_task_prototype(t, KV_LANG_CUDA, buf, sizeof buf) > 0);
  write_file("proto_cuda.h", buf);
  assert_true(kv_task_shim(t, KV_LANG_CUDA, buf, sizeof buf) > 0);
  write_file("shim.cu", buf);
  snprintf(src, sizeof src,
           "#include <string.h>\n"
           "static unsigned short bits(__half h) { unsigned short u; memcpy(&u, &h, 2); "
           "return u; }\n"
           "static unsigned short bits(__nv_bfloat16 h) { unsigned short u; memcpy(&u, &h, 2); "
           "return u; }\n"
           "#define S6 bits(s6)\n#define S7 bits(s7)\n#define F(i) bits(f[i])\n"
           "#define G(i) bits(g[i])\n"
           "#define O2(i) *(unsigned short *)&o2[i]\n#define O4(i) *(unsigned short *)&o4[i]\n"
           "extern \"C\" void mix(const float *a, const double *b, const int32_t *c,\n"
           "    const int64_t *d, const uint8_t *e, const __half *f, const __nv_bfloat16 *g,\n"
           "    double *o1, __half *o2, int64_t *o3, __nv_bfloat16 *o4, uint8_t *o5, int n,\n"
           "    float s1, double s2, int32_t s3, int64_t s4, uint8_t s5, __half s6,\n"
           "    __nv_bfloat16 s7, int m, cudaStream_t stream) {\n"
           "  (void)stream;\n%s}\n",
           ENTRY_BODY);
  write_file("entry.cu", src);
  int rc = sh("%s -arch=sm_90 -shared -Xcompiler -fPIC -include proto_cuda.h -o libcu.so "
              "shim.cu entry.cu",
              nvcc);
  if (rc != 0) {
    show_log();
    fail_msg("the CUDA shim did not compile");
  }
  char so[512];
  snprintf(so, sizeof so, "%s/libcu.so", tmpdir);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    fail_msg("dlopen: %s", dlerror());
  void *fn = dlsym(h, "kevo_shim_call");
  assert_non_null(fn);
  call_all(fn, 1);
  dlclose(h);

  /* A CUDA candidate with the wrong signature fails against the prototype. */
  write_file("bad.cu", "extern \"C\" void mix(const float *a) { (void)a; }\n");
  if (sh("%s -arch=sm_90 -include proto_cuda.h -c bad.cu -o bad_cu.o", nvcc) == 0)
    fail_msg("bad.cu compiled against the CUDA prototype");
  kv_task_free(t);
}

static int setup(void **state) {
  (void)state;
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rowsum_text),
      cmocka_unit_test(test_every_role_and_dtype),
      cmocka_unit_test(test_c_shim_compiles_and_calls),
      cmocka_unit_test(test_wrong_signature_refused),
      cmocka_unit_test(test_cuda_shim_compiles_and_calls),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
