// transpose starter (CUDA): a naive candidate to improve on.
// 2-D grid of BLOCK x BLOCK threads, one element each, threadIdx.x along the
// rows of x: writes to y are contiguous but reads of x stride by `cols`.
// kevo:tune BLOCK=8,16,32
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 16
#endif

static __global__ void transpose_naive(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * BLOCK + threadIdx.x;
  if (r >= rows)
    return;
  for (int c = blockIdx.y * BLOCK + threadIdx.y; c < cols; c += gridDim.y * BLOCK)
    y[(size_t)c * (size_t)rows + r] = x[(size_t)r * (size_t)cols + c];
}

extern "C" void transpose(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
  dim3 block(BLOCK, BLOCK);
  int gy = (cols + BLOCK - 1) / BLOCK;
  dim3 grid((rows + BLOCK - 1) / BLOCK, gy < 65535 ? gy : 65535);
  transpose_naive<<<grid, block, 0, stream>>>(x, y, rows, cols);
}
