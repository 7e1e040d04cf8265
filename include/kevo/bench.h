/* Benches: one strategy over every task of a suite (a directory of task
 * directories, e.g. the output of `kevo import` on KernelBench's level1..3),
 * each task's state in the store as it changes, so that a bench killed at any
 * moment resumes with no task lost or run twice; and the suite's score the
 * way KernelBench computes it. Never prints, never exits. */
#ifndef KEVO_BENCH_H
#define KEVO_BENCH_H

#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/run.h"
#include "kevo/store.h"

enum { KV_BENCH_MAX_TASKS = 4096, KV_BENCH_NP = 4, KV_BENCH_MAX_LEVELS = 8 };

/* A task found in a suite: its directory, its name (the path below the suite)
 * and its level (a "levelN" directory on the way; 0: none). */
struct kv_bench_found {
  char *dir, *name;
  int level;
};
/* The task directories (holding a task.json) of suite_dir and of its
 * subdirectories two deep, in natural order ("2_x" before "10_x"). */
int kv_bench_discover(const char *suite_dir, struct kv_bench_found **out, int *n, char *err,
                      size_t errlen);
void kv_bench_found_free(struct kv_bench_found *f, int n);

struct kv_bench_opts {
  const char *suite_dir;
  struct kv_run_config run; /* each task's run */
  const struct kv_gate_opts *gate;
  int fresh; /* 1: a new bench even where an unfinished one of this suite and configuration is */
  /* Tasks run at once (<= 1: one after another). Above 1, each of `jobs`
   * threads has its own store connection and, for an LLM strategy, its own
   * client of run.llm's model with an equal share of what is left of its
   * budget caps; timing still takes turns on the device (its lock). Not part
   * of the bench's identity: a bench resumes with any number of jobs. */
  int jobs;
  /* Another process runs this bench (the same suite and configuration):
   * wait up to this many seconds for it to end, then refuse (0: at once). */
  double wait_s;
};

struct kv_bench_event {
  int index, n;                         /* this task's position, the bench's size */
  const struct kv_bench_task_row *task; /* its state (after the task: the result) */
  int continued;                        /* 1: its run was started by an earlier session */
  double seconds;                       /* task end: how long this session spent on it */
};
/* With jobs > 1 the hooks are called from the worker threads, one call at a
 * time (the bench holds a lock around each). */
struct kv_bench_hooks {
  void (*task_start)(void *ud, const struct kv_bench_event *e);
  void (*task_end)(void *ud, const struct kv_bench_event *e);
  /* A task's run made progress; NULL: run.progress is called instead. */
  void (*task_progress)(void *ud, const struct kv_bench_event *e, const struct kv_run_progress *p);
  void *ud;
  struct kv_run_hooks run; /* given to every run: progress, stop, the LLM (created is kevo's) */
};

/* Runs (or continues) the bench of o->suite_dir. *bench_id and *resumed (1:
 * an unfinished bench was continued) are set before the first task. Returns
 * 0 when every task was taken to an end or the bench was stopped (run.stop,
 * or a run that ended early: *stopped_why says why), -1 with err when kevo
 * could not go on (the store). A task that fails is recorded and the bench
 * goes on. */
int kv_bench_run(struct kv_store *s, const struct kv_bench_opts *o, const struct kv_bench_hooks *h,
                 int64_t *bench_id, int *resumed, char *stopped_why, size_t whylen, char *err,
                 size_t errlen);

/* KernelBench's score of a suite. fast_p: the fraction of ALL the bench's
 * tasks that are correct and faster than p times the reference (p = 0, 1,
 * 1.5, 2: fast_0 is the correctness rate); tasks that failed, were skipped or
 * never ran count as incorrect; a correct task judged without timing counts
 * in fast_0 only. geomean: the geometric mean speedup over the
 * correct tasks only (KernelBench's geometric_mean_speed_ratio_correct_only);
 * 0 when none is. ada: AdaExplore's score, the mean speedup over ALL the
 * tasks with an incorrect (or unfinished) task counted as 0 and every
 * speedup clamped at KV_BENCH_ADA_CLAMP. */
#define KV_BENCH_ADA_CLAMP 10.0
struct kv_bench_level {
  int level, n, correct;
  double fast_p[KV_BENCH_NP], geomean, ada;
};
struct kv_bench_summary {
  int n, done, correct, failed, skipped, pending;
  double fast_p[KV_BENCH_NP], geomean, ada;
  int nlevels;
  struct kv_bench_level levels[KV_BENCH_MAX_LEVELS]; /* by level, level 0 (none) included */
};
extern const double kv_bench_p[KV_BENCH_NP];
void kv_bench_summarize(const struct kv_bench_task_row *rows, int n, struct kv_bench_summary *out);

#endif
