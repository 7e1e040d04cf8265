#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/runtime.h"

int kv_close(const struct kv_task *t, enum kv_dtype d, double exp, double got) {
  if (!kv_dtype_is_float(d))
    return exp == got;
  if (isnan(exp))
    return isnan(got);
  if (isinf(exp))
    return got == exp;
  if (!isfinite(got))
    return 0;
  return fabs(got - exp) <= t->atol + t->rtol * fabs(exp);
}

void kv_format_index(const struct kv_task *t, const struct kv_sizeset *s, int p, int64_t i,
                     char *out, size_t cap) {
  const struct kv_param *pp = &t->params[p];
  int64_t dims[KV_MAX_DIMS];
  int nd = pp->ndim;
  for (int d = 0; d < nd; d++)
    if (kv_expr_eval(t, s, pp->shape[d], &dims[d], NULL, 0) < 0 || dims[d] <= 0)
      nd = 0;
  if (nd <= 1) {
    snprintf(out, cap, "%s[%lld]", pp->name, (long long)i);
    return;
  }
  int64_t idx[KV_MAX_DIMS];
  int64_t r = i;
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = r % dims[d];
    r /= dims[d];
  }
  size_t used = (size_t)snprintf(out, cap, "%s[", pp->name);
  for (int d = 0; d < nd && used < cap; d++)
    used += (size_t)snprintf(out + used, cap - used, "%s%lld", d ? "," : "", (long long)idx[d]);
  if (used < cap)
    snprintf(out + used, cap - used, "]");
}

static void fmt_val(enum kv_dtype d, double v, char *out, size_t cap) {
  if (kv_dtype_is_float(d))
    snprintf(out, cap, "%.9g", v);
  else
    snprintf(out, cap, "%.0f", v);
}

/* What a scan of elements [lo, hi) found. */
struct scan {
  int64_t bad, unwritten, first_unwritten, first_wrong;
  double max_abs, max_rel;
};

static void scan_range(const struct kv_task *t, enum kv_dtype d, const void *exp, const void *got,
                       int64_t lo, int64_t hi, int poison, struct scan *r) {
  size_t sz = kv_dtype_size(d);
  int f32 = d == KV_F32;
  uint32_t pw = f32 && poison >= 0 ? (uint32_t)kv_poison_word(d, poison) : 0;
  memset(r, 0, sizeof *r);
  r->first_unwritten = r->first_wrong = -1;
  for (int64_t i = lo; i < hi; i++) {
    double e, g;
    if (f32) { /* the common case, without a call per element */
      uint32_t eb = ((const uint32_t *)exp)[i], gb = ((const uint32_t *)got)[i];
      if (eb == gb)
        continue;
      if (poison >= 0 && gb == pw) {
        if (r->unwritten++ == 0)
          r->first_unwritten = i;
        continue;
      }
      e = ((const float *)exp)[i];
      g = ((const float *)got)[i];
    } else {
      if (!memcmp((const uint8_t *)exp + (size_t)i * sz, (const uint8_t *)got + (size_t)i * sz, sz))
        continue;
      if (poison >= 0 && kv_is_poison(d, got, (size_t)i, poison)) {
        if (r->unwritten++ == 0)
          r->first_unwritten = i;
        continue;
      }
      e = kv_elem_as_double(d, exp, (size_t)i);
      g = kv_elem_as_double(d, got, (size_t)i);
    }
    if (isfinite(e) && isfinite(g)) {
      double ad = fabs(g - e), rd = ad / (fabs(e) > 0 ? fabs(e) : 1);
      if (ad > r->max_abs)
        r->max_abs = ad;
      if (rd > r->max_rel)
        r->max_rel = rd;
    }
    if (!kv_close(t, d, e, g) && r->bad++ == 0)
      r->first_wrong = i;
  }
}

/* Large outputs (a validated timed call of 16M elements took 0.2-0.4 s in
 * one thread) are scanned in chunks on threads that end with the scan (no
 * pool whose threads spin on after it, beside the next timed phase), the
 * chunks combined in order. */
#define SCAN_PARALLEL_MIN (1 << 20)
#define SCAN_CHUNKS 64

struct scan_job {
  const struct kv_task *t;
  enum kv_dtype d;
  const void *exp, *got;
  int64_t n;
  int poison;
  struct scan part[SCAN_CHUNKS];
  int next; /* the next chunk to take (atomic) */
};

static void *scan_worker(void *arg) {
  struct scan_job *j = arg;
  for (;;) {
    int k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
    if (k >= SCAN_CHUNKS)
      return NULL;
    scan_range(j->t, j->d, j->exp, j->got, j->n * k / SCAN_CHUNKS, j->n * (k + 1) / SCAN_CHUNKS,
               j->poison, &j->part[k]);
  }
}

void kv_compare(const struct kv_task *t, const struct kv_sizeset *s, int p, const void *exp,
                const void *got, int64_t n, int poison, struct kv_cmp *c) {
  kv_compare_at(t, s, p, exp, got, n, poison, NULL, n, c);
}

void kv_compare_at(const struct kv_task *t, const struct kv_sizeset *s, int p, const void *exp,
                   const void *got, int64_t n, int poison, const int64_t *idx, int64_t whole,
                   struct kv_cmp *c) {
  memset(c, 0, sizeof(*c));
  c->verdict = KV_V_OK;
  c->first_bad = -1;
  enum kv_dtype d = t->params[p].dtype;
  struct scan_job *j = calloc(1, sizeof *j);
  struct scan one;
  const struct scan *part = &one;
  int nch = 1;
  if (j && n >= SCAN_PARALLEL_MIN) {
    *j = (struct scan_job){.t = t, .d = d, .exp = exp, .got = got, .n = n, .poison = poison};
    pthread_t th[16];
    int nt = kv_fill_threads() - 1, started = 0;
    for (int i = 0; i < nt && i < 16; i++)
      started += pthread_create(&th[started], NULL, scan_worker, j) == 0;
    scan_worker(j); /* this thread too: done even if no thread started */
    for (int i = 0; i < started; i++)
      pthread_join(th[i], NULL);
    part = j->part;
    nch = SCAN_CHUNKS;
  } else {
    scan_range(t, d, exp, got, 0, n, poison, &one);
  }
  int64_t bad = 0, unwritten = 0, first_unwritten = -1, first_wrong = -1;
  for (int k = 0; k < nch; k++) {
    const struct scan *r = &part[k];
    if (first_unwritten < 0)
      first_unwritten = r->first_unwritten;
    if (first_wrong < 0)
      first_wrong = r->first_wrong;
    bad += r->bad;
    unwritten += r->unwritten;
    c->max_abs = fmax(c->max_abs, r->max_abs);
    c->max_rel = fmax(c->max_rel, r->max_rel);
  }
  free(j);
  char where[160], ev[64], gv[64], of[96];
  /* Sampled: the counts are of the sample. */
  if (idx)
    snprintf(of, sizeof of, "%lld sampled (of %lld)", (long long)n, (long long)whole);
  else
    snprintf(of, sizeof of, "%lld", (long long)n);
  if (unwritten) {
    c->verdict = KV_V_UNWRITTEN_OUTPUT;
    c->first_bad = idx ? idx[first_unwritten] : first_unwritten;
    kv_format_index(t, s, p, c->first_bad, where, sizeof where);
    snprintf(c->detail, sizeof c->detail,
             "%s was never written (%lld of %s elements of %s still hold kevo's poison)", where,
             (long long)unwritten, of, t->params[p].name);
    return;
  }
  if (bad) {
    c->verdict = KV_V_WRONG_OUTPUT;
    c->first_bad = idx ? idx[first_wrong] : first_wrong;
    kv_format_index(t, s, p, c->first_bad, where, sizeof where);
    double e = kv_elem_as_double(d, exp, (size_t)first_wrong);
    double g = kv_elem_as_double(d, got, (size_t)first_wrong);
    fmt_val(d, e, ev, sizeof ev);
    fmt_val(d, g, gv, sizeof gv);
    if (kv_dtype_is_float(d))
      snprintf(c->detail, sizeof c->detail,
               "%s: expected %s, got %s (|diff| %.3g > atol %g + rtol %g * |expected|); %lld of "
               "%s elements differ",
               where, ev, gv, fabs(g - e), t->atol, t->rtol, (long long)bad, of);
    else
      snprintf(c->detail, sizeof c->detail, "%s: expected %s, got %s; %lld of %s elements differ",
               where, ev, gv, (long long)bad, of);
  }
}
