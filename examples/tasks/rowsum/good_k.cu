// The good rowsum as a kernel-only candidate (NVRTC): one block per row,
// float4 loads when the row is aligned (decided inside the kernel, uniformly).
// kevo:launch rowsum_block grid=(rows) block=(RS_THREADS) args=(x, y, cols)
#define RS_THREADS 256
#define RS_WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__global__ void __launch_bounds__(RS_THREADS)
    rowsum_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  __shared__ float warp_part[RS_THREADS / 32];
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float s = 0.0f;
  const bool VEC = (cols % 4 == 0) && ((unsigned long long)x % 16 == 0);
  if (VEC) {
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    int n4 = cols >> 2;
    for (int i = threadIdx.x; i < n4; i += RS_THREADS) {
      float4 v = __ldg(x4 + i);
      s += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += RS_THREADS)
      s += __ldg(xr + c);
  }
  s = warp_sum(s);
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0)
    warp_part[wid] = s;
  __syncthreads();
  if (wid == 0) {
    s = lane < RS_THREADS / 32 ? warp_part[lane] : 0.0f;
    s = warp_sum(s);
    if (lane == 0)
      y[blockIdx.x] = s;
  }
}
