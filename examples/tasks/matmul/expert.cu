// matmul, annotated expert (CUDA, FP32 SIMT): its mechanisms marked so that
// `kevo lineage extract --surface cuda` walks it back, with no LLM, to one
// thread per element of c reading a and b from global memory. The expert: a
// 256-thread block computes a 64 x 64 tile of c, each thread a 4 x 4
// sub-tile in registers; k is walked in slices of 16 staged in shared memory
// (a stored transposed and padded), two buffers so the next slice loads
// while this one is used; the 4 values of a and of b a thread needs per step
// are read from shared memory as one float4 each.
// kevo:mechanism SMEM_TILE smem=8448 anchor="Bs[BUF][p][j] = (gp < k && gj < n) ? __ldg(b + (size_t)gp * (size_t)n + gj) : 0.0f;" -- stage BK-wide slices of a and b in shared memory with coalesced loads, so each element of a and b is read from global memory once per tile instead of once per output
// kevo:mechanism REG_TILE requires=SMEM_TILE -- each thread computes a 4 x 4 sub-tile of c held in registers (a 64 x 64 block tile), reusing each value it reads from shared memory 4 times
// kevo:mechanism VEC4_SMEM requires=REG_TILE anchor="float4 av = *reinterpret_cast<const float4 *>(&As[cur][p][ty * TM]);" -- read a thread's 4 values of a and of b per step as one float4 each from shared memory
// kevo:mechanism DOUBLE_BUF requires=SMEM_TILE smem=16896 anchor="if (k0 + BK < k)" -- two shared buffers: the next slice of k is loaded while this one is used, one barrier per slice instead of two
#include <cuda_runtime.h>

#define BK 16
#define MM_THREADS 256
#define APAD 4
#if KV_MECH_REG_TILE
#define TM 4
#define TN 4
#else
#define TM 1
#define TN 1
#endif
#define BM (16 * TM)
#define BN (16 * TN)
#if KV_MECH_DOUBLE_BUF
#define NBUF 2
#else
#define NBUF 1
#endif

#if KV_MECH_SMEM_TILE
// As[buf][p][i] = a[bm + i][k0 + p] (transposed), Bs[buf][p][j] = b[k0 + p][bn + j]; zero past the edges.
#define LOAD_TILES(BUF, K0)                                                                       \
  do {                                                                                            \
    _Pragma("unroll") for (int q = 0; q < (BM * BK + MM_THREADS - 1) / MM_THREADS; q++) {         \
      int idx = tid + q * MM_THREADS;                                                             \
      if (idx < BM * BK) {                                                                        \
        int i = idx / BK, p = idx % BK;                                                           \
        int gi = bm + i, gp = (K0) + p;                                                           \
        As[BUF][p][i] = (gi < m && gp < k) ? __ldg(a + (size_t)gi * (size_t)k + gp) : 0.0f;       \
      }                                                                                           \
    }                                                                                             \
    _Pragma("unroll") for (int q = 0; q < (BK * BN + MM_THREADS - 1) / MM_THREADS; q++) {         \
      int idx = tid + q * MM_THREADS;                                                             \
      if (idx < BK * BN) {                                                                        \
        int p = idx / BN, j = idx % BN;                                                           \
        int gp = (K0) + p, gj = bn + j;                                                           \
        Bs[BUF][p][j] = (gp < k && gj < n) ? __ldg(b + (size_t)gp * (size_t)n + gj) : 0.0f;       \
      }                                                                                           \
    }                                                                                             \
  } while (0)

static __global__ void __launch_bounds__(MM_THREADS)
    matmul_tiled(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                 int m, int n, int k) {
  __shared__ __align__(16) float As[NBUF][BK][BM + APAD];
  __shared__ __align__(16) float Bs[NBUF][BK][BN];
  int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  int bn = blockIdx.x * BN;
  int tiles_m = (m + BM - 1) / BM;
  for (int tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    int bm = tm * BM;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++)
        acc[i][j] = 0.0f;
    LOAD_TILES(0, 0);
    __syncthreads();
    int slice = 0;
    for (int k0 = 0; k0 < k; k0 += BK, slice++) {
#if KV_MECH_DOUBLE_BUF
      int cur = slice & 1;
      if (k0 + BK < k)
        LOAD_TILES(cur ^ 1, k0 + BK);
#else
      const int cur = 0;
#endif
#pragma unroll
      for (int p = 0; p < BK; p++) {
        float ar[TM], br[TN];
#if KV_MECH_VEC4_SMEM
        float4 av = *reinterpret_cast<const float4 *>(&As[cur][p][ty * TM]);
        float4 bv = *reinterpret_cast<const float4 *>(&Bs[cur][p][tx * TN]);
        ar[0] = av.x, ar[1] = av.y, ar[2] = av.z, ar[3] = av.w;
        br[0] = bv.x, br[1] = bv.y, br[2] = bv.z, br[3] = bv.w;
#else
#pragma unroll
        for (int i = 0; i < TM; i++)
          ar[i] = As[cur][p][ty * TM + i];
#pragma unroll
        for (int j = 0; j < TN; j++)
          br[j] = Bs[cur][p][tx * TN + j];
#endif
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
          for (int j = 0; j < TN; j++)
            acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
      }
      __syncthreads();
#if !KV_MECH_DOUBLE_BUF
      if (k0 + BK < k) {
        LOAD_TILES(0, k0 + BK);
        __syncthreads();
      }
#endif
    }
    (void)slice;
#pragma unroll
    for (int i = 0; i < TM; i++) {
      int gi = bm + ty * TM + i;
      if (gi >= m)
        continue;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        int gj = bn + tx * TN + j;
        if (gj < n)
          c[(size_t)gi * (size_t)n + gj] = acc[i][j];
      }
    }
  }
}
#else
static __global__ void matmul_naive(const float *__restrict__ a, const float *__restrict__ b,
                                    float *__restrict__ c, int m, int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < m; i += gridDim.y * blockDim.y) {
    if (j >= n)
      return;
    float s = 0.0f;
    for (int p = 0; p < k; p++)
      s = fmaf(a[(size_t)i * (size_t)k + p], b[(size_t)p * (size_t)n + j], s);
    c[(size_t)i * (size_t)n + j] = s;
  }
}
#endif

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
#if KV_MECH_SMEM_TILE
  int tiles_n = (n + BN - 1) / BN, tiles_m = (m + BM - 1) / BM;
  dim3 grid(tiles_n, tiles_m < 65535 ? tiles_m : 65535);
  matmul_tiled<<<grid, MM_THREADS, 0, stream>>>(a, b, c, m, n, k);
#else
  int tiles_m = (m + 15) / 16;
  dim3 grid((n + 15) / 16, tiles_m < 65535 ? tiles_m : 65535);
  matmul_naive<<<grid, dim3(16, 16), 0, stream>>>(a, b, c, m, n, k);
#endif
}
