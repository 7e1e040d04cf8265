// Tune benchmark (host-entry form, nvcc): a warp-per-row rowsum with two
// knobs, 20 variants. bench/nvrtc_latency.sh runs `kevo run --strategy tune`
// on it and on rowsum_tune_k.cu (the same kernel, kernel-only, NVRTC).
// kevo:tune WARPS=1,2,4,8,16
// kevo:tune UNROLL=1,2,4,8
#include <cuda_runtime.h>

#ifndef WARPS
#define WARPS 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
/* #pragma unroll does not expand macros: _Pragma does, through these. */
#define KV_PRAGMA(x) _Pragma(#x)
#define KV_UNROLL(n) KV_PRAGMA(unroll n)

static __global__ void rowsum_w(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * WARPS + (threadIdx.x >> 5), lane = threadIdx.x & 31;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  KV_UNROLL(UNROLL)
  for (int c = lane; c < cols; c += 32)
    s += xr[c];
  for (int o = 16; o > 0; o >>= 1)
    s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0)
    y[r] = s;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows > 0)
    rowsum_w<<<(rows + WARPS - 1) / WARPS, WARPS * 32, 0, stream>>>(x, y, rows, cols);
}
