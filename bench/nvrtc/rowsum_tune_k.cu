// Tune benchmark (kernel-only form, NVRTC): rowsum_tune.cu's kernel with the
// same two knobs; kevo launches it per the line below, whose expressions see
// each variant's WARPS.
// kevo:tune WARPS=1,2,4,8,16
// kevo:tune UNROLL=1,2,4,8
// kevo:launch rowsum_w grid=((rows + WARPS - 1) / WARPS) block=(WARPS * 32) args=(x, y, rows, cols)

#ifndef WARPS
#define WARPS 4
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
/* #pragma unroll does not expand macros: _Pragma does, through these. */
#define KV_PRAGMA(x) _Pragma(#x)
#define KV_UNROLL(n) KV_PRAGMA(unroll n)

__global__ void rowsum_w(const float *x, float *y, int rows, int cols) {
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
