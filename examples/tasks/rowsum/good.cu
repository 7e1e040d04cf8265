// rowsum, good CUDA candidate.
// Long rows (cols >= 1024): one 256-thread block per row; threads stream the
// row with 16-byte float4 loads when the row is 16-byte aligned, reduce in
// registers, then across the warp with shuffles and across warps through 8
// floats of shared memory. Short rows: one warp per row (8 rows per block),
// coalesced scalar loads and a shuffle reduction, so small rows do not leave
// most of a block idle.
#include <cuda_runtime.h>
#include <stdint.h>

#define RS_THREADS 256
#define RS_WARPS_PER_BLOCK 8

static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <bool VEC>
static __global__ void __launch_bounds__(RS_THREADS)
    rowsum_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  __shared__ float warp_part[RS_THREADS / 32];
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float s = 0.0f;
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

static __global__ void __launch_bounds__(RS_WARPS_PER_BLOCK * 32)
    rowsum_warp(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
  int r = blockIdx.x * RS_WARPS_PER_BLOCK + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (r >= rows) // uniform across the warp
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = lane; c < cols; c += 32)
    s += __ldg(xr + c);
  s = warp_sum(s);
  if (lane == 0)
    y[r] = s;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
  if (cols >= 1024) {
    bool vec = (cols % 4 == 0) && ((uintptr_t)x % 16 == 0);
    if (vec)
      rowsum_block<true><<<rows, RS_THREADS, 0, stream>>>(x, y, cols);
    else
      rowsum_block<false><<<rows, RS_THREADS, 0, stream>>>(x, y, cols);
  } else {
    int blocks = (rows + RS_WARPS_PER_BLOCK - 1) / RS_WARPS_PER_BLOCK;
    rowsum_warp<<<blocks, RS_WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
  }
}
