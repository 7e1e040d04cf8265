/* Benches: a strategy over every task of a suite, resumable at any moment. */
#include "kevo/bench.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "internal.h"
#include "kevo/llm.h"
#include "kevo/util.h"
#include "kevo/surface.h"

const double kv_bench_p[KV_BENCH_NP] = {0, 1, 1.5, 2};

/* ---- finding the tasks of a suite ---------------------------------------- */

struct found_list {
  struct kv_bench_found *v;
  int n, cap;
};

static int by_name(const void *a, const void *b) {
  return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* "level2" anywhere in the path below the suite gives the level. */
static int level_of(const char *name) {
  for (const char *p = name; (p = strstr(p, "level")); p += 5) {
    if (p != name && p[-1] != '/')
      continue;
    const char *d = p + 5;
    if (isdigit((unsigned char)d[0]) && (d[1] == '/' || d[1] == 0 || isdigit((unsigned char)d[1])))
      return atoi(d);
  }
  return 0;
}

static int has_task(const char *dir) {
  char p[PATH_MAX];
  struct stat st;
  return snprintf(p, sizeof p, "%s/task.json", dir) < (int)sizeof p && stat(p, &st) == 0 &&
         S_ISREG(st.st_mode);
}

static int add_found(struct found_list *l, const char *dir, const char *name, char *err,
                     size_t errlen) {
  if (l->n >= KV_BENCH_MAX_TASKS)
    return kv_error(err, errlen, "%s: a suite holds at most %d tasks; split it", dir,
                    KV_BENCH_MAX_TASKS);
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 64;
    struct kv_bench_found *g = realloc(l->v, (size_t)nc * sizeof *g);
    if (!g)
      return kv_error(err, errlen, "out of memory");
    l->v = g;
    l->cap = nc;
  }
  struct kv_bench_found *f = &l->v[l->n];
  f->dir = strdup(dir);
  f->name = strdup(name);
  f->level = level_of(name);
  if (!f->dir || !f->name) {
    free(f->dir);
    free(f->name);
    return kv_error(err, errlen, "out of memory");
  }
  l->n++;
  return 0;
}

static int walk(const char *dir, const char *rel, int depth, struct found_list *l, char *err,
                size_t errlen) {
  DIR *d = opendir(dir);
  if (!d)
    return kv_error(err, errlen, "%s: cannot read the suite directory: %s", dir, strerror(errno));
  char **names = NULL;
  int n = 0, cap = 0, rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      int nc = cap ? 2 * cap : 64;
      char **g = realloc(names, (size_t)nc * sizeof *g);
      if (!g) {
        rc = kv_error(err, errlen, "out of memory");
        break;
      }
      names = g;
      cap = nc;
    }
    if (!(names[n] = strdup(e->d_name))) {
      rc = kv_error(err, errlen, "out of memory");
      break;
    }
    n++;
  }
  closedir(d);
  if (n > 1)
    qsort(names, (size_t)n, sizeof *names, by_name);
  for (int i = 0; i < n && rc == 0; i++) {
    char path[PATH_MAX], name[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= (int)sizeof path ||
        snprintf(name, sizeof name, "%s%s%s", rel, *rel ? "/" : "", names[i]) >= (int)sizeof name)
      continue;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    if (has_task(path))
      rc = add_found(l, path, name, err, errlen);
    else if (depth < 2)
      rc = walk(path, name, depth + 1, l, err, errlen);
  }
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
  return rc;
}

int kv_bench_discover(const char *suite_dir, struct kv_bench_found **out, int *n, char *err,
                      size_t errlen) {
  *out = NULL;
  *n = 0;
  struct stat st;
  if (stat(suite_dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return kv_error(err, errlen,
                    "%s: not a directory; give a suite: a directory of task "
                    "directories (kevo import writes one)",
                    suite_dir);
  if (has_task(suite_dir))
    return kv_error(err, errlen,
                    "%s: this is one task, not a suite; use 'kevo run %s', or give "
                    "the directory that holds it",
                    suite_dir, suite_dir);
  struct found_list l = {0};
  if (walk(suite_dir, "", 1, &l, err, errlen) < 0) {
    kv_bench_found_free(l.v, l.n);
    return -1;
  }
  if (l.n == 0) {
    free(l.v);
    return kv_error(err, errlen,
                    "%s: no task directories (a directory holding a task.json) in it "
                    "or two levels below; import PyTorch modules with 'kevo import -o %s FILE.py'",
                    suite_dir, suite_dir);
  }
  *out = l.v;
  *n = l.n;
  return 0;
}

void kv_bench_found_free(struct kv_bench_found *f, int n) {
  for (int i = 0; i < n; i++) {
    free(f[i].dir);
    free(f[i].name);
  }
  free(f);
}

/* ---- the score ------------------------------------------------------------ */

static void score(const struct kv_bench_task_row *rows, int n, int level, int *count, int *correct,
                  double fast_p[KV_BENCH_NP], double *geomean, double *ada) {
  int c = 0, k = 0, timed_c = 0, fast[KV_BENCH_NP] = {0};
  double logs = 0, clamped = 0;
  for (int i = 0; i < n; i++) {
    if (level >= 0 && rows[i].level != level)
      continue;
    k++;
    if (!rows[i].correct)
      continue;
    c++;
    /* Correct but not timed (--no-timing): correct (fast_0), no speedup. */
    int timed = rows[i].speedup > 0;
    if (timed) {
      logs += log(rows[i].speedup);
      clamped += fmin(rows[i].speedup, KV_BENCH_ADA_CLAMP);
      timed_c++;
    }
    for (int p = 0; p < KV_BENCH_NP; p++)
      fast[p] += kv_bench_p[p] == 0 || (timed && rows[i].speedup > kv_bench_p[p]);
  }
  *count = k;
  *correct = c;
  for (int p = 0; p < KV_BENCH_NP; p++)
    fast_p[p] = k ? (double)fast[p] / k : 0;
  *geomean = timed_c ? exp(logs / timed_c) : 0;
  *ada = k ? clamped / k : 0;
}

void kv_bench_summarize(const struct kv_bench_task_row *rows, int n, struct kv_bench_summary *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < n; i++) {
    const char *st = rows[i].status ? rows[i].status : "";
    out->done += !strcmp(st, "done");
    out->failed += !strcmp(st, "failed");
    out->skipped += !strcmp(st, "skipped");
    out->pending += !strcmp(st, "pending") || !strcmp(st, "running");
    int seen = 0;
    for (int l = 0; l < out->nlevels; l++)
      seen |= out->levels[l].level == rows[i].level;
    if (!seen && out->nlevels < KV_BENCH_MAX_LEVELS)
      out->levels[out->nlevels++].level = rows[i].level;
  }
  score(rows, n, -1, &out->n, &out->correct, out->fast_p, &out->geomean, &out->ada);
  /* Levels in ascending order. */
  for (int a = 1; a < out->nlevels; a++)
    for (int b = a; b > 0 && out->levels[b].level < out->levels[b - 1].level; b--) {
      struct kv_bench_level t = out->levels[b];
      out->levels[b] = out->levels[b - 1];
      out->levels[b - 1] = t;
    }
  for (int l = 0; l < out->nlevels; l++) {
    struct kv_bench_level *lv = &out->levels[l];
    score(rows, n, lv->level, &lv->n, &lv->correct, lv->fast_p, &lv->geomean, &lv->ada);
  }
}

/* ---- running ----------------------------------------------------------------- */

struct bench_ctx {
  struct kv_store *s;
  const struct kv_bench_hooks *h;
  struct kv_bench_task_row *row;
  int index, n;
  pthread_mutex_t *mu; /* jobs > 1: held around every hook */
  char *err;
  size_t errlen;
  int record_failed;
  const char *stop_reason;
  char why[512];
};

static void on_created(void *ud, int64_t run_id) {
  struct bench_ctx *c = ud;
  c->row->run_id = run_id;
  free(c->row->status);
  c->row->status = strdup("running");
  if (!c->row->status || kv_store_bench_task_update(c->s, c->row, c->err, c->errlen) < 0)
    c->record_failed = 1;
}

static void on_progress(void *ud, const struct kv_run_progress *p) {
  struct bench_ctx *c = ud;
  if (p->stop_reason && !c->why[0])
    snprintf(c->why, sizeof c->why, "%s", p->stop_reason);
  if (!c->h || (!c->h->task_progress && !c->h->run.progress))
    return;
  if (c->mu)
    pthread_mutex_lock(c->mu);
  if (c->h->task_progress) {
    struct kv_bench_event e = {
        .index = c->index, .n = c->n, .task = c->row, .continued = c->row->run_id > 0};
    c->h->task_progress(c->h->ud, &e, p);
  } else
    c->h->run.progress(c->h->run.ud, p);
  if (c->mu)
    pthread_mutex_unlock(c->mu);
}

static int set_state(struct kv_bench_task_row *row, const char *status, const char *detail) {
  char *s = strdup(status), *d = detail ? strdup(detail) : NULL;
  if (!s || (detail && !d)) {
    free(s);
    free(d);
    return -1;
  }
  free(row->status);
  free(row->detail);
  row->status = s;
  row->detail = d;
  return 0;
}

/* The result of a finished run: its best accepted kernel, if any. */
static int take_result(struct kv_store *s, struct kv_bench_task_row *row, char *err,
                       size_t errlen) {
  struct kv_run_row run;
  if (kv_store_run_get(s, row->run_id, &run, err, errlen) < 0)
    return -1;
  row->correct = run.best_hash != NULL;
  row->speedup = run.best_speedup;
  row->speedup_baseline = 0;
  char detail[256];
  snprintf(detail, sizeof detail, "%d candidates%s", run.nnodes,
           row->correct ? "" : ", none accepted");
  if (row->correct && run.best_eval_id > 0) {
    struct kv_eval_row ev;
    if (kv_store_get_eval(s, run.best_eval_id, &ev, err, errlen) == 0) {
      json_t *j = json_loads(ev.result_json ? ev.result_json : "", 0, NULL);
      double b =
          json_real_value(json_object_get(json_object_get(j, "timing"), "speedup_vs_baseline"));
      if (b > 0 && isfinite(b))
        row->speedup_baseline = b;
      /* a side whose time by kevo is off do_bench's: its speedup is said so */
      char note[160];
      for (int side = 0; side < 2; side++)
        if (kv_side_note_json(json_object_get(j, "timing"), side, note, sizeof note)) {
          size_t u = strlen(detail);
          snprintf(detail + u, sizeof detail - u, "; vs %s%s", side ? "baseline" : "reference",
                   note);
        }
      json_decref(j);
      kv_eval_row_release(&ev);
    }
  }
  kv_run_row_release(&run);
  if (set_state(row, "done", detail) < 0)
    return kv_error(err, errlen, "out of memory");
  return 0;
}

/* The starter of a task for this strategy: NULL for an LLM strategy that may
 * start from nothing; *missing set when the strategy needs one and there is
 * none. */
static const char *starter_of(const char *dir, const struct kv_bench_opts *o, char *buf, size_t cap,
                              int *missing) {
  *missing = 0;
  snprintf(buf, cap, "%s/starter.%s", dir,
           kv_surface_ext(kv_surface_find(o->gate ? o->gate->surface : NULL)));
  if (kv_path_exists(buf))
    return buf;
  if (kv_run_strategy_needs_llm(o->run.strategy) == 1)
    return NULL;
  *missing = 1;
  return NULL;
}

static char *config_json(const struct kv_bench_opts *o) {
  const struct kv_gate_opts *g = o->gate;
  json_t *cfg =
      json_pack("{s:s,s:i,s:I,s:s,s:b,s:f}", "strategy", o->run.strategy, "steps", o->run.steps,
                "seed", (json_int_t)o->run.seed, "surface", g && g->surface ? g->surface : "cpu",
                "timing", g ? g->timing : 1, "budget_s", g ? g->time_budget_s : 0);
  if (!cfg)
    return NULL;
  if (g && g->timing_method) /* only when not kevo's own: older benches' settings stay the same */
    json_object_set_new(cfg, "timing_method", json_string(kv_timing_method_name(g->timing_method)));
  if (kv_run_strategy_needs_llm(o->run.strategy) == 1) {
    json_object_set_new(cfg, "llm", kva_llm_settings_json(&o->run.llm));
    json_t *m = o->run.llm_json ? json_loads(o->run.llm_json, 0, NULL) : NULL;
    if (m)
      json_object_set_new(cfg, "model", m);
  }
  char *s = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(cfg);
  return s;
}

static int open_bench(struct kv_store *s, const struct kv_bench_opts *o, const char *cj,
                      int64_t *id, int *resumed, char *err, size_t errlen) {
  *resumed = 0;
  if (!o->fresh && kv_store_bench_find(s, o->suite_dir, cj, id, err, errlen) < 0)
    return -1;
  if (!o->fresh && *id > 0) {
    *resumed = 1;
    return 0;
  }
  struct kv_bench_found *f;
  int n;
  if (kv_bench_discover(o->suite_dir, &f, &n, err, errlen) < 0)
    return -1;
  const char **dirs = malloc((size_t)n * sizeof *dirs), **names = malloc((size_t)n * sizeof *names);
  int *levels = malloc((size_t)n * sizeof *levels);
  int rc = -1;
  if (!dirs || !names || !levels)
    kv_error(err, errlen, "out of memory");
  else {
    for (int i = 0; i < n; i++) {
      dirs[i] = f[i].dir;
      names[i] = f[i].name;
      levels[i] = f[i].level;
    }
    rc = kv_store_bench_create(s, o->suite_dir, cj, dirs, names, levels, n, id, err, errlen);
  }
  free(dirs);
  free(names);
  free(levels);
  kv_bench_found_free(f, n);
  return rc;
}

/* Takes one task to an end (or to a stop). Returns -1 only when the store
 * fails. */
static int run_task(struct bench_ctx *c, const struct kv_bench_opts *o, int *continued) {
  struct kv_bench_task_row *row = c->row;
  char err[4096] = "";
  *continued = 0;
  struct kv_run_hooks rh = c->h ? c->h->run : (struct kv_run_hooks){0};
  rh.progress = on_progress;
  rh.ud = c;
  rh.created = on_created;
  int rc;
  if (row->run_id > 0) {
    /* Its run exists: a finished one is only read, an unfinished one goes on. */
    struct kv_run_row run;
    if (kv_store_run_get(c->s, row->run_id, &run, c->err, c->errlen) < 0)
      return -1;
    int finished = !strcmp(run.status, "done");
    kv_run_row_release(&run);
    *continued = 1;
    rc = finished ? 0 : kv_run_resume(c->s, row->run_id, o->gate, &rh, err, sizeof err);
  } else {
    struct kv_task *t;
    if (kv_task_load(row->dir, &t, err, sizeof err) < 0)
      return set_state(row, "failed", err) < 0
                 ? kv_error(c->err, c->errlen, "out of memory")
                 : kv_store_bench_task_update(c->s, row, c->err, c->errlen);
    char sp[PATH_MAX];
    int missing;
    const char *starter = starter_of(row->dir, o, sp, sizeof sp, &missing);
    if (missing) {
      kv_task_free(t);
      char why[3 * PATH_MAX + 256];
      snprintf(why, sizeof why,
               "%s: no starter kernel, which the %s strategy needs (an imported "
               "module has none: write one with kevo task starter %s -o %s, or use an LLM "
               "strategy)",
               sp, o->run.strategy, row->dir, sp);
      return set_state(row, "skipped", why) < 0
                 ? kv_error(c->err, c->errlen, "out of memory")
                 : kv_store_bench_task_update(c->s, row, c->err, c->errlen);
    }
    int64_t run_id = 0;
    rc = kv_run_new(c->s, t, starter, &o->run, o->gate, &rh, &run_id, err, sizeof err);
    kv_task_free(t);
  }
  if (c->record_failed)
    return -1;
  if (rc < 0) {
    if (set_state(row, "failed", err) < 0)
      return kv_error(c->err, c->errlen, "out of memory");
    return kv_store_bench_task_update(c->s, row, c->err, c->errlen);
  }
  int stopped = (c->h && c->h->run.stop && *c->h->run.stop) || c->why[0];
  if (stopped)
    return 0; /* left "running": the next session continues its run */
  if (take_result(c->s, row, c->err, c->errlen) < 0)
    return -1;
  return kv_store_bench_task_update(c->s, row, c->err, c->errlen);
}

/* ---- several tasks at once ---------------------------------------------------- */

/* The tasks left, shared by the workers under mu: each takes the next one
 * not yet taken, so no task runs twice; a killed bench leaves each task as
 * the store has it ("running" with its run), which the next session
 * continues. */
struct pool {
  pthread_mutex_t mu;
  const char *db;
  const struct kv_bench_opts *o;
  const struct kv_bench_hooks *h;
  struct kv_bench_task_row *rows;
  int n, next, jobs;
  const struct kv_llm_model *model; /* NULL: no LLM */
  struct kv_llm_budget share;
  int failed, stopped;
  char why[512], err[4096];
};

static int stop_asked(const struct kv_bench_hooks *h) {
  return h && h->run.stop && *h->run.stop;
}

static void *worker_main(void *arg) {
  struct pool *p = arg;
  char err[4096] = "";
  struct kv_store *ws = NULL;
  struct kv_llm *wl = NULL;
  int rc = kv_store_open(p->db, &ws, err, sizeof err);
  if (rc == 0 && p->model) {
    struct kv_llm_opts lo = {.model = p->model, .store = ws, .budget = p->share};
    rc = kv_llm_new(&lo, &wl, err, sizeof err) == KV_LLM_OK ? 0 : -1;
  }
  struct kv_bench_hooks hk = p->h ? *p->h : (struct kv_bench_hooks){0};
  hk.run.llm = wl;
  pthread_mutex_lock(&p->mu);
  if (rc < 0 && !p->failed) {
    p->failed = 1;
    snprintf(p->err, sizeof p->err, "a bench worker: %s", err);
  }
  while (rc == 0 && !p->failed && !p->stopped && !stop_asked(p->h)) {
    while (p->next < p->n && strcmp(p->rows[p->next].status, "pending") &&
           strcmp(p->rows[p->next].status, "running"))
      p->next++;
    if (p->next >= p->n)
      break;
    int i = p->next++;
    struct kv_bench_event e = {
        .index = i, .n = p->n, .task = &p->rows[i], .continued = p->rows[i].run_id > 0};
    if (hk.task_start)
      hk.task_start(hk.ud, &e);
    pthread_mutex_unlock(&p->mu);
    struct bench_ctx c = {.s = ws,
                          .h = &hk,
                          .row = &p->rows[i],
                          .index = i,
                          .n = p->n,
                          .mu = &p->mu,
                          .err = err,
                          .errlen = sizeof err};
    double t0 = kv_now_s();
    int trc = run_task(&c, p->o, &e.continued);
    e.seconds = kv_now_s() - t0;
    pthread_mutex_lock(&p->mu);
    if (trc < 0) {
      if (!p->failed)
        snprintf(p->err, sizeof p->err, "%s", err);
      p->failed = 1;
      break;
    }
    if (hk.task_end)
      hk.task_end(hk.ud, &e);
    if ((stop_asked(p->h) || c.why[0]) && !p->stopped) {
      p->stopped = 1; /* the others finish the task they have, then stop */
      snprintf(p->why, sizeof p->why, "%s", c.why[0] ? c.why : "stopped");
    }
  }
  pthread_mutex_unlock(&p->mu);
  kv_llm_free(wl);
  if (ws)
    kv_store_close(ws);
  return NULL;
}

/* What is left of a cap, shared among n clients (0: no cap). */
static double share_of(double cap, double spent, int n) {
  if (cap <= 0)
    return 0;
  double left = cap - spent;
  return left > 0 ? left / n : 1e-9; /* spent: each client refuses its first request */
}

static int run_pool(struct kv_store *s, const struct kv_bench_opts *o,
                    const struct kv_bench_hooks *h, struct kv_bench_task_row *rows, int n,
                    int *stopped, char *why, size_t whylen, char *err, size_t errlen) {
  /* With an executor (run.exec), the tasks' threads share it: its servers
   * judge one task's candidates while another task starts or ends, so the
   * GPUs stay busy across tasks (each thread takes only its own results). */
  struct pool p;
  memset(&p, 0, sizeof p);
  p.db = kv_store_path(s);
  p.o = o;
  p.h = h;
  p.rows = rows;
  p.n = n;
  p.jobs = o->jobs > 64 ? 64 : o->jobs;
  struct kv_llm *llm = h ? h->run.llm : NULL;
  if (kv_run_strategy_needs_llm(o->run.strategy) == 1) {
    if (!llm)
      return kv_error(err, errlen, "bench: an LLM strategy needs a model (run.llm)");
    struct kv_llm_budget b;
    struct kv_llm_spend sp;
    kv_llm_budget_of(llm, &b);
    kv_llm_spent(llm, &sp);
    p.model = kv_llm_model_of(llm);
    p.share.max_usd = share_of(b.max_usd, sp.usd, p.jobs);
    double t = share_of((double)b.max_tokens, (double)(sp.input_tokens + sp.output_tokens), p.jobs);
    double k = share_of((double)b.max_calls, (double)sp.calls, p.jobs);
    p.share.max_tokens = b.max_tokens > 0 ? (t >= 1 ? (int64_t)t : 1) : 0;
    p.share.max_calls = b.max_calls > 0 ? (k >= 1 ? (int64_t)k : 1) : 0;
  }
  if (pthread_mutex_init(&p.mu, NULL) != 0)
    return kv_error(err, errlen, "bench: cannot make a lock");
  pthread_t th[64];
  int started = 0;
  for (; started < p.jobs; started++)
    if (pthread_create(&th[started], NULL, worker_main, &p) != 0)
      break;
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.mu);
  if (!started)
    return kv_error(err, errlen, "bench: cannot start a worker thread: %s", strerror(errno));
  if (p.failed)
    return kv_error(err, errlen, "%s", p.err);
  *stopped = p.stopped || stop_asked(h);
  if (*stopped && why)
    snprintf(why, whylen, "%s", p.why[0] ? p.why : "stopped");
  return 0;
}

int kv_bench_run(struct kv_store *s, const struct kv_bench_opts *o, const struct kv_bench_hooks *h,
                 int64_t *bench_id, int *resumed, char *stopped_why, size_t whylen, char *err,
                 size_t errlen) {
  if (stopped_why && whylen)
    stopped_why[0] = 0;
  char *cj = config_json(o);
  if (!cj)
    return kv_error(err, errlen, "out of memory");
  /* One process per bench: a second would run the tasks the first runs. */
  if (kv_store_bench_claim(s, o->suite_dir, cj, o->wait_s, err, errlen) < 0) {
    free(cj);
    return -1;
  }
  int rc = open_bench(s, o, cj, bench_id, resumed, err, errlen);
  free(cj);
  if (rc < 0)
    return -1;
  struct kv_bench_task_row *rows;
  int n;
  if (kv_store_bench_tasks(s, *bench_id, &rows, &n, err, errlen) < 0)
    return -1;
  struct bench_ctx c = {.s = s, .h = h, .err = err, .errlen = errlen};
  int stopped = 0;
  if (o->jobs > 1) {
    rc = run_pool(s, o, h, rows, n, &stopped, stopped_why, whylen, err, errlen);
    if (rc == 0 && !stopped)
      rc = kv_store_bench_set_status(s, *bench_id, "done", err, errlen);
    kv_bench_task_rows_free(rows, n);
    return rc;
  }
  for (int i = 0; i < n && rc == 0 && !stopped; i++) {
    const char *st = rows[i].status;
    if (strcmp(st, "pending") && strcmp(st, "running"))
      continue;
    c.row = &rows[i];
    c.index = i;
    c.n = n;
    struct kv_bench_event e = {
        .index = i, .n = n, .task = &rows[i], .continued = rows[i].run_id > 0};
    if (h && h->task_start)
      h->task_start(h->ud, &e);
    double t0 = kv_now_s();
    rc = run_task(&c, o, &e.continued);
    e.seconds = kv_now_s() - t0;
    stopped = (h && h->run.stop && *h->run.stop) || c.why[0];
    if (rc == 0 && h && h->task_end)
      h->task_end(h->ud, &e);
  }
  if (rc == 0 && stopped && stopped_why)
    snprintf(stopped_why, whylen, "%s", c.why[0] ? c.why : "stopped");
  if (rc == 0 && !stopped)
    rc = kv_store_bench_set_status(s, *bench_id, "done", err, errlen);
  kv_bench_task_rows_free(rows, n);
  return rc;
}
