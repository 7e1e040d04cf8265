/* kevo run / runs / resume / best: searches and their results. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/run.h"
#include "kevo/store.h"
#include "kevo/util.h"

static volatile sig_atomic_t stop_flag;

static void on_sigint(int sig) {
  (void)sig;
  if (stop_flag) /* a second Ctrl-C: leave now (everything committed is kept) */
    _exit(130);
  stop_flag = 1;
}

static void progress(void *ud, const struct kv_run_progress *p) {
  (void)ud;
  int bad = 0;
  for (int v = 0; v < KV_V_COUNT; v++)
    if (v != KV_V_OK)
      bad += p->counts[v];
  fprintf(stderr, "\rrun %lld  step %d/%d  best %.2fx  accepted %d  rejected %d  last: %s %s   ",
          (long long)p->run_id, p->step, p->steps, p->best_speedup, p->counts[KV_V_OK], bad,
          p->last_params && *p->last_params ? p->last_params : "starter", p->last_verdict);
  if (p->step >= p->steps)
    fputc('\n', stderr);
  fflush(stderr);
}

static int open_store(const char *db, struct kv_store **s) {
  char path[PATH_MAX], err[1024];
  if (db)
    snprintf(path, sizeof path, "%s", db);
  else if (kv_store_default_path(path, sizeof path) < 0)
    return cli_fail("no store location; set KEVO_DB or pass --db");
  if (kv_store_open(path, s, err, sizeof err) < 0)
    return cli_fail("%s", err);
  return 0;
}

static int print_best(struct kv_store *s, int64_t run_id, const char *out_path) {
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
    char head[1024];
    snprintf(head, sizeof head,
             "/* kevo best of run %lld: task %s, verdict ok, %.2fx the reference (median %.1f "
             "us), device %s, %s */\n",
             (long long)run.id, run.task_name ? run.task_name : "?", run.best_speedup,
             have_ev ? ev.median_us : -1.0, have_ev && ev.device ? ev.device : "?", date);
    if (!src) {
      code = cli_fail("run %lld: the best kernel's source is missing from the store",
                      (long long)run.id);
    } else if (out_path) {
      FILE *f = fopen(out_path, "w");
      if (!f || fputs(head, f) < 0 || fwrite(src, 1, len, f) != len || fclose(f) != 0)
        code = cli_fail("%s: cannot write the kernel", out_path);
      else
        printf("best kernel of run %lld (%.2fx): %s\n", (long long)run.id, run.best_speedup,
               out_path);
    } else {
      fputs(head, stdout);
      fwrite(src, 1, len, stdout);
    }
    if (have_ev)
      kv_eval_row_release(&ev);
    free(src);
  }
  kv_run_row_release(&run);
  return code;
}

int cmd_run(int argc, char **argv) {
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  struct kv_run_config c = {"tune", 16, 0};
  const char *db = NULL, *dir = NULL, *starter = NULL, *out = NULL;
  double v;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--strategy") && i + 1 < argc)
      c.strategy = argv[++i];
    else if (!strcmp(a, "--steps") && i + 1 < argc) {
      if (cli_number("--steps", argv[++i], &v))
        return 2;
      c.steps = (int)v;
    } else if (!strcmp(a, "--seed") && i + 1 < argc) {
      if (cli_number("--seed", argv[++i], &v))
        return 2;
      c.seed = (uint64_t)v;
    } else if (!strcmp(a, "--budget") && i + 1 < argc) {
      if (cli_number("--budget", argv[++i], &v))
        return 2;
      g.time_budget_s = v;
    } else if (!strcmp(a, "--surface") && i + 1 < argc)
      g.surface = argv[++i];
    else if (!strcmp(a, "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(a, "--starter") && i + 1 < argc)
      starter = argv[++i];
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
  int cuda = !strcmp(g.surface, "cuda");
  char spath[PATH_MAX];
  if (!starter) {
    snprintf(spath, sizeof spath, "%s/starter.%s", dir, cuda ? "cu" : "c");
    starter = spath;
  }
  if (access(starter, R_OK) != 0)
    return cli_fail("%s: no starter kernel; write one or pass --starter FILE", starter);
  if (!strcmp(c.strategy, "tune"))
    fprintf(stderr,
            "kevo: no LLM configured for this run: tuning the `// kevo:tune` parameters of %s\n",
            starter);
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  struct kv_calib cal;
  if (cli_calib(&cal, 0, 0) != 0) {
    kv_task_free(t);
    return 2;
  }
  g.calib = &cal;
  struct kv_store *s;
  if (open_store(db, &s)) {
    kv_task_free(t);
    return 2;
  }
  signal(SIGINT, on_sigint);
  struct kv_run_hooks h = {progress, NULL, &stop_flag};
  int64_t run_id = 0;
  int rc = kv_run_new(s, t, starter, &c, &g, &h, &run_id, err, sizeof err);
  int code = 0;
  if (rc < 0)
    code = cli_fail("%s", err);
  else if (stop_flag)
    fprintf(stderr, "\nkevo: stopped; continue with 'kevo resume %lld'\n", (long long)run_id);
  if (rc == 0) {
    char best[PATH_MAX];
    if (!out) {
      snprintf(best, sizeof best, "%s/best-run%lld.%s", ".", (long long)run_id, cuda ? "cu" : "c");
      out = best;
    }
    code = print_best(s, run_id, out);
  }
  kv_store_close(s);
  kv_task_free(t);
  return code;
}

int cmd_resume(int argc, char **argv) {
  const char *db = NULL;
  int64_t id = 0;
  struct kv_gate_opts g;
  kv_gate_opts_default(&g);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (argv[i][0] != '-' && !id)
      id = strtoll(argv[i], NULL, 10);
    else {
      cli_fail("resume: unexpected argument '%s'", argv[i]);
      return cli_usage("resume");
    }
  }
  if (id <= 0) {
    cli_fail("resume: needs a run number (see 'kevo runs')");
    return cli_usage("resume");
  }
  struct kv_store *s;
  if (open_store(db, &s))
    return 2;
  struct kv_calib cal;
  if (cli_calib(&cal, 0, 0) != 0) {
    kv_store_close(s);
    return 2;
  }
  g.calib = &cal;
  signal(SIGINT, on_sigint);
  struct kv_run_hooks h = {progress, NULL, &stop_flag};
  char err[4096];
  int code = 0;
  if (kv_run_resume(s, id, &g, &h, err, sizeof err) < 0)
    code = cli_fail("%s", err);
  else
    fprintf(stderr, "\nkevo: run %lld %s\n", (long long)id, stop_flag ? "stopped" : "finished");
  kv_store_close(s);
  return code;
}

int cmd_runs(int argc, char **argv) {
  const char *db = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else {
      cli_fail("runs: unexpected argument '%s'", argv[i]);
      return cli_usage("runs");
    }
  }
  struct kv_store *s;
  if (open_store(db, &s))
    return 2;
  struct kv_run_row *rows = NULL;
  int n = 0;
  char err[1024];
  int code = 0;
  if (kv_store_runs(s, &rows, &n, 100, err, sizeof err) < 0) {
    code = cli_fail("%s", err);
  } else {
    printf("%-5s %-12s %-8s %-8s %5s %8s  %s\n", "run", "task", "strategy", "status", "steps",
           "best", "started");
    for (int i = 0; i < n; i++) {
      char date[32];
      time_t tt = (time_t)rows[i].created_unix;
      strftime(date, sizeof date, "%Y-%m-%d %H:%M", gmtime(&tt));
      printf("%-5lld %-12s %-8s %-8s %5d %7.2fx  %s\n", (long long)rows[i].id,
             rows[i].task_name ? rows[i].task_name : "?", rows[i].strategy, rows[i].status,
             rows[i].nnodes, rows[i].best_speedup, date);
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
    else if (argv[i][0] != '-' && !id)
      id = strtoll(argv[i], NULL, 10);
    else {
      cli_fail("best: unexpected argument '%s'", argv[i]);
      return cli_usage("best");
    }
  }
  struct kv_store *s;
  if (open_store(db, &s))
    return 2;
  int code = print_best(s, id, out); /* id 0: the most recent run */
  kv_store_close(s);
  return code;
}
