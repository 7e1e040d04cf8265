/* kevo synthesize: practice tasks written by an LLM, checked and
 * deduplicated. kevo adapt: the agent over a practice suite to grow the
 * memory of validity rules, then the rules deduplicated, audited and
 * reported. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/adapt.h"
#include "kevo/bench.h"
#include "kevo/llm.h"
#include "kevo/rules.h"
#include "kevo/store.h"
#include "kevo/util.h"

/* ---- kevo synthesize ---------------------------------------------------------- */

static void attempt_end(void *ud, const struct kv_synth_event *e) {
  (void)ud;
  const struct kv_synth_attempt_row *r = e->row;
  int w = e->n >= 1000 ? 4 : e->n >= 100 ? 3 : e->n >= 10 ? 2 : 1;
  const char *name = r->name ? r->name : "-";
  if (!strcmp(r->status, "accepted"))
    fprintf(stderr, "[%*d/%d] %s: accepted -> %s (%.1f s)\n", w, e->index + 1, e->n, name,
            r->task_dir, r->seconds > 0 ? r->seconds : 0);
  else
    fprintf(stderr, "[%*d/%d] %s: refused (%s%s%.1f s): %s\n", w, e->index + 1, e->n, name,
            r->cause ? r->cause : "?", r->seconds > 0 ? ", " : "", r->seconds > 0 ? r->seconds : 0,
            r->detail ? r->detail : "");
  fflush(stderr);
}

struct cause_count {
  char cause[32];
  int n;
};

static void print_synth_summary(struct kv_store *s, const struct kv_synth_summary *sum,
                                const char *out_dir) {
  struct kv_synth_attempt_row *rows = NULL;
  int n = 0;
  char err[512];
  struct cause_count causes[32];
  int nc = 0;
  if (kv_store_synth_attempts(s, sum->id, &rows, &n, err, sizeof err) == 0)
    for (int i = 0; i < n; i++) {
      if (strcmp(rows[i].status, "refused"))
        continue;
      const char *c = rows[i].cause ? rows[i].cause : "?";
      int k = 0;
      while (k < nc && strcmp(causes[k].cause, c))
        k++;
      if (k == nc && nc < 32) {
        snprintf(causes[nc].cause, sizeof causes[nc].cause, "%s", c);
        causes[nc++].n = 0;
      }
      if (k < nc)
        causes[k].n++;
    }
  kv_synth_attempt_rows_free(rows, n);
  printf("synthesis %lld: %d attempts: %d accepted, %d refused, %d not yet judged; tasks under "
         "%s\n",
         (long long)sum->id, sum->n, sum->accepted, sum->refused, sum->pending, out_dir);
  if (nc) {
    printf("refused:");
    for (int k = 0; k < nc; k++)
      printf("%s %s %d", k ? "," : "", causes[k].cause, causes[k].n);
    printf("\n");
  }
}

int cmd_synthesize(int argc, char **argv) {
  struct kv_synth_opts o;
  kv_synth_opts_default(&o);
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  const char *db = NULL, *config = NULL;
  int llm_flags = 0;
  long long v;
  int k;
  double d;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (!strcmp(a, "--n") && has) {
      if (cli_integer("--n", argv[++i], 1, KV_SYNTH_MAX_N, &v))
        return 2;
      o.n = (int)v;
    } else if (!strcmp(a, "--style") && has)
      o.style = argv[++i];
    else if (!strcmp(a, "--from") && has)
      o.from_dir = argv[++i];
    else if (!strcmp(a, "-o") && has)
      o.out_dir = argv[++i];
    else if (!strcmp(a, "--ops") && has)
      o.ops_file = argv[++i];
    else if (!strcmp(a, "--seed") && has) {
      if (cli_integer("--seed", argv[++i], 0, LLONG_MAX, &v))
        return 2;
      o.seed = (uint64_t)v;
    } else if (!strcmp(a, "--jobs") && has) {
      if (cli_integer("--jobs", argv[++i], 1, 16, &v))
        return 2;
      o.jobs = (int)v;
    } else if (!strcmp(a, "--concurrency") && has) {
      if (cli_integer("--concurrency", argv[++i], 1, 64, &v))
        return 2;
      o.concurrency = (int)v;
    } else if (!strcmp(a, "--deadline") && has) {
      if (cli_number("--deadline", argv[++i], &o.deadline_s))
        return 2;
    } else if (!strcmp(a, "--max-gib") && has) {
      if (cli_number("--max-gib", argv[++i], &d) || d > 1024)
        return cli_fail("--max-gib: give a number of GiB from 0 to 1024");
      o.max_bytes = (int64_t)(d * (double)(1 << 30));
    } else if (!strcmp(a, "--python") && has)
      o.python = argv[++i];
    else if (!strcmp(a, "--fresh"))
      o.fresh = 1;
    else if (!strcmp(a, "--db") && has)
      db = argv[++i];
    else if ((k = cli_llm_option(&f, &llm_flags, &config, argc, argv, &i)) != 0) {
      if (k < 0)
        return 2;
    } else {
      cli_fail("synthesize: unknown or incomplete option '%s'", a);
      return cli_usage("synthesize");
    }
  }
  if (strcmp(o.style, "composite") && strcmp(o.style, "mutation") &&
      strcmp(o.style, "self-instruct") && strcmp(o.style, "adaexplore"))
    return cli_fail("--style %s: use composite, mutation, self-instruct or adaexplore", o.style);
  if (!strcmp(o.style, "mutation") && !o.from_dir)
    return cli_fail("--style mutation varies existing tasks: give them with --from SUITE_DIR");
  if (!strcmp(o.style, "adaexplore") && !o.from_dir)
    return cli_fail("--style adaexplore combines KernelBench level-1 problems (ids up to 50) with "
                    "torch.nn layers: give the problems with --from SUITE_DIR ('kevo import -o "
                    "kb1 KernelBench/level1')");
  struct kv_store *s;
  if (cli_open_store(db, &s))
    return 2;
  char model_json[1024];
  struct kv_llm *llm = NULL;
  if (cli_make_llm(&f, config, llm_flags, s, &llm, model_json, sizeof model_json) ||
      (!llm && cli_fail("synthesize: no model is configured: name one (--model, --base-url, or a "
                        "\"default\" in kevo.json)"))) {
    kv_store_close(s);
    return 2;
  }
  o.model_json = model_json;
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  o.gate = &g;
  struct kv_synth_hooks h = {.attempt_end = attempt_end, .stop = &cli_stop_flag};
  signal(SIGINT, cli_on_sigint);
  fprintf(stderr, "kevo: synthesize %d %s module%s into %s\n", o.n, o.style, o.n == 1 ? "" : "s",
          o.out_dir);
  struct kv_synth_summary sum;
  char err[4096];
  int rc = kv_synth_run(s, llm, &o, &h, &sum, err, sizeof err);
  struct kv_llm_spend sp;
  kv_llm_spent(llm, &sp);
  fprintf(stderr, "kevo: spent $%.6f (%lld calls, %lld tokens in, %lld out)\n", sp.usd,
          (long long)sp.calls, (long long)sp.input_tokens, (long long)sp.output_tokens);
  int code = 0;
  if (rc < 0) {
    code = cli_fail("%s", err);
  } else {
    if (sum.already)
      fprintf(stderr,
              "kevo: synthesis %lld of %s with these options is complete; nothing was "
              "asked (--fresh makes %d more attempts)\n",
              (long long)sum.id, o.out_dir, o.n);
    else if (sum.resumed)
      fprintf(stderr, "kevo: continued synthesis %lld\n", (long long)sum.id);
    if (sum.stopped[0])
      fprintf(stderr,
              "kevo: synthesis %lld stopped (%s); run the same command again to "
              "continue\n",
              (long long)sum.id, sum.stopped);
    print_synth_summary(s, &sum, o.out_dir);
    code = cli_stop_flag ? 130 : (sum.pending || sum.stopped[0]) ? 1 : 0;
  }
  kv_llm_free(llm);
  kv_store_close(s);
  return code;
}

/* ---- kevo adapt ------------------------------------------------------------------- */

static void task_start(void *ud, const struct kv_bench_event *e) {
  (void)ud;
  fprintf(stderr, "[%d/%d] %s%s\n", e->index + 1, e->n, e->task->name,
          e->continued ? " (continuing its run)" : "");
  fflush(stderr);
}

static void task_end(void *ud, const struct kv_bench_event *e) {
  (void)ud;
  const struct kv_bench_task_row *t = e->task;
  fprintf(stderr, "[%d/%d] %s: %s (%.0f s%s%s)\n", e->index + 1, e->n, t->name, t->status,
          e->seconds, t->detail ? "; " : "", t->detail ? t->detail : "");
  fflush(stderr);
}

/* --jobs N: several tasks at once, one live line for all of them (redrawn
 * in place on a terminal, one line per change elsewhere), and a line per
 * task as it ends. The bench calls these one at a time. */
#define PAR_SLOTS 64
struct par {
  int done, n;
  struct {
    int used, index, step, steps;
    int64_t run_id;
    char name[48];
  } slot[PAR_SLOTS];
  int drawn; /* a live line is on the terminal */
};

static void par_line(struct par *p) {
  char line[1024];
  int running = 0;
  for (int i = 0; i < PAR_SLOTS; i++)
    running += p->slot[i].used;
  size_t u =
      (size_t)snprintf(line, sizeof line, "adapt  %d/%d done  %d running:", p->done, p->n, running);
  for (int i = 0; i < PAR_SLOTS && u < sizeof line; i++)
    if (p->slot[i].used)
      u += (size_t)snprintf(line + u, sizeof line - u, "  %s %d/%d", p->slot[i].name,
                            p->slot[i].step, p->slot[i].steps);
  if (isatty(STDERR_FILENO)) {
    struct winsize ws;
    size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 ? ws.ws_col : 80;
    if (strlen(line) > cols - 1)
      line[cols - 1] = 0;
    fprintf(stderr, "\r%-*s", (int)(cols - 1), line);
    p->drawn = 1;
  } else
    fprintf(stderr, "%s\n", line);
  fflush(stderr);
}

static void par_clear(struct par *p) {
  if (p->drawn && isatty(STDERR_FILENO))
    fprintf(stderr, "\r\033[K");
  p->drawn = 0;
}

static void par_start(void *ud, const struct kv_bench_event *e) {
  struct par *p = ud;
  p->n = e->n;
  for (int i = 0; i < PAR_SLOTS; i++)
    if (!p->slot[i].used) {
      p->slot[i].used = 1;
      p->slot[i].index = e->index;
      p->slot[i].step = 0;
      p->slot[i].steps = 0;
      p->slot[i].run_id = e->task->run_id;
      snprintf(p->slot[i].name, sizeof p->slot[i].name, "%s", e->task->name);
      break;
    }
  par_line(p);
}

static void par_progress(void *ud, const struct kv_bench_event *e,
                         const struct kv_run_progress *r) {
  struct par *p = ud;
  for (int i = 0; i < PAR_SLOTS; i++)
    if (p->slot[i].used && p->slot[i].index == e->index) {
      p->slot[i].step = r->step;
      p->slot[i].steps = r->steps;
      p->slot[i].run_id = r->run_id;
    }
  if (r->note) {
    par_clear(p);
    fprintf(stderr, "kevo: run %lld (%s): %s\n", (long long)r->run_id, e->task->name, r->note);
  }
  if (r->stop_reason) {
    par_clear(p);
    fprintf(stderr, "kevo: run %lld (%s) ends early: %s\n", (long long)r->run_id, e->task->name,
            r->stop_reason);
  }
  par_line(p);
}

static void par_end(void *ud, const struct kv_bench_event *e) {
  struct par *p = ud;
  for (int i = 0; i < PAR_SLOTS; i++)
    if (p->slot[i].used && p->slot[i].index == e->index)
      p->slot[i].used = 0;
  p->done++;
  par_clear(p);
  task_end(NULL, e);
  par_line(p);
}

/* What the runs of a bench spent (their workers' clients are not the one
 * this command made). */
static void runs_spent(struct kv_store *s, int64_t bench_id) {
  struct kv_bench_task_row *rows = NULL;
  int n = 0;
  char err[512];
  if (bench_id <= 0 || kv_store_bench_tasks(s, bench_id, &rows, &n, err, sizeof err) < 0)
    return;
  double usd = 0;
  long long calls = 0;
  for (int i = 0; i < n; i++) {
    struct kv_run_facts f;
    if (rows[i].run_id > 0 && kv_store_run_facts(s, rows[i].run_id, &f, NULL, 0) == 0) {
      usd += f.cost_usd;
      calls += f.llm_calls;
      kv_run_facts_release(&f);
    }
  }
  kv_bench_task_rows_free(rows, n);
  fprintf(stderr, "kevo: the practice runs spent $%.6f in all (%lld calls)\n", usd, calls);
}

/* Evidence of this adaptation's bench, by rule. */
struct rule_here {
  int64_t id;
  int here;
  char from[1024];
  int listed, more;
};
struct here_ctx {
  struct rule_here *v;
  int n, cap;
};

static int collect(void *arg, const struct kv_bench_rule_item *it) {
  struct here_ctx *c = arg;
  struct rule_here *r = c->n ? &c->v[c->n - 1] : NULL;
  if (!r || r->id != it->rule_id) {
    if (c->n == c->cap) {
      int nc = c->cap ? 2 * c->cap : 32;
      struct rule_here *g = realloc(c->v, (size_t)nc * sizeof *g);
      if (!g)
        return 1;
      c->v = g;
      c->cap = nc;
    }
    r = &c->v[c->n++];
    memset(r, 0, sizeof *r);
    r->id = it->rule_id;
  }
  r->here++;
  if (r->listed < 3) {
    size_t used = strlen(r->from);
    snprintf(r->from + used, sizeof r->from - used, "%s%s step %d (%s, evaluation %lld)",
             r->listed ? ", " : "", it->task ? it->task : "?", it->step,
             it->verdict ? it->verdict : "?", (long long)it->eval_id);
    r->listed++;
  } else {
    r->more++;
  }
  return 0;
}

static int print_adapt_report(struct kv_store *s, const struct kv_adapt_summary *sum,
                              const char *suite) {
  char err[1024];
  struct here_ctx hc = {0};
  if (sum->bench_id > 0 &&
      kv_store_bench_rule_items(s, sum->bench_id, collect, &hc, err, sizeof err) < 0) {
    free(hc.v);
    return cli_fail("%s", err);
  }
  struct kv_rule_meta *rows = NULL;
  int n = 0;
  if (kv_store_rules_meta(s, &rows, &n, err, sizeof err) < 0) {
    free(hc.v);
    return cli_fail("%s", err);
  }
  int nnew = 0, shown = 0;
  for (int i = 0; i < hc.n; i++)
    for (int k = 0; k < n; k++)
      if (rows[k].id == hc.v[i].id) {
        shown++;
        nnew += rows[k].count == hc.v[i].here;
      }
  const struct kv_rules_dedup_stats *d = &sum->dedup;
  printf("adaptation %lld of %s (bench %lld): %d candidates, %d accepted, %d failed\n",
         (long long)sum->id, suite, (long long)sum->bench_id, sum->nodes, sum->accepted,
         sum->nodes - sum->accepted);
  printf("rules learnt or seen again from these failures: %d (%d new)\n", shown, nnew);
  printf("deduplication: %d merged by word similarity, %d by the judge (%d judge calls: %d same, "
         "%d different, %d unclear, %d failed%s)\n",
         d->word_merges, d->judge_same, d->judge_calls, d->judge_same, d->judge_different,
         d->judge_unclear, d->judge_failed, d->pairs_left ? "; pairs left unjudged" : "");
  printf("flagged by accepted kernels: %d\n", sum->contradicted);
  if (shown) {
    printf("%-5s %5s %5s %-8s %-9s %s\n", "id", "seen", "here", "surface", "origin", "rule");
    for (int i = 0; i < hc.n; i++)
      for (int k = 0; k < n; k++) {
        if (rows[k].id != hc.v[i].id)
          continue;
        printf("%-5lld %5d %5d %-8s %-9s %s%s\n", (long long)rows[k].id, rows[k].count,
               hc.v[i].here, rows[k].surface ? rows[k].surface : "any", rows[k].origin,
               rows[k].flag ? "[flagged] " : "", rows[k].text);
        printf("%30s from %s", "", hc.v[i].from);
        if (hc.v[i].more)
          printf(" and %d more", hc.v[i].more);
        printf("\n");
        if (rows[k].flag)
          printf("%30s %s\n", "", rows[k].flag);
      }
  }
  printf("'kevo rules export FILE' shares this memory; 'kevo rules audit' lists flagged and noisy "
         "rules\n");
  kv_rule_metas_free(rows, n);
  free(hc.v);
  return 0;
}

int cmd_adapt(int argc, char **argv) {
  struct cli_run_args ra;
  cli_run_args_init(&ra);
  ra.c.llm.rules_llm = 1; /* adapting is learning: failures also go to the rule extractor */
  ra.c.steps = 8;
  const char *suite = NULL;
  int fresh = 0, judge_max = 40, jobs = 1, judge_all = 0;
  long long v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = cli_run_option(&ra, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--fresh"))
      fresh = 1;
    else if (!strcmp(a, "--no-rules-llm"))
      ra.c.llm.rules_llm = 0;
    else if (!strcmp(a, "--jobs") && i + 1 < argc) {
      if (cli_integer("--jobs", argv[++i], 1, 16, &v))
        return 2;
      jobs = (int)v;
    } else if (!strcmp(a, "--judge") && i + 1 < argc) {
      const char *w = argv[++i];
      if (strcmp(w, "pairs") && strcmp(w, "all"))
        return cli_fail("--judge %s: use pairs (rule pairs alike in words, one a call; the "
                        "default) or all (each rule against every earlier one, one call: "
                        "AdaExplore's)",
                        w);
      judge_all = !strcmp(w, "all");
    } else if (!strcmp(a, "--judge-max") && i + 1 < argc) {
      if (cli_integer("--judge-max", argv[++i], 0, 100000, &v))
        return 2;
      judge_max = (int)v;
    } else if (a[0] == '-') {
      cli_fail("adapt: unknown or incomplete option '%s'", a);
      return cli_usage("adapt");
    } else if (!suite)
      suite = a;
    else {
      cli_fail("adapt: unexpected argument '%s'", a);
      return cli_usage("adapt");
    }
  }
  if (!suite) {
    cli_fail("adapt: needs a practice suite (kevo synthesize writes one)");
    return cli_usage("adapt");
  }
  char abs[PATH_MAX], err[4096];
  if (!realpath(suite, abs))
    return cli_fail("%s: no such directory; give a suite (kevo synthesize -o DIR writes one)",
                    suite);
  struct kv_bench_found *found;
  int nfound;
  if (kv_bench_discover(abs, &found, &nfound, err, sizeof err) < 0)
    return cli_fail("%s", err);
  kv_bench_found_free(found, nfound);
  struct kv_store *s;
  if (cli_open_store(ra.db, &s))
    return 2;
  char model_json[1024];
  int code = cli_run_prepare(&ra, s, model_json, sizeof model_json);
  if (!code && !ra.llm)
    code = cli_fail("adapt: no model is configured: kevo adapt learns from an LLM's failures "
                    "(--model, --base-url, or a \"default\" in kevo.json)");
  if (!code && kv_run_strategy_needs_llm(ra.c.strategy) != 1)
    code =
        cli_fail("adapt: --strategy %s uses no LLM; use ada, greedy or best-of-n", ra.c.strategy);
  if (code) {
    kv_llm_free(ra.llm);
    kv_store_close(s);
    return code;
  }
  struct kv_adapt_opts o = {.bench = {.suite_dir = abs, .run = ra.c, .gate = &ra.g, .jobs = jobs},
                            .judge_max = judge_max,
                            .judge_all = judge_all,
                            .fresh = fresh};
  struct kv_bench_hooks h = {.task_start = task_start, .task_end = task_end};
  struct par par;
  memset(&par, 0, sizeof par);
  if (jobs > 1)
    h = (struct kv_bench_hooks){
        .task_start = par_start, .task_end = par_end, .task_progress = par_progress, .ud = &par};
  h.run.progress = cli_run_progress;
  h.run.stop = &cli_stop_flag;
  signal(SIGINT, cli_on_sigint);
  fprintf(stderr, "kevo: adapt on %s: %d tasks, strategy %s, %d steps each, %d at a time\n", abs,
          nfound, ra.c.strategy, ra.c.steps, jobs);
  struct kv_adapt_summary sum;
  int rc = kv_adapt_run(s, ra.llm, &o, &h, &sum, err, sizeof err);
  par_clear(&par);
  if (jobs > 1 && !sum.already)
    runs_spent(s, sum.bench_id);
  struct kv_llm_spend sp;
  kv_llm_spent(ra.llm, &sp);
  fprintf(stderr, "kevo: spent $%.6f (%lld calls, %lld tokens in, %lld out)\n", sp.usd,
          (long long)sp.calls, (long long)sp.input_tokens, (long long)sp.output_tokens);
  if (rc < 0) {
    code = cli_fail("%s", err);
  } else if (sum.already) {
    fprintf(stderr,
            "kevo: the last adaptation of %s is complete; its report follows (--fresh "
            "adapts again)\n",
            abs);
    code = print_adapt_report(s, &sum, abs);
  } else if (sum.stopped[0]) {
    fprintf(stderr,
            "kevo: adaptation %lld stopped (%s); run the same command again to "
            "continue\n",
            (long long)sum.id, sum.stopped);
    print_adapt_report(s, &sum, abs);
    code = cli_stop_flag ? 130 : 1;
  } else {
    code = print_adapt_report(s, &sum, abs);
  }
  kv_llm_free(ra.llm);
  kv_store_close(s);
  return code;
}
