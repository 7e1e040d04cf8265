/* kevo's input generator on the GPU: the same bytes as kv_gen_fill_at on the
 * host (lib/task/gen.c), from the same per-element arithmetic (gen_core.h).
 *
 * Compiled at build time to PTX for the lowest virtual architecture nvcc
 * offers, with -fmad=false (no FMA contraction: every + and * rounds on its
 * own, as on the host) and IEEE division and square root, without flushing
 * subnormals; the driver compiles the PTX for whatever GPU is present.
 * worker/cuda_gen.c embeds it, loads it and launches these kernels.
 *
 * Every kernel takes (plan, dst, first, n) and writes elements first ..
 * first+n-1 of the plan's sequence to dst[0 .. n-1]. The pair kernels give
 * each thread one block of the generator (elements 2k and 2k+1); the element
 * kernel one element. Grid-stride loops: any grid size gives the same bytes. */
#include "gen_core.h"

template <typename T> struct alignas(2 * sizeof(T)) kvg_pair { T x, y; };

/* Elements i0 and i0+1 (values v0, v1) into dst, where they fall in
 * [first, end); one vector store when both do and the address allows. */
template <typename T>
__device__ __forceinline__ void put2(void *dst, uint64_t i0, uint64_t first, uint64_t end, T v0,
                                     T v1) {
  T *o = (T *)dst;
  if (i0 >= first && i0 + 1 < end) {
    T *q = o + (i0 - first);
    if (((uintptr_t)q & (2 * sizeof(T) - 1)) == 0) {
      kvg_pair<T> pr = {v0, v1};
      *(kvg_pair<T> *)q = pr;
    } else {
      q[0] = v0;
      q[1] = v1;
    }
    return;
  }
  if (i0 >= first && i0 < end)
    o[i0 - first] = v0;
  if (i0 + 1 >= first && i0 + 1 < end)
    o[i0 + 1 - first] = v1;
}

/* Doubles x0, x1 stored as dtype D (type T) through kvg_store's conversions. */
template <typename T, int D>
__device__ __forceinline__ void put2_as(void *dst, uint64_t i0, uint64_t first, uint64_t end,
                                        double x0, double x1) {
  T v0, v1;
  kvg_store(D, &v0, 0, x0);
  kvg_store(D, &v1, 0, x1);
  put2<T>(dst, i0, first, end, v0, v1);
}

#define KVG_GRID_LOOP(t, count)                                                                    \
  for (uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; t < (count);                  \
       t += (uint64_t)gridDim.x * blockDim.x)

/* Blocks first/2 .. (first+n-1)/2 cover elements first .. first+n-1. */
__device__ __forceinline__ uint64_t kvg_nblocks(uint64_t first, uint64_t n) {
  return ((first + n - 1) >> 1) - (first >> 1) + 1;
}

extern "C" __global__ void __launch_bounds__(256)
    kvg_f32_uniform(const struct kvg_plan p, void *dst, uint64_t first, uint64_t n) {
  uint64_t end = first + n, k0 = first >> 1;
  KVG_GRID_LOOP(t, kvg_nblocks(first, n)) {
    uint64_t k = k0 + t, h = kvg_block(p.key, k);
    put2<float>(dst, 2 * k, first, end, kvg_f32_from_bits(&p, kvg_bits24_hi(h)),
                kvg_f32_from_bits(&p, kvg_bits24_lo(h)));
  }
}

extern "C" __global__ void __launch_bounds__(256)
    kvg_h16_uniform(const struct kvg_plan p, void *dst, uint64_t first, uint64_t n) {
  uint64_t end = first + n, k0 = first >> 1;
  KVG_GRID_LOOP(t, kvg_nblocks(first, n)) {
    uint64_t k = k0 + t, h = kvg_block(p.key, k);
    put2<uint16_t>(dst, 2 * k, first, end,
                   kvg_h16_from_f32(&p, kvg_f32_from_bits(&p, kvg_bits24_hi(h))),
                   kvg_h16_from_f32(&p, kvg_f32_from_bits(&p, kvg_bits24_lo(h))));
  }
}

extern "C" __global__ void __launch_bounds__(256)
    kvg_normal(const struct kvg_plan p, void *dst, uint64_t first, uint64_t n) {
  uint64_t end = first + n, k0 = first >> 1;
  KVG_GRID_LOOP(t, kvg_nblocks(first, n)) {
    uint64_t k = k0 + t;
    double z0, z1;
    kvg_normal_pair(kvg_block(p.key, k), &z0, &z1);
    double x0 = p.a + p.b * z0, x1 = p.a + p.b * z1;
    switch (p.dtype) {
    case KV_F32:
      put2_as<float, KV_F32>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_F64:
      put2_as<double, KV_F64>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_I32:
      put2_as<int32_t, KV_I32>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_I64:
      put2_as<int64_t, KV_I64>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_U8:
      put2_as<uint8_t, KV_U8>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_F16:
      put2_as<uint16_t, KV_F16>(dst, 2 * k, first, end, x0, x1);
      break;
    case KV_BF16:
      put2_as<uint16_t, KV_BF16>(dst, 2 * k, first, end, x0, x1);
      break;
    }
  }
}

/* One block per element: f64 uniform, integer uniform, int, constant f16/bf16. */
extern "C" __global__ void __launch_bounds__(256)
    kvg_elems(const struct kvg_plan p, void *dst, uint64_t first, uint64_t n) {
  KVG_GRID_LOOP(j, n) {
    uint64_t h = kvg_block(p.key, first + j);
    switch (p.mode) {
    case KVG_F64_UNIFORM:
      ((double *)dst)[j] = kvg_f64_uniform(&p, h);
      break;
    case KVG_INT_UNIFORM:
      kvg_store(p.dtype, dst, j, kvg_int_uniform(&p, h));
      break;
    case KVG_H16_CONST:
      ((uint16_t *)dst)[j] = p.lo16;
      break;
    default:
      kvg_store_int(p.dtype, dst, j, kvg_int_draw(&p, h));
      break;
    }
  }
}

/* Not the generator: the gather of a sampled validation. dst[s] =
 * src[kvg_sample_index(seed, p, n, k, s)] for s < k < n, elements of esize
 * bytes (1, 2, 4 or 8): the elements kv_sample_indices picks on the host. */
extern "C" __global__ void __launch_bounds__(256)
    kvg_gather(const unsigned char *src, uint64_t seed, int p, uint64_t n, uint64_t k,
               unsigned esize, unsigned char *dst) {
  KVG_GRID_LOOP(i, k) {
    const unsigned char *s = src + kvg_sample_index(seed, p, n, k, i) * esize;
    unsigned char *d = dst + i * esize;
    switch (esize) {
    case 8:
      *(uint64_t *)d = *(const uint64_t *)s;
      break;
    case 4:
      *(uint32_t *)d = *(const uint32_t *)s;
      break;
    case 2:
      *(uint16_t *)d = *(const uint16_t *)s;
      break;
    default:
      for (unsigned b = 0; b < esize; b++)
        d[b] = s[b];
      break;
    }
  }
}
