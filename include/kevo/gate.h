/* The gate: compiles a candidate, proves on fresh inputs that it computes what
 * the reference computes, times it, and decides a verdict that no candidate
 * can forge. Candidates only ever run inside sandboxed kevo-worker processes.
 * Never prints, never exits. */
#ifndef KEVO_GATE_H
#define KEVO_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/calib.h"
#include "kevo/ncu.h"
#include "kevo/sandbox.h"
#include "kevo/sanitize.h"
#include "kevo/sass.h"
#include "kevo/task.h"
#include "kevo/timeci.h"

/* In order of precedence: the first that applies is the verdict. */
enum kv_verdict {
  KV_V_POLICY_VIOLATION,
  KV_V_COMPILE_ERROR,
  KV_V_LOAD_ERROR,
  KV_V_CRASH,
  KV_V_TIMEOUT,
  KV_V_UNWRITTEN_OUTPUT,
  KV_V_WRONG_OUTPUT,
  KV_V_INPUT_MUTATED,
  KV_V_STALE_OUTPUT,
  KV_V_IMPLAUSIBLE,
  KV_V_INTERFERENCE, /* the reference ran slower beside the candidate than alone */
  KV_V_OK,
  KV_V_COUNT
};
const char *kv_verdict_name(enum kv_verdict v);
/* -1 for an unknown name. */
int kv_verdict_from_name(const char *name);

#define KV_GATE_MAX_CHECKS 256
#define KV_OUTPUT_CAP (64 * 1024) /* candidate stdout/stderr kept, each */
#define KV_LOG_CAP (64 * 1024)    /* compiler log kept */

struct kv_check {
  char sizes[256]; /* "rows=7 cols=1001" */
  uint64_t seed;
  enum kv_verdict verdict;
  char detail[512];
  double max_abs_err, max_rel_err;
};

struct kv_stats {
  int n;
  double median_us, iqr_us, cv, min_us, mean_us;
};

/* Resources of one compiled kernel (cuda: from ptxas -v). */
#define KV_MAX_KERNELS 32
struct kv_kernel_res {
  char name[160]; /* as ptxas names it (mangled) */
  int registers, barriers;
  long smem_bytes, cmem_bytes, stack_bytes, spill_store_bytes, spill_load_bytes;
  int has_sass;            /* cuda: the instruction mix below was read (kevo/sass.h) */
  struct kv_sass_mix sass; /* from cuobjdump -sass of the candidate's own object */
};

/* One bench size's timing, when a task lists several (kv_timing.size). */
struct kv_size_timing {
  char sizes[256];
  double cand_us, ref_us; /* medians */
  double speedup, lo, hi; /* and its 95% interval */
  double stages_s;        /* the timing stage's seconds at this size */
};

/* How a side's calls are timed (kv_gate_opts.timing_method). KV_TIMING_KEVO
 * (the default): phases of calls on fresh inputs, each phase's buffers cold
 * (one flush before every phase of every side), interleaved ABBA, medians.
 * KV_TIMING_KERNELBENCH: KernelBench's protocol, for side-by-side work with
 * its numbers (its src/eval.py, time_execution_with_cuda_event as its
 * evaluation calls it): per side KV_KB_WARMUP untimed calls, then
 * KV_KB_TRIALS timed calls one at a time (cuda: events around the call, then
 * a synchronization), every call on the same inputs, no flush between them,
 * the side's block of calls run back to back, and the MEAN reported (the
 * speedup is the reference's mean over the candidate's). kevo's checks
 * still apply: each timed call is a phase of one call bounded by kevo's
 * clock, its outputs poisoned before it (cpu) and drawn calls validated. */
/* KV_TIMING_DOBENCH (cuda only; not yet verified on a GPU: see
 * docs/kernelbench.md): kevo's phases, medians and checks, but each call's
 * buffers made cold as triton's do_bench does it, by a flush (a fill of twice
 * the L2, leaving it full of dirty lines) right before the call's start
 * event, which is then queued behind the fill (the host's launch of the call
 * is not inside the events); the host clock leaves the fill out. */
enum kv_timing_method { KV_TIMING_KEVO = 0, KV_TIMING_KERNELBENCH = 1, KV_TIMING_DOBENCH = 2 };
#define KV_KB_WARMUP 3
#define KV_KB_TRIALS 100
const char *kv_timing_method_name(int method);
/* "kevo", "kernelbench" or "do_bench" into *method; -1 for anything else. */
int kv_timing_method_parse(const char *name, int *method);

struct kv_timing {
  char method[16]; /* "kevo" or "kernelbench" (kv_timing_method_name) */
  /* kernelbench on cuda: 1 when the worker kept the inputs and skipped the
   * flush between trials as asked (a worker that does not know the request
   * regenerates the same inputs and flushes: each trial then starts cold). */
  int kb_kept;
  char sizes[256];
  struct kv_stats cand, ref;
  int has_baseline;          /* the task's baseline (baseline.cu, or torch.compile) was timed too */
  char baseline_kind[64];    /* "baseline.cu", "torch.compile(mode=default)" */
  double baseline_compile_s; /* torch.compile: its compile time (not in any timed call) */
  struct kv_stats base;
  double speedup;             /* ref median / cand median */
  double speedup_vs_baseline; /* base median / cand median, when has_baseline */
  /* cuda: which clock each side's times come from: 0 the stream's events, 1
   * the host clock around a device-wide synchronization (chosen when the
   * work ran outside the events, e.g. on another stream). */
  int cand_host_timer, ref_host_timer;
  double sync_overhead_us; /* cuda: host clock of an empty call, subtracted from host times */
  /* cuda, a torch reference: the lead kernel queued before each timed
   * forward so that Python's dispatch stays out of the events (its last
   * length, us), and the timed calls of the reference and the compiled
   * baseline whose dispatch outlasted it (their events may hold launch
   * latency; the lead doubles after each). */
  double torch_lead_us;
  int torch_uncovered;
  /* cuda, a torch reference: the eager and torch.compile sides at the first
   * bench size timed again by triton.testing.do_bench (L2 flushed, median),
   * the cross-check of kevo's own times of them (issue 27 item 4); 0 where
   * not measured (do_bench_why says why, "" when not asked). */
  double ref_do_bench_us, base_do_bench_us;
  char do_bench_why[160];
  /* cuda: kevo's empty phases (parent's clock, median per phase) while the
   * candidate's process existed and once it was gone (interference check). */
  double empty_beside_us, empty_alone_us;
  double bytes, flops; /* from the task's cost expressions (0 when absent) */
  double gbs, gflops;  /* achieved by the candidate */
  double roofline;     /* max(bytes/bw, flops/peak) / median; 0 when unknown */
  double wall_s;       /* the parent's clock around the candidate's timing phases */
  double covered_s;    /* the part of wall_s the candidate's reported calls cover */
  /* The reference timed alone, once the candidate's process was gone: its
   * interleaved times must agree (cuda: else the verdict is interference).
   * Where alone was the faster, ref is a copy of ref_alone (the speedup is
   * taken against it), ref_from_alone is 1 and ref_beside_us holds the
   * interleaved median; a slowed reference buys nothing. The baseline, timed
   * beside the candidate only, then has its median scaled by alone/beside. */
  struct kv_stats ref_alone;
  int ref_from_alone;
  double ref_beside_us;
  int phases, calls_per_phase; /* per side */
  int validated_calls;         /* timed calls whose outputs were checked, drawn after each phase */
  double parent_us;   /* per candidate call by kevo's clock, less overhead from a clean process */
  double clock_ratio; /* the candidate's reported time / parent's: ~1 when honest */
  double clock_slack_us; /* per call: what the clean phases' noise allows */
  /* Median phase walls by kevo's clock: the candidate's, the empty entry's
   * alone (the overhead taken off) and beside the candidate */
  double cand_phase_us, empty_phase_us, empty_beside_phase_us;
  int cand_clamped; /* the candidate's median was raised to kevo's clock's floor */
  /* kevo's clock could not see the candidate's calls (its phases, less kevo's
   * overhead, within the clean phases' noise: a loaded host): its own report
   * was all there was, so no speedup above 1x was credited */
  int clock_blind;
  /* The speedup's 95% interval (kevo/timeci.h: the order-statistic interval
   * of the rounds' ratios, relative to their median, applied to speedup),
   * and adaptive timing's stop (kv_gate_opts.timing_ci). */
  double speedup_lo, speedup_hi;
  double ci_level;            /* the interval's exact coverage (>= 0.95 from 6 rounds) */
  double ci_half_width;       /* relative: 0.01 is +-1% */
  double ci_clock_half_width; /* the candidate's time by kevo's clock; -1: unresolved */
  double ci_target;           /* 0: a fixed budget */
  int min_phases, max_phases; /* adaptive: the fewest and most rounds (phases per side) */
  char stop[16];              /* "fixed", "ci", "max" or "deadline" */
  /* Where the timing stage's seconds went: warm-up (pricing a call, buffers),
   * the interleaved loop's phases, validating timed calls, and the phases
   * of the reference and kevo's empty entry alone. */
  double stage_warmup_s, stage_loop_s, stage_validate_s, stage_alone_s;
  /* A task with several bench sizes: each timed in turn (size[0..nsizes)),
   * the figures above are the first size's except the speedup and its
   * interval (speedup_lo, speedup_hi), the geometric means over the sizes.
   * 0 with one size. */
  int nsizes;
  struct kv_size_timing size[KV_MAX_BENCH];
};

/* Workers kept warm across evaluations: a caller that judges many
 * candidates (kevo run, a gate server) owns one and names it in
 * kv_gate_opts.warm. The reference's workers (which never load candidate
 * code) go on from one evaluation of the same task and settings to the
 * next, reference loaded; each candidate still gets a process of its own,
 * but one spawned (exec, sandbox, cuInit) when the previous evaluation
 * ended. Safe to share between threads (one evaluation takes what it
 * holds). kv_gate_warm_free stops what it holds. */
struct kv_gate_warm;
struct kv_gate_warm *kv_gate_warm_new(void);
void kv_gate_warm_free(struct kv_gate_warm *w);
/* How many evaluations took a warm reference worker, a warm candidate worker. */
void kv_gate_warm_stats(const struct kv_gate_warm *w, int *rw_reused, int *cw_reused);

struct kv_gate_result;
struct kv_gate_opts {
  const char *surface;   /* "cpu" (default) or "cuda" */
  uint64_t seed;         /* base seed; fresh per evaluation unless set */
  int nseeds;            /* seeds per check size (>= 2) */
  int timing;            /* 0: correctness only */
  double job_deadline_s; /* per worker job */
  double compile_deadline_s;
  /* kv_gate_prebuild: 0 (default), the static analysis too; 1, the compile
   * only, the analysis left to the evaluation (beside its checks). */
  int prebuild_compile_only;
  double time_budget_s; /* target seconds of timed calls per side */
  /* Where things are; each NULL for the default. The library never reads
   * the environment for them: kevo's command line fills them from
   * KEVO_CACHE_DIR, KEVO_WORKER, KEVO_NVCC and KEVO_CUDA_ARCH. It does read
   * overrides that have no field here: the helpers' and tools' paths
   * (KEVO_SANDBOX_HELPER, KEVO_NVRTC_HELPER, KEVO_CUOBJDUMP, KEVO_NCU,
   * KEVO_COMPUTE_SANITIZER), KEVO_NVRTC, KEVO_PYTHON, KEVO_TORCH_WORKER,
   * KEVO_LOCK_DIR and the sanitizer's KEVO_SANITIZER_*; PATH (python3 for a
   * torch reference); and LD_LIBRARY_PATH, CUDA_VISIBLE_DEVICES and OMP_NUM_THREADS,
   * which it hands to the workers (nothing else of kevo's environment). */
  const char *cache_dir;        /* compiled objects; default kv_cache_dir ($XDG_CACHE_HOME/kevo) */
  const char *worker_path;      /* default: kevo-worker beside the executable; kevo's helpers
                                   (kevo-sandbox, kevo-nvrtc) are looked for beside it too */
  const char *nvcc_path;        /* cuda: the compiler (the CUDA tools are looked for beside it);
                                   default: nvcc on PATH, else /usr/local/cuda/bin/nvcc */
  const char *cuda_arch;        /* cuda: "sm_90", "90" or "9.0"; default: the GPU's */
  const struct kv_calib *calib; /* ceilings for `implausible`; NULL: no check (cpu), or
                                   measured once per device and cached by the gate (cuda) */
  int sandbox;                  /* 1 (default): all layers; 0 only for kevo's own diagnostics */
  /* Timing is exclusive per device (a GPU, or the cores this thread may run
   * on), across threads and processes: the longest wait, in seconds, for
   * another evaluation's timing on the same device to end (default 600; 0:
   * the default). Past it kv_gate_eval fails, naming the holder. */
  double lock_wait_s;
  /* A task whose reference is reference.py (PyTorch eager): NULL, or a
   * torch.compile mode ("default", "reduce-overhead", "max-autotune",
   * "max-autotune-no-cudagraphs") under which the same module is timed as
   * the baseline, compiled before timing (the compile time is reported
   * apart, never timed). */
  const char *torch_compile;
  /* Adaptive timing: stop the interleaved loop once the 95% interval of the
   * speedup, and that of the candidate's time by kevo's own clock, are
   * within +-timing_ci (relative; default KV_TIMING_CI_DEFAULT, 0.01), after
   * at least 6 rounds and 10 calls, at most the budget's count. 0: a fixed
   * budget (every round that time_budget_s allows). */
  double timing_ci;
  int timing_method; /* enum kv_timing_method; 0: kevo's own */
  /* cuda, after the verdict (kevo/ncu.h, kevo/sanitize.h): 0 off; profile 1:
   * Nsight Compute on an accepted candidate (and, cached, the reference), 2:
   * on any candidate that loads; debug 1: compute-sanitizer on a candidate
   * rejected as crash, wrong, unwritten or stale output, 2: on any. Each
   * within its deadline (0: 120 s); never changes the verdict. */
  int profile, debug;
  double profile_deadline_s, debug_deadline_s;
  /* Called as each phase of kv_gate_eval ends, with the result so far:
   * "compile" (the compile in), "checks" (the checks in;
   * not when the candidate did not compile), "timing" (as timing starts;
   * only when there is timing to do), "verdict" (the verdict and timing are
   * final; the static analysis, the profiler and the debugger may still be
   * running: their fields are not filled yet), "static" (the static
   * analysis in). NULL: none. (kevo eval shows its phases as they happen
   * with it, the verdict before the analysis.) */
  void (*on_phase)(void *ud, const char *phase, const struct kv_gate_result *r);
  void *phase_ud;
  struct kv_gate_warm *warm; /* NULL: every evaluation starts its own workers */
};
void kv_gate_opts_default(struct kv_gate_opts *o);

#define KV_MARKS_MAX 40
struct kv_mark {
  char what[24];
  double at_s;
};

struct kv_gate_result {
  enum kv_verdict verdict;
  char detail[1024];
  char source_hash[65];
  char surface[16];
  char device[256];
  char *compile_log; /* capped at KV_LOG_CAP, NUL-terminated; may be NULL */
  int compile_cached;
  int nkernels; /* cuda: the candidate's kernels and their resources */
  struct kv_kernel_res kernels[KV_MAX_KERNELS];
  struct kv_calib calib; /* the ceilings the verdict used (calib.device empty: none) */
  double compile_s, check_s, time_s;
  /* torch surface: the candidate's LOAD on kevo's clock (its import, ModelNew
   * built and run once at every listed size: Triton's JIT, load_inline's
   * build), never in a timed call; 0 elsewhere. */
  double jit_s;
  double lock_wait_s; /* waited for the device's timing lock (not in time_s) */
  int nchecks;
  struct kv_check checks[KV_GATE_MAX_CHECKS];
  int timed;
  struct kv_timing timing;
  char *cand_stdout, *cand_stderr; /* capped at KV_OUTPUT_CAP, NUL-terminated; may be NULL */
  int stdout_truncated, stderr_truncated;
  struct kv_sandbox_status sandbox;
  /* cuda: static analysis of the candidate's own object (cuobjdump -sass),
   * always on for compiled candidates; each kernel's mix is in kernels[]. */
  int static_done;       /* it ran and was parsed */
  double static_s;       /* what it cost: cuobjdump and the parse */
  char static_note[512]; /* "" or "not available: why" */
  char *sass; /* the listing less its encodings, capped at KV_SASS_RAW_CAP; may be NULL */
  /* cuda, when asked for (kv_gate_opts.profile, .debug); NULL when not run. */
  struct kv_ncu_report *profile;     /* the candidate under Nsight Compute (kevo/ncu.h) */
  struct kv_ncu_report *profile_ref; /* the reference, likewise (cached) */
  struct kv_san_report *debug;       /* compute-sanitizer's findings (kevo/sanitize.h) */
  /* Where the evaluation's seconds went: what ended when, in order, in
   * seconds from kv_gate_eval's start by kevo's clock ("compiled",
   * "reference_worker_up", ..., "checked", "loop", ..., "end"); at most
   * KV_MARKS_MAX (later ones dropped). */
  int nmarks;
  struct kv_mark marks[KV_MARKS_MAX];
  double start_s; /* kv_now_s() at kv_gate_eval's start */
};

/* Judges one candidate. Returns 0 when a verdict was reached (whatever it is)
 * and a negative value when kevo itself could not judge (bad task, missing
 * candidate, no compiler, broken worker), with the reason in err. */
int kv_gate_eval(const struct kv_task *t, const char *candidate_path, const struct kv_gate_opts *o,
                 struct kv_gate_result *r, char *err, size_t errlen);
void kv_gate_result_release(struct kv_gate_result *r);
/* Compiles several candidates at once (the compile pool) into the cache, so
 * that judging them afterwards, one at a time, finds them built and (cuda,
 * unless o->prebuild_compile_only) their static analysis done (cuobjdump
 * -sass, 0.45 s of CPU each, kept beside the object). Compile errors are
 * cached like successes and reported by kv_gate_eval. Returns the number
 * built or cached, negative when kevo could not compile at all. */
int kv_gate_prebuild(const struct kv_task *t, const char *const *paths, int n,
                     const struct kv_gate_opts *o, char *err, size_t errlen);
/* The result as a JSON object text (malloc'd): verdict, detail, timing (when
 * timed: median_us, reference_median_us, speedup and the statistics), checks,
 * compile log, captured output, sandbox layers. */
char *kv_gate_result_json(const struct kv_gate_result *r);
/* A compiler log with kevo's copy of the candidate (candidate.c, .cu) named
 * as the user's file (user_path's last component) where a diagnostic names
 * it; malloc'd, NULL when there is nothing to do or no memory. */
char *kv_gate_log_own_names(const char *log, const char *user_path);
/* That JSON back into a result (a gate server's verdict; a recorded one, for
 * kevo resume and kevo analyze): verdict, detail, hashes, device, compile log
 * and kernels (with their instruction mixes), static analysis, checks,
 * timing, ceilings, captured output. Outside input: strings are capped,
 * counts bounded, an unknown verdict refused. 0, or -1 with err (r is then
 * empty). Release with kv_gate_result_release. */
int kv_gate_result_from_json(const char *json, struct kv_gate_result *r, char *err, size_t errlen);

/* A speedup against a torch side is printed bare only where kevo's time of
 * that side is within KV_DO_BENCH_TOL of triton's do_bench
 * (kv_timing.ref_do_bench_us, base_do_bench_us: issue 27 item 4). Else
 * kv_side_note writes the words that go after it, e.g. " (kevo's compile
 * time 11.6% above do_bench: not comparable)", and returns 1; 0 and "" when
 * the side agrees or was not cross-checked. baseline: the torch.compile side,
 * else the eager reference. */
#define KV_DO_BENCH_TOL 0.05
int kv_side_note(const struct kv_timing *t, int baseline, char *out, size_t cap);
/* The same from a stored result's "timing" object (kv_gate_result_json). */
int kv_side_note_json(struct json_t *timing, int baseline, char *out, size_t cap);

#define KV_TASK_MAX_FINDINGS 32
struct kv_task_report {
  int ok; /* the reference runs everywhere and the task is well-posed */
  int nfindings;
  char findings[KV_TASK_MAX_FINDINGS][512];
  int ncalls; /* reference calls made */
  double compile_s;
  double bench_ref_ms; /* one reference call on bench[0]; < 0 if not measured */
  char *compile_log;
};
/* `kevo task check`: compiles the reference, runs it on every check size with
 * two seeds, and rejects the task as ill-posed if all-zeros, a constant, or a
 * copy of an input passes its own tolerance on every check, or if the output
 * does not change when the inputs change. Returns 0 when a report was made
 * (ok or not), negative when kevo could not check at all. */
int kv_task_check(const struct kv_task *t, const struct kv_gate_opts *o, struct kv_task_report *r,
                  char *err, size_t errlen);
void kv_task_report_release(struct kv_task_report *r);

/* `kevo doctor`: starts a sandboxed worker and has it try each escape. */
#define KV_PROBE_MAX 16
struct kv_probe {
  struct kv_sandbox_status layers;
  int nprobes;
  char name[KV_PROBE_MAX][32];
  int blocked[KV_PROBE_MAX]; /* 1: the attempt failed, as it should (write_scratch: 0 is right) */
  int env_vars;              /* variables in the worker's environment */
  char worker_path[4096];
};
int kv_gate_probe(const struct kv_gate_opts *o, struct kv_probe *p, char *err, size_t errlen);
/* `kevo doctor`: starts a cuda worker under a developer tool ("ncu" or
 * "compute-sanitizer") as the profiler and the debugger do, with the layers
 * in `off` left off (NULL-terminated names: netns, landlock, seccomp, lock,
 * scratch; NULL: those configured, $KEVO_NCU_WITHOUT or
 * $KEVO_SANITIZER_WITHOUT), and reports the layers it had on (from its
 * HELLO) and those left off ("netns,seccomp"). 0, or -1 with err (the tool
 * missing, the worker not starting under it, no device). */
int kv_devtool_probe(const struct kv_gate_opts *o, const char *which, const char *const *off,
                     struct kv_sandbox_status *st, char *without_list, size_t cap, double *seconds,
                     char *err, size_t errlen);

/* The ceilings of the device of surface o->surface ("cuda": copy bandwidth,
 * FP32 FMA rate, L2 size and multiprocessor count, measured inside a worker),
 * from the cache (<cache>/calib-cuda.json, keyed by the device) unless `force`,
 * else measured and saved. *measured says which. */
int kv_gate_calibrate(const struct kv_gate_opts *o, int force, struct kv_calib *c, int *measured,
                      char *err, size_t errlen);
/* What a cuda worker sees of the device: 0 with a description ("NVIDIA H100
 * 80GB HBM3, sm_90, 132 SMs, 50.0 MiB L2, driver 13.0"), or -1 with the
 * reason the cuda surface cannot run here. */
int kv_gate_cuda_device(const struct kv_gate_opts *o, char *out, size_t cap, char *err,
                        size_t errlen);
#endif /* guard */
