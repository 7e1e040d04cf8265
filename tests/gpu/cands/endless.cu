// Attack: a kernel that never ends (it waits for a flag nobody sets).
// Defence: the parent kills the worker at the job's deadline; the driver
// reclaims the GPU with the process, and the next candidate runs on a fresh
// worker (the suite judges good.cu right after this one to show it).
// Expected verdict: timeout.
#include <cuda_runtime.h>

__device__ volatile int never_set;

static __global__ void spin(float *y) {
  while (never_set == 0) {
  }
  y[threadIdx.x] = 0;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)rows;
  (void)cols;
  spin<<<1, 32, 0, stream>>>(y);
}
