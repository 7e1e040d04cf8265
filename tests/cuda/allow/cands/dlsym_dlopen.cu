// Attack: the symbol check looks for dlopen by name, so this asks the loader
// for dlopen's address (dlsym(RTLD_DEFAULT, "dlopen")) and calls that: no
// undefined dlopen in the object, and cuBLAS loaded by hand.
// Defence: dlsym (and dlvsym, glibc's __libc_dlopen_mode) are refused like
// dlopen itself.
// Expected verdict: policy_violation (dlsym).
#include <cuda_runtime.h>
#include <dlfcn.h>

typedef void *(*open_fn)(const char *, int);

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  open_fn open_lib = (open_fn)dlsym(RTLD_DEFAULT, "dlopen");
  if (open_lib)
    open_lib("libcublas.so.13", RTLD_NOW);
  (void)x, (void)w, (void)bias, (void)y, (void)m, (void)n, (void)k, (void)stream;
}
