/* Deterministic input generation and f16/bf16 storage conversions.
 *
 * The per-element arithmetic (the generator, the conversions, the
 * deterministic log and sincos, rounding and storing) lives in gen_core.h,
 * which the worker's GPU generator (worker/gen_kernels.cu) compiles too: the
 * two give the same bytes. This file holds the host's batched loops over it.
 * gen.c is compiled with -ffp-contract=off (no FMA contraction). */
#include "task_internal.h"

#include "gen_core.h"

#include <math.h>
#include <string.h>

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

float kv_f16_to_f32(uint16_t h) {
  return kvg_f16_dec(h);
}

uint16_t kv_f32_to_f16(float f) {
  return kvg_f16_enc(f);
}

float kv_bf16_to_f32(uint16_t h) {
  return kvg_bf16_dec(h);
}

uint16_t kv_f32_to_bf16(float f) {
  return kvg_bf16_enc(f);
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

/* Standard normal draws for blocks k0 .. k0+cnt-1 (cnt <= NBATCH): z[2t] and
 * z[2t+1] are the draws of elements 2(k0+t) and 2(k0+t)+1. The steps of
 * kvg_normal_pair, batched so that independent draws overlap. */
#define NBATCH 8
static void normal_batch(uint64_t key, uint64_t k0, int cnt, double *z) {
  double u1[NBATCH], u2[NBATCH], lg[NBATCH], sn[NBATCH], cs[NBATCH];
  for (int t = 0; t < cnt; t++) {
    uint64_t h = kvg_block(key, k0 + (uint64_t)t);
    u1[t] = kvg_normal_u1(h);
    u2[t] = kvg_normal_u2(h);
  }
  for (int t = 0; t < cnt; t++)
    lg[t] = kvg_det_log(u1[t]);
  for (int t = 0; t < cnt; t++)
    kvg_det_sincos2pi(u2[t], &sn[t], &cs[t]);
  for (int t = 0; t < cnt; t++) {
    double r = kvg_normal_radius(lg[t]);
    z[2 * t] = r * cs[t];
    z[2 * t + 1] = r * sn[t];
  }
}

/* ---- distributions ------------------------------------------------------------ */

static void f32_uniform(float *o, size_t n, uint64_t first, const struct kvg_plan *plan) {
  const struct kvg_plan pl = *plan, *p = &pl; /* a local copy: stores to o cannot alias it */
  uint64_t key = p->key;
  size_t j = 0;
  uint64_t i = first;
  if (n && (i & 1)) {
    o[j++] = kvg_f32_from_bits(p, kvg_bits24(key, i));
    i++;
  }
  for (; j + 1 < n; j += 2, i += 2) {
    uint64_t h = kvg_block(key, i >> 1);
    o[j] = kvg_f32_from_bits(p, kvg_bits24_hi(h));
    o[j + 1] = kvg_f32_from_bits(p, kvg_bits24_lo(h));
  }
  if (j < n)
    o[j] = kvg_f32_from_bits(p, kvg_bits24(key, i));
}

static void h16_uniform(uint16_t *o, size_t n, uint64_t first, const struct kvg_plan *plan) {
  const struct kvg_plan pl = *plan, *p = &pl; /* a local copy: stores to o cannot alias it */
  float tmp[256];
  for (size_t j0 = 0; j0 < n; j0 += 256) {
    size_t m = n - j0 < 256 ? n - j0 : 256;
    f32_uniform(tmp, m, first + j0, p);
    if (p->dtype == KV_BF16) {
      for (size_t j = 0; j < m; j++) {
        uint16_t h = kvg_bf16_enc(tmp[j]);
        float v = kvg_bf16_dec(h);
        o[j0 + j] = v >= p->hiv ? p->top16 : v < p->lov ? p->lo16 : h;
      }
    } else {
      for (size_t j = 0; j < m; j++) {
        uint16_t h = kvg_f16_enc(tmp[j]);
        float v = kvg_f16_dec(h);
        o[j0 + j] = v >= p->hiv ? p->top16 : v < p->lov ? p->lo16 : h;
      }
    }
  }
}

void kv_gen_fill_at(enum kv_dtype d, const struct kv_init *init, uint64_t seed, uint64_t stream,
                    uint64_t first, void *buf, size_t n) {
  if (!buf || n == 0 || (unsigned)d >= KV_DTYPE_COUNT)
    return;
  struct kvg_plan p;
  kvg_plan_make(&p, d, init, seed, stream);
  uint64_t key = p.key;
  switch ((enum kvg_mode)p.mode) {
  case KVG_F32_UNIFORM:
    f32_uniform(buf, n, first, &p);
    break;
  case KVG_H16_UNIFORM:
    h16_uniform(buf, n, first, &p);
    break;
  case KVG_H16_CONST:
    for (size_t j = 0; j < n; j++)
      ((uint16_t *)buf)[j] = p.lo16;
    break;
  case KVG_F64_UNIFORM:
    for (size_t j = 0; j < n; j++)
      ((double *)buf)[j] = kvg_f64_uniform(&p, kvg_block(key, first + j));
    break;
  case KVG_INT_UNIFORM:
    for (size_t j = 0; j < n; j++)
      kvg_store(d, buf, j, kvg_int_uniform(&p, kvg_block(key, first + j)));
    break;
  case KVG_NORMAL: {
    double z[2 * NBATCH];
    uint64_t end = first + n; /* elements first .. end-1 */
    for (uint64_t k = first >> 1; 2 * k < end; k += NBATCH) {
      uint64_t left = ((end - 2 * k) + 1) / 2;
      int cnt = left < NBATCH ? (int)left : NBATCH;
      normal_batch(key, k, cnt, z);
      for (int t = 0; t < 2 * cnt; t++) {
        uint64_t i = 2 * k + (uint64_t)t;
        if (i >= first && i < end)
          kvg_store(d, buf, (size_t)(i - first), p.a + p.b * z[t]);
      }
    }
    break;
  }
  case KVG_INT:
  default:
    for (size_t j = 0; j < n; j++)
      kvg_store_int(d, buf, j, kvg_int_draw(&p, kvg_block(key, first + j)));
    break;
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
    kvg_store(p->dtype, out, 0, p->value);
    return;
  }
  /* The stream is a hash of the name, so scalars do not depend on order. */
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char *s = p->name; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  kv_gen_fill(p->dtype, &p->init, seed, h ^ 0x5ca1a75ca1a75ca1ULL, out, 1);
}
