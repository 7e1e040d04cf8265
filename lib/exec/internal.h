/* Internals of the executors, exposed to their tests and fuzz target: the
 * parsers of what a gate server sends. */
#ifndef KEVO_EXEC_INTERNAL_H
#define KEVO_EXEC_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

#include "kevo/task.h"

struct kvx_hello {
  char version[64];
  long long protocol;
  char host[256];
  char gpu[64];     /* its CUDA_VISIBLE_DEVICES */
  char device[256]; /* cuda: the GPU it checked at start */
  pid_t pid;
};
/* A server's hello: 0, or -1 with err (not a hello, another protocol). */
int kvx_hello_parse(const char *json, struct kvx_hello *h, char *err, size_t errlen);
/* A verdict frame for job want_id: 0 and *result (a reference the caller
 * drops); 1 when the server could not judge the job (error says why;
 * *need_task when it lacks the task's files); -1 when the frame is not a
 * verdict for this job (the channel is no longer trusted). */
int kvx_verdict_parse(const char *json, const char *want_id, json_t **result, int *need_task,
                      char *error, size_t errlen);

/* ---- the compile pool (pool.c) ---------------------------------------------
 * Threads that build candidates into this host's object cache
 * (kv_gate_prebuild) ahead of the gate servers, which then find them built.
 * One entry per content (ckey: the task bundle's hash, the surface and the
 * candidate's bytes), however many jobs carry it. */
struct kvx_compile {
  struct kvx_compile *next; /* the pool's queue */
  char ckey[65];
  const struct kv_task *task; /* the bundle's own copy of the task */
  char *src;                  /* freed once built */
  size_t len;
  char surface[16];
  char *cache_dir, *worker_path, *nvcc_path; /* malloc'd; "" for the default */
  char cuda_arch[32];
  double compile_deadline_s;
  int compile_only; /* a task's own source: no static analysis (kv_gate_opts.prebuild_compile_only)
                     */
  double queued_s, started_s, ended_s;
  int done; /* under the executor's lock */
  int rc;   /* 0 built or cached (a compile error too), -1 kevo could not compile (err) */
  char err[512];
};
struct kvx_pool;
/* Compilers for a host that runs `servers` gate servers: KEVO_EXEC_COMPILERS
 * when set (0: no pool, the servers compile), else one per core of the
 * host; they run at a lower priority (nice 10) than the servers. */
int kvx_pool_size(int servers);
/* Starts `threads` compilers; done(ud, c) is called from one of them as
 * each entry is built. 0, or -1. */
int kvx_pool_new(int threads, void (*done)(void *ud, struct kvx_compile *c), void *ud,
                 struct kvx_pool **out);
int kvx_pool_threads(const struct kvx_pool *p);
/* Queues c (built in the order queued). */
void kvx_pool_put(struct kvx_pool *p, struct kvx_compile *c);
void kvx_compile_free(struct kvx_compile *c);
/* Lets the compiles under way end, drops the queued ones, joins. */
void kvx_pool_free(struct kvx_pool *p);

#endif
