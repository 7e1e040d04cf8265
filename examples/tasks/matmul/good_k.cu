// The good matmul as a kernel-only candidate (NVRTC): 64x64 tiles, 4x4 per
// thread.
// kevo:launch matmul_tiled grid=((n + BN - 1) / BN, (m + BM - 1) / BM) block=(MM_THREADS) args=(a, b, c, m, n, k)
#define BM 64
#define BN 64
#define BK 16
#define MM_THREADS 256
#define APAD 4

__global__ void __launch_bounds__(MM_THREADS)
    matmul_tiled(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c,
                 int m, int n, int k) {
  __shared__ __align__(16) float As[BK][BM + APAD]; // As[p][i] = a[bm + i][k0 + p]
  __shared__ __align__(16) float Bs[BK][BN];        // Bs[p][j] = b[k0 + p][bn + j]
  int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  int bn = blockIdx.x * BN;
  int tiles_m = (m + BM - 1) / BM;
  for (int tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
    int bm = tm * BM;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
      for (int j = 0; j < 4; j++)
        acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < k; k0 += BK) {
#pragma unroll
      for (int q = 0; q < (BM * BK) / MM_THREADS; q++) {
        int idx = tid + q * MM_THREADS;
        int i = idx / BK, p = idx % BK; // 16 consecutive threads read 16 floats of a row
        int gi = bm + i, gp = k0 + p;
        As[p][i] = (gi < m && gp < k) ? __ldg(a + (size_t)gi * (size_t)k + gp) : 0.0f;
      }
#pragma unroll
      for (int q = 0; q < (BK * BN) / MM_THREADS; q++) {
        int idx = tid + q * MM_THREADS;
        int p = idx / BN, j = idx % BN; // a warp reads 32 consecutive floats of a row of b
        int gp = k0 + p, gj = bn + j;
        Bs[p][j] = (gp < k && gj < n) ? __ldg(b + (size_t)gp * (size_t)n + gj) : 0.0f;
      }
      __syncthreads();
#pragma unroll
      for (int p = 0; p < BK; p++) {
        float4 av = *reinterpret_cast<const float4 *>(&As[p][ty * 4]);
        float4 bv = *reinterpret_cast<const float4 *>(&Bs[p][tx * 4]);
        float ar[4] = {av.x, av.y, av.z, av.w};
        float br[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
          for (int j = 0; j < 4; j++)
            acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
      }
      __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
      int gi = bm + ty * 4 + i;
      if (gi >= m)
        continue;
#pragma unroll
      for (int j = 0; j < 4; j++) {
        int gj = bn + tx * 4 + j;
        if (gj < n)
          c[(size_t)gi * (size_t)n + gj] = acc[i][j];
      }
    }
  }
}
