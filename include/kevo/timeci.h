/* Adaptive timing: how many phases the gate's interleaved timing loop runs,
 * when it may stop, and the confidence interval it reports with a speedup.
 * Pure arithmetic on figures the timing loop hands in (lib/gate/timing.c),
 * so that the stopping rule can be tested without a worker. Never prints,
 * never exits.
 *
 * The interval is the order-statistic (distribution-free) interval of a
 * median: for n independent samples of any continuous distribution, the
 * k-th smallest and k-th largest bracket the true median with probability
 * 1 - 2 P(Bin(n, 1/2) < k), whatever the distribution. The timing loop's
 * samples are its rounds: one phase of each side, adjacent in time (ABBA),
 * so a slow drift of the machine cancels inside a round's ratio. */
#ifndef KEVO_TIMECI_H
#define KEVO_TIMECI_H

/* Timed calls per side: never fewer (a slow warm-up cannot shrink the count
 * below this), never more. */
#define KV_TIMING_MIN_CALLS 10
#define KV_TIMING_MAX_CALLS 1000
/* Adaptive timing: never stop before this many rounds (a 95% interval of a
 * median needs 6 samples), and only after an even number (a whole ABBA
 * pair). */
#define KV_TIMING_MIN_ROUNDS 6
/* The default target: the 95% interval of the speedup within +-1%. */
#define KV_TIMING_CI_DEFAULT 0.01
/* The candidate's time by kevo's own clock must be steady within the target
 * or this, whichever is wider, for an early stop. kevo's clock only bounds
 * the reported times (a forgery below 0.87 of it is rejected), so its
 * interval must resolve that 13% margin, with room: half of it. Not the
 * speedup's 1%, nor the 3% it was: a phase's wall also holds the fresh
 * inputs' generation and the L2 flush, several times a 30-100 us call, so on
 * an H100/H200 the clock varies 5-10% from round to round and a 3% interval
 * took every round the budget allowed (20-30 for rowsum and layernorm). */
#define KV_TIMING_CLOCK_CI 0.065

struct kv_median_ci {
  int n;
  double median, lo, hi;
  double level; /* the interval's exact coverage (>= the level asked where n allows) */
};
/* The order-statistic interval of the median of x[0..n) at coverage `want`
 * (0.95), or the widest one (min, max) when n is too small for it (level
 * then says what it is: 0.875 for 4 samples). n < 1: all zero, -1. */
int kv_median_ci(const double *x, int n, double want, struct kv_median_ci *ci);
/* Half the interval's width over its median (0.01 is +-1%); a huge value
 * when the median is not positive. */
double kv_median_ci_rel(const struct kv_median_ci *ci);

/* How one side's timed calls are laid out in phases of m calls. */
struct kv_timing_plan {
  int m;           /* calls per phase */
  int rounds;      /* fixed budget: rounds run; adaptive: the most */
  int min_rounds;  /* adaptive: the fewest (fixed: = rounds) */
  int valid_calls; /* the validation rate's denominator: calls by the fewest rounds */
};
/* per_ns: the warm-up's price of one call on kevo's clock (overheads in);
 * budget_s: seconds of timed calls per side; m_mem: the most calls whose
 * buffers fit a phase; target: 0 for the fixed budget, else the adaptive
 * target (relative half-width). The fixed plan is the gate's historical one
 * (n = budget / per in [10, 1000], m = n / 4, >= 2 rounds); the adaptive one
 * takes that as its maximum and stops no sooner than KV_TIMING_MIN_ROUNDS
 * rounds nor KV_TIMING_MIN_CALLS calls. (Splitting the count into more,
 * smaller rounds so that an early stop saves more was tried on 2026-11-26:
 * phases of 42 calls instead of 64 raised an H200's medians by 1-2%, and
 * validation, not the loop, is where a verdict's time goes; BENCHMARKS.md.) */
void kv_timing_plan(double per_ns, double budget_s, int m_mem, double target,
                    struct kv_timing_plan *p);

enum kv_timing_stop {
  KV_TSTOP_GO,       /* take another round */
  KV_TSTOP_FIXED,    /* fixed budget: every planned round ran */
  KV_TSTOP_CI,       /* both intervals within the target */
  KV_TSTOP_MAX,      /* the most rounds ran */
  KV_TSTOP_DEADLINE, /* past the loop's deadline, after the fewest rounds */
};
const char *kv_timing_stop_name(enum kv_timing_stop s);

/* The stopping rule, after `rounds` rounds. ratio[j]: round j's speedup
 * (the reference's median over the candidate's, as reported, bounded
 * afterwards by kevo's clock); clock[j]: round j's candidate time per call
 * by kevo's own clock around its phase, less kevo's overhead (<= 0: kevo's
 * clock cannot resolve it). The speedup's interval must be within target
 * and the clock's within max(target, KV_TIMING_CLOCK_CI): the candidate
 * cannot make the loop stop by reporting steady times, only by being
 * steady by kevo's clock. *hw, *hw_clock: the relative half-widths
 * (may be NULL). elapsed_s / deadline_s: the loop's time so far and its
 * deadline (0: none). Never stops before p->min_rounds, always at
 * p->rounds. */
enum kv_timing_stop kv_timing_decide(const struct kv_timing_plan *p, double target,
                                     const double *ratio, const double *clock, int rounds,
                                     double elapsed_s, double deadline_s, double *hw,
                                     double *hw_clock);
/* A robust spread of n values: the standard deviation as the median
 * absolute deviation estimates it (1.4826 MAD). One outlier among n moves it
 * by at most one rank of the deviations, where it sets a range to anything
 * (kevo's clock slack, lib/gate/timing.c). 0 for n < 2 or out of memory. */
double kv_robust_sigma(const double *x, int n);
#endif /* guard */
