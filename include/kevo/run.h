/* Runs: a search for the fastest kernel the gate accepts, one candidate per
 * step, everything recorded in the store as it happens so a run can be
 * resumed after any crash. Strategies are a const table of operations; `tune`
 * needs no LLM. Never prints, never exits. */
#ifndef KEVO_RUN_H
#define KEVO_RUN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/store.h"
#include "kevo/task.h"

struct kv_llm;

/* Settings of the LLM strategies (kept in the run's configuration, so a
 * resumed run continues with them); kv_run_llm_defaults fills them. */
struct kv_run_llm_settings {
  int concurrency;        /* LLM requests in flight at once (>= 1) */
  unsigned prompt_mask;   /* KV_PB_* blocks in prompts */
  const char *prompt_dir; /* template overrides; NULL: the embedded ones */
  int plan_explicit;      /* plan_mode explicit: a planner call, then a coder call */
  double p_large;         /* ada: probability of a large step */
  int small_limit;        /* ada: small steps per chain before a large step */
  double c_explore;       /* ada: UCB exploration weight */
  int pool_max;           /* ada: kernels in a large step's pool */
  int rule_threshold;     /* rules seen this often enter prompts */
  int rules_llm;          /* 1: failures also go to a rule_extractor call */
  double attr_share;      /* online attribution: share of steps randomised (0: off) */
  double attr_price;      /* online attribution: reward per 1,000 prompt tokens */
  /* AdaExplore as released (kevo/preset.h; 0: kevo's own): */
  int tree;              /* ada: 1 AdaExplore's expand/descend rule (KV_TREE_*) */
  int reward;            /* ada: 1 AdaExplore's linear reward (KV_REWARD_*) */
  unsigned rule_sources; /* failures rules are learnt from (KV_RULE_SRC_* bits; 0: every one) */
  int small_step;        /* ada: 1 AdaExplore's Reviser then Tuner with string edits (KV_SMALL_*) */
};
enum { KV_SMALL_KEVO, KV_SMALL_REVISER_TUNER };
enum { KV_TREE_KEVO, KV_TREE_ADAEXPLORE };
enum { KV_REWARD_KEVO, KV_REWARD_ADAEXPLORE };
#define KV_RULE_SRC_COMPILE 1u /* compile errors, policy violations */
#define KV_RULE_SRC_RUNTIME 2u /* load errors, crashes, timeouts */
#define KV_RULE_SRC_WRONG 4u   /* wrong, unwritten, stale or implausible output, mutated input */
/* The class of a failed verdict (KV_RULE_SRC_*), 0 for ok. */
unsigned kv_rule_source_of(int verdict);
/* "compile,runtime" into *bits: 0, or -1 with err naming the known ones. */
int kv_rule_sources_parse(const char *list, unsigned *bits, char *err, size_t errlen);
void kv_run_llm_defaults(struct kv_run_llm_settings *s);

struct kv_run_config {
  const char *strategy;           /* "tune", "greedy", "best-of-n", "ada" */
  int steps;                      /* evaluations, the starter's included */
  uint64_t seed;                  /* search randomness */
  struct kv_run_llm_settings llm; /* LLM strategies only */
  const char *llm_json; /* LLM strategies: {"provider","model","base_url"} to resume with */
};

struct kv_run_progress {
  int64_t run_id;
  int step, steps;
  int counts[KV_V_COUNT];
  double best_speedup; /* 0 until something is accepted */
  const char *last_verdict;
  const char *last_params; /* "NACC=4" */
  /* LLM strategies */
  double usd; /* spent so far (this process) */
  int64_t llm_calls;
  int in_flight;
  const char *stop_reason; /* NULL, or why the run ended early ("USD budget reached") */
  const char *note;        /* NULL, or a decision this step caused (online attribution) */
  /* The best's 95% interval and the CV of its times, and the runner-up's
   * (the fastest accepted kernel with other source) speedup and interval;
   * 0 where unknown (not timed, or resumed from a store without them).
   * Kept by kv_run_progress_accepted, read by kv_run_luck. */
  double best_lo, best_hi, best_cv;
  double second_speedup, second_lo, second_hi;
  char best_hash[65]; /* the best's source (sha256 hex) */
};
typedef void (*kv_run_progress_fn)(void *ud, const struct kv_run_progress *p);

/* An accepted and timed kernel (its source's hash, speedup, 95% interval
 * and the CV of its times; lo, hi and cv 0 where unknown) taken into p's
 * best and runner-up. The same source again is the same kernel: never its
 * own runner-up. */
void kv_run_progress_accepted(struct kv_run_progress *p, const char *hash, double speedup,
                              double lo, double hi, double cv);

/* Why the kernel p names "best" on noisy timing may not be: its 95%
 * interval overlaps the runner-up's (the timing does not tell them apart),
 * its own times varied (CV above 10%), or it is slower than the reference.
 * A set of KV_LUCK_* flags, 0 for none; what kevo's live line and its last
 * words after a run say ("best by luck?"). */
enum { KV_LUCK_OVERLAP = 1, KV_LUCK_NOISY = 2, KV_LUCK_SLOWER = 4 };
#define KV_LUCK_CV 0.10
int kv_run_luck(const struct kv_run_progress *p);

struct kv_run_hooks {
  kv_run_progress_fn progress;
  void *ud;
  volatile sig_atomic_t *stop; /* set (e.g. by SIGINT) to end after the current step */
  struct kv_llm *llm;          /* the client the LLM strategies use (not owned) */
  /* Called once the new run is in the store, before its first step (a bench
   * records the run's id so that a kill never orphans or repeats it). */
  void (*created)(void *ud, int64_t run_id);
  /* NULL: candidates are judged in this process; else by the executor's gate
   * servers (include/kevo/exec.h), several at once where the strategy can
   * (tune: as many as kv_exec_width). */
  struct kv_exec *exec;
  /* --skills on (ada, greedy): a small step that refines an accepted kernel
   * becomes a `skill` step when skill_pick offers a card (Markdown, malloc'd
   * into *card; its id into uid) of a skill that matches the parent kernel
   * and was not applied on its path (path: the store's node ids from the
   * parent up to the root); the card goes into the prompt's skill block, and
   * skill_used records every such node's verdict and speedup in the card's
   * verification log. NULL: off (today's behaviour). */
  int (*skill_pick)(void *ud, const char *parent_code, const char *device, const int64_t *path,
                    int npath, char **card, char uid[256]);
  void (*skill_used)(void *ud, const char *uid, int64_t run_id, int64_t node_id, int64_t eval_id,
                     const char *verdict, double speedup, double parent_speedup);
  void *skill_ud;
};

/* Records one judged candidate: its source (src, len) and the evaluation (r,
 * js: r's JSON as kv_gate_result_json wrote it) for task_id;
 * candidate_path may be NULL (a search's variant). *eval_id may be NULL.
 * kevo eval and a run's steps record through this one function. */
int kv_run_record_eval(struct kv_store *st, int64_t task_id, const char *candidate_path,
                       const char *src, size_t len, const struct kv_gate_result *r, const char *js,
                       int64_t *eval_id, char *err, size_t errlen);

/* Starts a run of `starter` (a kernel that may declare `// kevo:tune` lines;
 * LLM strategies: may be NULL, else it becomes the first node). */
int kv_run_new(struct kv_store *s, const struct kv_task *t, const char *starter,
               const struct kv_run_config *c, const struct kv_gate_opts *g,
               const struct kv_run_hooks *h, int64_t *run_id, char *err, size_t errlen);
/* Continues a run from what the store holds. */
int kv_run_resume(struct kv_store *s, int64_t run_id, const struct kv_gate_opts *g,
                  const struct kv_run_hooks *h, char *err, size_t errlen);
/* Names of the strategies this build has ("tune", "greedy", "best-of-n", "ada"). */
const char *const *kv_run_strategies(void);
/* 1 when the strategy needs an LLM, 0 when not, -1 when unknown. */
int kv_run_strategy_needs_llm(const char *name);

#endif
