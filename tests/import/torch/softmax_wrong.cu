// A wrong CUDA candidate for the imported 1_Softmax_rows: softmax_ok.cu with
// the first element of every row halved.
#include <cuda_runtime.h>
#include <math.h>

#define T 256

static __device__ float block_reduce(float v, bool is_max) {
  __shared__ float part[T / 32];
  for (int o = 16; o > 0; o >>= 1) {
    float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = is_max ? fmaxf(v, w) : v + w;
  }
  if ((threadIdx.x & 31) == 0)
    part[threadIdx.x >> 5] = v;
  __syncthreads();
  v = threadIdx.x < T / 32 ? part[threadIdx.x] : (is_max ? -INFINITY : 0.f);
  if (threadIdx.x < 32)
    for (int o = 16; o > 0; o >>= 1) {
      float w = __shfl_xor_sync(0xffffffffu, v, o);
      v = is_max ? fmaxf(v, w) : v + w;
    }
  if (threadIdx.x == 0)
    part[0] = v;
  __syncthreads();
  v = part[0];
  __syncthreads();
  return v;
}

static __global__ void softmax_rows(const float *x, float *out, int dim) {
  const float *r = x + (size_t)blockIdx.x * dim;
  float *o = out + (size_t)blockIdx.x * dim;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < dim; j += T)
    m = fmaxf(m, r[j]);
  m = block_reduce(m, true);
  float s = 0.f;
  for (int j = threadIdx.x; j < dim; j += T)
    s += __expf(r[j] - m);
  s = block_reduce(s, false);
  float inv = 1.f / s;
  for (int j = threadIdx.x; j < dim; j += T)
    o[j] = __expf(r[j] - m) * (j == 0 ? 0.5f * inv : inv);
}

extern "C" void op_1_Softmax_rows(const float *x, float *out, int batch_size, int dim,
                                  cudaStream_t stream) {
  if (batch_size > 0 && dim > 0)
    softmax_rows<<<batch_size, T, 0, stream>>>(x, out, dim);
}
