/* libkevo_pyrt.so: kevo's input generator and buffer layouts for the torch
 * reference worker (python/kevo_torch_worker.py, through ctypes), so that
 * the inputs it gives the PyTorch module are the very bytes the C workers
 * and the parent generate. A thin layer over lib/task and runtime.c: a task
 * is an opaque handle, a size set is (bench?, index). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kevo/runtime.h"
#include "kevo/task.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int kvpy_max_params(void);
EXPORT void *kvpy_task_parse(const char *json, char *err, size_t errlen);
EXPORT void kvpy_task_free(void *t);
EXPORT void kvpy_set_drawn(const void *t, const int64_t *values);
EXPORT int kvpy_layout(const void *t, int bench, int index, int64_t *nelem, int64_t *sizes,
                       char *err, size_t errlen);
EXPORT int kvpy_dims(const void *t, int bench, int index, int p, int64_t *dims, char *err,
                     size_t errlen);
EXPORT void kvpy_fill_param(const void *t, int p, int64_t n, void *buf, uint64_t seed);
EXPORT void kvpy_fill_inputs(const void *t, const int64_t *nelem, void *const *bufs, uint64_t seed,
                             int threads);
EXPORT void kvpy_poison_fill(int dtype, void *buf, size_t n, int which);
EXPORT size_t kvpy_shm_layout(const void *t, const int64_t *nelem, size_t *off);
EXPORT size_t kvpy_call_bytes(const void *t, const int64_t *nelem, int inputs);
EXPORT size_t kvpy_check_layout(const void *t, const int64_t *nelem, size_t *off);

int kvpy_max_params(void) {
  return KV_MAX_PARAMS;
}

void *kvpy_task_parse(const char *json, char *err, size_t errlen) {
  struct kv_task *t = NULL;
  if (kv_task_parse(json, strlen(json), "task.json", &t, err, errlen) < 0)
    return NULL;
  return t;
}

void kvpy_task_free(void *t) {
  kv_task_free(t);
}

/* A check size set kevo drew for this evaluation (kvpy_set_drawn): index -1
 * of the check sets. */
static struct kv_sizeset drawn;

void kvpy_set_drawn(const void *tv, const int64_t *values) {
  const struct kv_task *t = tv;
  memset(&drawn, 0, sizeof drawn);
  for (int p = 0; p < t->nparams; p++)
    drawn.values[p] = values[p];
}

static const struct kv_sizeset *sizeset(const struct kv_task *t, int bench, int index) {
  if (!bench && index == -1)
    return &drawn;
  if (bench)
    return index >= 0 && index < t->nbench ? &t->bench[index] : NULL;
  return index >= 0 && index < t->ncheck ? &t->check[index] : NULL;
}

/* Element counts (nelem[KV_MAX_PARAMS]) and the size params' values
 * (sizes[KV_MAX_PARAMS], 0 for the others) of one size set. */
int kvpy_layout(const void *tv, int bench, int index, int64_t *nelem, int64_t *sizes, char *err,
                size_t errlen) {
  const struct kv_task *t = tv;
  const struct kv_sizeset *s = sizeset(t, bench, index);
  if (!s) {
    snprintf(err, errlen, "no %s size set %d", bench ? "bench" : "check", index);
    return -1;
  }
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    sizes[p] = s->values[p];
  return kv_layout(t, s, nelem, err, errlen);
}

/* The dimensions of buffer param p under a size set (dims[KV_MAX_DIMS]);
 * returns ndim, or -1 with the reason in err. */
int kvpy_dims(const void *tv, int bench, int index, int p, int64_t *dims, char *err,
              size_t errlen) {
  const struct kv_task *t = tv;
  const struct kv_sizeset *s = sizeset(t, bench, index);
  if (!s || p < 0 || p >= t->nparams) {
    snprintf(err, errlen, "no such size set or param");
    return -1;
  }
  const struct kv_param *pp = &t->params[p];
  for (int d = 0; d < pp->ndim; d++)
    if (kv_expr_eval(t, s, pp->shape[d], &dims[d], err, errlen) < 0)
      return -1;
  return pp->ndim;
}

void kvpy_fill_param(const void *t, int p, int64_t n, void *buf, uint64_t seed) {
  kv_fill_param(t, p, n, buf, seed);
}

void kvpy_fill_inputs(const void *t, const int64_t *nelem, void *const *bufs, uint64_t seed,
                      int threads) {
  kv_fill_inputs_mt(t, nelem, bufs, seed, threads);
}

void kvpy_poison_fill(int dtype, void *buf, size_t n, int which) {
  kv_poison_fill((enum kv_dtype)dtype, buf, n, which);
}

size_t kvpy_shm_layout(const void *t, const int64_t *nelem, size_t *off) {
  size_t per_call;
  kv_shm_layout(t, nelem, off, &per_call);
  return per_call;
}

/* The one call of a CHECK job in the check memory (KV_WIRE_CHECK_FD): the
 * torch candidate worker (python/kevo_torch_cand.py) calls ModelNew there. */
size_t kvpy_check_layout(const void *t, const int64_t *nelem, size_t *off) {
  size_t per_call;
  kv_check_layout(t, nelem, off, &per_call);
  return per_call;
}

size_t kvpy_call_bytes(const void *t, const int64_t *nelem, int inputs) {
  return kv_call_bytes(t, nelem, inputs);
}
