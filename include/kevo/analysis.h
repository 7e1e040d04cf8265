/* kevo analyze: which feedback helps an agent (CUDAnalyst's method on kevo's
 * own runs). A recorded run is *frozen*: each chosen node's prompt context
 * (task, parent, its judgement, history, rules) is rebuilt from the store,
 * and for every coalition S of *players* (switchable feedback blocks about
 * the parent) a prompt with only S's feedback is sampled k times and each
 * reply gated; the trajectory never evolves. Outcomes are attributed to the
 * players with exact Shapley values and interaction indices. Never prints,
 * never exits.
 *
 * Definitions (N the players, n = |N| <= 6, v a game: v(S) for every S of N):
 *   Shapley value     phi_i = sum_{S of N\{i}} |S|! (n-|S|-1)! / n! (v(S+i) - v(S))
 *   Harsanyi dividend d(S) = sum_{T of S} (-1)^{|S|-|T|} v(T)     (Moebius
 *                     transform: v(S) = sum_{T of S} d(T); d(S) is what the
 *                     players of S add together beyond every smaller group)
 *   Shapley interaction index (Grabisch, 1997), for every S of N:
 *                     I(S) = sum_{T of N\S} (n-|T|-|S|)! |T|! / (n-|S|+1)!
 *                            sum_{L of S} (-1)^{|S|-|L|} v(L u T)
 *                          = sum_{T superset of S} d(T) / (|T|-|S|+1);
 *                     I({i}) = phi_i; I({i,j}) is the pairwise interaction.
 * Efficiency: sum_i phi_i = v(N) - v(empty set). */
#ifndef KEVO_ANALYSIS_H
#define KEVO_ANALYSIS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/store.h"

#define KV_AN_MAX_PLAYERS 6
#define KV_AN_MAX_COAL (1 << KV_AN_MAX_PLAYERS)

/* ---- the arithmetic (lib/analysis/shapley.c) ---------------------------- */

/* v[S] for S = 0 .. 2^n-1 (bit i: player i in S). 0, or -1 when n is out of
 * [1, KV_AN_MAX_PLAYERS]. */
int kv_shapley(int n, const double *v, double *phi);
int kv_harsanyi(int n, const double *v, double *d);          /* d[S] for every S */
int kv_interaction_index(int n, const double *v, double *I); /* I[S] for every S */

/* Outcomes y[((node * ncoal) + S) * k + j] of sample j of coalition S at a
 * node (NaN: missing); v(S) is the mean over nodes of each node's mean over
 * its samples. */
struct kv_an_data {
  int n, nnodes, k;
  const double *y;
};
/* v(S) for every S. */
void kv_an_values(const struct kv_an_data *d, double *v);

/* The attribution of one outcome. */
struct kv_an_attr {
  double v[KV_AN_MAX_COAL];
  double phi[KV_AN_MAX_PLAYERS], phi_lo[KV_AN_MAX_PLAYERS], phi_hi[KV_AN_MAX_PLAYERS];
  double phi_p[KV_AN_MAX_PLAYERS]; /* permutation test of phi_i = 0 */
  double I[KV_AN_MAX_COAL], I_lo[KV_AN_MAX_COAL], I_hi[KV_AN_MAX_COAL];
  double d[KV_AN_MAX_COAL], d_lo[KV_AN_MAX_COAL], d_hi[KV_AN_MAX_COAL];
};
/* Exact values, 95% percentile bootstrap intervals (B resamples: nodes with
 * replacement, then each cell's samples with replacement) and the
 * permutation test (P permutations; under "player i changes nothing", the
 * samples of S and S+i at a node are exchangeable: they are pooled and dealt
 * again; p = (1 + #{|phi*| >= |phi|}) / (1 + P)). Deterministic in seed. */
int kv_an_attribute(const struct kv_an_data *d, int B, int P, uint64_t seed, struct kv_an_attr *out,
                    char *err, size_t errlen);

/* Mean and 95% percentile bootstrap interval of a set of cells' means over
 * nodes (the 2x2 tables): y as above with n players replaced by ncell cells. */
void kv_an_cell_ci(const double *y, int nnodes, int ncell, int k, int cell, int B, uint64_t seed,
                   double *mean, double *lo, double *hi);

/* ---- plans: a fixed vocabulary of optimizations ------------------------- */
#define KV_AN_NTAGS 9
const char *kv_an_tag_name(int t);
/* Bit t set when the plan names optimization t. */
unsigned kv_an_plan_tags(const char *plan);

/* ---- CUDAnalyst's Analyzer (lib/analysis/loops.c) ----------------------- */

/* The loop nests of a C or CUDA source, summarised: per function with
 * loops, "function NAME: N loops, nested D deep" and each loop's header
 * indented by its depth with its nested level (1 + the deepest nest inside
 * it; CUDAnalyst's "nested level"), into out (capped). Returns the number of
 * loops found (0: out is ""). */
int kv_an_loop_nests(const char *src, char *out, size_t cap);

/* ---- freezing and injecting (lib/analysis/analyze.c) -------------------- */

/* CUDAnalyst's players (yuxuan-z19/cudanalyst, pipeline/analysis.py), beside
 * the prompt blocks: their reports are made on the parent, its feedback
 * recomputed by the gate with the tools on, and are status-gated:
 *   debugger  the compiler's diagnostics and compute-sanitizer's findings
 *             (cuda) of a failing parent;
 *   analyzer  the loop nests of a passing parent (kv_an_loop_nests);
 *   profiler  Nsight Compute's summary and rules (cuda) of a passing parent.
 * A coalition's reports (and, always, the failing parent's verdict: the
 * "Error" report) go to the planner when it is on, and the planner's plan
 * with the reports into the coder's prompt as a "# Plan Decision" section:
 * before "## Earlier attempts" in the child's recorded prompt (frozen
 * "recorded"), else at its end; or as the plan block of the prompt rebuilt. */
#define KV_AN_TOOLS "debugger, analyzer, profiler"

/* Outcomes measured per sample. */
enum {
  KV_AN_M_COMPILE, /* it compiled (no_code and compile_error do not) */
  KV_AN_M_PASS,    /* accepted */
  KV_AN_M_FAST,    /* accepted, timed and speedup > fast_threshold */
  KV_AN_M_LOGSP,   /* ln(speedup clipped to [1/4, 64]); a rejected sample counts ln(1/4) */
  KV_AN_M_COUNT    /* then one per plan tag: the plan names it */
};
#define KV_AN_NMETRICS (KV_AN_M_COUNT + KV_AN_NTAGS)
const char *kv_an_metric_name(int m, char *buf, size_t cap);

struct kv_llm;
struct kv_an_cost {
  int nodes, conds, samples; /* chosen nodes, conditions (coalitions or cells), per cell */
  int64_t llm_calls;         /* still to make (resumed work excluded) */
  int64_t gate_evals;        /* at most (cached sources are not judged again) */
  int64_t done;              /* samples already recorded */
  int recompute;             /* parents judged again for the tool players' feedback */
  double usd;                /* worst case of llm_calls at the models' prices */
};

struct kv_an_progress {
  int64_t analysis_id;
  int64_t done, total;
  const char *last; /* "node 12 S={performance} sample 2: ok" */
};

struct kv_an_opts {
  int64_t run_id;
  int gen_lo, gen_hi;  /* steps of the run to take (gen_hi < 0: to the end) */
  const char *players; /* "performance,history:summary"; NULL: every player the run had */
  int samples;         /* per node and condition (>= 1) */
  double fast_threshold;
  const char *experiment;                 /* NULL or "shapley", "planning", "transfer" */
  struct kv_llm *llm;                     /* the model sampled (the run's, or --model) */
  struct kv_llm *target;                  /* transfer: the model given the plans */
  const char *model_label, *target_label; /* names kept in the analysis's config */
  const struct kv_gate_opts *g;
  int fresh; /* 1: a new analysis even if one with this config is unfinished */
  /* CUDAnalyst as released (kevo/preset.h); 0 each: kevo's own. */
  int rollouts;         /* k samples this many times (0: 1) */
  int best_of_k;        /* 1: a rollout scores the best status of its k samples */
  int planner;          /* 1: the reports go to a planner call per (node, coalition, rollout) */
  int frozen_recorded;  /* 1: the child's recorded prompt, the reports injected */
  int bootstrap, perms; /* 0: 1000 each */
  /* Called once the cost is known, before anything is spent: non-zero stops. */
  int (*confirm)(void *ud, const struct kv_an_cost *c);
  void (*progress)(void *ud, const struct kv_an_progress *p);
  void *ud;
  volatile sig_atomic_t *stop;
};

/* The outcome of an analysis (kv_an_result_free). */
struct kv_an_result {
  int64_t analysis_id, run_id;
  char experiment[16];
  int complete;                   /* every sample recorded */
  int n;                          /* players (shapley) or cells */
  char names[KV_AN_MAX_COAL][64]; /* players (shapley) or cell names */
  int nnodes, k;
  int64_t *node_steps;
  double *y[KV_AN_NMETRICS]; /* y[m][((node * ncond) + c) * k + j] */
  int ncond;
  int timed; /* the log-speedup and fast outcomes are meaningful */
  double fast_threshold;
  char model[160], target[160]; /* the model sampled ("provider/model"); transfer: the target */
  int64_t llm_calls, gate_evals, gate_cached;
  struct kv_an_attr attr[KV_AN_NMETRICS]; /* shapley only */
  /* cells (planning, transfer): mean and CI per metric and cell */
  double cell[KV_AN_NMETRICS][4], cell_lo[KV_AN_NMETRICS][4], cell_hi[KV_AN_NMETRICS][4];
};
int kv_analyze(struct kv_store *st, const struct kv_an_opts *o, struct kv_an_result *out, char *err,
               size_t errlen);
void kv_an_result_free(struct kv_an_result *r);

/* A recorded analysis (id <= 0: the most recent) read back from the store
 * alone: no model, no gate, nothing sampled. The same values as kv_analyze
 * returned for it (bootstrap: resamples and permutations for the intervals
 * and tests, 0: 1000, as kevo analyze). An analysis not yet finished loads
 * with complete 0 and its recorded outcomes in y, nothing attributed. The
 * chosen nodes are those with recorded samples, in step order. */
int kv_an_load(struct kv_store *st, int64_t analysis_id, int bootstrap, struct kv_an_result *out,
               char *err, size_t errlen);

#endif
