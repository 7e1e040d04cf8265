/* Memory-derived byte caps, and packed params: one read-only buffer that
 * holds many tensors back to back (kevo import's weights of a network). */
#include "task_internal.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic int64_t device_memory_set;

void kv_task_set_device_memory(int64_t bytes) {
  atomic_store(&device_memory_set, bytes > 0 ? bytes : 0);
}

int64_t kv_task_device_memory(const char **from) {
  int64_t set = atomic_load(&device_memory_set);
  if (set > 0) {
    if (from)
      *from = "--device-memory";
    return set;
  }
  const char *e = getenv("KEVO_DEVICE_MEMORY_GIB");
  if (e && *e) {
    char *end;
    double g = strtod(e, &end);
    if (*end == 0 && g >= 1 && g <= (1 << 20)) {
      if (from)
        *from = "KEVO_DEVICE_MEMORY_GIB";
      return (int64_t)(g * (double)(1 << 30));
    }
  }
  if (from)
    *from = "the default: an H100's";
  return KV_DEFAULT_DEVICE_MEMORY;
}

int64_t kv_task_max_set_bytes(void) {
  return kv_task_device_memory(NULL) / 2;
}

void kv_task_cap_note(char *out, size_t cap) {
  const char *from;
  int64_t m = kv_task_device_memory(&from);
  snprintf(out, cap,
           "half the %.0f GiB of device memory kevo assumes (%s); for another device set "
           "KEVO_DEVICE_MEMORY_GIB to its memory (kevo import --device-memory GIB)",
           (double)m / (double)(1 << 30), from);
}

void kvt_pack_free(struct kv_param *p) {
  for (int k = 0; k < p->npack; k++) {
    free(p->pack[k].name);
    for (int d = 0; d < p->pack[k].ndim; d++)
      free(p->pack[k].shape[d]);
  }
  free(p->pack);
  p->pack = NULL;
  p->npack = 0;
}

/* A member's name is printed inside a C comment: letters, digits, '_' and
 * '.' only, so that nothing in a task can end the comment. */
static int pack_name_ok(const char *s) {
  if (!*s || strlen(s) > KV_PACK_NAME_MAX)
    return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_' || *c == '.'))
      return 0;
  return 1;
}

static int pack_member(const struct kv_task *t, struct kv_pack *m, json_t *v, size_t k, char *err,
                       size_t errlen) {
  json_t *name = json_object_get(v, "name"), *shape = json_object_get(v, "shape");
  if (!json_is_object(v) || json_object_size(v) != 2 || !json_is_string(name) ||
      !json_is_array(shape))
    return kvt_seterr(err, errlen,
                      "[%zu]: must be {\"name\": \"layer.weight\", \"shape\": [EXPR, ...]} and "
                      "nothing else",
                      k),
           -1;
  if (!pack_name_ok(json_string_value(name)))
    return kvt_seterr(err, errlen,
                      "[%zu].name: 1 to %d letters, digits, '_' and '.' (the module's name "
                      "for the tensor)",
                      k, KV_PACK_NAME_MAX),
           -1;
  if (json_array_size(shape) > KV_MAX_DIMS)
    return kvt_seterr(err, errlen, "[%zu].shape: %zu dimensions; use at most %d", k,
                      json_array_size(shape), KV_MAX_DIMS),
           -1;
  if (!(m->name = strdup(json_string_value(name))))
    return kvt_seterr(err, errlen, ": out of memory"), -1;
  size_t d;
  json_t *e;
  json_array_foreach(shape, d, e) {
    char buf[32];
    const char *x = json_string_value(e);
    if (json_is_integer(e) && json_integer_value(e) >= 0) {
      snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(e));
      x = buf;
    }
    if (!x)
      return kvt_seterr(err, errlen, "[%zu].shape[%zu]: a string expression or an integer >= 0", k,
                        d),
             -1;
    /* Its names are checked with every size set (kvt_pack_check): size
     * params listed after this one are not parsed yet. */
    (void)t;
    if (strlen(x) > KVT_EXPR_MAX)
      return kvt_seterr(err, errlen, "[%zu].shape[%zu]: longer than %d characters", k, d,
                        KVT_EXPR_MAX),
             -1;
    if (!(m->shape[d] = strdup(x)))
      return kvt_seterr(err, errlen, ": out of memory"), -1;
    m->ndim = (int)d + 1;
  }
  return 0;
}

int kvt_pack_parse(const struct kv_task *t, struct kv_param *p, json_t *arr, char *err,
                   size_t errlen) {
  if (p->role != KV_ROLE_IN || p->ndim != 1)
    return kvt_seterr(err, errlen,
                      ": only a one-dimensional in buffer packs tensors; remove pack or make "
                      "the param role in with one shape entry (the sum of the tensors' sizes)"),
           -1;
  if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > KV_MAX_PACK)
    return kvt_seterr(err, errlen, ": must be an array of 1 to %d tensors", KV_MAX_PACK), -1;
  p->pack = calloc(json_array_size(arr), sizeof *p->pack);
  if (!p->pack)
    return kvt_seterr(err, errlen, ": out of memory"), -1;
  size_t k;
  json_t *v;
  json_array_foreach(arr, k, v) {
    p->npack = (int)k + 1;
    if (pack_member(t, &p->pack[k], v, k, err, errlen) < 0)
      return -1;
  }
  return 0;
}

int kv_pack_elems(const struct kv_task *t, int p, int k, const struct kv_sizeset *s,
                  int64_t *offset, int64_t *n, char *err, size_t errlen) {
  const struct kv_param *prm = &t->params[p];
  int64_t off = 0;
  for (int j = 0; j <= k && j < prm->npack; j++) {
    int64_t e = 1, v;
    char msg[1024];
    for (int d = 0; d < prm->pack[j].ndim; d++) {
      if (kvt_expr(t, s, prm->pack[j].shape[d], &v, msg, sizeof msg) < 0)
        return kvt_seterr(err, errlen, "params[%d].pack[%d].shape[%d]: %s", p, j, d, msg), -1;
      if (v < 0 || __builtin_mul_overflow(e, v, &e) || e > ((int64_t)1 << 50))
        return kvt_seterr(err, errlen, "params[%d].pack[%d].shape[%d]: %lld is no size for '%s'", p,
                          j, d, (long long)v, prm->pack[j].name),
               -1;
    }
    if (j == k) {
      *offset = off;
      *n = e;
      return 0;
    }
    off += e;
  }
  return kvt_seterr(err, errlen, "params[%d].pack: no tensor %d", p, k), -1;
}

int kvt_pack_check(const struct kv_task *t, int p, const struct kv_sizeset *s, char *err,
                   size_t errlen) {
  const struct kv_param *prm = &t->params[p];
  if (!prm->npack)
    return 0;
  int64_t off, n, whole;
  if (kv_pack_elems(t, p, prm->npack - 1, s, &off, &n, err, errlen) < 0 ||
      kv_param_elems(t, p, s, &whole, err, errlen) < 0)
    return -1;
  if (off + n != whole) {
    char sizes[256];
    kv_sizeset_format(t, s, sizes, sizeof sizes);
    return kvt_seterr(err, errlen,
                      "params[%d].pack: its %d tensors hold %lld elements at %s, and '%s' has "
                      "%lld; make its shape their sum",
                      p, prm->npack, (long long)(off + n), sizes, prm->name, (long long)whole),
           -1;
  }
  return 0;
}

static int all_digits(const char *s) {
  if (!*s)
    return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9')
      return 0;
  return 1;
}

void kv_sumexpr_add(struct kv_sumexpr *s, char *const *dims, int ndim) {
  long long coef = 1;
  char term[192] = "";
  size_t tl = 0;
  for (int d = 0; d < ndim && !s->overflow; d++) {
    if (all_digits(dims[d]) && strlen(dims[d]) < 16) {
      if (__builtin_mul_overflow(coef, atoll(dims[d]), &coef))
        s->overflow = 1;
      continue;
    }
    int paren = strpbrk(dims[d], "+-/%") != NULL;
    int n = snprintf(term + tl, sizeof term - tl, "%s%s%s%s", tl ? "*" : "", paren ? "(" : "",
                     dims[d], paren ? ")" : "");
    if (n < 0 || (size_t)n >= sizeof term - tl)
      s->overflow = 1;
    else
      tl += (size_t)n;
  }
  if (s->overflow)
    return;
  if (!tl) {
    if (__builtin_add_overflow(s->fixed, coef, &s->fixed))
      s->overflow = 1;
    return;
  }
  int k = 0;
  while (k < s->n && strcmp(s->term[k], term))
    k++;
  if (k == s->n) {
    if (s->n == KV_SUMEXPR_TERMS) {
      s->overflow = 1;
      return;
    }
    memcpy(s->term[s->n], term, tl + 1);
    s->count[s->n++] = 0;
  }
  if (__builtin_add_overflow(s->count[k], coef, &s->count[k]))
    s->overflow = 1;
}

int kv_sumexpr_format(const struct kv_sumexpr *s, char *out, size_t cap) {
  size_t n = 0;
  int w;
  if (s->overflow || cap == 0)
    return -1;
  out[0] = 0;
  if (s->fixed || !s->n) {
    w = snprintf(out, cap, "%lld", s->fixed);
    if (w < 0 || (size_t)w >= cap)
      return -1;
    n = (size_t)w;
  }
  for (int k = 0; k < s->n; k++) {
    if (!s->count[k])
      continue;
    if (s->count[k] == 1)
      w = snprintf(out + n, cap - n, "%s%s", n ? " + " : "", s->term[k]);
    else
      w = snprintf(out + n, cap - n, "%s%lld*%s", n ? " + " : "", s->count[k], s->term[k]);
    if (w < 0 || (size_t)w >= cap - n)
      return -1;
    n += (size_t)w;
  }
  return 0;
}
