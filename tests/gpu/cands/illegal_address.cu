// Attack: a kernel that writes far outside its buffers (an illegal address:
// a sticky error that poisons the CUDA context).
// Defence: the worker synchronizes after the call, reports the error as fatal
// and exits; the parent calls it a crash and would replace the worker.
// Expected verdict: crash (CUDA_ERROR_ILLEGAL_ADDRESS).
#include <cuda_runtime.h>

static __global__ void wild(float *y, int rows) {
  float *far = y + ((size_t)1 << 40);
  far[threadIdx.x] = (float)rows;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  (void)x;
  (void)cols;
  wild<<<1, 32, 0, stream>>>(y, rows);
}
