// A WRONG candidate for KernelBench level1/100: the correct kernel that
// divides by the row count instead of the element count.
#include <cuda_runtime.h>

#define T 256
#define MAXB 2048
static __device__ double partial[MAXB];

static __global__ void hinge_part(const float4 *p, const float *t, int n, size_t total4) {
  double s = 0;
  int n4 = n / 4;
  for (size_t k = blockIdx.x * (size_t)T + threadIdx.x; k < total4; k += (size_t)gridDim.x * T) {
    float4 v = __ldg(p + k);
    int j = (int)(k % n4) * 4;
    float a = fmaxf(0.f, 1.f - v.x * __ldg(t + j)) + fmaxf(0.f, 1.f - v.y * __ldg(t + j + 1));
    float b = fmaxf(0.f, 1.f - v.z * __ldg(t + j + 2)) + fmaxf(0.f, 1.f - v.w * __ldg(t + j + 3));
    s += (double)(a + b);
  }
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  __shared__ double w[T / 32];
  if ((threadIdx.x & 31) == 0)
    w[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double b = 0;
    for (int i = 0; i < T / 32; i++)
      b += w[i];
    partial[blockIdx.x] = b;
  }
}

/* Any n: scalar loads. */
static __global__ void hinge_part1(const float *p, const float *t, int n, size_t total) {
  double s = 0;
  for (size_t k = blockIdx.x * (size_t)T + threadIdx.x; k < total; k += (size_t)gridDim.x * T)
    s += (double)fmaxf(0.f, 1.f - p[k] * t[k % n]);
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  __shared__ double w[T / 32];
  if ((threadIdx.x & 31) == 0)
    w[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    double b = 0;
    for (int i = 0; i < T / 32; i++)
      b += w[i];
    partial[blockIdx.x] = b;
  }
}

static __global__ void hinge_final(float *out, int blocks, double count) {
  __shared__ double w[T];
  double s = 0;
  for (int i = threadIdx.x; i < blocks; i += T)
    s += partial[i];
  w[threadIdx.x] = s;
  __syncthreads();
  for (int h = T / 2; h > 0; h >>= 1) {
    if (threadIdx.x < h)
      w[threadIdx.x] += w[threadIdx.x + h];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    *out = (float)(w[0] / sqrt(count));
}

extern "C" void op_100_HingeLoss(const float *predictions, const float *targets, float *out,
                                 int batch_size, int input_shape_0, cudaStream_t stream) {
  (void)input_shape_0; /* targets' length, equal to batch_size in the module */
  if (batch_size <= 0)
    return;
  size_t total = (size_t)batch_size * batch_size;
  int blocks = 132 * 8;
  if (batch_size % 4 == 0)
    hinge_part<<<blocks, T, 0, stream>>>((const float4 *)predictions, targets, batch_size,
                                         total / 4);
  else
    hinge_part1<<<blocks, T, 0, stream>>>(predictions, targets, batch_size, total);
  hinge_final<<<1, T, 0, stream>>>(out, blocks, (double)total);
}
