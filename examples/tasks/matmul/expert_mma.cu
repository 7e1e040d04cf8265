// matmul, annotated expert (CUDA, tensor cores at FP32 accuracy): its
// mechanisms marked so that `kevo lineage extract --surface cuda` walks it
// back, with no LLM. A 128-thread block computes a 32 x 32 tile of c, each
// warp a 16 x 16 piece with wmma m16n16k8 TF32 mma (sm_80 and later), k in
// slices of 16 staged in shared memory. TF32 keeps 10 mantissa bits, which
// the task's FP32 tolerance refuses; the 3xTF32 split (a = a_big + a_small,
// c += a_big*b_small + a_small*b_big + a_big*b_big) restores FP32 accuracy.
// The tensor core's FP32 accumulation does not round to nearest (on an H100
// a whole-k accumulation in the mma missed the tolerance by 2x at k = 1031),
// so each 16-wide slice is summed in its own fragment and the slices are
// added with FP32 adds.
// TF32_SPLIT is declared without requires on purpose: it is removed first,
// and the gate must refuse plain TF32 (the step that shows the split is
// load-bearing); MMA then comes off with the split inside it.
// kevo:mechanism SMEM_TILE smem=9216 anchor="As[i][p] = (gi < m && gp < k) ? __ldg(a + (size_t)gi * (size_t)k + gp) : 0.0f;" -- stage 16-wide slices of a and b in shared memory with coalesced loads, reused by the whole 32 x 32 tile
// kevo:mechanism MMA requires=SMEM_TILE hardware=sm_80+ anchor="wmma::mma_sync(sf, af_big, bf_big, sf);" -- tensor-core mma (wmma m16n16k8, TF32 inputs, FP32 accumulation): one warp per 16 x 16 piece of the tile, instead of FP32 FMAs
// kevo:mechanism TF32_SPLIT anchor="wmma::mma_sync(sf, af_small, bf_big, sf);" -- split each input into a TF32 value and a TF32 remainder and add the two cross products: FP32 accuracy from TF32 tensor cores
#include <cuda_runtime.h>
#if KV_MECH_MMA
#include <mma.h>
using namespace nvcuda;
#endif

#define TB 32
#define BK 16
#define MM_THREADS 128
#define PAD 4

#if KV_MECH_SMEM_TILE
static __global__ void __launch_bounds__(MM_THREADS)
    matmul_tile(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                int m, int n, int k) {
  __shared__ __align__(32) float As[TB][BK + PAD]; // As[i][p] = a[bm + i][k0 + p]
  __shared__ __align__(32) float Bs[BK][TB + PAD]; // Bs[p][j] = b[k0 + p][bn + j]
  int tid = threadIdx.x;
  int bm = blockIdx.y * TB, bn = blockIdx.x * TB;
#if KV_MECH_MMA
  __shared__ __align__(32) float Cs[TB][TB + PAD];
  int warp = tid / 32, wm = warp / 2, wn = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> cf;
  wmma::fill_fragment(cf, 0.0f);
#else
  float acc[8];
  for (int i = 0; i < 8; i++)
    acc[i] = 0.0f;
  int col = tid % 32, row0 = (tid / 32) * 8;
#endif
  for (int k0 = 0; k0 < k; k0 += BK) {
    for (int idx = tid; idx < TB * BK; idx += MM_THREADS) {
      int i = idx / BK, p = idx % BK;
      int gi = bm + i, gp = k0 + p;
      As[i][p] = (gi < m && gp < k) ? __ldg(a + (size_t)gi * (size_t)k + gp) : 0.0f;
    }
    for (int idx = tid; idx < BK * TB; idx += MM_THREADS) {
      int p = idx / TB, j = idx % TB;
      int gp = k0 + p, gj = bn + j;
      Bs[p][j] = (gp < k && gj < n) ? __ldg(b + (size_t)gp * (size_t)n + gj) : 0.0f;
    }
    __syncthreads();
#if KV_MECH_MMA
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> sf; // this slice's products
    wmma::fill_fragment(sf, 0.0f);
#pragma unroll
    for (int kk = 0; kk < BK; kk += 8) {
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> af_big;
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bf_big;
      wmma::load_matrix_sync(af_big, &As[wm * 16][kk], BK + PAD);
      wmma::load_matrix_sync(bf_big, &Bs[kk][wn * 16], TB + PAD);
#if KV_MECH_TF32_SPLIT
      wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> af_small;
      wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> bf_small;
#pragma unroll
      for (int e = 0; e < af_big.num_elements; e++) {
        float v = af_big.x[e], hi = wmma::__float_to_tf32(v);
        af_big.x[e] = hi;
        af_small.x[e] = wmma::__float_to_tf32(v - hi);
      }
#pragma unroll
      for (int e = 0; e < bf_big.num_elements; e++) {
        float v = bf_big.x[e], hi = wmma::__float_to_tf32(v);
        bf_big.x[e] = hi;
        bf_small.x[e] = wmma::__float_to_tf32(v - hi);
      }
      wmma::mma_sync(sf, af_small, bf_big, sf);
      wmma::mma_sync(sf, af_big, bf_small, sf);
#else
#pragma unroll
      for (int e = 0; e < af_big.num_elements; e++)
        af_big.x[e] = wmma::__float_to_tf32(af_big.x[e]);
#pragma unroll
      for (int e = 0; e < bf_big.num_elements; e++)
        bf_big.x[e] = wmma::__float_to_tf32(bf_big.x[e]);
#endif
      wmma::mma_sync(sf, af_big, bf_big, sf);
    }
#pragma unroll
    for (int e = 0; e < cf.num_elements; e++)
      cf.x[e] += sf.x[e];
#else
#pragma unroll
    for (int p = 0; p < BK; p++) {
      float bv = Bs[p][col];
#pragma unroll
      for (int i = 0; i < 8; i++)
        acc[i] = fmaf(As[row0 + i][p], bv, acc[i]);
    }
#endif
    __syncthreads();
  }
#if KV_MECH_MMA
  wmma::store_matrix_sync(&Cs[wm * 16][wn * 16], cf, TB + PAD, wmma::mem_row_major);
  __syncthreads();
  for (int idx = tid; idx < TB * TB; idx += MM_THREADS) {
    int i = idx / TB, j = idx % TB, gi = bm + i, gj = bn + j;
    if (gi < m && gj < n)
      c[(size_t)gi * (size_t)n + gj] = Cs[i][j];
  }
#else
  for (int i = 0; i < 8; i++) {
    int gi = bm + row0 + i, gj = bn + col;
    if (gi < m && gj < n)
      c[(size_t)gi * (size_t)n + gj] = acc[i];
  }
#endif
}
#else
static __global__ void matmul_naive(const float *__restrict__ a, const float *__restrict__ b,
                                    float *__restrict__ c, int m, int n, int k) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n)
    return;
  float s = 0.0f;
  for (int p = 0; p < k; p++)
    s = fmaf(a[(size_t)i * (size_t)k + p], b[(size_t)p * (size_t)n + j], s);
  c[(size_t)i * (size_t)n + j] = s;
}
#endif

extern "C" void matmul(const float *a, const float *b, float *c, int m, int n, int k,
                       cudaStream_t stream) {
  if (m <= 0 || n <= 0)
    return;
  // one block per 32 x 32 tile (m, n < 2^21 here: 65535 tiles a side)
  dim3 grid((n + TB - 1) / TB, (m + TB - 1) / TB);
#if KV_MECH_SMEM_TILE
  matmul_tile<<<grid, MM_THREADS, 0, stream>>>(a, b, c, m, n, k);
#else
  matmul_naive<<<grid, dim3(TB, TB), 0, stream>>>(a, b, c, m, n, k);
#endif
}
