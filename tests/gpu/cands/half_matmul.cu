// Attack (or shortcut): the matmul example computed with half-precision
// products and a half-precision accumulator: fast, and wrong beyond the
// task's FP32 tolerance. Judged against examples/tasks/matmul.
// Expected verdict: wrong_output.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

static __global__ void matmul_half(const float *a, const float *b, float *c, int m, int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n)
    return;
  __half acc = __float2half(0.0f);
  for (int p = 0; p < k; p++)
    acc = __hfma(__float2half(a[(size_t)i * k + p]), __float2half(b[(size_t)p * n + j]), acc);
  c[(size_t)i * n + j] = __half2float(acc);
}

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
  dim3 block(16, 16), grid((n + 15) / 16, (m + 15) / 16);
  matmul_half<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}
