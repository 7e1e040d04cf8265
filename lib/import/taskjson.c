/* The helper's reply to task.json: strict parsing of the KEVO_IMPORT_JSON
 * line, shape expressions fitted over the size constants' values in every
 * run, params, size sets, tolerance, cost and summary. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/import.h"
#include "kevo/task.h"
#include "kevo/util.h"

#define MARK "KEVO_IMPORT_JSON "
#define MAX_CONSTS 256
#define MAX_TENSORS 1024
#define MAX_DIM_VALUE ((int64_t)1 << 40)
#define EXPR_MAX 128

struct cst {
  char name[KV_NAME_MAX];
  int64_t v[KV_IMPORT_MAX_RUNS];
  int varies, used;
};

struct ten {
  const char *kind, *name, *dtype, *torch_dtype, *note, *layer;
  int ndim;
  int64_t dims[KV_IMPORT_MAX_RUNS][KV_MAX_DIMS];
  json_t *init;
  int suffix;    /* its name is a reserved word in C, C++ or CUDA: append '_' */
  int pack;      /* a weight packed into params "weights_<pack-1>"; 0: a param of its own */
  json_t *value; /* a scalar of get_inputs(): its value */
  char cname[KV_NAME_MAX];
  char expr[KV_MAX_DIMS][EXPR_MAX];
};

enum { RUN_BENCH, RUN_CHECK, RUN_PROBE };

struct ctx {
  int nruns;
  int kind[KV_IMPORT_MAX_RUNS]; /* RUN_*: run 0 is the bench run; probes are never size sets */
  int nc, nt;
  struct cst c[MAX_CONSTS];
  struct ten t[MAX_TENSORS];
  int np;                             /* params written by build() */
  int pmap[MAX_TENSORS + MAX_CONSTS]; /* param -> tensor i, -1 a pack, -2-k constant k */
  json_t *keep;                       /* inits made by rounded_init */
};

static int set_cause(char *cause, size_t cap, const char *c) {
  if (cause && cap)
    snprintf(cause, cap, "%s", c);
  return -1;
}

/* The last KEVO_IMPORT_JSON line of the output, NUL-terminated in a copy. */
static char *find_reply(const char *out, size_t len) {
  const char *best = NULL;
  size_t mlen = strlen(MARK);
  for (size_t i = 0; i + mlen <= len; i++)
    if ((i == 0 || out[i - 1] == '\n') && memcmp(out + i, MARK, mlen) == 0)
      best = out + i + mlen;
  if (!best)
    return NULL;
  size_t n = 0;
  while (best + n < out + len && best[n] != '\n' && best[n] != '\0')
    n++;
  char *s = malloc(n + 1);
  if (s) {
    memcpy(s, best, n);
    s[n] = 0;
  }
  return s;
}

static int get_int(json_t *v, int64_t lo, int64_t hi, int64_t *out) {
  if (!json_is_integer(v))
    return -1;
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi)
    return -1;
  *out = x;
  return 0;
}

static int is_kind(const char *k) {
  return !strcmp(k, "input") || !strcmp(k, "parameter") || !strcmp(k, "buffer") ||
         !strcmp(k, "output") || !strcmp(k, "scalar");
}

static int is_weight(const struct ten *t) {
  return !strcmp(t->kind, "parameter") || !strcmp(t->kind, "buffer");
}

static int dtype_ok(const char *d) {
  static const char *const ds[] = {"f32", "f64", "f16", "bf16", "i32", "i64", "u8"};
  for (size_t i = 0; i < KV_ARRAY_LEN(ds); i++)
    if (!strcmp(d, ds[i]))
      return 1;
  return 0;
}

/* A C identifier of at most KV_NAME_MAX-1 characters from any text. */
static void ident(const char *s, const char *prefix, char *out, size_t cap) {
  size_t n = 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    n = (size_t)snprintf(out, cap, "%s", prefix);
  for (const char *p = s; *p && n + 1 < cap && n + 1 < KV_NAME_MAX - 4; p++) {
    char ch = *p;
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    out[n++] = ok ? ch : '_';
  }
  out[n] = 0;
  if (!strncmp(out, "kevo_", 5))
    out[0] = 'K';
}

static int parse_reply(json_t *root, struct ctx *x, char *cause, size_t causecap, char *err,
                       size_t errlen) {
  const char *pre = "the import helper's reply";
  if (!json_is_object(root))
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "%s: not a JSON object; reinstall kevo's kevo_import.py", pre);
  json_t *ok = json_object_get(root, "ok");
  if (!json_is_boolean(ok))
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "%s: ok: missing or not a boolean", pre);
  if (!json_is_true(ok)) {
    const char *c = json_string_value(json_object_get(root, "cause"));
    const char *d = json_string_value(json_object_get(root, "detail"));
    char cc[32];
    size_t n = 0;
    for (const char *p = c ? c : "refused"; *p && n + 1 < sizeof cc; p++)
      cc[n++] = ((*p >= 'a' && *p <= 'z') || *p == '_') ? *p : '_';
    cc[n] = 0;
    set_cause(cause, causecap, n ? cc : "refused");
    return kv_error(err, errlen, "%.1200s", d ? d : "refused, with no detail");
  }
  json_t *runs = json_object_get(root, "runs");
  if (!json_is_array(runs) || json_array_size(runs) < 1 ||
      json_array_size(runs) > KV_IMPORT_MAX_RUNS)
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "%s: runs: must be an array of 1 to %d runs", pre,
                    KV_IMPORT_MAX_RUNS);
  x->nruns = (int)json_array_size(runs);
  for (int r = 0; r < x->nruns; r++) {
    const char *k = json_string_value(json_array_get(runs, (size_t)r));
    x->kind[r] = !k                    ? -1
                 : !strcmp(k, "bench") ? RUN_BENCH
                 : !strcmp(k, "check") ? RUN_CHECK
                 : !strcmp(k, "probe") ? RUN_PROBE
                                       : -1;
    if (x->kind[r] < 0 || (r == 0) != (x->kind[r] == RUN_BENCH))
      return set_cause(cause, causecap, "helper"),
             kv_error(err, errlen,
                      "%s: runs[%d]: must be \"bench\" first, then \"check\" or "
                      "\"probe\"",
                      pre, r);
  }
  json_t *cs = json_object_get(root, "constants");
  if (!json_is_array(cs) || json_array_size(cs) > MAX_CONSTS)
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "%s: constants: must be an array of at most %d", pre, MAX_CONSTS);
  size_t i;
  json_t *v;
  json_array_foreach(cs, i, v) {
    struct cst *c = &x->c[x->nc];
    const char *nm = json_string_value(json_object_get(v, "name"));
    json_t *vals = json_object_get(v, "values");
    if (!nm || !*nm || strlen(nm) >= KV_NAME_MAX - 4 || !json_is_array(vals) ||
        json_array_size(vals) != (size_t)x->nruns)
      return set_cause(cause, causecap, "helper"),
             kv_error(err, errlen, "%s: constants[%zu]: needs a name and one value per run", pre,
                      i);
    memset(c, 0, sizeof *c);
    ident(nm, "n_", c->name, sizeof c->name);
    for (int r = 0; r < x->nruns; r++) {
      int64_t val;
      if (get_int(json_array_get(vals, (size_t)r), INT64_MIN / 4, INT64_MAX / 4, &val) < 0)
        return set_cause(cause, causecap, "helper"),
               kv_error(err, errlen, "%s: constants[%zu].values[%d]: not an integer", pre, i, r);
      c->v[r] = val;
      if (val != c->v[0])
        c->varies = 1;
    }
    x->nc++;
  }
  json_t *ts = json_object_get(root, "tensors");
  if (!json_is_array(ts) || json_array_size(ts) < 1 || json_array_size(ts) > MAX_TENSORS)
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "%s: tensors: must be an array of 1 to %d", pre, MAX_TENSORS);
  json_array_foreach(ts, i, v) {
    struct ten *t = &x->t[x->nt];
    memset(t, 0, sizeof *t);
    t->kind = json_string_value(json_object_get(v, "kind"));
    t->name = json_string_value(json_object_get(v, "name"));
    t->dtype = json_string_value(json_object_get(v, "dtype"));
    t->torch_dtype = json_string_value(json_object_get(v, "torch_dtype"));
    t->note = json_string_value(json_object_get(v, "init_note"));
    t->layer = json_string_value(json_object_get(v, "layer"));
    if (!t->kind || !is_kind(t->kind) || !t->name || !*t->name || strlen(t->name) > 256)
      return set_cause(cause, causecap, "helper"),
             kv_error(err, errlen,
                      "%s: tensors[%zu]: needs a kind (input parameter buffer output) "
                      "and a name",
                      pre, i);
    if (!t->dtype || !dtype_ok(t->dtype))
      return set_cause(cause, causecap, "dtype"),
             kv_error(err, errlen,
                      "%s %s has dtype %.40s, which kevo does not support; kevo takes "
                      "f32 f64 f16 bf16 i32 i64 u8",
                      t->kind, t->name,
                      t->torch_dtype ? t->torch_dtype : (t->dtype ? t->dtype : "(none)"));
    json_t *shapes = json_object_get(v, "shapes");
    if (!json_is_array(shapes) || json_array_size(shapes) != (size_t)x->nruns)
      return set_cause(cause, causecap, "helper"),
             kv_error(err, errlen, "%s: tensors[%zu].shapes: needs one shape per run", pre, i);
    for (int r = 0; r < x->nruns; r++) {
      json_t *sh = json_array_get(shapes, (size_t)r);
      if (!json_is_array(sh))
        return set_cause(cause, causecap, "helper"),
               kv_error(err, errlen, "%s: tensors[%zu].shapes[%d]: not an array", pre, i, r);
      if (json_array_size(sh) > KV_MAX_DIMS)
        return set_cause(cause, causecap, "kevo_limits"),
               kv_error(err, errlen, "%s %s has %zu dimensions; a kevo task holds at most %d",
                        t->kind, t->name, json_array_size(sh), KV_MAX_DIMS);
      if (r == 0)
        t->ndim = (int)json_array_size(sh);
      else if ((int)json_array_size(sh) != t->ndim)
        return set_cause(cause, causecap, "helper"),
               kv_error(err, errlen, "%s: tensors[%zu].shapes[%d]: another rank than run 0", pre, i,
                        r);
      for (int d = 0; d < t->ndim; d++)
        if (get_int(json_array_get(sh, (size_t)d), 0, MAX_DIM_VALUE, &t->dims[r][d]) < 0)
          return set_cause(cause, causecap, "helper"),
                 kv_error(err, errlen,
                          "%s: tensors[%zu].shapes[%d][%d]: not a size from 0 to "
                          "2^40",
                          pre, i, r, d);
    }
    if (!strcmp(t->kind, "scalar")) {
      t->value = json_object_get(v, "value");
      if (!json_is_number(t->value) || t->ndim != 0 ||
          (strcmp(t->dtype, "f32") && strcmp(t->dtype, "i32") && strcmp(t->dtype, "i64")))
        return set_cause(cause, causecap, "helper"),
               kv_error(err, errlen,
                        "%s: tensors[%zu]: a scalar needs a number value, dtype "
                        "f32, i32 or i64 and no shape",
                        pre, i);
    } else if (strcmp(t->kind, "output") != 0) {
      json_t *in = json_object_get(v, "init");
      if (json_is_null(in) || !in)
        return set_cause(cause, causecap, "no_init"),
               kv_error(err, errlen, "%s %s: kevo cannot tell how to draw its values (%.200s)",
                        t->kind, t->name, t->note ? t->note : "no init");
      const char *dist = json_string_value(json_object_get(in, "dist"));
      if (!json_is_object(in) || !dist ||
          (strcmp(dist, "uniform") && strcmp(dist, "normal") && strcmp(dist, "int")))
        return set_cause(cause, causecap, "helper"),
               kv_error(err, errlen, "%s: tensors[%zu].init: needs dist uniform, normal or int",
                        pre, i);
      t->init = in;
    }
    x->nt++;
  }
  return 0;
}

/* Does expression f(c1, c2, k, a) hold for the dim in every run? */
enum form { F_NAME, F_MUL, F_DIV, F_ADD, F_MULADD, F_ADDDIV, F_PROD, F_SUM, F_DIFFDIV };

static int holds(const struct ctx *x, const int64_t *vals, enum form f, const struct cst *c1,
                 const struct cst *c2, int64_t k, int64_t a) {
  for (int r = 0; r < x->nruns; r++) {
    int64_t u = c1->v[r], w = c2 ? c2->v[r] : 0, y;
    if (u < -MAX_DIM_VALUE || u > MAX_DIM_VALUE || w < -MAX_DIM_VALUE || w > MAX_DIM_VALUE)
      return 0;
    switch (f) {
    case F_NAME:
      y = u;
      break;
    case F_MUL:
      y = u * k;
      break;
    case F_DIV:
      y = u / k;
      break;
    case F_ADD:
      y = u + a;
      break;
    case F_MULADD:
      y = u * k + a;
      break;
    case F_ADDDIV:
      y = (u + a) / k;
      break;
    case F_PROD:
      if (u != 0 && (w > MAX_DIM_VALUE / (u < 0 ? -u : u)))
        return 0;
      y = u * w;
      break;
    case F_DIFFDIV:
      if (u - w + a < 0)
        return 0;
      y = (u - w + a) / k;
      break;
    default:
      y = u + w;
      break;
    }
    if (y != vals[r])
      return 0;
  }
  return 1;
}

/* The first expression (names first, then fixed numbers, then simple
 * arithmetic on one or two constants) that gives the dim in every run. */
static int fit_dim(struct ctx *x, const int64_t *vals, char *out, size_t cap) {
  int same = 1;
  for (int r = 1; r < x->nruns; r++)
    same &= vals[r] == vals[0];
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < x->nc; i++) {
      struct cst *c = &x->c[i];
      if (c->varies != !pass || (!c->varies && (!same || vals[0] < 2)))
        continue;
      if (holds(x, vals, F_NAME, c, NULL, 0, 0)) {
        c->used = 1;
        snprintf(out, cap, "%s", c->name);
        return 0;
      }
    }
  if (same) {
    snprintf(out, cap, "%lld", (long long)vals[0]);
    return 0;
  }
  for (int i = 0; i < x->nc; i++) {
    struct cst *c = &x->c[i];
    if (!c->varies)
      continue;
    for (int64_t k = 2; k <= 64; k++) {
      if (holds(x, vals, F_MUL, c, NULL, k, 0)) {
        c->used = 1;
        snprintf(out, cap, "%s*%lld", c->name, (long long)k);
        return 0;
      }
      if (holds(x, vals, F_DIV, c, NULL, k, 0)) {
        c->used = 1;
        snprintf(out, cap, "%s/%lld", c->name, (long long)k);
        return 0;
      }
    }
    for (int64_t a = -64; a <= 64; a++)
      if (a && holds(x, vals, F_ADD, c, NULL, 0, a)) {
        c->used = 1;
        snprintf(out, cap, "%s%+lld", c->name, (long long)a);
        return 0;
      }
    for (int64_t k = 2; k <= 8; k++)
      for (int64_t a = -32; a <= 32; a++) {
        if (a && holds(x, vals, F_MULADD, c, NULL, k, a)) {
          c->used = 1;
          snprintf(out, cap, "%s*%lld%+lld", c->name, (long long)k, (long long)a);
          return 0;
        }
        if (a && holds(x, vals, F_ADDDIV, c, NULL, k, a)) {
          c->used = 1;
          snprintf(out, cap, "(%s%+lld)/%lld", c->name, (long long)a, (long long)k);
          return 0;
        }
      }
  }
  for (int i = 0; i < x->nc; i++)
    for (int j = i; j < x->nc; j++) {
      struct cst *c1 = &x->c[i], *c2 = &x->c[j];
      if (!c1->varies && !c2->varies)
        continue;
      if ((c1->varies || c1->v[0] >= 2) && (c2->varies || c2->v[0] >= 2) &&
          holds(x, vals, F_PROD, c1, c2, 0, 0)) {
        c1->used = c2->used = 1;
        snprintf(out, cap, "%s*%s", c1->name, c2->name);
        return 0;
      }
      if (c1->varies && c2->varies && holds(x, vals, F_SUM, c1, c2, 0, 0)) {
        c1->used = c2->used = 1;
        snprintf(out, cap, "%s+%s", c1->name, c2->name);
        return 0;
      }
    }
  /* (p1 - p2 + a) / k, the smallest |a| first over every pair: where the
   * runs' floors leave two fits, the module's own arithmetic is the one
   * with the smaller offset (a convolution's height - kernel_size + 1
   * rather than height - in_channels + 6). */
  for (int64_t m = 0; m <= 32; m++) {
    int64_t a = m % 2 ? (m + 1) / 2 : -(m / 2);
    for (int64_t k = 1; k <= 4; k++)
      for (int i = 0; i < x->nc; i++)
        for (int j = i + 1; j < x->nc; j++)
          for (int sw = 0; sw < 2; sw++) {
            struct cst *p1 = sw ? &x->c[i] : &x->c[j], *p2 = sw ? &x->c[j] : &x->c[i];
            if ((!p1->varies && !p2->varies) || !holds(x, vals, F_DIFFDIV, p1, p2, k, a))
              continue;
            p1->used = p2->used = 1;
            if (k == 1)
              snprintf(out, cap, "%s-%s%+lld", p1->name, p2->name, (long long)a);
            else
              snprintf(out, cap, "(%s-%s%+lld)/%lld", p1->name, p2->name, (long long)a,
                       (long long)k);
            return 0;
          }
  }
  return -1;
}

/* Fits every dim of every tensor over runs [0, nruns); -1 names the first
 * dim that fits no expression. */
static int fit_all(struct ctx *x, char *why, size_t whycap) {
  for (int i = 0; i < x->nc; i++) {
    x->c[i].used = 0;
    x->c[i].varies = 0;
    for (int r = 1; r < x->nruns; r++)
      if (x->c[i].v[r] != x->c[i].v[0])
        x->c[i].varies = 1;
  }
  for (int i = 0; i < x->nt; i++)
    for (int d = 0; d < x->t[i].ndim; d++) {
      int64_t vals[KV_IMPORT_MAX_RUNS] = {0};
      for (int r = 0; r < x->nruns; r++)
        vals[r] = x->t[i].dims[r][d];
      if (fit_dim(x, vals, x->t[i].expr[d], EXPR_MAX) < 0) {
        struct kv_buf b;
        kv_buf_init(&b, whycap);
        kv_buf_appendf(&b, "%s %s dim %d is", x->t[i].kind, x->t[i].name, d);
        for (int r = 0; r < x->nruns; r++)
          kv_buf_appendf(&b, "%s%lld", r ? ", " : " ", (long long)vals[r]);
        kv_buf_appendf(&b, " in the runs, which is not an expression of the size constants "
                           "kevo recognises");
        snprintf(why, whycap, "%s", b.data ? b.data : "");
        kv_buf_release(&b);
        return -1;
      }
    }
  return 0;
}

/* Keeps only the runs listed (run 0 always first). */
static void keep_runs(struct ctx *x, const int *keep, int n) {
  int kind[KV_IMPORT_MAX_RUNS] = {0};
  for (int r = 0; r < n; r++)
    kind[r] = x->kind[keep[r]];
  memcpy(x->kind, kind, sizeof kind);
  for (int i = 0; i < x->nc; i++) {
    int64_t v[KV_IMPORT_MAX_RUNS] = {0};
    for (int r = 0; r < n; r++)
      v[r] = x->c[i].v[keep[r]];
    memcpy(x->c[i].v, v, sizeof v);
  }
  for (int i = 0; i < x->nt; i++) {
    int64_t d[KV_IMPORT_MAX_RUNS][KV_MAX_DIMS] = {{0}};
    for (int r = 0; r < n; r++)
      memcpy(d[r], x->t[i].dims[keep[r]], sizeof d[r]);
    memcpy(x->t[i].dims, d, sizeof d);
  }
  x->nruns = n;
}

static int name_taken(const struct ctx *x, int upto, const char *s) {
  for (int i = 0; i < upto; i++)
    if (!strcmp(x->t[i].cname, s))
      return 1;
  for (int i = 0; i < x->nc; i++)
    if (x->c[i].used && !strcmp(x->c[i].name, s))
      return 1;
  return 0;
}

static double tol_for(const char *dtype) {
  if (!strcmp(dtype, "f16"))
    return 1e-2;
  if (!strcmp(dtype, "bf16"))
    return 2e-2;
  return 1e-4;
}

static size_t dtype_bytes(const char *d) {
  if (!strcmp(d, "f64") || !strcmp(d, "i64"))
    return 8;
  if (!strcmp(d, "f16") || !strcmp(d, "bf16"))
    return 2;
  if (!strcmp(d, "u8"))
    return 1;
  return 4;
}

/* The element count of pack g: a sum of its tensors' products, like terms
 * combined (kv_sumexpr). */
static void pack_total(const struct ctx *x, int g, struct kv_buf *b) {
  struct kv_sumexpr sum;
  memset(&sum, 0, sizeof sum);
  for (int i = 0; i < x->nt; i++) {
    const struct ten *t = &x->t[i];
    char *dims[KV_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++)
      dims[d] = (char *)t->expr[d];
    if (t->pack == g + 1)
      kv_sumexpr_add(&sum, dims, t->ndim);
  }
  char out[1100];
  /* too many terms: an expression the task parser refuses, naming it */
  kv_buf_appendf(b, "%s", kv_sumexpr_format(&sum, out, sizeof out) == 0 ? out : "(too many terms)");
}

/* An init rounded so that like layers share one: a symmetric uniform bound
 * or a zero-mean normal's std to the nearest power of two. A new object the
 * ctx keeps. */
static json_t *rounded_init(struct ctx *x, json_t *in) {
  const char *dist = json_string_value(json_object_get(in, "dist"));
  double lo = json_number_value(json_object_get(in, "lo")),
         hi = json_number_value(json_object_get(in, "hi")),
         mean = json_number_value(json_object_get(in, "mean")),
         sd = json_number_value(json_object_get(in, "std"));
  json_t *r = NULL;
  if (dist && !strcmp(dist, "uniform") && hi > 0 && lo == -hi) {
    double b = pow(2, round(log2(hi)));
    r = json_pack("{s:s,s:f,s:f}", "dist", "uniform", "lo", -b, "hi", b);
  } else if (dist && !strcmp(dist, "normal") && mean == 0 && sd > 0)
    r = json_pack("{s:s,s:f,s:f}", "dist", "normal", "mean", 0.0, "std", pow(2, round(log2(sd))));
  if (!r)
    return in;
  if (!x->keep)
    x->keep = json_array();
  json_array_append_new(x->keep, r);
  return r;
}

/* More params than an entry takes (every weight of a network is one): the
 * weights go into packed buffers, one per dtype and init; where that is
 * still too many, with like inits rounded together (rounded_init). Returns
 * the number of packs, 0 when every weight stays a param of its own. */
static int plan_packs(struct ctx *x) {
  int nparams = x->nt;
  for (int i = 0; i < x->nc; i++)
    nparams += x->c[i].used;
  for (int i = 0; i < x->nt; i++)
    x->t[i].pack = 0;
  if (nparams <= KV_MAX_PARAMS)
    return 0;
  int ng = 0;
  static _Thread_local char *key[MAX_TENSORS];
  static _Thread_local const char *gdtype[MAX_TENSORS];
  for (int round_inits = 0; round_inits < 2; round_inits++) {
    ng = 0;
    for (int i = 0; i < x->nt; i++) {
      struct ten *t = &x->t[i];
      if (!is_weight(t))
        continue;
      if (round_inits)
        t->init = rounded_init(x, t->init);
      char *k = json_dumps(t->init, JSON_SORT_KEYS | JSON_COMPACT | JSON_REAL_PRECISION(9));
      int g = 0;
      while (g < ng && !(k && !strcmp(key[g], k) && !strcmp(t->dtype, gdtype[g])))
        g++;
      if (g == ng && k) {
        key[ng] = k;
        gdtype[ng++] = t->dtype;
      } else
        free(k);
      t->pack = g + 1;
    }
    for (int g = 0; g < ng; g++)
      free(key[g]);
    int nw = 0;
    for (int i = 0; i < x->nt; i++)
      nw += x->t[i].pack != 0;
    if (nparams - nw + ng <= KV_MAX_PARAMS)
      break;
  }
  return ng;
}

/* One packed param: its name, shape (the sum), init and table. */
static json_t *pack_param(struct ctx *x, int g, const char *pname, struct kv_buf *bytes) {
  struct kv_buf total;
  kv_buf_init(&total, 8192);
  pack_total(x, g, &total);
  json_t *pack = json_array();
  const struct ten *first = NULL;
  for (int i = 0; i < x->nt; i++) {
    const struct ten *t = &x->t[i];
    if (t->pack != g + 1)
      continue;
    if (!first)
      first = t;
    json_t *shape = json_array();
    for (int d = 0; d < t->ndim; d++)
      json_array_append_new(shape, json_string(t->expr[d]));
    json_array_append_new(pack, json_pack("{s:s,s:o}", "name", t->name, "shape", shape));
  }
  json_t *p =
      json_pack("{s:s,s:s,s:s,s:[s],s:O,s:o}", "name", pname, "role", "in", "dtype", first->dtype,
                "shape", total.data ? total.data : "0", "init", first->init, "pack", pack);
  kv_buf_appendf(bytes, "%s%zu*(%s)", bytes->len ? " + " : "", dtype_bytes(first->dtype),
                 total.data ? total.data : "0");
  kv_buf_release(&total);
  return p;
}

static json_t *build(struct ctx *x, const char *name, const char *source_name, json_t *root,
                     const char *check_note) {
  char entry[KV_NAME_MAX];
  ident(name, "op_", entry, sizeof entry);
  /* Tensor param names: C identifiers, unique, apart from the sizes. */
  for (int i = 0; i < x->nt; i++) {
    char base[KV_NAME_MAX], cand[KV_NAME_MAX + 8];
    ident(x->t[i].name, "p_", base, sizeof base);
    if (x->t[i].suffix)
      strcat(base, "_");
    snprintf(cand, sizeof cand, "%s", base);
    for (int k = 2; name_taken(x, i, cand) || !strcmp(cand, entry); k++)
      snprintf(cand, sizeof cand, "%.50s_%d", base, k);
    snprintf(x->t[i].cname, sizeof x->t[i].cname, "%s", cand);
  }
  int npacks = plan_packs(x), npacked = 0;
  for (int i = 0; i < x->nt; i++) {
    struct ten *t = &x->t[i];
    npacked += t->pack != 0;
    /* A packed tensor's dim that is the same in every run is written as its
     * number (a conv's 3 input channels, not a constant that happens to be
     * 3), so that the table's offsets and the pack's size add up to numbers. */
    for (int d = 0; d < t->ndim && t->pack; d++) {
      int same = 1;
      for (int r = 1; r < x->nruns; r++)
        same &= t->dims[r][d] == t->dims[0][d];
      if (same)
        snprintf(t->expr[d], EXPR_MAX, "%lld", (long long)t->dims[0][d]);
    }
  }
  json_t *params = json_array();
  struct kv_buf bytes, inits;
  kv_buf_init(&bytes, 8192);
  kv_buf_init(&inits, 2048);
  double tol = 0;
  x->np = 0;
  for (int i = 0; i < x->nt; i++) {
    struct ten *t = &x->t[i];
    int out = !strcmp(t->kind, "output");
    if (t->pack) {
      if (i > 0 && x->t[i - 1].pack)
        continue;
      /* the packs, in the place of the first weight */
      for (int g = 0; g < npacks; g++) {
        char pname[KV_NAME_MAX];
        snprintf(pname, sizeof pname, npacks == 1 ? "weights" : "weights_%d", g);
        for (int k = 2; name_taken(x, x->nt, pname); k++)
          snprintf(pname, sizeof pname, npacks == 1 ? "weights%d" : "weights_%d_%d", g, k);
        json_array_append_new(params, pack_param(x, g, pname, &bytes));
        x->pmap[x->np++] = -1;
      }
      continue;
    }
    x->pmap[x->np++] = i;
    if (!strcmp(t->kind, "scalar")) {
      json_array_append_new(params, json_pack("{s:s,s:s,s:s,s:O}", "name", t->cname, "role",
                                              "scalar", "dtype", t->dtype, "value", t->value));
      continue;
    }
    json_t *shape = json_array();
    for (int d = 0; d < t->ndim; d++)
      json_array_append_new(shape, json_string(t->expr[d]));
    json_t *p = json_pack("{s:s,s:s,s:s,s:o}", "name", t->cname, "role", out ? "out" : "in",
                          "dtype", t->dtype, "shape", shape);
    if (!out)
      json_object_set(p, "init", t->init);
    else if (tol_for(t->dtype) > tol)
      tol = tol_for(t->dtype);
    json_array_append_new(params, p);
    kv_buf_appendf(&bytes, "%s%zu", bytes.len ? " + " : "", dtype_bytes(t->dtype));
    for (int d = 0; d < t->ndim; d++)
      kv_buf_appendf(
          &bytes, "*%s%s%s",
          strchr(t->expr[d], '+') || strchr(t->expr[d], '-') || strchr(t->expr[d], '/') ? "(" : "",
          t->expr[d],
          strchr(t->expr[d], '+') || strchr(t->expr[d], '-') || strchr(t->expr[d], '/') ? ")" : "");
    if (!out && strcmp(t->kind, "input") != 0 && t->note)
      kv_buf_appendf(&inits, "%s%s: %s", inits.len ? "; " : "", t->cname, t->note);
  }
  if (tol == 0)
    tol = 1e-4;
  json_t *check = json_array(), *bench = json_array();
  int nchecks = 0;
  for (int r = 0; r < x->nruns; r++)
    nchecks += x->kind[r] == RUN_CHECK;
  for (int r = 0; r < x->nruns; r++) {
    if (x->kind[r] == RUN_PROBE)
      continue;
    json_t *set = json_object();
    for (int i = 0; i < x->nc; i++)
      if (x->c[i].used)
        json_object_set_new(set, x->c[i].name, json_integer(x->c[i].v[r]));
    int dup = 0;
    for (size_t j = 0; j < json_array_size(check); j++)
      dup |= json_equal(json_array_get(check, j), set);
    if (r == 0)
      json_array_append(bench, set);
    if ((r > 0 || nchecks == 0) && !dup)
      json_array_append(check, set);
    json_decref(set);
  }
  for (int i = 0; i < x->nc; i++)
    if (x->c[i].used) {
      json_array_append_new(params, json_pack("{s:s,s:s}", "name", x->c[i].name, "role", "size"));
      if (x->np < (int)KV_ARRAY_LEN(x->pmap))
        x->pmap[x->np++] = -2 - i;
    }
  struct kv_buf sum;
  kv_buf_init(&sum, 4000);
  kv_buf_appendf(&sum,
                 "PyTorch module %s (KernelBench format), imported by kevo import: reference.py is "
                 "the module verbatim. Params: the tensors (and Python numbers, as scalars) of "
                 "get_inputs() in order, then Model's parameters and buffers (named_parameters, "
                 "named_buffers; '.' written '_'), then its outputs, then the size constants the "
                 "shapes use. Every input and weight is drawn afresh per seed",
                 source_name);
  if (npacks)
    kv_buf_appendf(&sum,
                   ". Model's %d parameters and buffers are more than an entry's %d params: they "
                   "are packed, each flattened row-major and back to back in that order, into %d "
                   "read-only buffer%s (weights%s), one per dtype and init; the prototype lists "
                   "every tensor's offset and shape. A pack's init: PyTorch's default for its "
                   "layers, a uniform bound or std rounded to a power of two where that was "
                   "needed to share buffers, a norm's ones and zeros drawn around them",
                   npacked, KV_MAX_PARAMS, npacks, npacks == 1 ? "" : "s",
                   npacks == 1 ? "" : "_0 ...");
  else if (inits.len)
    kv_buf_appendf(&sum, ": %s", inits.data);
  if (!npacks && inits.len && strstr(inits.data, "constant"))
    kv_buf_appendf(&sum, ". Defaults that are constants (a norm's ones and zeros) are drawn "
                         "uniformly around them so values still change per seed");
  if (inits.len && strstr(inits.data, "fan_in"))
    kv_buf_appendf(&sum, ". fan_in is the bench size's, so check sizes draw weights of the "
                         "bench size's magnitude");
  kv_buf_appendf(&sum, ". Check sizes: %s. Tolerance %g for %s outputs.", check_note, tol,
                 tol > 1e-4 ? "half-precision" : "float32");
  json_t *notes = json_object_get(root, "notes");
  size_t k;
  json_t *n;
  json_array_foreach(notes, k, n) if (json_is_string(n))
      kv_buf_appendf(&sum, " Note: %.300s.", json_string_value(n));
  json_t *task = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:{s:f,s:f}}", "name", name, "summary",
                           sum.data ? sum.data : "", "entry", entry, "params", params, "check",
                           check, "bench", bench, "tolerance", "atol", tol, "rtol", tol);
  /* cost.bytes is optional: one longer than an expression may be is left out */
  if (task && bytes.len < 1000)
    json_object_set_new(task, "cost", json_pack("{s:s}", "bytes", bytes.data ? bytes.data : "0"));
  kv_buf_release(&sum);
  kv_buf_release(&bytes);
  kv_buf_release(&inits);
  return task;
}

int kv_import_task_json(const char *output, size_t len, const char *name, const char *source_name,
                        char **task_json, char *cause, size_t causecap, char *err, size_t errlen) {
  *task_json = NULL;
  if (cause && causecap)
    cause[0] = 0;
  char *line = find_reply(output, len);
  if (!line)
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "the import helper printed no KEVO_IMPORT_JSON line");
  json_error_t je;
  json_t *root = json_loads(line, JSON_REJECT_DUPLICATES, &je);
  free(line);
  if (!root)
    return set_cause(cause, causecap, "helper"),
           kv_error(err, errlen, "the import helper's reply is not JSON (column %d: %s)", je.column,
                    je.text);
  struct ctx *x = calloc(1, sizeof *x);
  if (!x) {
    json_decref(root);
    return set_cause(cause, causecap, "helper"), kv_error(err, errlen, "out of memory");
  }
  int rc = -1;
  if (parse_reply(root, x, cause, causecap, err, errlen) < 0)
    goto out;
  /* Every run if the shapes are expressions of the constants in all of
   * them; else the bench run with one check run; else the bench run alone. */
  char why[512] = "", check_note[768];
  int total = x->nruns;
  struct ctx *saved = malloc(sizeof *saved);
  if (!saved) {
    set_cause(cause, causecap, "helper");
    kv_error(err, errlen, "out of memory");
    goto out;
  }
  memcpy(saved, x, sizeof *x);
  /* The runs that must all fit, most first: every check run, else one; with
   * every subset of the probes, all of them first. Else the bench run alone
   * (names or fixed numbers: that always fits). */
  int checks[KV_IMPORT_MAX_RUNS], probes[KV_IMPORT_MAX_RUNS], nck = 0, npr = 0;
  for (int q = 1; q < total; q++) {
    if (saved->kind[q] == RUN_CHECK)
      checks[nck++] = q;
    else
      probes[npr++] = q;
  }
  int fitted = 0;
  for (int cs = -1; !fitted && cs < nck; cs++)
    for (int mask = (1 << npr) - 1; !fitted && mask >= 0; mask--) {
      int keep[KV_IMPORT_MAX_RUNS], nk = 0;
      keep[nk++] = 0;
      for (int q = 0; q < nck; q++)
        if (cs < 0 || q == cs)
          keep[nk++] = checks[q];
      for (int q = 0; q < npr; q++)
        if (mask & (1 << q))
          keep[nk++] = probes[q];
      memcpy(x, saved, sizeof *x);
      keep_runs(x, keep, nk);
      char w2[512];
      fitted = fit_all(x, cs < 0 && mask == (1 << npr) - 1 ? why : w2,
                       cs < 0 && mask == (1 << npr) - 1 ? sizeof why : sizeof w2) == 0;
    }
  if (!fitted) {
    memcpy(x, saved, sizeof *x);
    int keep[1] = {0};
    keep_runs(x, keep, 1);
    fit_all(x, why, sizeof why);
  }
  free(saved);
  /* A constant the check runs scaled but no shape names (out_channels when
   * it equals in_channels, which the fit took) still shapes the module: it
   * is a size param too, so that the reference runs at a check size with
   * every constant the import's check run had. */
  for (int i = 0; i < x->nc; i++)
    for (int r = 1; r < x->nruns && !x->c[i].used; r++)
      if (x->kind[r] == RUN_CHECK && x->c[i].v[r] != x->c[i].v[0])
        x->c[i].used = x->c[i].varies = 1;
  int scaled = 0, nchk = 0;
  for (int r = 0; r < x->nruns; r++)
    nchk += x->kind[r] == RUN_CHECK;
  for (int i = 0; i < x->nc; i++)
    for (int r = 1; r < x->nruns; r++)
      scaled |= x->c[i].used && x->kind[r] == RUN_CHECK && x->c[i].v[r] != x->c[i].v[0];
  const char *bench_dev = json_string_value(json_object_get(root, "bench_device"));
  if (nchk > 0 && scaled) {
    struct kv_buf b;
    kv_buf_init(&b, sizeof check_note);
    kv_buf_appendf(&b, "the module's literal size constants scaled down (");
    int first = 1;
    for (int i = 0; i < x->nc; i++)
      if (x->c[i].used && x->c[i].varies) {
        kv_buf_appendf(&b, "%s%s %lld ->", first ? "" : ", ", x->c[i].name,
                       (long long)x->c[i].v[0]);
        for (int r = 1, k = 0; r < x->nruns; r++)
          if (x->kind[r] == RUN_CHECK)
            kv_buf_appendf(&b, "%s%lld", k++ ? "/" : " ", (long long)x->c[i].v[r]);
        first = 0;
      }
    kv_buf_appendf(&b, ") and run for real on the CPU; the bench size is its own (%s)",
                   bench_dev && !strcmp(bench_dev, "meta") ? "shapes from torch's meta device"
                                                           : "run on the CPU");
    snprintf(check_note, sizeof check_note, "%s", b.data ? b.data : "");
    kv_buf_release(&b);
  } else {
    snprintf(check_note, sizeof check_note,
             "the module's own sizes, the same as the bench size (%s)",
             why[0] ? why : "its shapes do not depend on constants kevo can scale down");
  }
  /* kevo's own rules: the same parser every task goes through. A name that
   * is a reserved word there (dim3, stream, half...) gets a '_' and the task
   * is built again. */
  struct kv_task *t = NULL;
  char perr[1024];
  char *text = NULL;
  for (int round = 0;; round++) {
    json_t *task = build(x, name, source_name, root, check_note);
    text = task ? json_dumps(task, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9))
                : NULL;
    json_decref(task);
    if (!text) {
      set_cause(cause, causecap, "helper");
      kv_error(err, errlen, "cannot write task.json (out of memory)");
      goto out;
    }
    if (kv_task_parse(text, strlen(text), "task.json", &t, perr, sizeof perr) == 0)
      break;
    int pi = -1, k = 0, used = 0;
    if (round < 16 && sscanf(perr, "task.json: params[%d].name%n", &pi, &k) == 1 && k > 0 &&
        (strstr(perr, "reserved") || strstr(perr, "collides") || strstr(perr, "'kevo_'"))) {
      int m = pi >= 0 && pi < x->np ? x->pmap[pi] : -1;
      if (m >= 0) {
        x->t[m].suffix = 1;
        used = 1;
      } else if (m <= -2 && strlen(x->c[-2 - m].name) + 2 < KV_NAME_MAX) {
        strcat(x->c[-2 - m].name, "_");
        used = 1;
      }
      if (used) {
        free(text);
        char w[512];
        fit_all(x, w, sizeof w);
        continue;
      }
    }
    free(text);
    set_cause(cause, causecap,
              strstr(perr, "bytes")                 ? "kevo_byte_caps"
              : strstr(perr, "params; use at most") ? "kevo_param_cap"
                                                    : "kevo_limits");
    kv_error(err, errlen, "the task it makes is not one kevo can hold: %s", perr);
    goto out;
  }
  for (int i = 0; i < t->ncheck + t->nbench; i++) {
    const struct kv_sizeset *s = i < t->ncheck ? &t->check[i] : &t->bench[i - t->ncheck];
    int64_t tot;
    if (kv_sizeset_bytes(t, s, &tot, perr, sizeof perr) < 0) {
      kv_task_free(t);
      free(text);
      set_cause(cause, causecap, "kevo_byte_caps");
      kv_error(err, errlen, "at its %s sizes: %s", i < t->ncheck ? "check" : "own (bench)", perr);
      goto out;
    }
  }
  kv_task_free(t);
  size_t n = strlen(text);
  char *grown = realloc(text, n + 2);
  if (grown) {
    memcpy(grown + n, "\n", 2);
    text = grown;
  }
  *task_json = text;
  rc = 0;
out:
  json_decref(x->keep);
  free(x);
  json_decref(root);
  return rc;
}
