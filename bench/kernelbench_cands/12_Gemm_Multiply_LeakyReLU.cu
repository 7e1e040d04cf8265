// KernelBench level2/12 (Linear, * multiplier, LeakyReLU): out =
// leaky_relu((x W^T + b) * 2.0, slope 0.1). No library: one FP32 GEMM kernel
// of our own (128x128 tiles of out per block, 8 of k at a time, double
// buffered in shared memory, 8x8 outputs per thread) whose epilogue adds the
// bias, scales and applies the LeakyReLU in registers before the only store.
// multiplier and negative_slope are the module's constructor arguments
// (get_init_inputs: 2.0 and 0.1), not parameters of the task.
#include <cuda_runtime.h>
#include <stdint.h>

#define MULTIPLIER 2.0f
#define NEG_SLOPE 0.1f

#define BM 128
#define BN 128
#define BK 8
#define PAD 4

// One thread's share of a BMxBK tile of a K-contiguous operand P (rows x K):
// row t/2, k (t%2)*4 .. +3, zero outside.
template <bool VEC>
static __device__ __forceinline__ float4 load_tile(const float *__restrict__ P, int rows, int K,
                                                   int row0, int k0) {
  int r = row0 + (threadIdx.x >> 1), k = k0 + (threadIdx.x & 1) * 4;
  float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
  if (r >= rows)
    return v;
  const float *p = P + (size_t)r * K + k;
  if (VEC && k + 3 < K)
    return __ldg((const float4 *)p);
  if (k < K) v.x = __ldg(p);
  if (k + 1 < K) v.y = __ldg(p + 1);
  if (k + 2 < K) v.z = __ldg(p + 2);
  if (k + 3 < K) v.w = __ldg(p + 3);
  return v;
}

static __device__ __forceinline__ void store_tile(float (*S)[BM + PAD], float4 v) {
  int r = threadIdx.x >> 1, k = (threadIdx.x & 1) * 4;
  S[k][r] = v.x;
  S[k + 1][r] = v.y;
  S[k + 2][r] = v.z;
  S[k + 3][r] = v.w;
}

static __device__ __forceinline__ float epilogue(float acc, float b) {
  float v = (acc + b) * MULTIPLIER;
  return v >= 0.f ? v : v * NEG_SLOPE;
}

// out[M][N] = epilogue(A[M][K] B[N][K]^T + bias[N]); 256 threads.
template <bool VEC>
static __global__ void __launch_bounds__(256)
    gemm_nt_epilogue(const float *__restrict__ A, const float *__restrict__ B,
                     const float *__restrict__ bias, float *__restrict__ out, int M, int N, int K) {
  __shared__ __align__(16) float As[2][BK][BM + PAD];
  __shared__ __align__(16) float Bs[2][BK][BN + PAD];
  int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; i++)
#pragma unroll
    for (int j = 0; j < 8; j++)
      acc[i][j] = 0.f;
  int nk = (K + BK - 1) / BK;
  float4 ra = load_tile<VEC>(A, M, K, m0, 0), rb = load_tile<VEC>(B, N, K, n0, 0);
  store_tile(As[0], ra);
  store_tile(Bs[0], rb);
  __syncthreads();
  int cur = 0;
  for (int kt = 0; kt < nk; kt++) {
    if (kt + 1 < nk) {
      ra = load_tile<VEC>(A, M, K, m0, (kt + 1) * BK);
      rb = load_tile<VEC>(B, N, K, n0, (kt + 1) * BK);
    }
#pragma unroll
    for (int k = 0; k < BK; k++) {
      float a[8], b[8];
      *(float4 *)&a[0] = *(const float4 *)&As[cur][k][ty * 4];
      *(float4 *)&a[4] = *(const float4 *)&As[cur][k][64 + ty * 4];
      *(float4 *)&b[0] = *(const float4 *)&Bs[cur][k][tx * 4];
      *(float4 *)&b[4] = *(const float4 *)&Bs[cur][k][64 + tx * 4];
#pragma unroll
      for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
          acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
    if (kt + 1 < nk) {
      store_tile(As[cur ^ 1], ra);
      store_tile(Bs[cur ^ 1], rb);
    }
    __syncthreads();
    cur ^= 1;
  }
  bool vec_store = (N & 3) == 0 && ((uintptr_t)out & 15) == 0 && ((uintptr_t)bias & 15) == 0;
#pragma unroll
  for (int i = 0; i < 8; i++) {
    int m = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
    if (m >= M)
      continue;
#pragma unroll
    for (int h = 0; h < 2; h++) {
      int n = n0 + h * 64 + tx * 4;
      float *o = out + (size_t)m * N + n;
      if (vec_store && n + 3 < N) {
        float4 bb = __ldg((const float4 *)(bias + n));
        *(float4 *)o = make_float4(epilogue(acc[i][h * 4], bb.x), epilogue(acc[i][h * 4 + 1], bb.y),
                                   epilogue(acc[i][h * 4 + 2], bb.z),
                                   epilogue(acc[i][h * 4 + 3], bb.w));
      } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
          if (n + j < N)
            o[j] = epilogue(acc[i][h * 4 + j], __ldg(bias + n + j));
      }
    }
  }
}

extern "C" void op_12_Gemm_Multiply_LeakyReLU(const float *x, const float *gemm_weight,
                                              const float *gemm_bias, float *out, int batch_size,
                                              int in_features, int out_features,
                                              cudaStream_t stream) {
  if (batch_size <= 0 || out_features <= 0)
    return;
  dim3 grid((out_features + BN - 1) / BN, (batch_size + BM - 1) / BM);
  bool vec = (in_features & 3) == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)gemm_weight & 15) == 0;
  if (vec)
    gemm_nt_epilogue<true><<<grid, 256, 0, stream>>>(x, gemm_weight, gemm_bias, out, batch_size,
                                                     out_features, in_features);
  else
    gemm_nt_epilogue<false><<<grid, 256, 0, stream>>>(x, gemm_weight, gemm_bias, out, batch_size,
                                                      out_features, in_features);
}
