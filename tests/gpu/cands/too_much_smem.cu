// Attack (or bug): a launch that asks for far more shared memory than a block
// can have. The runtime refuses the launch; the kernel never runs.
// Defence: after every call the worker reads the CUDA runtime's last error
// (the guard kevo links into every object) instead of guessing from the
// outputs.
// Expected verdict: crash (cudaErrorInvalidValue or similar, named in the detail).
#include <cuda_runtime.h>

static __global__ void rowsum_smem(const float *x, float *y, int rows, int cols) {
  extern __shared__ float buf[];
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += x[(size_t)r * (size_t)cols + c];
  buf[threadIdx.x] = s;
  y[r] = buf[threadIdx.x];
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_smem<<<(rows + 255) / 256, 256, 1 << 20, stream>>>(x, y, rows, cols);
}
