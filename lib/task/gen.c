/* Deterministic input generation and f16/bf16 storage conversions.
 *
 * Element i of the sequence (seed, stream) comes from a counter-based
 * generator: block k = splitmix64-finalizer(key + (k+1) * golden), where key
 * mixes seed and stream. Floats of 24 bits and normal pairs take two elements
 * per block (i / 2), everything else one block per element, so any element
 * can be produced on its own: the result does not depend on chunking.
 *
 * The arithmetic is plain IEEE (+ - * / sqrt, floor and bit operations; no libm
 * transcendental functions and no FMA contraction: gen.c is compiled with
 * -ffp-contract=off), so the same inputs give the same bytes everywhere. */
#include "task_internal.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define GOLD 0x9e3779b97f4a7c15ULL

static inline uint64_t mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ULL;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z;
}

static uint64_t gen_key(uint64_t seed, uint64_t stream) {
  return mix64(mix64(seed + 0x632be59bd9b4e019ULL) ^ (stream * GOLD + 0x8cb92ba72f3d8dd7ULL));
}

static inline uint64_t block(uint64_t key, uint64_t k) {
  return mix64(key + (k + 1) * GOLD);
}

/* 24 random bits for element i (two elements per block). */
static inline uint32_t bits24(uint64_t key, uint64_t i) {
  uint64_t h = block(key, i >> 1);
  return (i & 1) ? (uint32_t)(h >> 8) & 0xffffffu : (uint32_t)(h >> 40);
}

/* ---- f16 / bf16 ------------------------------------------------------------ */

static inline uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static inline float f16_dec(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {
    float v = (float)man * 0x1p-24f; /* exact: zero or subnormal */
    return sign ? -v : v;
  }
  if (exp == 31)
    return u2f(sign | 0x7f800000u | (man << 13));
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t f16_enc(float f) {
  uint32_t x = f2u(f);
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

static inline float bf16_dec(uint16_t h) {
  return u2f((uint32_t)h << 16);
}

static inline uint16_t bf16_enc(float f) {
  uint32_t x = f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((x >> 16) | 0x0040);
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}

float kv_f16_to_f32(uint16_t h) {
  return f16_dec(h);
}

uint16_t kv_f32_to_f16(float f) {
  return f16_enc(f);
}

float kv_bf16_to_f32(uint16_t h) {
  return bf16_dec(h);
}

uint16_t kv_f32_to_bf16(float f) {
  return bf16_enc(f);
}

/* The 16-bit value just below h (f16 and bf16 are both sign-magnitude). */
static uint16_t below16(uint16_t h) {
  if ((h & 0x7fff) == 0)
    return 0x8001;
  return (h & 0x8000) ? (uint16_t)(h + 1) : (uint16_t)(h - 1);
}

double kv_elem_as_double(enum kv_dtype d, const void *buf, size_t i) {
  switch (d) {
  case KV_F32:
    return ((const float *)buf)[i];
  case KV_F64:
    return ((const double *)buf)[i];
  case KV_I32:
    return ((const int32_t *)buf)[i];
  case KV_I64:
    return (double)((const int64_t *)buf)[i];
  case KV_U8:
    return ((const uint8_t *)buf)[i];
  case KV_F16:
    return kv_f16_to_f32(((const uint16_t *)buf)[i]);
  case KV_BF16:
    return kv_bf16_to_f32(((const uint16_t *)buf)[i]);
  default:
    return 0;
  }
}

/* ---- deterministic log and sincos for Box-Muller --------------------------- */

/* ln(x) for normal x > 0: 2 atanh((m-1)/(m+1)) + e ln 2, m in [sqrt(1/2), sqrt(2)).
 * The split of x into m and e is done on the bits (exact); the series is
 * summed in a fixed order (Estrin), so the result is the same everywhere. */
static inline double det_log(double x) {
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
static inline void det_sincos2pi(double u, double *sn, double *cs) {
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

/* Standard normal draws for blocks k0 .. k0+cnt-1 (cnt <= NBATCH): z[2t] and
 * z[2t+1] are the draws of elements 2(k0+t) and 2(k0+t)+1. Batched so that
 * independent draws overlap. */
#define NBATCH 8
static void normal_batch(uint64_t key, uint64_t k0, int cnt, double *z) {
  double u1[NBATCH], u2[NBATCH], lg[NBATCH], sn[NBATCH], cs[NBATCH];
  for (int t = 0; t < cnt; t++) {
    uint64_t h = block(key, k0 + (uint64_t)t);
    u1[t] = (double)((h >> 32) + 1) * 0x1p-32;   /* (0, 1] */
    u2[t] = (double)(h & 0xffffffffu) * 0x1p-32; /* [0, 1) */
  }
  for (int t = 0; t < cnt; t++)
    lg[t] = det_log(u1[t]);
  for (int t = 0; t < cnt; t++)
    det_sincos2pi(u2[t], &sn[t], &cs[t]);
  for (int t = 0; t < cnt; t++) {
    double r = sqrt(-2.0 * lg[t]);
    z[2 * t] = r * cs[t];
    z[2 * t + 1] = r * sn[t];
  }
}

/* ---- storing ---------------------------------------------------------------- */

static void int_limits(enum kv_dtype d, double *lo, double *hi) {
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
static int64_t to_int(enum kv_dtype d, double x) {
  double lo, hi;
  int_limits(d, &lo, &hi);
  if (x != x)
    return 0;
  x = x < 0 ? -floor(-x + 0.5) : floor(x + 0.5);
  if (x <= lo)
    return d == KV_I64 ? INT64_MIN : (int64_t)lo;
  if (x >= hi)
    return d == KV_I64 ? INT64_MAX : (int64_t)hi;
  return (int64_t)x;
}

static void store(enum kv_dtype d, void *buf, size_t j, double x) {
  switch (d) {
  case KV_F32:
    ((float *)buf)[j] = (float)x;
    break;
  case KV_F64:
    ((double *)buf)[j] = x;
    break;
  case KV_F16:
    ((uint16_t *)buf)[j] = f16_enc((float)x);
    break;
  case KV_BF16:
    ((uint16_t *)buf)[j] = bf16_enc((float)x);
    break;
  case KV_I32:
    ((int32_t *)buf)[j] = (int32_t)to_int(d, x);
    break;
  case KV_I64:
    ((int64_t *)buf)[j] = to_int(d, x);
    break;
  case KV_U8:
    ((uint8_t *)buf)[j] = (uint8_t)to_int(d, x);
    break;
  default:
    break;
  }
}

static void store_int(enum kv_dtype d, void *buf, size_t j, int64_t v) {
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
    store(d, buf, j, (double)v);
    break;
  }
}

/* ---- distributions ------------------------------------------------------------ */

struct frange {
  float lo, top, scale; /* values lo + k * scale, k < 2^24, clamped to [lo, top] */
};

static struct frange f32_range(double lo, double hi) {
  struct frange r;
  float lf = (float)lo, hf = (float)hi;
  if (!(lf < hf)) { /* empty or NaN range: everything is lo */
    r.lo = r.top = lf == lf ? lf : 0.0f;
    r.scale = 0.0f;
    return r;
  }
  r.lo = lf;
  r.top = nextafterf(hf, -INFINITY);
  r.scale = (hf - lf) * 0x1p-24f;
  if (!isfinite(r.scale)) /* cannot happen for finite float lo, hi; stay safe */
    r.scale = 0x1p103f;
  return r;
}

static inline float f32_from_bits(const struct frange *r, uint32_t k) {
  float v = r->lo + (float)k * r->scale;
  v = v > r->top ? r->top : v;
  return v < r->lo ? r->lo : v;
}

static void f32_uniform(float *o, size_t n, uint64_t first, uint64_t key, double lo, double hi) {
  struct frange r = f32_range(lo, hi);
  size_t j = 0;
  uint64_t i = first;
  if (n && (i & 1)) {
    o[j++] = f32_from_bits(&r, bits24(key, i));
    i++;
  }
  for (; j + 1 < n; j += 2, i += 2) {
    uint64_t h = block(key, i >> 1);
    o[j] = f32_from_bits(&r, (uint32_t)(h >> 40));
    o[j + 1] = f32_from_bits(&r, (uint32_t)(h >> 8) & 0xffffffu);
  }
  if (j < n)
    o[j] = f32_from_bits(&r, bits24(key, i));
}

/* f16 / bf16: the f32 draws converted, then held in [lo, hi) of the 16-bit
 * format (rounding may reach hi or fall below lo). */
static void f16_uniform(enum kv_dtype d, uint16_t *o, size_t n, uint64_t first, uint64_t key,
                        double lo, double hi) {
  int bf = d == KV_BF16;
  uint16_t lo16 = bf ? bf16_enc((float)lo) : f16_enc((float)lo);
  uint16_t hi16 = bf ? bf16_enc((float)hi) : f16_enc((float)hi);
  float lov = bf ? bf16_dec(lo16) : f16_dec(lo16), hiv = bf ? bf16_dec(hi16) : f16_dec(hi16);
  if (!(lov < hiv)) {
    for (size_t j = 0; j < n; j++)
      o[j] = lo16;
    return;
  }
  uint16_t top16 = below16(hi16);
  float tmp[256];
  for (size_t j0 = 0; j0 < n; j0 += 256) {
    size_t m = n - j0 < 256 ? n - j0 : 256;
    f32_uniform(tmp, m, first + j0, key, lo, hi);
    if (bf) {
      for (size_t j = 0; j < m; j++) {
        uint16_t h = bf16_enc(tmp[j]);
        float v = bf16_dec(h);
        o[j0 + j] = v >= hiv ? top16 : v < lov ? lo16 : h;
      }
    } else {
      for (size_t j = 0; j < m; j++) {
        uint16_t h = f16_enc(tmp[j]);
        float v = f16_dec(h);
        o[j0 + j] = v >= hiv ? top16 : v < lov ? lo16 : h;
      }
    }
  }
}

static void f64_uniform(double *o, size_t n, uint64_t first, uint64_t key, double lo, double hi) {
  int empty = !(lo < hi);
  double top = empty ? lo : nextafter(hi, -INFINITY), span = hi - lo;
  if (lo != lo)
    lo = top = 0;
  for (size_t j = 0; j < n; j++) {
    double u = (double)(block(key, first + j) >> 11) * 0x1p-53;
    double v = empty ? lo : lo + span * u;
    v = v > top ? top : v;
    o[j] = v < lo ? lo : v;
  }
}

void kv_gen_fill_at(enum kv_dtype d, const struct kv_init *init, uint64_t seed, uint64_t stream,
                    uint64_t first, void *buf, size_t n) {
  if (!buf || n == 0 || (unsigned)d >= KV_DTYPE_COUNT)
    return;
  uint64_t key = gen_key(seed, stream);
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
      f32_uniform(buf, n, first, key, a, b);
    } else if (d == KV_F16 || d == KV_BF16) {
      f16_uniform(d, buf, n, first, key, a, b);
    } else if (d == KV_F64) {
      f64_uniform(buf, n, first, key, a, b);
    } else { /* integers: rounded uniform doubles (task.json asks for dist int) */
      int empty = !(a < b);
      for (size_t j = 0; j < n; j++) {
        double u = (double)(block(key, first + j) >> 11) * 0x1p-53;
        store(d, buf, j, empty ? a : a + (b - a) * u);
      }
    }
    break;
  case KV_DIST_NORMAL: {
    double z[2 * NBATCH];
    uint64_t end = first + n; /* elements first .. end-1 */
    for (uint64_t k = first >> 1; 2 * k < end; k += NBATCH) {
      uint64_t left = ((end - 2 * k) + 1) / 2;
      int cnt = left < NBATCH ? (int)left : NBATCH;
      normal_batch(key, k, cnt, z);
      for (int t = 0; t < 2 * cnt; t++) {
        uint64_t i = 2 * k + (uint64_t)t;
        if (i >= first && i < end)
          store(d, buf, (size_t)(i - first), a + b * z[t]);
      }
    }
    break;
  }
  case KV_DIST_INT:
  default: {
    double llo, lhi;
    int_limits(kv_dtype_is_float(d) ? KV_F64 : d, &llo, &lhi);
    if (d == KV_I64) /* keep the range computable in 64 bits */
      llo = -9007199254740992.0 * 512, lhi = 9007199254740992.0 * 512;
    a = a != a ? 0 : a < llo ? llo : a > lhi ? lhi : a;
    b = b != b ? 0 : b < llo ? llo : b > lhi ? lhi : b;
    int64_t lo = (int64_t)ceil(a), hi = (int64_t)floor(b);
    if (hi < lo)
      hi = lo;
    uint64_t range = (uint64_t)(hi - lo) + 1;
    for (size_t j = 0; j < n; j++) {
      uint64_t h = block(key, first + j);
      uint64_t k = (uint64_t)(((unsigned __int128)h * range) >> 64);
      store_int(d, buf, j, lo + (int64_t)k);
    }
    break;
  }
  }
}

void kv_gen_fill(enum kv_dtype d, const struct kv_init *init, uint64_t seed, uint64_t stream,
                 void *buf, size_t n) {
  kv_gen_fill_at(d, init, seed, stream, 0, buf, n);
}

void kv_gen_scalar(const struct kv_param *p, uint64_t seed, void *out) {
  if (!p || !out)
    return;
  if (p->has_value) {
    store(p->dtype, out, 0, p->value);
    return;
  }
  /* The stream is a hash of the name, so scalars do not depend on order. */
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char *s = p->name; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  kv_gen_fill(p->dtype, &p->init, seed, h ^ 0x5ca1a75ca1a75ca1ULL, out, 1);
}
