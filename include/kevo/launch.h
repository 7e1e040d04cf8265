/* The kernel-only candidate contract (cuda surface): a candidate that defines
 * only __global__ kernels and says how kevo launches them, one line each, in
 * the order they run on the task's stream:
 *
 *   // kevo:launch rowsum_kernel grid=((rows+255)/256) block=(256) args=(x, y, rows, cols)
 *   // kevo:launch softmax_block<true> grid=(rows) block=(BLOCK) smem=(BLOCK/32*4) args=(x, y,
 * cols)
 *
 * KERNEL is a kernel's name as NVRTC names it (a template kernel with its
 * arguments, no spaces outside <...>); grid and block take one to three
 * integer expressions over the task's size params, integers and the
 * integer #defines of the source (`#define BLOCK 256`: the first definition
 * of a name counts, so a tune variant's definitions, which come first, win);
 * smem (dynamic shared memory in bytes, default 0) one; args names the task's
 * params in the kernel's parameter order (buffers are passed as device
 * pointers, sizes as int, scalars as their dtype).
 *
 * The parser reads outside input: every count and length is capped, and
 * every error names the line, the field and the fix. Never prints. */
#ifndef KEVO_LAUNCH_H
#define KEVO_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/task.h"

#define KV_LAUNCH_MAX 16          /* launch lines in one candidate */
#define KV_LAUNCH_LINE_MAX 1024   /* bytes of one launch line */
#define KV_LAUNCH_EXPR_MAX 256    /* bytes of one expression, after #defines are substituted */
#define KV_LAUNCH_KERNEL_MAX 256  /* bytes of a kernel's name expression */
#define KV_LAUNCH_ARGS_MAX 32     /* arguments of one launch */
#define KV_LAUNCH_DEFINES_MAX 128 /* integer #defines remembered */
#define KV_LAUNCH_SMEM_MAX (228 * 1024) /* the largest dynamic shared memory of any GPU so far */

struct kv_launch {
  int line;                          /* 1-based line of the source */
  char kernel[KV_LAUNCH_KERNEL_MAX]; /* name expression, as written */
  int ngrid, nblock;                 /* 1..3 each */
  char grid[3][KV_LAUNCH_EXPR_MAX];  /* expressions over size names only (defines substituted) */
  char block[3][KV_LAUNCH_EXPR_MAX];
  char smem[KV_LAUNCH_EXPR_MAX]; /* "0" when absent */
  int nargs;
  int args[KV_LAUNCH_ARGS_MAX]; /* indices into the task's params */
};

struct kv_launch_plan {
  int n;
  struct kv_launch l[KV_LAUNCH_MAX];
};

/* Finds every `// kevo:launch` line of src (len bytes; at most 1 MiB) and
 * checks it against task t: the names, every expression's syntax, and the
 * dimensions it gives at each of the task's check and bench size sets.
 * `file` prefixes messages ("candidate.cu:12: kevo:launch ...: grid[0] ...").
 * Returns the number of launch lines (0: none; the plan is then empty), or -1
 * with a one-line message in err. */
int kv_launch_parse(const struct kv_task *t, const char *src, size_t len, const char *file,
                    struct kv_launch_plan *p, char *err, size_t errlen);

/* 1 when src defines (or declares) the task's entry: the entry's name as a
 * token followed by '(' outside comments, strings and kevo lines. */
int kv_launch_has_entry(const struct kv_task *t, const char *src, size_t len);

/* Launch i's dimensions under size set s: grid and block (missing
 * dimensions 1) and dynamic shared memory; -1 with a message naming the line
 * and field when a value is out of range (grid x >= 1 and < 2^31, y, z
 * <= 65535; block dimensions >= 1, x, y <= 1024, z <= 64, product <= 1024;
 * 0 <= smem <= KV_LAUNCH_SMEM_MAX). */
int kv_launch_dims(const struct kv_task *t, const struct kv_launch *l, const struct kv_sizeset *s,
                   unsigned grid[3], unsigned block[3], unsigned *smem, char *err, size_t errlen);

/* Size in bytes of the value kevo passes for param p (8: buffers, 4: sizes,
 * the dtype's size: scalars). */
size_t kv_launch_arg_bytes(const struct kv_task *t, int p);

#endif
