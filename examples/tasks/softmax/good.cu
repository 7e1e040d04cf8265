// softmax, good CUDA candidate.
// One pass computes the row maximum and the sum of exponentials together
// (online softmax): each thread keeps (m, s) with s = sum exp(x - m) and
// rescales s when m grows; pairs are merged with warp shuffles, then across
// warps through shared memory. A second pass writes exp(x - m) * (1/s); the
// row is re-read from L2. Long rows (cols > 1024) use a 256-thread block per
// row with float4 loads/stores when the rows are 16-byte aligned; short rows
// use one warp per row. Exponentials use the __expf intrinsic (a few ulp:
// far below the tolerance).
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define SM_THREADS 256
#define SM_WARPS_PER_BLOCK 8

struct ms_t {
  float m, s;
};

static __device__ __forceinline__ ms_t ms_merge(ms_t a, ms_t b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY)
    return a;
  ms_t r;
  r.m = m;
  r.s = a.s * __expf(a.m - m) + b.s * __expf(b.m - m);
  return r;
}

static __device__ __forceinline__ void ms_add(ms_t &a, float v) {
  if (v > a.m) {
    a.s = a.s * __expf(a.m - v) + 1.0f;
    a.m = v;
  } else {
    a.s += __expf(v - a.m);
  }
}

static __device__ __forceinline__ ms_t warp_merge(ms_t a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    ms_t b;
    b.m = __shfl_xor_sync(0xffffffffu, a.m, o);
    b.s = __shfl_xor_sync(0xffffffffu, a.s, o);
    a = ms_merge(a, b);
  }
  return a;
}

template <bool VEC>
static __global__ void __launch_bounds__(SM_THREADS)
    softmax_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  __shared__ ms_t part[SM_THREADS / 32];
  __shared__ ms_t total;
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float *yr = y + (size_t)blockIdx.x * (size_t)cols;
  ms_t a = {-INFINITY, 0.0f};
  if (VEC) {
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    for (int i = threadIdx.x; i < (cols >> 2); i += SM_THREADS) {
      float4 v = __ldg(x4 + i);
      ms_add(a, v.x);
      ms_add(a, v.y);
      ms_add(a, v.z);
      ms_add(a, v.w);
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += SM_THREADS)
      ms_add(a, __ldg(xr + c));
  }
  a = warp_merge(a);
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0)
    part[wid] = a;
  __syncthreads();
  if (wid == 0) {
    ms_t b = lane < SM_THREADS / 32 ? part[lane] : ms_t{-INFINITY, 0.0f};
    b = warp_merge(b);
    if (lane == 0)
      total = b;
  }
  __syncthreads();
  float m = total.m, inv = 1.0f / total.s;
  if (VEC) {
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    float4 *y4 = reinterpret_cast<float4 *>(yr);
    for (int i = threadIdx.x; i < (cols >> 2); i += SM_THREADS) {
      float4 v = __ldg(x4 + i);
      v.x = __expf(v.x - m) * inv;
      v.y = __expf(v.y - m) * inv;
      v.z = __expf(v.z - m) * inv;
      v.w = __expf(v.w - m) * inv;
      y4[i] = v;
    }
  } else {
    for (int c = threadIdx.x; c < cols; c += SM_THREADS)
      yr[c] = __expf(__ldg(xr + c) - m) * inv;
  }
}

static __global__ void __launch_bounds__(SM_WARPS_PER_BLOCK * 32)
    softmax_warp(const float *__restrict__ x, float *__restrict__ y, int rows, int cols) {
  int r = blockIdx.x * SM_WARPS_PER_BLOCK + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (r >= rows) // uniform across the warp
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float *yr = y + (size_t)r * (size_t)cols;
  ms_t a = {-INFINITY, 0.0f};
  for (int c = lane; c < cols; c += 32)
    ms_add(a, __ldg(xr + c));
  a = warp_merge(a);
  float inv = 1.0f / a.s;
  for (int c = lane; c < cols; c += 32)
    yr[c] = __expf(__ldg(xr + c) - a.m) * inv;
}

extern "C" void softmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
  if (cols > 1024) {
    bool vec = cols % 4 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0;
    if (vec)
      softmax_block<true><<<rows, SM_THREADS, 0, stream>>>(x, y, cols);
    else
      softmax_block<false><<<rows, SM_THREADS, 0, stream>>>(x, y, cols);
  } else {
    int blocks = (rows + SM_WARPS_PER_BLOCK - 1) / SM_WARPS_PER_BLOCK;
    softmax_warp<<<blocks, SM_WARPS_PER_BLOCK * 32, 0, stream>>>(x, y, rows, cols);
  }
}
