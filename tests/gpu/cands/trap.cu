// Attack: a kernel that executes __trap() (an abort on the device: a sticky
// error).
// Expected verdict: crash.
#include <cuda_runtime.h>

static __global__ void boom(float *y) {
  if (threadIdx.x == 0)
    __trap();
  y[threadIdx.x] = 0;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)rows;
  (void)cols;
  boom<<<1, 32, 0, stream>>>(y);
}
