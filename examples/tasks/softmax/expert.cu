// softmax, annotated expert (CUDA): its mechanisms marked so that `kevo
// lineage extract --surface cuda` walks it back, with no LLM, to one thread
// per row making three passes. The expert: a 256-thread block per row reads
// the row coalesced (float4 when 16-byte aligned), keeps the running maximum
// and the sum of exponentials together in one pass (online softmax), merges
// them with warp shuffles, then writes exp(x - m) / s.
// kevo:mechanism BLOCK_PER_ROW storage=global pipeline=rows-independent anchor="for (int c = threadIdx.x; c < cols; c += SM_THREADS)" -- a 256-thread block per row reading consecutive addresses (coalesced), instead of one thread per row striding through memory
// kevo:mechanism ONLINE requires=BLOCK_PER_ROW anchor="a = block_reduce(a, MsOp(), shm);" -- keep the maximum and the sum of exponentials together in one pass (rescale the sum when the maximum grows): one read of the row fewer
// kevo:mechanism VEC4 requires=BLOCK_PER_ROW dtypes=f32 anchor="float4 q = __ldg(x4 + i);" -- 16-byte float4 loads and stores when x and y are 16-byte aligned and cols % 4 == 0
// kevo:mechanism WARP_SHUFFLE requires=BLOCK_PER_ROW anchor="v = op(v, shfl(v, o));" -- reduce within warps with register shuffles and 8 values through shared memory, instead of a shared-memory tree with a barrier per level
// kevo:mechanism FAST_EXP anchor="#define EXPF(v) __expf(v)" -- the __expf intrinsic (a few ulp, far below the tolerance) instead of expf
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#define SM_THREADS 256

#if KV_MECH_FAST_EXP
#define EXPF(v) __expf(v)
#else
#define EXPF(v) expf(v)
#endif

#if KV_MECH_BLOCK_PER_ROW
struct ms_t {
  float m, s;
};

static __device__ __forceinline__ ms_t ms_merge(ms_t a, ms_t b) {
  float m = fmaxf(a.m, b.m);
  if (m == -INFINITY)
    return a;
  ms_t r;
  r.m = m;
  r.s = a.s * EXPF(a.m - m) + b.s * EXPF(b.m - m);
  return r;
}

static __device__ __forceinline__ void ms_add(ms_t &a, float v) {
  if (v > a.m) {
    a.s = a.s * EXPF(a.m - v) + 1.0f;
    a.m = v;
  } else {
    a.s += EXPF(v - a.m);
  }
}

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MsOp {
  __device__ ms_t operator()(ms_t a, ms_t b) const { return ms_merge(a, b); }
};

#if KV_MECH_WARP_SHUFFLE
static __device__ __forceinline__ float shfl(float v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
static __device__ __forceinline__ ms_t shfl(ms_t v, int o) {
  ms_t r;
  r.m = shfl(v.m, o);
  r.s = shfl(v.s, o);
  return r;
}
#endif

// One value per thread in, the block's reduction out to every thread; sh
// holds SM_THREADS values of scratch.
template <class T, class Op> static __device__ T block_reduce(T v, Op op, T *sh) {
#if KV_MECH_WARP_SHUFFLE
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, shfl(v, o));
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  if (lane == 0)
    sh[wid] = v;
  __syncthreads();
  v = sh[0];
  for (int w = 1; w < SM_THREADS / 32; w++)
    v = op(v, sh[w]);
  __syncthreads();
  return v;
#else
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int w = SM_THREADS / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w)
      sh[threadIdx.x] = op(sh[threadIdx.x], sh[threadIdx.x + w]);
    __syncthreads();
  }
  v = sh[0];
  __syncthreads();
  return v;
#endif
}

// FOR_X(v, body): body for every element v of this block's row.
#if KV_MECH_VEC4
#define FOR_X(v, ...)                                                                            \
  if (VEC) {                                                                                     \
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);                                     \
    for (int i = threadIdx.x; i < (cols >> 2); i += SM_THREADS) {                                \
      float4 q = __ldg(x4 + i);                                                                  \
      { float v = q.x; __VA_ARGS__; }                                                            \
      { float v = q.y; __VA_ARGS__; }                                                            \
      { float v = q.z; __VA_ARGS__; }                                                            \
      { float v = q.w; __VA_ARGS__; }                                                            \
    }                                                                                            \
  } else {                                                                                       \
    for (int c = threadIdx.x; c < cols; c += SM_THREADS) {                                       \
      float v = __ldg(xr + c);                                                                   \
      __VA_ARGS__;                                                                               \
    }                                                                                            \
  }
#else
#define FOR_X(v, ...)                                                                            \
  for (int c = threadIdx.x; c < cols; c += SM_THREADS) {                                         \
    float v = __ldg(xr + c);                                                                     \
    __VA_ARGS__;                                                                                 \
  }
#endif

template <bool VEC>
static __global__ void __launch_bounds__(SM_THREADS)
    softmax_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float *yr = y + (size_t)blockIdx.x * (size_t)cols;
#if KV_MECH_ONLINE
  __shared__ ms_t shm[SM_THREADS];
  ms_t a = {-INFINITY, 0.0f};
  FOR_X(v, ms_add(a, v));
  a = block_reduce(a, MsOp(), shm);
  float m = a.m, inv = 1.0f / a.s;
#else
  __shared__ float shf[SM_THREADS];
  float m = -INFINITY;
  FOR_X(v, m = fmaxf(m, v));
  m = block_reduce(m, MaxOp(), shf);
  float s = 0.0f;
  FOR_X(v, s += EXPF(v - m));
  s = block_reduce(s, SumOp(), shf);
  float inv = 1.0f / s;
#endif
#if KV_MECH_VEC4
  if (VEC) {
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    float4 *y4 = reinterpret_cast<float4 *>(yr);
    for (int i = threadIdx.x; i < (cols >> 2); i += SM_THREADS) {
      float4 q = __ldg(x4 + i);
      q.x = EXPF(q.x - m) * inv;
      q.y = EXPF(q.y - m) * inv;
      q.z = EXPF(q.z - m) * inv;
      q.w = EXPF(q.w - m) * inv;
      y4[i] = q;
    }
    return;
  }
#endif
  for (int c = threadIdx.x; c < cols; c += SM_THREADS)
    yr[c] = EXPF(__ldg(xr + c) - m) * inv;
}
#else
static __global__ void softmax_thread(const float *__restrict__ x, float *__restrict__ y, int rows,
                                      int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float *yr = y + (size_t)r * (size_t)cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; c++)
    m = fmaxf(m, xr[c]);
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += EXPF(xr[c] - m);
  for (int c = 0; c < cols; c++)
    yr[c] = EXPF(xr[c] - m) / s;
}
#endif

extern "C" void softmax(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return;
#if KV_MECH_BLOCK_PER_ROW
  bool vec = cols % 4 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)y % 16 == 0;
  if (vec)
    softmax_block<true><<<rows, SM_THREADS, 0, stream>>>(x, y, cols);
  else
    softmax_block<false><<<rows, SM_THREADS, 0, stream>>>(x, y, cols);
#else
  softmax_thread<<<(rows + 127) / 128, 128, 0, stream>>>(x, y, rows, cols);
#endif
}
