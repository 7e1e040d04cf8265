// Launch lines and a host entry: the host-entry contract (nvcc) rules, the
// launch lines are comments.
// Expected verdict: ok.
// kevo:launch rowsum_warp grid=(1) block=(1) args=(x)
#include <cuda_runtime.h>
static __global__ void rowsum_warp(const float *x, float *y, int rows, int cols) {
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
extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_warp<<<(rows + 7) / 8, 256, 0, stream>>>(x, y, rows, cols);
}
