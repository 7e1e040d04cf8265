/* KLineage skills: an expert kernel walked backward through gate-validated
 * simplifications (lineages), each accepted step inverted into a forward edit
 * and admitted as a skill only when a paired, interleaved performance test
 * shows it pays; skill cards as JSON (export, import, Markdown), and
 * retrieval of the skills that fit a task and a candidate.
 *
 * Annotated experts. A kernel marks each mechanism with a header line
 *   // kevo:mechanism NAME [requires=A,B] [conflicts=C] [key=value...] -- intent
 * and blocks
 *   #if KV_MECH_NAME  (or #if !KV_MECH_NAME)  ...  #else  ...  #endif
 * Keys: anchor="code text" (what a candidate holding the mechanism contains;
 * default: the first line of 10 characters or more that the step's forward
 * edit adds and the simpler kernel lacks), dtypes, layout, storage,
 * pipeline, hardware (comma lists: the five categories of preconditions),
 * divides=SIZE:N[,SIZE:N] (sizes the mechanism needs divisible), smem=BYTES
 * (shared memory it needs per block). kevo disables the mechanisms one at a
 * time, dependents before what they depend on, gating each step.
 *
 * Never prints, never exits; errors name the file, the field and the fix. */
#ifndef KEVO_SKILLS_H
#define KEVO_SKILLS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "kevo/gate.h"
#include "kevo/task.h"

struct kv_store;

#define KV_MECH_MAX 32
#define KV_MECH_NAME_MAX 48
#define KV_ANNOT_SRC_MAX (1 << 20) /* largest annotated source */
#define KV_SKILLS_JSON_MAX (16 << 20)
#define KV_SKILLS_SCHEMA 1 /* "kevo_skills" of the files this build writes */
#define KV_PAIRS_MAX 64

/* ---- annotations ---------------------------------------------------------- */

struct kv_mech {
  char name[KV_MECH_NAME_MAX];
  char intent[256];
  char anchor[256]; /* code text a candidate holding it contains */
  char dtypes[96], layout[96], storage[96], pipeline[160], hardware[96]; /* comma lists */
  char divides[96];                                                      /* "cols:16,rows:4" */
  char scope[256]; /* LLM mode: the tasks (operators) it holds for, comma list, or "*" */
  long smem_bytes;
  int nreq, req[KV_MECH_MAX];   /* indexes into kv_annot.m */
  int nconf, conf[KV_MECH_MAX]; /* indexes */
  int anchor_default;           /* no anchor= given: the cards take the step's first added line */
  int line;                     /* of its header line (1-based) */
  int nblocks;
};

struct kv_annot {
  int n;
  struct kv_mech m[KV_MECH_MAX];
  /* Removal order of the backward walk: a mechanism comes before every
   * mechanism it requires (dependents first); among those free to go, the
   * one declared last. */
  int order[KV_MECH_MAX];
};

/* Parses the header lines and #if KV_MECH_ blocks of src (file names the
 * messages). Errors: a malformed header, an unknown key, a mechanism declared
 * twice or never used, a KV_MECH_ name that is not declared (in a block or in
 * requires/conflicts), a condition kevo cannot resolve, unbalanced blocks, a
 * dependency cycle (named: "A -> B -> A"). */
int kv_annot_parse(const char *src, size_t len, const char *file, struct kv_annot *a, char *err,
                   size_t errlen);
/* The source with mechanism i enabled iff bit i of `enabled` is set: its
 * blocks resolved (the directives gone), header lines of disabled mechanisms
 * dropped. *out malloc'd, NUL-terminated. */
int kv_annot_resolve(const char *src, size_t len, const char *file, const struct kv_annot *a,
                     uint32_t enabled, char **out, size_t *outlen, char *err, size_t errlen);
/* Index of a mechanism by name, or -1. */
int kv_annot_find(const struct kv_annot *a, const char *name);

/* ---- features observed in code (KLineage's feature contracts) --------------- */

/* What a kernel's code shows, read lexically with comments blanked (a
 * comment or a name proves nothing): PATTERN is what it computes, STRATEGY an
 * optimization mechanism, SUPPORT a choice that serves one (kept in the
 * carrier, as KLineage keeps "supporting instructions and compiler choices"). */
enum kv_feat_kind { KV_FEAT_PATTERN, KV_FEAT_STRATEGY, KV_FEAT_SUPPORT };
enum {
  KV_FEAT_REDUCTION,   /* pattern: x op= ...[...], x = x op ...[...], x = f(x, ...[...]) */
  KV_FEAT_SMEM,        /* __shared__ */
  KV_FEAT_SMEM_DB,     /* __shared__ ...[2]...: double-buffered tiles */
  KV_FEAT_VECTOR,      /* float4, float2, half2, int4 ..., ld.global.v4 */
  KV_FEAT_SIMD,        /* _mm..., __m256 ..., vld1q */
  KV_FEAT_OMP_SIMD,    /* #pragma omp ... simd */
  KV_FEAT_OMP_THREADS, /* #pragma omp parallel / for */
  KV_FEAT_MULTI_ACC, /* a local array updated with += (independent accumulators, register tiles) */
  KV_FEAT_SHUFFLE,   /* __shfl*, __reduce_*_sync */
  KV_FEAT_ATOMICS,   /* atomicAdd ..., __atomic_*, _Atomic, #pragma omp atomic */
  KV_FEAT_TENSOR,    /* wmma, mma_sync, mma.sync, wgmma */
  KV_FEAT_ASYNC,     /* cp.async, __pipeline_memcpy_async, memcpy_async, cuda::pipeline */
  KV_FEAT_UNROLL,    /* support: #pragma unroll, #pragma GCC unroll */
  KV_FEAT_BARRIER,   /* support: __syncthreads, __syncwarp, bar.sync */
  KV_FEAT_GRID_STRIDE,   /* support: a for header with gridDim */
  KV_FEAT_LDG,           /* support: __ldg */
  KV_FEAT_RESTRICT,      /* support: restrict, __restrict__ */
  KV_FEAT_LAUNCH_BOUNDS, /* support: __launch_bounds__ */
  KV_FEAT_CONST_MEM,     /* support: __constant__ */
  KV_FEAT_N
};
struct kv_features {
  uint32_t bits;       /* bit k: feature k seen */
  int line[KV_FEAT_N]; /* the first line (1-based) that shows it */
};
int kv_features_scan(const char *src, size_t len, struct kv_features *f);
const char *kv_feature_name(int k);
enum kv_feat_kind kv_feature_kind(int k);
int kv_feature_find(const char *name);
uint32_t kv_features_mask(enum kv_feat_kind kind);
/* "a,b" ("none" when empty) into out; returns its length. */
size_t kv_features_format(uint32_t bits, char *out, size_t cap);
json_t *kv_features_json(uint32_t bits);
/* A comma or blank separated list of feature names ("none" allowed); an
 * unknown name is an error listing the names kevo observes. */
int kv_features_parse(const char *list, uint32_t *bits, char *err, size_t errlen);

/* ---- a step's audit, round trip and preconditions (LLM mode) ------------------ */

/* The audit: an independent call (role "lineage:audit") reads the richer and
 * the simpler kernel with line numbers and answers
 *   Verdict: removed | kept | unknown
 *   Present: L12-L14 `quote`   (1 to 4: where the richer kernel holds it)
 *   Absent: L8-L9 `quote`      (1 to 4: the simpler kernel's decisive lines)
 *   Reason: one or two sentences
 * kevo re-reads every cited range: it must exist (1 <= a <= b <= lines, at
 * most 12 lines), its text must contain the quote (blanks squashed), and a
 * Present quote must be gone from the simpler kernel. Anything else, or a
 * verdict other than removed, fails the step. */
#define KV_AUDIT_CITES_MAX 4
#define KV_AUDIT_LINES_MAX 12
struct kv_audit {
  int passed;
  char why[512];
  char *json; /* the checked citations with their lines' text and the sources' hashes; malloc'd */
};
int kv_audit_check(const char *reply, const char *richer, const char *simpler,
                   struct kv_audit *out);

/* The round trip (KLineage's forward re-derivation): the kernel the model
 * re-derived from the card alone must restore the richer kernel's strategy
 * features and its speed, judged over n interleaved trials (ratio_i =
 * rich_i / rederived_i) by one of two rules:
 *   every (KLineage's): ratio_i >= min_ratio in EVERY trial, and overall
 *     (median over median);
 *   interval (kevo's default): the 95% bootstrap interval of the geometric
 *     mean ratio reaches min_ratio (the re-derived kernel is not shown
 *     slower than min_ratio of the richer one). On a loaded 2-core host the
 *     every rule refused a re-derivation that differed by a comment only,
 *     4 times out of 4 (worst trials 0.72x-0.86x).
 * A re-derivation identical to the richer kernel (blanks squashed) restores
 * both by construction and is not timed. */
#define KV_ROUNDTRIP_MIN_RATIO 0.99
struct kv_roundtrip {
  int checked; /* 1 judged (passed or not), 0 not judged */
  int passed;
  int identical; /* the same code as the richer kernel */
  int n;
  double ratio[KV_PAIRS_MAX], min_ratio, overall;
  double ci_lo, ci_hi;     /* interval rule: the geometric mean ratio's 95% interval */
  int every;               /* the rule judged by: 1 every trial, 0 the interval */
  uint32_t missing, extra; /* strategy features not restored / added */
  char why[400];
};
/* Speed part: n trials' medians; min_ratio <= 0 means KV_ROUNDTRIP_MIN_RATIO;
 * every: the rule (seed: the interval rule's bootstrap). */
void kv_roundtrip_speed(const double *rich_us, const double *re_us, int n, double min_ratio,
                        int every, uint64_t seed, struct kv_roundtrip *rt);
/* Features part: the strategy features of the richer and the re-derived kernel. */
void kv_roundtrip_features(uint32_t rich, uint32_t rederived, struct kv_roundtrip *rt);
int kv_sources_same(const char *a, const char *b);

/* Preconditions the model writes with its proposal ("Dtypes:", "Layout:",
 * "Storage:", "Pipeline:", "Hardware:", "Scope:", "Requires:", "Conflicts:"
 * lines), checked: dtypes are kevo's names and cover the task's buffers,
 * layout is one of row-major, column-major, contiguous, strided, any and
 * holds for the task (row-major, contiguous), hardware names the
 * architecture measured on (x86_64, sm_90, sm_80+, cpu, gpu, any), storage
 * is among global, shared, registers, constant, local, host, any, the scope
 * is "*" or task names including this task, requires are features of the
 * simpler kernel and conflicts features it lacks. Missing lines take kevo's
 * defaults (the task's dtypes, row-major, the architecture measured on, this
 * task); require_all makes a missing one an error. */
int kv_precond_read(const char *reply, const struct kv_task *t, const char *arch,
                    uint32_t simpler_features, int require_all, struct kv_mech *m,
                    uint32_t *requires, uint32_t *conflicts, char *err, size_t errlen);

/* ---- the paired performance test ------------------------------------------ */

/* The forward step's speedup from n interleaved pairs of medians (the simpler
 * kernel's and the richer kernel's, timed back to back on the same inputs):
 * ratio_i = simple_i / rich_i. The estimate is the geometric mean; its 95%
 * interval a percentile bootstrap over the pairs (seeded, `resamples`
 * draws); the Wilcoxon signed-rank test of the log ratios gives p (exact for
 * n <= 20, normal approximation above). admitted: a gain of at least the
 * minimum effect, significant: the interval's lower end at or above
 * 1 + KV_SKILL_MIN_EFFECT AND Wilcoxon p < KV_SKILL_ALPHA. Fewer pairs than
 * kv_paired_min_pairs() can never reach that p (all pairs one way give
 * p = 2 / 2^n), and are never admitted. why: the decision in words. */
#define KV_SKILL_MIN_EFFECT 0.03 /* a skill gains 3% at least, at the interval's lower end */
#define KV_SKILL_ALPHA 0.05      /* two-sided Wilcoxon signed-rank */
struct kv_paired {
  int n;
  double ratio[KV_PAIRS_MAX];
  double rich_us[KV_PAIRS_MAX], simple_us[KV_PAIRS_MAX];
  double speedup, ci_lo, ci_hi, wilcoxon_p;
  int resamples;
  int admitted;
  char why[200];
};
/* The fewest pairs whose exact Wilcoxon p can fall below KV_SKILL_ALPHA (6). */
int kv_paired_min_pairs(void);
int kv_paired_stats(const double *simple_us, const double *rich_us, int n, uint64_t seed,
                    int resamples, struct kv_paired *out, char *err, size_t errlen);
/* Two-sided p of the Wilcoxon signed-rank test of d (zeros dropped). */
double kv_wilcoxon_p(const double *d, int n);

/* ---- the backward walk ----------------------------------------------------- */

struct kv_lineage_step {
  int ord;  /* 1.. in walk order */
  int mech; /* index into annot.m */
  char verdict[32];
  char detail[512];
  int accepted;                          /* the simpler kernel passed the gate */
  int admitted;                          /* the forward step paid (kv_paired's rule) */
  char parent_hash[65], child_hash[65];  /* parent: richer; child: simpler */
  char *child_src;                       /* malloc'd */
  char *forward_diff;                    /* simpler -> richer, unified; malloc'd */
  char *result_json;                     /* the gate's verdict on the simpler kernel */
  double child_median_us, child_speedup; /* vs the reference; -1 when not timed */
  struct kv_paired paired;               /* accepted steps with timing */
  char skipped[256];                     /* not tried: why (a mechanism it is needed by stayed) */
  /* resources (cuda): the richer and simpler kernels' most registers and shared memory */
  int regs_rich, regs_simple;
  long smem_rich, smem_simple;
  /* LLM mode: the forward edit re-derived from the card alone */
  int rederived;      /* 1 accepted by the gate, -1 rejected, 0 not tried */
  char rederive[512]; /* its verdict and detail */
  char rederived_hash[65];
  /* LLM mode, KLineage's checks: features observed (kv_features_scan) in
   * the richer, the simpler and the re-derived kernel; the card's contract
   * (requires, conflicts: checked against the simpler kernel); the audit;
   * the round trip */
  uint32_t feat_rich, feat_simple, feat_rederived;
  uint32_t f_requires, f_conflicts;
  int audited;      /* 1 passed, -1 failed, 0 not run */
  char *audit_json; /* malloc'd */
  struct kv_roundtrip rt;
};

struct kv_lineage {
  struct kv_annot annot;
  char file[512];
  char surface[16], device[256], arch[64];
  char expert_hash[65];
  char *expert_src; /* as read */
  char *expert_resolved;
  char *expert_json; /* the gate's verdict on the expert */
  double expert_median_us, expert_speedup;
  int nsteps;
  struct kv_lineage_step steps[KV_MECH_MAX];
  char key[33];   /* identifies this walk in every store */
  char mode[16];  /* "annotated" | "llm" */
  char stop[256]; /* LLM mode: why the walk ended */
  /* LLM mode: where the walk stands (a checkpoint holds all of it) */
  char termination[24]; /* complete, unknown, step_limit, rejection_limit, interrupted */
  char *cur;            /* the kernel the next proposal starts from; malloc'd */
  int regs_cur;
  long smem_cur;
  int accepted_steps, rejections, refused_in_row;
  char feedback[768];
  char task_dir[512], spec_hash[65];
};

typedef void (*kv_lineage_progress_fn)(void *ud, const char *line);
struct kv_lineage_opts {
  const struct kv_gate_opts *gate;
  int pairs;     /* interleaved pairs per accepted step (>= 3; 0: no paired test) */
  int resamples; /* bootstrap draws (0: 2000) */
  uint64_t seed;
  const char *scratch; /* directory for the resolved kernels (must exist) */
  kv_lineage_progress_fn progress;
  void *ud;
  /* LLM mode: DIR/lineage_system.md, lineage_deopt.md and lineage_rederive.md
   * override the walk's prompts (kevo lineage extract --prompts DIR; each may
   * use only its own {{variables}}: kevo says which); NULL: the defaults. */
  const char *prompt_dir;
  /* LLM mode, KLineage's checks (kevo lineage extract turns them on;
   * --preset klineage sets KLineage's constants: lib/agent/preset.c) */
  int audit;                 /* each accepted proposal is audited (lineage:audit) */
  int roundtrip;             /* a failed round trip refuses the step (else: a risk on its card) */
  double roundtrip_ratio;    /* 0: KV_ROUNDTRIP_MIN_RATIO */
  int roundtrip_every;       /* 1: KLineage's every-trial rule; 0: kevo's interval rule */
  int max_rejections;        /* refused proposals in the whole walk (0: no limit) */
  int require_preconditions; /* a proposal without every precondition line is refused */
  const char *checkpoint;    /* the walk's state is written there after every proposal */
};

/* Annotated mode: the expert (all mechanisms on) must be accepted by the
 * gate, else an error with its verdict; then each mechanism in removal order
 * is turned off and the kernel gated at the task's unchanged checks and
 * tolerance. An accepted simplification becomes the parent of the next; a
 * rejected one keeps the mechanism (and what it requires) and is recorded.
 * Nothing is written to any store. */
int kv_lineage_walk(const struct kv_task *t, const char *expert_path,
                    const struct kv_lineage_opts *o, struct kv_lineage *L, char *err,
                    size_t errlen);
void kv_lineage_release(struct kv_lineage *L);

/* LLM mode: the expert need not be annotated. The expert must be accepted;
 * then, step by step, the model proposes ONE atomic de-optimization of a
 * mechanism present (role "lineage:deopt": mechanisms others depend on come
 * off after their dependents; tile sizes and vector widths are not separate
 * steps), answering "Mechanism:", "Intent:", "Anchor:" and the whole
 * simpler kernel, or NAIVE when nothing is left. Each proposal is gated at
 * the task's checks; a rejected one is recorded and retried with its verdict
 * at most `retries` times (then the walk ends). Each accepted step is then
 * re-derived forward by the model from the card alone (role
 * "lineage:rederive": the simpler kernel, name, intent and anchor, never the
 * diff); the re-derived kernel must pass the gate, and the paired test runs
 * between it and the simpler kernel. Prompts hold no timings, so a run
 * replays from the store (--provider replay) with the network off. */
struct kv_llm;
int kv_lineage_walk_llm(const struct kv_task *t, const char *expert_path,
                        const struct kv_lineage_opts *o, struct kv_llm *llm, int retries,
                        int max_steps, struct kv_lineage *L, char *err, size_t errlen);
/* 0: the walk ended (L->stop, L->termination say why); 1: a call to the
 * model was lost: L holds every step so far, the checkpoint (o->checkpoint)
 * too, and kv_lineage_resume_llm continues from it; -1: an error. */
/* Continues a walk from its checkpoint (the task must be the same spec and
 * the expert the same source, else an error naming which). */
int kv_lineage_resume_llm(const struct kv_task *t, const char *checkpoint,
                          const struct kv_lineage_opts *o, struct kv_llm *llm, int retries,
                          int max_steps, struct kv_lineage *L, char *err, size_t errlen);
/* The task directory a checkpoint was walked on. */
int kv_lineage_checkpoint_task(const char *checkpoint, char *task_dir, size_t cap, char *err,
                               size_t errlen);
/* The skill cards (a JSON array) of a walk: one per accepted step, admitted
 * or not (the status says), with the risks the rejected steps taught. */
json_t *kv_lineage_cards(const struct kv_task *t, const struct kv_lineage *L);
/* Records the walk (the lineage, every step, every kernel's source, the
 * cards) in one transaction. */
int kv_lineage_save(struct kv_store *s, const struct kv_task *t, const struct kv_lineage *L,
                    json_t *cards, int64_t *lineage_id, char *err, size_t errlen);

/* ---- skill cards ------------------------------------------------------------ */

/* Checks one card: every required field present with its type (id, name,
 * intent, anchor.pattern, carrier.diff, preconditions, effect.speedup,
 * effect.ci, scope.surface, scope.arch, provides, status). where prefixes
 * the messages ("skills.json: skills[2]"). */
int kv_skill_validate(const json_t *card, const char *where, char *err, size_t errlen);
/* Parses a skills file ({"kevo_skills": 1, "skills": [...]}): every card
 * valid, or nothing (a newer schema is refused with the version). *cards: a
 * new reference to the array. */
int kv_skills_parse(const char *text, size_t len, const char *file, json_t **cards, char *err,
                    size_t errlen);
/* A card as Markdown (malloc'd). */
char *kv_skill_markdown(const json_t *card);
/* The words FTS indexes for a card: name, intent, anchor, task, risks. */
char *kv_skill_search_text(const json_t *card);

/* Puts every card in the store (one transaction; a card with the same id
 * replaces its row but keeps its verification log). */
int kv_skills_store(struct kv_store *s, json_t *cards, int *added, int *updated, char *err,
                    size_t errlen);
/* Every stored card (with its log and status) as a new array. */
int kv_skills_load(struct kv_store *s, int with_retired, json_t **cards, char *err, size_t errlen);

/* ---- retrieval --------------------------------------------------------------- */

#define KV_MATCH_MAX 256
struct kv_match {
  const json_t *card; /* borrowed from the cards given */
  int matched;
  double score;
  double fts, shape, effect; /* the score's parts */
  char why[512];             /* matched: why and in what order; else the rejection */
};
struct kv_match_opts {
  const char *surface;       /* "cpu" | "cuda" */
  const char *arch;          /* "x86_64", "sm_90": exact */
  long smem_budget;          /* bytes of shared memory a block may use; 0: 48 KiB */
  const char *candidate_src; /* NULL: a naive kernel (nothing provided yet) */
  /* Whose features a card's contract is checked against: NULL means the
   * candidate's (kevo skills match without a candidate gives the task's
   * reference). A card with a contract is offered only where its requires
   * are observed and its conflicts are not, and is "already provided" where
   * all it provides is observed; its scope's cases must name the task or "*". */
  const char *features_src;
  /* FTS5 ranks by card id (higher is better), or NULL */
  double (*fts)(void *ud, const char *id);
  void *fts_ud;
};
/* Filters and ranks cards for task t: exact surface and architecture, status
 * admitted, dtypes, layout, divisibility of every check and bench size, the
 * shared-memory budget, provides not already in the candidate, requires met
 * (by the candidate or a skill ranked before), conflicts; then ranked by
 * relevance, shape proximity and effect. out[] gets the cards (the first
 * `cap` of them), matched ones first in order. Returns the number matched. */
int kv_skills_match(const struct kv_task *t, const json_t *cards, const struct kv_match_opts *o,
                    struct kv_match *out, int cap, int *nout);

#endif
