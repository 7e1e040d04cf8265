/* kevo run / runs / resume / best: searches and their results. */
#include <limits.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include <jansson.h>

#include "kevo/exec.h"
#include "kevo/import.h"
#include "kevo/llm.h"
#include "kevo/prompt.h"
#include "kevo/rejudge.h"
#include "kevo/run.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "kevo/surface.h"

volatile sig_atomic_t cli_stop_flag;

void cli_on_sigint(int sig) {
  (void)sig;
  if (cli_stop_flag) /* a second Ctrl-C: leave now (everything committed is kept) */
    _exit(130);
  cli_stop_flag = 1;
}

/* The live line's best: its speedup, and why it may not be the best, as
 * the run's last words say it ("best by luck?"): "2.42x (luck? ties 2.30x,
 * CV 34%)", "0.94x (slower than the reference)". */
static void best_words(const struct kv_run_progress *p, char *out, size_t cap) {
  int f = kv_run_luck(p);
  int n = snprintf(out, cap, "%.2fx", p->best_speedup);
  if (!f || n < 0 || (size_t)n >= cap)
    return;
  char why[96] = "";
  if (f & KV_LUCK_OVERLAP)
    snprintf(why, sizeof why, "ties %.2fx", p->second_speedup);
  if (f & KV_LUCK_NOISY) {
    size_t at = strlen(why);
    snprintf(why + at, sizeof why - at, "%sCV %.0f%%", at ? ", " : "", 100 * p->best_cv);
  }
  if (f & (KV_LUCK_OVERLAP | KV_LUCK_NOISY))
    n += snprintf(out + n, cap - (size_t)n, " (luck? %s)", why);
  if ((f & KV_LUCK_SLOWER) && n >= 0 && (size_t)n < cap)
    snprintf(out + n, cap - (size_t)n, " (slower than the reference)");
}

void cli_run_progress(void *ud, const struct kv_run_progress *p) {
  (void)ud;
  int bad = 0;
  for (int v = 0; v < KV_V_COUNT; v++)
    if (v != KV_V_OK)
      bad += p->counts[v];
  char spend[96] = "";
  if (p->llm_calls > 0 || p->usd > 0)
    snprintf(spend, sizeof spend, "  $%.4f (%lld calls, %d in flight)", p->usd,
             (long long)p->llm_calls, p->in_flight);
  char best[128];
  if (p->best_speedup > 0)
    best_words(p, best, sizeof best);
  else /* nothing accepted yet, or accepted without timing (--no-timing) */
    snprintf(best, sizeof best, "%s", p->counts[KV_V_OK] ? "untimed" : "-");
  char line[512];
  snprintf(line, sizeof line,
           "run %lld  step %d/%d  best %s  accepted %d  rejected %d%s  last: %s %s",
           (long long)p->run_id, p->step, p->steps, best, p->counts[KV_V_OK], bad, spend,
           p->last_params && *p->last_params ? p->last_params : "starter",
           p->last_verdict ? p->last_verdict : "-");
  /* A terminal: one line redrawn in place, cut to its width (a wrapped line
   * cannot be redrawn); anything else (a log, CI): one line per step. */
  struct winsize ws;
  if (isatty(STDERR_FILENO)) {
    size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 ? ws.ws_col : 80;
    if (strlen(line) > cols - 1)
      line[cols - 1] = 0;
    fprintf(stderr, "\r%-*s", (int)(cols - 1), line);
    if (p->step >= p->steps || p->stop_reason)
      fputc('\n', stderr);
  } else
    fprintf(stderr, "%s\n", line);
  if (p->stop_reason)
    fprintf(stderr, "kevo: run %lld ends early: %s\n", (long long)p->run_id, p->stop_reason);
  if (p->note) {
    if (isatty(STDERR_FILENO) && !(p->step >= p->steps || p->stop_reason))
      fputc('\n', stderr);
    fprintf(stderr, "kevo: run %lld: %s\n", (long long)p->run_id, p->note);
  }
  fflush(stderr);
}

static void exec_note(void *ud, const char *msg) {
  (void)ud;
  char m[4096];
  snprintf(m, sizeof m, "%s", msg);
  cli_tidy(m);
  fprintf(stderr, "kevo: executor: %s\n", m);
}

int cli_exec_open(const char *name, const char *gpus, const char *config_path, const char *surface,
                  int concurrency, struct kv_exec **out) {
  char err[4096];
  *out = NULL;
  if (!kv_exec_describe(name))
    return cli_fail("--executor %s: not an executor; use local, gpus, ssh or slurm", name);
  struct kv_exec_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg)
    return cli_fail("out of memory");
  kv_exec_config_default(cfg);
  if (config_path && kv_exec_config_load(config_path, cfg, err, sizeof err) < 0) {
    free(cfg);
    return cli_fail("--executor-config %s", err);
  }
  struct kv_exec_opts o = {.name = name,
                           .concurrency = concurrency,
                           .gpus = gpus,
                           .surface = surface,
                           .config = cfg,
                           .note = exec_note};
  fprintf(stderr, "kevo: executor %s: starting gate servers (%s)\n", name, kv_exec_describe(name));
  int rc = kv_exec_open(&o, out, err, sizeof err);
  free(cfg);
  if (rc < 0)
    return cli_fail("%s", err);
  struct kv_exec_server_info info[KV_EXEC_SERVERS_MAX];
  int n = kv_exec_servers(*out, info, KV_EXEC_SERVERS_MAX), up = 0;
  for (int i = 0; i < n; i++)
    up += info[i].pid > 0;
  struct kv_exec_stats st;
  kv_exec_stats(*out, &st);
  fprintf(stderr,
          "kevo: executor %s: %d of %d gate servers up, %d jobs kept submitted, compile pool: %d "
          "compilers%s\n",
          name, up, n, kv_exec_width(*out), st.compilers,
          st.compilers ? "" : " (the servers compile)");
  return 0;
}

void cli_exec_summary(struct kv_exec *x) {
  if (!x)
    return;
  struct kv_exec_stats st;
  kv_exec_stats(x, &st);
  struct kv_exec_server_info info[KV_EXEC_SERVERS_MAX];
  int n = kv_exec_servers(x, info, KV_EXEC_SERVERS_MAX);
  double slots = st.wall_s * (n > 0 ? n : 1);
  /* One line, read by bench/gpus.sh: where the servers' time went. */
  fprintf(stderr,
          "kevo: executor: %d jobs sent (%d built ahead by the compile pool, %d compiles, %d "
          "shared, %d failed), servers busy %.1f%% of %.1f s x %d, idle waiting for a compile "
          "%.2f s\n",
          st.sent, st.sent_built, st.compiles, st.compiles_shared, st.compile_failures,
          slots > 0 ? 100 * st.slot_busy_s / slots : 0, st.wall_s, n, st.slot_starved_s);
}

/* The LLM client of a run: NULL in *out when no LLM is configured. */
int cli_make_llm(const struct kv_llm_flags *f, const char *config, int flags_given,
                 struct kv_store *s, struct kv_llm **out, char *model_json, size_t mj_cap) {
  char err[2048];
  *out = NULL;
  struct kv_llm_config *cfg = NULL;
  if (kv_llm_config_load(NULL, NULL, config, &cfg, err, sizeof err) != 0)
    return cli_fail("%s", err);
  struct kv_llm_model m;
  struct kv_llm_budget b;
  int rc = kv_llm_config_resolve(cfg, f, &m, &b, err, sizeof err);
  kv_llm_config_free(cfg);
  if (rc != 0 && !flags_given && !config)
    return 0; /* no model named anywhere: no LLM */
  if (rc != 0)
    return cli_fail("%s", err);
  if (!flags_given && !m.name[0])
    return 0;
  /* A dollar cap counts dollars from the model's prices: without them it
   * would cap nothing. Refused when asked for here (--budget-usd), a
   * warning when it comes from a config file. */
  if (b.max_usd > 0 && !(m.input_usd_per_mtok > 0) && !(m.output_usd_per_mtok > 0)) {
    if (f->max_usd > 0)
      return cli_fail("--budget-usd %g: model %s has no price, so kevo cannot count what it "
                      "spends; set \"input_usd_per_mtok\" and \"output_usd_per_mtok\" in its "
                      "entry in kevo.json, or cap calls or tokens instead (\"budget\": "
                      "{\"calls\": N, \"tokens\": N})",
                      b.max_usd, m.name[0] ? m.name : m.model);
    fprintf(stderr,
            "kevo: warning: the budget of $%g caps nothing: model %s has no price (set "
            "\"input_usd_per_mtok\" and \"output_usd_per_mtok\" in its entry)\n",
            b.max_usd, m.name[0] ? m.name : m.model);
  }
  /* The variable's name (never a key) lets a resumed run find its key. */
  if (model_json && mj_cap) {
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s}", "provider", m.provider, "model", m.model,
                          "base_url", m.base_url, "name", m.name, "api_key_env", m.api_key_env);
    char *t = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    snprintf(model_json, mj_cap, "%s", t ? t : "{}");
    free(t);
    json_decref(j);
  }
  struct kv_llm_opts o = {.model = &m, .store = s, .budget = b};
  if (kv_llm_new(&o, out, err, sizeof err) != 0)
    return cli_fail("%s", err);
  return 0;
}

/* A judged node's timing as its evaluation recorded it. */
struct timed_node {
  int64_t node_id;
  double speedup, lo, hi, cv;
};

static int timed_of(struct kv_store *s, const struct kv_node_row *n, struct timed_node *t) {
  char err[256];
  struct kv_eval_row ev;
  memset(t, 0, sizeof *t);
  t->node_id = n->id;
  t->speedup = n->speedup;
  t->lo = t->hi = -1;
  if (n->eval_id <= 0 || kv_store_get_eval(s, n->eval_id, &ev, err, sizeof err) != 0)
    return -1;
  json_t *j = json_loads(ev.result_json ? ev.result_json : "", 0, NULL);
  json_t *tj = json_object_get(j, "timing"), *ci = json_object_get(tj, "ci");
  if (json_is_number(json_object_get(ci, "low")) && json_is_number(json_object_get(ci, "high"))) {
    t->lo = json_number_value(json_object_get(ci, "low"));
    t->hi = json_number_value(json_object_get(ci, "high"));
  }
  t->cv = json_number_value(json_object_get(json_object_get(tj, "candidate"), "cv"));
  json_decref(j);
  kv_eval_row_release(&ev);
  return 0;
}

/* Named "best" on a noisy host: says when the best is not told apart from
 * the runner-up (their 95% intervals overlap), when its own times varied
 * (CV above 10%), and when it is slower than the reference. */
static void luck_warning(struct kv_store *s, int64_t run_id, const char *best_hash) {
  char err[256];
  struct kv_node_row *nodes = NULL;
  int n = 0;
  if (kv_store_run_nodes(s, run_id, &nodes, &n, err, sizeof err) < 0)
    return;
  int b = -1, r = -1;
  for (int i = 0; i < n; i++) {
    if (strcmp(nodes[i].verdict, "ok") || !(nodes[i].speedup > 0))
      continue;
    if (b < 0 || nodes[i].speedup > nodes[b].speedup)
      b = i;
  }
  for (int i = 0; b >= 0 && i < n; i++)
    if (i != b && !strcmp(nodes[i].verdict, "ok") && nodes[i].speedup > 0 &&
        strcmp(nodes[i].source_hash, nodes[b].source_hash) &&
        (r < 0 || nodes[i].speedup > nodes[r].speedup))
      r = i;
  struct timed_node tb, tr = {0};
  if (b >= 0 && !strcmp(nodes[b].source_hash, best_hash) && timed_of(s, &nodes[b], &tb) == 0) {
    /* the live line's rule (kv_run_luck), on the best and the runner-up */
    struct kv_run_progress p;
    memset(&p, 0, sizeof p);
    if (r >= 0 && timed_of(s, &nodes[r], &tr) == 0)
      kv_run_progress_accepted(&p, nodes[r].source_hash, tr.speedup, tr.lo, tr.hi, tr.cv);
    kv_run_progress_accepted(&p, nodes[b].source_hash, tb.speedup, tb.lo, tb.hi, tb.cv);
    int luck = kv_run_luck(&p);
    if (luck & KV_LUCK_OVERLAP)
      fprintf(stderr,
              "kevo: best by luck? the best, %.2fx [%.2f, %.2f] (node %lld), and the runner-up, "
              "%.2fx [%.2f, %.2f] (node %lld): their 95%% intervals overlap, so this host does "
              "not tell them apart; time both again with a longer --budget before trusting the "
              "order\n",
              tb.speedup, tb.lo, tb.hi, (long long)tb.node_id, tr.speedup, tr.lo, tr.hi,
              (long long)tr.node_id);
    if (luck & KV_LUCK_NOISY)
      fprintf(
          stderr,
          "kevo: best by luck? the best's times varied: CV %.0f%% over its calls (above 10%%: a "
          "noisy host); its %.2fx may not hold\n",
          100 * tb.cv, tb.speedup);
    if (luck & KV_LUCK_SLOWER)
      fprintf(stderr,
              "kevo: the best kernel is slower than the reference (%.2fx%s): no candidate of this "
              "run beat it\n",
              tb.speedup, tb.hi > 0 && tb.hi < 1 ? ", its whole interval below 1" : "");
  }
  kv_node_rows_free(nodes, n);
}

/* A best kernel judged by a remote executor (ssh, slurm) is judged again on
 * this host before it is reported or written out (kevo/rejudge.h). Returns
 * 1 when this host rejects it (said, with both verdicts), else 0; `word`
 * gets what the kernel's header says of its verdict. */
/* The re-judgement, recorded beside the remote evaluation it checks (an
 * evaluation whose result_json has "rejudge": {of_eval, executor, host,
 * remote_verdict, agrees}). */
static void record_rejudge(struct kv_store *s, const struct kv_eval_row *ev,
                           const struct kv_rejudge *r) {
  json_t *j = json_pack("{s:s,s:s,s:{s:I,s:s,s:s,s:s,s:b}}", "verdict", r->verdict, "detail",
                        r->why, "rejudge", "of_eval", (json_int_t)ev->id, "executor", r->executor,
                        "host", r->host, "remote_verdict", ev->verdict ? ev->verdict : "?",
                        "agrees", r->state == KV_REJUDGE_AGREES);
  char *js = j ? json_dumps(j, JSON_COMPACT) : NULL;
  struct kv_eval_record rec = {.task_id = ev->task_id,
                               .source_hash = ev->source_hash,
                               .surface = ev->surface,
                               .device = "this host (re-judged)",
                               .verdict = r->verdict,
                               .detail = r->why,
                               .median_us = -1,
                               .speedup = -1,
                               .result_json = js ? js : "{}"};
  char err[512];
  if (kv_store_add_eval(s, &rec, NULL, err, sizeof err) < 0)
    fprintf(stderr, "kevo: warning: the re-judgement was not recorded: %s\n", err);
  free(js);
  json_decref(j);
}

static int rejudge_best(struct kv_store *s, const struct kv_run_row *run,
                        const struct kv_eval_row *ev, const char *src, size_t len, char *word,
                        size_t cap) {
  struct kv_rejudge r;
  snprintf(word, cap, "verdict ok");
  if (!kv_rejudge_is_remote(ev->result_json, &r))
    return 0;
  char err[1024];
  json_t *cfg = json_loads(run->config_json ? run->config_json : "", 0, NULL);
  const char *tdir = json_string_value(json_object_get(cfg, "task_dir"));
  struct kv_task *t = NULL;
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  if (!tdir || kv_task_load(tdir, &t, err, sizeof err) < 0) {
    r.state = KV_REJUDGE_CANNOT;
    snprintf(r.why, sizeof r.why, "the task is not here (%s)", tdir ? err : "no task_dir");
  } else if (kv_rejudge_local(ev->result_json, t, src, len, ev->surface, &g, &r, err, sizeof err) <
             0) {
    r.state = KV_REJUDGE_CANNOT;
    snprintf(r.why, sizeof r.why, "%s", err);
  }
  kv_task_free(t);
  json_decref(cfg);
  if (r.state == KV_REJUDGE_AGREES || r.state == KV_REJUDGE_DISAGREES)
    record_rejudge(s, ev, &r);
  if (r.state == KV_REJUDGE_DISAGREES) {
    fprintf(stderr,
            "kevo: run %lld: the best kernel was accepted by a remote host (%s, host %s) but "
            "this host judges it %s: %s; it is not reported as best nor written out\n",
            (long long)run->id, r.executor, r.host, r.verdict, r.why);
    return 1;
  }
  if (r.state == KV_REJUDGE_AGREES) {
    fprintf(stderr, "kevo: the best kernel (accepted by %s host %s) was judged again here: ok\n",
            r.executor, r.host);
    snprintf(word, cap, "verdict ok (%s host %s, judged again here)", r.executor, r.host);
    return 0;
  }
  fprintf(stderr,
          "kevo: the best kernel's verdict is the remote host's word (%s, host %s): not judged "
          "again here: %s\n",
          r.executor, r.host, r.why);
  snprintf(word, cap, "verdict ok by the remote host's word only (%s host %s)", r.executor, r.host);
  return 0;
}

/* The best kernel of a run: written to out_path, else printed (kevo best);
 * where_only: neither, a line saying how to get it (kevo run and resume
 * write nothing into the working directory unless asked with -o). */
static int print_best(struct kv_store *s, int64_t run_id, const char *out_path, int where_only) {
  char err[1024];
  struct kv_run_row run;
  if (kv_store_run_get(s, run_id, &run, err, sizeof err) < 0)
    return cli_fail("%s", err);
  int code = 0;
  if (!run.best_hash) {
    fprintf(stderr, "kevo: run %lld has no accepted kernel yet\n", (long long)run.id);
    code = 1;
  } else {
    size_t len;
    char *src = kv_store_get_source(s, run.best_hash, &len);
    struct kv_eval_row ev;
    int have_ev =
        run.best_eval_id > 0 && kv_store_get_eval(s, run.best_eval_id, &ev, err, sizeof err) == 0;
    char date[32];
    time_t now = (time_t)(have_ev ? ev.created_unix : kv_unix_time());
    strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
    char head[1024], speed[320] = "not timed", note[160] = "";
    if (run.best_speedup > 0 && have_ev && ev.median_us > 0) {
      json_t *rj = json_loads(ev.result_json ? ev.result_json : "", 0, NULL);
      kv_side_note_json(json_object_get(rj, "timing"), 0, note, sizeof note);
      json_decref(rj);
      snprintf(speed, sizeof speed, "%.2fx the reference%s (median %.1f us)", run.best_speedup,
               note, ev.median_us);
    }
    char word[512] = "verdict ok";
    int refused = src && have_ev && rejudge_best(s, &run, &ev, src, len, word, sizeof word);
    snprintf(head, sizeof head, "/* kevo best of run %lld: task %s, %s, %s, device %s, %s */\n",
             (long long)run.id, run.task_name ? run.task_name : "?", word, speed,
             have_ev && ev.device ? ev.device : "?", date);
    if (refused) {
      code = 1;
    } else if (!src) {
      code = cli_fail("run %lld: the best kernel's source is missing from the store",
                      (long long)run.id);
    } else if (where_only) {
      printf("best kernel of run %lld (%s): 'kevo best %lld -o FILE' writes it\n",
             (long long)run.id, speed, (long long)run.id);
    } else if (out_path) {
      FILE *f = fopen(out_path, "w");
      int ok = f && fputs(head, f) >= 0 && fwrite(src, 1, len, f) == len;
      if (f && fclose(f) != 0) /* closed whatever happened: no FILE leaks on a failed write */
        ok = 0;
      if (!ok)
        code = cli_fail("%s: cannot write the kernel: %s", out_path, strerror(errno));
      else
        printf("best kernel of run %lld (%s): %s\n", (long long)run.id, speed, out_path);
    } else {
      fputs(head, stdout);
      fwrite(src, 1, len, stdout);
    }
    if (src && run.best_speedup > 0 && !refused)
      luck_warning(s, run.id, run.best_hash);
    if (have_ev)
      kv_eval_row_release(&ev);
    free(src);
  }
  kv_run_row_release(&run);
  return code;
}

void cli_run_args_init(struct cli_run_args *r) {
  memset(r, 0, sizeof *r);
  cli_gate_opts_default(&r->g);
  r->c.steps = 16;
  kv_run_llm_defaults(&r->c.llm);
  kv_llm_flags_init(&r->f);
}

int cli_timing_method(const char *text, int *out) {
  if (kv_timing_method_parse(text, out) < 0)
    return cli_fail("--timing: '%s' is not a timing method; use kevo (the default: fresh inputs, "
                    "a cold cache, medians), kernelbench (KernelBench's protocol: %d warm-ups, "
                    "%d trials on the same inputs, no flush, the mean) or do_bench (cuda: "
                    "kevo's, with triton's do_bench flush before every call)",
                    text ? text : "", KV_KB_WARMUP, KV_KB_TRIALS);
  return 0;
}

/* The options of AdaExplore's rules as released (kevo/preset.h): 1 taken,
 * 0 not one of them, -1 after saying why it is bad. */
static int adaexplore_option(struct cli_run_args *r, int argc, char **argv, int *i) {
  const char *a = argv[*i], *w = *i + 1 < argc ? argv[*i + 1] : NULL;
  int tree = !strcmp(a, "--tree"), reward = !strcmp(a, "--reward");
  if (w && !strcmp(a, "--small-step")) {
    if (strcmp(w, "kevo") && strcmp(w, "reviser-tuner")) {
      cli_fail("--small-step %s: use kevo (one call rewrites the kernel; the default) or "
               "reviser-tuner (AdaExplore's: guidance, then exact string edits)",
               w);
      return -1;
    }
    r->c.llm.small_step = !strcmp(w, "reviser-tuner");
    ++*i;
    return 1;
  }
  if (!w || !(tree || reward || !strcmp(a, "--pool-max") || !strcmp(a, "--rule-sources")))
    return 0;
  ++*i;
  if (tree || reward) {
    if (strcmp(w, "kevo") && strcmp(w, "adaexplore")) {
      cli_fail("%s %s: use kevo (the default) or adaexplore (as AdaExplore released it)", a, w);
      return -1;
    }
    *(tree ? &r->c.llm.tree : &r->c.llm.reward) = !strcmp(w, "adaexplore");
  } else if (!strcmp(a, "--pool-max")) {
    long long n;
    if (cli_integer(a, w, 1, 8, &n))
      return -1;
    r->c.llm.pool_max = (int)n;
  } else {
    char err[256];
    if (kv_rule_sources_parse(w, &r->c.llm.rule_sources, err, sizeof err) < 0) {
      cli_fail("--rule-sources %s: %s", w, err);
      return -1;
    }
  }
  return 1;
}

int cli_run_option(struct cli_run_args *r, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  int has = *i + 1 < argc;
  double v;
  long long n;
  int ada = adaexplore_option(r, argc, argv, i);
  if (ada)
    return ada;
#define INT(flag, lo, hi)                                                                          \
  do {                                                                                             \
    if (cli_integer(flag, argv[++*i], lo, hi, &n))                                                 \
      return -1;                                                                                   \
  } while (0)
#define NUM(flag)                                                                                  \
  do {                                                                                             \
    if (cli_number(flag, argv[++*i], &v))                                                          \
      return -1;                                                                                   \
  } while (0)
  if (!strcmp(a, "--skills") && has) {
    const char *w = argv[++*i];
    if (strcmp(w, "on") && strcmp(w, "off")) {
      cli_fail("--skills %s: use --skills on or --skills off", w);
      return -1;
    }
    r->skills = !strcmp(w, "on");
  } else if (!strcmp(a, "--strategy") && has)
    r->c.strategy = argv[++*i];
  else if (!strcmp(a, "--steps") && has) {
    INT("--steps", 1, 1000000);
    r->c.steps = (int)n;
  } else if (!strcmp(a, "--seed") && has) {
    INT("--seed", 0, LLONG_MAX);
    r->c.seed = (uint64_t)n;
  } else if (!strcmp(a, "--budget") && has) {
    NUM("--budget");
    r->g.time_budget_s = v;
  } else if (!strcmp(a, "--timing-ci") && has) {
    if (cli_timing_ci(argv[++*i], &r->g.timing_ci))
      return -1;
  } else if (!strcmp(a, "--timing") && has) {
    if (cli_timing_method(argv[++*i], &r->g.timing_method))
      return -1;
  } else if (!strcmp(a, "--no-timing"))
    r->g.timing = 0;
  else if (!strcmp(a, "--surface") && has)
    r->g.surface = argv[++*i];
  else if (!strcmp(a, "--torch-compile") && has) {
    if (cli_torch_compile_mode(argv[++*i]))
      return -1;
    r->g.torch_compile = argv[*i];
  } else if (!strcmp(a, "--db") && has)
    r->db = argv[++*i];
  else if ((n = cli_llm_option(&r->f, &r->llm_flags, &r->config, argc, argv, i)) != 0)
    return n < 0 ? -1 : 1;
  else if (!strcmp(a, "--concurrency") && has) {
    INT("--concurrency", 1, 64);
    r->c.llm.concurrency = (int)n;
  } else if (!strcmp(a, "--plan-mode") && has) {
    const char *pm = argv[++*i];
    if (strcmp(pm, "explicit") && strcmp(pm, "implicit")) {
      cli_fail("--plan-mode %s: use explicit or implicit", pm);
      return -1;
    }
    r->c.llm.plan_explicit = !strcmp(pm, "explicit");
  } else if (!strcmp(a, "--prompt-blocks") && has) {
    char err[512];
    if (kv_prompt_blocks_parse(argv[++*i], &r->c.llm.prompt_mask, err, sizeof err) < 0) {
      cli_fail("--prompt-blocks: %s", err);
      return -1;
    }
    /* The profiler and the debugger run (cuda) only for a run that asks for
     * their blocks: none of their cost otherwise, the default included. */
    r->g.profile = (r->c.llm.prompt_mask >> KV_PB_PROFILE) & 1;
    r->g.debug = (r->c.llm.prompt_mask >> KV_PB_DEBUG) & 1;
  } else if (!strcmp(a, "--prompts") && has)
    r->c.llm.prompt_dir = argv[++*i];
  else if (!strcmp(a, "--p-large") && has) {
    NUM("--p-large");
    if (v > 1) {
      cli_fail("--p-large: a probability in [0, 1]");
      return -1;
    }
    r->c.llm.p_large = v;
  } else if (!strcmp(a, "--small-limit") && has) {
    INT("--small-limit", 1, 1000);
    r->c.llm.small_limit = (int)n;
  } else if (!strcmp(a, "--explore") && has) {
    NUM("--explore");
    r->c.llm.c_explore = v;
  } else if (!strcmp(a, "--rule-threshold") && has) {
    INT("--rule-threshold", 1, 1000000);
    r->c.llm.rule_threshold = (int)n;
  } else if (!strcmp(a, "--rules-llm"))
    r->c.llm.rules_llm = 1;
  else if (!strcmp(a, "--online-attribution") && has) {
    NUM("--online-attribution");
    if (!(v > 0) || v > 1) {
      cli_fail("--online-attribution %g: the share of steps to randomise, in (0, 1] (0.2 "
               "randomises one step in five)",
               v);
      return -1;
    }
    r->c.llm.attr_share = v;
    if (!(r->c.llm.attr_price > 0))
      r->c.llm.attr_price = 0.05;
  } else if (!strcmp(a, "--attr-price") && has) {
    NUM("--attr-price");
    if (!(v > 0)) {
      cli_fail("--attr-price %g: the reward a feedback block must add per 1,000 prompt tokens "
               "it costs; give a positive number (default 0.05)",
               v);
      return -1;
    }
    r->c.llm.attr_price = v;
  } else
    return 0;
#undef NUM
#undef INT
  return 1;
}

int cli_llm_option(struct kv_llm_flags *f, int *named, const char **config, int argc, char **argv,
                   int *i) {
  const char *a = argv[*i];
  if (*i + 1 >= argc)
    return 0;
  const char *val = argv[*i + 1];
  if (!strcmp(a, "--provider"))
    f->provider = val, *named = 1;
  else if (!strcmp(a, "--base-url"))
    f->base_url = val, *named = 1;
  else if (!strcmp(a, "--model"))
    f->model = val, *named = 1;
  else if (!strcmp(a, "--api-key-env"))
    f->api_key_env = val;
  else if (!strcmp(a, "--config"))
    *config = val;
  else if (!strcmp(a, "--budget-usd")) {
    if (cli_number("--budget-usd", val, &f->max_usd))
      return -1;
  } else
    return 0;
  ++*i;
  return 1;
}

void cli_llm_flags_of_run(struct kv_llm_flags *f, int named, json_t *run_config) {
  json_t *m = json_object_get(run_config, "model");
  if (named || !m)
    return;
  const char *name = json_string_value(json_object_get(m, "name"));
  if (name && *name)
    f->model = name;
  else {
    f->provider = json_string_value(json_object_get(m, "provider"));
    f->model = json_string_value(json_object_get(m, "model"));
    f->base_url = json_string_value(json_object_get(m, "base_url"));
  }
  if (!f->api_key_env)
    f->api_key_env = json_string_value(json_object_get(m, "api_key_env"));
}

int cli_run_prepare(struct cli_run_args *r, struct kv_store *s, char *model_json, size_t mj_cap) {
  if (r->c.strategy && kv_run_strategy_needs_llm(r->c.strategy) < 0)
    return cli_fail("--strategy %s: not in this build; use tune, greedy, best-of-n or ada",
                    r->c.strategy);
  if (r->c.llm.prompt_dir && access(r->c.llm.prompt_dir, R_OK | X_OK) != 0)
    return cli_fail("--prompts %s: not a readable directory", r->c.llm.prompt_dir);
  /* Everything that can be checked is, before a run exists or a call is
   * made: the surface and the prompt templates (each {{variable}}). */
  if (!kv_surface_find(r->g.surface))
    return cli_fail("--surface %s: not a surface; use one of %s", r->g.surface, kv_surface_names());
  struct kv_prompts *pp = NULL;
  char perr[1024];
  if (kv_prompts_load(r->c.llm.prompt_dir, &pp, perr, sizeof perr) < 0)
    return cli_fail("%s", perr);
  kv_prompts_free(pp);
  model_json[0] = 0;
  int needs = r->c.strategy ? kv_run_strategy_needs_llm(r->c.strategy) : -1;
  if (needs != 0 && cli_make_llm(&r->f, r->config, r->llm_flags, s, &r->llm, model_json, mj_cap))
    return 2;
  if (!r->c.strategy)
    r->c.strategy = r->llm ? "ada" : "tune";
  if (kv_run_strategy_needs_llm(r->c.strategy) == 1 && !r->llm)
    return cli_fail("--strategy %s needs an LLM: configure a model (kevo.json, --model, "
                    "--base-url) or use --strategy tune",
                    r->c.strategy);
  r->c.llm_json = model_json[0] ? model_json : NULL;
  /* The key is read when a request is sent; a missing one is found here,
   * before a run exists. */
  const struct kv_llm_model *m = r->llm ? kv_llm_model_of(r->llm) : NULL;
  const char *key = m && m->api_key_env[0] ? getenv(m->api_key_env) : NULL;
  if (m && strcmp(m->provider, "replay") && m->api_key_env[0] && (!key || !*key))
    return cli_fail("the environment variable %s is not set; export %s=<your key> (model '%s' "
                    "names it with api_key_env; for a server that needs no key, pass "
                    "--api-key-env \"\")",
                    m->api_key_env, m->api_key_env, m->name[0] ? m->name : m->model);
  /* cuda: the gate measures (once) and caches the GPU's ceilings itself. */
  if (!kv_surface_gpu(kv_surface_find(r->g.surface))) {
    if (cli_calib(&r->cal, 0, 0) != 0)
      return 2;
    r->g.calib = &r->cal;
  }
  return 0;
}

/* An imported task (reference.py) without DIR/starter.EXT: kevo task
 * starter's candidate, written into a scratch directory (gen_dir, removed
 * when the run ends) and named in path. Returns nonzero (after saying why)
 * when there is none; 0 also when the task is not imported (path unchanged). */
static int generated_starter(const char *dir, const char *surface, const char *ext, char *path,
                             size_t cap, char *gen_dir, size_t gcap) {
  char ref[PATH_MAX + 16], err[2048];
  snprintf(ref, sizeof ref, "%s/reference.py", dir);
  if (!kv_path_exists(ref))
    return 0;
  struct kv_import_opts o;
  kv_import_opts_default(&o);
  struct kv_starter st;
  if (kv_import_starter(&o, dir, surface, &st, err, sizeof err) < 0)
    return cli_fail("%s", err);
  if (!st.ok)
    return cli_fail("%s: no starter.%s, and kevo task starter cannot write one (%s: %s); write "
                    "one or pass --starter FILE, or use an LLM strategy",
                    dir, ext, st.cause, st.detail);
  const char *tmp = getenv("TMPDIR");
  int rc = kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-starter-", gen_dir, gcap, err, sizeof err);
  if (rc == 0) {
    snprintf(path, cap, "%s/starter.%s", gen_dir, ext);
    rc = kv_write_file(path, st.source, strlen(st.source), err, sizeof err);
  }
  if (rc == 0)
    fprintf(stderr, "kevo: %s has no starter.%s: starting from kevo task starter's, which %s\n",
            dir, ext, st.what);
  kv_starter_release(&st);
  return rc < 0 ? cli_fail("%s", err) : 0;
}

int cmd_run(int argc, char **argv) {
  struct cli_run_args ra;
  cli_run_args_init(&ra);
  const char *dir = NULL, *starter = NULL, *out = NULL;
  const char *executor = NULL, *gpus = NULL, *exec_config = getenv("KEVO_EXEC_CONFIG");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = cli_run_option(&ra, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--starter") && i + 1 < argc)
      starter = argv[++i];
    else if (!strcmp(a, "--executor") && i + 1 < argc)
      executor = argv[++i];
    else if (!strcmp(a, "--gpus") && i + 1 < argc)
      gpus = argv[++i];
    else if (!strcmp(a, "--executor-config") && i + 1 < argc)
      exec_config = argv[++i];
    else if (!strcmp(a, "-o") && i + 1 < argc)
      out = argv[++i];
    else if (a[0] == '-') {
      cli_fail("run: unknown or incomplete option '%s'", a);
      return cli_usage("run");
    } else if (!dir)
      dir = a;
    else {
      cli_fail("run: unexpected argument '%s'", a);
      return cli_usage("run");
    }
  }
  if (!dir) {
    cli_fail("run: needs a task directory");
    return cli_usage("run");
  }
  const char *ext = kv_surface_ext(kv_surface_find(ra.g.surface));
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_store *s;
  if (cli_open_store(ra.db, &s)) {
    kv_task_free(t);
    return 2;
  }
  char model_json[1024];
  int chose = ra.c.strategy != NULL; /* --strategy given, else the default */
  int code = cli_run_prepare(&ra, s, model_json, sizeof model_json);
  char spath[PATH_MAX];
  if (!code && !starter && kv_run_strategy_needs_llm(ra.c.strategy) != 1) {
    snprintf(spath, sizeof spath, "%s/starter.%s", dir, ext);
    starter = spath;
  }
  char gen_dir[PATH_MAX] = "";
  if (!code && starter == spath && access(starter, R_OK) != 0 &&
      generated_starter(dir, ra.g.surface, ext, spath, sizeof spath, gen_dir, sizeof gen_dir))
    code = 2;
  if (!code && starter && access(starter, R_OK) != 0)
    code = cli_fail("%s: no starter kernel; write one or pass --starter FILE", starter);
  if (!code && out && !cli_writable(out))
    code = cli_fail("-o %s: cannot write there; give a path in a writable directory", out);
  if (!code && !strcmp(ra.c.strategy, "tune"))
    fprintf(stderr, "kevo: %s: tuning the `// kevo:tune` parameters of %s\n",
            chose ? "--strategy tune (no LLM)" : "no LLM configured for this run", starter);
  else if (!code) {
    json_t *m = json_loads(model_json, 0, NULL);
    const char *name = json_string_value(json_object_get(m, "name"));
    const char *id = json_string_value(json_object_get(m, "model"));
    const char *prov = json_string_value(json_object_get(m, "provider"));
    const char *url = json_string_value(json_object_get(m, "base_url"));
    const char *key = json_string_value(json_object_get(m, "api_key_env"));
    fprintf(stderr, "kevo: strategy %s with model %s%s%s%s (%s%s%s%s%s)\n", ra.c.strategy,
            name && *name ? name
            : id          ? id
                          : "?",
            name && *name && id ? " [" : "", name && *name && id ? id : "",
            name && *name && id ? "]" : "", prov ? prov : "?", url && *url ? " at " : "",
            url && *url ? url : "", key && *key ? ", key from $" : "", key && *key ? key : "");
    json_decref(m);
  }
  if (code) {
    if (gen_dir[0])
      kv_rmtree(gen_dir);
    kv_llm_free(ra.llm);
    kv_store_close(s);
    kv_task_free(t);
    return code;
  }
  struct kv_llm *llm = ra.llm;
  struct kv_run_config c = ra.c;
  struct kv_gate_opts g = ra.g;
  struct kv_exec *x = NULL;
  if (executor || gpus) {
    code = cli_exec_open(executor ? executor : "gpus", gpus, exec_config, ra.g.surface,
                         c.llm.concurrency, &x);
    if (code) {
      if (gen_dir[0])
        kv_rmtree(gen_dir);
      kv_llm_free(ra.llm);
      kv_store_close(s);
      kv_task_free(t);
      return code;
    }
  }
  signal(SIGINT, cli_on_sigint);
  struct kv_run_hooks h = {
      .progress = cli_run_progress, .stop = &cli_stop_flag, .llm = llm, .exec = x};
  struct cli_skill_ctx skx = {s, t, ra.g.surface ? ra.g.surface : "cpu"};
  if (ra.skills) {
    h.skill_pick = cli_skill_pick;
    h.skill_used = cli_skill_used;
    h.skill_ud = &skx;
  }
  int64_t run_id = 0;
  g.warm = x ? NULL : kv_gate_warm_new(); /* judged here: workers kept warm */
  int rc = kv_run_new(s, t, starter, &c, &g, &h, &run_id, err, sizeof err);
  kv_gate_warm_free(g.warm);
  if (gen_dir[0])
    kv_rmtree(gen_dir);
  cli_exec_summary(x);
  kv_exec_close(x);
  if (llm) {
    struct kv_llm_spend sp;
    kv_llm_spent(llm, &sp);
    fprintf(stderr, "kevo: spent $%.6f (%lld calls, %lld tokens in, %lld out)\n", sp.usd,
            (long long)sp.calls, (long long)sp.input_tokens, (long long)sp.output_tokens);
  }
  if (rc < 0)
    code = cli_fail("%s", err);
  else if (cli_stop_flag)
    fprintf(stderr, "\nkevo: stopped; continue with 'kevo resume %lld'\n", (long long)run_id);
  if (rc == 0)
    code = print_best(s, run_id, out, !out);
  if (cli_stop_flag && code == 0)
    code = 130; /* stopped by Ctrl-C: not a finished run */
  kv_llm_free(llm);
  kv_store_close(s);
  kv_task_free(t);
  return code;
}

/* kevo resume --steps N: N more steps than the run has taken, written into
 * its configuration (so that a later resume goes on to the same total). */
static int add_steps(struct kv_store *s, const struct kv_run_row *run, json_t *cfg,
                     long long more) {
  char err[1024];
  long long total = (long long)run->nnodes + more;
  if (!cfg || total > 1000000)
    return cli_fail("resume --steps %lld: run %lld %s", more, (long long)run->id,
                    cfg ? "would pass 1000000 steps" : "has an unreadable configuration");
  json_object_set_new(cfg, "steps", json_integer(total));
  char *cj = json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS);
  int rc = cj ? kv_store_run_set_config(s, run->id, cj, err, sizeof err) : -1;
  free(cj);
  if (rc < 0)
    return cli_fail("%s", cj ? err : "out of memory");
  return 0;
}

int cmd_resume(int argc, char **argv) {
  const char *db = NULL, *config = NULL, *out = NULL;
  int64_t id = 0;
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  int llm_flags = 0, concurrency = 2, budget_given = 0, ci_given = 0;
  long long more = 0;
  const char *executor = NULL, *gpus = NULL, *exec_config = getenv("KEVO_EXEC_CONFIG");
  double v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    int k = cli_llm_option(&f, &llm_flags, &config, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--db") && has)
      db = argv[++i];
    else if (!strcmp(a, "--budget") && has) {
      if (cli_number("--budget", argv[++i], &v))
        return 2;
      g.time_budget_s = v;
      budget_given = 1;
    } else if (!strcmp(a, "--no-timing"))
      g.timing = 0;
    else if (!strcmp(a, "--timing-ci") && has) {
      if (cli_timing_ci(argv[++i], &g.timing_ci))
        return 2;
      ci_given = 1;
    } else if (!strcmp(a, "--steps") && has) {
      if (cli_integer("--steps", argv[++i], 1, 1000000, &more))
        return 2;
    } else if (!strcmp(a, "-o") && has)
      out = argv[++i];
    else if (!strcmp(a, "--executor") && has)
      executor = argv[++i];
    else if (!strcmp(a, "--gpus") && has)
      gpus = argv[++i];
    else if (!strcmp(a, "--executor-config") && has)
      exec_config = argv[++i];
    else if (!strcmp(a, "--concurrency") && has) {
      long long n;
      if (cli_integer("--concurrency", argv[++i], 1, 64, &n))
        return 2;
      concurrency = (int)n;
    } else if (a[0] != '-' && !id) {
      long long n;
      if (cli_integer("resume: the run number", a, 1, LLONG_MAX, &n))
        return 2;
      id = n;
    } else {
      cli_fail("resume: unexpected argument '%s'", a);
      return cli_usage("resume");
    }
  }
  if (id <= 0) {
    cli_fail("resume: needs a run number (see 'kevo runs')");
    return cli_usage("resume");
  }
  if (out && !cli_writable(out))
    return cli_fail("-o %s: cannot write there; give a path in a writable directory", out);
  struct kv_store *s;
  if (cli_open_store(db, &s))
    return 2;
  char err[4096];
  struct kv_run_row run;
  if (kv_store_run_get(s, id, &run, err, sizeof err) < 0) {
    kv_store_close(s);
    return cli_fail("%s", err);
  }
  struct kv_llm *llm = NULL;
  int code = 0;
  json_t *cfg = json_loads(run.config_json ? run.config_json : "", 0, NULL);
  /* Another process running it: refused before anything is spent. */
  if (!strcmp(run.status, "running")) {
    int rc = kv_store_run_set_status(s, id, "running", err, sizeof err);
    code = rc < 0 ? cli_fail("%s", err) : 0;
  }
  if (!code && !strcmp(run.status, "done") && !more)
    fprintf(stderr, "kevo: run %lld is finished; 'kevo resume %lld --steps N' adds N steps\n",
            (long long)id, (long long)id);
  if (!code && kv_run_strategy_needs_llm(run.strategy) == 1) {
    /* The model the run started with, unless flags say otherwise. */
    cli_llm_flags_of_run(&f, llm_flags, cfg);
    char mj[1024];
    if (cli_make_llm(&f, config, 1, s, &llm, mj, sizeof mj))
      code = 2;
  }
  const char *surface = json_string_value(json_object_get(cfg, "surface"));
  if (surface)
    g.surface = surface;
  /* The run's own timing budget, unless --budget says otherwise. */
  double rb = json_number_value(json_object_get(cfg, "time_budget_s"));
  if (!budget_given && rb > 0)
    g.time_budget_s = rb;
  json_t *rci = json_object_get(cfg, "timing_ci"); /* and adaptive timing's target */
  if (!ci_given && json_is_number(rci))
    g.timing_ci = json_number_value(rci);
  /* and its timing method (a run's config says "timing_method" when it was
   * not kevo's own) */
  kv_timing_method_parse(json_string_value(json_object_get(cfg, "timing_method")),
                         &g.timing_method);
  /* --skills on, as the run started (the hooks need the task) */
  struct kv_task *st = NULL;
  const char *tdir = json_string_value(json_object_get(cfg, "task_dir"));
  if (!code && json_is_true(json_object_get(cfg, "skills")) &&
      (!tdir || kv_task_load(tdir, &st, err, sizeof err) < 0))
    code = cli_fail("run %lld started with --skills on: %s", (long long)id,
                    tdir ? err : "its task directory is not recorded");
  struct kv_calib cal;
  int cpu = !kv_surface_gpu(kv_surface_find(g.surface));
  if (!code && cpu && cli_calib(&cal, 0, 0) != 0)
    code = 2;
  struct kv_exec *x = NULL;
  if (!code && (executor || gpus))
    code =
        cli_exec_open(executor ? executor : "gpus", gpus, exec_config, g.surface, concurrency, &x);
  if (!code && more) /* the last check passed: nothing else can refuse now */
    code = add_steps(s, &run, cfg, more);
  int rc = -1;
  if (!code) {
    if (cpu)
      g.calib = &cal;
    signal(SIGINT, cli_on_sigint);
    struct kv_run_hooks h = {
        .progress = cli_run_progress, .stop = &cli_stop_flag, .llm = llm, .exec = x};
    struct cli_skill_ctx skx = {s, st, g.surface};
    if (st) {
      h.skill_pick = cli_skill_pick;
      h.skill_used = cli_skill_used;
      h.skill_ud = &skx;
    }
    g.warm = x ? NULL : kv_gate_warm_new();
    rc = kv_run_resume(s, id, &g, &h, err, sizeof err);
    kv_gate_warm_free(g.warm);
    g.warm = NULL;
    if (rc < 0)
      code = cli_fail("%s", err);
    else
      fprintf(stderr, "\nkevo: run %lld %s\n", (long long)id,
              cli_stop_flag ? "stopped" : "finished");
  }
  cli_exec_summary(x);
  kv_exec_close(x);
  if (llm) {
    struct kv_llm_spend sp;
    kv_llm_spent(llm, &sp);
    fprintf(stderr, "kevo: spent $%.6f (%lld calls, %lld tokens in, %lld out)\n", sp.usd,
            (long long)sp.calls, (long long)sp.input_tokens, (long long)sp.output_tokens);
  }
  /* Its best kernel, as kevo run ends. */
  if (rc == 0)
    code = print_best(s, id, out, !out);
  if (cli_stop_flag && code == 0)
    code = 130;
  kv_task_free(st);
  json_decref(cfg);
  kv_run_row_release(&run);
  kv_llm_free(llm);
  kv_store_close(s);
  return code;
}

int cmd_runs(int argc, char **argv) {
  const char *db = NULL;
  int as_json = 0;
  if (argc > 1 && !strcmp(argv[1], "show"))
    return cmd_runs_show(argc - 1, argv + 1);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--json"))
      as_json = 1;
    else {
      cli_fail("runs: unexpected argument '%s'", argv[i]);
      return cli_usage("runs");
    }
  }
  struct kv_store *s;
  if (cli_open_store_readonly(db, &s))
    return 2;
  struct kv_run_row *rows = NULL;
  int n = 0;
  char err[1024];
  int code = 0;
  if (kv_store_runs(s, &rows, &n, 100, err, sizeof err) < 0) {
    code = cli_fail("%s", err);
  } else if (as_json) {
    json_t *a = json_array();
    for (int i = 0; i < n && a; i++) {
      const struct kv_run_row *r = &rows[i];
      json_t *o =
          json_pack("{s:I,s:s?,s:s?,s:s?,s:i,s:I,s:b}", "id", (json_int_t)r->id, "task",
                    r->task_name, "strategy", r->strategy, "status", r->status, "steps", r->nnodes,
                    "created_unix", (json_int_t)r->created_unix, "accepted", r->best_hash != NULL);
      if (o) /* null: nothing accepted, or accepted untimed */
        json_object_set_new(o, "best_speedup",
                            r->best_hash && r->best_speedup > 0 ? json_real(r->best_speedup)
                                                                : json_null());
      json_array_append_new(a, o);
    }
    char *txt = a ? json_dumps(a, JSON_INDENT(1)) : NULL;
    printf("%s\n", txt ? txt : "[]");
    free(txt);
    json_decref(a);
  } else {
    printf("%-5s %-12s %-8s %-8s %5s %8s  %s\n", "run", "task", "strategy", "status", "steps",
           "best", "started");
    for (int i = 0; i < n; i++) {
      char date[32], best[32] = "-";
      time_t tt = (time_t)rows[i].created_unix;
      strftime(date, sizeof date, "%Y-%m-%d %H:%M", gmtime(&tt));
      if (rows[i].best_hash && rows[i].best_speedup > 0)
        snprintf(best, sizeof best, "%.2fx", rows[i].best_speedup);
      else if (rows[i].best_hash)
        snprintf(best, sizeof best, "untimed");
      printf("%-5lld %-12s %-8s %-8s %5d %8s  %s\n", (long long)rows[i].id,
             rows[i].task_name ? rows[i].task_name : "?", rows[i].strategy, rows[i].status,
             rows[i].nnodes, best, date);
    }
  }
  for (int i = 0; i < n; i++)
    kv_run_row_release(&rows[i]);
  free(rows);
  kv_store_close(s);
  return code;
}

int cmd_best(int argc, char **argv) {
  const char *db = NULL, *out = NULL;
  int64_t id = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "-o") && i + 1 < argc)
      out = argv[++i];
    else if (argv[i][0] != '-' && !id) {
      long long n;
      if (cli_integer("best: the run number", argv[i], 1, LLONG_MAX, &n))
        return 2;
      id = n;
    } else {
      cli_fail("best: unexpected argument '%s'", argv[i]);
      return cli_usage("best");
    }
  }
  struct kv_store *s;
  if (cli_open_store_readonly(db, &s))
    return 2;
  int code = print_best(s, id, out, 0); /* id 0: the most recent run */
  kv_store_close(s);
  return code;
}
