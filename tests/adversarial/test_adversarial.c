/* The adversarial suite: hostile candidates against the gate.
 *
 * Each candidate in cands/ attacks one defence the design promises (its header
 * comment says which and what verdict it must get). For each one this test
 * calls kv_gate_eval on the rowsum task in rowsum/, asserts the verdict (one
 * exact verdict, or a documented set), and, for the attacks with side
 * effects, that the effect did not happen: marker files absent, nothing
 * accepted on a loopback listener, this process alive, secrets absent from
 * the captured output, the captured output capped. A verdict table
 * (candidate, expected, got) is printed at the end.
 *
 * Candidates that need a path or a port carry placeholders (@MARKER@,
 * @CACHE_MARKER@, @PORT@); every candidate is copied into a private temporary
 * directory with them substituted before it is evaluated. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kevo/gate.h"
#include "kevo/task.h"

#define V(x) (1u << KV_V_##x)
/* Every verdict a running candidate can get except ok. */
#define V_NOT_OK_RUNTIME                                                                           \
  (V(CRASH) | V(TIMEOUT) | V(UNWRITTEN_OUTPUT) | V(WRONG_OUTPUT) | V(INPUT_MUTATED) |              \
   V(STALE_OUTPUT) | V(IMPLAUSIBLE))

struct adv_case;
typedef void (*adv_check_fn)(const struct adv_case *c, const struct kv_gate_result *r,
                             double wall_s);

struct adv_case {
  const char *name;     /* cands/<name>.c */
  int timing;           /* evaluate with timing on */
  double deadline_s;    /* opts.job_deadline_s when > 0 */
  unsigned accept;      /* bitmask of accepted verdicts */
  const char *expected; /* as shown in the table */
  adv_check_fn effect;  /* side effects that must not have happened, checked whatever
                           the verdict; NULL when none */
  adv_check_fn result;  /* more about the result, checked once the verdict is accepted */
  int needs_marker;     /* a fresh @MARKER@ path that must stay absent */
};

struct adv_row {
  const char *name;
  const char *expected;
  char got[96];
  char note[256];
  double wall_s;
  int ran, pass;
};

/* Shared by every test in the group. */
static struct {
  char src[4096]; /* source tree */
  char task_dir[4096];
  char tmp[4096];   /* private temporary directory */
  char cache[4096]; /* opts.cache_dir */
  char cache_marker[4096];
  char marker[4096]; /* the current candidate's marker */
  struct kv_task *task;
  int listen_fd;
  int port;
  char secrets[3][80];
  struct adv_row rows[64];
  int nrows;
  struct kv_sandbox_status sandbox; /* as reported by the first evaluation that ran */
  int have_sandbox;
} g = {.listen_fd = -1};

static const char *const secret_vars[3] = {"KEVO_TEST_SECRET", "OPENAI_API_KEY",
                                           "ANTHROPIC_API_KEY"};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct adv_row *current_row;

/* Records why the current candidate failed, then fails the cmocka test. */
#define ADV_REQUIRE(cond, ...)                                                                     \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      if (current_row) {                                                                           \
        current_row->pass = 0;                                                                     \
        snprintf(current_row->note, sizeof current_row->note, __VA_ARGS__);                        \
      }                                                                                            \
      fail_msg(__VA_ARGS__);                                                                       \
    }                                                                                              \
  } while (0)

/* ---------- helpers ---------- */

/* snprintf for paths: -1 when the result does not fit. */
__attribute__((format(printf, 3, 4))) static int fmt_path(char *out, size_t cap, const char *fmt,
                                                          ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(out, cap, fmt, ap);
  va_end(ap);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int random_hex(char *out, size_t nhex) {
  unsigned char b[64];
  size_t nb = (nhex + 1) / 2;
  if (nb > sizeof b)
    return -1;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t k = read(fd, b, nb);
  close(fd);
  if (k != (ssize_t)nb)
    return -1;
  static const char hx[] = "0123456789abcdef";
  for (size_t i = 0; i < nhex; i++)
    out[i] = hx[(b[i / 2] >> ((i & 1) ? 0 : 4)) & 15];
  out[nhex] = '\0';
  return 0;
}

static char *read_text(const char *path, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = malloc(cap + 1);
  if (!buf) {
    fclose(f);
    return NULL;
  }
  size_t n = fread(buf, 1, cap, f);
  int bad = ferror(f) || !feof(f);
  fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

/* Replaces every occurrence of `key` in the malloc'd string *s by `val`. */
static int replace_all(char **s, const char *key, const char *val) {
  size_t kl = strlen(key), vl = strlen(val), n = 0;
  for (const char *p = *s; (p = strstr(p, key)) != NULL; p += kl)
    n++;
  if (n == 0)
    return 0;
  size_t len = strlen(*s);
  char *out = malloc(len + n * vl + 1);
  if (!out)
    return -1;
  char *o = out;
  const char *p = *s, *q;
  while ((q = strstr(p, key)) != NULL) {
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, val, vl);
    o += vl;
    p = q + kl;
  }
  strcpy(o, p);
  free(*s);
  *s = out;
  return 0;
}

static int path_exists(const char *p) {
  struct stat st;
  return lstat(p, &st) == 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

/* Peak resident set of this process in KiB (VmHWM), or -1. */
static long vm_kib(const char *field) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f)
    return -1;
  char line[256];
  long v = -1;
  size_t fl = strlen(field);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
      v = strtol(line + fl + 1, NULL, 10);
      break;
    }
  }
  fclose(f);
  return v;
}

static int reset_peak_rss(void) {
  int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t k = write(fd, "5", 1);
  close(fd);
  return k == 1 ? 0 : -1;
}

static const char *secret_found(const char *text) {
  if (!text)
    return NULL;
  for (int i = 0; i < 3; i++)
    if (strstr(text, g.secrets[i]))
      return secret_vars[i];
  return NULL;
}

static void verdicts_text(unsigned mask, char *out, size_t cap) {
  out[0] = '\0';
  for (int v = 0; v < KV_V_COUNT; v++) {
    if (!(mask & (1u << v)))
      continue;
    size_t l = strlen(out);
    snprintf(out + l, cap - l, "%s%s", l ? "|" : "", kv_verdict_name((enum kv_verdict)v));
  }
}

/* ---------- side-effect checks ---------- */

static void check_marker_absent(const struct adv_case *c, const struct kv_gate_result *r,
                                double wall_s) {
  (void)c;
  (void)r;
  (void)wall_s;
  ADV_REQUIRE(!path_exists(g.marker), "side effect: marker %.200s was created by the candidate",
              g.marker);
}

static void check_good(const struct adv_case *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  ADV_REQUIRE(r->timed, "good: ok but not timed although timing was requested");
  ADV_REQUIRE(r->timing.cand.n > 0 && r->timing.cand.median_us > 0 && r->timing.speedup > 0,
              "good: timing incomplete (n=%d median_us=%g speedup=%g)", r->timing.cand.n,
              r->timing.cand.median_us, r->timing.speedup);
}

/* Every timed call gets completely fresh inputs, so a cache keyed on part of
 * them never hits: the candidate computes honestly and must not come out
 * faster than the reference it copies. */
static void check_no_fake_speedup(const struct adv_case *c, const struct kv_gate_result *r,
                                  double wall_s) {
  (void)wall_s;
  ADV_REQUIRE(r->verdict != KV_V_OK || (r->timed && r->timing.speedup < 1.3),
              "%s: ok with a %.2fx speedup: its cache was served", c->name, r->timing.speedup);
}

static void check_deadline(const struct adv_case *c, const struct kv_gate_result *r,
                           double wall_s) {
  (void)r;
  /* Correctness jobs (a few) plus worker starts: generous, but a gate that
   * waits for EOF or ignores the deadline blows far past it. */
  double limit = 10.0 * c->deadline_s + 20.0;
  ADV_REQUIRE(wall_s < limit, "%s: the hang took %.1f s to judge (deadline %.1f s per job)",
              c->name, wall_s, c->deadline_s);
}

static long flood_rss_before_kib, flood_peak_kib;

static void check_flood_memory(const struct adv_case *c, const struct kv_gate_result *r,
                               double wall_s) {
  (void)c;
  (void)r;
  (void)wall_s;
  if (flood_rss_before_kib > 0 && flood_peak_kib > 0) {
    long grew = flood_peak_kib - flood_rss_before_kib;
    ADV_REQUIRE(grew < 128 * 1024,
                "output_flood: kevo's peak RSS grew by %ld MiB while judging the flood",
                grew / 1024);
  }
}

static void check_flood(const struct adv_case *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)wall_s;
  ADV_REQUIRE(r->stdout_truncated, "output_flood: 256 MiB on stdout but stdout_truncated=0");
  ADV_REQUIRE(r->cand_stdout != NULL, "output_flood: no captured stdout at all");
  size_t n = strlen(r->cand_stdout);
  ADV_REQUIRE(n <= KV_OUTPUT_CAP, "output_flood: captured stdout is %zu bytes > cap %d", n,
              KV_OUTPUT_CAP);
  ADV_REQUIRE(n > 0 && r->cand_stdout[0] == 'F',
              "output_flood: the captured stdout does not start with the flood");
}

/* Secrets in the captured streams are checked for every candidate in
 * run_case; here, also in everything the gate would store. */
static void check_env_stored(const struct adv_case *c, const struct kv_gate_result *r,
                             double wall_s) {
  (void)c;
  (void)wall_s;
  char *json = kv_gate_result_json(r);
  ADV_REQUIRE(json != NULL, "env_secret: kv_gate_result_json failed");
  const char *leak = secret_found(json);
  free(json);
  ADV_REQUIRE(!leak, "env_secret: the value of %s appears in the result JSON", leak);
}

/* Without the probe's own line in the capture, "no secret in the output"
 * proves nothing. */
static void check_env_probe(const struct adv_case *c, const struct kv_gate_result *r,
                            double wall_s) {
  (void)c;
  (void)wall_s;
  int seen = (r->cand_stdout && strstr(r->cand_stdout, "ENV_SECRET_PROBE")) ||
             (r->cand_stderr && strstr(r->cand_stderr, "ENV_SECRET_PROBE"));
  ADV_REQUIRE(seen, "env_secret: the probe's own output was not captured, so the secret "
                    "check proves nothing");
}

static void check_listener(const struct adv_case *c, const struct kv_gate_result *r,
                           double wall_s) {
  (void)c;
  (void)r;
  (void)wall_s;
  int fd = accept4(g.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  int e = errno;
  if (fd >= 0)
    close(fd);
  ADV_REQUIRE(fd < 0, "connect_loopback: the candidate reached 127.0.0.1:%d from the sandbox",
              g.port);
  ADV_REQUIRE(e == EAGAIN || e == EWOULDBLOCK, "connect_loopback: accept failed oddly: %s",
              strerror(e));
}

static void check_write_outside(const struct adv_case *c, const struct kv_gate_result *r,
                                double wall_s) {
  check_marker_absent(c, r, wall_s);
  ADV_REQUIRE(!path_exists(g.cache_marker),
              "write_outside: the candidate planted %.150s in the compile cache", g.cache_marker);
}

/* The verdict names the guard zone the write changed, on the right side. */
static void check_guard_detail(const struct adv_case *c, const struct kv_gate_result *r,
                               double wall_s) {
  (void)wall_s;
  const char *want = strstr(c->name, "before") ? "guard zone before y[0]" : "guard zone after y[";
  ADV_REQUIRE(strstr(r->detail, want) != NULL, "%s: the detail does not name the %s: %.300s",
              c->name, want, r->detail);
}

static void check_alive(const struct adv_case *c, const struct kv_gate_result *r, double wall_s) {
  (void)c;
  (void)r;
  (void)wall_s;
  /* Reaching this line already means the signal did not land; say so. */
  ADV_REQUIRE(kill(getpid(), 0) == 0, "kill_parent: this process cannot see itself");
}

static void check_compile_log(const struct adv_case *c, const struct kv_gate_result *r,
                              double wall_s) {
  (void)c;
  (void)wall_s;
  ADV_REQUIRE(r->compile_log && strstr(r->compile_log, "rowsum"),
              "wrong_signature: the compile log does not say why (no mention of rowsum)");
}

/* The wrong output was found at the size drawn for this evaluation. */
static void check_drawn_detail(const struct adv_case *c, const struct kv_gate_result *r,
                               double wall_s) {
  (void)c;
  (void)wall_s;
  ADV_REQUIRE(strstr(r->detail, "(drawn)"), "the detail does not name the drawn size: %s",
              r->detail);
}

/* ---------- the cases ---------- */

static const struct adv_case cases[] = {
    /* name, timing, deadline_s, accepted verdicts, shown as, effect, result, marker */
    {"good", 1, 0, V(OK), NULL, NULL, check_good, 0},
    {"stale_memory", 0, 0, V(UNWRITTEN_OUTPUT), NULL, NULL, NULL, 0},
    {"partial_output", 0, 0, V(UNWRITTEN_OUTPUT), NULL, NULL, NULL, 0},
    {"zeros", 0, 0, V(WRONG_OUTPUT), NULL, NULL, NULL, 0},
    {"nan", 0, 0, V(WRONG_OUTPUT) | V(UNWRITTEN_OUTPUT), NULL, NULL, NULL, 0},
    {"tolerance_just_exceeded", 0, 0, V(WRONG_OUTPUT), NULL, NULL, NULL, 0},
    {"input_mutation", 0, 0, V(INPUT_MUTATED) | V(CRASH), NULL, NULL, NULL, 0},
    {"write_past_end", 0, 0, V(WRONG_OUTPUT), NULL, NULL, check_guard_detail, 0},
    {"write_before_start", 0, 0, V(WRONG_OUTPUT), NULL, NULL, check_guard_detail, 0},
    {"write_past_end_timed", 1, 0, V(WRONG_OUTPUT), NULL, NULL, check_guard_detail, 0},
    {"pointer_cache", 0, 0, V(STALE_OUTPUT), NULL, NULL, NULL, 0},
    {"content_cache", 1, 0, V(STALE_OUTPUT) | V(WRONG_OUTPUT) | V(OK),
     "stale_output, wrong_output, or ok under 1.3x", NULL, check_no_fake_speedup, 0},
    {"late_thread", 1, 0, V(UNWRITTEN_OUTPUT) | V(CRASH) | V(WRONG_OUTPUT) | V(STALE_OUTPUT), NULL,
     NULL, NULL, 0},
    {"segfault", 0, 0, V(CRASH), NULL, NULL, NULL, 0},
    {"abort_call", 0, 0, V(CRASH), NULL, NULL, NULL, 0},
    {"exit0", 0, 0, V(CRASH), NULL, NULL, NULL, 0},
    {"infinite_loop", 0, 3.0, V(TIMEOUT), NULL, check_deadline, NULL, 0},
    {"output_flood", 0, 0, V(OK), NULL, check_flood_memory, check_flood, 0},
    {"output_flood_forever", 0, 3.0, V(TIMEOUT), NULL, check_deadline, NULL, 0},
    {"forged_frames", 0, 5.0, V_NOT_OK_RUNTIME, "not ok (crash, wrong_output, ...)", NULL, NULL, 0},
    {"env_secret", 0, 0, V(OK), NULL, check_env_stored, check_env_probe, 0},
    {"spawn_fork", 0, 0, V(POLICY_VIOLATION), NULL, NULL, NULL, 0},
    {"spawn_syscall", 0, 0, V(OK) | V(CRASH), NULL, check_marker_absent, NULL, 1},
    {"write_outside", 0, 0, V(OK), NULL, check_write_outside, NULL, 1},
    {"connect_loopback", 0, 0, V(OK) | V(CRASH), NULL, check_listener, NULL, 0},
    {"wrong_signature", 0, 0, V(COMPILE_ERROR), NULL, NULL, check_compile_log, 0},
    {"missing_entry", 0, 0, V(LOAD_ERROR), NULL, NULL, NULL, 0},
    {"kill_parent", 0, 0, V(OK) | V(CRASH), NULL, check_alive, NULL, 0},
    {"huge_alloc", 0, 5.0, V(CRASH) | V(TIMEOUT), NULL, NULL, NULL, 0},
    /* The verdict is kevo's reading, not the worker's report (issue 28). */
    {"relay_reply", 1, 0, V(WRONG_OUTPUT), NULL, NULL, NULL, 0},
    {"relay_request", 1, 0, V(UNWRITTEN_OUTPUT) | V(WRONG_OUTPUT), NULL, NULL, NULL, 0},
    {"crash_hidden", 1, 0, V(UNWRITTEN_OUTPUT) | V(CRASH), NULL, NULL, NULL, 0},
    {"size_whitelist", 0, 0, V(WRONG_OUTPUT), NULL, NULL, check_drawn_detail, 0},
    {"size_whitelist_cols", 0, 0, V(WRONG_OUTPUT), NULL, NULL, check_drawn_detail, 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* ---------- running one candidate ---------- */

/* Copies cands/<name>.c into the temporary directory with the placeholders
 * substituted; the copy's path goes to out. */
static int prepare_source(const struct adv_case *c, char *out, size_t cap) {
  char in[4096], port[16];
  if (fmt_path(in, sizeof in, "%s/tests/adversarial/cands/%s.c", g.src, c->name))
    return -1;
  char *text = read_text(in, 1 << 20);
  if (!text)
    return -1;
  snprintf(port, sizeof port, "%d", g.port);
  if (replace_all(&text, "@MARKER@", g.marker) || replace_all(&text, "@PORT@", port) ||
      replace_all(&text, "@CACHE_MARKER@", g.cache_marker)) {
    free(text);
    return -1;
  }
  if (fmt_path(out, cap, "%s/src/%s.c", g.tmp, c->name)) {
    free(text);
    return -1;
  }
  FILE *f = fopen(out, "wb");
  if (!f) {
    free(text);
    return -1;
  }
  size_t n = strlen(text);
  int ok = fwrite(text, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  free(text);
  return ok ? 0 : -1;
}

/* The result being examined; released by the next case or the teardown, so a
 * failed assertion (which longjmps out of run_case) does not leak it. */
static struct kv_gate_result *pending;

static void release_pending(void) {
  if (pending) {
    kv_gate_result_release(pending);
    free(pending);
    pending = NULL;
  }
}

static void run_case(void **state) {
  const struct adv_case *c = *state;
  release_pending();
  struct adv_row *row = &g.rows[g.nrows++];
  memset(row, 0, sizeof *row);
  row->name = c->name;
  row->expected = c->expected;
  snprintf(row->got, sizeof row->got, "(not run)");
  current_row = row;

  fmt_path(g.marker, sizeof g.marker, "%s/markers/%s.marker", g.tmp,
           c->needs_marker ? c->name : "unused");
  unlink(g.marker);
  unlink(g.cache_marker);

  char path[4096];
  ADV_REQUIRE(prepare_source(c, path, sizeof path) == 0, "%s: cannot prepare the candidate",
              c->name);

  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  o.cache_dir = getenv("KEVO_CACHE_DIR");
  o.timing = c->timing;
  o.time_budget_s = 0.2;
  o.cache_dir = g.cache;
  if (c->deadline_s > 0)
    o.job_deadline_s = c->deadline_s;

  pending = calloc(1, sizeof *pending);
  ADV_REQUIRE(pending != NULL, "out of memory");
  struct kv_gate_result *r = pending;
  char err[1024] = "";

  printf("[adversarial] %s ...\n", c->name);
  fflush(stdout);
  if (c->effect == check_flood_memory) {
    flood_rss_before_kib = vm_kib("VmRSS");
    if (reset_peak_rss() != 0)
      flood_rss_before_kib = -1;
  }
  double t0 = now_s();
  int rc = kv_gate_eval(g.task, path, &o, r, err, sizeof err);
  double wall = now_s() - t0;
  if (c->effect == check_flood_memory)
    flood_peak_kib = vm_kib("VmHWM");
  row->wall_s = wall;
  row->ran = 1;

  if (rc != 0) {
    snprintf(row->got, sizeof row->got, "kevo error");
    snprintf(row->note, sizeof row->note, "kv_gate_eval returned %d: %.200s", rc, err);
    fail_msg("%s: %s", c->name, row->note);
    return;
  }
  int v = (int)r->verdict;
  const char *vname = v >= 0 && v < KV_V_COUNT ? kv_verdict_name(r->verdict) : NULL;
  snprintf(row->got, sizeof row->got, "%s", vname ? vname : "(bad verdict)");
  if (vname && !g.have_sandbox && v > KV_V_LOAD_ERROR) {
    g.sandbox = r->sandbox;
    g.have_sandbox = 1;
  }
  row->pass = 1;

  /* What must never happen, whatever the verdict: leaked secrets and the
   * attack's own side effects. */
  const char *leak = secret_found(r->cand_stdout);
  if (!leak)
    leak = secret_found(r->cand_stderr);
  if (!leak)
    leak = secret_found(r->detail);
  ADV_REQUIRE(!leak, "%s: the value of %s leaked into the captured output or detail", c->name,
              leak);
  if (c->effect)
    c->effect(c, r, wall);

  if (!vname || !(c->accept & (1u << v))) {
    char want[256];
    verdicts_text(c->accept, want, sizeof want);
    print_error("%s: verdict %s, expected %s\n  detail: %s\n  sandbox note: %s\n", c->name,
                row->got, want, r->detail, r->sandbox.note);
    ADV_REQUIRE(0, "unexpected verdict; detail: %.200s", r->detail);
  }
  if (c->result)
    c->result(c, r, wall);
}

/* ---------- group setup / teardown ---------- */

static int group_setup(void **state) {
  (void)state;
  const char *src = getenv("KEVO_SOURCE_DIR");
#ifdef KEVO_SOURCE_DIR
  if (!src || !*src)
    src = KEVO_SOURCE_DIR;
#endif
  if (!src || !*src) {
    print_error("KEVO_SOURCE_DIR is not set\n");
    return -1;
  }
  snprintf(g.src, sizeof g.src, "%s", src);
  if (fmt_path(g.task_dir, sizeof g.task_dir, "%s/tests/adversarial/rowsum", g.src)) {
    print_error("KEVO_SOURCE_DIR is too long\n");
    return -1;
  }

  /* The secrets main() put in this process's environment. */
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(secret_vars[i]);
    if (!v || strncmp(v, "kevo-adv-", 9) != 0) {
      print_error("%s is not a test secret; main() sets it\n", secret_vars[i]);
      return -1;
    }
    snprintf(g.secrets[i], sizeof g.secrets[i], "%s", v);
  }
  if (!getenv("KEVO_ADVERSARIAL_EXECED"))
    print_error("note: could not re-execute with the secrets in the initial environment; "
                "/proc/<pid>/environ leaks are not exercised\n");

  const char *td = getenv("TMPDIR");
  if (fmt_path(g.tmp, sizeof g.tmp, "%s/kevo-adversarial-XXXXXX", td && *td ? td : "/tmp") ||
      !mkdtemp(g.tmp)) {
    print_error("mkdtemp %s: %s\n", g.tmp, strerror(errno));
    return -1;
  }
  char p[4096];
  const char *subs[] = {"src", "markers", "cache"};
  for (int i = 0; i < 3; i++) {
    fmt_path(p, sizeof p, "%s/%s", g.tmp, subs[i]);
    if (mkdir(p, 0700) != 0) {
      print_error("mkdir %s: %s\n", p, strerror(errno));
      return -1;
    }
  }
  fmt_path(g.cache, sizeof g.cache, "%s/cache", g.tmp);
  fmt_path(g.cache_marker, sizeof g.cache_marker, "%s/kevo-adversarial-planted", g.cache);

  g.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  if (g.listen_fd < 0 || bind(g.listen_fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(g.listen_fd, 16) != 0 || getsockname(g.listen_fd, (struct sockaddr *)&a, &al) != 0) {
    print_error("loopback listener: %s\n", strerror(errno));
    return -1;
  }
  g.port = ntohs(a.sin_port);

  char err[1024];
  if (kv_task_load(g.task_dir, &g.task, err, sizeof err) != 0) {
    print_error("kv_task_load: %s\n", err);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  printf("\nadversarial verdicts (task %s)\n", g.task_dir);
  printf("%-24s %-48s %-18s %7s  %s\n", "candidate", "expected", "got", "wall_s", "result");
  int failed = 0;
  for (int i = 0; i < g.nrows; i++) {
    const struct adv_row *row = &g.rows[i];
    char want[256];
    if (row->expected) {
      snprintf(want, sizeof want, "%s", row->expected);
    } else {
      unsigned mask = 0;
      for (size_t k = 0; k < NCASES; k++)
        if (strcmp(cases[k].name, row->name) == 0)
          mask = cases[k].accept;
      verdicts_text(mask, want, sizeof want);
    }
    failed += !row->pass;
    printf("%-24s %-48s %-18s %7.2f  %s%s%s\n", row->name, want, row->got, row->wall_s,
           row->pass ? "PASS" : "FAIL", row->note[0] ? ": " : "", row->note);
  }
  printf("%d of %d candidates judged as expected\n", g.nrows - failed, g.nrows);
  if (g.have_sandbox)
    printf("sandbox: no_new_privs=%s netns=%s landlock=%s (abi %d) seccomp=%s rlimits=%s%s%s\n",
           kv_layer_state_name(g.sandbox.no_new_privs), kv_layer_state_name(g.sandbox.netns),
           kv_layer_state_name(g.sandbox.landlock), g.sandbox.landlock_abi,
           kv_layer_state_name(g.sandbox.seccomp), kv_layer_state_name(g.sandbox.rlimits),
           g.sandbox.note[0] ? "; " : "", g.sandbox.note);
  fflush(stdout);

  release_pending();
  if (g.listen_fd >= 0)
    close(g.listen_fd);
  if (g.task)
    kv_task_free(g.task);
  if (g.tmp[0] && !getenv("KEVO_ADVERSARIAL_KEEP"))
    nftw(g.tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* Puts random secrets under the names of real API keys (overriding any real
 * key: none reaches a worker from here) and re-executes this binary, so the
 * secrets sit in its initial environment block too: that is what
 * /proc/<pid>/environ shows, and setenv() alone never changes it. */
static void plant_secrets(char **argv) {
  if (getenv("KEVO_ADVERSARIAL_EXECED"))
    return;
  for (int i = 0; i < 3; i++) {
    char hex[33], val[80];
    if (random_hex(hex, 32) != 0) {
      fprintf(stderr, "cannot read /dev/urandom\n");
      exit(1);
    }
    snprintf(val, sizeof val, "kevo-adv-%s-%s", i == 0 ? "test" : "key", hex);
    setenv(secret_vars[i], val, 1);
  }
  setenv("KEVO_ADVERSARIAL_EXECED", "1", 1);
  fflush(NULL);
  execv("/proc/self/exe", argv);
  /* Fall back to the setenv'd secrets (group_setup says so). */
  unsetenv("KEVO_ADVERSARIAL_EXECED");
}

int main(int argc, char **argv) {
  (void)argc;
  plant_secrets(argv);
  struct CMUnitTest tests[NCASES];
  for (size_t i = 0; i < NCASES; i++) {
    tests[i].name = cases[i].name;
    tests[i].test_func = run_case;
    tests[i].setup_func = NULL;
    tests[i].teardown_func = NULL;
    tests[i].initial_state = (void *)&cases[i];
  }
  return cmocka_run_group_tests_name("adversarial", tests, group_setup, group_teardown);
}
