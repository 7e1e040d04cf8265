// transpose, annotated expert (CUDA): its mechanisms marked so that `kevo
// lineage extract --surface cuda` walks it back, with no LLM, to the naive
// kernel (coalesced reads, strided writes). The expert moves one 32 x 32
// tile per 32 x 8 block through shared memory, so reads and writes are both
// 128 contiguous bytes per warp; the tile is padded to 33 columns so the
// column-wise shared-memory reads hit 32 banks.
// kevo:mechanism SMEM_TILE smem=4224 anchor="tile[i][tx] = __ldg(x + (size_t)r * (size_t)cols + c);" -- stage a 32 x 32 tile in shared memory so that both the reads of x and the writes of y are coalesced
// kevo:mechanism PAD_BANKS requires=SMEM_TILE anchor="__shared__ float tile[TT][TT + 1];" -- pad the shared tile to 33 columns so that reading a column hits 32 different banks (no 32-way conflicts)
// kevo:mechanism COARSEN requires=SMEM_TILE anchor="for (int i = ty; i < TT; i += TROWS)" -- 32 x 8 threads move a 32 x 32 tile, 4 elements each, instead of one element per thread of a 32 x 32 block
#include <cuda_runtime.h>

#define TT 32
#if KV_MECH_COARSEN
#define TROWS 8
#else
#define TROWS 32
#endif

#if KV_MECH_SMEM_TILE
static __global__ void __launch_bounds__(TT *TROWS)
    transpose_tiled(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
#if KV_MECH_PAD_BANKS
  __shared__ float tile[TT][TT + 1];
#else
  __shared__ float tile[TT][TT];
#endif
  int tiles_c = (cols + TT - 1) / TT, tiles_r = (rows + TT - 1) / TT;
  int tx = threadIdx.x, ty = threadIdx.y;
  for (int br = blockIdx.y; br < tiles_r; br += gridDim.y)
    for (int bc = blockIdx.x; bc < tiles_c; bc += gridDim.x) {
      int r0 = br * TT, c0 = bc * TT;
#pragma unroll
      for (int i = ty; i < TT; i += TROWS) {
        int r = r0 + i, c = c0 + tx;
        if (r < rows && c < cols)
          tile[i][tx] = __ldg(x + (size_t)r * (size_t)cols + c);
      }
      __syncthreads();
#pragma unroll
      for (int i = ty; i < TT; i += TROWS) {
        int c = c0 + i, r = r0 + tx;
        if (r < rows && c < cols)
          y[(size_t)c * (size_t)rows + r] = tile[tx][i];
      }
      __syncthreads();
    }
}
#else
static __global__ void transpose_naive(const float *__restrict__ x, float *__restrict__ y,
                                       int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  for (int r = blockIdx.y * blockDim.y + threadIdx.y; r < rows; r += gridDim.y * blockDim.y)
    if (c < cols)
      y[(size_t)c * (size_t)rows + r] = x[(size_t)r * (size_t)cols + c];
}
#endif

extern "C" void transpose(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
#if KV_MECH_SMEM_TILE
  int tiles_c = (cols + TT - 1) / TT, tiles_r = (rows + TT - 1) / TT;
  dim3 grid(tiles_c < 65535 ? tiles_c : 65535, tiles_r < 65535 ? tiles_r : 65535);
  transpose_tiled<<<grid, dim3(TT, TROWS), 0, stream>>>(x, y, rows, cols);
#else
  int tiles_r = (rows + 7) / 8;
  dim3 grid((cols + 31) / 32, tiles_r < 65535 ? tiles_r : 65535);
  transpose_naive<<<grid, dim3(32, 8), 0, stream>>>(x, y, rows, cols);
#endif
}
