/* What lib/report's files share: a run read from the store (model.c), its
 * tree laid out (layout.c), the palette of verdicts and the kinds of step.
 * Never included outside lib/report. */
#ifndef KEVO_REPORT_INTERNAL_H
#define KEVO_REPORT_INTERNAL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo/analysis.h"
#include "kevo/bench.h"
#include "kevo/report.h"
#include "kevo/store.h"
#include "kevo/util.h"

/* ---- verdicts and steps ---- */

/* A verdict's place in the palette: the gate's verdicts in the order it
 * decides them, then the agent's no_code; anything else is "other". */
struct rep_verdict {
  const char *name;
  const char *color;
  const char *meaning;
};
extern const struct rep_verdict rep_verdicts[];
extern const int rep_nverdicts; /* the last entry is "other" */
int rep_verdict_index(const char *name);

/* How a node came from its parent (or from the task, for a root): the kind of
 * step decides the edge's style. */
struct rep_step_kind {
  const char *name;  /* css class suffix: e-small, e-large, ... */
  const char *label; /* for the legend */
};
extern const struct rep_step_kind rep_step_kinds[];
extern const int rep_nstep_kinds; /* the last entry is "other" */
int rep_step_kind(const char *action);

/* ---- a run ---- */

struct rep_node {
  int64_t id, eval_id, parent_id, created_unix;
  int step;
  int parent; /* index in nodes, -1: a root (no parent, or one outside the run) */
  int verdict, kind;
  double speedup, reward; /* -1: none */
  char *action, *params, *hash;
  char *other; /* the verdict's name when it is not in the palette, else NULL */
  /* layout */
  int depth, first_child, next_sibling, last_child;
  double x, y, r;
};

struct rep_call {
  int64_t id, node_id, created_unix, tokens_in, tokens_out;
  double cost_usd, latency_s;
  int ok;
  char *role;
};

struct rep_rule {
  int64_t id, created_unix, updated_unix;
  int count, run_evals;
  char *text, *origin, *evals;
};

struct rep_run {
  struct kv_run_row row;
  struct kv_run_facts facts;
  json_t *config; /* runs.config_json parsed, or NULL */
  struct rep_node *nodes;
  int n, cap, total; /* total: the run's node count (n may stop at KV_REPORT_NODES_MAX) */
  int best;          /* index of the fastest accepted node, -1: none */
  int vcount[32];    /* by rep_verdicts index */
  struct rep_call *calls;
  int ncalls, calls_cap, calls_total;
  struct rep_rule *rules;
  int nrules, rules_cap, rules_total;
  /* the details for the page (details != 0): one JSON object per node */
  json_t *details;
  int elided;
  double width, height; /* the tree's layout */
  int labelled;         /* small enough for labels on the nodes */
  double rail;          /* how far above its roots a row's rail runs */
};

/* How much of the page's text a section may still take. */
struct rep_budget {
  size_t item_cap, left;
  int elided;
};

/* Reads run_id (<= 0: the most recent) with its nodes, calls and rules; with
 * `budget` also every node's details for the page (sources, diffs, the gate's
 * verdict), each text within the budget. */
int rep_run_load(struct kv_store *s, int64_t run_id, struct rep_budget *budget, struct rep_run *run,
                 char *err, size_t errlen);
void rep_run_release(struct rep_run *run);
/* Indices of a node by id (the nodes are in step order, ids need not be). */
int rep_node_by_id(const struct rep_run *run, int64_t id);

/* The wrapped forest: every root's subtree laid out tidy, subtrees placed
 * left to right in step order and wrapped into rows. */
void rep_layout(struct rep_run *run);

/* A string from the run's config ("surface", "model.model", ...), or NULL. */
const char *rep_config_str(const struct rep_run *run, const char *key, const char *sub);

/* "42 s", "3 min 5 s", "2 h 4 min" */
void rep_duration(double s, char *out, size_t cap);
/* "2026-11-23 16:40 UTC" */
void rep_date(int64_t unix_s, char *out, size_t cap);

/* ---- writing the page ---- */

/* The page being written: appends never fail one by one; running out of
 * memory is remembered and reported once, the cap by the buffer. */
struct rep_out {
  struct kv_buf b;
  int oom;
};
void rep_printf(struct rep_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rep_puts(struct rep_out *o, const char *s);
/* HTML-escaped; NULL writes nothing. */
void rep_esc(struct rep_out *o, const char *s);
void rep_escn(struct rep_out *o, const char *s, size_t n);
/* The JSON of v for a script block (see kv_json_for_script). */
void rep_json(struct rep_out *o, json_t *v);

/* The run's section of the page (report.c writes the page around it). */
void rep_run_section(struct rep_out *o, struct kv_store *s, struct rep_run *run);
/* A header card: key, value (escaped) and up to two lines under it. */
void rep_card(struct rep_out *o, const char *cls, const char *key, const char *value,
              const char *sub1, const char *sub2);

/* ---- a bench (kevo bench) ---- */

struct rep_bench {
  struct kv_bench_row row;
  struct kv_bench_task_row *tasks;
  int n;
  struct kv_bench_summary sm;
  json_t *config; /* benches.config_json parsed, or NULL */
};
/* Reads bench_id (<= 0: the most recent) with its tasks and score. */
int rep_bench_load(struct kv_store *s, int64_t bench_id, struct rep_bench *b, char *err,
                   size_t errlen);
void rep_bench_release(struct rep_bench *b);
/* Its section: the score, the fast_p curve, the levels and a sortable table
 * of the tasks. */
void rep_bench_section(struct rep_out *o, const struct rep_bench *b);

/* ---- an analysis (kevo analyze) ---- */

struct rep_analysis {
  struct kv_an_result *r; /* kv_an_load's: no model, no gate */
  struct kv_analysis_row row;
  struct kv_run_row run; /* the analysed run */
};
/* Reads analysis id (<= 0: the most recent) with its values and intervals. */
int rep_analysis_load(struct kv_store *s, int64_t id, struct rep_analysis *a, char *err,
                      size_t errlen);
void rep_analysis_release(struct rep_analysis *a);
/* Its section: Shapley bars with intervals and the interaction heat map per
 * outcome, or the planning x alignment 2x2, or the plan-transfer bars. */
void rep_analysis_section(struct rep_out *o, const struct rep_analysis *a);
/* Adds what the section draws: bars with intervals, heat-map and 2x2 cells. */
void rep_analysis_count(const struct rep_analysis *a, int *bars, int *cells);

#endif
