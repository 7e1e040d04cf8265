/* Internals of kevo analyze (lib/analysis), shared by analyze.c (freezing,
 * sampling, results) and cudanalyst.c (CUDAnalyst's tool players, the
 * planner and rollouts). Private names start with kva_an_. analyze.c calls
 * cudanalyst.c, which calls back only the helpers declared here. */
#ifndef KEVO_ANALYSIS_INTERNAL_H
#define KEVO_ANALYSIS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/analysis.h"
#include "kevo/prompt.h"

#define MAX_HISTORY 8 /* as lib/agent/search.c */

/* A player: a prompt block (block >= 0) or a CUDAnalyst tool (tool > 0). */
enum { KVA_AN_BLOCK, KVA_AN_DEBUGGER, KVA_AN_ANALYZER, KVA_AN_PROFILER };
struct player {
  int block, summary, tool;
  char name[64];
};

/* A chosen node, frozen: what its prompt was built from. */
struct frozen {
  int64_t node_id;
  int step, parent_step;
  const char *parent_code;         /* owned by the analysis (codes[]) */
  struct kv_gate_result *fb, *mis; /* the parent's judgement; another node's */
  struct kv_prompt_attempt hist[MAX_HISTORY];
  int nhist;
  const char *plan; /* the plan this node was written from, or NULL */
  enum kv_prompt_kind kind;
  /* CUDAnalyst (cudanalyst.c): the parent judged again with the tools on
   * (kept while its reports are made), its reports (NULL: no data; 0 the
   * Error report, else by tool), and the child's recorded prompt */
  struct kv_gate_result *re;
  char *report[4]; /* indexed by tool */
  char *recorded;
};

struct an {
  struct kv_store *st;
  const struct kv_an_opts *o;
  struct kv_task *task;
  int64_t task_id, analysis_id;
  char surface[16], device[256];
  char *reference;
  struct kv_prompts *prompts;
  unsigned run_mask;
  int plan_explicit;
  char **rules;
  int nrules;
  struct kv_node_row *rows;
  int nrows;
  char **codes;                /* per row: its source (NULL: none) */
  struct kv_gate_result **fbs; /* per row: its judgement (NULL: none) */
  struct frozen *fz;
  int nfz;
  struct player pl[KV_AN_MAX_PLAYERS];
  int npl;
  int ncond, k, timed;
  const char *exp; /* "shapley", "planning", "transfer" */
  int64_t llm_calls, gate_evals, gate_cached;
  /* CUDAnalyst: k = rollouts * per samples per cell; the planner's call
   * recorded with each sample (pcall, by the cube's index); the plan of the
   * last (node, condition, rollout) asked */
  int rollouts, per, ca, best;
  int64_t *pcall;
  char *ca_plan;
  long ca_key;
};

/* How a condition builds its prompts. */
struct cond {
  unsigned mask, summary;
  int misaligned;
  int plan;       /* 0 none, 1 the model plans first, 2 the recorded plan */
  unsigned tools; /* CUDAnalyst: 1 << tool for each tool player on */
  struct kv_llm *llm;
};

/* ---- analyze.c's, for cudanalyst.c ---- */
void kva_an_cond_of(const struct an *a, int c, struct cond *q);
char *kva_an_prompt_of(const struct an *a, const struct frozen *f, const struct cond *q,
                       enum kv_prompt_kind kind, const char *plan, char *err, size_t errlen);
int kva_an_ask(struct an *a, struct kv_llm *llm, const char *role, const char *prompt, int sample,
               char **text, int64_t *call_id, char *err, size_t errlen);
/* Judges code (cached by source hash): verdict and speedup. */
int kva_an_judge(struct an *a, const char *code, char hash[65], char *verdict, size_t vcap,
                 double *speedup, int *cached, char *err, size_t errlen);
/* Records a sample (the planner's call kept in a->pcall too). */
int kva_an_put(struct an *a, int fi, const struct kv_analysis_sample *s, char *err, size_t errlen);

/* ---- cudanalyst.c ---- */
/* "debugger" -> KVA_AN_DEBUGGER ...; 0 for a name that is not a tool. */
int kva_an_tool_of(const char *name);
/* 1 when tool has a report at f (status gating). */
int kva_an_tool_has_data(const struct frozen *f, int tool);
/* The tool players' feedback: each chosen node's parent judged again with
 * the tools on (its reports made), and the child's recorded prompt. */
int kva_an_recompute(struct an *a, int judge_parents, char *err, size_t errlen);
/* One sample of condition c at node fi, sample index j (rollout j / per):
 * the reports, the planner, the coder, the gate, recorded. */
int kva_an_sample_ca(struct an *a, int fi, int c, int j, char *err, size_t errlen);
/* Best-of-k: y (k = rollouts * per samples a cell) becomes one outcome per
 * rollout, the best of its samples, in place; returns the new k. */
int kva_an_best_of_k(double *y, int nnodes, int ncond, int rollouts, int per);
void kva_an_frozen_release(struct frozen *f);

#endif
