// Attack: computes the right row sums, then zeroes its input (a later caller
// would see different data; a reference run after it would be fooled).
// Defence: the worker returns the inputs after the call; the parent
// regenerates them and compares.
// Expected verdict: input_mutated.
#include <cuda_runtime.h>

static __global__ void rowsum_and_clobber(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  float *xr = const_cast<float *>(x) + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += xr[c];
  y[r] = s;
  xr[0] = 0.0f;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_and_clobber<<<(rows + 255) / 256, 256, 0, stream>>>(x, y, rows, cols);
}
