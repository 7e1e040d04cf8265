/* AdaExplore's adaptation stage: practice tasks written by an LLM (kevo
 * synthesize), the agent run over them to grow the memory of validity rules
 * before it meets real problems (kevo adapt), and the pass that merges rules
 * saying the same thing. Never prints, never exits.
 *
 * kevo synthesize: each attempt asks the model for one KernelBench-format
 * PyTorch module (class Model(nn.Module), size constants, get_inputs,
 * get_init_inputs). Its code is written to a scratch file and imported with
 * kevo import's machinery (the module runs in a child Python with a deadline,
 * a memory cap and a scrubbed environment: a hang, a missing package or a
 * 100 GB allocation is refused there, with the reason), the task is checked
 * like `kevo task check` on the cpu surface (the torch reference worker), and
 * a module that is the same operator graph at the same shapes as a task
 * already in the output directory (or in the --from suite) is refused as a
 * duplicate. An accepted task is renamed into place whole; a refused one
 * leaves nothing. Every attempt is in the store as it changes (syntheses,
 * synth_attempts): a synthesis killed at any moment continues when run again
 * and never asks twice for an attempt that was answered. */
#ifndef KEVO_ADAPT_H
#define KEVO_ADAPT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "kevo/bench.h"
#include "kevo/gate.h"
#include "kevo/rules.h"
#include "kevo/store.h"
#include "kevo/task.h"

struct kv_llm;

/* ---- kevo synthesize --------------------------------------------------------- */

enum { KV_SYNTH_MAX_N = 10000, KV_SYNTH_MAX_OPS = 512, KV_SYNTH_OP_MAX = 120 };

/* The operators a composite module combines: kevo's own list (one per entry,
 * "torch.matmul: matrix product" style) unless a file is given. */
extern const char *const kv_synth_default_ops[];
extern const int kv_synth_ndefault_ops;

struct kv_synth_opts {
  const char *out_dir;  /* accepted tasks go to out_dir/NAME (created) */
  const char *style;    /* "composite" (default), "mutation", "self-instruct" */
  const char *from_dir; /* a suite: mutation's sources (required), self-instruct's examples;
                           its tasks also count as duplicates */
  const char *ops_file; /* composite: operators, one per line ('#' comments); NULL: kevo's */
  int n;                /* attempts (1..KV_SYNTH_MAX_N) */
  uint64_t seed;        /* which operators and mutations each attempt asks for */
  int jobs;             /* modules judged at once (import + check); default 2 */
  int concurrency;      /* LLM requests in flight; default 2 */
  double deadline_s;    /* per module import (default 120) */
  int64_t max_bytes;    /* most a module may hold on the CPU (default 2 GiB) */
  const char *python;   /* NULL: $KEVO_PYTHON, else python3 */
  const struct kv_gate_opts *gate; /* the task check (its surface is forced to cpu) */
  const char *model_json;          /* the model, as kevo run keeps it (its provider and id are part
                                      of what a rerun must match) */
  int fresh;                       /* a new synthesis even where an unfinished one is */
};
void kv_synth_opts_default(struct kv_synth_opts *o);

/* One attempt taken to an end (or its reply received). */
struct kv_synth_event {
  int index, n;                           /* position in the synthesis, its size */
  const struct kv_synth_attempt_row *row; /* status accepted / refused / replied */
  int llm_done, in_flight;                /* LLM calls finished so far, in flight */
  double usd;                             /* spent so far by this process */
};
struct kv_synth_hooks {
  void (*attempt_end)(void *ud, const struct kv_synth_event *e);
  void *ud;
  volatile sig_atomic_t *stop; /* set to end after the attempts in hand */
};

struct kv_synth_summary {
  int64_t id;  /* the synthesis */
  int resumed; /* an earlier synthesis of out_dir with these options was continued */
  int already; /* ... and it was complete: nothing was asked (fresh: another one) */
  int n, accepted, refused, pending;
  char stopped[256]; /* why it ended early ("" when it did not) */
};

/* Runs (or continues) the synthesis of out_dir with these options: run again
 * after it is complete, it asks nothing more (fresh: another one). Returns 0 when every attempt was
 * taken to an end or it stopped (summary->stopped says why), -1 with err when kevo cannot go on: no
 * Python with torch (said before any LLM call), the store, the output directory. */
int kv_synth_run(struct kv_store *s, struct kv_llm *llm, const struct kv_synth_opts *o,
                 const struct kv_synth_hooks *h, struct kv_synth_summary *sum, char *err,
                 size_t errlen);

/* The pure parts, for tests. */
/* The module in a reply: the last fenced block that defines class Model
 * (any tag but a C-family one), else the last ```python block (to be
 * refused for its lack of Model), else the whole reply when it has no fenced
 * block and defines class Model.
 * Returns a malloc'd text, or NULL. */
char *kv_synth_extract_module(const char *reply);
/* A task name from the reply's "Name: ..." line (letters, digits, '_'), else
 * `fallback`; prefixed "NUM_" and at most 48 characters. */
void kv_synth_task_name(const char *reply, int64_t num, const char *fallback, char *out,
                        size_t cap);
/* The graph key: sha256 of ops_key and of the dtypes and bench-size shapes of
 * every tensor param of the task, in order (names do not count). */
int kv_synth_graph_key(const struct kv_task *t, const char *ops_key, char out[65], char *err,
                       size_t errlen);
/* k distinct operators (3..6 chosen from the seed and attempt) of ops[0..n). */
int kv_synth_pick_ops(uint64_t seed, int attempt, int n, int *idx, int max);

/* ---- kevo adapt -------------------------------------------------------------- */

struct kv_adapt_opts {
  struct kv_bench_opts bench; /* the suite and each task's run (an LLM strategy) */
  int judge_max;              /* judge calls at most in the dedup pass (default 40; 0: none) */
  int judge_all;              /* 1: kv_rules_dedup_all, AdaExplore's judge (--judge all) */
  int fresh;                  /* adapt again even where the suite's last adaptation is done */
};

struct kv_adapt_summary {
  int64_t id, bench_id;
  int already;       /* 1: the suite's last adaptation was done: nothing ran, report only */
  int resumed;       /* the bench continued an unfinished one */
  char stopped[512]; /* why it ended early ("" when it did not) */
  int nodes, accepted;
  int contradicted; /* rules flagged by accepted kernels in the audit pass */
  struct kv_rules_dedup_stats dedup;
};

/* Runs the agent over the practice suite (kv_bench_run: resumable, one
 * progress hook per task), then, once every task is done, the dedup pass
 * (llm as judge) and the contradiction audit; the summary is kept with the
 * adaptation. Returns 0, or -1 with err. */
int kv_adapt_run(struct kv_store *s, struct kv_llm *llm, const struct kv_adapt_opts *o,
                 const struct kv_bench_hooks *h, struct kv_adapt_summary *sum, char *err,
                 size_t errlen);

#endif
