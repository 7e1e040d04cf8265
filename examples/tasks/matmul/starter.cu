// matmul starter (CUDA): a naive candidate to improve on.
// One thread per element of c, BLOCK x BLOCK thread blocks, float dot product
// straight from global memory: every element of a and b is loaded from
// L2/DRAM once per use, nothing is reused through shared memory or registers.
// kevo:tune BLOCK=8,16,32
#include <cuda_runtime.h>

#ifndef BLOCK
#define BLOCK 16
#endif

static __global__ void matmul_naive(const float *a, const float *b, float *c, int m, int n,
                                    int k) {
  int j = blockIdx.x * BLOCK + threadIdx.x;
  if (j >= n)
    return;
  for (int i = blockIdx.y * BLOCK + threadIdx.y; i < m; i += gridDim.y * BLOCK) {
    float s = 0.0f;
    for (int p = 0; p < k; p++)
      s += a[(size_t)i * (size_t)k + p] * b[(size_t)p * (size_t)n + j];
    c[(size_t)i * (size_t)n + j] = s;
  }
}

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
  dim3 block(BLOCK, BLOCK);
  int gy = (m + BLOCK - 1) / BLOCK;
  dim3 grid((n + BLOCK - 1) / BLOCK, gy < 65535 ? gy : 65535);
  matmul_naive<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}
