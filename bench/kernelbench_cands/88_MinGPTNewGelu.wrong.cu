// A WRONG candidate for KernelBench level1/88: the correct kernel with the
// cubic coefficient 0.05 instead of 0.044715.
#include <cuda_runtime.h>

static __device__ __forceinline__ float gelu(float x) {
  const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.05f * x * x * x)));
}

static __global__ void gelu4(const float4 *x, float4 *out, size_t n4) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
       i += (size_t)gridDim.x * blockDim.x) {
    float4 v = __ldg(x + i);
    out[i] = make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
  }
}

static __global__ void gelu1(const float *x, float *out, size_t from, size_t n) {
  size_t i = from + blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n)
    out[i] = gelu(x[i]);
}

extern "C" void op_88_MinGPTNewGelu(const float *x, float *out, int batch_size, int dim,
                                    cudaStream_t stream) {
  if (batch_size <= 0 || dim <= 0)
    return;
  size_t n = (size_t)batch_size * dim, n4 = n / 4;
  if (n4) {
    int blocks = (int)((n4 + 255) / 256 < 132 * 16 ? (n4 + 255) / 256 : 132 * 16);
    gelu4<<<blocks, 256, 0, stream>>>((const float4 *)x, (float4 *)out, n4);
  }
  if (n % 4)
    gelu1<<<1, 32, 0, stream>>>(x, out, n4 * 4, n);
}
