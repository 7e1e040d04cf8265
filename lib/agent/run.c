/* Runs: new and resume, the table of every strategy (dispatched from here
 * alone), and tune, the strategy that needs no LLM. A step is judged and
 * recorded by step.c; the LLM strategies' loop is search.c's. */
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
#include "kevo/surface.h"
#include "internal.h"

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

/* A strategy: tune proposes points of the starter's tunables (drive runs
 * it, here); an LLM strategy picks what to ask next (kva_search_llm runs it,
 * search.c). Exactly one of propose and pick is set. */
struct strategy {
  const char *name;
  /* 0: a proposal; 1: nothing left to try */
  int (*propose)(struct search *s, struct proposal *p);
  kva_pick_fn *pick;
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

/* Every strategy, dispatched from this table alone (kv_run_new,
 * kv_run_resume). */
static const struct strategy strategies[] = {
    {"tune", tune_propose, NULL},
    {"greedy", NULL, kva_pick_greedy},
    {"best-of-n", NULL, kva_pick_best_of_n},
    {"ada", NULL, kva_pick_ada},
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

unsigned kv_rule_source_of(int verdict) {
  switch (verdict) {
  case KV_V_OK:
    return 0;
  case KV_V_COMPILE_ERROR:
  case KV_V_POLICY_VIOLATION:
    return KV_RULE_SRC_COMPILE;
  case KV_V_LOAD_ERROR:
  case KV_V_CRASH:
  case KV_V_TIMEOUT:
    return KV_RULE_SRC_RUNTIME;
  default:
    return KV_RULE_SRC_WRONG;
  }
}

int kv_rule_sources_parse(const char *list, unsigned *bits, char *err, size_t errlen) {
  static const char *const names[] = {"compile", "runtime", "wrong"};
  *bits = 0;
  if (list && !strcmp(list, "all"))
    return 0;
  for (const char *p = list ? list : ""; *p;) {
    size_t n = strcspn(p, ",");
    unsigned b = 0;
    for (size_t k = 0; k < KV_ARRAY_LEN(names); k++)
      if (n == strlen(names[k]) && !strncmp(p, names[k], n))
        b = 1u << k;
    if (!b)
      return kv_error(err, errlen,
                      "'%.*s' is not a source of rules; use compile, runtime, wrong "
                      "(or all)",
                      (int)n, p);
    *bits |= b;
    p += n + (p[n] == ',');
  }
  return *bits ? 0
               : kv_error(err, errlen,
                          "the list of rule sources is empty; name compile, runtime, "
                          "wrong or all");
}

int kv_run_strategy_needs_llm(const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(strategies); i++)
    if (name && !strcmp(strategies[i].name, name))
      return strategies[i].pick != NULL;
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
  if (s->tun[0].py) { /* Python: module globals, read with globals().get */
    kv_buf_appendf(&b, "# kevo:tuned %s\n", params);
    for (int i = 0; i < s->ntun; i++)
      kv_buf_appendf(&b, "%s = %s\n", s->tun[i].name, s->tun[i].values[idx[i]]);
  } else {
    kv_buf_appendf(&b, "/* kevo:tuned %s */\n", params);
    for (int i = 0; i < s->ntun; i++)
      kv_buf_appendf(&b, "#define %s %s\n", s->tun[i].name, s->tun[i].values[idx[i]]);
    kv_buf_appendf(&b, "#line 1\n");
  }
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
    const char *nm = s->tun[i].name;
    if (s->tun[i].py != s->tun[0].py)
      return kv_error(err, errlen,
                      "tunable %s: declared with '%s' where %s used '%s'; one kind only", nm,
                      s->tun[i].py ? "#" : "//", s->tun[0].name, s->tun[0].py ? "#" : "//");
    snprintf(guard, sizeof guard, s->tun[i].py ? "globals().get(\"%s\"" : "#ifndef %s", nm);
    if (!strstr(s->starter, guard) && s->tun[i].py)
      return kv_error(err, errlen,
                      "tunable %s: the module must read it with '%s = globals().get(\"%s\", "
                      "DEFAULT)' so that kevo's value wins",
                      nm, nm, nm);
    if (!strstr(s->starter, guard))
      return kv_error(err, errlen,
                      "tunable %s: the kernel must read it with '#ifndef %s / #define %s ...' so "
                      "that kevo's value wins",
                      nm, nm, nm);
    if (s->space > (uint64_t)1 << 40)
      return kv_error(err, errlen, "the tunables span more than 2^40 variants; narrow them");
    s->space *= (uint64_t)s->tun[i].nvalues;
  }
  return 0;
}

void kv_run_progress_accepted(struct kv_run_progress *p, const char *hash, double speedup,
                              double lo, double hi, double cv) {
  if (!(speedup > 0))
    return;
  int same = hash && *hash && !strcmp(hash, p->best_hash);
  if (speedup > p->best_speedup) {
    if (!same && p->best_speedup > 0) { /* the old best is now the runner-up */
      p->second_speedup = p->best_speedup;
      p->second_lo = p->best_lo;
      p->second_hi = p->best_hi;
    }
    p->best_speedup = speedup;
    p->best_lo = lo;
    p->best_hi = hi;
    p->best_cv = cv;
    snprintf(p->best_hash, sizeof p->best_hash, "%s", hash ? hash : "");
  } else if (!same && speedup > p->second_speedup) {
    p->second_speedup = speedup;
    p->second_lo = lo;
    p->second_hi = hi;
  }
}

int kv_run_luck(const struct kv_run_progress *p) {
  if (!(p->best_speedup > 0))
    return 0;
  int f = 0;
  if (p->second_speedup > 0 && p->best_lo > 0 && p->second_hi > 0 && p->best_lo <= p->second_hi)
    f |= KV_LUCK_OVERLAP;
  if (p->best_cv > KV_LUCK_CV)
    f |= KV_LUCK_NOISY;
  if (p->best_speedup < 1)
    f |= KV_LUCK_SLOWER;
  return f;
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
  if (pt->speedup > 0)
    kv_run_progress_accepted(pr, r->source_hash, pt->speedup, r->timing.speedup_lo,
                             r->timing.speedup_hi, r->timing.cand.cv);
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
      int judged =
          kva_step_record_done(st, task_id, &node, f->src, f->len, &f->d, r, 0, NULL, err, errlen);
      rc = judged < 0 ? -1 : 0;
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
             kv_surface_ext(kv_surface_find(g ? g->surface : NULL)));
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
    rc = kva_step(h ? h->exec : NULL, st, s->task, task_id, &nr, src, len, g, r, 0, NULL, err,
                  errlen);
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

json_t *kva_llm_settings_json(const struct kv_run_llm_settings *l) {
  json_t *j =
      json_pack("{s:i,s:I,s:s?,s:s,s:f,s:i,s:f,s:i,s:i,s:b}", "concurrency", l->concurrency,
                "prompt_mask", (json_int_t)l->prompt_mask, "prompt_dir", l->prompt_dir, "plan_mode",
                l->plan_explicit ? "explicit" : "implicit", "p_large", l->p_large, "small_limit",
                l->small_limit, "c_explore", l->c_explore, "pool_max", l->pool_max,
                "rule_threshold", l->rule_threshold, "rules_llm", l->rules_llm);
  if (j && l->tree) /* AdaExplore's (kevo/preset.h): only when set, as attribution */
    json_object_set_new(j, "tree", json_string("adaexplore"));
  if (j && l->reward)
    json_object_set_new(j, "reward", json_string("adaexplore"));
  if (j && l->small_step)
    json_object_set_new(j, "small_step", json_string("reviser-tuner"));
  if (j && l->rule_sources)
    json_object_set_new(j, "rule_sources", json_integer((json_int_t)l->rule_sources));
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
  if (g->timing_method != KV_TIMING_KEVO) /* kevo resume reads it back */
    json_object_set_new(cfg, "timing_method", json_string(kv_timing_method_name(g->timing_method)));
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
  const char *tr = json_string_value(json_object_get(j, "tree"));
  l->tree = tr && !strcmp(tr, "adaexplore") ? KV_TREE_ADAEXPLORE : KV_TREE_KEVO;
  const char *rw = json_string_value(json_object_get(j, "reward"));
  l->reward = rw && !strcmp(rw, "adaexplore") ? KV_REWARD_ADAEXPLORE : KV_REWARD_KEVO;
  l->rule_sources = (unsigned)json_integer_value(json_object_get(j, "rule_sources"));
  const char *ss = json_string_value(json_object_get(j, "small_step"));
  l->small_step = ss && !strcmp(ss, "reviser-tuner") ? KV_SMALL_REVISER_TUNER : KV_SMALL_KEVO;
  json_t *at = json_object_get(j, "attribution");
  l->attr_share = json_number_value(json_object_get(at, "share"));
  l->attr_price = json_number_value(json_object_get(at, "price"));
}

/* A new LLM run in the store, its configuration kept for kevo resume. */
static int llm_run_create(struct kv_store *st, const struct kv_task *t,
                          const struct kv_run_config *c, const struct kv_gate_opts *g,
                          const struct kv_run_hooks *h, int64_t *task_id, int64_t *run_id,
                          char *err, size_t errlen) {
  char spec_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  if (kv_store_put_task(st, t->name, t->dir, spec_hash, t->json, task_id, err, errlen) < 0)
    return -1;
  json_t *cfg = json_pack("{s:s,s:i,s:I,s:s,s:s,s:o}", "strategy", c->strategy, "steps",
                          c->steps > 0 ? c->steps : 1, "seed", (json_int_t)c->seed, "surface",
                          g->surface ? g->surface : "cpu", "task_dir", t->dir, "llm",
                          kva_llm_settings_json(&c->llm));
  gate_settings(cfg, g);
  if (cfg && h && h->skill_pick) /* --skills on, for kevo resume */
    json_object_set_new(cfg, "skills", json_true());
  json_t *model = c->llm_json ? json_loads(c->llm_json, 0, NULL) : NULL;
  if (model)
    json_object_set_new(cfg, "model", model);
  char *cj = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(cfg);
  int rc = kv_store_run_create(st, *task_id, c->strategy, cj, run_id, err, errlen);
  free(cj);
  if (rc == 0 && h && h->created)
    h->created(h->ud, *run_id);
  return rc;
}

/* The starter judged as a new LLM run's first node (step 0): *first, which
 * points into r, and *nfirst = 1; unjudged, the search goes on without it. */
static int llm_starter(struct kv_store *st, const struct kv_task *t, int64_t task_id,
                       int64_t run_id, const char *starter, const struct kv_gate_opts *g,
                       const struct kv_run_hooks *h, struct kv_gate_result *r,
                       struct kv_node_row *first, int *nfirst, char *err, size_t errlen) {
  char *src;
  size_t len;
  int rc = kv_read_file(starter, SOURCE_MAX, &src, &len, err, errlen);
  if (rc != 0)
    return rc;
  struct kv_node_record nr = {0};
  nr.run_id = run_id;
  nr.step = 0;
  nr.action = "starter";
  struct kva_step_out out = {0};
  rc = kva_step(h ? h->exec : NULL, st, t, task_id, &nr, src, len, g, r, 1, &out, err, errlen);
  if (rc == 1) /* unjudged: the search goes on without it */
    rc = 0;
  else if (rc == 0) {
    first->id = out.node_id;
    first->eval_id = out.eval_id;
    first->source_hash = r->source_hash;
    first->action = "starter";
    first->verdict = (char *)kv_verdict_name(r->verdict);
    first->speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
    *nfirst = 1;
  }
  free(src);
  return rc;
}

/* A new run of an LLM strategy: the starter (when given) is its first node. */
static int llm_run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
                       const struct strategy *strat, const struct kv_run_config *c,
                       const struct kv_gate_opts *g, const struct kv_run_hooks *h, int64_t *run_id,
                       char *err, size_t errlen) {
  if (kva_need_llm(c, h, err, errlen) < 0)
    return -1;
  int64_t task_id = 0;
  int rc = llm_run_create(st, t, c, g, h, &task_id, run_id, err, errlen);
  struct kv_node_row first = {0};
  int nfirst = 0;
  struct kv_gate_result *r = NULL;
  if (rc == 0 && starter) {
    r = calloc(1, sizeof *r);
    rc = r ? llm_starter(st, t, task_id, *run_id, starter, g, h, r, &first, &nfirst, err, errlen)
           : kv_error(err, errlen, "out of memory");
  }
  struct kv_run_config cc = *c;
  if (cc.steps <= 0)
    cc.steps = 1;
  if (rc == 0)
    rc = kva_search_llm(st, t, task_id, *run_id, strat->pick, &cc, g, h, &first, nfirst, err,
                        errlen);
  if (r)
    kv_gate_result_release(r);
  free(r);
  return rc;
}

/* ---- why a run ended ---------------------------------------------------------- */

static int run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
                   const struct kv_run_config *c, const struct kv_gate_opts *g,
                   const struct kv_run_hooks *h, int64_t *run_id, char *note, size_t notecap,
                   char *err, size_t errlen);
struct search;
static void space_note(const struct search *s, char *note, size_t cap);

/* The caller's hooks with progress and created passing through here, so that
 * the reason a strategy gives (a budget) is kept for the store. */
struct watch {
  struct kv_run_hooks h;          /* what the strategy gets */
  const struct kv_run_hooks *own; /* the caller's, or NULL */
  int64_t run_id;
  char why[512];
};

static void watch_progress(void *ud, const struct kv_run_progress *p) {
  struct watch *w = ud;
  if (p->stop_reason && !w->why[0])
    snprintf(w->why, sizeof w->why, "%s", p->stop_reason);
  if (w->own && w->own->progress)
    w->own->progress(w->own->ud, p);
}

static void watch_created(void *ud, int64_t run_id) {
  struct watch *w = ud;
  w->run_id = run_id;
  if (w->own && w->own->created)
    w->own->created(w->own->ud, run_id);
}

static const struct kv_run_hooks *watch_start(struct watch *w, const struct kv_run_hooks *h,
                                              int64_t run_id) {
  memset(w, 0, sizeof *w);
  if (h)
    w->h = *h;
  w->own = h;
  w->run_id = run_id;
  w->h.progress = watch_progress;
  w->h.created = watch_created;
  w->h.ud = w;
  return &w->h;
}

/* Records why the run ended: kevo's error (a full disk), a stop asked for,
 * the strategy's own reason, or tune's space used up before its steps. */
static void watch_end(struct watch *w, struct kv_store *st, int rc, const char *err,
                      const char *space_note) {
  if (w->run_id <= 0)
    return;
  char e[64];
  if (rc < 0) {
    /* only a run this process ran: never one another kevo runs */
    struct kv_run_row r;
    int ours = kv_store_run_is_mine(st, w->run_id);
    if (!ours && kv_store_run_get(st, w->run_id, &r, e, sizeof e) == 0) {
      ours = !strcmp(r.status, "stopped") && !r.stop_reason;
      kv_run_row_release(&r);
    }
    char why[768];
    snprintf(why, sizeof why, "kevo could not go on: %.700s", err && *err ? err : "?");
    if (ours)
      kv_store_run_end(st, w->run_id, "stopped", why, e, sizeof e);
  } else if (w->own && w->own->stop && *w->own->stop)
    kv_store_run_end(st, w->run_id, "stopped", "stopped on request (Ctrl-C or a signal)", e,
                     sizeof e);
  else if (w->why[0])
    kv_store_run_end(st, w->run_id, "stopped", w->why, e, sizeof e);
  else if (space_note && *space_note)
    kv_store_run_end(st, w->run_id, "done", space_note, e, sizeof e);
}

int kv_run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
               const struct kv_run_config *c, const struct kv_gate_opts *g,
               const struct kv_run_hooks *h, int64_t *run_id, char *err, size_t errlen) {
  struct watch w;
  h = watch_start(&w, h, 0);
  char note[256] = "";
  int rc = run_new(st, t, starter, c, g, h, run_id, note, sizeof note, err, errlen);
  watch_end(&w, st, rc, err, note);
  return rc;
}

/* tune judged every point of its space before the steps asked: said so. */
static void space_note(const struct search *s, char *note, size_t cap) {
  if (s->ntun && s->npts < s->steps && s->space <= (uint64_t)s->npts)
    snprintf(note, cap, "every point of the tune space judged: %d points (%d steps asked)", s->npts,
             s->steps);
}

static int run_new(struct kv_store *st, const struct kv_task *t, const char *starter,
                   const struct kv_run_config *c, const struct kv_gate_opts *g,
                   const struct kv_run_hooks *h, int64_t *run_id, char *note, size_t notecap,
                   char *err, size_t errlen) {
  const struct strategy *strat = find_strategy(c->strategy ? c->strategy : "tune");
  if (!strat)
    return kv_error(err, errlen,
                    "--strategy %s: not in this build; use tune, greedy, best-of-n or ada",
                    c->strategy);
  if (strat->pick)
    return llm_run_new(st, t, starter, strat, c, g, h, run_id, err, errlen);
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
  if (rc == 0)
    space_note(&s, note, notecap);
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

/* The task a run resumes, loaded from dir: refused when its spec changed
 * since the run started. */
static int resume_task(const char *dir, const struct kv_run_row *run, int64_t run_id,
                       struct kv_task **t, char *err, size_t errlen) {
  if (kv_task_load(dir, t, err, errlen) < 0)
    return -1;
  char sh[65];
  kv_sha256_hex((*t)->json, strlen((*t)->json), sh);
  if (strcmp(sh, run->spec_hash ? run->spec_hash : "") != 0)
    return kv_error(err, errlen, "%s: the task changed since run %lld started; start a new run",
                    dir, (long long)run_id);
  return 0;
}

/* An LLM strategy's run goes on from the nodes the store holds. */
static int resume_llm(struct kv_store *st, int64_t run_id, const struct kv_run_row *run,
                      json_t *cfg, const struct strategy *strat, const char *dir,
                      const struct kv_gate_opts *g, const struct kv_run_hooks *h, char *err,
                      size_t errlen) {
  struct kv_run_config lc = {0};
  lc.strategy = strat->name;
  lc.steps = (int)json_integer_value(json_object_get(cfg, "steps"));
  lc.seed = (uint64_t)json_integer_value(json_object_get(cfg, "seed"));
  llm_settings_read(json_object_get(cfg, "llm"), &lc.llm);
  struct kv_task *t = NULL;
  struct kv_node_row *nodes = NULL;
  int nn = 0, rc = -1;
  if (resume_task(dir, run, run_id, &t, err, errlen) == 0 &&
      kv_store_run_nodes(st, run_id, &nodes, &nn, err, errlen) >= 0) {
    rc = kv_store_run_set_status(st, run_id, "running", err, errlen);
    /* Resume with a different seed stream than the first session's. */
    lc.seed ^= (uint64_t)nn * 0x9e3779b97f4a7c15ull;
    if (rc == 0)
      rc = kva_search_llm(st, t, run->task_id, run_id, strat->pick, &lc, g, h, nodes, nn, err,
                          errlen);
  }
  kv_node_rows_free(nodes, nn);
  kv_task_free(t);
  return rc;
}

/* A recorded accepted node into the progress's best and runner-up, with
 * the interval and CV its evaluation recorded (unknown where it has none). */
static void progress_from_eval(struct kv_store *st, const struct kv_node_row *n,
                               struct kv_run_progress *pr) {
  double lo = 0, hi = 0, cv = 0;
  struct kv_eval_row ev;
  if (n->eval_id > 0 && kv_store_get_eval(st, n->eval_id, &ev, NULL, 0) == 0) {
    json_t *j = json_loads(ev.result_json ? ev.result_json : "", 0, NULL);
    json_t *tj = json_object_get(j, "timing"), *ci = json_object_get(tj, "ci");
    lo = json_number_value(json_object_get(ci, "low"));
    hi = json_number_value(json_object_get(ci, "high"));
    cv = json_number_value(json_object_get(json_object_get(tj, "candidate"), "cv"));
    json_decref(j);
    kv_eval_row_release(&ev);
  }
  kv_run_progress_accepted(pr, n->source_hash, n->speedup, lo, hi, cv);
}

/* tune goes on from the points the store holds, rebuilt in step order. */
static int resume_tune(struct kv_store *st, int64_t run_id, const struct kv_run_row *run,
                       json_t *cfg, const struct strategy *strat, const char *starter,
                       const char *dir, const struct kv_gate_opts *g, const struct kv_run_hooks *h,
                       char *note, size_t notecap, char *err, size_t errlen) {
  int rc = -1;
  struct kv_task *t = NULL;
  char *src = NULL;
  struct search s;
  memset(&s, 0, sizeof s);
  size_t len = 0;
  struct kv_node_row *nodes = NULL;
  int nn = 0;
  if (resume_task(dir, run, run_id, &t, err, errlen) < 0)
    goto out;
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
    if (pt->speedup > 0)
      progress_from_eval(st, &nodes[i], &pr);
    s.npts++;
  }
  pr.step = s.npts;
  rc = kv_store_run_set_status(st, run_id, "running", err, errlen);
  if (rc == 0)
    rc = drive(st, &s, strat, run->task_id, run_id, g, h, &pr, err, errlen);
  if (rc == 0)
    space_note(&s, note, notecap);
out:
  kv_node_rows_free(nodes, nn);
  free(s.pts);
  free(src);
  kv_task_free(t);
  return rc;
}

int kv_run_resume(struct kv_store *st, int64_t run_id, const struct kv_gate_opts *g,
                  const struct kv_run_hooks *h, char *err, size_t errlen) {
  struct kv_run_row run;
  if (kv_store_run_get(st, run_id, &run, err, errlen) < 0)
    return -1;
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
  int rc;
  struct watch w;
  char note[256] = "";
  h = watch_start(&w, h, run_id);
  if (strat && strat->pick && dir)
    rc = resume_llm(st, run_id, &run, cfg, strat, dir, g, h, err, errlen);
  else if (!strat || !starter || !dir)
    rc = kv_error(err, errlen, "run %lld: its configuration in the store is unreadable",
                  (long long)run_id);
  else
    rc = resume_tune(st, run_id, &run, cfg, strat, starter, dir, g, h, note, sizeof note, err,
                     errlen);
  if (strat && dir)
    watch_end(&w, st, rc, err, note);
  json_decref(cfg);
  kv_run_row_release(&run);
  return rc;
}
