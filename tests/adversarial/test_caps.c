/* Compile bombs and files a compiler must not read (issue 28 item 6, issue
 * 30): each candidate in caps/ attacks the compilers kevo runs on candidate
 * text. Each must end as a clear compile error whose detail names what
 * stopped it (the memory cap, the CPU cap, or the refusal of a file), within
 * a deadline, and leave nothing cached that a later run under other caps
 * would trust.
 *
 * The C cases go through kv_gate_eval on the rowsum task (the verdict is
 * compile_error); the nvcc and NVRTC cases call the cuda surface's builder
 * (no GPU needed: only the compile runs) and are skipped without nvcc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/gate.h"
#include "kevo/task.h"
#include "kevo/util.h"

static struct {
  char tmp[256], cache[300], src[PATH_MAX];
  struct kv_task *task;
} g;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void cand(const char *name, char *out, size_t cap) {
  snprintf(out, cap, "%s/tests/adversarial/caps/%s", g.src, name);
}

/* kv_gate_eval of caps/<name>: the verdict must be compile_error, its detail
 * must hold `want`, and it must come within limit_s. */
static void expect_compile_error(const char *name, const char *want, double limit_s) {
  char path[PATH_MAX + 64], err[1024] = "";
  cand(name, path, sizeof path);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = g.cache;
  o.timing = 0;
  o.compile_deadline_s = 120;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  double t0 = now_s();
  int rc = kv_gate_eval(g.task, path, &o, r, err, sizeof err);
  double wall = now_s() - t0;
  print_message("[caps] %s: %s in %.1f s: %s\n", name,
                rc ? "kevo error" : kv_verdict_name(r->verdict), wall, rc ? err : r->detail);
  assert_int_equal(rc, 0);
  assert_int_equal(r->verdict, KV_V_COMPILE_ERROR);
  if (!strstr(r->detail, want))
    fail_msg("%s: the detail does not say \"%s\": %s", name, want, r->detail);
  assert_true(wall < limit_s);
  kv_gate_result_release(r);
  free(r);
}

/* The memory bomb that took cc1 to 5.5 GB: stopped by the address-space cap
 * (lowered here to 512 MiB so that the test is quick), never cached as the
 * source's own error (the same source may compile under a larger cap). */
static void test_bomb_mem(void **state) {
  (void)state;
  setenv("KEVO_COMPILE_MEM_MB", "512", 1);
  expect_compile_error("bomb_mem.c", "memory cap (address space 512 MiB", 90);
  expect_compile_error("bomb_mem.c", "memory cap", 90); /* again: not from a cache */
  unsetenv("KEVO_COMPILE_MEM_MB");
}

static void test_bomb_cpu(void **state) {
  (void)state;
  setenv("KEVO_COMPILE_CPU_S", "2", 1);
  expect_compile_error("bomb_cpu.c", "CPU cap (2 s of CPU time", 60);
  unsetenv("KEVO_COMPILE_CPU_S");
}

/* Device files, /proc, paths out of the build directory: refused before any
 * compiler runs (so within a second or two, whatever the file). */
static void test_files_refused(void **state) {
  (void)state;
  expect_compile_error("include_dev_zero.c", "#include of an absolute path (/dev/zero)", 30);
  expect_compile_error("include_macro.c", "#include of a computed name", 30);
  expect_compile_error("include_climb.c", "climbs out", 30);
  expect_compile_error("incbin_dev.c", ".incbin of an absolute path (/dev/urandom)", 30);
}

/* The scanner's edges: what it must let through and what it must not. */
static void test_scan(void **state) {
  (void)state;
  char why[512];
  static const char *const ok[] = {
      "#include <math.h>\n#include \"proto.h\"\n",
      "#include <cuda/std/limits>\n#  include <mma.h>\n",
      "const char *s = \"#include \\\"/dev/zero\\\"\";\n", /* in a string, not a directive */
      "// #include \"/dev/zero\"\n/* #include </etc/passwd> */\n",
      "int a = 1; // .. and / are fine in code: a/b, x..y\n",
  };
  static const char *const bad[] = {
      "#include \"/dev/zero\"\n",
      "  #  include </proc/self/environ>\n",
      "#include_next </etc/shadow>\n",
      "#embed \"/dev/urandom\"\n",
      "#define F \"/dev/zero\"\n#include F\n",
      "/* x */ #include \"/dev/zero\"\n",
      "#inc\\\nlude \"/dev/zero\"\n",
      "%:include \"../x.h\"\n",
      "#include \"a/../../b.h\"\n",
      "asm(\".incbin \\\"/dev/zero\\\"\");\n",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (kv_source_files_check(ok[i], strlen(ok[i]), why, sizeof why))
      fail_msg("refused a harmless source: %s (%s)", ok[i], why);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (!kv_source_files_check(bad[i], strlen(bad[i]), why, sizeof why))
      fail_msg("let through: %s", bad[i]);
}

/* The caps' settings: defaults, overrides, and values out of range ignored. */
static void test_caps_settings(void **state) {
  (void)state;
  struct kv_compile_caps c;
  unsetenv("KEVO_COMPILE_MEM_MB");
  unsetenv("KEVO_COMPILE_CPU_S");
  kv_compile_caps_get(&c);
  assert_int_equal(c.mem_mb, KV_COMPILE_MEM_MB_DEFAULT);
  assert_int_equal(c.cpu_s, KV_COMPILE_CPU_S_DEFAULT);
  setenv("KEVO_COMPILE_MEM_MB", "8192", 1);
  setenv("KEVO_COMPILE_CPU_S", "30", 1);
  kv_compile_caps_get(&c);
  assert_int_equal(c.mem_mb, 8192);
  assert_int_equal(c.cpu_s, 30);
  setenv("KEVO_COMPILE_MEM_MB", "12", 1); /* below 256: the default */
  setenv("KEVO_COMPILE_CPU_S", "-1", 1);
  kv_compile_caps_get(&c);
  assert_int_equal(c.mem_mb, KV_COMPILE_MEM_MB_DEFAULT);
  assert_int_equal(c.cpu_s, KV_COMPILE_CPU_S_DEFAULT);
  unsetenv("KEVO_COMPILE_MEM_MB");
  unsetenv("KEVO_COMPILE_CPU_S");
}

/* The cuda surface's builders (nvcc; NVRTC for kernel-only candidates). */
static void build_cuda(const char *name, const char *want, double limit_s) {
  char path[PATH_MAX + 64], err[1024] = "";
  cand(name, path, sizeof path);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = g.cache;
  o.cuda_arch = "sm_90";
  struct kv_build b;
  double t0 = now_s();
  int rc = kv_build_cuda_code(g.task, &o, path, g.cache, 120, &b, err, sizeof err);
  double wall = now_s() - t0;
  print_message("[caps] %s: rc %d ok %d in %.1f s: %.300s%s\n", name, rc, b.ok, wall,
                b.log ? b.log : "", err);
  assert_int_equal(rc, 0);
  assert_int_equal(b.ok, 0);
  assert_non_null(b.log);
  const char *first = strstr(b.log, "error");
  assert_non_null(first);
  if (!strstr(b.log, want) || strstr(b.log, want) > strstr(first, "\n"))
    fail_msg("%s: the log's first error line does not say \"%s\": %.400s", name, want, b.log);
  assert_true(wall < limit_s);
  kv_build_release(&b);
}

static int have_nvcc(void) {
  char p[PATH_MAX];
  return kv_which("nvcc", p, sizeof p) == 0 || access("/usr/local/cuda/bin/nvcc", X_OK) == 0;
}

static void test_nvcc_caps(void **state) {
  (void)state;
  if (!have_nvcc()) {
    print_message("skipped: no nvcc\n");
    skip();
  }
  build_cuda("include_dev_zero_k.cu", "#include of an absolute path (/dev/zero)", 30);
  setenv("KEVO_COMPILE_MEM_MB", "512", 1);
  build_cuda("bomb_mem.cu", "nvcc hit the compilers' memory cap (address space 512 MiB", 120);
  build_cuda("bomb_mem_k.cu", "memory cap (address space 512 MiB", 120);
  unsetenv("KEVO_COMPILE_MEM_MB");
}

/* ---- the object cache ---- */

static struct kv_gate_result *eval(const char *path, const char *cache, int *rc, char *err,
                                   size_t errlen) {
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  o.cache_dir = cache;
  o.timing = 0;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  assert_non_null(r);
  *rc = kv_gate_eval(g.task, path, &o, r, err, errlen);
  return r;
}

static void release(struct kv_gate_result *r) {
  kv_gate_result_release(r);
  free(r);
}

/* Another user (or anything) plants a zero kernel under a correct
 * candidate's cache name: the gate must rebuild, not judge the plant. */
static void test_planted_object(void **state) {
  (void)state;
  char good[PATH_MAX + 64], zeros[PATH_MAX + 64], err[1024] = "";
  snprintf(good, sizeof good, "%s/tests/adversarial/cands/good.c", g.src);
  snprintf(zeros, sizeof zeros, "%s/tests/adversarial/cands/zeros.c", g.src);
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER");
  struct kv_build bg, bz;
  assert_int_equal(kv_build_c(g.task, &o, good, g.cache, 60, &bg, err, sizeof err), 0);
  assert_int_equal(kv_build_c(g.task, &o, zeros, g.cache, 60, &bz, err, sizeof err), 0);
  assert_true(bg.ok && bz.ok);
  char *bytes;
  size_t n;
  assert_int_equal(kv_read_file(bz.so_path, 64 << 20, &bytes, &n, err, sizeof err), 0);
  assert_int_equal(kv_write_file(bg.so_path, bytes, n, err, sizeof err), 0); /* the plant */
  free(bytes);
  int rc;
  struct kv_gate_result *r = eval(good, g.cache, &rc, err, sizeof err);
  print_message("[caps] planted object: %s, cached %d: %s\n",
                rc ? "kevo error" : kv_verdict_name(r->verdict), r->compile_cached,
                rc ? err : r->detail);
  assert_int_equal(rc, 0);
  assert_int_equal(r->verdict, KV_V_OK);
  assert_int_equal(r->compile_cached, 0); /* rebuilt */
  release(r);
  kv_build_release(&bg);
  kv_build_release(&bz);
}

/* A candidate lists obj/ from its worker: refused (ok), else wrong_output. */
static void test_obj_unlisted(void **state) {
  (void)state;
  char path[PATH_MAX + 64], err[1024] = "";
  cand("obj_list.c", path, sizeof path);
  int rc;
  struct kv_gate_result *r = eval(path, g.cache, &rc, err, sizeof err);
  print_message("[caps] obj_list.c: %s: %s\n", rc ? "kevo error" : kv_verdict_name(r->verdict),
                rc ? err : r->detail);
  assert_int_equal(rc, 0);
  assert_int_equal(r->verdict, KV_V_OK);
  release(r);
}

/* A cache directory others can write (a shared KEVO_CACHE_DIR) is refused,
 * naming the directory and the fix. */
static void test_untrusted_cache_dir(void **state) {
  (void)state;
  char dir[PATH_MAX], path[PATH_MAX + 64], err[1024] = "";
  snprintf(dir, sizeof dir, "%s/shared-cache", g.tmp);
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(chmod(dir, 0777), 0);
  snprintf(path, sizeof path, "%s/tests/adversarial/cands/good.c", g.src);
  int rc;
  struct kv_gate_result *r = eval(path, dir, &rc, err, sizeof err);
  print_message("[caps] shared cache 0777: rc %d: %s\n", rc, err);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err, dir));
  assert_non_null(strstr(err, "chmod go-w"));
  release(r);
}

static int setup(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
  snprintf(g.src, sizeof g.src, "%s", src ? src : ".");
  snprintf(g.tmp, sizeof g.tmp, "/tmp/kevo-caps-XXXXXX");
  if (!mkdtemp(g.tmp))
    return -1;
  snprintf(g.cache, sizeof g.cache, "%s/cache", g.tmp);
  if (mkdir(g.cache, 0700) != 0)
    return -1;
  char dir[PATH_MAX + 64], err[512];
  snprintf(dir, sizeof dir, "%s/tests/adversarial/rowsum", g.src);
  return kv_task_load(dir, &g.task, err, sizeof err) == 0 ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  kv_task_free(g.task);
  kv_rmtree(g.tmp);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scan),
      cmocka_unit_test(test_caps_settings),
      cmocka_unit_test(test_files_refused),
      cmocka_unit_test(test_bomb_mem),
      cmocka_unit_test(test_bomb_cpu),
      cmocka_unit_test(test_nvcc_caps),
      cmocka_unit_test(test_planted_object),
      cmocka_unit_test(test_obj_unlisted),
      cmocka_unit_test(test_untrusted_cache_dir),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
