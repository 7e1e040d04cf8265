// The good layernorm as a kernel-only candidate (NVRTC): one block per row;
// rows of up to 8192 aligned floats stay in registers (chosen inside the
// kernel, uniformly), others take the generic loop.
// kevo:launch layernorm_k grid=(rows) block=(LN_THREADS) args=(x, gamma, beta, y, eps, cols)
#define LN_THREADS 256
#define LN_WARPS_PER_BLOCK 8

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sum over the block; every thread gets the result. `part` holds 8 floats.
__device__ __forceinline__ float block_sum(float v, float *part) {
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  v = warp_sum(v);
  __syncthreads(); // part may still be read by a previous call
  if (lane == 0)
    part[wid] = v;
  __syncthreads();
  float s = lane < LN_THREADS / 32 ? part[lane] : 0.0f;
  return warp_sum(s);
}

template <int NV>
__device__ __forceinline__ void
    layernorm_regs(const float4 *__restrict__ x, const float4 *__restrict__ gamma,
                   const float4 *__restrict__ beta, float4 *__restrict__ y, float eps,
                   int cols) {
  __shared__ float part[LN_THREADS / 32];
  int cols4 = cols >> 2;
  const float4 *xr = x + (size_t)blockIdx.x * (size_t)cols4;
  float4 *yr = y + (size_t)blockIdx.x * (size_t)cols4;
  float4 v[NV];
  float s = 0.0f;
#pragma unroll
  for (int q = 0; q < NV; q++) {
    int i = threadIdx.x + q * LN_THREADS;
    v[q] = i < cols4 ? __ldg(xr + i) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s += (v[q].x + v[q].y) + (v[q].z + v[q].w);
  }
  float mean = block_sum(s, part) / (float)cols;
  float sq = 0.0f;
#pragma unroll
  for (int q = 0; q < NV; q++) {
    int i = threadIdx.x + q * LN_THREADS;
    if (i < cols4) {
      float a = v[q].x - mean, b = v[q].y - mean, c = v[q].z - mean, d = v[q].w - mean;
      sq += (a * a + b * b) + (c * c + d * d);
    }
  }
  float rstd = rsqrtf(block_sum(sq, part) / (float)cols + eps);
#pragma unroll
  for (int q = 0; q < NV; q++) {
    int i = threadIdx.x + q * LN_THREADS;
    if (i < cols4) {
      float4 g = __ldg(gamma + i), b = __ldg(beta + i), o;
      o.x = (v[q].x - mean) * rstd * g.x + b.x;
      o.y = (v[q].y - mean) * rstd * g.y + b.y;
      o.z = (v[q].z - mean) * rstd * g.z + b.z;
      o.w = (v[q].w - mean) * rstd * g.w + b.w;
      yr[i] = o;
    }
  }
}

__device__ __forceinline__ void
    layernorm_generic(const float *__restrict__ x, const float *__restrict__ gamma,
                      const float *__restrict__ beta, float *__restrict__ y, float eps, int cols) {
  __shared__ float part[LN_THREADS / 32];
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float *yr = y + (size_t)blockIdx.x * (size_t)cols;
  float s = 0.0f;
  for (int c = threadIdx.x; c < cols; c += LN_THREADS)
    s += __ldg(xr + c);
  float mean = block_sum(s, part) / (float)cols;
  float sq = 0.0f;
  for (int c = threadIdx.x; c < cols; c += LN_THREADS) {
    float d = __ldg(xr + c) - mean;
    sq += d * d;
  }
  float rstd = rsqrtf(block_sum(sq, part) / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += LN_THREADS)
    yr[c] = (__ldg(xr + c) - mean) * rstd * __ldg(gamma + c) + __ldg(beta + c);
}

__global__ void __launch_bounds__(LN_THREADS)
    layernorm_k(const float *__restrict__ x, const float *__restrict__ gamma,
                const float *__restrict__ beta, float *__restrict__ y, float eps, int cols) {
  bool vec = cols % 4 == 0 && (unsigned long long)x % 16 == 0 && (unsigned long long)y % 16 == 0 &&
             (unsigned long long)gamma % 16 == 0 && (unsigned long long)beta % 16 == 0;
  const float4 *x4 = reinterpret_cast<const float4 *>(x);
  const float4 *g4 = reinterpret_cast<const float4 *>(gamma);
  const float4 *b4 = reinterpret_cast<const float4 *>(beta);
  float4 *y4 = reinterpret_cast<float4 *>(y);
  if (vec && cols <= LN_THREADS * 4 * 2) // uniform across the block
    layernorm_regs<2>(x4, g4, b4, y4, eps, cols);
  else if (vec && cols <= LN_THREADS * 4 * 4)
    layernorm_regs<4>(x4, g4, b4, y4, eps, cols);
  else if (vec && cols <= LN_THREADS * 4 * 8)
    layernorm_regs<8>(x4, g4, b4, y4, eps, cols);
  else
    layernorm_generic(x, gamma, beta, y, eps, cols);
}
