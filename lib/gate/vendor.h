/* The vendor libraries a task allows (task.json "allow": cublas, cublaslt,
 * cudnn), found on this machine and turned into nvcc's arguments (nvcc.c).
 *
 * Where each is looked for, in order: $KEVO_CUBLAS_DIR / $KEVO_CUDNN_DIR
 * (a directory with include/ and lib/ or lib64/; when set, only there); the
 * toolkit of the nvcc in use (bin/.., targets/<arch>-linux); Python's
 * site-packages (the nvidia-* wheels: nvidia/cu13, nvidia/cublas,
 * nvidia/cudnn) of $KEVO_PYTHON or python3 on PATH, /usr/local and
 * ~/.local; then /usr/local and /usr. The header and the library come from
 * the same place. */
#ifndef KEVO_GATE_VENDOR_H
#define KEVO_GATE_VENDOR_H

#include <limits.h>
#include <stddef.h>

#include "internal.h"

#define KV_VENDOR_MAX_ARGS 48
#define KV_VENDOR_MAX_DIRS 8
#define KV_VENDOR_ARG_MAX (PATH_MAX + 16)

struct kv_vendor {
  /* The compile's extra arguments: "-I" "kevo-vendor-include" (relative to
   * the build directory) when a library's headers lie outside nvcc's own
   * include directory and /usr/include. Only those headers are staged there
   * (kv_vendor_stage), never the directory: a wheel's include/ holds its own
   * cuda_runtime.h, which must not shadow nvcc's. */
  int ncargs;
  char cargs[2][KV_VENDOR_ARG_MAX];
  int nstage; /* headers to stage: stage_glob (e.g. "cudnn*.h") in stage_dir */
  char stage_dir[KV_VENDOR_MAX_DIRS][PATH_MAX];
  char stage_glob[KV_VENDOR_MAX_DIRS][32];
  /* The link's: -Xlinker --no-as-needed (each library is loaded with the
   * candidate, before the worker's lockdown), -Xlinker DIR/FILE for each
   * library (libcudnn.so.9 where a wheel has no libcudnn.so), -Xlinker
   * -rpath=DIR. */
  int nlargs;
  char largs[KV_VENDOR_MAX_ARGS][KV_VENDOR_ARG_MAX];
  /* Directories outside the compiler sandbox's system directories: given to
   * it to read (kv_jail.reads). */
  int nreads;
  char reads[KV_VENDOR_MAX_DIRS][PATH_MAX];
  /* What was found, for the build's cache key and messages. */
  char summary[4096];
};

/* Fills v for the task's allow list (nothing for none). -1 with a message
 * naming the library, where it was looked for and how to install it, when
 * one is missing or lies where the worker's sandbox cannot read it. */
int kv_vendor_find(const struct kv_task *t, const struct kv_gate_opts *o, struct kv_vendor *v,
                   char *err, size_t errlen);

/* Links the staged headers into build_dir/kevo-vendor-include (nothing when
 * none are staged). 0, or -1 with err. */
int kv_vendor_stage(const struct kv_vendor *v, const char *build_dir, char *err, size_t errlen);

/* A compile log's hint: when the log says a vendor header was not found
 * ("cudnn.h: No such file") and the task does not allow that library, a line
 * "error: cudnn is not allowed by this task; add ..." for the top of the log
 * (the verdict's detail is its first error line). "" when none applies. */
void kv_vendor_log_hint(const struct kv_task *t, const char *log, char *out, size_t cap);

#endif
