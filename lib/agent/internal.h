/* Internals of the agent module (lib/agent), shared by its files and exposed
 * to their unit tests; the public API is include/kevo/. Private names start
 * with kva_ (KVA_). The run loop's files depend one way, with no cycle:
 *
 *   run.c     runs: new and resume, tune, the table of every strategy
 *   search.c  the LLM strategies (greedy, best-of-n, ada)
 *   step.c    one candidate judged and recorded (run.c and search.c)
 *   ada.c     the tree search's arithmetic (search.c and step.c)
 *
 * each calling only those below it. */
#ifndef KEVO_AGENT_INTERNAL_H
#define KEVO_AGENT_INTERNAL_H

/* Why a run or a synthesis stops when the LLM client refuses a call for the
 * budget (calls, tokens or dollars: it refuses before spending, so "spent"
 * would be wrong when the cap is on calls or nothing was priced). */
#define KVA_BUDGET_STOP "the LLM budget is reached (the next call could go over it)"

#include <stddef.h>
#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/run.h"
#include "kevo/store.h"
#include <jansson.h>

/* ---- the tree search's arithmetic (ada.c) -------------------------------- */

/* The reward of a candidate: 0 when it did not compile (or the reply held no
 * code: verdict -1), 0.05 when it compiled but is wrong, 0.4..1.6 when it is
 * correct, rising with log2 of its speedup clipped to [1/4, 4] (1.0 at 1x;
 * an untimed correct kernel counts as 1x). */
double kva_ada_reward(int verdict, double speedup);

/* UCB1: the mean value plus c * sqrt(ln(parent_visits) / visits); +inf for
 * an unvisited node. */
double kva_ada_ucb(double value, int visits, int parent_visits, double c);

struct kva_ada_node {
  int parent;   /* index, -1: a chain's root (child of the task) */
  int chain;    /* index of its chain's root */
  int small;    /* small steps from its chain's root */
  int has_code; /* 0: nothing to refine (a reply without code) */
  double reward;
  int visits;   /* evaluations in its subtree, itself included */
  double value; /* sum of their rewards */
  int large;    /* --tree adaexplore: made by a large step (a child of the node selected) */
};

/* Adds node idx's reward to it and its ancestors (visits + 1 each). */
void kva_ada_backprop(struct kva_ada_node *n, int idx);
/* UCB selection from the task down: at each level the child with the best
 * UCB, stopping at a node when it has no children or when its own reward plus
 * its exploration term beats every child. -1 when no node has code. */
int kva_ada_select(const struct kva_ada_node *n, int count, double c);
/* A large step's pool: at most one node per chain, sampled within the chain
 * by reward (+0.01), chains sampled by their best reward without
 * replacement; at most max. Returns how many were written to out. */
int kva_ada_pool(const struct kva_ada_node *n, int count, int max, uint64_t *rng, int *out);
/* AdaExplore's rules as released (StigLidu/AdaExplore agent/mcts.py):
 * map KV_REWARD_ADAEXPLORE takes a correct kernel's speedup linearly from
 * [0.1, 10] to [0.4, 1.6] (0 compile failure, 0.05 wrong); else
 * kva_ada_reward. */
double kva_ada_reward_as(int map, int verdict, double speedup);
/* At node `at` (-1: the task, whose visits are every evaluation): 1 when
 * AdaExplore expands it (no children, or the best child's average reward +
 * c sqrt(ln N_at / n_children^2) beats every child's UCB1 with Q the average
 * reward), else 0 with *best the child to descend to. */
int kva_ada_expand_here(const struct kva_ada_node *n, int count, int at, double c, int *best);
/* From the task down, descending while kva_ada_expand_here says so: the node
 * to expand (-1: the task, which takes a large step). */
int kva_ada_select_adaexplore(const struct kva_ada_node *n, int count, double c);
/* AdaExplore's large-step pool: on the path from `at` up to the task, the
 * best correct kernel of each small-step component (a node made by a large
 * step, or a chain root, with what small steps made below it); at most max,
 * a uniform sample when there are more (pool_size_extra_max 0: none from
 * off the path). Returns how many were written to out. */
int kva_ada_pool_path(const struct kva_ada_node *n, int count, int at, int max, uint64_t *rng,
                      int *out);
/* Children of `at` made by small steps. */
int kva_ada_small_children(const struct kva_ada_node *n, int count, int at);
uint64_t kva_ada_rand(uint64_t *x);
double kva_ada_uniform(uint64_t *x); /* [0, 1) */

/* ---- AdaExplore's Reviser and Tuner (revise.c) --------------------------- */

#define KVA_RT_CONTEXT 5 /* nodes back to the nearest large-step ancestor (max_memory_round) */
struct kva_rt_ctx {
  const char *name, *summary, *entry, *reference;
  const char *context;  /* tuner: earlier kernels of the path with their results */
  const char *code;     /* the last kernel */
  const char *result;   /* its result, one paragraph */
  const char *guidance; /* tuner: the reviser's items */
};
/* The reviser's (tuner 0) or the tuner's prompt, templates "reviser" and
 * "tuner" (DIR/NAME.md overrides): malloc'd, or NULL with err. */
char *kva_rt_prompt(const char *dir, int tuner, const struct kva_rt_ctx *c, char *err,
                    size_t errlen);
/* The tuner's reply applied to code: each "<<<<<<< SEARCH / ======= /
 * >>>>>>> REPLACE" block in turn, its SEARCH text occurring exactly once in
 * the kernel as edited so far. The number of edits with *out malloc'd, or -1
 * with why (no block, a SEARCH absent, twice or empty, a block unclosed). */
int kva_rt_apply(const char *code, const char *reply, char **out, char *why, size_t whycap);

/* ---- a step (step.c): one candidate judged and recorded ------------------- */

struct kv_exec;
struct kv_exec_done;

struct kva_step_out {
  int64_t node_id, eval_id;
};

/* Evaluates one source and records the source, the evaluation and the node
 * (its reward too when want_reward: 1 + the reward map, KV_REWARD_*). x: the executor that judges
 * it, or NULL: the local gate, in this process. 0 when judged (r filled); 1 when no gate server
 * could judge it: the node is recorded as "unjudged", without an evaluation, and r is not filled;
 * -1 with err. out may be NULL. */
int kva_step(struct kv_exec *x, struct kv_store *st, const struct kv_task *t, int64_t task_id,
             const struct kv_node_record *n, const char *src, size_t len,
             const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
             struct kva_step_out *out, char *err, size_t errlen);

/* Sends src to the executor now (several replies that arrived together are
 * judged at once); kva_step takes its result later. 0 or -1. */
int kva_step_prefetch(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                      const struct kv_gate_opts *g, char *err, size_t errlen);

/* Records what an executor returned for src (d, which the caller still
 * releases): 0 judged (r filled), 1 unjudged, -1 with err, as kva_step. */
int kva_step_record_done(struct kv_store *st, int64_t task_id, const struct kv_node_record *n,
                         const char *src, size_t len, struct kv_exec_done *d,
                         struct kv_gate_result *r, int want_reward, struct kva_step_out *out,
                         char *err, size_t errlen);

/* ---- the LLM strategies (search.c) --------------------------------------- */

/* The state of an LLM search and what it asks next, both search.c's. */
struct kva_search;
struct kva_pick;
/* A strategy's choice of the next request: a new kernel, or a small step
 * from a node of the tree (run.c's strategy table names one per strategy). */
typedef void kva_pick_fn(struct kva_search *s, struct kva_pick *p);
kva_pick_fn kva_pick_greedy, kva_pick_best_of_n, kva_pick_ada;

/* 0 when h has an LLM, else -1 with err naming the strategy and the fix. */
int kva_need_llm(const struct kv_run_config *c, const struct kv_run_hooks *h, char *err,
                 size_t errlen);
/* Runs LLM strategy c->strategy, choosing with pick, until c->steps nodes,
 * a stop or the budget. `nodes` are what the store holds (resume) or the
 * starter's node or NULL; c the run's configuration. Sets the run's status. */
int kva_search_llm(struct kv_store *st, const struct kv_task *t, int64_t task_id, int64_t run_id,
                   kva_pick_fn *pick, const struct kv_run_config *c, const struct kv_gate_opts *g,
                   const struct kv_run_hooks *h, const struct kv_node_row *nodes, int nn, char *err,
                   size_t errlen);

/* ---- runs (run.c) -------------------------------------------------------- */

/* A run's LLM settings as kept in its configuration (a bench compares them). */
json_t *kva_llm_settings_json(const struct kv_run_llm_settings *l);

#endif
