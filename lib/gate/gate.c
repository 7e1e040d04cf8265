/* kv_gate_eval: compile, check, time, decide. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/runtime.h"
#include "kevo/wire.h"

#define IMPLAUSIBLE_FACTOR 2.0

static const char *verdict_names[KV_V_COUNT] = {"policy_violation",
                                                "compile_error",
                                                "load_error",
                                                "crash",
                                                "timeout",
                                                "unwritten_output",
                                                "wrong_output",
                                                "input_mutated",
                                                "stale_output",
                                                "implausible",
                                                "ok"};

const char *kv_verdict_name(enum kv_verdict v) {
  return (unsigned)v < KV_V_COUNT ? verdict_names[v] : "unknown";
}

int kv_verdict_from_name(const char *name) {
  for (int i = 0; i < KV_V_COUNT; i++)
    if (name && !strcmp(name, verdict_names[i]))
      return i;
  return -1;
}

void kv_gate_opts_default(struct kv_gate_opts *o) {
  memset(o, 0, sizeof(*o));
  o->surface = "cpu";
  o->seed = 0;
  o->nseeds = 2;
  o->timing = 1;
  o->job_deadline_s = 10;
  o->compile_deadline_s = 60;
  o->time_budget_s = 1.0;
  o->sandbox = 1;
}

/* Everything one evaluation holds. */
struct session {
  const struct kv_task *t;
  const struct kv_gate_opts *o;
  char cache[PATH_MAX];
  char objdir[PATH_MAX + 8];
  char scratch[PATH_MAX + 16];
  char worker_path[PATH_MAX];
  struct kv_worker rw, cw; /* reference worker, candidate worker */
  int rw_up, cw_up;
};

static int session_init(struct session *s, const struct kv_task *t, const struct kv_gate_opts *o,
                        char *err, size_t errlen) {
  memset(s, 0, sizeof(*s));
  s->t = t;
  s->o = o;
  signal(SIGPIPE, SIG_IGN); /* a dying worker must not take kevo with it */
  if (o->surface && strcmp(o->surface, "cpu") != 0)
    return kv_error(err, errlen,
                    "--surface %s: this build judges the cpu surface only; use --surface cpu",
                    o->surface);
  if (o->cache_dir)
    snprintf(s->cache, sizeof s->cache, "%s", o->cache_dir);
  else if (kv_cache_dir(s->cache, sizeof s->cache) < 0)
    return kv_error(err, errlen, "cannot find a cache directory; set KEVO_CACHE_DIR");
  snprintf(s->objdir, sizeof s->objdir, "%s/obj", s->cache);
  snprintf(s->scratch, sizeof s->scratch, "%s/scratch", s->cache);
  if (kv_mkdirs(s->objdir, 0700, err, errlen) < 0 || kv_mkdirs(s->scratch, 0700, err, errlen) < 0)
    return -1;
  const char *wp = o->worker_path ? o->worker_path : getenv("KEVO_WORKER");
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

static void session_release(struct session *s) {
  if (s->rw_up)
    kv_worker_stop(&s->rw);
  if (s->cw_up)
    kv_worker_stop(&s->cw);
  s->rw_up = s->cw_up = 0;
}

/* Starts a worker, sends it the task and loads `so` into slot 0. A load
 * failure is returned as 1 with the loader's message in detail. */
static int start_worker(struct session *s, struct kv_worker *w, int *up, const char *so,
                        char *detail, size_t detlen, char *err, size_t errlen) {
  struct kv_worker_spec spec = {0};
  spec.worker_path = s->worker_path;
  spec.scratch_base = s->scratch;
  spec.read_paths[spec.nread++] = s->objdir;
  spec.sandbox = s->o->sandbox;
  spec.start_deadline_s = 10;
  if (kv_worker_start(w, &spec, err, errlen) < 0)
    return -1;
  *up = 1;
  json_t *rep = NULL;
  char d[1024];
  json_t *req = json_pack("{s:s}", "task", s->t->json);
  enum kv_call_status st = kv_worker_call(w, KV_MSG_INIT, req, 10, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st != KV_CALL_OK)
    return kv_error(err, errlen, "the worker could not take the task: %s", d);
  req = json_pack("{s:i,s:s}", "slot", 0, "path", so);
  st = kv_worker_call(w, KV_MSG_LOAD, req, 30, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st == KV_CALL_OK)
    return 0;
  snprintf(detail, detlen, "%s", d);
  return 1;
}

static size_t call_bytes(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS], int inputs) {
  size_t n = 0;
  for (int p = 0; p < t->nparams; p++)
    if (kv_is_output(t->params[p].role) || (inputs && t->params[p].role == KV_ROLE_IN))
      n += kv_param_bytes(t, p, nelem);
  return n;
}

/* Runs the calls of one CHECK job; on success *blob holds ncalls x call_bytes. */
static enum kv_call_status run_check(struct kv_worker *w, int slot, const char *set, int index,
                                     const uint64_t *seeds, const int *poisons,
                                     const int64_t *perturb, int ncalls, int ret_inputs,
                                     size_t want, double deadline, uint8_t **blob, json_t **reply,
                                     char *detail, size_t detlen) {
  json_t *calls = json_array();
  for (int c = 0; c < ncalls; c++)
    json_array_append_new(calls, json_pack("{s:I,s:i,s:I}", "seed", (json_int_t)seeds[c], "poison",
                                           poisons[c], "perturb",
                                           (json_int_t)(perturb ? perturb[c] : -1)));
  json_t *req = json_pack("{s:i,s:s,s:i,s:o,s:b}", "slot", slot, "set", set, "index", index,
                          "calls", calls, "return_inputs", ret_inputs);
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

static void tail_of(const struct kv_buf *b, char *out, size_t cap) {
  out[0] = 0;
  if (!b->data || !b->len)
    return;
  size_t n = b->len < 200 ? b->len : 200;
  snprintf(out, cap, "; its last output: %.*s", (int)n, b->data + b->len - n);
  for (char *p = out; *p; p++)
    if (*p == '\n' || *p == '\r')
      *p = ' ';
}

/* Judges one call of the candidate against the reference. */
static void judge_call(const struct kv_task *t, const struct kv_sizeset *ss, const uint8_t *exp,
                       const uint8_t *got, const uint8_t *got_in, const int64_t *nelem,
                       uint64_t seed, int poison, struct kv_cmp *res) {
  memset(res, 0, sizeof(*res));
  res->verdict = KV_V_OK;
  size_t off = 0;
  for (int p = 0; p < t->nparams; p++) {
    if (!kv_is_output(t->params[p].role))
      continue;
    struct kv_cmp c;
    kv_compare(t, ss, p, exp + off, got + off, nelem[p],
               t->params[p].role == KV_ROLE_OUT ? poison : -1, &c);
    if (c.max_abs > res->max_abs)
      res->max_abs = c.max_abs;
    if (c.max_rel > res->max_rel)
      res->max_rel = c.max_rel;
    if (c.verdict < res->verdict) {
      res->verdict = c.verdict;
      snprintf(res->detail, sizeof res->detail, "%s", c.detail);
    }
    off += kv_param_bytes(t, p, nelem);
  }
  if (res->verdict != KV_V_OK || !got_in)
    return;
  /* The inputs after the call must be what the worker was given. */
  size_t ioff = 0;
  for (int p = 0; p < t->nparams; p++) {
    if (t->params[p].role != KV_ROLE_IN)
      continue;
    size_t b = kv_param_bytes(t, p, nelem);
    uint8_t *want = malloc(b ? b : 1);
    if (!want)
      return;
    kv_fill_param(t, p, nelem[p], want, seed);
    if (memcmp(want, got_in + ioff, b) != 0) {
      size_t sz = kv_dtype_size(t->params[p].dtype);
      int64_t i = 0;
      while (i < nelem[p] && !memcmp(want + (size_t)i * sz, got_in + ioff + (size_t)i * sz, sz))
        i++;
      char where[160];
      kv_format_index(t, ss, p, i, where, sizeof where);
      res->verdict = KV_V_INPUT_MUTATED;
      snprintf(res->detail, sizeof res->detail,
               "input %s was modified: it held %.9g before the call and %.9g after", where,
               kv_elem_as_double(t->params[p].dtype, want, (size_t)i),
               kv_elem_as_double(t->params[p].dtype, got_in + ioff, (size_t)i));
      free(want);
      return;
    }
    free(want);
    ioff += b;
  }
}

static void set_verdict(struct kv_gate_result *r, enum kv_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_verdict(struct kv_gate_result *r, enum kv_verdict v, const char *fmt, ...) {
  r->verdict = v;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q) {
  if (n <= 0)
    return 0;
  double pos = q * (n - 1);
  int lo = (int)pos;
  int hi = lo + 1 < n ? lo + 1 : lo;
  double f = pos - lo;
  return sorted[lo] * (1 - f) + sorted[hi] * f;
}

static void stats_of(json_t *arr, struct kv_stats *st, double *sum_s) {
  memset(st, 0, sizeof(*st));
  int n = (int)json_array_size(arr);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  double sum = 0;
  for (int i = 0; i < n; i++) {
    v[i] = (double)json_integer_value(json_array_get(arr, (size_t)i)) / 1000.0;
    sum += v[i];
  }
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  st->n = n;
  if (n) {
    st->median_us = quantile(v, n, 0.5);
    st->iqr_us = quantile(v, n, 0.75) - quantile(v, n, 0.25);
    st->min_us = v[0];
    st->mean_us = sum / n;
    double var = 0;
    for (int i = 0; i < n; i++)
      var += (v[i] - st->mean_us) * (v[i] - st->mean_us);
    st->cv = n > 1 && st->mean_us > 0 ? sqrt(var / (n - 1)) / st->mean_us : 0;
  }
  *sum_s = sum * 1e-6;
  free(v);
}

static int valid_ns_array(json_t *a, int max) {
  if (!json_is_array(a) || json_array_size(a) < 1 || (int)json_array_size(a) > max)
    return 0;
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *x = json_array_get(a, i);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
      return 0;
  }
  return 1;
}

/* Timing on bench[0]; may change the verdict (stale_output, implausible). */
static int time_candidate(struct session *s, const char *ref_so, struct kv_gate_result *r,
                          uint64_t base, char *err, size_t errlen) {
  const struct kv_task *t = s->t;
  const struct kv_sizeset *ss = &t->bench[0];
  kv_sizeset_format(t, ss, r->timing.sizes, sizeof r->timing.sizes);
  int64_t nelem[KV_MAX_PARAMS];
  if (kv_layout(t, ss, nelem, err, errlen) < 0)
    return -1;
  char d[1024];
  json_t *rep = NULL;
  json_t *req = json_pack("{s:i,s:s}", "slot", 1, "path", ref_so);
  enum kv_call_status st = kv_worker_call(&s->cw, KV_MSG_LOAD, req, 30, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  json_decref(rep);
  if (st != KV_CALL_OK) {
    set_verdict(r, KV_V_CRASH, "the worker failed while loading the reference for timing: %s", d);
    return 0;
  }
  size_t llc = kv_llc_bytes();
  uint64_t tseed = base + 0x7133;
  int max_iters = 1000;
  double budget = s->o->time_budget_s > 0 ? s->o->time_budget_s : 1.0;
  req = json_pack("{s:s,s:i,s:I,s:i,s:i,s:i,s:f,s:I}", "set", "bench", "index", 0, "seed",
                  (json_int_t)tseed, "nsets", 2, "min_iters", 5, "max_iters", max_iters, "budget_s",
                  budget, "flush_bytes", (json_int_t)(2 * llc));
  size_t out_bytes = call_bytes(t, nelem, 0);
  uint8_t *blob = NULL;
  double deadline = s->o->job_deadline_s * 6 + budget * 20;
  uint64_t sent = kv_now_ns();
  st = kv_worker_call(&s->cw, KV_MSG_TIME, req, deadline, &rep, &blob, out_bytes, d, sizeof d);
  uint64_t recv = kv_now_ns();
  json_decref(req);
  char tail[300];
  if (st == KV_CALL_TIMEOUT) {
    set_verdict(r, KV_V_TIMEOUT, "timing at %s: %s", r->timing.sizes, d);
    return 0;
  }
  if (st != KV_CALL_OK) {
    tail_of(&s->cw.err, tail, sizeof tail);
    set_verdict(r, KV_V_CRASH, "timing at %s: %s%s", r->timing.sizes, d, tail);
    json_decref(rep);
    return 0;
  }
  json_t *jc = json_object_get(rep, "cand_ns"), *jr = json_object_get(rep, "ref_ns");
  json_int_t last_iter = json_integer_value(json_object_get(rep, "last_iter"));
  json_int_t last_set = json_integer_value(json_object_get(rep, "last_set"));
  uint64_t tb = (uint64_t)json_integer_value(json_object_get(rep, "t_begin"));
  uint64_t te = (uint64_t)json_integer_value(json_object_get(rep, "t_end"));
  if (!valid_ns_array(jc, max_iters) || !valid_ns_array(jr, max_iters) ||
      json_array_size(jc) != json_array_size(jr) ||
      last_iter != (json_int_t)json_array_size(jc) - 1 || last_set < 0 || last_set > 1) {
    set_verdict(r, KV_V_CRASH, "timing at %s: the worker's report is malformed", r->timing.sizes);
    json_decref(rep);
    free(blob);
    return 0;
  }
  double cand_sum, ref_sum;
  stats_of(jc, &r->timing.cand, &cand_sum);
  stats_of(jr, &r->timing.ref, &ref_sum);
  json_decref(rep);
  r->timed = 1;
  r->timing.wall_s = (double)(recv - sent) * 1e-9;
  r->timing.covered_s = te > tb ? (double)(te - tb) * 1e-9 : 0;
  r->timing.speedup =
      r->timing.cand.median_us > 0 ? r->timing.ref.median_us / r->timing.cand.median_us : 0;

  /* The last timed output must be the reference's answer for the same inputs. */
  uint64_t vseed = tseed + (uint64_t)last_set;
  int poison = (int)(last_iter & 1);
  int64_t pert = last_iter;
  uint8_t *exp = NULL;
  st = run_check(&s->rw, 0, "bench", 0, &vseed, &poison, &pert, 1, 0, out_bytes,
                 s->o->job_deadline_s * 6, &exp, NULL, d, sizeof d);
  if (st != KV_CALL_OK) {
    free(blob);
    return kv_error(err, errlen, "the reference failed on the bench size: %s", d);
  }
  struct kv_cmp c;
  judge_call(t, ss, exp, blob, NULL, nelem, vseed, poison, &c);
  free(exp);
  free(blob);
  if (c.verdict != KV_V_OK) {
    set_verdict(r, KV_V_STALE_OUTPUT,
                "the output of the last timed call (inputs perturbed at iteration %lld) is not the "
                "reference's answer for the same inputs, so results were cached across calls or "
                "left unfinished: %s",
                (long long)last_iter, c.detail);
    return 0;
  }
  /* The parent's clock must contain the worker's: reported times cannot
   * claim more than the wall time, nor lie outside it. */
  if (tb + 2000000 < sent || te > recv + 2000000 || cand_sum + ref_sum > r->timing.wall_s * 1.02) {
    set_verdict(r, KV_V_IMPLAUSIBLE,
                "the worker's reported times (%.3f s of calls, %.3f s covered) do not fit in the "
                "%.3f s the parent measured around the job",
                cand_sum + ref_sum, r->timing.covered_s, r->timing.wall_s);
    return 0;
  }
  /* Roofline against this device's measured ceilings. */
  char e2[256];
  int64_t v;
  if (t->cost_bytes && kv_expr_eval(t, ss, t->cost_bytes, &v, e2, sizeof e2) == 0)
    r->timing.bytes = (double)v;
  if (t->cost_flops && kv_expr_eval(t, ss, t->cost_flops, &v, e2, sizeof e2) == 0)
    r->timing.flops = (double)v;
  double sec = r->timing.cand.median_us * 1e-6;
  if (sec > 0) {
    r->timing.gbs = r->timing.bytes / sec / 1e9;
    r->timing.gflops = r->timing.flops / sec / 1e9;
  }
  const struct kv_calib *cal = s->o->calib;
  if (cal && sec > 0 && cal->bandwidth_gbs > 0 && cal->fma_gflops > 0) {
    double fb = r->timing.gbs / cal->bandwidth_gbs, ff = r->timing.gflops / cal->fma_gflops;
    r->timing.roofline = fb > ff ? fb : ff;
    if (fb > IMPLAUSIBLE_FACTOR)
      set_verdict(r, KV_V_IMPLAUSIBLE,
                  "achieved %.1f GB/s is %.1fx this device's measured %.1f GB/s: the candidate "
                  "cannot have done the work it claims",
                  r->timing.gbs, fb, cal->bandwidth_gbs);
    else if (ff > IMPLAUSIBLE_FACTOR)
      set_verdict(r, KV_V_IMPLAUSIBLE,
                  "achieved %.1f GFLOP/s is %.1fx this device's measured FP32 peak of %.1f "
                  "GFLOP/s: the candidate cannot have done the work it claims",
                  r->timing.gflops, ff, cal->fma_gflops);
  }
  return 0;
}

int kv_gate_eval(const struct kv_task *t, const char *candidate_path, const struct kv_gate_opts *o,
                 struct kv_gate_result *r, char *err, size_t errlen) {
  memset(r, 0, sizeof(*r));
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  snprintf(r->surface, sizeof r->surface, "%s", o->surface ? o->surface : "cpu");
  if (o->calib)
    snprintf(r->device, sizeof r->device, "%s", o->calib->device);
  else
    kv_calib_cpu_device(r->device, sizeof r->device);
  struct session s;
  if (session_init(&s, t, o, err, errlen) < 0)
    return -1;
  int rc = -1;
  struct kv_build ref = {0}, cand = {0};
  char refsrc[PATH_MAX];
  snprintf(refsrc, sizeof refsrc, "%s/reference.c", t->dir && *t->dir ? t->dir : ".");

  /* The candidate must be readable before anything else happens. */
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(candidate_path, 1 << 20, &text, &len, err, errlen) < 0)
    goto out;
  kv_sha256_hex(text, len, r->source_hash);
  free(text);

  double t0 = kv_now_s();
  if (kv_build_c(t, refsrc, s.cache, o->compile_deadline_s, &ref, err, errlen) < 0)
    goto out;
  if (!ref.ok) {
    kv_error(err, errlen, "%s: the reference does not compile; run 'kevo task check %s':\n%s",
             refsrc, t->dir, ref.log ? ref.log : "");
    goto out;
  }
  if (kv_build_c(t, candidate_path, s.cache, o->compile_deadline_s, &cand, err, errlen) < 0)
    goto out;
  r->compile_s = kv_now_s() - t0;
  r->compile_cached = cand.cached;
  r->compile_log = cand.log;
  cand.log = NULL;
  if (!cand.ok) {
    /* The first error line makes the detail; the whole log is kept. */
    const char *log = r->compile_log ? r->compile_log : "";
    const char *e = strstr(log, "error");
    const char *ls = e;
    while (ls && ls > log && ls[-1] != '\n')
      ls--;
    set_verdict(r, KV_V_COMPILE_ERROR, "%.*s", ls ? (int)strcspn(ls, "\n") : 200, ls ? ls : log);
    rc = 0;
    goto out;
  }
  char bad[512];
  int nbad = kv_policy_check(cand.so_path, t, bad, sizeof bad, err, errlen);
  if (nbad < 0)
    goto out;
  if (nbad > 0) {
    set_verdict(r, KV_V_POLICY_VIOLATION,
                "the candidate calls %s, which kernels may not use (processes, sockets, "
                "signals, dynamic loading)",
                bad);
    rc = 0;
    goto out;
  }

  /* Correctness: every check size x seeds, two calls each at the same
   * addresses (the second with new contents), reference in its own worker. */
  double t1 = kv_now_s();
  char detail[1024];
  int lr = start_worker(&s, &s.rw, &s.rw_up, ref.so_path, detail, sizeof detail, err, errlen);
  if (lr != 0) {
    if (lr > 0)
      kv_error(err, errlen, "%s: the reference does not load: %s", refsrc, detail);
    goto out;
  }
  lr = start_worker(&s, &s.cw, &s.cw_up, cand.so_path, detail, sizeof detail, err, errlen);
  if (lr < 0)
    goto out;
  kv_sandbox_status_from_hello(s.cw.hello, &r->sandbox);
  if (lr > 0) {
    const char *why = strstr(detail, "undefined symbol");
    set_verdict(r, KV_V_LOAD_ERROR, "the candidate does not load: %s%s", detail,
                why ? " (is the entry function defined, with that exact name?)" : "");
    rc = 0;
    goto out;
  }
  uint64_t base = o->seed ? o->seed : kv_random_u64() >> 8;
  enum kv_verdict worst = KV_V_OK;
  int nseeds = o->nseeds >= 2 ? o->nseeds : 2;
  for (int i = 0; i < t->ncheck && worst != KV_V_CRASH && worst != KV_V_TIMEOUT; i++) {
    const struct kv_sizeset *ss = &t->check[i];
    int64_t nelem[KV_MAX_PARAMS];
    if (kv_layout(t, ss, nelem, err, errlen) < 0)
      goto out;
    size_t ob = call_bytes(t, nelem, 0), cb = call_bytes(t, nelem, 1);
    for (int j = 0; j < nseeds && worst != KV_V_CRASH && worst != KV_V_TIMEOUT; j++) {
      if (r->nchecks >= KV_GATE_MAX_CHECKS)
        break;
      struct kv_check *ck = &r->checks[r->nchecks++];
      kv_sizeset_format(t, ss, ck->sizes, sizeof ck->sizes);
      uint64_t seeds[2] = {base + (uint64_t)i * 1000 + (uint64_t)j * 2,
                           base + (uint64_t)i * 1000 + (uint64_t)j * 2 + 1};
      int poisons[2] = {0, 1};
      ck->seed = seeds[0];
      uint8_t *exp = NULL, *got = NULL;
      char d[1024];
      enum kv_call_status st = run_check(&s.rw, 0, "check", i, seeds, poisons, NULL, 2, 0, 2 * ob,
                                         o->job_deadline_s, &exp, NULL, d, sizeof d);
      if (st != KV_CALL_OK) {
        kv_error(err, errlen, "%s: the reference failed at %s: %s; run 'kevo task check %s'",
                 refsrc, ck->sizes, d, t->dir);
        goto out;
      }
      if (!s.cw_up || !s.cw.alive) {
        /* Replace a dead worker. */
        if (s.cw_up)
          kv_worker_stop(&s.cw);
        s.cw_up = 0;
        if (start_worker(&s, &s.cw, &s.cw_up, cand.so_path, d, sizeof d, err, errlen) != 0) {
          free(exp);
          goto out;
        }
      }
      st = run_check(&s.cw, 0, "check", i, seeds, poisons, NULL, 2, 1, 2 * cb, o->job_deadline_s,
                     &got, NULL, d, sizeof d);
      char tail[300], sizes[256];
      snprintf(sizes, sizeof sizes, "%s", ck->sizes);
      if (st == KV_CALL_TIMEOUT) {
        ck->verdict = KV_V_TIMEOUT;
        snprintf(ck->detail, sizeof ck->detail, "at %s: %s", sizes, d);
      } else if (st != KV_CALL_OK) {
        tail_of(&s.cw.err, tail, sizeof tail);
        ck->verdict = KV_V_CRASH;
        snprintf(ck->detail, sizeof ck->detail, "at %s: %s%s", sizes, d, tail);
      } else {
        struct kv_cmp c1, c2;
        judge_call(t, ss, exp, got, got + ob, nelem, seeds[0], 0, &c1);
        judge_call(t, ss, exp + ob, got + cb, got + cb + ob, nelem, seeds[1], 1, &c2);
        ck->max_abs_err = fmax(c1.max_abs, c2.max_abs);
        ck->max_rel_err = fmax(c1.max_rel, c2.max_rel);
        if (c1.verdict != KV_V_OK) {
          ck->verdict = c1.verdict;
          snprintf(ck->detail, sizeof ck->detail, "at %s: %s", sizes, c1.detail);
        } else if (c2.verdict != KV_V_OK) {
          /* The first call was right: is the second a replay of it? */
          int replay = memcmp(got, got + cb, ob) == 0 && memcmp(exp, exp + ob, ob) != 0;
          ck->verdict = replay ? KV_V_STALE_OUTPUT : c2.verdict;
          snprintf(ck->detail, sizeof ck->detail,
                   "at %s, second call at the same addresses with "
                   "new contents: %s%s",
                   sizes,
                   replay ? "returned the first call's results "
                            "(cached by address?); "
                          : "",
                   c2.detail);
        } else {
          ck->verdict = KV_V_OK;
          snprintf(ck->detail, sizeof ck->detail, "max |diff| %.3g", ck->max_abs_err);
        }
      }
      free(exp);
      free(got);
      if (ck->verdict < worst) {
        worst = ck->verdict;
        set_verdict(r, worst, "%s", ck->detail);
      }
    }
  }
  r->check_s = kv_now_s() - t1;
  if (worst != KV_V_OK) {
    rc = 0;
    goto out;
  }
  set_verdict(r, KV_V_OK, "passed %d checks", r->nchecks);
  if (o->timing && t->nbench > 0) {
    double t2 = kv_now_s();
    if (!s.cw.alive) {
      set_verdict(r, KV_V_CRASH, "the worker died after the checks: %s", s.cw.death);
    } else if (time_candidate(&s, ref.so_path, r, base, err, errlen) < 0) {
      goto out;
    }
    r->time_s = kv_now_s() - t2;
    if (r->verdict == KV_V_OK && r->timed)
      set_verdict(r, KV_V_OK, "passed %d checks; %.2fx the reference at %s", r->nchecks,
                  r->timing.speedup, r->timing.sizes);
  }
  rc = 0;
out:
  if (s.cw_up) {
    r->cand_stdout = s.cw.out.data ? strdup(s.cw.out.data) : NULL;
    r->cand_stderr = s.cw.err.data ? strdup(s.cw.err.data) : NULL;
    r->stdout_truncated = s.cw.out.truncated;
    r->stderr_truncated = s.cw.err.truncated;
  }
  session_release(&s);
  kv_build_release(&ref);
  kv_build_release(&cand);
  return rc;
}

void kv_gate_result_release(struct kv_gate_result *r) {
  free(r->compile_log);
  free(r->cand_stdout);
  free(r->cand_stderr);
  r->compile_log = r->cand_stdout = r->cand_stderr = NULL;
}

/* A JSON string even for bytes that are not UTF-8 (candidate output). */
static json_t *safe_string(const char *s) {
  json_t *j = json_string(s ? s : "");
  if (j)
    return j;
  size_t n = strlen(s);
  char *c = malloc(n + 1);
  if (!c)
    return json_string("");
  for (size_t i = 0; i < n; i++)
    c[i] = ((unsigned char)s[i] < 0x80) ? s[i] : '?';
  c[n] = 0;
  j = json_string(c);
  free(c);
  return j ? j : json_string("");
}

static json_t *stats_json(const struct kv_stats *s) {
  return json_pack("{s:i,s:f,s:f,s:f,s:f,s:f}", "n", s->n, "median_us", s->median_us, "iqr_us",
                   s->iqr_us, "cv", s->cv, "min_us", s->min_us, "mean_us", s->mean_us);
}

char *kv_gate_result_json(const struct kv_gate_result *r) {
  json_t *j = json_object();
  json_object_set_new(j, "verdict", json_string(kv_verdict_name(r->verdict)));
  json_object_set_new(j, "accepted", json_boolean(r->verdict == KV_V_OK));
  json_object_set_new(j, "detail", safe_string(r->detail));
  json_object_set_new(j, "surface", json_string(r->surface));
  json_object_set_new(j, "device", json_string(r->device));
  json_object_set_new(j, "source_sha256", json_string(r->source_hash));
  json_object_set_new(j, "compile",
                      json_pack("{s:f,s:b,s:o}", "seconds", r->compile_s, "cached",
                                r->compile_cached, "log", safe_string(r->compile_log)));
  json_t *checks = json_array();
  for (int i = 0; i < r->nchecks; i++) {
    const struct kv_check *c = &r->checks[i];
    json_array_append_new(
        checks, json_pack("{s:s,s:I,s:s,s:s,s:f,s:f}", "sizes", c->sizes, "seed",
                          (json_int_t)c->seed, "verdict", kv_verdict_name(c->verdict), "detail",
                          c->detail, "max_abs_err", c->max_abs_err, "max_rel_err", c->max_rel_err));
  }
  json_object_set_new(j, "checks", checks);
  json_object_set_new(j, "seconds",
                      json_pack("{s:f,s:f,s:f}", "compile", r->compile_s, "check", r->check_s,
                                "timing", r->time_s));
  if (r->timed) {
    const struct kv_timing *t = &r->timing;
    json_t *tj = json_pack(
        "{s:s,s:f,s:f,s:f,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "sizes", t->sizes, "median_us",
        t->cand.median_us, "reference_median_us", t->ref.median_us, "speedup", t->speedup,
        "candidate", stats_json(&t->cand), "reference", stats_json(&t->ref), "bytes", t->bytes,
        "flops", t->flops, "gbs", t->gbs, "gflops", t->gflops, "roofline_fraction", t->roofline,
        "wall_s", t->wall_s, "covered_s", t->covered_s);
    json_object_set_new(j, "timing", tj);
  }
  json_object_set_new(j, "stdout", safe_string(r->cand_stdout));
  json_object_set_new(j, "stderr", safe_string(r->cand_stderr));
  json_object_set_new(j, "stdout_truncated", json_boolean(r->stdout_truncated));
  json_object_set_new(j, "stderr_truncated", json_boolean(r->stderr_truncated));
  const struct kv_sandbox_status *sb = &r->sandbox;
  json_object_set_new(
      j, "sandbox",
      json_pack("{s:s,s:s,s:s,s:s,s:s,s:i}", "no_new_privs", kv_layer_state_name(sb->no_new_privs),
                "netns", kv_layer_state_name(sb->netns), "landlock",
                kv_layer_state_name(sb->landlock), "seccomp", kv_layer_state_name(sb->seccomp),
                "rlimits", kv_layer_state_name(sb->rlimits), "landlock_abi", sb->landlock_abi));
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
  json_decref(j);
  return s;
}

int kv_gate_probe(const struct kv_gate_opts *o, struct kv_probe *p, char *err, size_t errlen) {
  memset(p, 0, sizeof(*p));
  struct kv_gate_opts defaults;
  if (!o) {
    kv_gate_opts_default(&defaults);
    o = &defaults;
  }
  struct session s;
  struct kv_task dummy = {0};
  if (session_init(&s, &dummy, o, err, errlen) < 0)
    return -1;
  snprintf(p->worker_path, sizeof p->worker_path, "%s", s.worker_path);
  struct kv_worker_spec spec = {0};
  spec.worker_path = s.worker_path;
  spec.scratch_base = s.scratch;
  spec.read_paths[spec.nread++] = s.objdir;
  spec.sandbox = o->sandbox;
  spec.start_deadline_s = 10;
  if (kv_worker_start(&s.cw, &spec, err, errlen) < 0)
    return -1;
  s.cw_up = 1;
  kv_sandbox_status_from_hello(s.cw.hello, &p->layers);
  json_t *req = json_object(), *rep = NULL;
  char d[512];
  enum kv_call_status st = kv_worker_call(&s.cw, KV_MSG_PROBE, req, 10, &rep, NULL, 0, d, sizeof d);
  json_decref(req);
  if (st != KV_CALL_OK) {
    /* A worker that could execve /bin/true is gone: that is a finding too. */
    snprintf(p->name[0], sizeof p->name[0], "execve");
    p->blocked[0] = 0;
    p->nprobes = 1;
    json_decref(rep);
    session_release(&s);
    return 0;
  }
  const char *key;
  json_t *v;
  json_object_foreach(rep, key, v) {
    if (json_is_string(v) && p->nprobes < KV_PROBE_MAX) {
      snprintf(p->name[p->nprobes], sizeof p->name[0], "%s", key);
      p->blocked[p->nprobes++] = !strcmp(json_string_value(v), "blocked");
    } else if (!strcmp(key, "env_vars")) {
      p->env_vars = (int)json_integer_value(v);
    }
  }
  json_decref(rep);
  session_release(&s);
  return 0;
}
