// rowsum starter (CUDA): a naive candidate to improve on.
// One thread per row summing it sequentially in float. Neighbouring threads
// read addresses `cols` floats apart, so no load is coalesced, and with few
// rows most of the GPU idles.
// kevo:tune BLOCK=32,64,128,256,512
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 128
#endif

static __global__ void rowsum_naive(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += xr[c];
  y[r] = s;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  rowsum_naive<<<(rows + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(x, y, rows, cols);
}
