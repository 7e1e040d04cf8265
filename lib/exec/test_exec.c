/* Executors: the configuration file (and its errors), jobs dispatched to
 * local gate servers and recorded once each, a server killed with SIGKILL
 * mid-job (the job is retried elsewhere and comes back once), a server of
 * another protocol (refused, saying which), a server that dies on every job
 * (the job is reported, the host dropped), a host with no GPU asked for
 * cuda, an unreachable ssh host; and, where they are set up (CI sets them up
 * and requires them), a real sshd on localhost and a real Slurm.
 *
 * This binary is also a stand-in gate server: run as `test_exec gate serve
 * ...` with KEVO_TEST_FAKE set, it plays a server of another protocol
 * ("proto99") or one that dies on its first job ("die"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/exec.h"
#include "kevo/serve.h"
#include "kevo/task.h"
#include "kevo/util.h"
#include "kevo/wire.h"

static const char *src_dir(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  return s ? s : KEVO_SOURCE_DIR;
}

static const char *self_exe(void);
static char notes[16384];
static void on_note(void *ud, const char *msg) {
  (void)ud;
  size_t n = strlen(notes);
  snprintf(notes + n, sizeof notes - n, "%s\n", msg);
  fprintf(stderr, "  note: %s\n", msg);
}

static char *read_src(const char *name) {
  char p[PATH_MAX], err[256], *d;
  size_t len;
  snprintf(p, sizeof p, "%s/examples/tasks/rowsum/%s", src_dir(), name);
  assert_int_equal(kv_read_file(p, 1 << 20, &d, &len, err, sizeof err), 0);
  return d;
}

static struct kv_task *rowsum(void) {
  char p[PATH_MAX], err[512];
  snprintf(p, sizeof p, "%s/examples/tasks/rowsum", src_dir());
  struct kv_task *t;
  assert_int_equal(kv_task_load(p, &t, err, sizeof err), 0);
  return t;
}

/* rowsum at small bench sizes (the build's test-tasks, beside kevo), so
 * that judging takes a fraction of a second, as on a GPU. */
static struct kv_task *small_rowsum(void) {
  char p[PATH_MAX], err[512];
  const char *k = getenv("KEVO_BIN");
  assert_non_null(k);
  snprintf(p, sizeof p, "%.*s/test-tasks/rowsum", (int)(strrchr(k, '/') - k), k);
  struct kv_task *t;
  if (kv_task_load(p, &t, err, sizeof err) < 0)
    fail_msg("%s (the build makes it: ninja kevo_test_tasks)", err);
  return t;
}

static const char *verdict_of(const char *json) {
  static char v[64];
  json_t *j = json_loads(json, 0, NULL);
  snprintf(v, sizeof v, "%s", json_string_value(json_object_get(j, "verdict")));
  json_decref(j);
  return v;
}

/* ---- the configuration file ---- */

static void expect_bad(const char *text, const char *want) {
  struct kv_exec_config *c = malloc(sizeof *c);
  char err[1024];
  assert_int_equal(kv_exec_config_parse(text, strlen(text), "exec.json", c, err, sizeof err), -1);
  if (!strstr(err, want) || !strstr(err, "exec.json"))
    fail_msg("for %s: wanted '%s' in: %s", text, want, err);
  free(c);
}

static void test_config(void **state) {
  (void)state;
  struct kv_exec_config *c = malloc(sizeof *c);
  char err[1024];
  const char *good =
      "{\"ssh\": {\"hosts\": [\"gpu1\", {\"host\": \"me@gpu2.lab\", \"servers\": 2, \"kevo\": "
      "\"/opt/kevo/bin/kevo\", \"env\": {\"KEVO_CACHE_DIR\": \"/scratch/k\"}}], \"options\": "
      "[\"-p\", \"2222\"]}, \"slurm\": {\"partition\": \"gpu\", \"gres\": \"gpu:h100:1\", "
      "\"time\": \"02:00:00\", \"servers\": 3, \"srun\": [\"--account=lab\"]}, \"max_tries\": 2, "
      "\"drop_after\": 5, \"job_timeout_s\": 900}";
  assert_int_equal(kv_exec_config_parse(good, strlen(good), "exec.json", c, err, sizeof err), 0);
  assert_int_equal(c->nhosts, 2);
  assert_string_equal(c->hosts[0].host, "gpu1");
  assert_int_equal(c->hosts[0].servers, 1);
  assert_string_equal(c->hosts[0].kevo, "kevo");
  assert_string_equal(c->hosts[1].host, "me@gpu2.lab");
  assert_int_equal(c->hosts[1].servers, 2);
  assert_string_equal(c->hosts[1].env[0].name, "KEVO_CACHE_DIR");
  assert_int_equal(c->nssh_args, 2);
  assert_string_equal(c->partition, "gpu");
  assert_string_equal(c->gres, "gpu:h100:1");
  assert_string_equal(c->time_limit, "02:00:00");
  assert_int_equal(c->slurm_servers, 3);
  assert_int_equal(c->max_tries, 2);
  assert_int_equal(c->drop_after, 5);
  free(c);
  expect_bad("{\"ssh\": {\"hosts\": [\"-oProxyCommand=evil\"]}}", "ssh.hosts[0]");
  expect_bad("{\"ssh\": {\"hosts\": [\"a b\"]}}", "not a host name");
  expect_bad("{\"ssh\": {\"hostz\": []}}", "\"hostz\" is not a field kevo knows");
  expect_bad("{\"slurm\": {\"partition\": \"gpu;rm\"}}", "slurm.partition");
  expect_bad("{\"slurm\": {\"servers\": 0}}", "slurm.servers must be a whole number");
  expect_bad("{\"ssh\": {\"hosts\": [{\"host\": \"a\", \"env\": {\"KEVO_API_KEY\": \"x\"}}]}}",
             "never keys");
  expect_bad("{\"ssh\": {\"hosts\": [{\"host\": \"a\", \"env\": {\"OPENAI_API_KEY\": \"x\"}}]}}",
             "only KEVO_* variables");
  expect_bad("{\"max_tries\": \"3\"}", "max_tries");
  expect_bad("{\"ssh\": ", "exec.json:1");
  expect_bad("[1]", "must be a JSON object");
}

static void test_result_parse(void **state) {
  (void)state;
  struct kv_gate_result r;
  char err[256];
  const char *js = "{\"verdict\": \"ok\", \"detail\": \"d\", \"surface\": \"cpu\", \"device\": "
                   "\"x\", \"source_sha256\": \"ab\", \"compile\": {\"log\": \"warn\"}, "
                   "\"checks\": [{\"sizes\": \"n=1\", \"verdict\": \"ok\"}], \"timing\": "
                   "{\"median_us\": 2.0, \"reference_median_us\": 6.0, \"speedup\": 3.0}}";
  assert_int_equal(kv_gate_result_from_json(js, &r, err, sizeof err), 0);
  assert_int_equal(r.verdict, KV_V_OK);
  assert_true(r.timed && r.timing.speedup == 3.0 && r.timing.cand.median_us == 2.0);
  assert_string_equal(r.compile_log, "warn");
  assert_int_equal(r.nchecks, 1);
  kv_gate_result_release(&r);
  assert_int_equal(kv_gate_result_from_json("{\"verdict\": \"great\"}", &r, err, sizeof err), -1);
  assert_non_null(strstr(err, "same kevo version"));
  struct kvx_hello h;
  assert_int_equal(kvx_hello_parse("{\"kevo\": \"9.9\", \"protocol\": 99}", &h, err, sizeof err),
                   -1);
  assert_non_null(strstr(err, "protocol 99"));
}

/* ---- local servers ---- */

static struct kv_exec *open_local(int conc, const char *kevo, struct kv_exec_config *cfg,
                                  const char *surface, int want_ok, char *err, size_t errlen) {
  struct kv_exec_opts o = {.name = "local",
                           .concurrency = conc,
                           .kevo = kevo ? kevo : getenv("KEVO_BIN"),
                           .surface = surface,
                           .config = cfg,
                           .idle_s = 300,
                           .note = on_note};
  struct kv_exec *x = NULL;
  int rc = kv_exec_open(&o, &x, err, errlen);
  if (want_ok && rc != 0)
    fail_msg("kv_exec_open: %s", err);
  return x;
}

static void test_local(void **state) {
  (void)state;
  char err[2048];
  struct kv_exec *x = open_local(2, NULL, NULL, "cpu", 1, err, sizeof err);
  struct kv_exec_stats st;
  kv_exec_stats(x, &st);
  assert_true(st.compilers >= 1); /* local servers: a compile pool builds ahead */
  assert_int_equal(kv_exec_width(x), 2 + st.compilers);
  struct kv_task *t = rowsum();
  char *good = read_src("good.c"), *starter = read_src("starter.c");
  const char *wrong = "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                      "  for (int r = 0; r < rows; r++) y[r] = (float)cols; (void)x; }\n";
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 0;
  const char *srcs[4] = {good, starter, wrong, "this is not C"};
  const char *want[4] = {"ok", "ok", "wrong_output", "compile_error"};
  for (intptr_t i = 0; i < 4; i++)
    assert_int_equal(
        kv_exec_submit(x, t, srcs[i], strlen(srcs[i]), &g, (void *)(i + 1), err, sizeof err), 0);
  int seen[4] = {0};
  while (kv_exec_pending(x) > 0) {
    struct kv_exec_done d;
    int k = kv_exec_next(x, 120, &d, err, sizeof err);
    if (k < 0)
      fail_msg("kv_exec_next: %s", err);
    assert_int_equal(k, 1);
    intptr_t i = (intptr_t)d.ud - 1;
    assert_true(i >= 0 && i < 4);
    if (!d.ok)
      fail_msg("job %d: %s", (int)i, d.error);
    seen[i]++;
    assert_string_equal(verdict_of(d.result_json), want[i]);
    json_t *j = json_loads(d.result_json, 0, NULL);
    json_t *ex = json_object_get(j, "executor");
    assert_string_equal(json_string_value(json_object_get(ex, "name")), "local");
    assert_true(json_string_length(json_object_get(ex, "host")) > 0);
    assert_int_equal(json_integer_value(json_object_get(ex, "attempts")), 1);
    json_decref(j);
    struct kv_gate_result r;
    assert_int_equal(kv_gate_result_from_json(d.result_json, &r, err, sizeof err), 0);
    assert_string_equal(kv_verdict_name(r.verdict), want[i]);
    kv_gate_result_release(&r);
    kv_exec_done_release(&d);
  }
  for (int i = 0; i < 4; i++)
    assert_int_equal(seen[i], 1);
  /* the task went to this host once, however many servers judged it */
  struct kv_exec_server_info info[8];
  int n = kv_exec_servers(x, info, 8), sends = 0, done = 0;
  for (int i = 0; i < n; i++)
    sends += info[i].task_sends, done += info[i].jobs_done;
  assert_int_equal(sends, 1);
  assert_int_equal(done, 4);
  kv_exec_close(x);
  free(good);
  free(starter);
  kv_task_free(t);
}

/* ---- the pipeline: a compile pool ahead of the servers ---- */

/* good.c with a comment of its own: content no earlier run built. */
static char *variant(const char *good, int k) {
  static long long run;
  if (!run)
    run = (long long)getpid() * 1000003LL + (long long)(kv_now_s() * 1000);
  char *s = NULL;
  assert_true(asprintf(&s, "/* variant %d of run %lld */\n%s", k, run, good) > 0);
  return s;
}

struct seen {
  int shared, ahead, cached;
  double submitted, cstart, cend, sent, verdict;
};

static void seen_of(const char *json, struct seen *v) {
  json_t *j = json_loads(json, 0, NULL);
  json_t *ex = json_object_get(j, "executor"), *at = json_object_get(ex, "at");
  v->shared = json_is_true(json_object_get(ex, "shared_compile"));
  v->ahead = json_is_true(json_object_get(ex, "compiled_ahead"));
  v->cached = json_is_true(json_object_get(json_object_get(j, "compile"), "cached"));
  v->submitted = json_number_value(json_object_get(at, "submitted"));
  v->cstart = json_number_value(json_object_get(at, "compile_start"));
  v->cend = json_number_value(json_object_get(at, "compile_end"));
  v->sent = json_number_value(json_object_get(at, "sent"));
  v->verdict = json_number_value(json_object_get(at, "verdict"));
  assert_non_null(json_object_get(json_object_get(ex, "seconds"), "lock_wait"));
  json_decref(j);
}

/* One server, two compilers, six distinct candidates and two copies of the
 * first: the pool builds ahead (a later candidate is built before an
 * earlier one's verdict) and in parallel (two compiles at once), every job
 * reaches its server built (the server's compile is a cache hit, sent after
 * the build ended), and the copies share the first one's build. */
static void test_pipeline(void **state) {
  (void)state;
  char err[2048];
  setenv("KEVO_EXEC_COMPILERS", "2", 1);
  struct kv_exec *x = open_local(1, NULL, NULL, "cpu", 1, err, sizeof err);
  unsetenv("KEVO_EXEC_COMPILERS");
  struct kv_exec_stats st;
  kv_exec_stats(x, &st);
  assert_int_equal(st.compilers, 2);
  assert_int_equal(kv_exec_width(x), 3);
  struct kv_task *t = small_rowsum();
  char *good = read_src("good.c");
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER");
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 1;
  g.time_budget_s = 0.1;
  g.timing_ci = 0; /* a fixed budget: as long on a busy host as on an idle one */
  enum { N = 6, COPIES = 2 };
  char *src[N];
  for (int k = 0; k < N; k++)
    src[k] = variant(good, k);
  for (intptr_t i = 0; i < N + COPIES; i++) {
    const char *s = src[i < N ? i : 0];
    assert_int_equal(kv_exec_submit(x, t, s, strlen(s), &g, (void *)(i + 1), err, sizeof err), 0);
  }
  struct seen v[N + COPIES];
  memset(v, 0, sizeof v);
  for (int got = 0; got < N + COPIES;) {
    struct kv_exec_done d;
    int k = kv_exec_next(x, 120, &d, err, sizeof err);
    if (k < 0)
      fail_msg("kv_exec_next: %s", err);
    assert_int_equal(k, 1);
    if (!d.ok)
      fail_msg("%s", d.error);
    assert_string_equal(verdict_of(d.result_json), "ok");
    seen_of(d.result_json, &v[(intptr_t)d.ud - 1]);
    kv_exec_done_release(&d);
    got++;
  }
  int shared = 0, overlap = 0, ahead = 0;
  for (int i = 0; i < N + COPIES; i++) {
    fprintf(stderr, "  job %d: compile %.2f-%.2f, sent %.2f, verdict %.2f%s%s\n", i + 1,
            v[i].cstart, v[i].cend, v[i].sent, v[i].verdict, v[i].shared ? ", shared" : "",
            v[i].cached ? ", the server found it built" : ", the server COMPILED");
    assert_true(v[i].ahead);
    assert_true(v[i].cached);                   /* the server received it compiled */
    assert_true(v[i].sent >= v[i].cend - 1e-6); /* after its build, never before */
    shared += v[i].shared;
    for (int k = 0; k < i && i < N; k++)
      overlap += v[k].cstart < v[i].cend && v[i].cstart < v[k].cend;
    if (i > 0 && i < N)
      ahead += v[i].cend < v[i - 1].verdict;
  }
  kv_exec_stats(x, &st);
  fprintf(stderr,
          "  %d compiles (%d shared), %d pairs overlapping, %d of %d built before the previous "
          "verdict; sent %d (%d built first); servers busy %.2f s, idle waiting for a compile "
          "%.2f s of %.2f s\n",
          st.compiles, st.compiles_shared, overlap, ahead, N - 1, st.sent, st.sent_built,
          st.slot_busy_s, st.slot_starved_s, st.wall_s);
  assert_int_equal(shared, COPIES);
  assert_int_equal(st.compiles, N + 1); /* one build per content, and the task's reference */
  assert_int_equal(st.compiles_shared, COPIES);
  assert_int_equal(st.sent_built, N + COPIES);
  assert_true(overlap >= 1); /* in parallel */
  /* Ahead of the server: a later candidate built before an earlier one's
   * verdict. How many depends on how fast compiles run beside the server
   * (a loaded CI host, other tests' builds of the same content waited for
   * through the cache's build lock): speed is the bench's (bench/gpus.sh),
   * not this test's. */
  assert_true(ahead >= 1);
  kv_exec_close(x);
  for (int k = 0; k < N; k++)
    free(src[k]);
  free(good);
  kv_task_free(t);
}

/* Throughput with one server, the GPU played by a stand-in: a server
 * (this binary, KEVO_TEST_FAKE=gpu) that builds the candidate as a gate
 * server does (kv_gate_prebuild: a hit when the pool built it) and then
 * holds the job for STANDIN_JUDGE_S without using a core, as a GPU's checks
 * and timing would. The serial path: every candidate built first by the
 * gate's compile pool (as kevo run does), then judged one at a time for the
 * same time each. The executor's path must judge at least as many per
 * second: its pool builds while the "GPU" judges. */
#define STANDIN_JUDGE_S 0.25

static double serial_rate(struct kv_task *t, const char *good, int n, struct kv_gate_opts *g) {
  char dir[PATH_MAX], err[1024];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-serial", dir, sizeof dir, err, sizeof err), 0);
  char *paths[16];
  for (int k = 0; k < n; k++) {
    char *s = variant(good, 100 + k);
    assert_true(asprintf(&paths[k], "%s/v%d.c", dir, k) > 0);
    assert_int_equal(kv_write_file(paths[k], s, strlen(s), err, sizeof err), 0);
    free(s);
  }
  double t0 = kv_now_s();
  assert_int_equal(kv_gate_prebuild(t, (const char *const *)paths, n, g, err, sizeof err), n);
  for (int k = 0; k < n; k++) {
    /* judged: its build looked up (a hit), then the device's time */
    assert_int_equal(kv_gate_prebuild(t, (const char *const *)&paths[k], 1, g, err, sizeof err), 1);
    usleep((useconds_t)(STANDIN_JUDGE_S * 1e6));
  }
  double wall = kv_now_s() - t0;
  for (int k = 0; k < n; k++)
    free(paths[k]);
  kv_rmtree(dir);
  return n / wall;
}

static double exec_rate(struct kv_task *t, const char *good, int n, struct kv_gate_opts *g,
                        int *built_first) {
  char err[2048];
  setenv("KEVO_TEST_FAKE", "gpu", 1);
  struct kv_exec *x = open_local(1, self_exe(), NULL, "cpu", 1, err, sizeof err);
  unsetenv("KEVO_TEST_FAKE");
  char *src[16];
  for (int k = 0; k < n; k++)
    src[k] = variant(good, 200 + k);
  double t0 = kv_now_s();
  for (intptr_t k = 0; k < n; k++)
    assert_int_equal(
        kv_exec_submit(x, t, src[k], strlen(src[k]), g, (void *)(k + 1), err, sizeof err), 0);
  *built_first = 0;
  for (int k = 0; k < n; k++) {
    struct kv_exec_done d;
    assert_int_equal(kv_exec_next(x, 120, &d, err, sizeof err), 1);
    if (!d.ok)
      fail_msg("%s", d.error);
    assert_string_equal(verdict_of(d.result_json), "ok");
    struct seen v;
    seen_of(d.result_json, &v);
    *built_first += v.ahead && v.cached;
    kv_exec_done_release(&d);
  }
  double wall = kv_now_s() - t0;
  kv_exec_close(x);
  for (int k = 0; k < n; k++)
    free(src[k]);
  return n / wall;
}

static void test_one_server_rate(void **state) {
  (void)state;
  struct kv_task *t = small_rowsum();
  char *good = read_src("good.c");
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER");
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  enum { N = 8 };
  int built = 0;
  double serial = serial_rate(t, good, N, &g), ex = exec_rate(t, good, N, &g, &built);
  fprintf(stderr,
          "  %d candidates, %.2f s on the stand-in GPU each: serial %.2f/s, executor with one "
          "server %.2f/s (%.2fx); %d of %d reached the server built\n",
          N, STANDIN_JUDGE_S, serial, ex, ex / serial, built, N);
  assert_int_equal(built, N);
  assert_true(ex >= serial);
  free(good);
  kv_task_free(t);
}

/* The stand-in GPU server (KEVO_TEST_FAKE=gpu): jobs read as a gate server
 * reads them, each candidate built as kv_gate_eval would (a hit when the
 * pool built it), then STANDIN_JUDGE_S of "device" time. */
static int standin_gpu(void) {
  char hello[256], err[2048], dir[PATH_MAX];
  snprintf(hello, sizeof hello,
           "{\"kevo\": \"%s\", \"protocol\": %d, \"host\": \"standin\", "
           "\"pid\": %d}",
           KEVO_VERSION, KV_GATE_PROTOCOL, (int)getpid());
  if (kv_wire_write(1, KV_GATE_HELLO, 0, hello, NULL, 0) < 0 ||
      kv_mkdtemp("/tmp", "kevo-standin", dir, sizeof dir, err, sizeof err) < 0)
    return 1;
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER");
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  struct kv_task *task = NULL;
  struct kv_frame_header h;
  char *json = NULL;
  uint8_t *blob = NULL;
  while (kv_wire_read(0, KV_JOB_BLOB_MAX, &h, &json, &blob) == 0 && h.type == KV_GATE_EVAL) {
    struct kv_job job;
    json_t *reply = NULL;
    if (kv_job_parse(json, blob, h.blob_len, &job, err, sizeof err) < 0)
      reply = json_pack("{s:s,s:s}", "id", "", "error", err);
    for (int i = 0; i < job.nfiles && !reply; i++) {
      char p[PATH_MAX + 80];
      snprintf(p, sizeof p, "%s/%s", dir, job.files[i].name);
      kv_write_file(p, job.files[i].data, job.files[i].len, err, sizeof err);
    }
    if (!reply && job.nfiles && !task && kv_task_load(dir, &task, err, sizeof err) < 0)
      reply = json_pack("{s:s,s:s}", "id", job.id, "error", err);
    if (!reply && !task)
      reply = json_pack("{s:s,s:s,s:b}", "id", job.id, "error", "no task", "need_task", 1);
    if (!reply) {
      char cand[PATH_MAX + 80];
      snprintf(cand, sizeof cand, "%s/candidate.c", dir);
      kv_write_file(cand, job.candidate.data, job.candidate.len, err, sizeof err);
      const char *paths[1] = {cand};
      double t0 = kv_now_s();
      kv_gate_prebuild(task, paths, 1, &g, err, sizeof err);
      double c = kv_now_s() - t0;
      usleep((useconds_t)(STANDIN_JUDGE_S * 1e6));
      reply = json_pack("{s:s,s:{s:s,s:s,s:s,s:{s:b,s:f},s:{s:f,s:f,s:f,s:f}}}", "id", job.id,
                        "result", "verdict", "ok", "detail", "stand-in", "surface", "cpu",
                        "compile", "cached", c < 0.05, "seconds", c, "seconds", "compile", c,
                        "check", 0.0, "timing", STANDIN_JUDGE_S, "lock_wait", 0.0);
    }
    char *out = json_dumps(reply, JSON_COMPACT);
    json_decref(reply);
    int wr = kv_wire_write(1, KV_GATE_VERDICT, h.token, out, NULL, 0);
    free(out);
    free(json);
    free(blob);
    json = NULL, blob = NULL;
    if (wr < 0)
      break;
  }
  kv_task_free(task);
  kv_rmtree(dir);
  return 0;
}

/* Two threads share one executor (a bench's tasks): each takes only the
 * results of its own jobs, though both use the same uds. */
struct sharer {
  struct kv_exec *x;
  struct kv_task *t;
  const char *src;
  int got, wrong;
};

static void *share_main(void *arg) {
  struct sharer *sh = arg;
  char err[1024];
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER");
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 0;
  for (intptr_t i = 0; i < 3; i++)
    if (kv_exec_submit(sh->x, sh->t, sh->src, strlen(sh->src), &g, (void *)(i + 1), err,
                       sizeof err) < 0)
      return NULL;
  while (kv_exec_pending(sh->x) > 0) {
    struct kv_exec_done d;
    int k = kv_exec_next(sh->x, 60, &d, err, sizeof err);
    if (k < 0)
      break;
    if (k == 0)
      continue;
    sh->got++;
    sh->wrong += !d.ok || strcmp(verdict_of(d.result_json), "ok");
    kv_exec_done_release(&d);
  }
  return NULL;
}

static void test_shared_by_threads(void **state) {
  (void)state;
  char err[2048];
  struct kv_exec *x = open_local(2, NULL, NULL, "cpu", 1, err, sizeof err);
  struct kv_task *t = rowsum();
  char *good = read_src("good.c"), *starter = read_src("starter.c");
  struct sharer a = {x, t, good, 0, 0}, b = {x, t, starter, 0, 0};
  pthread_t ta, tb;
  assert_int_equal(pthread_create(&ta, NULL, share_main, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, share_main, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  fprintf(stderr, "  thread a: %d results, thread b: %d\n", a.got, b.got);
  assert_int_equal(a.got, 3);
  assert_int_equal(b.got, 3);
  assert_int_equal(a.wrong + b.wrong, 0);
  assert_int_equal(kv_exec_pending(x), 0);
  kv_exec_close(x);
  free(good);
  free(starter);
  kv_task_free(t);
}

/* gpus with --gpus 0,1 and 4 jobs at once: two servers per GPU, each with
 * its own CUDA_VISIBLE_DEVICES; two jobs go to two different GPUs (the least
 * loaded), and each verdict names its GPU. cpu jobs, so no GPU is needed. */
static void test_gpus(void **state) {
  (void)state;
  char err[2048];
  struct kv_exec_opts o = {.name = "gpus",
                           .concurrency = 4,
                           .gpus = "0,1",
                           .kevo = getenv("KEVO_BIN"),
                           .surface = "cpu",
                           .note = on_note};
  struct kv_exec *x = NULL;
  if (kv_exec_open(&o, &x, err, sizeof err) < 0)
    fail_msg("gpus: %s", err);
  struct kv_exec_server_info info[8];
  int n = kv_exec_servers(x, info, 8);
  assert_int_equal(n, 4);
  assert_string_equal(info[0].label, "gpu 0 #0");
  assert_string_equal(info[1].label, "gpu 1 #0");
  assert_string_equal(info[3].label, "gpu 1 #1");
  assert_string_equal(info[1].gpu, "1");
  struct kv_task *t = rowsum();
  char *good = read_src("good.c");
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 0;
  for (intptr_t i = 0; i < 2; i++)
    assert_int_equal(kv_exec_submit(x, t, good, strlen(good), &g, (void *)(i + 1), err, sizeof err),
                     0);
  char gpus[2][64] = {"", ""};
  for (int k = 0; k < 2; k++) {
    struct kv_exec_done d;
    assert_int_equal(kv_exec_next(x, 120, &d, err, sizeof err), 1);
    assert_true(d.ok);
    snprintf(gpus[k], sizeof gpus[k], "%s", d.gpu);
    json_t *j = json_loads(d.result_json, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "executor"), "gpu")),
                        d.gpu);
    json_decref(j);
    kv_exec_done_release(&d);
  }
  fprintf(stderr, "  judged on gpus %s and %s\n", gpus[0], gpus[1]);
  assert_true(strcmp(gpus[0], gpus[1]) != 0);
  kv_exec_close(x);
  free(good);
  kv_task_free(t);
  assert_int_equal(
      kv_exec_open(&(struct kv_exec_opts){.name = "gpus", .gpus = "0;rm"}, &x, err, sizeof err),
      -1);
  assert_non_null(strstr(err, "not a GPU index or UUID"));
}

/* kill -9 a server mid-job: that job is judged again elsewhere and comes
 * back once; the others are untouched. */
static void test_kill_retry(void **state) {
  (void)state;
  char err[2048];
  notes[0] = 0;
  struct kv_exec *x = open_local(2, NULL, NULL, "cpu", 1, err, sizeof err);
  struct kv_task *t = rowsum();
  char *good = read_src("good.c"), *starter = read_src("starter.c");
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 1;
  g.time_budget_s = 0.3;
  const char *srcs[3] = {good, starter, good};
  for (intptr_t i = 0; i < 3; i++)
    assert_int_equal(
        kv_exec_submit(x, t, srcs[i], strlen(srcs[i]), &g, (void *)(i + 1), err, sizeof err), 0);
  /* wait for a server to be busy, give it a moment inside the job, kill it */
  struct kv_exec_server_info info[8];
  pid_t victim = 0;
  int seen[3] = {0}, results = 0, retried = 0;
  double start = kv_now_s();
  while (kv_exec_pending(x) > 0) {
    struct kv_exec_done d;
    int k = kv_exec_next(x, 0.5, &d, err, sizeof err);
    if (k < 0)
      fail_msg("kv_exec_next: %s", err);
    if (k == 1) {
      intptr_t i = (intptr_t)d.ud - 1;
      if (!d.ok)
        fail_msg("job %d: %s", (int)i, d.error);
      seen[i]++;
      results++;
      retried += d.attempts == 2;
      assert_string_equal(verdict_of(d.result_json), "ok");
      kv_exec_done_release(&d);
    }
    if (!victim && kv_now_s() - start > 1.5) {
      int n = kv_exec_servers(x, info, 8);
      for (int s = 0; s < n && !victim; s++)
        if (info[s].busy && info[s].pid > 0)
          victim = info[s].pid;
      if (victim) {
        fprintf(stderr, "  killing gate server %d with SIGKILL mid-job\n", (int)victim);
        assert_int_equal(kill(victim, SIGKILL), 0);
      }
    }
    assert_true(kv_now_s() - start < 400);
  }
  assert_true(victim > 0);
  assert_int_equal(results, 3);
  for (int i = 0; i < 3; i++)
    assert_int_equal(seen[i], 1);
  assert_int_equal(retried, 1);
  assert_non_null(strstr(notes, "goes to another server"));
  kv_exec_close(x);
  free(good);
  free(starter);
  kv_task_free(t);
}

static const char *self_exe(void) {
  static char p[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", p, sizeof p - 1);
  assert_true(n > 0);
  p[n] = 0;
  return p;
}

static void test_version_mismatch(void **state) {
  (void)state;
  char err[2048];
  setenv("KEVO_TEST_FAKE", "proto99", 1);
  struct kv_exec *x = open_local(1, self_exe(), NULL, "cpu", 0, err, sizeof err);
  unsetenv("KEVO_TEST_FAKE");
  assert_null(x);
  fprintf(stderr, "  %s\n", err);
  assert_non_null(strstr(err, "protocol 99"));
  assert_non_null(strstr(err, "install the same kevo version"));
}

/* A server that dies on every job: the job is reported after max_tries, the
 * host dropped after drop_after failures; nothing hangs. */
static void test_host_dropped(void **state) {
  (void)state;
  char err[2048];
  notes[0] = 0;
  struct kv_exec_config cfg;
  kv_exec_config_default(&cfg);
  cfg.max_tries = 2;
  cfg.drop_after = 3;
  setenv("KEVO_TEST_FAKE", "die", 1);
  struct kv_exec *x = open_local(1, self_exe(), &cfg, "cpu", 1, err, sizeof err);
  struct kv_task *t = rowsum();
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  for (intptr_t i = 0; i < 3; i++)
    assert_int_equal(kv_exec_submit(x, t, "int x;", 6, &g, (void *)(i + 1), err, sizeof err), 0);
  int failed = 0, gone = 0;
  double start = kv_now_s();
  while (kv_exec_pending(x) > 0 && kv_now_s() - start < 60) {
    struct kv_exec_done d;
    int k = kv_exec_next(x, 5, &d, err, sizeof err);
    if (k < 0) {
      gone = 1;
      break;
    }
    if (k == 1) {
      assert_int_equal(d.ok, 0);
      assert_non_null(strstr(d.error, "no server could judge it"));
      failed++;
    }
  }
  unsetenv("KEVO_TEST_FAKE");
  fprintf(stderr, "  failed %d, every server gone %d\n", failed, gone);
  assert_true(failed >= 1);
  assert_int_equal(kv_exec_pending(x), 0);
  assert_non_null(strstr(notes, "dropped after 3 failures in a row"));
  kv_exec_close(x);
  kv_task_free(t);
}

static void test_no_gpu_cuda(void **state) {
  (void)state;
  struct stat st;
  if (stat("/proc/driver/nvidia/gpus", &st) == 0) {
    fprintf(stderr, "  this host has a GPU: the no-GPU refusal is not tested here\n");
    skip();
  }
  char err[2048];
  notes[0] = 0;
  struct kv_exec *x = open_local(1, NULL, NULL, "cuda", 0, err, sizeof err);
  assert_null(x);
  fprintf(stderr, "  %s\n", err);
  assert_non_null(strstr(err, "cannot judge cuda kernels"));
  assert_non_null(strstr(notes, "dropped"));
  /* and the gpus executor says there is no GPU to serve from */
  struct kv_exec_opts o = {.name = "gpus", .concurrency = 2, .surface = "cuda"};
  unsetenv("CUDA_VISIBLE_DEVICES");
  assert_int_equal(kv_exec_open(&o, &x, err, sizeof err), -1);
  assert_non_null(strstr(err, "shows no GPU"));
}

/* ---- ssh and Slurm ---- */

static int required(const char *var) {
  const char *v = getenv(var);
  return v && *v && strcmp(v, "0");
}

static void test_ssh_unreachable(void **state) {
  (void)state;
  char ssh[PATH_MAX];
  if (kv_which("ssh", ssh, sizeof ssh) < 0) {
    fprintf(stderr, "\n*** test_exec: NO ssh CLIENT: the unreachable-host test is SKIPPED ***\n");
    if (required("KEVO_REQUIRE_SSH"))
      fail_msg("KEVO_REQUIRE_SSH is set but there is no ssh");
    skip();
  }
  struct kv_exec_config cfg;
  char err[2048];
  const char *text = "{\"ssh\": {\"hosts\": [\"kevo-no-such-host.invalid\"]}, "
                     "\"start_timeout_s\": 30}";
  assert_int_equal(
      kv_exec_config_parse(text, strlen(text), "unreachable.json", &cfg, err, sizeof err), 0);
  struct kv_exec_opts o = {.name = "ssh", .concurrency = 1, .config = &cfg, .note = on_note};
  struct kv_exec *x = NULL;
  assert_int_equal(kv_exec_open(&o, &x, err, sizeof err), -1);
  fprintf(stderr, "  %s\n", err);
  assert_non_null(strstr(err, "ssh kevo-no-such-host.invalid #0"));
  assert_non_null(strstr(err, "could not start a gate server"));
  assert_non_null(strstr(err, "kevo-no-such-host.invalid"));
}

/* A run of jobs through a real executor named by a configuration file. */
/* kill_one: SIGKILL the local end (ssh: a lost connection; srun: a step
 * that is gone, as after a preemption) of a busy server mid-job. */
static void through(const char *name, const char *cfg_path, int njobs, const char *want_host,
                    int kill_one) {
  char err[2048];
  struct kv_exec_config *cfg = malloc(sizeof *cfg);
  assert_int_equal(kv_exec_config_load(cfg_path, cfg, err, sizeof err), 0);
  /* localhost's sshd and Slurm run the kevo under test */
  const char *kevo = getenv("KEVO_BIN");
  assert_non_null(kevo);
  for (int i = 0; i < cfg->nhosts; i++)
    snprintf(cfg->hosts[i].kevo, sizeof cfg->hosts[i].kevo, "%s", kevo);
  snprintf(cfg->slurm_kevo, sizeof cfg->slurm_kevo, "%s", kevo);
  struct kv_exec_opts o = {.name = name, .concurrency = 2, .config = cfg, .note = on_note};
  struct kv_exec *x = NULL;
  if (kv_exec_open(&o, &x, err, sizeof err) < 0)
    fail_msg("%s: %s", name, err);
  struct kv_task *t = rowsum();
  char *good = read_src("good.c");
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  g.worker_path = getenv("KEVO_WORKER"); /* the test environment's */
  g.cache_dir = getenv("KEVO_CACHE_DIR");
  g.timing = 1;
  /* ssh, killed: jobs long enough that only the server's watchdog, not the
   * job's end, can explain the other end's quick exit */
  g.time_budget_s = kill_one && !strcmp(name, "ssh") ? 2.0 : 0.2;
  for (intptr_t i = 0; i < njobs; i++)
    assert_int_equal(kv_exec_submit(x, t, good, strlen(good), &g, (void *)(i + 1), err, sizeof err),
                     0);
  int got = 0, retried = 0;
  pid_t victim = 0, remote = 0;
  double start = kv_now_s();
  notes[0] = 0;
  while (kv_exec_pending(x) > 0) {
    struct kv_exec_done d;
    int k = kv_exec_next(x, 0.5, &d, err, sizeof err);
    if (k < 0)
      fail_msg("%s: %s", name, err);
    assert_true(kv_now_s() - start < 500);
    if (kill_one && !victim && kv_now_s() - start > 2) {
      struct kv_exec_server_info info[8];
      int n = kv_exec_servers(x, info, 8);
      for (int i = 0; i < n && !victim; i++)
        if (info[i].busy && info[i].pid > 0)
          victim = info[i].pid, remote = info[i].remote_pid;
      if (victim) {
        fprintf(stderr, "  killing %s's local end (pid %d) with SIGKILL mid-job\n", name,
                (int)victim);
        assert_int_equal(kill(victim, SIGKILL), 0);
        if (!strcmp(name, "ssh")) {
          /* the server on the other end sees its client go and ends
           * mid-job, its workers with it, without finishing the job
           * (localhost: its pid is visible here) */
          double t0 = kv_now_s();
          while (remote > 0 && kill(remote, 0) == 0 && kv_now_s() - t0 < 20)
            usleep(20000);
          fprintf(stderr, "  the orphaned server %d %s after %.2f s\n", (int)remote,
                  kill(remote, 0) == 0 ? "still runs" : "ended", kv_now_s() - t0);
          assert_true(remote > 0 && kill(remote, 0) != 0 && kv_now_s() - t0 < 5);
        }
      }
    }
    if (k == 0)
      continue;
    retried += d.attempts == 2;
    if (!d.ok)
      fail_msg("%s: %s", name, d.error);
    assert_string_equal(verdict_of(d.result_json), "ok");
    json_t *j = json_loads(d.result_json, 0, NULL);
    json_t *ex = json_object_get(j, "executor");
    fprintf(stderr, "  judged by %s on %s (server %s), speedup %.2fx\n",
            json_string_value(json_object_get(ex, "name")),
            json_string_value(json_object_get(ex, "host")),
            json_string_value(json_object_get(ex, "server")),
            json_number_value(json_object_get(json_object_get(j, "timing"), "speedup")));
    assert_string_equal(json_string_value(json_object_get(ex, "name")), name);
    if (want_host)
      assert_non_null(strstr(json_string_value(json_object_get(ex, "server")), want_host));
    json_decref(j);
    kv_exec_done_release(&d);
    got++;
  }
  assert_int_equal(got, njobs);
  struct kv_exec_server_info info[8];
  int n = kv_exec_servers(x, info, 8), sends = 0;
  for (int i = 0; i < n; i++)
    sends += info[i].task_sends;
  if (kill_one) {
    assert_true(victim > 0);
    assert_int_equal(retried, 1);
    assert_non_null(strstr(notes, "goes to another server"));
  } else
    assert_int_equal(sends, 1); /* the host received the task once */
  kv_exec_close(x);
  free(good);
  free(cfg);
  kv_task_free(t);
}

static void test_ssh(void **state) {
  (void)state;
  const char *cfg = getenv("KEVO_TEST_SSH_CONFIG");
  if (!cfg || access(cfg, R_OK) != 0) {
    fprintf(stderr, "\n*** test_exec: NO sshd SET UP (KEVO_TEST_SSH_CONFIG): the ssh executor "
                    "test is SKIPPED; scripts/ci-sshd.sh sets one up ***\n");
    if (required("KEVO_REQUIRE_SSH"))
      fail_msg("KEVO_REQUIRE_SSH is set but KEVO_TEST_SSH_CONFIG names no file");
    skip();
  }
  through("ssh", cfg, 3, "ssh ", 0);
  through("ssh", cfg, 3, "ssh ", 1);
}

static void test_slurm(void **state) {
  (void)state;
  const char *cfg = getenv("KEVO_TEST_SLURM_CONFIG");
  if (!cfg || access(cfg, R_OK) != 0) {
    fprintf(stderr, "\n*** test_exec: NO SLURM SET UP (KEVO_TEST_SLURM_CONFIG): the slurm "
                    "executor test is SKIPPED; scripts/ci-slurm.sh sets one up ***\n");
    if (required("KEVO_REQUIRE_SLURM"))
      fail_msg("KEVO_REQUIRE_SLURM is set but KEVO_TEST_SLURM_CONFIG names no file");
    skip();
  }
  through("slurm", cfg, 3, "slurm ", 0);
  through("slurm", cfg, 3, "slurm ", 1);
  /* a partition that does not exist: srun's reason, named */
  char err[2048];
  struct kv_exec_config *c = malloc(sizeof *c);
  assert_int_equal(kv_exec_config_load(cfg, c, err, sizeof err), 0);
  snprintf(c->slurm_kevo, sizeof c->slurm_kevo, "%s", getenv("KEVO_BIN"));
  snprintf(c->partition, sizeof c->partition, "kevo-no-such-partition");
  c->slurm_servers = 1;
  c->start_timeout_s = 60;
  struct kv_exec_opts o = {.name = "slurm", .concurrency = 1, .config = c, .note = on_note};
  struct kv_exec *x = NULL;
  assert_int_equal(kv_exec_open(&o, &x, err, sizeof err), -1);
  fprintf(stderr, "  %s\n", err);
  assert_non_null(strstr(err, "slurm #0: could not start a gate server"));
  assert_non_null(strstr(err, "Invalid partition"));
  assert_non_null(strstr(err, "sinfo lists the partitions"));
  free(c);
}

/* ---- the stand-in server ---- */

static int fake_server(const char *mode) {
  if (!strcmp(mode, "gpu"))
    return standin_gpu();
  char hello[256];
  snprintf(hello, sizeof hello,
           "{\"kevo\": \"%s\", \"protocol\": %d, \"host\": \"fake\", "
           "\"pid\": %d}",
           strcmp(mode, "proto99") ? KEVO_VERSION : "0.0.1", strcmp(mode, "proto99") ? 1 : 99,
           (int)getpid());
  if (kv_wire_write(1, KV_GATE_HELLO, 0, hello, NULL, 0) < 0)
    return 1;
  struct kv_frame_header h;
  char *json = NULL;
  uint8_t *blob = NULL;
  if (kv_wire_read(0, KV_JOB_BLOB_MAX, &h, &json, &blob) == 0 && !strcmp(mode, "die")) {
    fprintf(stderr, "fake server: dying on job %s\n", json);
    _exit(9);
  }
  sleep(30);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "gate") && getenv("KEVO_TEST_FAKE"))
    return fake_server(getenv("KEVO_TEST_FAKE"));
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config),
      cmocka_unit_test(test_result_parse),
      cmocka_unit_test(test_local),
      cmocka_unit_test(test_pipeline),
      cmocka_unit_test(test_one_server_rate),
      cmocka_unit_test(test_shared_by_threads),
      cmocka_unit_test(test_gpus),
      cmocka_unit_test(test_kill_retry),
      cmocka_unit_test(test_version_mismatch),
      cmocka_unit_test(test_host_dropped),
      cmocka_unit_test(test_no_gpu_cuda),
      cmocka_unit_test(test_ssh_unreachable),
      cmocka_unit_test(test_ssh),
      cmocka_unit_test(test_slurm),
  };
  if (getenv("KEVO_TEST_FILTER")) /* e.g. KEVO_TEST_FILTER='test_pipe*' */
    cmocka_set_test_filter(getenv("KEVO_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
