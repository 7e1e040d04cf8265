/* The per-element arithmetic of kevo's input generator, shared by the host
 * (gen.c, compiled by gcc or clang with -ffp-contract=off) and the device
 * (worker/gen_kernels.cu, compiled by nvcc to PTX with -fmad=false and
 * IEEE division and square root), so that both give the same bytes.
 *
 * Element i of the sequence (seed, stream) comes from a counter-based
 * generator: block k = splitmix64-finalizer(key + (k+1) * golden), where key
 * mixes seed and stream. Floats of 24 bits and normal pairs take two elements
 * per block (i / 2), everything else one block per element, so any element
 * can be produced on its own.
 *
 * Only plain IEEE operations appear here (+ - * / sqrt, floor, conversions
 * and bit operations), each written out in a fixed order: no libm
 * transcendental function, and nothing a compiler may contract into an FMA
 * under the flags above. What depends only on the dtype and the init (the
 * "plan") is computed once on the host by kvg_plan_make. */
#ifndef KEVO_GEN_CORE_H
#define KEVO_GEN_CORE_H

#include <stdint.h>
#include <string.h>

#include "kevo/task.h"

#if defined(__CUDACC__)
#define KVG_FN static inline __host__ __device__
#else
#include <math.h>
#define KVG_FN static inline
#endif

#if defined(__clang__) && !defined(__CUDACC__)
#pragma STDC FP_CONTRACT OFF
#endif

#define KVG_GOLD 0x9e3779b97f4a7c15ULL

/* The element of stratum s, [lo, lo + w), that sample `seed` of param p
 * picks: splitmix64's s+1-th number from the param's state, scaled. */
KVG_FN uint64_t kvg_sample_pick(uint64_t seed, int p, uint64_t s, uint64_t lo, uint64_t w) {
  uint64_t z = (seed ^ ((uint64_t)(p + 1) * 0xd6e8feb86659fd93ULL)) + (s + 1) * KVG_GOLD;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return lo + (((z >> 32) * w) >> 32);
}

/* Index s (0 <= s < k < n) of sample `seed` of param p over n elements
 * (kevo/runtime.h, kv_sample_indices, which walks the strata without
 * dividing): the pick in stratum s, [s*n/k, (s+1)*n/k). Integer arithmetic
 * only, so the host and the device gather the same elements. Strata are
 * narrower than 2^32 elements (n < 2^50). */
KVG_FN uint64_t kvg_sample_index(uint64_t seed, int p, uint64_t n, uint64_t k, uint64_t s) {
  uint64_t q = n / k, r = n % k;
  uint64_t lo = s * q + s * r / k, hi = (s + 1) * q + (s + 1) * r / k;
  return kvg_sample_pick(seed, p, s, lo, hi - lo);
}

/* How a plan produces its elements. */
enum kvg_mode {
  KVG_F32_UNIFORM, /* f32: two 24-bit draws per block */
  KVG_H16_UNIFORM, /* f16, bf16: the f32 draws, converted and held in range */
  KVG_H16_CONST,   /* f16, bf16 with an empty range: every element lo16 */
  KVG_F64_UNIFORM, /* f64: 53 bits per block */
  KVG_INT_UNIFORM, /* integer dtypes, dist uniform: rounded uniform doubles */
  KVG_NORMAL,      /* any dtype: Box-Muller, two draws per block */
  KVG_INT,         /* any dtype: integers in [ilo, ilo + range) */
  KVG_MODE_COUNT
};

/* Everything a fill needs beyond (first, n): made on the host, passed by value
 * to the device kernels (fixed-width members, no implicit padding). */
struct kvg_plan {
  uint64_t key;
  int32_t dtype, mode;
  float flo, ftop, fscale; /* f32 values flo + k * fscale, k < 2^24, held in [flo, ftop] */
  float lov, hiv;          /* h16: the 16-bit lo and hi as floats */
  uint16_t lo16, top16;    /* h16: lo, and the value just below hi */
  int32_t empty;           /* f64 / int uniform: the range is empty (every element lo) */
  int32_t pad_;
  double a, b;    /* f64 / int uniform: lo (a), span (b); normal: mean (a), std (b) */
  double top;     /* f64 uniform: the largest value below hi */
  int64_t ilo;    /* int: lowest value */
  uint64_t range; /* int: number of values */
};

/* ---- the counter-based generator -------------------------------------------- */

KVG_FN uint64_t kvg_mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

KVG_FN uint64_t kvg_key(uint64_t seed, uint64_t stream) {
  return kvg_mix64(kvg_mix64(seed + 0x632be59bd9b4e019ULL) ^
                   (stream * KVG_GOLD + 0x8cb92ba72f3d8dd7ULL));
}

KVG_FN uint64_t kvg_block(uint64_t key, uint64_t k) {
  return kvg_mix64(key + (k + 1) * KVG_GOLD);
}

/* The 24 random bits of element 2k (hi) and 2k+1 (lo) in block h. */
KVG_FN uint32_t kvg_bits24_hi(uint64_t h) {
  return (uint32_t)(h >> 40);
}

KVG_FN uint32_t kvg_bits24_lo(uint64_t h) {
  return (uint32_t)(h >> 8) & 0xffffffu;
}

/* 24 random bits for element i (two elements per block). */
KVG_FN uint32_t kvg_bits24(uint64_t key, uint64_t i) {
  uint64_t h = kvg_block(key, i >> 1);
  return (i & 1) ? kvg_bits24_lo(h) : kvg_bits24_hi(h);
}

/* A double in [0, 1) of 53 bits. */
KVG_FN double kvg_unit53(uint64_t h) {
  return (double)(h >> 11) * 0x1p-53;
}

/* The high 64 bits of h * range. */
KVG_FN uint64_t kvg_mulhi64(uint64_t h, uint64_t range) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(h, range);
#else
  return (uint64_t)(((unsigned __int128)h * range) >> 64);
#endif
}

/* ---- bits, f16 / bf16 -------------------------------------------------------- */

KVG_FN uint32_t kvg_f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

KVG_FN float kvg_u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

KVG_FN float kvg_f16_dec(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {
    float v = (float)man * 0x1p-24f; /* exact: zero or subnormal */
    return sign ? -v : v;
  }
  if (exp == 31)
    return kvg_u2f(sign | 0x7f800000u | (man << 13));
  return kvg_u2f(sign | ((exp + 112) << 23) | (man << 13));
}

KVG_FN uint16_t kvg_f16_enc(float f) {
  uint32_t x = kvg_f2u(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) /* NaN: keep it quiet and keep the top payload bits */
    return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
  if (ax >= 0x477ff000u) /* >= 65520 (or inf) rounds to inf */
    return (uint16_t)(sign | 0x7c00);
  if (ax < 0x38800000u) { /* below 2^-14: f16 subnormal or zero */
    uint32_t e = ax >> 23;
    if (e < 102) /* below 2^-25: rounds to zero */
      return sign;
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e; /* 14..24 */
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1)))
      r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ax - 0x38000000u; /* rebias the exponent from 127 to 15 */
  uint32_t h = r >> 13, rem = r & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
    h++;
  return (uint16_t)(sign | h);
}

KVG_FN float kvg_bf16_dec(uint16_t h) {
  return kvg_u2f((uint32_t)h << 16);
}

KVG_FN uint16_t kvg_bf16_enc(float f) {
  uint32_t x = kvg_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x0040);
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

/* The 16-bit value just below h (f16 and bf16 are both sign-magnitude). */
KVG_FN uint16_t kvg_below16(uint16_t h) {
  if ((h & 0x7fff) == 0)
    return 0x8001;
  return (h & 0x8000) ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

/* ---- deterministic log and sincos for Box-Muller ------------------------------ */

/* ln(x) for normal x > 0: 2 atanh((m-1)/(m+1)) + e ln 2, m in [sqrt(1/2), sqrt(2)).
 * The split of x into m and e is done on the bits (exact); the series is
 * summed in a fixed order (Estrin), so the result is the same everywhere. */
KVG_FN double kvg_det_log(double x) {
  uint64_t b;
  memcpy(&b, &x, 8);
  int64_t e = (int64_t)((b >> 52) & 0x7ff) - 1022;
  b = (b & 0x000fffffffffffffULL) | 0x3fe0000000000000ULL; /* m in [0.5, 1) */
  double m;
  memcpy(&m, &b, 8);
  int lowm = m < 0.70710678118654752440;
  m = lowm ? m * 2.0 : m;
  e -= lowm;
  double s = (m - 1.0) / (m + 1.0), s2 = s * s, s4 = s2 * s2, s8 = s4 * s4;
  /* sum of s2^k / (2k+1), k = 0..10: the k = 10 term is below 2^-55 */
  double q0 = 1.0 + s2 * (1.0 / 3), q1 = 1.0 / 5 + s2 * (1.0 / 7), q2 = 1.0 / 9 + s2 * (1.0 / 11),
         q3 = 1.0 / 13 + s2 * (1.0 / 15), q4 = 1.0 / 17 + s2 * (1.0 / 19), q5 = 1.0 / 21;
  double r0 = q0 + s4 * q1, r1 = q2 + s4 * q3, r2 = q4 + s4 * q5;
  double p = (r0 + s8 * r1) + (s8 * s8) * r2;
  return 2.0 * s * p + (double)e * 0.69314718055994530942;
}

/* sin and cos of 2 pi u for u in [0, 1): quadrant reduction (exact) and
 * Taylor series on [-pi/4, pi/4], summed in a fixed order. */
KVG_FN void kvg_det_sincos2pi(double u, double *sn, double *cs) {
  double t = u * 4.0;
  double q = floor(t + 0.5);
  double x = (t - q) * 1.57079632679489661923;
  double x2 = x * x, x4 = x2 * x2, x8 = x4 * x4;
  double sa = 1.0 - x2 * (1.0 / 6), sb = 1.0 / 120 - x2 * (1.0 / 5040),
         sc = 1.0 / 362880 - x2 * (1.0 / 39916800),
         sd = 1.0 / 6227020800.0 - x2 * (1.0 / 1307674368000.0), se = 1.0 / 355687428096000.0;
  double sp = x * (((sa + x4 * sb) + x8 * (sc + x4 * sd)) + (x8 * x8) * se);
  double ca = 1.0 - x2 * (1.0 / 2), cb = 1.0 / 24 - x2 * (1.0 / 720),
         cc = 1.0 / 40320 - x2 * (1.0 / 3628800),
         cd = 1.0 / 479001600.0 - x2 * (1.0 / 87178291200.0),
         ce = 1.0 / 20922789888000.0 - x2 * (1.0 / 6402373705728000.0);
  double cp = ((ca + x4 * cb) + x8 * (cc + x4 * cd)) + (x8 * x8) * ce;
  int qi = (int)q & 3;
  double sv = (qi & 1) ? cp : sp, cv = (qi & 1) ? sp : cp;
  *sn = (qi & 2) ? -sv : sv;
  *cs = ((qi + 1) & 2) ? -cv : cv;
}

/* Box-Muller in steps (the host interleaves several draws between them):
 * u1 in (0, 1] and u2 in [0, 1) from one block; radius from ln u1. */
KVG_FN double kvg_normal_u1(uint64_t h) {
  return (double)((h >> 32) + 1) * 0x1p-32;
}

KVG_FN double kvg_normal_u2(uint64_t h) {
  return (double)(h & 0xffffffffu) * 0x1p-32;
}

KVG_FN double kvg_normal_radius(double lg) {
  return sqrt(-2.0 * lg);
}

/* The standard normal draws of elements 2k (*z0) and 2k+1 (*z1) of block h. */
KVG_FN void kvg_normal_pair(uint64_t h, double *z0, double *z1) {
  double lg = kvg_det_log(kvg_normal_u1(h)), sn, cs;
  kvg_det_sincos2pi(kvg_normal_u2(h), &sn, &cs);
  double r = kvg_normal_radius(lg);
  *z0 = r * cs;
  *z1 = r * sn;
}

/* ---- values ------------------------------------------------------------------ */

KVG_FN float kvg_f32_from_bits(const struct kvg_plan *p, uint32_t k) {
  float v = p->flo + (float)k * p->fscale;
  v = v > p->ftop ? p->ftop : v;
  return v < p->flo ? p->flo : v;
}

/* An f32 uniform draw held in [lo, hi) of the 16-bit format. */
KVG_FN uint16_t kvg_h16_from_f32(const struct kvg_plan *p, float f) {
  if (p->dtype == KV_BF16) {
    uint16_t h = kvg_bf16_enc(f);
    float v = kvg_bf16_dec(h);
    return v >= p->hiv ? p->top16 : v < p->lov ? p->lo16 : h;
  }
  uint16_t h = kvg_f16_enc(f);
  float v = kvg_f16_dec(h);
  return v >= p->hiv ? p->top16 : v < p->lov ? p->lo16 : h;
}

KVG_FN double kvg_f64_uniform(const struct kvg_plan *p, uint64_t h) {
  double u = kvg_unit53(h);
  double v = p->empty ? p->a : p->a + p->b * u;
  v = v > p->top ? p->top : v;
  return v < p->a ? p->a : v;
}

/* The double that KVG_INT_UNIFORM rounds. */
KVG_FN double kvg_int_uniform(const struct kvg_plan *p, uint64_t h) {
  double u = kvg_unit53(h);
  return p->empty ? p->a : p->a + p->b * u;
}

KVG_FN int64_t kvg_int_draw(const struct kvg_plan *p, uint64_t h) {
  return p->ilo + (int64_t)kvg_mulhi64(h, p->range);
}

/* ---- storing ------------------------------------------------------------------ */

KVG_FN void kvg_int_limits(int d, double *lo, double *hi) {
  switch (d) {
  case KV_I32:
    *lo = -2147483648.0;
    *hi = 2147483647.0;
    break;
  case KV_U8:
    *lo = 0;
    *hi = 255;
    break;
  case KV_I64:
    *lo = -9223372036854775808.0;
    *hi = 9223372036854775807.0; /* rounds to 2^63: clamped below */
    break;
  default: /* exact integers in a double */
    *lo = -9007199254740992.0;
    *hi = 9007199254740992.0;
    break;
  }
}

/* Rounds half away from zero and saturates to the integer dtype. */
KVG_FN int64_t kvg_to_int(int d, double x) {
  double lo, hi;
  kvg_int_limits(d, &lo, &hi);
  if (x != x)
    return 0;
  x = x < 0 ? -floor(-x + 0.5) : floor(x + 0.5);
  if (x <= lo)
    return d == KV_I64 ? INT64_MIN : (int64_t)lo;
  if (x >= hi)
    return d == KV_I64 ? INT64_MAX : (int64_t)hi;
  return (int64_t)x;
}

KVG_FN void kvg_store(int d, void *buf, size_t j, double x) {
  switch (d) {
  case KV_F32:
    ((float *)buf)[j] = (float)x;
    break;
  case KV_F64:
    ((double *)buf)[j] = x;
    break;
  case KV_F16:
    ((uint16_t *)buf)[j] = kvg_f16_enc((float)x);
    break;
  case KV_BF16:
    ((uint16_t *)buf)[j] = kvg_bf16_enc((float)x);
    break;
  case KV_I32:
    ((int32_t *)buf)[j] = (int32_t)kvg_to_int(d, x);
    break;
  case KV_I64:
    ((int64_t *)buf)[j] = kvg_to_int(d, x);
    break;
  case KV_U8:
    ((uint8_t *)buf)[j] = (uint8_t)kvg_to_int(d, x);
    break;
  default:
    break;
  }
}

KVG_FN void kvg_store_int(int d, void *buf, size_t j, int64_t v) {
  switch (d) {
  case KV_I32:
    ((int32_t *)buf)[j] = (int32_t)v;
    break;
  case KV_I64:
    ((int64_t *)buf)[j] = v;
    break;
  case KV_U8:
    ((uint8_t *)buf)[j] = (uint8_t)v;
    break;
  default:
    kvg_store(d, buf, j, (double)v);
    break;
  }
}

/* ---- the plan (host only) ------------------------------------------------------ */

#if !defined(__CUDACC__)

/* f32 values lo + k * scale, k < 2^24, clamped to [lo, top]. */
static inline void kvg_f32_range(struct kvg_plan *p, double lo, double hi) {
  float lf = (float)lo, hf = (float)hi;
  if (!(lf < hf)) { /* empty or NaN range: everything is lo */
    p->flo = p->ftop = lf == lf ? lf : 0.0f;
    p->fscale = 0.0f;
    return;
  }
  p->flo = lf;
  p->ftop = nextafterf(hf, -INFINITY);
  p->fscale = (hf - lf) * 0x1p-24f;
  if (!isfinite(p->fscale)) /* cannot happen for finite float lo, hi; stay safe */
    p->fscale = 0x1p103f;
}

/* The plan of dtype d (< KV_DTYPE_COUNT) under init (NULL: the default). */
static inline void kvg_plan_make(struct kvg_plan *p, enum kv_dtype d, const struct kv_init *init,
                                 uint64_t seed, uint64_t stream) {
  memset(p, 0, sizeof *p);
  p->key = kvg_key(seed, stream);
  p->dtype = (int32_t)d;
  enum kv_dist dist = init ? init->dist : KV_DIST_DEFAULT;
  double a = init ? init->a : 0, b = init ? init->b : 0;
  if (dist == KV_DIST_DEFAULT) {
    if (kv_dtype_is_float(d))
      dist = KV_DIST_UNIFORM, a = -1, b = 1;
    else if (d == KV_U8)
      dist = KV_DIST_INT, a = 0, b = 255;
    else
      dist = KV_DIST_INT, a = -100, b = 100;
  }
  switch (dist) {
  case KV_DIST_UNIFORM:
    if (d == KV_F32) {
      p->mode = KVG_F32_UNIFORM;
      kvg_f32_range(p, a, b);
    } else if (d == KV_F16 || d == KV_BF16) {
      /* the f32 draws converted, then held in [lo, hi) of the 16-bit format
       * (rounding may reach hi or fall below lo) */
      int bf = d == KV_BF16;
      p->mode = KVG_H16_UNIFORM;
      kvg_f32_range(p, a, b);
      p->lo16 = bf ? kvg_bf16_enc((float)a) : kvg_f16_enc((float)a);
      uint16_t hi16 = bf ? kvg_bf16_enc((float)b) : kvg_f16_enc((float)b);
      p->lov = bf ? kvg_bf16_dec(p->lo16) : kvg_f16_dec(p->lo16);
      p->hiv = bf ? kvg_bf16_dec(hi16) : kvg_f16_dec(hi16);
      if (!(p->lov < p->hiv))
        p->mode = KVG_H16_CONST;
      p->top16 = kvg_below16(hi16);
    } else if (d == KV_F64) {
      p->mode = KVG_F64_UNIFORM;
      p->empty = !(a < b);
      p->top = p->empty ? a : nextafter(b, -INFINITY);
      p->b = b - a;
      p->a = a;
      if (a != a)
        p->a = p->top = 0;
    } else { /* integers: rounded uniform doubles (task.json asks for dist int) */
      p->mode = KVG_INT_UNIFORM;
      p->empty = !(a < b);
      p->a = a;
      p->b = b - a;
    }
    break;
  case KV_DIST_NORMAL:
    p->mode = KVG_NORMAL;
    p->a = a;
    p->b = b;
    break;
  case KV_DIST_INT:
  default: {
    p->mode = KVG_INT;
    double llo, lhi;
    kvg_int_limits(kv_dtype_is_float(d) ? KV_F64 : d, &llo, &lhi);
    if (d == KV_I64) /* keep the range computable in 64 bits */
      llo = -9007199254740992.0 * 512, lhi = 9007199254740992.0 * 512;
    a = a != a ? 0 : a < llo ? llo : a > lhi ? lhi : a;
    b = b != b ? 0 : b < llo ? llo : b > lhi ? lhi : b;
    int64_t lo = (int64_t)ceil(a), hi = (int64_t)floor(b);
    if (hi < lo)
      hi = lo;
    p->ilo = lo;
    p->range = (uint64_t)(hi - lo) + 1;
    break;
  }
  }
}

#endif /* !__CUDACC__ */

#endif
