/* kevo's input generator on the GPU: the bytes of kv_gen_fill_at and
 * kv_fill_param, generated in device memory at memory speed instead of on the
 * host and copied.
 *
 * The kernels (worker/gen_kernels.cu) are built into PTX by nvcc at build
 * time and embedded in kevo-worker; the driver compiles them for the GPU at
 * kv_cugen_init. Without nvcc at configure time kevo-worker builds anyway,
 * kv_cugen_available() is 0 and kv_cugen_init says why.
 *
 * Every call runs in the context current on the calling thread (the one
 * kv_cugen_init ran in); the fills are asynchronous on the given stream. */
#ifndef KEVO_CUDA_GEN_H
#define KEVO_CUDA_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_api.h"
#include "kevo/task.h"

/* 1 when this build embeds the generator's kernels, 0 when nvcc was missing. */
int kv_cugen_available(void);

/* Loads the kernels into the current context (cuModuleLoadDataEx; the driver
 * compiles the PTX for the device). Returns 0, or -1 with a one-line message
 * in err. Later calls return 0 at once. `cu` must stay valid while the
 * generator is used. */
int kv_cugen_init(const struct kv_cu *cu, char *err, size_t errlen);

/* Writes elements first .. first+n-1 of the sequence (d, init, seed, stream)
 * to dst[0 .. n-1]: the bytes kv_gen_fill_at(d, init, seed, stream, first,
 * host, n) writes to host. dst must be aligned to the dtype's size. Enqueued
 * on stream s; returns KV_CU_SUCCESS, KV_CU_ERROR_NOT_INITIALIZED before a
 * successful kv_cugen_init, KV_CU_ERROR_INVALID_VALUE for a bad dtype, or
 * the launch's error. n == 0 does nothing. */
CUresult kv_cugen_fill_at(const struct kv_cu *cu, CUstream s, enum kv_dtype d,
                          const struct kv_init *init, uint64_t seed, uint64_t stream,
                          uint64_t first, CUdeviceptr dst, size_t n);

/* The bytes kv_fill_param(t, p, nelem, host, seed) writes (param p's
 * sequence, stream p), generated into dst. Same returns as above. */
CUresult kv_cugen_fill_param(const struct kv_cu *cu, CUstream s, const struct kv_task *t, int p,
                             int64_t nelem, CUdeviceptr dst, uint64_t seed);

/* The k = kv_sample_count(n) elements of sample `seed` of param p (n
 * elements of esize bytes, 1..8, at src) into dst: a sampled validation's
 * gather, the elements kv_sample_indices picks. Enqueued on s; the returns
 * of kv_cugen_fill_at, KV_CU_ERROR_INVALID_VALUE when n needs no sample. */
CUresult kv_cugen_gather(const struct kv_cu *cu, CUstream s, CUdeviceptr src, uint64_t seed, int p,
                         uint64_t n, unsigned esize, CUdeviceptr dst);

#endif
