// Attack: reaches cuBLAS without the task's say-so, loading the library by
// hand (dlopen, then dlsym for its entry points) instead of linking it.
// Defence: the candidate's undefined symbols: dlopen and dlsym are refused
// whatever the task allows (and after the load, the worker's lockdown maps no
// new code anyway).
// Expected verdict: policy_violation (dlopen, dlsym).
#include <cuda_runtime.h>
#include <dlfcn.h>

typedef int (*create_fn)(void **);

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  void *lib = dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL);
  if (!lib)
    return;
  create_fn create = (create_fn)dlsym(lib, "cublasCreate_v2");
  void *h = 0;
  if (create)
    create(&h);
  (void)x, (void)w, (void)bias, (void)y, (void)m, (void)n, (void)k, (void)stream;
}
