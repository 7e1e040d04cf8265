/* kevo analyze: which feedback helps an agent (lib/analysis). */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/analysis.h"
#include "kevo/llm.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "kevo/surface.h"

struct ui {
  double budget_usd;
  int json;
};

static int confirm(void *ud, const struct kv_an_cost *c) {
  struct ui *u = ud;
  fprintf(stderr,
          "kevo: analysis: %d node%s x %d conditions x %d samples; %lld recorded already; to do: "
          "%lld LLM calls, at most %lld gate evaluations, at most $%.4f\n",
          c->nodes, c->nodes == 1 ? "" : "s", c->conds, c->samples, (long long)c->done,
          (long long)c->llm_calls, (long long)c->gate_evals, c->usd);
  if (c->recompute > 0)
    fprintf(stderr, "kevo: and %d parent%s judged again for CUDAnalyst's players (%s)\n",
            c->recompute, c->recompute == 1 ? "" : "s", KV_AN_TOOLS);
  if (u->budget_usd > 0 && c->usd > u->budget_usd) {
    fprintf(stderr,
            "kevo: refused: the worst case $%.4f is beyond --budget-usd %.4f; raise it, or take "
            "fewer --samples, --players or --generations\n",
            c->usd, u->budget_usd);
    return 1;
  }
  return 0;
}

static void progress(void *ud, const struct kv_an_progress *p) {
  (void)ud;
  fprintf(stderr, "analysis %lld  %lld/%lld  %s\n", (long long)p->analysis_id, (long long)p->done,
          (long long)p->total, p->last);
}

static int shown_metric(const struct kv_an_result *r, int m) {
  if ((m == KV_AN_M_FAST || m == KV_AN_M_LOGSP) && !r->timed)
    return 0;
  if (m < KV_AN_M_COUNT)
    return 1;
  size_t cube = (size_t)r->nnodes * (size_t)r->ncond * (size_t)r->k;
  for (size_t i = 0; i < cube; i++) /* a plan tag some sample named */
    if (r->y[m][i] > 0)
      return 1;
  return 0;
}

static void coalition_name(const struct kv_an_result *r, unsigned S, char *out, size_t cap) {
  size_t u = 0;
  out[0] = 0;
  if (!S)
    snprintf(out, cap, "{}");
  for (int i = 0; i < r->n && S; i++)
    if (S & (1u << i))
      u += (size_t)snprintf(out + u, u < cap ? cap - u : 0, "%s%s", u ? "+" : "", r->names[i]);
}

static void print_text(const struct kv_an_result *r) {
  char mn[64], cn[256];
  printf("analysis %lld of run %lld (%s): %d node%s (step%s", (long long)r->analysis_id,
         (long long)r->run_id, r->experiment, r->nnodes, r->nnodes == 1 ? "" : "s",
         r->nnodes == 1 ? "" : "s");
  for (int i = 0; i < r->nnodes; i++)
    printf(" %lld", (long long)r->node_steps[i]);
  printf("), %d samples per condition\n", r->k);
  if (strcmp(r->experiment, "shapley")) {
    printf("\n%-22s", "condition");
    for (int m = 0; m < KV_AN_NMETRICS; m++)
      if (shown_metric(r, m))
        printf(" %28s", kv_an_metric_name(m, mn, sizeof mn));
    printf("\n");
    for (int c = 0; c < r->ncond; c++) {
      printf("%-22s", r->names[c]);
      for (int m = 0; m < KV_AN_NMETRICS; m++)
        if (shown_metric(r, m)) {
          char cell[64];
          snprintf(cell, sizeof cell, "%.3f [%.3f, %.3f]", r->cell[m][c], r->cell_lo[m][c],
                   r->cell_hi[m][c]);
          printf(" %28s", cell);
        }
      printf("\n");
    }
    return;
  }
  int ns = 1 << r->n;
  printf("\nv(S) per coalition\n%-40s", "coalition");
  for (int m = 0; m < KV_AN_NMETRICS; m++)
    if (shown_metric(r, m))
      printf(" %17s", kv_an_metric_name(m, mn, sizeof mn));
  printf("\n");
  for (int S = 0; S < ns; S++) {
    coalition_name(r, (unsigned)S, cn, sizeof cn);
    printf("%-40s", cn);
    for (int m = 0; m < KV_AN_NMETRICS; m++)
      if (shown_metric(r, m))
        printf(" %17.3f", r->attr[m].v[S]);
    printf("\n");
  }
  for (int m = 0; m < KV_AN_NMETRICS; m++) {
    if (!shown_metric(r, m))
      continue;
    const struct kv_an_attr *a = &r->attr[m];
    printf("\n%s: v({}) = %.3f, v(all) = %.3f\n", kv_an_metric_name(m, mn, sizeof mn), a->v[0],
           a->v[ns - 1]);
    printf("  %-36s %8s  %-19s %7s\n", "Shapley value", "phi", "95% CI", "p");
    for (int i = 0; i < r->n; i++)
      printf("  %-36s %8.3f  [%7.3f, %7.3f] %7.3f\n", r->names[i], a->phi[i], a->phi_lo[i],
             a->phi_hi[i], a->phi_p[i]);
    if (r->n >= 2) {
      printf("  %-36s %8s  %-19s\n", "interaction index (|S| >= 2)", "I(S)", "95% CI");
      for (int S = 0; S < ns; S++)
        if (S & (S - 1)) {
          coalition_name(r, (unsigned)S, cn, sizeof cn);
          printf("  %-36s %8.3f  [%7.3f, %7.3f]\n", cn, a->I[S], a->I_lo[S], a->I_hi[S]);
        }
      printf("  %-36s %8s  %-19s\n", "Harsanyi dividend (|S| >= 2)", "d(S)", "95% CI");
      for (int S = 0; S < ns; S++)
        if (S & (S - 1)) {
          coalition_name(r, (unsigned)S, cn, sizeof cn);
          printf("  %-36s %8.3f  [%7.3f, %7.3f]\n", cn, a->d[S], a->d_lo[S], a->d_hi[S]);
        }
    }
  }
}

static json_t *num(double x) {
  return isnan(x) ? json_null() : json_real(x);
}

static void print_json(const struct kv_an_result *r) {
  char mn[64], cn[256];
  json_t *j = json_pack("{s:I,s:I,s:s,s:b,s:i,s:i}", "analysis", (json_int_t)r->analysis_id, "run",
                        (json_int_t)r->run_id, "experiment", r->experiment, "complete", r->complete,
                        "nodes", r->nnodes, "samples", r->k);
  json_t *steps = json_array(), *names = json_array(), *ms = json_object();
  for (int i = 0; i < r->nnodes; i++)
    json_array_append_new(steps, json_integer(r->node_steps[i]));
  for (int i = 0; i < r->n; i++)
    json_array_append_new(names, json_string(r->names[i]));
  json_object_set_new(j, "node_steps", steps);
  json_object_set_new(j, strcmp(r->experiment, "shapley") ? "conditions" : "players", names);
  for (int m = 0; r->complete && m < KV_AN_NMETRICS; m++) {
    if (!shown_metric(r, m))
      continue;
    json_t *mj = json_object();
    if (strcmp(r->experiment, "shapley")) {
      for (int c = 0; c < r->ncond; c++)
        json_object_set_new(mj, r->names[c],
                            json_pack("{s:o,s:o,s:o}", "value", num(r->cell[m][c]), "lo",
                                      num(r->cell_lo[m][c]), "hi", num(r->cell_hi[m][c])));
    } else {
      const struct kv_an_attr *a = &r->attr[m];
      int ns = 1 << r->n;
      json_t *v = json_object(), *sh = json_array(), *in = json_array(), *dv = json_array();
      for (int S = 0; S < ns; S++) {
        coalition_name(r, (unsigned)S, cn, sizeof cn);
        json_object_set_new(v, cn, num(a->v[S]));
        if (S & (S - 1)) {
          json_array_append_new(in,
                                json_pack("{s:s,s:o,s:o,s:o}", "players", cn, "value", num(a->I[S]),
                                          "lo", num(a->I_lo[S]), "hi", num(a->I_hi[S])));
          json_array_append_new(dv,
                                json_pack("{s:s,s:o,s:o,s:o}", "players", cn, "value", num(a->d[S]),
                                          "lo", num(a->d_lo[S]), "hi", num(a->d_hi[S])));
        }
      }
      for (int i = 0; i < r->n; i++)
        json_array_append_new(sh, json_pack("{s:s,s:o,s:o,s:o,s:o}", "player", r->names[i], "value",
                                            num(a->phi[i]), "lo", num(a->phi_lo[i]), "hi",
                                            num(a->phi_hi[i]), "p", num(a->phi_p[i])));
      json_object_set_new(mj, "v", v);
      json_object_set_new(mj, "shapley", sh);
      json_object_set_new(mj, "interactions", in);
      json_object_set_new(mj, "dividends", dv);
    }
    json_object_set_new(ms, kv_an_metric_name(m, mn, sizeof mn), mj);
  }
  json_object_set_new(j, "metrics", ms);
  char *t = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(12));
  if (t)
    puts(t);
  free(t);
  json_decref(j);
}

/* CUDAnalyst's options (kevo/preset.h): 1 taken, 0 not one, -1 after
 * saying why it is bad. */
static int ca_option(struct kv_an_opts *o, int argc, char **argv, int *i) {
  const char *a = argv[*i], *w = *i + 1 < argc ? argv[*i + 1] : NULL;
  const char *bad = NULL;
  long long n;
  if (!w)
    return 0;
  if (!strcmp(a, "--rollouts")) {
    if (cli_integer(a, w, 1, 16, &n))
      return -1;
    o->rollouts = (int)n;
  } else if (!strcmp(a, "--score")) {
    if (strcmp(w, "mean") && strcmp(w, "best-of-k"))
      bad = "use mean (every sample counts; the default) or best-of-k (a rollout counts its "
            "best sample, as CUDAnalyst)";
    o->best_of_k = !strcmp(w, "best-of-k");
  } else if (!strcmp(a, "--planner")) {
    if (strcmp(w, "on") && strcmp(w, "off"))
      bad = "use on or off";
    o->planner = !strcmp(w, "on");
  } else if (!strcmp(a, "--frozen")) {
    if (strcmp(w, "recorded") && strcmp(w, "rebuilt"))
      bad = "use rebuilt (the prompt made again; the default) or recorded (the child's prompt as "
            "it was sent)";
    o->frozen_recorded = !strcmp(w, "recorded");
  } else
    return 0;
  if (bad) {
    cli_fail("%s %s: %s", a, w, bad);
    return -1;
  }
  ++*i;
  return 1;
}

int cmd_analyze(int argc, char **argv) {
  struct kv_an_opts ca = {0};
  const char *db = NULL, *config = NULL, *players = NULL, *experiment = NULL, *transfer = NULL;
  long long run_id = 0, samples = 5, lo = 0, hi = -1, boot = 0;
  double thr = 1.0, v;
  struct ui u = {0};
  int fresh = 0, llm_flags = 0;
  struct kv_gate_opts g;
  cli_gate_opts_default(&g);
  struct kv_llm_flags f;
  kv_llm_flags_init(&f);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    int k = cli_llm_option(&f, &llm_flags, &config, argc, argv, &i);
    if (k < 0)
      return 2;
    if (k > 0)
      continue;
    if ((k = ca_option(&ca, argc, argv, &i)) < 0)
      return 2;
    if (k > 0)
      continue;
    if (!strcmp(a, "--db") && has)
      db = argv[++i];
    else if (!strcmp(a, "--players") && has)
      players = argv[++i];
    else if (!strcmp(a, "--experiment") && has)
      experiment = argv[++i];
    else if (!strcmp(a, "--transfer-to") && has)
      transfer = argv[++i];
    else if (!strcmp(a, "--samples") && has) {
      if (cli_integer("--samples", argv[++i], 1, 256, &samples))
        return 2;
    } else if (!strcmp(a, "--bootstrap") && has) {
      if (cli_integer("--bootstrap", argv[++i], 10, 100000, &boot))
        return 2;
    } else if (!strcmp(a, "--generations") && has) {
      const char *t = argv[++i];
      char *e;
      lo = strtoll(t, &e, 10);
      if (e == t || lo < 0)
        return cli_fail("--generations %s: write A..B (steps of the run), A.. or A", t);
      hi = lo;
      if (!strncmp(e, "..", 2)) {
        const char *h = e + 2;
        hi = *h ? strtoll(h, &e, 10) : -1;
        if ((*h && (e == h || hi < lo)) || (*h && *e))
          return cli_fail("--generations %s: write A..B with A <= B, A.. or A", t);
      } else if (*e)
        return cli_fail("--generations %s: write A..B (steps of the run), A.. or A", t);
    } else if (!strcmp(a, "--fast-threshold") && has) {
      if (cli_number("--fast-threshold", argv[++i], &thr))
        return 2;
    } else if (!strcmp(a, "--no-timing"))
      g.timing = 0;
    else if (!strcmp(a, "--budget") && has) {
      if (cli_number("--budget", argv[++i], &v))
        return 2;
      g.time_budget_s = v;
    } else if (!strcmp(a, "--json"))
      u.json = 1;
    else if (!strcmp(a, "--fresh"))
      fresh = 1;
    else if (a[0] != '-' && !run_id) {
      if (cli_integer("analyze: the run number", a, 1, LLONG_MAX, &run_id))
        return 2;
    } else {
      cli_fail("analyze: unexpected argument '%s'", a);
      return cli_usage("analyze");
    }
  }
  u.budget_usd = f.max_usd;

  if (!run_id) {
    cli_fail("analyze: needs a run number (see 'kevo runs')");
    return cli_usage("analyze");
  }
  if (experiment && strcmp(experiment, "planning") && strcmp(experiment, "shapley"))
    return cli_fail("--experiment %s: unknown; the experiments are planning (and shapley, the "
                    "default); plan transfer is --transfer-to MODEL",
                    experiment);
  if (transfer && experiment && strcmp(experiment, "transfer"))
    return cli_fail("--transfer-to and --experiment %s: choose one", experiment);
  if (transfer)
    experiment = "transfer";
  struct kv_store *s;
  if (cli_open_store(db, &s))
    return 2;
  char err[4096];
  struct kv_run_row run;
  if (kv_store_run_get(s, run_id, &run, err, sizeof err) < 0) {
    kv_store_close(s);
    return cli_fail("%s", err);
  }
  json_t *cfg = json_loads(run.config_json ? run.config_json : "", 0, NULL);
  cli_llm_flags_of_run(&f, llm_flags, cfg); /* the run's own model, as a resumed run */
  struct kv_llm *llm = NULL, *target = NULL;
  int code = 0;
  if (!llm_flags && !json_object_get(cfg, "model"))
    code = cli_fail("run %lld recorded no model (strategy %s): analyze a run of an LLM strategy",
                    run_id, run.strategy ? run.strategy : "?");
  if (!code && cli_make_llm(&f, config, 1, s, &llm, NULL, 0))
    code = 2;
  if (!code && transfer) {
    struct kv_llm_flags f2 = f;
    f2.model = transfer;
    if (cli_make_llm(&f2, config, 1, s, &target, NULL, 0))
      code = 2;
  }
  const char *surface = json_string_value(json_object_get(cfg, "surface"));
  if (surface)
    g.surface = surface;
  struct kv_calib cal;
  int cpu = !kv_surface_gpu(kv_surface_find(g.surface));
  if (!code && cpu && cli_calib(&cal, 0, 1) != 0)
    code = 2;
  if (cpu && !code)
    g.calib = &cal;
  if (!code) {
    signal(SIGINT, cli_on_sigint);
    struct kv_an_opts o = {.run_id = run_id,
                           .gen_lo = (int)lo,
                           .gen_hi = (int)hi,
                           .players = players,
                           .samples = (int)samples,
                           .fast_threshold = thr,
                           .experiment = experiment,
                           .llm = llm,
                           .target = target,
                           .g = &g,
                           .fresh = fresh,
                           .rollouts = ca.rollouts,
                           .best_of_k = ca.best_of_k,
                           .planner = ca.planner,
                           .frozen_recorded = ca.frozen_recorded,
                           .bootstrap = (int)boot,
                           .perms = (int)boot,
                           .confirm = confirm,
                           .progress = progress,
                           .ud = &u,
                           .stop = &cli_stop_flag};
    struct kv_an_result *r = calloc(1, sizeof *r);
    int rc = r ? kv_analyze(s, &o, r, err, sizeof err) : -1;
    if (!r)
      code = cli_fail("out of memory");
    else if (rc == KV_LLM_EBUDGET)
      code = 1, fprintf(stderr,
                        "kevo: the LLM budget is spent: %s; run the same command with a "
                        "larger --budget-usd to continue\n",
                        err);
    else if (rc < 0)
      code = cli_fail("%s", err);
    else if (rc == 1)
      code = 1;
    else {
      if (!r->complete)
        fprintf(stderr, "kevo: analysis %lld is incomplete; run the same command to continue\n",
                (long long)r->analysis_id);
      else
        fprintf(stderr,
                "kevo: analysis %lld: %lld LLM calls, %lld gate evaluations (%lld cached) in "
                "this process\n",
                (long long)r->analysis_id, (long long)r->llm_calls, (long long)r->gate_evals,
                (long long)r->gate_cached);
      if (r->complete && u.json)
        print_json(r);
      else if (r->complete)
        print_text(r);
      code = r->complete ? 0 : 1;
    }
    if (r)
      kv_an_result_free(r);
    free(r);
  }
  json_decref(cfg);
  kv_run_row_release(&run);
  kv_llm_free(llm);
  kv_llm_free(target);
  kv_store_close(s);
  return code;
}
