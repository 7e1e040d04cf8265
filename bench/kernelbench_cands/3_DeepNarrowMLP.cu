// KernelBench level3/3 (DeepNarrowMLP): Linear(input_size, 1024) + ReLU,
// fifteen Linear(1024, 1024) + ReLU, then Linear(1024, output_size). The
// weights come packed (task.json "pack"; the offsets are the prototype's
// table): weights_0 holds layer 0's weight and bias, weights_1 the other
// sixteen layers', each weight [out][in] then its bias [out], back to back.
// No library: each layer is one FP32 GEMM kernel of our own (128x128 tiles of
// the output per block, 8 of k at a time, double buffered in shared memory,
// 8x8 outputs per thread) with the bias and the ReLU fused into its epilogue;
// activations ping-pong between two device buffers of batch x 1024, made once
// (static) and grown only when a larger batch comes (the first calls are
// untimed correctness calls).
#include <cuda_runtime.h>
#include <stdint.h>

#define HIDDEN 1024
#define NHIDDEN 16 // layers of width HIDDEN (hidden_layer_sizes = [1024] * 16)

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

template <bool RELU> static __device__ __forceinline__ float epilogue(float acc, float b) {
  float v = acc + b;
  return RELU ? fmaxf(v, 0.f) : v;
}

// out[M][N] = A[M][K] B[N][K]^T + bias[N], then a ReLU if RELU; 256 threads.
template <bool VEC, bool RELU>
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
        *(float4 *)o = make_float4(epilogue<RELU>(acc[i][h * 4], bb.x), epilogue<RELU>(acc[i][h * 4 + 1], bb.y),
                                   epilogue<RELU>(acc[i][h * 4 + 2], bb.z),
                                   epilogue<RELU>(acc[i][h * 4 + 3], bb.w));
      } else {
#pragma unroll
        for (int j = 0; j < 4; j++)
          if (n + j < N)
            o[j] = epilogue<RELU>(acc[i][h * 4 + j], __ldg(bias + n + j));
      }
    }
  }
}

static float *g_act[2];
static size_t g_cap; // floats in each of g_act[0], g_act[1]

template <bool RELU>
static void linear(const float *in, const float *w, const float *b, float *out, int M, int N,
                   int K, cudaStream_t stream) {
  dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
  bool vec = (K & 3) == 0 && ((uintptr_t)in & 15) == 0 && ((uintptr_t)w & 15) == 0;
  if (vec)
    gemm_nt_epilogue<true, RELU><<<grid, 256, 0, stream>>>(in, w, b, out, M, N, K);
  else
    gemm_nt_epilogue<false, RELU><<<grid, 256, 0, stream>>>(in, w, b, out, M, N, K);
}

extern "C" void op_3_DeepNarrowMLP(const float *x, const float *weights_0, const float *weights_1,
                                   float *out, int batch_size, int input_size, int output_size,
                                   cudaStream_t stream) {
  if (batch_size <= 0 || output_size <= 0)
    return;
  size_t need = (size_t)batch_size * HIDDEN;
  if (need > g_cap) {
    cudaStreamSynchronize(stream);
    cudaFree(g_act[0]);
    cudaFree(g_act[1]);
    g_act[0] = g_act[1] = NULL;
    g_cap = 0;
    if (cudaMalloc(&g_act[0], need * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&g_act[1], need * sizeof(float)) != cudaSuccess)
      return;
    g_cap = need;
  }
  // Layer 0: weights_0 = W0 [HIDDEN][input_size], b0 [HIDDEN].
  linear<true>(x, weights_0, weights_0 + (size_t)HIDDEN * input_size, g_act[0], batch_size, HIDDEN,
               input_size, stream);
  // Layers 1..15: weights_1 = (W [HIDDEN][HIDDEN], b [HIDDEN]) x 15, then the
  // last layer's W [output_size][HIDDEN], b [output_size].
  const float *p = weights_1;
  int cur = 0;
  for (int l = 1; l < NHIDDEN; l++) {
    linear<true>(g_act[cur], p, p + (size_t)HIDDEN * HIDDEN, g_act[cur ^ 1], batch_size, HIDDEN,
                 HIDDEN, stream);
    p += (size_t)HIDDEN * HIDDEN + HIDDEN;
    cur ^= 1;
  }
  linear<false>(g_act[cur], p, p + (size_t)output_size * HIDDEN, out, batch_size, output_size,
                HIDDEN, stream);
}
