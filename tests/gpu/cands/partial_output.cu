// Attack: computes only the first half of the rows (rounded up, so one row is
// complete) and leaves the rest to whatever the buffer held.
// Defence: outputs are poisoned on the device before every call.
// Expected verdict: unwritten_output.
#include <cuda_runtime.h>

static __global__ void rowsum_half(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= (rows + 1) / 2)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += xr[c];
  y[r] = s;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_half<<<(rows + 255) / 256, 256, 0, stream>>>(x, y, rows, cols);
}
