/* kevo bench: a strategy over every task of a suite, resumable, scored the
 * way KernelBench scores (fast_p, geometric mean). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/bench.h"
#include "kevo/exec.h"
#include "kevo/llm.h"
#include "kevo/store.h"
#include "kevo/util.h"

static void task_start(void *ud, const struct kv_bench_event *e) {
  (void)ud;
  fprintf(stderr, "[%*d/%d] %s%s\n",
          e->n >= 100  ? 3
          : e->n >= 10 ? 2
                       : 1,
          e->index + 1, e->n, e->task->name, e->continued ? " (continuing its run)" : "");
  fflush(stderr);
}

static void task_end(void *ud, const struct kv_bench_event *e) {
  (void)ud;
  const struct kv_bench_task_row *t = e->task;
  char what[160];
  if (!strcmp(t->status, "done") && t->correct && t->speedup > 0)
    snprintf(what, sizeof what, "correct, best %.2fx", t->speedup);
  else if (!strcmp(t->status, "done") && t->correct)
    snprintf(what, sizeof what, "correct (untimed)");
  else
    snprintf(what, sizeof what, "%s", !strcmp(t->status, "done") ? "no correct kernel" : t->status);
  fprintf(stderr, "[%*d/%d] %s: %s (%.0f s%s%s)\n",
          e->n >= 100  ? 3
          : e->n >= 10 ? 2
                       : 1,
          e->index + 1, e->n, t->name, what, e->seconds, t->detail ? "; " : "",
          t->detail ? t->detail : "");
  fflush(stderr);
}

static void p_name(char *out, size_t cap, double p) {
  snprintf(out, cap, "fast_%g", p);
}

static json_t *level_json(const struct kv_bench_level *l) {
  json_t *fp = json_object();
  for (int p = 0; p < KV_BENCH_NP; p++) {
    char k[32];
    p_name(k, sizeof k, kv_bench_p[p]);
    json_object_set_new(fp, k, json_real(l->fast_p[p]));
  }
  return json_pack("{s:i,s:i,s:i,s:o,s:f,s:f}", "level", l->level, "tasks", l->n, "correct",
                   l->correct, "fast_p", fp, "geomean_speedup", l->geomean, "adaexplore_score",
                   l->ada);
}

/* How the bench's speedups were timed (its config's timing_method). */
static const char *bench_method(const struct kv_bench_row *b) {
  json_t *cfg = json_loads(b->config_json ? b->config_json : "{}", 0, NULL);
  const char *m = json_string_value(json_object_get(cfg, "timing_method"));
  const char *out = m && !strcmp(m, "kernelbench") ? "kernelbench" : "kevo";
  json_decref(cfg);
  return out;
}

static int print_json(const struct kv_bench_row *b, const struct kv_bench_task_row *rows, int n,
                      const struct kv_bench_summary *sm, const char *stopped) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    const struct kv_bench_task_row *t = &rows[i];
    json_t *o = json_pack("{s:s,s:s,s:s,s:b}", "name", t->name, "dir", t->dir, "status", t->status,
                          "correct", t->correct);
    if (t->level)
      json_object_set_new(o, "level", json_integer(t->level));
    if (t->run_id > 0)
      json_object_set_new(o, "run", json_integer(t->run_id));
    if (t->correct)
      json_object_set_new(o, "speedup", json_real(t->speedup));
    if (t->speedup_baseline > 0)
      json_object_set_new(o, "speedup_vs_baseline", json_real(t->speedup_baseline));
    if (t->detail)
      json_object_set_new(o, "detail", json_string(t->detail));
    json_array_append_new(tasks, o);
  }
  struct kv_bench_level all = {0, sm->n, sm->correct, {0}, sm->geomean, sm->ada};
  memcpy(all.fast_p, sm->fast_p, sizeof all.fast_p);
  json_t *summary = level_json(&all);
  json_object_del(summary, "level");
  json_object_set_new(summary, "done", json_integer(sm->done));
  json_object_set_new(summary, "failed", json_integer(sm->failed));
  json_object_set_new(summary, "skipped", json_integer(sm->skipped));
  json_object_set_new(summary, "pending", json_integer(sm->pending));
  int timed = 0; /* --no-timing: fast_p above 0, geomean and ada mean nothing */
  for (int i = 0; i < n; i++)
    timed |= rows[i].speedup > 0;
  json_object_set_new(summary, "timed", json_boolean(timed));
  json_t *levels = json_array();
  for (int l = 0; l < sm->nlevels; l++)
    json_array_append_new(levels, level_json(&sm->levels[l]));
  json_object_set_new(summary, "levels", levels);
  json_object_set_new(summary, "timing_method", json_string(bench_method(b)));
  json_t *cfg = json_loads(b->config_json ? b->config_json : "{}", 0, NULL);
  json_t *root = json_pack("{s:I,s:s,s:s,s:o,s:o,s:o}", "bench", (json_int_t)b->id, "suite",
                           b->suite_dir, "status", b->status, "config", cfg ? cfg : json_object(),
                           "tasks", tasks, "summary", summary);
  if (stopped && *stopped)
    json_object_set_new(root, "stopped", json_string(stopped));
  char *s = json_dumps(root, JSON_INDENT(2) | JSON_ENSURE_ASCII);
  json_decref(root);
  if (!s)
    return cli_fail("out of memory");
  puts(s);
  free(s);
  return 0;
}

static void print_table(const struct kv_bench_row *b, const struct kv_bench_task_row *rows, int n,
                        const struct kv_bench_summary *sm) {
  int w = 4, any_base = 0;
  for (int i = 0; i < n; i++) {
    int l = (int)strlen(rows[i].name);
    w = l > w ? (l < 60 ? l : 60) : w;
    any_base |= rows[i].speedup_baseline > 0;
  }
  printf("bench %lld: %s (%s)\n", (long long)b->id, b->suite_dir, b->status);
  printf("%-*s  %-7s  %-7s  %8s%s  %5s\n", w, "task", "status", "correct", "speedup",
         any_base ? "  vs baseline" : "", "run");
  for (int i = 0; i < n; i++) {
    const struct kv_bench_task_row *t = &rows[i];
    char sp[32] = "-", bs[32] = "-", run[32] = "-";
    /* a side off do_bench (kv_side_note): "!" beside its speedup, the words after */
    int nr = t->detail && strstr(t->detail, "vs reference (kevo's"),
        nb = t->detail && strstr(t->detail, "vs baseline (kevo's");
    if (t->correct && t->speedup > 0)
      snprintf(sp, sizeof sp, "%.2fx%s", t->speedup, nr ? "!" : "");
    else if (t->correct)
      snprintf(sp, sizeof sp, "untimed");
    if (t->speedup_baseline > 0)
      snprintf(bs, sizeof bs, "%.2fx%s", t->speedup_baseline, nb ? "!" : "");
    if (t->run_id > 0)
      snprintf(run, sizeof run, "%lld", (long long)t->run_id);
    printf("%-*.*s  %-7s  %-7s  %8s", w, w, t->name, t->status,
           !strcmp(t->status, "done") ? (t->correct ? "yes" : "no") : "-", sp);
    if (any_base)
      printf("  %11s", bs);
    printf("  %5s", run);
    if (t->detail && (strcmp(t->status, "done") || nr || nb))
      printf("  %s", t->detail);
    putchar('\n');
  }
  for (int i = 0; i < n; i++)
    if (rows[i].detail && strstr(rows[i].detail, " (kevo's ")) {
      printf("!: kevo's time of that side is more than %.0f%% off triton's do_bench: that "
             "speedup, and the scores below, are not comparable with the field's\n",
             100 * KV_DO_BENCH_TOL);
      break;
    }
  printf("\n%d tasks: %d done, %d failed, %d skipped, %d not yet run\n", sm->n, sm->done,
         sm->failed, sm->skipped, sm->pending);
  printf("%-8s %6s %8s", "level", "tasks", "correct");
  for (int p = 0; p < KV_BENCH_NP; p++) {
    char k[32];
    p_name(k, sizeof k, kv_bench_p[p]);
    printf(" %8s", k);
  }
  printf(" %8s %8s\n", "geomean", "ada");
  int timed = 0; /* --no-timing: no speedup, so no fast_p above 0 and no ada */
  for (int i = 0; i < n; i++)
    timed |= rows[i].speedup > 0;
  for (int l = 0; l <= sm->nlevels; l++) {
    const struct kv_bench_level *lv = l < sm->nlevels ? &sm->levels[l] : NULL;
    if (lv && sm->nlevels == 1)
      continue; /* one level: the "all" line says it */
    char name[16];
    if (lv)
      snprintf(name, sizeof name, lv->level ? "%d" : "none", lv->level);
    printf("%-8s %6d %8d", lv ? name : "all", lv ? lv->n : sm->n, lv ? lv->correct : sm->correct);
    for (int p = 0; p < KV_BENCH_NP; p++)
      if (timed || kv_bench_p[p] == 0)
        printf(" %8.2f", lv ? lv->fast_p[p] : sm->fast_p[p]);
      else
        printf(" %8s", "-");
    double g = lv ? lv->geomean : sm->geomean;
    if (g > 0)
      printf(" %7.2fx", g);
    else
      printf(" %8s", "-");
    if (timed)
      printf(" %7.2fx\n", lv ? lv->ada : sm->ada);
    else
      printf(" %8s\n", "-");
  }
  printf("fast_p (KernelBench's fast_p, p named): the share of all tasks that are correct and "
         "more than p times as fast as the reference; geomean (KernelBench's): the geometric "
         "mean speedup over the correct tasks; ada (AdaExplore's score): the mean speedup over "
         "all tasks, incorrect ones as 0, each clamped at %g\n",
         KV_BENCH_ADA_CLAMP);
  if (!timed)
    printf("not timed (--no-timing, or nothing correct): fast_0 is the share correct; the "
           "other scores need speedups\n");
  else
    printf("speedups timed by %s\n",
           strcmp(bench_method(b), "kernelbench")
               ? "kevo's method (medians of fresh, cold-cache calls; --timing kevo)"
               : "KernelBench's protocol (the mean of 100 trials after 3 warm-ups, same inputs, "
                 "no flush; --timing kernelbench)");
}

static int show(struct kv_store *s, int64_t id, int json, const char *stopped) {
  char err[1024];
  struct kv_bench_row b;
  if (kv_store_bench_get(s, id, &b, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_bench_task_row *rows;
  int n;
  if (kv_store_bench_tasks(s, b.id, &rows, &n, err, sizeof err) < 0) {
    kv_bench_row_release(&b);
    return cli_fail("%s", err);
  }
  struct kv_bench_summary sm;
  kv_bench_summarize(rows, n, &sm);
  int code = 0;
  if (json)
    code = print_json(&b, rows, n, &sm, stopped);
  else
    print_table(&b, rows, n, &sm);
  /* Exit status: 0 every task done, 1 some failed, were skipped or remain. */
  if (!code && (sm.failed || sm.skipped || sm.pending))
    code = 1;
  kv_bench_task_rows_free(rows, n);
  kv_bench_row_release(&b);
  return code;
}

int cmd_bench(int argc, char **argv) {
  struct cli_run_args ra;
  cli_run_args_init(&ra);
  const char *suite = NULL;
  int json = 0, fresh = 0, jobs = 0;
  double wait_s = 0;
  const char *executor = NULL, *gpus = NULL, *exec_config = getenv("KEVO_EXEC_CONFIG");
  int64_t show_id = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = cli_run_option(&ra, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--json"))
      json = 1;
    else if (!strcmp(a, "--wait") && i + 1 < argc) {
      long long v;
      if (cli_integer("--wait", argv[++i], 0, 7 * 86400, &v))
        return 2;
      wait_s = (double)v;
    } else if (!strcmp(a, "--fresh"))
      fresh = 1;
    else if (!strcmp(a, "--jobs") && i + 1 < argc) {
      long long v;
      if (cli_integer("--jobs", argv[++i], 1, 64, &v))
        return 2;
      jobs = (int)v;
    } else if (!strcmp(a, "--executor") && i + 1 < argc)
      executor = argv[++i];
    else if (!strcmp(a, "--gpus") && i + 1 < argc)
      gpus = argv[++i];
    else if (!strcmp(a, "--executor-config") && i + 1 < argc)
      exec_config = argv[++i];
    else if (!strcmp(a, "--show")) {
      show_id = 0;
      if (i + 1 < argc && argv[i + 1][0] != '-') {
        char *end;
        long long v = strtoll(argv[++i], &end, 10);
        if (*end || v <= 0)
          return cli_fail("--show %s: a bench number (see the first line of a bench's table)",
                          argv[i]);
        show_id = v;
      }
    } else if (a[0] == '-') {
      cli_fail("bench: unknown or incomplete option '%s'", a);
      return cli_usage("bench");
    } else if (!suite)
      suite = a;
    else {
      cli_fail("bench: unexpected argument '%s'", a);
      return cli_usage("bench");
    }
  }
  if (show_id >= 0 && suite)
    return cli_fail("bench: --show reads a bench from the store; give no SUITE_DIR with it");
  if (show_id < 0 && !suite) {
    cli_fail("bench: needs a suite directory (a directory of task directories)");
    return cli_usage("bench");
  }
  struct kv_store *s;
  if (cli_open_store(ra.db, &s))
    return 2;
  if (show_id >= 0) {
    int code = show(s, show_id, json, NULL);
    kv_store_close(s);
    return code;
  }
  char abs[PATH_MAX], err[4096];
  if (!realpath(suite, abs)) {
    kv_store_close(s);
    return cli_fail("%s: no such directory; give a suite (a directory of task directories)", suite);
  }
  /* Say what is wrong with the suite before an LLM client or calibration. */
  struct kv_bench_found *found;
  int nfound;
  if (kv_bench_discover(abs, &found, &nfound, err, sizeof err) < 0) {
    kv_store_close(s);
    return cli_fail("%s", err);
  }
  kv_bench_found_free(found, nfound);
  char model_json[1024];
  int code = cli_run_prepare(&ra, s, model_json, sizeof model_json);
  if (code) {
    kv_llm_free(ra.llm);
    kv_store_close(s);
    return code;
  }
  /* An executor is shared by the tasks: two at once by default, so that
   * one task's candidates keep the servers busy while another starts or
   * ends (--jobs sets how many). */
  struct kv_exec *x = NULL;
  if (executor || gpus) {
    code = cli_exec_open(executor ? executor : "gpus", gpus, exec_config, ra.g.surface,
                         ra.c.llm.concurrency, &x);
    if (code) {
      kv_llm_free(ra.llm);
      kv_store_close(s);
      return code;
    }
    if (jobs == 0)
      jobs = 2;
  }
  struct kv_bench_opts o = {
      .suite_dir = abs, .run = ra.c, .gate = &ra.g, .fresh = fresh, .wait_s = wait_s, .jobs = jobs};
  struct kv_bench_hooks h = {.task_start = task_start, .task_end = task_end};
  h.run.progress = cli_run_progress;
  h.run.stop = &cli_stop_flag;
  h.run.llm = ra.llm;
  h.run.exec = x;
  signal(SIGINT, cli_on_sigint);
  int64_t id = 0;
  int resumed = 0;
  char why[512];
  fprintf(stderr, "kevo: bench of %s: %d tasks, strategy %s, %d steps each\n", abs, nfound,
          ra.c.strategy, ra.c.steps);
  int rc = kv_bench_run(s, &o, &h, &id, &resumed, why, sizeof why, err, sizeof err);
  cli_exec_summary(x);
  kv_exec_close(x);
  if (ra.llm) {
    struct kv_llm_spend sp;
    kv_llm_spent(ra.llm, &sp);
    fprintf(stderr, "kevo: spent $%.6f (%lld calls, %lld tokens in, %lld out)\n", sp.usd,
            (long long)sp.calls, (long long)sp.input_tokens, (long long)sp.output_tokens);
  }
  if (rc < 0)
    code = cli_fail("%s", err);
  else {
    if (why[0])
      fprintf(stderr, "kevo: bench %lld stopped (%s); run the same command again to continue\n",
              (long long)id, why);
    code = show(s, id, json, why);
    if (cli_stop_flag)
      code = 130; /* stopped by Ctrl-C */
    else if (!code && why[0])
      code = 1;
  }
  kv_llm_free(ra.llm);
  kv_store_close(s);
  return code;
}
