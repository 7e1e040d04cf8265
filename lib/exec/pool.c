/* The executors' compile pool (internal.h): threads that build candidates
 * into this host's object cache (kv_gate_prebuild: lib/gate/objcache.c's
 * SHA-256 keyed entries) ahead of the gate servers, first queued first
 * built. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/gate.h"
#include "kevo/surface.h"
#include "kevo/util.h"

#define POOL_THREADS_MAX 32
#define POOL_NICE 10

struct kvx_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct kvx_compile *head, *tail; /* queued, first in first out */
  int stopping;
  int nthreads, busy;
  pthread_t th[POOL_THREADS_MAX];
  void (*done)(void *ud, struct kvx_compile *c);
  void *ud;
};

int kvx_pool_size(int servers) {
  const char *e = getenv("KEVO_EXEC_COMPILERS");
  if (e && *e) {
    char *end;
    long v = strtol(e, &end, 10);
    if (!*end && v >= 0)
      return v > POOL_THREADS_MAX ? POOL_THREADS_MAX : (int)v;
  }
  (void)servers; /* the servers keep their share by priority (pool_main), not by count */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1)
    cores = 1;
  return cores > POOL_THREADS_MAX ? POOL_THREADS_MAX : (int)cores;
}

/* Builds c: its source in a directory of its own under the cache, then the
 * gate's compile pool of one (kv_gate_prebuild: a cache hit returns at
 * once; a compile error is cached like a success). */
static void build_one(struct kvx_compile *c) {
  char dir[PATH_MAX], path[PATH_MAX + 32];
  struct kv_gate_opts o;
  kv_gate_opts_default(&o);
  o.surface = c->surface;
  o.cache_dir = c->cache_dir;
  o.worker_path = c->worker_path[0] ? c->worker_path : NULL;
  o.nvcc_path = c->nvcc_path[0] ? c->nvcc_path : NULL;
  o.cuda_arch = c->cuda_arch[0] ? c->cuda_arch : NULL;
  o.prebuild_compile_only = c->compile_only;
  if (c->compile_deadline_s > 0)
    o.compile_deadline_s = c->compile_deadline_s;
  c->rc = -1;
  if (kv_mkdtemp(c->cache_dir, "exec", dir, sizeof dir, c->err, sizeof c->err) < 0)
    return;
  snprintf(path, sizeof path, "%s/candidate.%s", dir, kv_surface_ext(kv_surface_find(c->surface)));
  if (kv_write_file(path, c->src, c->len, c->err, sizeof c->err) == 0) {
    const char *paths[1] = {path};
    int n = kv_gate_prebuild(c->task, paths, 1, &o, c->err, sizeof c->err);
    c->rc = n < 0 ? -1 : 0;
  }
  kv_rmtree(dir);
}

static void *pool_main(void *arg) {
  struct kvx_pool *p = arg;
  /* Below the servers (their checks, launches and cpu timing) in the
   * scheduler's eyes: this thread and the compilers it starts (a thread's
   * nice value is its own on Linux, and children inherit it). */
  id_t me = (id_t)syscall(SYS_gettid);
  errno = 0;
  int now = getpriority(PRIO_PROCESS, me);
  if (errno == 0 && setpriority(PRIO_PROCESS, me, now + POOL_NICE > 19 ? 19 : now + POOL_NICE)) {
    /* best effort: at the servers' priority */
  }
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->head && !p->stopping)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->stopping)
      break;
    struct kvx_compile *c = p->head;
    p->head = c->next;
    if (!p->head)
      p->tail = NULL;
    c->next = NULL;
    p->busy++;
    pthread_mutex_unlock(&p->mu);
    c->started_s = kv_now_s();
    build_one(c);
    c->ended_s = kv_now_s();
    free(c->src); /* built: the cache holds what the servers need */
    c->src = NULL;
    p->done(p->ud, c);
    pthread_mutex_lock(&p->mu);
    p->busy--;
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int kvx_pool_new(int threads, void (*done)(void *ud, struct kvx_compile *c), void *ud,
                 struct kvx_pool **out) {
  *out = NULL;
  struct kvx_pool *p = calloc(1, sizeof *p);
  if (!p)
    return -1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->done = done;
  p->ud = ud;
  if (threads > POOL_THREADS_MAX)
    threads = POOL_THREADS_MAX;
  for (int i = 0; i < threads; i++)
    if (pthread_create(&p->th[p->nthreads], NULL, pool_main, p) == 0)
      p->nthreads++;
  if (p->nthreads == 0) {
    kvx_pool_free(p);
    return -1;
  }
  *out = p;
  return 0;
}

int kvx_pool_threads(const struct kvx_pool *p) {
  return p ? p->nthreads : 0;
}

void kvx_pool_put(struct kvx_pool *p, struct kvx_compile *c) {
  pthread_mutex_lock(&p->mu);
  c->next = NULL;
  c->queued_s = kv_now_s();
  if (p->tail)
    p->tail->next = c;
  else
    p->head = c;
  p->tail = c;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void kvx_compile_free(struct kvx_compile *c) {
  if (!c)
    return;
  free(c->src);
  free(c->cache_dir);
  free(c->worker_path);
  free(c->nvcc_path);
  free(c);
}

void kvx_pool_free(struct kvx_pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->mu);
  p->stopping = 1; /* compiles under way end first; queued ones are never started */
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->th[i], NULL);
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
  free(p);
}
