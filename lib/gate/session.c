/* A gate session's workers (internal.h): started, readied, loaded, asked to
 * run checks, stopped; one call judged against the reference. Below the
 * orchestrator (gate.c) and the stages it calls (checks, timing, dev tools):
 * it calls none of them. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/runtime.h"
#include "kevo/wire.h"
int kv_session_init(struct kv_session *s, const struct kv_task *t, const struct kv_gate_opts *o,
                    char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->t = t;
  s->o = o;
  s->sf = kv_surface_find(o->surface && *o->surface ? o->surface : NULL);
  if (!s->sf)
    return kv_error(err, errlen, "--surface %s: not a surface; use one of %s", o->surface,
                    kv_surface_names());
  if (o->timing_method == KV_TIMING_DOBENCH && !s->sf->device_in_worker)
    return kv_error(err, errlen,
                    "--timing do_bench: triton's do_bench is a GPU method; on the %s surface use "
                    "kevo (the default) or kernelbench",
                    s->sf->name);
  if (o->cache_dir)
    snprintf(s->cache, sizeof s->cache, "%s", o->cache_dir);
  else if (kv_cache_dir(s->cache, sizeof s->cache) < 0)
    return kv_error(err, errlen,
                    "cannot find a safe cache directory (with no HOME or XDG_CACHE_HOME, "
                    "${TMPDIR:-/tmp}/kevo-cache-UID must be this user's, mode 0700); set "
                    "KEVO_CACHE_DIR");
  snprintf(s->objdir, sizeof s->objdir, "%s/obj", s->cache);
  snprintf(s->scratch, sizeof s->scratch, "%s/scratch", s->cache);
  if (kv_mkdirs(s->objdir, 0700, err, errlen) < 0 || kv_mkdirs(s->scratch, 0700, err, errlen) < 0)
    return -1;
  const char *wp = o->worker_path;
  if (wp && *wp) {
    snprintf(s->worker_path, sizeof s->worker_path, "%s", wp);
  } else {
    char dir[PATH_MAX - 16];
    if (kv_exe_dir(dir, sizeof dir) < 0)
      return kv_error(err, errlen, "cannot locate kevo-worker; set KEVO_WORKER");
    snprintf(s->worker_path, sizeof s->worker_path, "%s/kevo-worker", dir);
  }
  return 0;
}

void kv_session_stop_candidate(struct kv_session *s, struct kv_gate_result *r) {
  if (!s->cw_up) {
    kv_lend_return(s);
    return;
  }
  kv_worker_stop_keep_output(&s->cw); /* drains what is left of its output first */
  /* Reaped: no process of the candidate maps the lent buffers now. */
  kv_lend_return(s);
  free(r->cand_stdout);
  free(r->cand_stderr);
  r->cand_stdout = s->cw.out.data ? strdup(s->cw.out.data) : NULL;
  r->cand_stderr = s->cw.err.data ? strdup(s->cw.err.data) : NULL;
  r->stdout_truncated = s->cw.out.truncated;
  r->stderr_truncated = s->cw.err.truncated;
  kv_buf_release(&s->cw.out);
  kv_buf_release(&s->cw.err);
  s->cw_up = 0;
}

void kv_session_release(struct kv_session *s) {
  kv_lend_drop(s); /* the workers go now: nothing to tell the clean one */
  if (s->rw_up)
    kv_worker_stop_nowait(&s->rw);
  if (s->cw_up)
    kv_worker_stop_nowait(&s->cw);
  if (s->ew_up)
    kv_worker_stop_nowait(&s->ew);
  if (s->lw_up)
    kv_worker_stop_nowait(&s->lw);
  s->rw_up = s->cw_up = s->ew_up = s->lw_up = 0;
}

/* What a cuda worker said about the device in its HELLO (NULL for cpu). */
static json_t *hello_cuda(struct kv_worker *w) {
  return json_object_get(w->hello, "cuda");
}

int kv_gate_lock_device(const struct kv_surface *sf, const struct kv_gate_opts *o, json_t *hello,
                        const char *what, struct kv_devlock *l, char *err, size_t errlen) {
  double wait = o && o->lock_wait_s > 0 ? o->lock_wait_s : KV_DEVLOCK_WAIT_S;
  if (sf->device_in_worker)
    return kv_devlock_gpu(
        l, json_string_value(json_object_get(json_object_get(hello, "cuda"), "uuid")), what, wait,
        err, errlen);
  return kv_devlock_cpus(l, what, wait, err, errlen);
}

/* The compiler's log names the copy kevo built (candidate.c, candidate.cu:
 * the build and its log are cached by content, whatever the file was
 * called): name the user's file instead, where a diagnostic names it
 * ("candidate.c:21:10:", "candidate.cu(21):"). malloc'd; NULL when out of
 * memory (the log is then kept as it was). */
char *kv_gate_log_own_names(const char *log, const char *user_path) {
  const char *slash = user_path ? strrchr(user_path, '/') : NULL;
  const char *base = slash ? slash + 1 : user_path;
  if (!log || !base || !*base)
    return NULL;
  struct kv_buf b;
  kv_buf_init(&b, KV_LOG_CAP + 4096);
  const char *p = log;
  while (*p) {
    const char *hit = NULL;
    size_t n = 0;
    for (const char *q = strstr(p, "candidate.c"); q; q = strstr(q + 1, "candidate.c")) {
      size_t m = q[11] == 'u' ? 12 : 11;
      if ((q == log || q[-1] == '\n' || q[-1] == ' ' || q[-1] == '"' || q[-1] == '\'') &&
          (q[m] == ':' || q[m] == '(')) {
        hit = q;
        n = m;
        break;
      }
    }
    if (!hit) {
      kv_buf_append(&b, p, strlen(p));
      break;
    }
    kv_buf_append(&b, p, (size_t)(hit - p));
    kv_buf_append(&b, base, strlen(base));
    p = hit + n;
  }
  return kv_buf_detach(&b);
}

/* Starts a worker of the session's surface (on this thread: it dies with
 * it) and, in worker_ready, sends it the task. */
static int worker_spawn(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                        size_t errlen) {
  struct kv_worker_spec spec = {0};
  spec.worker_path = s->worker_path;
  spec.scratch_base = s->scratch;
  spec.read_paths[spec.nread++] = s->objdir;
  spec.sandbox = s->o->sandbox;
  spec.start_deadline_s = s->sf->worker_start_s;
  spec.surface = s->sf->worker_runtime;
  if (s->torch && w == &s->rw) {
    spec.python = s->tp.python;
    spec.script = s->tp.script;
    spec.rtlib = s->tp.rtlib;
    spec.torch_cache = s->cache;
  } else if (s->torch && s->sf->lang == KV_LANG_PYTHON) {
    /* The torch surface: the candidate's worker and kevo's empty entry's are
     * kevo_torch_cand.py, with its caches in its own scratch (no torch_cache:
     * a candidate never writes where a later process loads code from). */
    if (!s->tp.cand[0])
      return kv_error(err, errlen,
                      "kevo_torch_cand.py: not found beside %s nor in the source tree; rebuild "
                      "kevo or set KEVO_TORCH_CAND",
                      s->worker_path);
    spec.python = s->tp.python;
    spec.script = s->tp.cand;
    spec.rtlib = s->tp.rtlib;
  }
  if (s->sf->lang == KV_LANG_PYTHON) /* every torch worker on the surface's device */
    spec.surface = kv_torch_device();
  if (kv_worker_spawn(w, &spec, err, errlen) < 0)
    return -1;
  *up = 1;
  return 0;
}

/* Its HELLO, then the task. A cuda worker that cannot use the device is an
 * error: kevo cannot judge here. */
static int worker_ready(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                        size_t errlen) {
  if (kv_worker_hello(w, err, errlen) < 0) {
    *up = 0; /* stopped by kv_worker_hello */
    return -1;
  }
  if (s->sf->device_in_worker) {
    json_t *c = hello_cuda(w);
    if (!json_is_true(json_object_get(c, "ok"))) {
      const char *e = json_string_value(json_object_get(c, "error"));
      return kv_error(err, errlen, "--surface %s: %s", s->sf->name,
                      e ? e : "the worker cannot use the device (is kevo-worker up to date?)");
    }
  }
  /* The torch surface on the GPU (KEVO_TORCH_DEVICE=cuda): the reference's
   * torch worker says whether torch sees one; without it kevo cannot judge
   * (never the candidate's load_error). */
  if (s->sf->lang == KV_LANG_PYTHON && w == &s->rw && !strcmp(kv_torch_device(), "cuda") &&
      !json_is_true(json_object_get(hello_cuda(w), "ok"))) {
    const char *e = json_string_value(json_object_get(hello_cuda(w), "error"));
    return kv_error(err, errlen, "KEVO_TORCH_DEVICE=cuda: %s", e ? e : "torch sees no GPU");
  }
  json_t *rep = NULL;
  char d[1024];
  json_t *req = json_pack("{s:s}", "task", s->t->json);
  enum kv_call_status st = kv_worker_call(w, KV_MSG_INIT, req, 10, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st != KV_CALL_OK)
    return kv_error(err, errlen, "the worker could not take the task: %s", d);
  /* The torch surface's empty entry: kevo's empty ModelNew, loaded at once. */
  if (s->torch && s->sf->lang == KV_LANG_PYTHON && w == &s->ew)
    return kv_torch_load_empty(s, w, err, errlen);
  return 0;
}

/* Spawns a worker and readies it. A candidate worker kept warm (spawned by
 * an earlier evaluation) is only readied; if it cannot be, a fresh one is
 * spawned. */
static int worker_up(struct kv_session *s, struct kv_worker *w, int *up, char *err, size_t errlen) {
  int fresh = w == &s->cw && s->cw_fresh;
  if (fresh) {
    s->cw_fresh = 0;
    w->start_deadline = kv_now_s() + (s->sf->worker_start_s > 0 ? s->sf->worker_start_s : 10);
    if (worker_ready(s, w, up, err, errlen) == 0)
      return 0;
    if (*up)
      kv_worker_stop(w);
    *up = 0;
  }
  if (worker_spawn(s, w, up, err, errlen) < 0)
    return -1;
  return worker_ready(s, w, up, err, errlen);
}

int kv_session_worker_up(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                         size_t errlen) {
  return worker_up(s, w, up, err, errlen);
}

/* Loads `so` into a slot. A load failure is returned as 1 with the loader's
 * message in detail. */
static int session_load(struct kv_worker *w, int slot, const char *so, int candidate, char *detail,
                        size_t detlen) {
  json_t *rep = NULL;
  char d[1024];
  json_t *req = json_pack("{s:i,s:s,s:b}", "slot", slot, "path", so, "candidate", candidate);
  enum kv_call_status st = kv_worker_call(w, KV_MSG_LOAD, req, 30, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st == KV_CALL_OK)
    return 0;
  snprintf(detail, detlen, "%s", d);
  return 1;
}

int kv_session_load(struct kv_worker *w, int slot, const char *so, char *detail, size_t detlen) {
  return session_load(w, slot, so, 0, detail, detlen);
}

int kv_session_load_compiled(struct kv_worker *w, int slot, const char *path, const char *mode,
                             double deadline_s, double *compile_s, char *detail, size_t detlen) {
  json_t *rep = NULL;
  char d[1024];
  json_t *req =
      json_pack("{s:i,s:s,s:b,s:s}", "slot", slot, "path", path, "candidate", 0, "compile", mode);
  enum kv_call_status st =
      kv_worker_call(w, KV_MSG_LOAD, req, deadline_s, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  *compile_s = json_real_value(json_object_get(rep, "compile_s"));
  json_decref(rep);
  if (st == KV_CALL_OK)
    return 0;
  snprintf(detail, detlen, "%s", d);
  return 1;
}

/* Starts a worker, sends it the task and loads `so` into slot 0. */
int kv_session_start_worker(struct kv_session *s, struct kv_worker *w, int *up, const char *so,
                            char *detail, size_t detlen, char *err, size_t errlen) {
  if (worker_up(s, w, up, err, errlen) < 0)
    return -1;
  if (s->torch && s->sf->lang == KV_LANG_PYTHON && w == &s->cw)
    return kv_torch_load_candidate(s, w, so, detail, detlen);
  /* The candidate's worker locks itself before running it. */
  return session_load(w, 0, so, w == &s->cw, detail, detlen);
}

/* Runs the calls of one CHECK job; on success *blob holds ncalls x call_bytes. */
enum kv_call_status kv_run_check(struct kv_worker *w, int slot, const char *set, int index,
                                 const uint64_t *seeds, const int *poisons, int ncalls,
                                 int ret_inputs, size_t want, double deadline, uint8_t **blob,
                                 json_t **reply, char *detail, size_t detlen) {
  return kv_run_check_at(w, slot, set, index, NULL, NULL, seeds, poisons, ncalls, ret_inputs, want,
                         deadline, blob, reply, detail, detlen);
}

enum kv_call_status kv_run_check_at(struct kv_worker *w, int slot, const char *set, int index,
                                    const struct kv_task *t, const struct kv_sizeset *drawn,
                                    const uint64_t *seeds, const int *poisons, int ncalls,
                                    int ret_inputs, size_t want, double deadline, uint8_t **blob,
                                    json_t **reply, char *detail, size_t detlen) {
  json_t *calls = json_array();
  for (int c = 0; c < ncalls; c++)
    json_array_append_new(
        calls, json_pack("{s:I,s:i}", "seed", (json_int_t)seeds[c], "poison", poisons[c]));
  json_t *req = json_pack("{s:i,s:s,s:i,s:o,s:b}", "slot", slot, "set", set, "index", index,
                          "calls", calls, "return_inputs", ret_inputs);
  if (t)
    kv_request_sizes(t, drawn, req);
  json_t *rep = NULL;
  enum kv_call_status st =
      kv_worker_call(w, KV_MSG_CHECK, req, deadline, &rep, blob, want, detail, detlen);
  json_decref(req);
  if (reply)
    *reply = rep;
  else
    json_decref(rep);
  return st;
}

/* Judges one call of the candidate against the reference. */
/* The indices of smp's sample of param p, or NULL (whole; *fail set when
 * out of memory). */
static int64_t *sample_idx(const struct kv_sample_of *smp, int p, int64_t n, int *fail) {
  if (!smp || n >= smp->whole[p])
    return NULL;
  int64_t *idx = malloc((size_t)n * sizeof *idx);
  if (idx)
    kv_sample_indices(smp->seed, p, smp->whole[p], idx);
  else
    *fail = 1;
  return idx;
}

void kv_judge_call(const struct kv_task *t, const struct kv_sizeset *ss, const uint8_t *exp,
                   const uint8_t *got, const uint8_t *got_in, const uint8_t *want_in,
                   const int64_t *nelem, uint64_t seed, int poison, const struct kv_sample_of *smp,
                   struct kv_cmp *res) {
  memset(res, 0, sizeof(*res));
  res->verdict = KV_V_OK;
  size_t off = 0;
  int oom = 0;
  for (int p = 0; p < t->nparams && !oom; p++) {
    if (!kv_is_output(t->params[p].role))
      continue;
    struct kv_cmp c;
    int64_t *idx = sample_idx(smp, p, nelem[p], &oom);
    kv_compare_at(t, ss, p, exp + off, got + off, nelem[p],
                  t->params[p].role == KV_ROLE_OUT ? poison : -1, idx,
                  idx ? smp->whole[p] : nelem[p], &c);
    free(idx);
    if (c.max_abs > res->max_abs)
      res->max_abs = c.max_abs;
    if (c.max_rel > res->max_rel)
      res->max_rel = c.max_rel;
    if (c.verdict < res->verdict) {
      res->verdict = c.verdict;
      res->first_bad = c.first_bad;
      snprintf(res->detail, sizeof res->detail, "%s", c.detail);
    }
    off += kv_param_bytes(t, p, nelem);
  }
  if (res->verdict != KV_V_OK || !got_in || oom)
    return;
  /* The inputs after the call must be what the worker was given. */
  size_t ioff = 0;
  for (int p = 0; p < t->nparams; p++) {
    if (t->params[p].role != KV_ROLE_IN)
      continue;
    size_t b = kv_param_bytes(t, p, nelem);
    /* What it was given: the reference worker's copy, else regenerated. */
    uint8_t *regen = want_in ? NULL : malloc(b ? b : 1);
    int64_t *idx = sample_idx(smp, p, nelem[p], &oom);
    if ((!want_in && !regen) || oom) {
      free(regen);
      free(idx);
      return;
    }
    if (regen) { /* on threads: a check regenerates its inputs for each call */
      void *one[KV_MAX_PARAMS] = {0};
      one[p] = regen;
      kv_fill_inputs_mt(t, nelem, one, seed, kv_fill_threads());
    }
    int changed = kv_input_changed(t, ss, p, want_in ? want_in + ioff : regen, got_in + ioff,
                                   nelem[p], idx, res->detail, sizeof res->detail);
    free(regen);
    free(idx);
    if (changed) {
      res->verdict = KV_V_INPUT_MUTATED;
      return;
    }
    ioff += b;
  }
}

int kv_input_changed(const struct kv_task *t, const struct kv_sizeset *ss, int p,
                     const uint8_t *want, const uint8_t *got, int64_t n, const int64_t *idx,
                     char *detail, size_t cap) {
  size_t sz = kv_dtype_size(t->params[p].dtype);
  if (!memcmp(want, got, (size_t)n * sz))
    return 0;
  int64_t i = 0;
  while (i < n && !memcmp(want + (size_t)i * sz, got + (size_t)i * sz, sz))
    i++;
  char where[160];
  kv_format_index(t, ss, p, idx ? idx[i] : i, where, sizeof where);
  snprintf(detail, cap, "input %s was modified: it held %.9g before the call and %.9g after", where,
           kv_elem_as_double(t->params[p].dtype, want, (size_t)i),
           kv_elem_as_double(t->params[p].dtype, got, (size_t)i));
  return 1;
}

json_t *kv_session_hello_cuda(struct kv_worker *w) {
  return hello_cuda(w);
}

int kv_session_worker_spawn(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                            size_t errlen) {
  return worker_spawn(s, w, up, err, errlen);
}

int kv_session_worker_ready(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                            size_t errlen) {
  return worker_ready(s, w, up, err, errlen);
}

int kv_session_load_slot(struct kv_worker *w, int slot, const char *so, int candidate, char *detail,
                         size_t detlen) {
  return session_load(w, slot, so, candidate, detail, detlen);
}
