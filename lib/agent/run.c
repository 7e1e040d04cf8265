/* The run loop and the strategies that need no LLM. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "kevo/exec.h"
#include "kevo/reply.h"
#include "kevo/run.h"
#include "kevo/prompt.h"
#include "kevo/util.h"
#include "agent.h"

#define MAX_TUNABLES 8
#define SOURCE_MAX (1 << 20)

/* A point of the search space: an index into each tunable's values. */
struct point {
  int idx[MAX_TUNABLES];
  double speedup; /* 0 unless accepted */
};

struct search {
  const struct kv_task *task;
  char *starter;
  size_t starter_len;
  struct kv_tunable tun[MAX_TUNABLES];
  int ntun;
  uint64_t space; /* product of value counts */
  uint64_t rng;
  int steps;
  struct point *pts; /* evaluated, in step order */
  int npts;
  char last_params[512]; /* what the progress line's last_params points to */
};

struct proposal {
  int idx[MAX_TUNABLES];
  const char *action; /* "starter", "exhaustive", "random", "climb" */
};

struct strategy {
  const char *name;
  int needs_llm;
  /* 0: a proposal; 1: nothing left to try */
  int (*propose)(struct search *s, struct proposal *p);
};

static uint64_t next_rand(uint64_t *x) {
  return kv_splitmix64(x);
}

static void point_of(const struct search *s, uint64_t k, int *idx) {
  for (int i = s->ntun - 1; i >= 0; i--) {
    idx[i] = (int)(k % (uint64_t)s->tun[i].nvalues);
    k /= (uint64_t)s->tun[i].nvalues;
  }
}

static int visited(const struct search *s, const int *idx) {
  for (int i = 0; i < s->npts; i++)
    if (!memcmp(s->pts[i].idx, idx, sizeof(int) * (size_t)s->ntun))
      return 1;
  return 0;
}

/* tune: exhaustive when the space fits in the steps, else a third random,
 * then hill-climbing from the best point (one value moved by one position),
 * with a random restart when every neighbour has been tried. */
static int tune_propose(struct search *s, struct proposal *p) {
  if ((uint64_t)s->npts >= s->space)
    return 1;
  if (s->space <= (uint64_t)s->steps) {
    for (uint64_t k = 0; k < s->space; k++) {
      point_of(s, k, p->idx);
      if (!visited(s, p->idx)) {
        p->action = "exhaustive";
        return 0;
      }
    }
    return 1;
  }
  int best = -1;
  for (int i = 0; i < s->npts; i++)
    if (s->pts[i].speedup > 0 && (best < 0 || s->pts[i].speedup > s->pts[best].speedup))
      best = i;
  if (best >= 0 && s->npts >= s->steps / 3) {
    for (int t = 0; t < s->ntun; t++) {
      for (int d = -1; d <= 1; d += 2) {
        memcpy(p->idx, s->pts[best].idx, sizeof p->idx);
        p->idx[t] += d;
        if (p->idx[t] < 0 || p->idx[t] >= s->tun[t].nvalues || visited(s, p->idx))
          continue;
        p->action = "climb";
        return 0;
      }
    }
  }
  for (int tries = 0; tries < 10000; tries++) {
    point_of(s, next_rand(&s->rng) % s->space, p->idx);
    if (!visited(s, p->idx)) {
      p->action = "random";
      return 0;
    }
  }
  return 1;
}

/* The LLM strategies' proposals live in search.c (propose is NULL here). */
static const struct strategy strategies[] = {
    {"tune", 0, tune_propose},
    {"greedy", 1, NULL},
    {"best-of-n", 1, NULL},
    {"ada", 1, NULL},
};

void kv_run_llm_defaults(struct kv_run_llm_settings *s) {
  memset(s, 0, sizeof *s);
  s->concurrency = 2;
  s->prompt_mask = KV_PB_ALL;
  s->p_large = 0.3;
  s->small_limit = 4;
  s->c_explore = 1.0;
  s->pool_max = 3;
  s->rule_threshold = 2;
  s->rules_llm = 0;
}

int kv_run_strategy_needs_llm(const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(strategies); i++)
    if (name && !strcmp(strategies[i].name, name))
      return strategies[i].needs_llm;
  return -1;
}

const char *const *kv_run_strategies(void) {
  static const char *names[KV_ARRAY_LEN(strategies) + 1];
  for (size_t i = 0; i < KV_ARRAY_LEN(strategies); i++)
    names[i] = strategies[i].name;
  return names;
}

static const struct strategy *find_strategy(const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(strategies); i++)
    if (!strcmp(strategies[i].name, name))
      return &strategies[i];
  return NULL;
}

/* "NACC=4 BLOCK=64" */
static void format_params(const struct search *s, const int *idx, char *out, size_t cap) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < s->ntun && used < cap; i++)
    used += (size_t)snprintf(out + used, cap - used, "%s%s=%s", i ? " " : "", s->tun[i].name,
                             s->tun[i].values[idx[i]]);
}

/* The starter with the chosen values defined first (tunables are read with
 * #ifndef NAME, so these definitions win). */
static char *variant_source(const struct search *s, const int *idx, size_t *len) {
  if (s->ntun == 0) {
    *len = s->starter_len;
    char *c = malloc(s->starter_len + 1);
    if (c) {
      memcpy(c, s->starter, s->starter_len);
      c[s->starter_len] = 0;
    }
    return c;
  }
  struct kv_buf b;
  kv_buf_init(&b, SOURCE_MAX + 4096);
  char params[512];
  format_params(s, idx, params, sizeof params);
  kv_buf_appendf(&b, "/* kevo:tuned %s */\n", params);
  for (int i = 0; i < s->ntun; i++)
    kv_buf_appendf(&b, "#define %s %s\n", s->tun[i].name, s->tun[i].values[idx[i]]);
  kv_buf_appendf(&b, "#line 1\n");
  kv_buf_append(&b, s->starter, s->starter_len);
  *len = b.len;
  return kv_buf_detach(&b);
}

static int load_tunables(struct search *s, char *err, size_t errlen) {
  s->ntun = kv_tunables_parse(s->starter, s->tun, MAX_TUNABLES, err, errlen);
  if (s->ntun < 0)
    return -1;
  s->space = 1;
  for (int i = 0; i < s->ntun; i++) {
    char guard[96];
    snprintf(guard, sizeof guard, "#ifndef %s", s->tun[i].name);
    if (!strstr(s->starter, guard))
      return kv_error(err, errlen,
                      "tunable %s: the kernel must read it with '#ifndef %s / #define %s ...' so "
                      "that kevo's value wins",
                      s->tun[i].name, s->tun[i].name, s->tun[i].name);
    if (s->space > (uint64_t)1 << 40)
      return kv_error(err, errlen, "the tunables span more than 2^40 variants; narrow them");
    s->space *= (uint64_t)s->tun[i].nvalues;
  }
  return 0;
}

/* Records an evaluated source: the source, the evaluation (js: its result's
 * JSON) and the node (n's source_hash, eval_id, verdict and speedup are
 * filled in here). */
int kv_run_record_eval(struct kv_store *st, int64_t task_id, const char *candidate_path,
                       const char *src, size_t len, const struct kv_gate_result *r, const char *js,
                       int64_t *eval_id, char *err, size_t errlen) {
  struct kv_eval_record e = {0};
  e.task_id = task_id;
  e.source_hash = r->source_hash;
  e.candidate_path = candidate_path;
  e.surface = r->surface;
  e.device = r->device;
  e.verdict = kv_verdict_name(r->verdict);
  e.detail = r->detail;
  e.median_us = r->timed ? r->timing.cand.median_us : -1;
  e.speedup = r->timed ? r->timing.speedup : -1;
  e.result_json = js;
  int rc = kv_store_put_source(st, r->source_hash, src, len, err, errlen);
  return rc < 0 ? rc : kv_store_add_eval(st, &e, eval_id, err, errlen);
}

static int record_step(struct kv_store *st, int64_t task_id, const struct kv_node_record *node,
                       const char *src, size_t len, const struct kv_gate_result *r, const char *js,
                       int want_reward, struct kv_step_out *out, char *err, size_t errlen) {
  int64_t eval_id = 0, node_id = 0;
  int rc = kv_run_record_eval(st, task_id, NULL, src, len, r, js, &eval_id, err, errlen);
  if (rc == 0) {
    struct kv_node_record n = *node;
    n.source_hash = r->source_hash;
    n.eval_id = eval_id;
    n.verdict = kv_verdict_name(r->verdict);
    n.speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
    n.reward = want_reward ? kv_ada_reward((int)r->verdict, n.speedup) : -1;
    rc = kv_store_node_add(st, &n, &node_id, err, errlen);
  }
  if (out) {
    out->node_id = node_id;
    out->eval_id = eval_id;
  }
  return rc;
}

/* A candidate no gate server could judge (an executor gave up on it): its
 * node says so, with no evaluation. 1, or -1 with err. */
static int record_unjudged(struct kv_store *st, const struct kv_node_record *node, const char *src,
                           size_t len, int want_reward, struct kv_step_out *out, char *err,
                           size_t errlen) {
  char hash[65];
  kv_sha256_hex(src, len, hash);
  struct kv_node_record n = *node;
  n.source_hash = hash;
  n.eval_id = 0;
  n.verdict = "unjudged";
  n.speedup = -1;
  n.reward = want_reward ? 0 : -1;
  int64_t node_id = 0;
  if (kv_store_put_source(st, hash, src, len, err, errlen) < 0 ||
      kv_store_node_add(st, &n, &node_id, err, errlen) < 0)
    return -1;
  if (out) {
    out->node_id = node_id;
    out->eval_id = 0;
  }
  return 1;
}

/* What an executor returned for one candidate, into r (and its JSON). */
static int take_done(struct kv_exec_done *d, struct kv_gate_result *r, char *err, size_t errlen) {
  if (!d->ok)
    return 1;
  return kv_gate_result_from_json(d->result_json, r, err, errlen) < 0 ? -1 : 0;
}

/* A job's key in an executor: the source's hash (never NULL, never a small
 * number like drive_window's steps). */
static void *source_key(const char *src, size_t len) {
  char h[65];
  kv_sha256_hex(src, len, h);
  uintptr_t k = 0;
  for (int i = 0; i < (int)sizeof k * 2; i++)
    k = k << 4 | (uintptr_t)(h[i] <= '9' ? h[i] - '0' : h[i] - 'a' + 10);
  return (void *)(k | (uintptr_t)1 << (sizeof k * 8 - 1));
}

int kv__run_prefetch(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                     const struct kv_gate_opts *g, char *err, size_t errlen) {
  void *key = source_key(src, len);
  if (kv_exec_has(x, key))
    return 0;
  return kv_exec_submit(x, t, src, len, g, key, err, errlen);
}

int kv__run_step_on(struct kv_exec *x, struct kv_store *st, const struct kv_task *t,
                    int64_t task_id, const struct kv_node_record *node, const char *src, size_t len,
                    const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
                    struct kv_step_out *out, char *err, size_t errlen) {
  if (x) {
    struct kv_exec_done d;
    /* judged already, or on the way, when it was prefetched */
    void *key = source_key(src, len);
    if (!kv_exec_has(x, key) && kv_exec_submit(x, t, src, len, g, key, err, errlen) < 0)
      return -1;
    int got;
    while ((got = kv_exec_take(x, key, 5, &d, err, errlen)) == 0)
      ;
    if (got < 0)
      return -1;
    int rc = take_done(&d, r, err, errlen);
    if (rc == 0)
      rc =
          record_step(st, task_id, node, src, len, r, d.result_json, want_reward, out, err, errlen);
    else if (rc == 1)
      rc = record_unjudged(st, node, src, len, want_reward, out, err, errlen);
    kv_exec_done_release(&d);
    if (rc == 1 && !kv_exec_alive(x, err, errlen))
      return -1; /* recorded as unjudged; nothing more can be judged */
    return rc;
  }
  char cache[PATH_MAX - 64], dir[PATH_MAX - 32], path[PATH_MAX];
  if (g && g->cache_dir)
    snprintf(cache, sizeof cache, "%s", g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    return kv_error(err, errlen, "cannot find a cache directory; set KEVO_CACHE_DIR");
  if (kv_mkdtemp(cache, "run", dir, sizeof dir, err, errlen) < 0)
    return -1;
  int cuda = g->surface && !strcmp(g->surface, "cuda");
  snprintf(path, sizeof path, "%s/candidate.%s", dir, cuda ? "cu" : "c");
  int rc = kv_write_file(path, src, len, err, errlen);
  if (rc == 0)
    rc = kv_gate_eval(t, path, g, r, err, errlen);
  kv_rmtree(dir);
  if (rc < 0)
    return -1;
  char *js = kv_gate_result_json(r);
  rc = record_step(st, task_id, node, src, len, r, js, want_reward, out, err, errlen);
  free(js);
  return rc;
}

/* Evaluates one source; records the source, the evaluation and the node. */
int kv__run_step(struct kv_store *st, const struct kv_task *t, int64_t task_id,
                 const struct kv_node_record *node, const char *src, size_t len,
                 const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
                 struct kv_step_out *out, char *err, size_t errlen) {
  return kv__run_step_on(NULL, st, t, task_id, node, src, len, g, r, want_reward, out, err, errlen);
}

/* Step `step` judged into r (NULL: unjudged): its point's speedup and the
 * run's progress. */
static void note_step(struct search *s, int step, const struct kv_gate_result *r,
                      const char *params, const struct kv_run_hooks *h,
                      struct kv_run_progress *pr) {
  struct point *pt = &s->pts[step];
  pt->speedup = r && r->verdict == KV_V_OK && r->timed ? r->timing.speedup : 0;
  pr->step = step + 1;
  if (r)
    pr->counts[r->verdict]++;
  if (pt->speedup > pr->best_speedup)
    pr->best_speedup = pt->speedup;
  pr->last_verdict = r ? kv_verdict_name(r->verdict) : "unjudged";
  /* The progress outlives the step: it points at the search's copy, not at
   * the caller's. */
  snprintf(s->last_params, sizeof s->last_params, "%s", params);
  pr->last_params = s->last_params;
  if (h && h->progress)
    h->progress(h->ud, pr);
}

/* tune through an executor: up to its width of candidates in flight, a new
 * one proposed as soon as one is judged (no batch waits for its slowest
 * member while the other GPUs idle). Results are recorded in step order as
 * the prefix completes, so a run killed meanwhile has recorded a prefix and
 * a resumed run proposes the rest again. 0, or -1 with err. */
enum { WINDOW_MAX = 64 };
struct inflight {
  char *src;
  size_t len;
  char params[512];
  const char *action;
  struct kv_exec_done d;
  int done;
};

static int drive_window(struct kv_store *st, struct search *s, const struct strategy *strat,
                        int64_t task_id, int64_t run_id, const struct kv_gate_opts *g,
                        const struct kv_run_hooks *h, struct kv_run_progress *pr, int limit,
                        char *err, size_t errlen) {
  struct kv_exec *x = h->exec;
  int width = kv_exec_width(x) < WINDOW_MAX ? kv_exec_width(x) : WINDOW_MAX;
  struct inflight *w = calloc(WINDOW_MAX, sizeof *w);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  int rc = w && r ? 0 : kv_error(err, errlen, "out of memory");
  int next = s->npts, end = s->npts, exhausted = 0;
  while (rc == 0) {
    /* Propose while there is room (in flight or judged, not yet recorded). */
    while (!exhausted && end - next < width && s->npts < limit && !(h->stop && *h->stop)) {
      struct proposal p;
      memset(&p, 0, sizeof p);
      if (s->ntun == 0)
        p.action = "starter";
      else if (strat->propose(s, &p) != 0) {
        exhausted = 1;
        break;
      }
      /* in flight: counted as visited so the next proposal differs */
      memcpy(s->pts[s->npts].idx, p.idx, sizeof p.idx);
      s->pts[s->npts++].speedup = 0;
      struct inflight *f = &w[end % WINDOW_MAX];
      memset(f, 0, sizeof *f);
      f->action = p.action;
      format_params(s, p.idx, f->params, sizeof f->params);
      if (!(f->src = variant_source(s, p.idx, &f->len))) {
        rc = kv_error(err, errlen, "out of memory");
        break;
      }
      if ((rc = kv_exec_submit(x, s->task, f->src, f->len, g, (void *)(intptr_t)(end + 1), err,
                               errlen)) < 0)
        break;
      end++;
    }
    if (rc < 0 || next == end)
      break;
    struct kv_exec_done one;
    int k = kv_exec_next(x, 5, &one, err, errlen);
    if (k < 0) {
      rc = -1;
      break;
    }
    if (k == 1) {
      intptr_t step = (intptr_t)one.ud - 1;
      if (step >= next && step < end && !w[step % WINDOW_MAX].done) {
        w[step % WINDOW_MAX].d = one;
        w[step % WINDOW_MAX].done = 1;
      } else {
        kv_exec_done_release(&one); /* not this window's (a prefetch) */
      }
    }
    /* Record the judged prefix, in step order. */
    while (rc == 0 && next < end && w[next % WINDOW_MAX].done) {
      struct inflight *f = &w[next % WINDOW_MAX];
      struct kv_node_record node = {
          .run_id = run_id, .step = next, .action = f->action, .params = f->params};
      memset(r, 0, sizeof *r);
      int judged = take_done(&f->d, r, err, errlen);
      if (judged == 0)
        rc = record_step(st, task_id, &node, f->src, f->len, r, f->d.result_json, 0, NULL, err,
                         errlen);
      else if (judged == 1)
        rc = record_unjudged(st, &node, f->src, f->len, 0, NULL, err, errlen) < 0 ? -1 : 0;
      else
        rc = -1;
      if (rc == 0)
        note_step(s, next, judged == 0 ? r : NULL, f->params, h, pr);
      kv_gate_result_release(r);
      kv_exec_done_release(&f->d);
      free(f->src);
      memset(f, 0, sizeof *f);
      next++;
    }
    if (rc == 0 && next == end && !kv_exec_alive(x, err, errlen))
      rc = -1; /* every candidate is recorded; nothing more can be judged */
  }
  /* What was not recorded is proposed again by a resumed run. */
  for (int i = next; w && i < end; i++) {
    kv_exec_done_release(&w[i % WINDOW_MAX].d);
    free(w[i % WINDOW_MAX].src);
  }
  if (rc < 0)
    s->npts = next;
  free(w);
  free(r);
  return rc;
}

/* tune on the local gate, when the whole space will be tried: every variant
 * is compiled first, at once, by the compile pool (one compiler per core;
 * a kernel-only starter's variants by NVRTC, in 0.1-0.3 s each), so that
 * judging them one at a time finds them built. Best effort: a variant that
 * fails here is compiled (and its error reported) when it is judged. */
static void prebuild_space(struct search *s, const struct kv_gate_opts *g) {
  if (s->ntun == 0 || s->space > (uint64_t)s->steps || s->space > 4096)
    return;
  char cache[3000], dir[PATH_MAX], err[512];
  if (g && g->cache_dir)
    snprintf(cache, sizeof cache, "%s", g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    return;
  if (kv_mkdtemp(cache, "tune", dir, sizeof dir, err, sizeof err) < 0)
    return;
  int n = (int)s->space;
  char **paths = calloc((size_t)n, sizeof *paths);
  int made = 0;
  for (int k = 0; paths && k < n; k++) {
    int idx[MAX_TUNABLES];
    point_of(s, (uint64_t)k, idx);
    size_t len = 0;
    char *src = variant_source(s, idx, &len);
    char p[PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/v%d.%s", dir, k,
             g && g->surface && !strcmp(g->surface, "cuda") ? "cu" : "c");
    if (src && kv_write_file(p, src, len, err, sizeof err) == 0 && (paths[made] = strdup(p)))
      made++;
    free(src);
  }
  if (made > 0)
    kv_gate_prebuild(s->task, (const char *const *)paths, made, g, err, sizeof err);
  for (int k = 0; k < made; k++)
    free(paths[k]);
  free(paths);
  kv_rmtree(dir);
}

static int drive(struct kv_store *st, struct search *s, const struct strategy *strat,
                 int64_t task_id, int64_t run_id, const struct kv_gate_opts *g,
                 const struct kv_run_hooks *h, struct kv_run_progress *pr, char *err,
                 size_t errlen) {
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r)
    return kv_error(err, errlen, "out of memory");
  int rc = 0, stopped = 0;
  /* Without tunables the only candidate is the starter itself. */
  int limit = s->ntun == 0 ? 1 : s->steps;
  if (!(h && h->exec) && s->npts == 0)
    prebuild_space(s, g);
  while (s->npts < limit) {
    if (h && h->stop && *h->stop) {
      stopped = 1;
      break;
    }
    if (h && h->exec && kv_exec_width(h->exec) > 1 && limit > 1) {
      rc = drive_window(st, s, strat, task_id, run_id, g, h, pr, limit, err, errlen);
      stopped = rc == 0 && h->stop && *h->stop;
      break;
    }
    struct proposal p;
    memset(&p, 0, sizeof p);
    if (s->ntun == 0)
      p.action = "starter";
    else if (strat->propose(s, &p) != 0)
      break;
    size_t len = 0;
    char *src = variant_source(s, p.idx, &len);
    if (!src) {
      rc = kv_error(err, errlen, "out of memory");
      break;
    }
    char params[512];
    format_params(s, p.idx, params, sizeof params);
    memset(r, 0, sizeof *r);
    struct kv_node_record nr = {0};
    nr.run_id = run_id;
    nr.step = s->npts;
    nr.action = p.action;
    nr.params = params;
    rc = kv__run_step_on(h ? h->exec : NULL, st, s->task, task_id, &nr, src, len, g, r, 0, NULL,
                         err, errlen);
    free(src);
    if (rc < 0) {
      kv_gate_result_release(r);
      break;
    }
    int judged = rc == 0;
    rc = 0;
    memcpy(s->pts[s->npts].idx, p.idx, sizeof p.idx);
    note_step(s, s->npts++, judged ? r : NULL, params, h, pr);
    kv_gate_result_release(r);
  }
  free(r);
  if (rc == 0)
    rc = kv_store_run_set_status(st, run_id, stopped ? "stopped" : "done", err, errlen);
  return rc;
}

static int search_init(struct search *s, const struct kv_task *t, char *src, size_t len, int steps,
                       uint64_t seed, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->task = t;
  s->starter = src;
  s->starter_len = len;
  s->steps = steps > 0 ? steps : 1;
  s->rng = seed;
  s->pts = calloc((size_t)s->steps, sizeof *s->pts);
  if (!s->pts)
    return kv_error(err, errlen, "out of memory");
  return load_tunables(s, err, errlen);
}

json_t *kv__llm_settings_json(const struct kv_run_llm_settings *l) {
  json_t *j =
      json_pack("{s:i,s:I,s:s?,s:s,s:f,s:i,s:f,s:i,s:i,s:b}", "concurrency", l->concurrency,
                "prompt_mask", (json_int_t)l->prompt_mask, "prompt_dir", l->prompt_dir, "plan_mode",
                l->plan_explicit ? "explicit" : "implicit", "p_large", l->p_large, "small_limit",
                l->small_limit, "c_explore", l->c_explore, "pool_max", l->pool_max,
                "rule_threshold", l->rule_threshold, "rules_llm", l->rules_llm);
  if (j && l->attr_share > 0) /* only when on: older runs' and benches' settings stay the same */
    json_object_set_new(j, "attribution",
                        json_pack("{s:f,s:f}", "share", l->attr_share, "price", l->attr_price));
  return j;
}

/* How the run's candidates are judged, with its settings, so that kevo
 * resume judges the rest alike: untimed (--no-timing), its timing budget
 * (--budget) and adaptive timing's target when not the default
 * (--timing-ci). */
static void gate_settings(json_t *cfg, const struct kv_gate_opts *g) {
  struct kv_gate_opts d;
  kv_gate_opts_default(&d);
  if (!cfg)
    return;
  if (!g->timing)
    json_object_set_new(cfg, "timing", json_false());
  if (g->time_budget_s > 0)
    json_object_set_new(cfg, "time_budget_s", json_real(g->time_budget_s));
  if (g->timing_ci != d.timing_ci)
    json_object_set_new(cfg, "timing_ci", json_real(g->timing_ci));
}

/* Reads the settings back (prompt_dir points into j). */
static void llm_settings_read(json_t *j, struct kv_run_llm_settings *l) {
  kv_run_llm_defaults(l);
  if (!j)
    return;
  json_t *v;
  if ((v = json_object_get(j, "concurrency")))
    l->concurrency = (int)json_integer_value(v);
  if ((v = json_object_get(j, "prompt_mask")))
    l->prompt_mask = (unsigned)json_integer_value(v);
  l->prompt_dir = json_string_value(json_object_get(j, "prompt_dir"));
  const char *pm = json_string_value(json_object_get(j, "plan_mode"));
  l->plan_explicit = pm && !strcmp(pm, "explicit");
  if ((v = json_object_get(j, "p_large")))
    l->p_large = json_number_value(v);
  if ((v = json_object_get(j, "small_limit")))
    l->small_limit = (int)json_integer_value(v);
  if ((v = json_object_get(j, "c_explore")))
    l->c_explore = json_number_value(v);
  if ((v = json_object_get(j, "pool_max")))
    l->pool_max = (int)json_integer_value(v);
  if ((v = json_object_get(j, "rule_threshold")))
    l->rule_threshold = (int)json_integer_value(v);
  l->rules_llm = json_is_true(json_object_get(j, "rules_llm"));
  json_t *at = json_object_get(j, "attribution");
  l->attr_share = json_number_value(json_object_get(at, "share"));
  l->attr_price = json_number_value(json_object_get(at, "price"));
}

/* A new run of an LLM strategy: the starter (when given) is its first node. */
static int llm_run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
                       const struct kv_run_config *c, const struct kv_gate_opts *g,
                       const struct kv_run_hooks *h, int64_t *run_id, char *err, size_t errlen) {
  if (!h || !h->llm)
    return kv_error(err, errlen,
                    "--strategy %s needs an LLM: configure a model (kevo.json or --model, "
                    "--base-url) or use --strategy tune",
                    c->strategy);
  char spec_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  int64_t task_id;
  if (kv_store_put_task(st, t->name, t->dir, spec_hash, t->json, &task_id, err, errlen) < 0)
    return -1;
  json_t *cfg = json_pack("{s:s,s:i,s:I,s:s,s:s,s:o}", "strategy", c->strategy, "steps",
                          c->steps > 0 ? c->steps : 1, "seed", (json_int_t)c->seed, "surface",
                          g->surface ? g->surface : "cpu", "task_dir", t->dir, "llm",
                          kv__llm_settings_json(&c->llm));
  gate_settings(cfg, g);
  if (cfg && h && h->skill_pick) /* --skills on, for kevo resume */
    json_object_set_new(cfg, "skills", json_true());
  json_t *model = c->llm_json ? json_loads(c->llm_json, 0, NULL) : NULL;
  if (model)
    json_object_set_new(cfg, "model", model);
  char *cj = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(cfg);
  int rc = kv_store_run_create(st, task_id, c->strategy, cj, run_id, err, errlen);
  free(cj);
  if (rc == 0 && h && h->created)
    h->created(h->ud, *run_id);
  struct kv_node_row first = {0};
  int nfirst = 0;
  struct kv_gate_result *r = NULL;
  if (rc == 0 && starter) {
    char *src;
    size_t len;
    r = calloc(1, sizeof *r);
    if (!r)
      rc = kv_error(err, errlen, "out of memory");
    if (rc == 0)
      rc = kv_read_file(starter, SOURCE_MAX, &src, &len, err, errlen);
    if (rc == 0) {
      struct kv_node_record nr = {0};
      nr.run_id = *run_id;
      nr.step = 0;
      nr.action = "starter";
      struct kv_step_out out = {0};
      rc = kv__run_step_on(h ? h->exec : NULL, st, t, task_id, &nr, src, len, g, r, 1, &out, err,
                           errlen);
      if (rc == 1) /* unjudged: the search goes on without it */
        rc = 0;
      else if (rc == 0) {
        first.id = out.node_id;
        first.eval_id = out.eval_id;
        first.source_hash = r->source_hash;
        first.action = "starter";
        first.verdict = (char *)kv_verdict_name(r->verdict);
        first.speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
        nfirst = 1;
      }
      free(src);
    }
  }
  struct kv_run_config cc = *c;
  if (cc.steps <= 0)
    cc.steps = 1;
  if (rc == 0)
    rc = kv__search_llm(st, t, task_id, *run_id, c->strategy, &cc, g, h, &first, nfirst, err,
                        errlen);
  if (r)
    kv_gate_result_release(r);
  free(r);
  return rc;
}

int kv_run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
               const struct kv_run_config *c, const struct kv_gate_opts *g,
               const struct kv_run_hooks *h, int64_t *run_id, char *err, size_t errlen) {
  const struct strategy *strat = find_strategy(c->strategy ? c->strategy : "tune");
  if (!strat)
    return kv_error(err, errlen,
                    "--strategy %s: not in this build; use tune, greedy, best-of-n or ada",
                    c->strategy);
  if (strat->needs_llm)
    return llm_run_new(st, t, starter, c, g, h, run_id, err, errlen);
  char *src;
  size_t len;
  if (kv_read_file(starter, SOURCE_MAX, &src, &len, err, errlen) < 0)
    return -1;
  struct search s;
  if (search_init(&s, t, src, len, c->steps, c->seed, err, errlen) < 0) {
    free(s.pts);
    free(src);
    return -1;
  }
  char spec_hash[65], src_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  kv_sha256_hex(src, len, src_hash);
  int64_t task_id;
  int rc = kv_store_put_task(st, t->name, t->dir, spec_hash, t->json, &task_id, err, errlen);
  if (rc == 0)
    rc = kv_store_put_source(st, src_hash, src, len, err, errlen);
  json_t *cfg = json_pack("{s:s,s:i,s:I,s:s,s:s,s:s}", "strategy", strat->name, "steps", s.steps,
                          "seed", (json_int_t)c->seed, "starter", src_hash, "surface",
                          g->surface ? g->surface : "cpu", "task_dir", t->dir);
  gate_settings(cfg, g);
  char *cj = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(cfg);
  if (rc == 0)
    rc = kv_store_run_create(st, task_id, strat->name, cj, run_id, err, errlen);
  free(cj);
  if (rc == 0 && h && h->created)
    h->created(h->ud, *run_id);
  struct kv_run_progress pr = {0};
  pr.run_id = *run_id;
  pr.steps = s.ntun ? (s.space < (uint64_t)s.steps ? (int)s.space : s.steps) : 1;
  if (rc == 0)
    rc = drive(st, &s, strat, task_id, *run_id, g, h, &pr, err, errlen);
  free(s.pts);
  free(src);
  return rc;
}

/* Finds the index of the value recorded for tunable k in "A=1 B=2". */
static int recorded_index(const struct kv_tunable *tu, const char *params) {
  char key[80];
  snprintf(key, sizeof key, "%s=", tu->name);
  for (const char *at = params ? strstr(params, key) : NULL; at; at = strstr(at + 1, key)) {
    if (at != params && at[-1] != ' ')
      continue;
    const char *val = at + strlen(key);
    for (int v = 0; v < tu->nvalues; v++) {
      size_t vl = strlen(tu->values[v]);
      if (!strncmp(val, tu->values[v], vl) && (val[vl] == ' ' || val[vl] == 0))
        return v;
    }
  }
  return -1;
}

int kv_run_resume(struct kv_store *st, int64_t run_id, const struct kv_gate_opts *g,
                  const struct kv_run_hooks *h, char *err, size_t errlen) {
  struct kv_run_row run;
  if (kv_store_run_get(st, run_id, &run, err, errlen) < 0)
    return -1;
  int rc = -1;
  struct kv_task *t = NULL;
  char *src = NULL;
  struct search s;
  memset(&s, 0, sizeof s);
  json_t *cfg = json_loads(run.config_json ? run.config_json : "", 0, NULL);
  const char *sname = json_string_value(json_object_get(cfg, "strategy"));
  const char *starter = json_string_value(json_object_get(cfg, "starter"));
  const char *dir = json_string_value(json_object_get(cfg, "task_dir"));
  const struct strategy *strat = sname ? find_strategy(sname) : NULL;
  /* A run started with --no-timing goes on untimed (timing its later steps
   * only would compare the untimed with the timed, and change its prompts). */
  struct kv_gate_opts untimed;
  if (json_is_false(json_object_get(cfg, "timing"))) {
    untimed = *g;
    untimed.timing = 0;
    g = &untimed;
  }
  size_t len = 0;
  struct kv_node_row *nodes = NULL;
  int nn = 0;
  if (strat && strat->needs_llm && dir) {
    struct kv_run_config lc = {0};
    lc.strategy = strat->name;
    lc.steps = (int)json_integer_value(json_object_get(cfg, "steps"));
    lc.seed = (uint64_t)json_integer_value(json_object_get(cfg, "seed"));
    llm_settings_read(json_object_get(cfg, "llm"), &lc.llm);
    if (kv_task_load(dir, &t, err, errlen) < 0)
      goto out;
    char sh[65];
    kv_sha256_hex(t->json, strlen(t->json), sh);
    if (strcmp(sh, run.spec_hash ? run.spec_hash : "") != 0) {
      kv_error(err, errlen, "%s: the task changed since run %lld started; start a new run", dir,
               (long long)run_id);
      goto out;
    }
    if (kv_store_run_nodes(st, run_id, &nodes, &nn, err, errlen) < 0)
      goto out;
    rc = kv_store_run_set_status(st, run_id, "running", err, errlen);
    /* Resume with a different seed stream than the first session's. */
    lc.seed ^= (uint64_t)nn * 0x9e3779b97f4a7c15ull;
    if (rc == 0)
      rc = kv__search_llm(st, t, run.task_id, run_id, strat->name, &lc, g, h, nodes, nn, err,
                          errlen);
    goto out;
  }
  if (!strat || !starter || !dir) {
    kv_error(err, errlen, "run %lld: its configuration in the store is unreadable",
             (long long)run_id);
    goto out;
  }
  if (kv_task_load(dir, &t, err, errlen) < 0)
    goto out;
  char spec_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  if (strcmp(spec_hash, run.spec_hash ? run.spec_hash : "") != 0) {
    kv_error(err, errlen, "%s: the task changed since run %lld started; start a new run", dir,
             (long long)run_id);
    goto out;
  }
  src = kv_store_get_source(st, starter, &len);
  if (!src) {
    kv_error(err, errlen, "run %lld: its starter kernel is missing from the store",
             (long long)run_id);
    goto out;
  }
  int steps = (int)json_integer_value(json_object_get(cfg, "steps"));
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(cfg, "seed"));
  if (search_init(&s, t, src, len, steps, seed, err, errlen) < 0)
    goto out;
  if (kv_store_run_nodes(st, run_id, &nodes, &nn, err, errlen) < 0)
    goto out;
  struct kv_run_progress pr = {0};
  pr.run_id = run_id;
  pr.steps = s.ntun ? (s.space < (uint64_t)s.steps ? (int)s.space : s.steps) : 1;
  /* The search state is the evaluated points: rebuild them in step order. */
  for (int i = 0; i < nn && s.npts < s.steps; i++) {
    struct point *pt = &s.pts[s.npts];
    int ok = 1;
    for (int k = 0; k < s.ntun; k++)
      ok &= (pt->idx[k] = recorded_index(&s.tun[k], nodes[i].params)) >= 0;
    if (!ok)
      continue;
    pt->speedup = nodes[i].speedup > 0 ? nodes[i].speedup : 0;
    int vi = kv_verdict_from_name(nodes[i].verdict);
    if (vi >= 0)
      pr.counts[vi]++;
    if (pt->speedup > pr.best_speedup)
      pr.best_speedup = pt->speedup;
    s.npts++;
  }
  pr.step = s.npts;
  rc = kv_store_run_set_status(st, run_id, "running", err, errlen);
  if (rc == 0)
    rc = drive(st, &s, strat, run.task_id, run_id, g, h, &pr, err, errlen);
out:
  kv_node_rows_free(nodes, nn);
  json_decref(cfg);
  kv_run_row_release(&run);
  free(s.pts);
  free(src);
  kv_task_free(t);
  return rc;
}
