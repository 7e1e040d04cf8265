// The good transpose as a kernel-only candidate (NVRTC): 32x32 tiles through
// padded shared memory.
// kevo:launch transpose_tiled grid=((cols + TT - 1) / TT, (rows + TT - 1) / TT) block=(TT, TROWS) args=(x, y, rows, cols)
#define TT 32
#define TROWS 8

__global__ void __launch_bounds__(TT *TROWS)
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
