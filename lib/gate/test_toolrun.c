/* The machinery the profiler and the debugger share (toolrun.h), on the cpu
 * surface with a stand-in tool: a script that records how it was called and
 * then runs the worker, as ncu and compute-sanitizer do. The worker must
 * start under it (its descriptors 3 and 4 reach the worker through the
 * tool), keep every layer but those left off, run one call, quit, and the
 * tool must get to exit by itself (its report written) before anything is
 * killed. No GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "internal.h"
#include "kevo/task.h"
#include "kevo/util.h"
#include "toolcall.h"
#include "toolrun.h"

struct fx {
  struct kv_task *t;
  struct kv_gate_opts o;
  struct kv_session s;
  struct kv_build b;
  char dir[4096], tool[4200], log[4200];
};

static int setup(void **state) {
  struct fx *f = calloc(1, sizeof *f);
  const char *src = getenv("KEVO_SOURCE_DIR");
  char path[4096], err[2048];
  snprintf(path, sizeof path, "%s/examples/tasks/rowsum", src ? src : ".");
  if (kv_task_load(path, &f->t, err, sizeof err) < 0)
    fail_msg("%s", err);
  kv_gate_opts_default(&f->o);
  f->o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  f->o.cache_dir = getenv("KEVO_CACHE_DIR");
  f->o.nvcc_path = getenv("KEVO_NVCC");
  f->o.cuda_arch = getenv("KEVO_CUDA_ARCH");
  const char *cache = getenv("KEVO_CACHE_DIR");
  if (kv_mkdirs(cache ? cache : "/tmp/kevo-test-cache", 0700, err, sizeof err) < 0 ||
      kv_mkdtemp(cache ? cache : "/tmp/kevo-test-cache", "toolrun", f->dir, sizeof f->dir, err,
                 sizeof err) < 0)
    fail_msg("%s", err);
  struct kv_session *s = &f->s;
  s->t = f->t;
  s->o = &f->o;
  s->sf = kv_surface_find("cpu");
  snprintf(s->cache, sizeof s->cache, "%s", f->dir);
  /* The objects live in the tests' shared cache (built once across runs):
   * the worker reads them from there. */
  snprintf(s->objdir, sizeof s->objdir, "%s/obj", cache ? cache : f->dir);
  snprintf(s->scratch, sizeof s->scratch, "%s/scratch", f->dir);
  const char *wp = getenv("KEVO_WORKER");
  snprintf(s->worker_path, sizeof s->worker_path, "%s", wp ? wp : "./kevo-worker");
  if (kv_mkdirs(s->objdir, 0700, err, sizeof err) < 0 ||
      kv_mkdirs(s->scratch, 0700, err, sizeof err) < 0)
    fail_msg("%s", err);
  char cand[4200];
  snprintf(cand, sizeof cand, "%s/good.c", path);
  /* Built into the tests' shared cache: compiled once across runs. */
  if (kv_build_c(f->t, &f->o, cand, cache ? cache : f->dir, 120, &f->b, err, sizeof err) < 0 ||
      !f->b.ok)
    fail_msg("building %s: %s %s", cand, err, f->b.log ? f->b.log : "");
  /* The stand-in tool: writes its report (argv, then "exit") once the
   * worker it runs has exited, like compute-sanitizer's --log-file. */
  snprintf(f->log, sizeof f->log, "%s/tool.log", f->dir);
  snprintf(f->tool, sizeof f->tool, "%s/tool.sh", f->dir);
  char script[9000];
  snprintf(script, sizeof script,
           "#!/bin/sh\necho \"args: $*\" > '%s'\n"
           "while [ $# -gt 0 ]; do case \"$1\" in */kevo-worker) break;; esac; shift; done\n"
           "\"$@\"\necho \"worker exit $?\" >> '%s'\nsleep 0.2\necho done >> '%s'\n",
           f->log, f->log, f->log);
  if (kv_write_file(f->tool, script, strlen(script), err, sizeof err) < 0 ||
      chmod(f->tool, 0700) < 0)
    fail_msg("%s", err);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  struct fx *f = *state;
  kv_build_release(&f->b);
  kv_rmtree(f->dir);
  kv_task_free(f->t);
  free(f);
  return 0;
}

static void test_call_under_tool(void **state) {
  struct fx *f = *state;
  const char *wrap[] = {f->tool, "--tool", "memcheck", NULL};
  const char *without[] = {"netns", "seccomp", NULL};
  struct kv_tool_run tr = {
      .wrap = wrap, .without = without, .start_s = 20, .deadline_s = 20, .exit_s = 10};
  struct kv_tool_outcome oc;
  char err[1024];
  int rc = kv_tool_call(&f->s, f->b.so_path, 1, "check", 1, 12345, &tr, &oc, err, sizeof err);
  if (rc != 0)
    fail_msg("%s", err);
  assert_int_equal(oc.call, KV_CALL_OK);
  assert_true(oc.tool_exited); /* it wrote its whole report */
  /* The layers: the two left off are off; the others on where the kernel
   * has them (never "failed"). */
  assert_int_equal(oc.layers.netns, KV_LAYER_OFF);
  assert_int_equal(oc.layers.seccomp, KV_LAYER_OFF);
  assert_int_not_equal(oc.layers.landlock, KV_LAYER_OFF);
  assert_int_not_equal(oc.layers.landlock, KV_LAYER_FAILED);
  assert_int_not_equal(oc.layers.no_new_privs, KV_LAYER_OFF);
  char *log = NULL;
  size_t len;
  assert_int_equal(kv_read_file(f->log, 65536, &log, &len, err, sizeof err), 0);
  /* The tool got its arguments and the worker's, with the layers left off. */
  assert_non_null(strstr(log, "args: --tool memcheck "));
  assert_non_null(strstr(log, "kevo-worker --scratch "));
  assert_non_null(strstr(log, "--without netns --without seccomp"));
  assert_non_null(strstr(log, "worker exit 0")); /* it quit when asked */
  assert_non_null(strstr(log, "done"));
  free(log);
}

/* Every layer on (nothing left off): the same call works, netns and seccomp
 * included, where the kernel has them. */
static void test_all_layers(void **state) {
  struct fx *f = *state;
  const char *wrap[] = {f->tool, NULL};
  struct kv_tool_run tr = {.wrap = wrap, .start_s = 20, .deadline_s = 20, .exit_s = 10};
  struct kv_tool_outcome oc;
  char err[1024];
  assert_int_equal(kv_tool_call(&f->s, f->b.so_path, 1, "check", 0, 7, &tr, &oc, err, sizeof err),
                   0);
  assert_int_equal(oc.call, KV_CALL_OK);
  assert_int_not_equal(oc.layers.seccomp, KV_LAYER_OFF);
  assert_int_not_equal(oc.layers.netns, KV_LAYER_OFF);
}

/* The network under a tool (issue 30): the worker's own network namespace
 * is off for ncu and compute-sanitizer, and their seccomp layer too, so a
 * candidate could send to the host's network (UDP: Landlock covers TCP
 * only). The tool runs in a network namespace of its own, shared with the
 * worker it starts: a candidate's datagram to a host port never arrives.
 * With "tool_netns" left off too (the tool in the host's network, as before
 * issue 30) it does: the test can tell. */
static void test_tool_netns(void **state) {
  struct fx *f = *state;
  int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  assert_true(u >= 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  assert_int_equal(bind(u, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t alen = sizeof a;
  assert_int_equal(getsockname(u, (struct sockaddr *)&a, &alen), 0);
  unsigned port = ntohs(a.sin_port);
  char src[4096], path[4300], err[2048];
  snprintf(
      src, sizeof src,
      "/* rowsum that first sends a datagram to 127.0.0.1:%u by raw syscalls */\n"
      "struct sa { unsigned short fam, port; unsigned addr; char zero[8]; };\n"
      "static long sc(long n, long a, long b, long c, long d, long e, long g) {\n"
      "  long r; register long r10 __asm__(\"r10\") = d; register long r8 __asm__(\"r8\") = e;\n"
      "  register long r9 __asm__(\"r9\") = g;\n"
      "  __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(n), \"D\"(a), \"S\"(b), \"d\"(c),\n"
      "                   \"r\"(r10), \"r\"(r8), \"r\"(r9) : \"rcx\", \"r11\", \"memory\");\n"
      "  return r;\n}\n"
      "void rowsum(const float *x, float *y, int rows, int cols) {\n"
      "  struct sa s = {2, (unsigned short)((%uu >> 8) | ((%uu & 0xff) << 8)), 0x0100007fu, {0}};\n"
      "  long fd = sc(41, 2, 2, 0, 0, 0, 0);\n"
      "  if (fd >= 0) { sc(44, fd, (long)\"leak\", 4, 0, (long)&s, 16); sc(3, fd, 0, 0, 0, 0, 0); "
      "}\n"
      "  for (int r = 0; r < rows; r++) {\n"
      "    float t = 0; for (int c = 0; c < cols; c++) t += x[(long)r * cols + c];\n"
      "    y[r] = t;\n  }\n}\n",
      port, port, port);
  snprintf(path, sizeof path, "%s/net.c", f->dir);
  assert_int_equal(kv_write_file(path, src, strlen(src), err, sizeof err), 0);
  struct kv_build b;
  const char *cache = getenv("KEVO_CACHE_DIR"); /* where the worker reads objects (setup) */
  if (kv_build_c(f->t, &f->o, path, cache ? cache : f->dir, 120, &b, err, sizeof err) < 0 || !b.ok)
    fail_msg("building the sending candidate: %s %s", err, b.log ? b.log : "");
  const char *wrap[] = {f->tool, NULL};
  const char *ncu_like[] = {"netns", "seccomp", NULL};
  const char *host_net[] = {"netns", "seccomp", "tool_netns", NULL};
  for (int k = 0; k < 2; k++) {
    struct kv_tool_run tr = {.wrap = wrap,
                             .without = k == 0 ? host_net : ncu_like,
                             .start_s = 20,
                             .deadline_s = 20,
                             .exit_s = 10};
    struct kv_tool_outcome oc;
    if (kv_tool_call(&f->s, b.so_path, 1, "check", 0, 7, &tr, &oc, err, sizeof err) != 0)
      fail_msg("%s", err);
    if (oc.call != KV_CALL_OK)
      fail_msg("%s: the call: %s", k ? "own namespace" : "host network", oc.detail);
    assert_int_equal(oc.layers.netns, KV_LAYER_OFF);
    assert_int_equal(oc.tool_netns, k == 1);
    char got[16];
    ssize_t n = recv(u, got, sizeof got, MSG_DONTWAIT);
    if (k == 0 && n != 4)
      fail_msg("the tool in the host's network: the candidate's datagram did not arrive (the "
               "test cannot tell the tool's namespace from none)");
    if (k == 1 && n >= 0)
      fail_msg("the tool in its own network namespace: a datagram of %zd bytes reached the host",
               n);
  }
  close(u);
  kv_build_release(&b);
}

/* A tool that never lets go: killed at its exit deadline, reported so. */
static void test_tool_hangs(void **state) {
  struct fx *f = *state;
  char hang[4300], err[1024];
  snprintf(hang, sizeof hang, "%s/hang.sh", f->dir);
  const char *script = "#!/bin/sh\n\"$@\"\nsleep 60\n";
  assert_int_equal(kv_write_file(hang, script, strlen(script), err, sizeof err), 0);
  assert_int_equal(chmod(hang, 0700), 0);
  const char *wrap[] = {hang, NULL};
  struct kv_tool_run tr = {.wrap = wrap, .start_s = 20, .deadline_s = 20, .exit_s = 1};
  struct kv_tool_outcome oc;
  double t0 = kv_now_s();
  assert_int_equal(kv_tool_call(&f->s, f->b.so_path, 1, "check", 0, 7, &tr, &oc, err, sizeof err),
                   0);
  assert_int_equal(oc.call, KV_CALL_OK);
  assert_false(oc.tool_exited);
  assert_true(kv_now_s() - t0 < 30);
}

/* A tool that is not there, or a size that is not: errors, never a hang. */
static void test_errors(void **state) {
  struct fx *f = *state;
  const char *wrap[] = {"/nonexistent/ncu", NULL};
  struct kv_tool_run tr = {.wrap = wrap, .start_s = 5, .deadline_s = 5, .exit_s = 1};
  struct kv_tool_outcome oc;
  char err[1024];
  assert_int_equal(kv_tool_call(&f->s, f->b.so_path, 1, "check", 0, 7, &tr, &oc, err, sizeof err),
                   -1);
  const char *ok[] = {f->tool, NULL};
  tr.wrap = ok;
  tr.start_s = 20;
  assert_int_equal(kv_tool_call(&f->s, f->b.so_path, 1, "check", 99, 7, &tr, &oc, err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "check[99]"));
}

/* The debugger's -lineinfo build of a cuda candidate (needs nvcc, no GPU):
 * it links (shim, guard, prototype) and carries the SASS line table, which
 * the gate's own build does not. */
static void test_lineinfo_build(void **state) {
  struct fx *f = *state;
  if (!kv_nvcc_path(&f->o)[0]) {
    skip();
    return;
  }
  if (!f->o.cuda_arch)
    f->o.cuda_arch = "sm_90";
  const char *src = getenv("KEVO_SOURCE_DIR");
  char cand[4200], err[2048], so[4200];
  snprintf(cand, sizeof cand, "%s/tests/debug/oob.cu", src ? src : ".");
  struct kv_build b;
  if (kv_build_cuda(f->t, &f->o, cand, f->s.cache, 300, &b, err, sizeof err) < 0 || !b.ok)
    fail_msg("%s %s", err, b.log ? b.log : "");
  if (kv_san_build_lineinfo(&f->s, &b, cand, so, sizeof so, err, sizeof err) < 0)
    fail_msg("%s", err);
  char *plain = NULL, *li = NULL;
  size_t pl = 0, ll = 0;
  assert_int_equal(kv_read_file(b.so_path, 64u << 20, &plain, &pl, err, sizeof err), 0);
  assert_int_equal(kv_read_file(so, 64u << 20, &li, &ll, err, sizeof err), 0);
  /* The SASS line table (-lineinfo) is there, and only there. */
  assert_non_null(memmem(li, ll, ".nv_debug_line_sass", 19));
  assert_null(memmem(plain, pl, ".nv_debug_line_sass", 19));
  free(plain);
  free(li);
  /* Cached: the second time is the same file, not built again. */
  char so2[4200];
  double t0 = kv_now_s();
  assert_int_equal(kv_san_build_lineinfo(&f->s, &b, cand, so2, sizeof so2, err, sizeof err), 0);
  assert_string_equal(so, so2);
  assert_true(kv_now_s() - t0 < 1);
  kv_build_release(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_call_under_tool), cmocka_unit_test(test_all_layers),
      cmocka_unit_test(test_tool_hangs),      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_lineinfo_build),  cmocka_unit_test(test_tool_netns),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
