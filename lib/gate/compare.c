#include <math.h>
#include <stdio.h>
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

void kv_compare(const struct kv_task *t, const struct kv_sizeset *s, int p, const void *exp,
                const void *got, int64_t n, int poison, struct kv_cmp *c) {
  memset(c, 0, sizeof(*c));
  c->verdict = KV_V_OK;
  c->first_bad = -1;
  enum kv_dtype d = t->params[p].dtype;
  size_t sz = kv_dtype_size(d);
  int64_t bad = 0, unwritten = 0, first_unwritten = -1, first_wrong = -1;
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *e8 = (const uint8_t *)exp + (size_t)i * sz;
    const uint8_t *g8 = (const uint8_t *)got + (size_t)i * sz;
    if (!memcmp(e8, g8, sz))
      continue;
    if (poison >= 0 && kv_is_poison(d, got, (size_t)i, poison)) {
      unwritten++;
      if (first_unwritten < 0)
        first_unwritten = i;
      continue;
    }
    double e = kv_elem_as_double(d, exp, (size_t)i), g = kv_elem_as_double(d, got, (size_t)i);
    if (isfinite(e) && isfinite(g)) {
      double ad = fabs(g - e), rd = ad / (fabs(e) > 0 ? fabs(e) : 1);
      if (ad > c->max_abs)
        c->max_abs = ad;
      if (rd > c->max_rel)
        c->max_rel = rd;
    }
    if (!kv_close(t, d, e, g)) {
      bad++;
      if (first_wrong < 0)
        first_wrong = i;
    }
  }
  char where[160], ev[64], gv[64];
  if (unwritten) {
    c->verdict = KV_V_UNWRITTEN_OUTPUT;
    c->first_bad = first_unwritten;
    kv_format_index(t, s, p, first_unwritten, where, sizeof where);
    snprintf(c->detail, sizeof c->detail,
             "%s was never written (%lld of %lld elements of %s still hold kevo's poison)", where,
             (long long)unwritten, (long long)n, t->params[p].name);
    return;
  }
  if (bad) {
    c->verdict = KV_V_WRONG_OUTPUT;
    c->first_bad = first_wrong;
    kv_format_index(t, s, p, first_wrong, where, sizeof where);
    double e = kv_elem_as_double(d, exp, (size_t)first_wrong);
    double g = kv_elem_as_double(d, got, (size_t)first_wrong);
    fmt_val(d, e, ev, sizeof ev);
    fmt_val(d, g, gv, sizeof gv);
    if (kv_dtype_is_float(d))
      snprintf(c->detail, sizeof c->detail,
               "%s: expected %s, got %s (|diff| %.3g > atol %g + rtol %g * |expected|); %lld of "
               "%lld elements differ",
               where, ev, gv, fabs(g - e), t->atol, t->rtol, (long long)bad, (long long)n);
    else
      snprintf(c->detail, sizeof c->detail, "%s: expected %s, got %s; %lld of %lld elements differ",
               where, ev, gv, (long long)bad, (long long)n);
  }
}
