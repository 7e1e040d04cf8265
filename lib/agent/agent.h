/* Internals of the agent shared by run.c, search.c and rules.c, and exposed
 * to their unit tests: the tree search's arithmetic (rewards, UCB, pools). */
#ifndef KEVO_AGENT_INTERNAL_H
#define KEVO_AGENT_INTERNAL_H

/* Why a run or a synthesis stops when the LLM client refuses a call for the
 * budget (calls, tokens or dollars: it refuses before spending, so "spent"
 * would be wrong when the cap is on calls or nothing was priced). */
#define KV_BUDGET_STOP "the LLM budget is reached (the next call could go over it)"

#include <stddef.h>
#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/run.h"
#include "kevo/store.h"
#include <jansson.h>

/* The reward of a candidate: 0 when it did not compile (or the reply held no
 * code: verdict -1), 0.05 when it compiled but is wrong, 0.4..1.6 when it is
 * correct, rising with log2 of its speedup clipped to [1/4, 4] (1.0 at 1x;
 * an untimed correct kernel counts as 1x). */
double kv_ada_reward(int verdict, double speedup);

/* UCB1: the mean value plus c * sqrt(ln(parent_visits) / visits); +inf for
 * an unvisited node. */
double kv_ada_ucb(double value, int visits, int parent_visits, double c);

struct kv_ada_node {
  int parent;   /* index, -1: a chain's root (child of the task) */
  int chain;    /* index of its chain's root */
  int small;    /* small steps from its chain's root */
  int has_code; /* 0: nothing to refine (a reply without code) */
  double reward;
  int visits;   /* evaluations in its subtree, itself included */
  double value; /* sum of their rewards */
};

/* Adds node idx's reward to it and its ancestors (visits + 1 each). */
void kv_ada_backprop(struct kv_ada_node *n, int idx);
/* UCB selection from the task down: at each level the child with the best
 * UCB, stopping at a node when it has no children or when its own reward plus
 * its exploration term beats every child. -1 when no node has code. */
int kv_ada_select(const struct kv_ada_node *n, int count, double c);
/* A large step's pool: at most one node per chain, sampled within the chain
 * by reward (+0.01), chains sampled by their best reward without
 * replacement; at most max. Returns how many were written to out. */
int kv_ada_pool(const struct kv_ada_node *n, int count, int max, uint64_t *rng, int *out);
uint64_t kv_ada_rand(uint64_t *x);
double kv_ada_uniform(uint64_t *x); /* [0, 1) */

/* Evaluates one source and records the source, the evaluation and the node
 * (run.c). */
struct kv_step_out {
  int64_t node_id, eval_id;
};
int kv__run_step(struct kv_store *st, const struct kv_task *t, int64_t task_id,
                 const struct kv_node_record *n, const char *src, size_t len,
                 const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
                 struct kv_step_out *out, char *err, size_t errlen);

/* The same through an executor (x may be NULL: kv__run_step). Returns 1
 * when no gate server could judge it: the node is recorded as "unjudged",
 * without an evaluation, and r is not filled. */
struct kv_exec;
int kv__run_step_on(struct kv_exec *x, struct kv_store *st, const struct kv_task *t,
                    int64_t task_id, const struct kv_node_record *n, const char *src, size_t len,
                    const struct kv_gate_opts *g, struct kv_gate_result *r, int want_reward,
                    struct kv_step_out *out, char *err, size_t errlen);

/* Sends src to the executor now (several replies that arrived together are
 * judged at once); kv__run_step_on takes its result later. 0 or -1. */
int kv__run_prefetch(struct kv_exec *x, const struct kv_task *t, const char *src, size_t len,
                     const struct kv_gate_opts *g, char *err, size_t errlen);

/* The LLM strategies (search.c). `nodes` are what the store holds (resume)
 * or NULL; `cfg` the run's configuration. */
int kv__search_llm(struct kv_store *st, const struct kv_task *t, int64_t task_id, int64_t run_id,
                   const char *strategy, const struct kv_run_config *c,
                   const struct kv_gate_opts *g, const struct kv_run_hooks *h,
                   const struct kv_node_row *nodes, int nn, char *err, size_t errlen);

/* A run's LLM settings as kept in its configuration (a bench compares them). */
json_t *kv__llm_settings_json(const struct kv_run_llm_settings *l);

#endif
