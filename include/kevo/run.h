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

struct kv_run_config {
  const char *strategy; /* "tune" */
  int steps;            /* evaluations, the starter's included */
  uint64_t seed;        /* search randomness */
};

struct kv_run_progress {
  int64_t run_id;
  int step, steps;
  int counts[KV_V_COUNT];
  double best_speedup; /* 0 until something is accepted */
  const char *last_verdict;
  const char *last_params; /* "NACC=4" */
};
typedef void (*kv_run_progress_fn)(void *ud, const struct kv_run_progress *p);

struct kv_run_hooks {
  kv_run_progress_fn progress;
  void *ud;
  volatile sig_atomic_t *stop; /* set (e.g. by SIGINT) to end after the current step */
};

/* Starts a run of `starter` (a kernel that may declare `// kevo:tune` lines). */
int kv_run_new(struct kv_store *s, const struct kv_task *t, const char *starter,
               const struct kv_run_config *c, const struct kv_gate_opts *g,
               const struct kv_run_hooks *h, int64_t *run_id, char *err, size_t errlen);
/* Continues a run from what the store holds. */
int kv_run_resume(struct kv_store *s, int64_t run_id, const struct kv_gate_opts *g,
                  const struct kv_run_hooks *h, char *err, size_t errlen);
/* Names of the strategies this build has ("tune"). */
const char *const *kv_run_strategies(void);

#endif
