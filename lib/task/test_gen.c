/* Deterministic generation and f16/bf16 conversions: known bit patterns,
 * exhaustive round trips, a reference rounding, determinism (golden hashes),
 * chunk independence, distribution sanity for every dtype and dist, speed. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kevo/task.h"

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- conversions ------------------------------------------------------------ */

static void test_f16_known(void **state) {
  (void)state;
  static const struct {
    float f;
    uint16_t h;
  } to16[] = {
      {0.0f, 0x0000},         {-0.0f, 0x8000},       {1.0f, 0x3c00},
      {-2.0f, 0xc000},        {0.5f, 0x3800},        {65504.0f, 0x7bff}, /* largest finite */
      {65519.99f, 0x7bff}, /* just below the rounding boundary */
      {65520.0f, 0x7c00},  /* ties to even: overflows to inf */
      {1e10f, 0x7c00},        {-1e10f, 0xfc00},      {0x1p-14f, 0x0400}, /* smallest normal */
      {0x1p-24f, 0x0001},                                                /* smallest subnormal */
      {0x1p-25f, 0x0000},     /* tie between 0 and 2^-24: to even (0) */
      {0x1.8p-25f, 0x0001},   /* 0.75 ulp: up */
      {0x1.8p-24f, 0x0002},   /* 1.5 ulp: tie, to even (2) */
      {0x1.4p-23f, 0x0002},   /* 2.5 ulp: tie, to even (2) */
      {0x1.ff8p-15f, 0x03ff}, /* largest subnormal */
      {0x1.ffcp-15f, 0x0400}, /* largest subnormal + half ulp: tie, to even (normal) */
      {0x1p-26f, 0x0000},     {1e-30f, 0x0000},      {0x1.004p0f, 0x3c01}, /* 1 + 2^-10: exact */
      {0x1.001p0f, 0x3c00},                                                /* 1 + 2^-12: down */
      {0x1.002p0f, 0x3c00},  /* 1 + 2^-11: tie, to even (down) */
      {0x1.006p0f, 0x3c02},  /* 1 + 3*2^-11: tie, to even (up) */
      {0x1.0021p0f, 0x3c01}, /* just above the tie: up */
      {0.1f, 0x2e66},         {3.14159265f, 0x4248}, {1.0f / 3.0f, 0x3555},
  };
  for (size_t i = 0; i < sizeof to16 / sizeof to16[0]; i++) {
    uint16_t h = kv_f32_to_f16(to16[i].f);
    if (h != to16[i].h)
      fail_msg("f32 %a -> f16 0x%04x, expected 0x%04x", (double)to16[i].f, h, to16[i].h);
  }
  assert_int_equal(kv_f32_to_f16(INFINITY), 0x7c00);
  assert_int_equal(kv_f32_to_f16(-INFINITY), 0xfc00);
  uint16_t nan = kv_f32_to_f16(NAN);
  assert_true((nan & 0x7c00) == 0x7c00 && (nan & 0x3ff) != 0);
  uint16_t nneg = kv_f32_to_f16(bitsf(0xff800001u)); /* signalling NaN, tiny payload */
  assert_true((nneg & 0xfc00) == 0xfc00 && (nneg & 0x3ff) != 0);

  assert_true(kv_f16_to_f32(0x3c00) == 1.0f);
  assert_true(kv_f16_to_f32(0x7bff) == 65504.0f);
  assert_true(kv_f16_to_f32(0x0001) == 0x1p-24f);
  assert_true(kv_f16_to_f32(0x03ff) == 0x1.ff8p-15f);
  assert_true(kv_f16_to_f32(0x0400) == 0x1p-14f);
  assert_int_equal(fbits(kv_f16_to_f32(0x8000)), 0x80000000u);
  assert_true(kv_f16_to_f32(0x7c00) == INFINITY);
  assert_true(kv_f16_to_f32(0xfc00) == -INFINITY);
  assert_true(isnan(kv_f16_to_f32(0x7e00)));
  assert_true(kv_f16_to_f32(0xc000) == -2.0f);
}

static void test_bf16_known(void **state) {
  (void)state;
  static const struct {
    float f;
    uint16_t h;
  } to16[] = {
      {0.0f, 0x0000},        {-0.0f, 0x8000},
      {1.0f, 0x3f80},        {-1.0f, 0xbf80},
      {3.14159265f, 0x4049}, {0x1.01p0f, 0x3f80}, /* tie: even */
      {0x1.03p0f, 0x3f82},   /* tie: even (up) */ {0x1.0101p0f, 0x3f81},
      {FLT_MAX, 0x7f80},     /* rounds up to inf */ {0x1.fep127f, 0x7f7f},
      {0x1p-133f, 0x0001},   /* f32 subnormal */ {0x1p-149f, 0x0000}, /* rounds down */
      {0x1p-126f, 0x0080},   {1e-45f, 0x0000},
      {0.1f, 0x3dcd},
  };
  for (size_t i = 0; i < sizeof to16 / sizeof to16[0]; i++) {
    uint16_t h = kv_f32_to_bf16(to16[i].f);
    if (h != to16[i].h)
      fail_msg("f32 %a -> bf16 0x%04x, expected 0x%04x", (double)to16[i].f, h, to16[i].h);
  }
  assert_int_equal(kv_f32_to_bf16(INFINITY), 0x7f80);
  assert_int_equal(kv_f32_to_bf16(-INFINITY), 0xff80);
  uint16_t nan = kv_f32_to_bf16(bitsf(0x7f800001u)); /* payload only in low bits */
  assert_true((nan & 0x7f80) == 0x7f80 && (nan & 0x7f) != 0);
  assert_true(kv_bf16_to_f32(0x3f80) == 1.0f);
  assert_true(kv_bf16_to_f32(0x0001) == 0x1p-133f);
  assert_true(isnan(kv_bf16_to_f32(0x7fc0)));
}

/* Every 16-bit pattern survives 16 -> 32 -> 16 (NaNs stay NaN). */
static void test_roundtrips(void **state) {
  (void)state;
  for (uint32_t h = 0; h < 65536; h++) {
    float f = kv_f16_to_f32((uint16_t)h);
    uint16_t back = kv_f32_to_f16(f);
    if (isnan(f)) {
      assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff) && (back & 0x8000) == (h & 0x8000));
    } else if (back != h) {
      fail_msg("f16 0x%04x -> %a -> 0x%04x", h, (double)f, back);
    }
    f = kv_bf16_to_f32((uint16_t)h);
    back = kv_f32_to_bf16(f);
    if (isnan(f))
      assert_true(isnan(kv_bf16_to_f32(back)));
    else if (back != h)
      fail_msg("bf16 0x%04x -> 0x%04x", h, back);
  }
}

/* Reference rounding in double arithmetic: nearest of the two neighbours in
 * the 16-bit format, ties to the even pattern; overflow as IEEE. */
static uint16_t ref_round(float f, int bf) {
  double x = fabs((double)f);
  uint16_t sign = signbit(f) ? 0x8000 : 0;
  float (*dec)(uint16_t) = bf ? kv_bf16_to_f32 : kv_f16_to_f32;
  uint16_t maxfin = bf ? 0x7f7f : 0x7bff, inf = bf ? 0x7f80 : 0x7c00;
  /* binary search the largest pattern with value <= x */
  uint16_t lo = 0, hi = maxfin;
  if (x >= dec(maxfin)) {
    double ulp = bf ? ldexp(1, 127 - 7) : 32.0;
    double mid = dec(maxfin) + ulp / 2;
    return sign | (x >= mid ? inf : maxfin);
  }
  while (lo < hi) {
    uint16_t m = (uint16_t)((lo + hi + 1) / 2);
    if (dec(m) <= x)
      lo = m;
    else
      hi = (uint16_t)(m - 1);
  }
  double a = dec(lo), b = dec((uint16_t)(lo + 1));
  if (x - a < b - x)
    return sign | lo;
  if (x - a > b - x)
    return sign | (uint16_t)(lo + 1);
  return sign | ((lo & 1) ? (uint16_t)(lo + 1) : lo);
}

static void test_against_reference(void **state) {
  (void)state;
  /* A sweep of float patterns with an odd stride, plus every pattern near
   * the f16 overflow and subnormal boundaries. */
  long checked = 0;
  for (uint64_t u = 0; u < 0x100000000ull; u += 40009) {
    float f = bitsf((uint32_t)u);
    if (isnan(f))
      continue;
    uint16_t r = ref_round(f, 0), g = kv_f32_to_f16(f);
    if (r != g)
      fail_msg("f16: %a: 0x%04x, reference 0x%04x", (double)f, g, r);
    r = ref_round(f, 1), g = kv_f32_to_bf16(f);
    if (r != g)
      fail_msg("bf16: %a: 0x%04x, reference 0x%04x", (double)f, g, r);
    checked++;
  }
  uint32_t around[] = {0x477fe000u, 0x477ff000u, 0x38800000u, 0x33000000u, 0x33800000u};
  for (size_t k = 0; k < sizeof around / sizeof around[0]; k++)
    for (uint32_t u = around[k] - 5000; u < around[k] + 5000; u++) {
      float f = bitsf(u);
      if (ref_round(f, 0) != kv_f32_to_f16(f))
        fail_msg("f16: %a: 0x%04x, reference 0x%04x", (double)f, kv_f32_to_f16(f), ref_round(f, 0));
      checked++;
    }
  assert_true(checked > 100000);
#ifdef __FLT16_MAX__
  /* And the compiler's own _Float16 conversion where it has one. */
  for (uint64_t u = 0; u < 0x100000000ull; u += 7919) {
    float f = bitsf((uint32_t)u);
    if (isnan(f))
      continue;
    _Float16 hv = (_Float16)f;
    uint16_t hb;
    memcpy(&hb, &hv, 2);
    if (hb != kv_f32_to_f16(f))
      fail_msg("f16: %a: 0x%04x, _Float16 0x%04x", (double)f, kv_f32_to_f16(f), hb);
  }
#endif
}

static void test_elem_as_double(void **state) {
  (void)state;
  float f[] = {1.5f};
  double d[] = {-2.25};
  int32_t i[] = {0, -7};
  int64_t l[] = {0, 0, 1LL << 40};
  uint8_t u[] = {250};
  uint16_t h[] = {0x3c00, 0xc000}, b[] = {0x4049};
  assert_true(kv_elem_as_double(KV_F32, f, 0) == 1.5);
  assert_true(kv_elem_as_double(KV_F64, d, 0) == -2.25);
  assert_true(kv_elem_as_double(KV_I32, i, 1) == -7);
  assert_true(kv_elem_as_double(KV_I64, l, 2) == 1099511627776.0);
  assert_true(kv_elem_as_double(KV_U8, u, 0) == 250);
  assert_true(kv_elem_as_double(KV_F16, h, 1) == -2.0);
  assert_true(kv_elem_as_double(KV_BF16, b, 0) == 3.140625);
}

/* ---- generation ---------------------------------------------------------------- */

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *c = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ c[i]) * 0x100000001b3ULL;
  return h;
}

struct gcase {
  enum kv_dtype d;
  struct kv_init init;
};

static const struct gcase cases[] = {
    {KV_F32, {KV_DIST_DEFAULT, 0, 0}},    {KV_F32, {KV_DIST_UNIFORM, -3, 5}},
    {KV_F32, {KV_DIST_NORMAL, 2, 0.5}},   {KV_F32, {KV_DIST_INT, -4, 4}},
    {KV_F64, {KV_DIST_DEFAULT, 0, 0}},    {KV_F64, {KV_DIST_UNIFORM, 10, 20}},
    {KV_F64, {KV_DIST_NORMAL, -1, 3}},    {KV_F64, {KV_DIST_INT, 0, 1000000}},
    {KV_F16, {KV_DIST_DEFAULT, 0, 0}},    {KV_F16, {KV_DIST_UNIFORM, 0, 100}},
    {KV_F16, {KV_DIST_NORMAL, 0, 1}},     {KV_F16, {KV_DIST_INT, -8, 8}},
    {KV_BF16, {KV_DIST_DEFAULT, 0, 0}},   {KV_BF16, {KV_DIST_UNIFORM, -0.5, 0.5}},
    {KV_BF16, {KV_DIST_NORMAL, 5, 2}},    {KV_BF16, {KV_DIST_INT, 0, 3}},
    {KV_I32, {KV_DIST_DEFAULT, 0, 0}},    {KV_I32, {KV_DIST_INT, -2147483648.0, 2147483647.0}},
    {KV_I32, {KV_DIST_INT, 7, 7}},        {KV_I64, {KV_DIST_DEFAULT, 0, 0}},
    {KV_I64, {KV_DIST_INT, -1e15, 1e15}}, {KV_U8, {KV_DIST_DEFAULT, 0, 0}},
    {KV_U8, {KV_DIST_INT, 10, 12}},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Hashes of kv_gen_fill(d, init, 42, 7, buf, 1000) for each case: the bytes
 * must never change (inputs are recorded and replayed by seed). */
static const uint64_t golden[NCASES] = {
    0x6bd2c809dda2e1ffULL, /* f32 dist 0 */
    0x3acf71a048edbb25ULL, /* f32 dist 1 */
    0x075f58d2039ace8cULL, /* f32 dist 2 */
    0x08fd6191f6c55f45ULL, /* f32 dist 3 */
    0x5b3d3965a7000718ULL, /* f64 dist 0 */
    0xb4f7065ade057132ULL, /* f64 dist 1 */
    0xd2f59c705667f582ULL, /* f64 dist 2 */
    0xd7a29f1cfd7ead60ULL, /* f64 dist 3 */
    0xb569b46c894f4a6dULL, /* f16 dist 0 */
    0x41df5f9595ff3b2cULL, /* f16 dist 1 */
    0x90a42e098ee2934eULL, /* f16 dist 2 */
    0x320f34c0a6dccee2ULL, /* f16 dist 3 */
    0xb6883f953fe0492cULL, /* bf16 dist 0 */
    0x6368efc4b8cc9909ULL, /* bf16 dist 1 */
    0xcaa448bc7cc01424ULL, /* bf16 dist 2 */
    0xbe4bc96ed56d4bc5ULL, /* bf16 dist 3 */
    0xdda38a2f7403b7c8ULL, /* i32 dist 0 */
    0x3f83b9758b0e843fULL, /* i32 dist 3 */
    0x1cffd5088c88ffe5ULL, /* i32 dist 3 */
    0x62e05fd614302eccULL, /* i64 dist 0 */
    0xc35570c89166bb69ULL, /* i64 dist 3 */
    0xb136f9bfc9f4e9beULL, /* u8 dist 0 */
    0xbec222e773a0ec24ULL, /* u8 dist 3 */
};

static void test_determinism(void **state) {
  (void)state;
  int print = getenv("KEVO_PRINT_GOLDEN") != NULL;
  for (size_t c = 0; c < NCASES; c++) {
    size_t es = kv_dtype_size(cases[c].d), n = 1000;
    unsigned char *a = malloc(n * es), *b = malloc(n * es), *s2 = malloc(n * es),
                  *s3 = malloc(n * es);
    kv_gen_fill(cases[c].d, &cases[c].init, 42, 7, a, n);
    kv_gen_fill(cases[c].d, &cases[c].init, 42, 7, b, n);
    assert_memory_equal(a, b, n * es);
    uint64_t h = fnv(a, n * es);
    if (print)
      printf("    0x%016llxULL, /* %s dist %d */\n", (unsigned long long)h,
             kv_dtype_name(cases[c].d), (int)cases[c].init.dist);
    else if (h != golden[c])
      fail_msg("case %zu (%s): hash 0x%016llx, golden 0x%016llx", c, kv_dtype_name(cases[c].d),
               (unsigned long long)h, (unsigned long long)golden[c]);
    /* Other seeds and other streams give other data (unless the range is one value). */
    kv_gen_fill(cases[c].d, &cases[c].init, 43, 7, s2, n);
    kv_gen_fill(cases[c].d, &cases[c].init, 42, 8, s3, n);
    int single = cases[c].init.dist == KV_DIST_INT && cases[c].init.a == cases[c].init.b;
    if (!single) {
      assert_memory_not_equal(a, s2, n * es);
      assert_memory_not_equal(a, s3, n * es);
    } else {
      assert_memory_equal(a, s2, n * es);
    }
    /* Seeds are not simply swapped with streams. */
    kv_gen_fill(cases[c].d, &cases[c].init, 7, 42, s2, n);
    if (!single)
      assert_memory_not_equal(a, s2, n * es);
    free(a), free(b), free(s2), free(s3);
  }
}

/* Filling in chunks (any split, odd offsets included) gives the same bytes,
 * and a shorter fill is a prefix of a longer one. */
static void test_chunking(void **state) {
  (void)state;
  const size_t n = 1001;
  static const size_t cuts[] = {0, 1, 2, 3, 64, 65, 500, 999, 1000, 1001};
  for (size_t c = 0; c < NCASES; c++) {
    size_t es = kv_dtype_size(cases[c].d);
    unsigned char *whole = malloc(n * es), *parts = malloc(n * es), *shorter = malloc(n * es);
    kv_gen_fill(cases[c].d, &cases[c].init, 9, 3, whole, n);
    for (size_t i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; i++)
      for (size_t j = i + 1; j < sizeof cuts / sizeof cuts[0]; j++) {
        size_t a = cuts[i], b = cuts[j];
        memset(parts, 0xAB, n * es);
        kv_gen_fill_at(cases[c].d, &cases[c].init, 9, 3, 0, parts, a);
        kv_gen_fill_at(cases[c].d, &cases[c].init, 9, 3, a, parts + a * es, b - a);
        kv_gen_fill_at(cases[c].d, &cases[c].init, 9, 3, b, parts + b * es, n - b);
        assert_memory_equal(whole, parts, n * es);
      }
    for (size_t k = 1; k < n; k += 37) {
      kv_gen_fill(cases[c].d, &cases[c].init, 9, 3, shorter, k);
      assert_memory_equal(whole, shorter, k * es);
    }
    /* One element at a time. */
    for (size_t k = 0; k < n; k++)
      kv_gen_fill_at(cases[c].d, &cases[c].init, 9, 3, k, parts + k * es, 1);
    assert_memory_equal(whole, parts, n * es);
    free(whole), free(parts), free(shorter);
  }
}

/* Mean, spread and range for every dtype and dist. */
static void test_distributions(void **state) {
  (void)state;
  const size_t n = 1 << 20;
  for (size_t c = 0; c < NCASES; c++) {
    enum kv_dtype d = cases[c].d;
    struct kv_init in = cases[c].init;
    void *buf = malloc(n * kv_dtype_size(d));
    kv_gen_fill(d, &in, 1234, (uint64_t)c, buf, n);
    if (in.dist == KV_DIST_DEFAULT) {
      in.dist = kv_dtype_is_float(d) ? KV_DIST_UNIFORM : KV_DIST_INT;
      in.a = kv_dtype_is_float(d) ? -1 : d == KV_U8 ? 0 : -100;
      in.b = kv_dtype_is_float(d) ? 1 : d == KV_U8 ? 255 : 100;
    }
    double sum = 0, sum2 = 0, mn = INFINITY, mx = -INFINITY;
    size_t at_lo = 0, at_hi = 0;
    for (size_t i = 0; i < n; i++) {
      double v = kv_elem_as_double(d, buf, i);
      assert_true(isfinite(v));
      sum += v, sum2 += v * v;
      mn = v < mn ? v : mn, mx = v > mx ? v : mx;
      at_lo += v == in.a, at_hi += v == in.b;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    double want_mean, want_sd;
    const char *what = kv_dtype_name(d);
    if (in.dist == KV_DIST_UNIFORM) {
      want_mean = (in.a + in.b) / 2, want_sd = (in.b - in.a) / sqrt(12.0);
      if (!(mn >= in.a && mx < in.b))
        fail_msg("%s uniform [%g,%g): min %g max %g", what, in.a, in.b, mn, mx);
      /* The range is covered to within a fraction of a percent. */
      assert_true(mn < in.a + (in.b - in.a) * 0.01 && mx > in.b - (in.b - in.a) * 0.01);
    } else if (in.dist == KV_DIST_NORMAL) {
      want_mean = in.a, want_sd = in.b;
      /* 2^20 normal draws reach beyond 4 sigma on both sides but not beyond 7. */
      assert_true(mn < in.a - 4 * in.b && mx > in.a + 4 * in.b);
      assert_true(mn > in.a - 7 * in.b && mx < in.a + 7 * in.b);
    } else {
      double k = in.b - in.a + 1;
      want_mean = (in.a + in.b) / 2, want_sd = sqrt((k * k - 1) / 12);
      if (!(mn >= in.a && mx <= in.b))
        fail_msg("%s int [%g,%g]: min %g max %g", what, in.a, in.b, mn, mx);
      if (k < 1000) { /* every endpoint is reached, and each value is ~n/k */
        assert_true(at_lo > 0 && at_hi > 0);
        assert_true(fabs((double)at_lo - n / k) < 6 * sqrt(n / k) + 1);
      } else {
        /* integers: no fractional values */
        for (size_t i = 0; i < 1000; i++) {
          double v = kv_elem_as_double(d, buf, i);
          assert_true(v == floor(v));
        }
      }
    }
    /* Coarse tolerance: 16-bit floats quantize; bf16 has 8 bits. */
    double tol_mean = 6 * (want_sd + 1e-12) / sqrt((double)n) + fabs(want_mean) * 0.005 +
                      (d == KV_BF16 || d == KV_F16 ? 0.01 * (want_sd + fabs(want_mean)) : 0);
    if (fabs(mean - want_mean) > tol_mean)
      fail_msg("%s dist %d: mean %g, expected %g +- %g", what, in.dist, mean, want_mean, tol_mean);
    if (fabs(sd - want_sd) > 0.02 * want_sd + 1e-9)
      fail_msg("%s dist %d: sd %g, expected %g", what, in.dist, sd, want_sd);
    free(buf);
  }
}

/* Uniform never returns hi, even where rounding would reach it; lo == hi
 * gives lo. */
static void test_uniform_half_open(void **state) {
  (void)state;
  const size_t n = 1 << 16;
  float *f = malloc(n * sizeof *f);
  uint16_t *h = malloc(n * sizeof *h);
  double *d = malloc(n * sizeof *d);
  struct kv_init narrow = {KV_DIST_UNIFORM, 1.0, 1.0 + 0x1p-20}; /* 16 floats */
  kv_gen_fill(KV_F32, &narrow, 1, 1, f, n);
  int seen_lo = 0;
  for (size_t i = 0; i < n; i++) {
    assert_true(f[i] >= 1.0f && f[i] < 1.0f + 0x1p-20f);
    seen_lo |= f[i] == 1.0f;
  }
  assert_true(seen_lo);
  struct kv_init h8 = {KV_DIST_UNIFORM, 1.0, 1.0078125}; /* 8 halves */
  kv_gen_fill(KV_F16, &h8, 1, 1, h, n);
  for (size_t i = 0; i < n; i++)
    assert_true(h[i] >= 0x3c00 && h[i] < 0x3c08);
  kv_gen_fill(KV_BF16, &h8, 1, 1, h, n); /* lo and hi are adjacent bf16 values */
  for (size_t i = 0; i < n; i++)
    assert_int_equal(h[i], 0x3f80);
  struct kv_init neg = {KV_DIST_UNIFORM, -1.0, 0.0}; /* hi = 0: below is -tiny */
  kv_gen_fill(KV_F16, &neg, 2, 1, h, n);
  for (size_t i = 0; i < n; i++) {
    float v = kv_f16_to_f32(h[i]);
    assert_true(v >= -1.0f && v < 0.0f);
  }
  struct kv_init dn = {KV_DIST_UNIFORM, 0.0, 0x1p-50}; /* tiny doubles */
  kv_gen_fill(KV_F64, &dn, 3, 1, d, n);
  for (size_t i = 0; i < n; i++)
    assert_true(d[i] >= 0.0 && d[i] < 0x1p-50);
  struct kv_init same = {KV_DIST_UNIFORM, 2.5, 2.5};
  kv_gen_fill(KV_F32, &same, 4, 1, f, n);
  kv_gen_fill(KV_F16, &same, 4, 1, h, n);
  kv_gen_fill(KV_F64, &same, 4, 1, d, n);
  for (size_t i = 0; i < n; i++)
    assert_true(f[i] == 2.5f && h[i] == 0x4100 && d[i] == 2.5);
  struct kv_init normal0 = {KV_DIST_NORMAL, 3.0, 0.0};
  kv_gen_fill(KV_F32, &normal0, 4, 1, f, n);
  for (size_t i = 0; i < n; i++)
    assert_true(f[i] == 3.0f);
  free(f), free(h), free(d);
}

static void test_scalars(void **state) {
  (void)state;
  struct kv_param p;
  memset(&p, 0, sizeof p);
  strcpy(p.name, "alpha");
  p.role = KV_ROLE_SCALAR;
  union {
    float f;
    double d;
    int32_t i;
    int64_t l;
    uint8_t u;
    uint16_t h;
    unsigned char bytes[8];
  } a, b;
  p.dtype = KV_F32, p.has_value = 1, p.value = 1.5;
  kv_gen_scalar(&p, 1, &a);
  assert_true(a.f == 1.5f);
  p.dtype = KV_F16;
  kv_gen_scalar(&p, 1, &a);
  assert_int_equal(a.h, 0x3e00);
  p.dtype = KV_BF16;
  kv_gen_scalar(&p, 1, &a);
  assert_int_equal(a.h, 0x3fc0);
  p.dtype = KV_I64, p.value = -9007199254740992.0;
  kv_gen_scalar(&p, 1, &a);
  assert_int_equal(a.l, -9007199254740992LL);
  p.dtype = KV_U8, p.value = 255;
  kv_gen_scalar(&p, 1, &a);
  assert_int_equal(a.u, 255);
  p.dtype = KV_F64, p.value = -0.1;
  kv_gen_scalar(&p, 1, &a);
  assert_true(a.d == -0.1);

  p.has_value = 0;
  p.dtype = KV_I32;
  p.init = (struct kv_init){KV_DIST_INT, -1000000, 1000000};
  kv_gen_scalar(&p, 5, &a);
  kv_gen_scalar(&p, 5, &b);
  assert_int_equal(a.i, b.i);
  assert_true(a.i >= -1000000 && a.i <= 1000000);
  int differ = 0;
  for (uint64_t s = 6; s < 16; s++) {
    kv_gen_scalar(&p, s, &b);
    assert_true(b.i >= -1000000 && b.i <= 1000000);
    differ += b.i != a.i;
  }
  assert_true(differ >= 9);
  p.dtype = KV_F64;
  p.init = (struct kv_init){KV_DIST_UNIFORM, 2, 3};
  kv_gen_scalar(&p, 5, &a);
  assert_true(a.d >= 2 && a.d < 3);
  /* The draw depends on the name, not only on the seed. */
  strcpy(p.name, "beta");
  kv_gen_scalar(&p, 5, &b);
  assert_true(a.d != b.d);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_speed(void **state) {
  (void)state;
  const size_t n = (size_t)1 << 26;
  float *f = malloc(n * sizeof *f);
  assert_non_null(f);
  struct kv_init u = {KV_DIST_UNIFORM, -1, 1}, g = {KV_DIST_NORMAL, 0, 1};
  double best_u = 0, best_n = 0;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    kv_gen_fill(KV_F32, &u, rep, 0, f, n);
    double t1 = now();
    kv_gen_fill(KV_F32, &g, rep, 0, f, n / 8);
    double t2 = now();
    best_u = fmax(best_u, n / (t1 - t0));
    best_n = fmax(best_n, n / 8 / (t2 - t1));
  }
  printf("[   INFO   ] kv_gen_fill f32 uniform: %.0f M elements/s; f32 normal: %.0f M "
         "elements/s\n",
         best_u / 1e6, best_n / 1e6);
  free(f);
#if defined(__OPTIMIZE__) && !defined(KEVO_SANITIZED)
  assert_true(best_u > 100e6); /* loose: machines are shared */
#endif
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f16_known),
      cmocka_unit_test(test_bf16_known),
      cmocka_unit_test(test_roundtrips),
      cmocka_unit_test(test_against_reference),
      cmocka_unit_test(test_elem_as_double),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_chunking),
      cmocka_unit_test(test_distributions),
      cmocka_unit_test(test_uniform_half_open),
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_speed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
