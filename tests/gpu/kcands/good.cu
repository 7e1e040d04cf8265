// The control, kernel-only: a correct rowsum (one warp per row, shuffle
// reduction), launched by kevo per its launch line.
// Expected verdict: ok.
// kevo:launch rowsum_warp grid=((rows + 7) / 8) block=(256) args=(x, y, rows, cols)
__global__ void rowsum_warp(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * 8 + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32)
    s += xr[c];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0)
    y[r] = s;
}
