/* kevo-worker's parts: the protocol loop (worker.c) and the runtimes it runs
 * candidates with, one per surface (cpu in worker.c, cuda in cuda.c). */
#ifndef KEVO_WORKER_H
#define KEVO_WORKER_H

#include <jansson.h>
#include <stdint.h>

#include "kevo/sandbox.h"
#include "kevo/task.h"

/* Slots of loaded objects: 0 the candidate, 1 the reference, 2 the baseline. */
#define KV_SLOTS 3

extern struct kv_task *task;
extern void *slot_entry[KV_SLOTS]; /* kevo_shim_call of each loaded object */
extern void *slot_guard[KV_SLOTS]; /* kevo_cuda_last_error (cuda objects), or NULL */

/* Replies to the current request (the job's token); a negative return means
 * the channel to the parent is gone. */
int reply(uint32_t type, json_t *j, const void *blob, uint64_t n);
int reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error after which this process cannot go on (a sticky CUDA error): the
 * reply says so and the worker exits; the parent replaces it. */
void reply_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
const struct kv_sizeset *pick_set(json_t *req);

/* A runtime: how buffers, calls and timing work on one surface. */
struct worker_runtime {
  const char *name;
  /* Before the sandbox: paths and limits the runtime needs. */
  void (*sandbox)(struct kv_sandbox_opts *o);
  /* After the sandbox, before HELLO: adds what it found to hello. */
  void (*init)(json_t *hello);
  int (*check)(json_t *req);
  int (*time)(json_t *req);
  int (*calib)(json_t *req); /* NULL: not offered */
  /* After LOAD of a slot; may refuse the object (non-zero, with a reply sent). */
  int (*loaded)(int slot);
  /* Outputs and inputs of one call of the last TIME phase. */
  int (*fetch)(json_t *req);
  /* LOAD of a kernel-only candidate's bundle (a path ending in .kvk): a cubin
   * and its launch lines; sets slot_entry and slot_guard. NULL: not offered.
   * 0, or -1 with the reason in msg. */
  int (*load_kernels)(int slot, const char *path, char *msg, size_t cap);
  /* LEND (kevo/wire.h): buffers this clean worker owns and lends to the
   * candidate's worker by handle; NULL: not offered. */
  int (*lend)(json_t *req);
};

extern const struct worker_runtime wcuda_runtime;

#endif
