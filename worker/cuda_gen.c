/* kevo's input generator on the GPU (see cuda_gen.h). The plan (what depends
 * only on the dtype and the init) is made here, on the host, by the same
 * code the host generator uses (lib/task/gen_core.h); the kernels apply the
 * per-element arithmetic of the same header. */
#include "cuda_gen.h"

#include <stdio.h>
#include <string.h>

#include "gen_core.h"
#include "kevo/runtime.h"

/* The kernels, by how they walk the sequence. */
enum { K_F32_UNIFORM, K_H16_UNIFORM, K_NORMAL, K_ELEMS, K_GATHER, K_COUNT };
static CUfunction fn[K_COUNT];
static int ready;

#if defined(KEVO_CUGEN_PTX)
extern const unsigned char kv_cugen_ptx[]; /* generated: gen_kernels_ptx.c */
extern const size_t kv_cugen_ptx_len;
static const char *const kernel_names[K_COUNT] = {"kvg_f32_uniform", "kvg_h16_uniform",
                                                  "kvg_normal", "kvg_elems", "kvg_gather"};
static CUmodule mod;
#endif

#define THREADS 256u
#define MAX_BLOCKS (1u << 20) /* the kernels loop over what a grid this size leaves */

int kv_cugen_available(void) {
#if defined(KEVO_CUGEN_PTX)
  return 1;
#else
  return 0;
#endif
}

#if defined(KEVO_CUGEN_PTX)
static void cu_err(const struct kv_cu *cu, CUresult r, const char *what, char *err, size_t errlen) {
  const char *name = NULL, *str = NULL;
  if (cu->GetErrorName)
    cu->GetErrorName(r, &name);
  if (cu->GetErrorString)
    cu->GetErrorString(r, &str);
  snprintf(err, errlen, "GPU input generator: %s: %s (%d): %s", what, name ? name : "CUDA error", r,
           str ? str : "unknown");
}
#endif

int kv_cugen_init(const struct kv_cu *cu, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (ready)
    return 0;
#if !defined(KEVO_CUGEN_PTX)
  (void)cu;
  snprintf(err, errlen,
           "GPU input generator unavailable: kevo-worker was built without nvcc (install the CUDA "
           "toolkit, or put nvcc on PATH, and configure again)");
  return -1;
#else
  if (!cu || !cu->ModuleGetFunction || (!cu->ModuleLoadDataEx && !cu->ModuleLoadData)) {
    snprintf(err, errlen, "GPU input generator: the CUDA driver's functions are not loaded");
    return -1;
  }
  char log[2048] = "";
  CUresult r;
  if (cu->ModuleLoadDataEx) {
    int opts[2] = {KV_CU_JIT_ERROR_LOG_BUFFER, KV_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)(sizeof log - 1)};
    r = cu->ModuleLoadDataEx(&mod, kv_cugen_ptx, 2, opts, vals);
  } else {
    r = cu->ModuleLoadData(&mod, kv_cugen_ptx);
  }
  if (r != KV_CU_SUCCESS) {
    char what[2200];
    log[sizeof log - 1] = '\0';
    for (char *c = log; *c; c++) /* one line */
      if (*c == '\n' || *c == '\r')
        *c = ' ';
    snprintf(what, sizeof what, "loading its PTX (%zu bytes)%s%s", kv_cugen_ptx_len,
             log[0] ? ": " : "", log);
    cu_err(cu, r, what, err, errlen);
    return -1;
  }
  for (int k = 0; k < K_COUNT; k++) {
    r = cu->ModuleGetFunction(&fn[k], mod, kernel_names[k]);
    if (r != KV_CU_SUCCESS) {
      char what[128];
      snprintf(what, sizeof what, "cuModuleGetFunction(%s)", kernel_names[k]);
      cu_err(cu, r, what, err, errlen);
      return -1;
    }
  }
  ready = 1;
  return 0;
#endif
}

CUresult kv_cugen_fill_at(const struct kv_cu *cu, CUstream s, enum kv_dtype d,
                          const struct kv_init *init, uint64_t seed, uint64_t stream,
                          uint64_t first, CUdeviceptr dst, size_t n) {
  if (!ready || !cu || !cu->LaunchKernel)
    return KV_CU_ERROR_NOT_INITIALIZED;
  if ((unsigned)d >= KV_DTYPE_COUNT)
    return KV_CU_ERROR_INVALID_VALUE;
  if (n == 0)
    return KV_CU_SUCCESS;
  struct kvg_plan plan;
  kvg_plan_make(&plan, d, init, seed, stream);
  int k;
  uint64_t items = n; /* threads' work items: elements, or blocks of two elements */
  switch ((enum kvg_mode)plan.mode) {
  case KVG_F32_UNIFORM:
    k = K_F32_UNIFORM;
    break;
  case KVG_H16_UNIFORM:
    k = K_H16_UNIFORM;
    break;
  case KVG_NORMAL:
    k = K_NORMAL;
    break;
  default:
    k = K_ELEMS;
    break;
  }
  if (k != K_ELEMS)
    items = ((first + n - 1) >> 1) - (first >> 1) + 1;
  uint64_t blocks = (items + THREADS - 1) / THREADS;
  if (blocks > MAX_BLOCKS)
    blocks = MAX_BLOCKS;
  uint64_t count = n;
  void *args[] = {&plan, &dst, &first, &count};
  return cu->LaunchKernel(fn[k], (unsigned)blocks, 1, 1, THREADS, 1, 1, 0, s, args, NULL);
}

CUresult kv_cugen_fill_param(const struct kv_cu *cu, CUstream s, const struct kv_task *t, int p,
                             int64_t nelem, CUdeviceptr dst, uint64_t seed) {
  if (!t || p < 0 || p >= t->nparams || nelem < 0)
    return KV_CU_ERROR_INVALID_VALUE;
  const struct kv_param *pp = &t->params[p];
  return kv_cugen_fill_at(cu, s, pp->dtype, &pp->init, seed, (uint64_t)p, 0, dst, (size_t)nelem);
}

CUresult kv_cugen_gather(const struct kv_cu *cu, CUstream s, CUdeviceptr src, uint64_t seed, int p,
                         uint64_t n, unsigned esize, CUdeviceptr dst) {
  if (!ready || !cu || !cu->LaunchKernel)
    return KV_CU_ERROR_NOT_INITIALIZED;
  if (esize == 0 || esize > 8)
    return KV_CU_ERROR_INVALID_VALUE;
  uint64_t k = n > KV_SAMPLE_ELEMS ? KV_SAMPLE_ELEMS : n;
  if (k == 0 || k == n)
    return k == 0 ? KV_CU_SUCCESS : KV_CU_ERROR_INVALID_VALUE; /* a whole buffer: copy it */
  uint64_t blocks = (k + THREADS - 1) / THREADS;
  if (blocks > MAX_BLOCKS)
    blocks = MAX_BLOCKS;
  void *args[] = {&src, &seed, &p, &n, &k, &esize, &dst};
  return cu->LaunchKernel(fn[K_GATHER], (unsigned)blocks, 1, 1, THREADS, 1, 1, 0, s, args, NULL);
}
