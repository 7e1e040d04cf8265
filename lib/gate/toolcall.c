/* One call of a compiled object in a kevo-worker started by a developer tool
 * (see toolcall.h): the layers left off, the tool's own network namespace,
 * its exit awaited for its report; and the tools' versions. Below the tools
 * (ncu.c, sanitize.c) and toolrun.c, which all use it (issue 33: no circle
 * among lib/gate's files). */
#include "toolcall.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kevo/runtime.h"
#include "kevo/wire.h"

/* The layers the worker leaves off under each tool, measured on an H100
 * (driver 580.159, ncu and compute-sanitizer 2025.3.1) by running each tool
 * with every combination of one layer on or off (BENCHMARKS.md, "Which
 * sandbox layers the tools need"):
 * - both hang until their start deadline in the worker's own network
 *   namespace (the injected library cannot reach the tool's front end);
 * - under seccomp, compute-sanitizer's injection makes cuInit fail
 *   (CUDA_ERROR_OPERATING_SYSTEM) and ncu hangs;
 * - ncu is killed by the lockdown after loading (it patches code);
 * - Landlock and the scratch directory are tolerated by both.
 * $KEVO_NCU_WITHOUT and $KEVO_SANITIZER_WITHOUT ("netns,seccomp"; "none":
 * every layer on) override them.
 *
 * The worker's own network namespace is off, but not the network: the tool
 * itself is started in a new, empty network namespace (kevo-sandbox -n, its
 * loopback up), which the worker it starts shares. Their sockets meet on
 * that loopback; the candidate reaches nothing outside it (no host port, no
 * other machine). "tool_netns" in the variables above starts the tool in
 * the host's network instead (said in the outcome and by kevo doctor). */
static const char *const ncu_off[] = {"netns", "seccomp", "lock", NULL};
static const char *const san_off[] = {"netns", "seccomp", NULL};
/* The cpu surface's AddressSanitizer run: RLIMIT_AS only (its shadow). */
static const char *const asan_off[] = {"as", NULL};

int kv_tool_layers_off(const char *tool, const char **out, int max, char *store, size_t cap) {
  int ncu = !strcmp(tool, "ncu"), asan = !strcmp(tool, "asan");
  const char *e = asan ? NULL : getenv(ncu ? "KEVO_NCU_WITHOUT" : "KEVO_SANITIZER_WITHOUT");
  const char *const *def = asan ? asan_off : ncu ? ncu_off : san_off;
  int n = 0;
  if (!e) {
    while (def[n] && n < max - 1)
      out[n] = def[n], n++;
  } else {
    snprintf(store, cap, "%s", e);
    for (char *sv = NULL, *tok = strtok_r(store, ",", &sv); tok && n < max - 1;
         tok = strtok_r(NULL, ",", &sv))
      if (strcmp(tok, "none") != 0)
        out[n++] = tok;
  }
  out[n] = NULL;
  return n;
}

void kv_tool_layers_said(const char *const *without, char *out, size_t cap) {
  static const char *const said[][2] = {
      {"as", "RLIMIT_AS"}, {"lock", "exec lockdown"}, {"tool_netns", "the tool's netns"}};
  size_t n = 0;
  out[0] = 0;
  for (int i = 0; without && without[i] && n < cap; i++) {
    const char *w = without[i];
    for (size_t k = 0; k < sizeof said / sizeof said[0]; k++)
      w = strcmp(without[i], said[k][0]) ? w : said[k][1];
    n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "", w);
  }
}

/* The tool's argv inside its own network namespace (kevo-sandbox -n, see
 * above) into out (NULL-terminated, at most cap), kevo-sandbox's path kept
 * in sbx; the layers for the worker, "tool_netns" left out, into
 * worker_off. Returns 1 when wrapped, 0 when "tool_netns" is among
 * `without` (the tool runs in the host's network), -1 with err. */
int kv_tool_in_netns(const char *worker_path, const char *dir, const char *const *wrap,
                     const char *const *without, const char **out, int cap, const char **worker_off,
                     int offcap, char *sbx, size_t sbxcap, char *err, size_t errlen) {
  int host_net = 0, k = 0;
  for (int i = 0; without && without[i]; i++) {
    if (!strcmp(without[i], "tool_netns"))
      host_net = 1;
    else if (k < offcap - 1)
      worker_off[k++] = without[i];
  }
  worker_off[k] = NULL;
  int n = 0;
  if (!host_net) {
    if (kv_helper_path("kevo-sandbox", "KEVO_SANDBOX_HELPER", worker_path, sbx, sbxcap) < 0)
      return kv_error(err, errlen,
                      "kevo-sandbox not found beside %s: the tool runs only in a network "
                      "namespace of its own (rebuild kevo)",
                      worker_path);
    const char *pre[] = {sbx, dir, "0", "0", "-n", "--"};
    for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
      out[n++] = pre[i];
  }
  for (int i = 0; wrap[i] && n < cap - 1; i++)
    out[n++] = wrap[i];
  out[n] = NULL;
  return !host_net;
}

void kv_tool_dir(const char *tool, char *out, size_t cap) {
  char real[PATH_MAX];
  out[0] = 0;
  if (!tool || !*tool || !realpath(tool, real))
    return;
  char *sl = strrchr(real, '/');
  if (sl && sl != real)
    *sl = 0;
  snprintf(out, cap, "%s", real);
}

/* Asks the worker to quit and waits for the tool (the process group's
 * leader) to exit by itself, so that it writes its report; then kills what
 * is left of the group and releases the worker. */
void kv_tool_stop(struct kv_worker *w, double exit_s, int *exited) {
  *exited = 0;
  if (w->pid > 0) {
    if (w->req_fd >= 0) {
      struct kv_frame_header h = {KV_WIRE_MAGIC, KV_MSG_QUIT, 0, 0, 0};
      uint8_t hdr[KV_WIRE_HEADER];
      kv_wire_pack_header(&h, hdr);
      kv_write_nosigpipe(w->req_fd, hdr, sizeof hdr);
      close(w->req_fd);
      w->req_fd = -1;
    }
    pid_t pid = w->pid;
    double end = kv_now_s() + exit_s;
    char chunk[4096];
    for (;;) {
      int st;
      pid_t r = waitpid(pid, &st, WNOHANG);
      if (r == pid || (r < 0 && errno == ECHILD)) {
        *exited = 1;
        break;
      }
      if (kv_now_s() > end)
        break;
      /* Keep the pipes drained: a tool blocked on a full pipe never exits. */
      for (int i = 0; i < 4; i++) {
        if (w->out_fd >= 0 && read(w->out_fd, chunk, sizeof chunk) > 0)
          continue;
        if (w->err_fd >= 0 && read(w->err_fd, chunk, sizeof chunk) > 0)
          continue;
        break;
      }
      struct timespec ts = {0, 10 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    if (*exited) {
      w->pid = -1;
      w->alive = 0;
    }
  }
  kv_worker_stop(w);
}

int kv_tool_call(const struct kv_session *s, const char *so, int candidate, const char *set,
                 int index, uint64_t seed, const struct kv_tool_run *tr,
                 struct kv_tool_outcome *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  double t0 = kv_now_s();
  int bench = !strcmp(set, "bench");
  if (index < 0 || index >= (bench ? s->t->nbench : s->t->ncheck))
    return kv_error(err, errlen, "%s[%d]: the task has no such size", set, index);
  int64_t nelem[KV_MAX_PARAMS];
  if (kv_layout(s->t, bench ? &s->t->bench[index] : &s->t->check[index], nelem, err, errlen) < 0)
    return -1;
  size_t ob = kv_call_bytes(s->t, nelem, 0);
  if (tr->wrap && (!tr->wrap[0] || access(tr->wrap[0], X_OK) != 0))
    return kv_error(err, errlen, "%s: the tool cannot be run",
                    tr->wrap[0] ? tr->wrap[0] : "(none)");
  struct kv_worker_spec spec = {0};
  spec.worker_path = s->worker_path;
  spec.scratch_base = s->scratch;
  spec.read_paths[spec.nread++] = s->objdir;
  for (int i = 0; i < tr->nreads && spec.nread < 8; i++)
    spec.read_paths[spec.nread++] = tr->reads[i];
  spec.sandbox = s->o->sandbox;
  spec.start_deadline_s = tr->start_s > 0 ? tr->start_s : 60;
  spec.surface = s->sf->worker_runtime;
  spec.wrap = tr->wrap;
  spec.without = tr->without;
  spec.extra_env = tr->extra_env;
  const char *wrapped[48], *worker_off[8];
  char sbx[PATH_MAX];
  if (tr->wrap) {
    int in = kv_tool_in_netns(s->worker_path, s->scratch, tr->wrap, tr->without, wrapped, 48,
                              worker_off, 8, sbx, sizeof sbx, err, errlen);
    if (in < 0)
      return -1;
    out->tool_netns = in;
    spec.wrap = wrapped;
    spec.without = worker_off;
  }
  struct kv_worker w;
  if (kv_worker_start(&w, &spec, err, errlen) < 0)
    return -1;
  kv_sandbox_status_from_hello(w.hello, &out->layers);
  json_t *c = json_object_get(w.hello, "cuda");
  if (s->sf->device_in_worker && !json_is_true(json_object_get(c, "ok"))) {
    const char *e = json_string_value(json_object_get(c, "error"));
    kv_error(err, errlen, "under the tool the worker cannot use the device: %s",
             e ? e : "no reason given");
    kv_worker_stop(&w);
    return -1;
  }
  /* The tool's run holds the device like a timing loop: its kernels would
   * disturb another evaluation's timing on the same GPU (and replayed
   * kernels be disturbed by it). */
  struct kv_devlock lock;
  if (kv_gate_lock_device(s->sf, s->o, w.hello, "profiling or sanitizing a candidate", &lock, err,
                          errlen) < 0) {
    kv_worker_stop(&w);
    return -1;
  }
  json_t *rep = NULL;
  char d[1024];
  json_t *req = json_pack("{s:s}", "task", s->t->json);
  enum kv_call_status st = kv_worker_call(&w, KV_MSG_INIT, req, 30, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st == KV_CALL_OK) {
    req = json_pack("{s:i,s:s,s:b}", "slot", 0, "path", so, "candidate", candidate);
    st = kv_worker_call(&w, KV_MSG_LOAD, req, tr->deadline_s, &rep, NULL, 0, d, sizeof d);
    json_decref(req);
    json_decref(rep);
  }
  if (st == KV_CALL_OK) {
    uint8_t *blob = NULL;
    int poison = 0;
    st = kv_run_check(&w, 0, set, index, &seed, &poison, 1, 0, ob, tr->deadline_s, &blob, NULL, d,
                      sizeof d);
    free(blob);
  }
  if (tr->keep_stderr)
    out->err_text = strdup(w.err.data ? w.err.data : "");
  out->call = st;
  snprintf(out->detail, sizeof out->detail, "%s", st == KV_CALL_OK ? "the call returned" : d);
  kv_tool_stop(&w, tr->exit_s > 0 ? tr->exit_s : 30, &out->tool_exited);
  kv_devlock_release(&lock);
  out->seconds = kv_now_s() - t0;
  return 0;
}

/* The "Version 2025.3.0 ..." line of `TOOL --version`, less the word. */
void kv_tool_version(const char *tool, char *out, size_t cap) {
  out[0] = 0;
  if (!tool || !*tool)
    return;
  char *argv[] = {(char *)tool, "--version", NULL};
  char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C", NULL};
  struct kv_buf b;
  kv_buf_init(&b, 16384);
  struct kv_proc_result pr;
  char err[256];
  if (kv_run(argv, envp, "/", 20, NULL, NULL, &b, &pr, err, sizeof err) == 0 && b.data) {
    const char *v = strstr(b.data, "Version ");
    if (v) {
      v += 8;
      size_t n = strcspn(v, " \n\r");
      snprintf(out, cap, "%.*s", (int)(n < 64 ? n : 64), v);
    }
  }
  kv_buf_release(&b);
}

const char *kv_tool_version_cached(const char *tool) {
  static struct { char tool[PATH_MAX], v[80]; } seen[8];
  static int n;
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  if (!tool || !*tool)
    return "";
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < n && strcmp(seen[i].tool, tool) != 0)
    i++;
  if (i == n) {
    i = n < 8 ? n++ : 7; /* a ninth tool takes the last one's place */
    snprintf(seen[i].tool, sizeof seen[i].tool, "%s", tool);
    kv_tool_version(tool, seen[i].v, sizeof seen[i].v);
  }
  pthread_mutex_unlock(&lock);
  return seen[i].v;
}
