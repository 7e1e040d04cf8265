/* Prompts made of named blocks. A prompt is the enabled blocks, in a fixed
 * order, followed by the instruction of its kind (write, refine, debug, plan,
 * rule); each block and instruction is a template a user can override with a
 * file of the same name in a directory. A block whose data is absent (no
 * parent, no compiler output, no profile) is left out whatever the mask says.
 * The mask is an argument of every build, so a caller can switch blocks per
 * request. Never prints, never exits. */
#ifndef KEVO_PROMPT_H
#define KEVO_PROMPT_H

#include <stddef.h>

#include "kevo/gate.h"
#include "kevo/task.h"
#include "kevo/util.h"

enum kv_prompt_block {
  KV_PB_TASK,        /* summary, signature, reference code, sizes, surface, device */
  KV_PB_PARENT,      /* the parent kernel's code */
  KV_PB_COMPILE,     /* compiler diagnostics (capped) */
  KV_PB_CORRECTNESS, /* verdict, first mismatches */
  KV_PB_PERFORMANCE, /* median, speedup, roofline fraction */
  KV_PB_PROFILE,     /* registers, shared memory, spills (when the result has them) */
  KV_PB_RULES,       /* validity rules learnt from earlier failures */
  KV_PB_PLAN,        /* a plan to implement */
  KV_PB_HISTORY,     /* earlier attempts (and kernels of a pool) */
  KV_PB_SKILL,       /* a skill card to apply (the ada search's skill step, --skills on) */
  KV_PB_STATIC,      /* cuda: each kernel's instruction mix (cuobjdump -sass; kevo/sass.h) */
  KV_PB_DEBUG,       /* cuda: compute-sanitizer's findings on a rejected parent (kevo/sanitize.h) */
  KV_PB_COUNT
};
#define KV_PB_ALL ((1u << KV_PB_COUNT) - 1)
/* A block with a raw form (static: cuobjdump's listing; profile: Nsight
 * Compute's details page; debug: compute-sanitizer's report; each capped) shows it
 * instead of kevo's compact rendering when this bit is in the mask as well
 * as the block's own: "static=raw". The bits ride in the mask, so a run's
 * recorded prompt_mask says which form each prompt had. */
#define KV_PB_RAW_SHIFT 16
#define KV_PB_RAW(b) (1u << (KV_PB_RAW_SHIFT + (b)))

/* Instructions: what the model is asked to produce. */
enum kv_prompt_kind {
  KV_PK_WRITE,  /* a new kernel (from the task, or from a pool of earlier ones) */
  KV_PK_REFINE, /* a faster version of the parent */
  KV_PK_DEBUG,  /* a fixed version of a failed parent */
  KV_PK_PLAN,   /* a plan only (plan_mode explicit: the planner's call) */
  KV_PK_RULE,   /* validity rules from a failure's evidence (rule_extractor) */
  KV_PK_COUNT
};

const char *kv_prompt_block_name(int b);
const char *kv_prompt_kind_name(int k);

/* "task,parent,compile" (exactly these), "all", "all,-history" or "-profile"
 * (everything but these); a block with forms (static, profile, debug) also as
 * NAME=off|summary|raw ("all,static=raw"; "static" alone is summary). Unknown names are errors
 * that list the known ones. */
int kv_prompt_blocks_parse(const char *list, unsigned *mask, char *err, size_t errlen);

/* Caps on what a block carries. */
#define KV_PROMPT_MAX (512u << 10)
#define KV_PROMPT_LOG_MAX 4000   /* compiler output, bytes (first lines kept) */
#define KV_PROMPT_CODE_MAX 64000 /* any one kernel or reference, bytes */
#define KV_PROMPT_MISMATCH_MAX 3 /* failing checks shown */
#define KV_PROMPT_SASS_MAX 12000 /* static=raw: the listing, bytes (first lines kept) */
#define KV_PROMPT_TOOL_MAX 8000  /* profile=raw, debug=raw: the tool's text, bytes */

struct kv_prompt_attempt { /* one line of history, or a pool member when code is set */
  int step;
  const char *action;
  const char *verdict;
  double speedup;   /* <= 0: not accepted or not timed */
  const char *code; /* NULL: a line only */
};

struct kv_prompt_ctx {
  const struct kv_task *task;
  const char *surface;   /* "cpu" | "cuda" */
  const char *device;    /* may be NULL */
  const char *reference; /* the reference's source, may be NULL */
  const char *parent_code;
  int parent_step;
  const struct kv_gate_result *parent; /* its judgement: feeds the four feedback blocks */
  const char *const *rules;
  int nrules;
  const char *plan;
  const struct kv_prompt_attempt *history;
  int nhistory;
  const char *skill; /* a skill card (Markdown) to apply, or NULL */
  /* Blocks (1u << KV_PB_*) rendered in their one-line summary form instead of
   * their template (kevo analyze's "summary" players): performance, profile,
   * rules, history and static have one; 0 (the default): none. */
  unsigned summary_mask;
};

struct kv_prompts;
/* Embedded defaults, each overridden by DIR/<name>.md when dir is non-NULL
 * and the file exists (names: the blocks', the kinds' and "system"). A
 * template may use only its own {{variables}}: an unknown one is an error
 * naming the file and the variables it may use. */
int kv_prompts_load(const char *dir, struct kv_prompts **out, char *err, size_t errlen);
void kv_prompts_free(struct kv_prompts *p);
/* The system prompt. */
const char *kv_prompts_system(const struct kv_prompts *p);

/* A template of kevo's own outside the search's prompts (the lineage walk's:
 * lib/skills/llmwalk.c), overridden like them by DIR/NAME.md when dir is
 * non-NULL and the file exists: its text (malloc'd), or NULL with err naming
 * the file and the variables (space-separated in vars) it may use. */
char *kv_prompt_template(const char *dir, const char *name, const char *vars, const char *deflt,
                         char *err, size_t errlen);
/* tmpl with each {{key}} replaced by its value (pairs: key, value, ...,
 * NULL; at most 12), malloc'd; values are not scanned again. */
char *kv_prompt_fill(const char *tmpl, const char *const *pairs);

/* Assembles a prompt of `kind` from the blocks in `mask` that have data.
 * Returns the malloc'd text (NUL-terminated) or NULL with a message. */
char *kv_prompt_build(const struct kv_prompts *p, enum kv_prompt_kind kind, unsigned mask,
                      const struct kv_prompt_ctx *c, char *err, size_t errlen);

#endif
