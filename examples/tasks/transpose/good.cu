// transpose, good CUDA candidate.
// Classic shared-memory tiled transpose: a 32 x 8 thread block moves one
// 32 x 32 tile. It reads rows of the tile from x (each warp reads 128
// contiguous bytes), stores them into shared memory, then writes rows of the
// transposed tile to y (again 128 contiguous bytes per warp). The tile is
// padded to 33 columns so the column-wise shared-memory reads hit 32
// different banks. Tiles are walked with grid-stride loops, so any shape fits
// the grid limits.
#include <cuda_runtime.h>

#define TT 32
#define TROWS 8

static __global__ void __launch_bounds__(TT *TROWS)
    transpose_tiled(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
  __shared__ float tile[TT][TT + 1];
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

extern "C" void transpose(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
  int tiles_c = (cols + TT - 1) / TT, tiles_r = (rows + TT - 1) / TT;
  dim3 grid(tiles_c < 65535 ? tiles_c : 65535, tiles_r < 65535 ? tiles_r : 65535);
  transpose_tiled<<<grid, dim3(TT, TROWS), 0, stream>>>(x, y, rows, cols);
}
