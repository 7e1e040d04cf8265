/* Static analysis of compiled CUDA code: the instruction mix of each kernel
 * of an object, read from `cuobjdump -sass`. Cheap (no GPU, one child
 * process), numeric, and comparable between a parent kernel and its child:
 * global and shared loads and stores by width, local-memory traffic (spills,
 * stack arrays), tensor-core instructions, barriers, shuffles. Never prints,
 * never exits. */
#ifndef KEVO_SASS_H
#define KEVO_SASS_H

#include <stddef.h>

/* Width classes of a memory instruction: [0] 32 bits or narrower (LDG.E,
 * LDG.E.U8), [1] 64 bits (LDG.E.64), [2] 128 bits or wider (LDG.E.128). */
enum { KV_SASS_W32, KV_SASS_W64, KV_SASS_W128, KV_SASS_NW };

struct kv_sass_mix {
  int total;                            /* instructions, NOPs left out */
  int ldg[KV_SASS_NW], stg[KV_SASS_NW]; /* global memory (LDG, STG) */
  int lds[KV_SASS_NW], sts[KV_SASS_NW]; /* shared memory (LDS, STS) */
  int ldl, stl;                         /* local memory: spills and stack arrays */
  int ldsm;                             /* ldmatrix (LDSM) */
  int ldgsts;                           /* cp.async global -> shared (LDGSTS) */
  int tma;                              /* bulk/tensor copies (UTMALDG, UTMASTG, UBLKCP, ...) */
  int hmma;                             /* tensor cores, warp mma: HMMA (f16, bf16, tf32) */
  int imma;                             /* integer / double mma: IMMA, DMMA */
  int gmma;                             /* warpgroup / async mma: HGMMA, IGMMA, QGMMA, UTC*MMA */
  int bar;                              /* barriers (BAR.*) */
  int shfl;                             /* warp shuffles (SHFL.*) */
  int atom;                             /* atomics and reductions (ATOM, ATOMS, ATOMG, RED) */
  int ffma;                             /* FP32 fused multiply-adds */
};

#define KV_SASS_MAX_KERNELS 64
struct kv_sass_kernel {
  char name[160]; /* mangled, as cuobjdump's "Function :" line names it */
  struct kv_sass_mix mix;
};

/* Parses cuobjdump -sass text (NUL-terminated; any bytes). Kernels are
 * counted once, in the order listed (a second listing of the same name, from
 * another architecture in the same fat binary, is skipped). Returns the
 * number of kernels written to k (at most max); never fails. */
int kv_sass_parse(const char *text, struct kv_sass_kernel *k, int max);

/* One line of numbers, kevo's compact rendering of a mix:
 * "412 instr; global ld 32b:12 64b:0 128b:8, st 32b:4; shared ld 128b:32 st
 * 32b:8; local ld 0 st 0; mma hmma:24; bar 3; shfl 10" (zero groups left
 * out). */
void kv_sass_mix_line(const struct kv_sass_mix *m, char *out, size_t cap);

/* The mix as a flat JSON object of counts ("instructions", "ldg_32",
 * "ldg_64", "ldg_128", "stg_*", "lds_*", "sts_*", "ldl", "stl", "ldsm",
 * "ldgsts", "tma", "hmma", "imma", "gmma", "bar", "shfl", "atom", "ffma"),
 * and back (absent keys read as 0; -1 when j is not an object). */
struct json_t;
struct json_t *kv_sass_mix_json(const struct kv_sass_mix *m);
int kv_sass_mix_from_json(const struct json_t *j, struct kv_sass_mix *m);

/* cuobjdump's text less its hex encodings (the "/ * 0x... * /" columns),
 * cut at a line to at most cap bytes; malloc'd, NULL when out of memory. */
char *kv_sass_strip(const char *text, size_t cap);

/* The cuobjdump to use, into out: $KEVO_CUOBJDUMP, else beside o's nvcc
 * (kv_gate_opts.nvcc_path; o NULL: the default nvcc), else on PATH. ""
 * when there is none. */
struct kv_gate_opts;
void kv_cuobjdump_path(const struct kv_gate_opts *o, char *out, size_t cap);

#define KV_SASS_TEXT_CAP (8u << 20) /* cuobjdump output read, bytes */
#define KV_SASS_RAW_CAP (24u << 10) /* stripped listing kept with a result, bytes */

/* Runs `cuobjdump -sass obj` sandboxed (landlock: reads the object and the
 * tool's directory, writes a fresh directory under tmp_parent; no network),
 * with a deadline and output capped at KV_SASS_TEXT_CAP. 0 with the text in
 * *text (malloc'd; *truncated set when the cap cut it), or -1 with "not
 * available: why" in note. o (may be NULL): where nvcc and kevo's sandbox
 * helper are (kv_gate_opts.nvcc_path, worker_path). */
int kv_sass_dump(const struct kv_gate_opts *o, const char *obj, const char *tmp_parent,
                 double deadline_s, char **text, int *truncated, char *note, size_t notecap);

#endif
