// The good softmax as a kernel-only candidate (NVRTC): one block per row,
// online max and sum, float4 when aligned (decided inside the kernel).
// kevo:launch softmax_block grid=(rows) block=(SM_THREADS) args=(x, y, cols)
#define SM_THREADS 256
#define SM_WARPS_PER_BLOCK 8
#define INFINITY __int_as_float(0x7f800000)

struct ms_t {
  float m, s;
};

__device__ __forceinline__ ms_t ms_merge(ms_t a, ms_t b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY)
    return a;
  ms_t r;
  r.m = m;
  r.s = a.s * __expf(a.m - m) + b.s * __expf(b.m - m);
  return r;
}

__device__ __forceinline__ void ms_add(ms_t &a, float v) {
  if (v > a.m) {
    a.s = a.s * __expf(a.m - v) + 1.0f;
    a.m = v;
  } else {
    a.s += __expf(v - a.m);
  }
}

__device__ __forceinline__ ms_t warp_merge(ms_t a) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    ms_t b;
    b.m = __shfl_xor_sync(0xffffffffu, a.m, o);
    b.s = __shfl_xor_sync(0xffffffffu, a.s, o);
    a = ms_merge(a, b);
  }
  return a;
}

__global__ void __launch_bounds__(SM_THREADS)
    softmax_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  __shared__ ms_t part[SM_THREADS / 32];
  __shared__ ms_t total;
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float *yr = y + (size_t)blockIdx.x * (size_t)cols;
  ms_t a = {-INFINITY, 0.0f};
  const bool VEC = cols % 4 == 0 && (unsigned long long)x % 16 == 0 &&
                   (unsigned long long)y % 16 == 0;
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
