/* The profiler: Nsight Compute (ncu) on one bench-size call of an accepted
 * CUDA candidate (and, cached, of the reference), run inside kevo's worker
 * with `--clock-control none` and a few sections (SpeedOfLight, LaunchStats,
 * Occupancy, MemoryWorkloadAnalysis, WarpStateStats, the stall reasons and
 * ncu's rules), and a parser of its CSV details page into a compact metric
 * set per kernel. The profiled run never produces the speedup: timing stays
 * with kevo's own clock. Never prints, never exits. */
#ifndef KEVO_NCU_H
#define KEVO_NCU_H

#include <stddef.h>

#define KV_NCU_MAX_KERNELS 8
#define KV_NCU_MAX_RULES 4
#define KV_NCU_TEXT_CAP (4u << 20) /* ncu's output read, bytes */
#define KV_NCU_RAW_CAP (16u << 10) /* its text (details page) kept with a result, bytes */

struct kv_ncu_rule {
  char name[48];  /* "CPIStall", "UncoalescedGlobalAccess" */
  double speedup; /* estimated speedup, percent (0: none given) */
  char text[320]; /* the rule's message, first sentences */
};

struct kv_ncu_kernel {
  char name[160]; /* as ncu names it (mangled: --kernel-name-base mangled) */
  char grid[48], block[48];
  double duration_us;
  double sm_pct, mem_pct, dram_pct;     /* SOL: compute (SM), memory, DRAM throughput, % of peak */
  double l1_pct, l2_pct;                /* L1/TEX and L2 cache throughput, % */
  double achieved_occ, theoretical_occ; /* % */
  double registers, smem_bytes;         /* per thread; per block (static + dynamic) */
  double waves;                         /* waves per SM */
  double cpi;                           /* warp cycles per issued instruction */
  char top_stall[48];                   /* the largest stall reason ("long_scoreboard") */
  double top_stall_cycles;              /* its cycles per issued instruction */
  int nrules;                           /* by estimated speedup, largest first */
  struct kv_ncu_rule rules[KV_NCU_MAX_RULES];
};

struct kv_ncu_report {
  int nkernels;
  struct kv_ncu_kernel k[KV_NCU_MAX_KERNELS];
  double seconds;       /* what it cost: the profiled run and reading its report */
  char note[512];       /* "" or "not available: why" */
  char sandbox_off[96]; /* the worker's layers left off under the tool ("" none) */
  char *raw;            /* ncu's text of the details page, capped at KV_NCU_RAW_CAP */
};

/* Parses ncu's CSV (`--csv --page details --print-units base`; any bytes,
 * NUL-terminated) into rep's kernels (at most KV_NCU_MAX_KERNELS, in the
 * order profiled; a kernel profiled again is a new entry). Returns the number
 * of kernels; never fails (0 when the text holds none). */
int kv_ncu_parse_csv(const char *text, struct kv_ncu_report *rep);

/* One line per kernel, kevo's compact rendering: "k<<<(512,1,1),(256,1,1)>>> 12.3 us; SOL sm 41%
 * mem 87% (dram 85%); occupancy 88% of 100%; 32 regs; top stall long_scoreboard (9.1 cyc/instr);
 * rule UncoalescedGlobalAccess (est. +40%): ..." */
void kv_ncu_summary(const struct kv_ncu_report *r, char *out, size_t cap);

struct json_t;
struct json_t *kv_ncu_json(const struct kv_ncu_report *r);

/* That JSON back (a recorded result: kevo resume, kevo analyze, a gate
 * server's reply): outside input, strings capped, counts bounded. A malloc'd
 * report, NULL when j is not an object. */
struct kv_ncu_report *kv_ncu_from_json(const struct json_t *j);

void kv_ncu_report_free(struct kv_ncu_report *r);

/* ncu, into out: $KEVO_NCU, else beside o's nvcc (kv_gate_opts.nvcc_path;
 * o NULL: the default nvcc), else on PATH; "" when there is none. */
struct kv_gate_opts;
void kv_ncu_path(const struct kv_gate_opts *o, char *out, size_t cap);
/* "2025.3.1.0" or "". Cached per tool. */
const char *kv_ncu_version(const struct kv_gate_opts *o);

#endif
