// rowsum, annotated expert (CUDA): its mechanisms marked so that `kevo
// lineage extract --surface cuda` walks it back, with no LLM, to one thread
// per row. The expert: a 256-thread block per row streams the row with
// coalesced (and, when aligned, 16-byte float4) loads, reduces in registers,
// then across each warp with shuffles and across warps through 8 floats of
// shared memory.
// kevo:mechanism COALESCE storage=global pipeline=rows-independent anchor="for (int c = threadIdx.x; c < cols; c += RS_THREADS)" -- a block per row whose threads read consecutive addresses (coalesced), instead of one thread per row striding through memory
// kevo:mechanism VEC4 requires=COALESCE dtypes=f32 anchor="float4 v = __ldg(x4 + i);" -- 16-byte float4 loads when the row is 16-byte aligned (cols % 4 == 0), scalar loads otherwise
// kevo:mechanism WARP_SHUFFLE requires=COALESCE anchor="v += __shfl_xor_sync(0xffffffffu, v, o);" -- reduce within each warp with register shuffles, then 8 partial sums through shared memory, instead of a shared-memory tree with a barrier per level
#include <cuda_runtime.h>
#include <stdint.h>

#define RS_THREADS 256

#if KV_MECH_COALESCE
#if KV_MECH_WARP_SHUFFLE
static __device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
#endif

template <bool VEC>
static __global__ void __launch_bounds__(RS_THREADS)
    rowsum_block(const float *__restrict__ x, float *__restrict__ y, int cols) {
  const float *xr = x + (size_t)blockIdx.x * (size_t)cols;
  float s = 0.0f;
#if KV_MECH_VEC4
  if (VEC) {
    const float4 *x4 = reinterpret_cast<const float4 *>(xr);
    int n4 = cols >> 2;
    for (int i = threadIdx.x; i < n4; i += RS_THREADS) {
      float4 v = __ldg(x4 + i);
      s += (v.x + v.y) + (v.z + v.w);
    }
  } else
#endif
  {
    for (int c = threadIdx.x; c < cols; c += RS_THREADS)
      s += __ldg(xr + c);
  }
#if KV_MECH_WARP_SHUFFLE
  __shared__ float warp_part[RS_THREADS / 32];
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
#else
  __shared__ float part[RS_THREADS];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = RS_THREADS / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[blockIdx.x] = part[0];
#endif
}
#else
static __global__ void rowsum_thread(const float *__restrict__ x, float *__restrict__ y, int rows,
                                     int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += xr[c];
  y[r] = s;
}
#endif

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  if (rows <= 0)
    return;
#if KV_MECH_COALESCE
  bool vec = (cols % 4 == 0) && ((uintptr_t)x % 16 == 0);
  if (vec)
    rowsum_block<true><<<rows, RS_THREADS, 0, stream>>>(x, y, cols);
  else
    rowsum_block<false><<<rows, RS_THREADS, 0, stream>>>(x, y, cols);
#else
  rowsum_thread<<<(rows + 255) / 256, 256, 0, stream>>>(x, y, rows, cols);
#endif
}
