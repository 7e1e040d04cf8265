// Reference of the allow tests' level-2 task on the GPU: y = relu(x * w^T +
// bias), one thread per element of y, the dot product accumulated in double.
// Deliberately plain and library-free: the ground truth.
#include <cuda_runtime.h>

static __global__ void gemm_bias_relu_ref(const float *x, const float *w, const float *bias,
                                          float *y, int m, int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
    const float *xi = x + (size_t)i * (size_t)k, *wj = w + (size_t)j * (size_t)k;
    double s = bias[j];
    for (int p = 0; p < k; p++)
      s += (double)xi[p] * (double)wj[p];
    y[(size_t)i * (size_t)n + j] = s > 0 ? (float)s : 0.0f;
  }
}

extern "C" void gemm_bias_relu(const float *x, const float *w, const float *bias, float *y, int m,
                               int n, int k, cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
  dim3 block(16, 16);
  int gy = (m + 15) / 16;
  dim3 grid((n + 15) / 16, gy < 65535 ? gy : 65535);
  gemm_bias_relu_ref<<<grid, block, 0, stream>>>(x, w, bias, y, m, n, k);
}
