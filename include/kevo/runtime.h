/* The half of the gate that the worker links too: buffer layouts, poison,
 * inputs per call and their perturbation. Both processes compute the same
 * bytes from the same (task, size set, seed), so the parent can rebuild what
 * the worker was given without trusting it. */
#ifndef KEVO_RUNTIME_H
#define KEVO_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/task.h"

/* Number of positions changed per input buffer by kv_perturb. */
#define KV_PERTURB_POINTS 8

/* Element counts of every param under s (0 for sizes and scalars). */
int kv_layout(const struct kv_task *t, const struct kv_sizeset *s, int64_t nelem[KV_MAX_PARAMS],
              char *err, size_t errlen);
size_t kv_param_bytes(const struct kv_task *t, int p, const int64_t nelem[KV_MAX_PARAMS]);
int kv_is_output(enum kv_role r); /* out, inout */
int kv_is_input(enum kv_role r);  /* in, inout */

/* Poison `which` (0 or 1: two different patterns) of dtype d. Floats get a
 * quiet NaN with a kevo payload; integers a byte pattern. */
void kv_poison_fill(enum kv_dtype d, void *buf, size_t n, int which);
int kv_is_poison(enum kv_dtype d, const void *buf, size_t i, int which);

/* Fills the in and inout buffers of a call from seed (stream = param index).
 * bufs[p] may be NULL for params that are not buffers. */
void kv_fill_inputs(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                    void *const bufs[KV_MAX_PARAMS], uint64_t seed);
/* Fills one param (in or inout) from seed. */
void kv_fill_param(const struct kv_task *t, int p, int64_t nelem, void *buf, uint64_t seed);
/* Changes KV_PERTURB_POINTS elements of every in/inout buffer, chosen and
 * drawn from (seed, iter); when `saved` is non-NULL the old values are stored
 * there (KV_MAX_PARAMS * KV_PERTURB_POINTS * 8 bytes) for kv_unperturb. */
void kv_perturb(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                void *const bufs[KV_MAX_PARAMS], uint64_t seed, uint64_t iter, uint8_t *saved);
void kv_unperturb(const struct kv_task *t, const int64_t nelem[KV_MAX_PARAMS],
                  void *const bufs[KV_MAX_PARAMS], uint64_t seed, uint64_t iter,
                  const uint8_t *saved);

/* Scalar and size argument values for a call: storage[p] receives the value
 * (int for sizes, the dtype's C type for scalars). */
void kv_fill_scalars(const struct kv_task *t, const struct kv_sizeset *s, uint64_t seed,
                     uint64_t storage[KV_MAX_PARAMS]);

/* Flushes caches by writing and reading a buffer (CPU). */
void kv_flush_cpu(uint8_t *buf, size_t n, unsigned salt);

#endif
