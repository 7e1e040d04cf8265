// matmul reference for the timing-attack suite, a copy of
// examples/tasks/matmul/reference.cu (CUDA ground truth): one thread per element of c (16 x 16
// thread blocks), dot product over k accumulated in double.
#include <cuda_runtime.h>

static __global__ void matmul_ref_kernel(const float *a, const float *b, float *c, int m, int n,
                                         int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
    const float *ai = a + (size_t)i * (size_t)k;
    double s = 0.0;
    for (int p = 0; p < k; p++)
      s += (double)ai[p] * (double)b[(size_t)p * (size_t)n + j];
    c[(size_t)i * (size_t)n + j] = (float)s;
  }
}

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
  dim3 block(16, 16);
  int gy = (m + 15) / 16;
  dim3 grid((n + 15) / 16, gy < 65535 ? gy : 65535);
  matmul_ref_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}
