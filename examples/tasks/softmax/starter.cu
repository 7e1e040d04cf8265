// softmax starter (CUDA): a naive candidate to improve on.
// One thread per row: maximum, sum of expf(x - max), then expf(x - max) / sum,
// all sequential in float. Loads are uncoalesced (threads of a warp read
// different rows) and the row is read three times.
// kevo:tune BLOCK=32,64,128,256
#include <cuda_runtime.h>
#include <math.h>

#ifndef BLOCK
#define BLOCK 128
#endif

static __global__ void softmax_naive(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float *yr = y + (size_t)r * (size_t)cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; c++)
    m = fmaxf(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += expf(xr[c] - m);
  for (int c = 0; c < cols; c++)
    yr[c] = expf(xr[c] - m) / s;
}

extern "C" void softmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
  softmax_naive<<<(rows + BLOCK - 1) / BLOCK, BLOCK, 0, stream>>>(x, y, rows, cols);
}
