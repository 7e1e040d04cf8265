/* Features observed in a kernel's code (KLineage's feature contracts): what
 * the code computes (a reduction), the optimization strategies it uses
 * (shared memory, vector loads, warp shuffles, tensor cores, async copies,
 * threads ...) and supporting choices (unrolling, barriers ...). Comments do
 * not count: they are blanked before the scan. A lexical reading, not a
 * proof: each feature names the tokens that show it (docs/presets.md). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/skills.h"
#include "kevo/util.h"

static const struct {
  const char *name;
  enum kv_feat_kind kind;
} feats[KV_FEAT_N] = {
    [KV_FEAT_REDUCTION] = {"reduction", KV_FEAT_PATTERN},
    [KV_FEAT_SMEM] = {"shared_memory", KV_FEAT_STRATEGY},
    [KV_FEAT_SMEM_DB] = {"smem_double_buffer", KV_FEAT_STRATEGY},
    [KV_FEAT_VECTOR] = {"vector_loads", KV_FEAT_STRATEGY},
    [KV_FEAT_SIMD] = {"simd_intrinsics", KV_FEAT_STRATEGY},
    [KV_FEAT_OMP_SIMD] = {"omp_simd", KV_FEAT_STRATEGY},
    [KV_FEAT_OMP_THREADS] = {"omp_threads", KV_FEAT_STRATEGY},
    [KV_FEAT_MULTI_ACC] = {"multi_accumulator", KV_FEAT_STRATEGY},
    [KV_FEAT_SHUFFLE] = {"warp_shuffle", KV_FEAT_STRATEGY},
    [KV_FEAT_ATOMICS] = {"atomics", KV_FEAT_STRATEGY},
    [KV_FEAT_TENSOR] = {"tensor_cores", KV_FEAT_STRATEGY},
    [KV_FEAT_ASYNC] = {"async_copy", KV_FEAT_STRATEGY},
    [KV_FEAT_UNROLL] = {"unroll", KV_FEAT_SUPPORT},
    [KV_FEAT_BARRIER] = {"barrier", KV_FEAT_SUPPORT},
    [KV_FEAT_GRID_STRIDE] = {"grid_stride", KV_FEAT_SUPPORT},
    [KV_FEAT_LDG] = {"ldg", KV_FEAT_SUPPORT},
    [KV_FEAT_RESTRICT] = {"restrict", KV_FEAT_SUPPORT},
    [KV_FEAT_LAUNCH_BOUNDS] = {"launch_bounds", KV_FEAT_SUPPORT},
    [KV_FEAT_CONST_MEM] = {"constant_memory", KV_FEAT_SUPPORT},
};

const char *kv_feature_name(int i) {
  return i >= 0 && i < KV_FEAT_N ? feats[i].name : "?";
}

enum kv_feat_kind kv_feature_kind(int i) {
  return i >= 0 && i < KV_FEAT_N ? feats[i].kind : KV_FEAT_SUPPORT;
}

int kv_feature_find(const char *name) {
  for (int i = 0; i < KV_FEAT_N; i++)
    if (!strcmp(feats[i].name, name))
      return i;
  return -1;
}

uint32_t kv_features_mask(enum kv_feat_kind k) {
  uint32_t m = 0;
  for (int i = 0; i < KV_FEAT_N; i++)
    if (feats[i].kind == k)
      m |= 1u << i;
  return m;
}

size_t kv_features_format(uint32_t bits, char *out, size_t cap) {
  size_t o = 0;
  out[0] = 0;
  for (int i = 0; i < KV_FEAT_N && o < cap; i++)
    if (bits >> i & 1u)
      o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "," : "", feats[i].name);
  if (!o)
    o = (size_t)snprintf(out, cap, "none");
  return o;
}

json_t *kv_features_json(uint32_t bits) {
  json_t *a = json_array();
  for (int i = 0; i < KV_FEAT_N; i++)
    if (bits >> i & 1u)
      json_array_append_new(a, json_string(feats[i].name));
  return a;
}

int kv_features_parse(const char *list, uint32_t *bits, char *err, size_t errlen) {
  *bits = 0;
  char tmp[512], names[600];
  snprintf(tmp, sizeof tmp, "%s", list ? list : "");
  for (char *save = NULL, *tok = strtok_r(tmp, ", \t", &save); tok;
       tok = strtok_r(NULL, ", \t", &save)) {
    if (!strcmp(tok, "none") || !strcmp(tok, "-"))
      continue;
    int k = kv_feature_find(tok);
    if (k < 0) {
      kv_features_format((1u << KV_FEAT_N) - 1u, names, sizeof names);
      return kv_error(err, errlen, "'%s' is not a feature kevo observes; use none or some of %s",
                      tok, names);
    }
    *bits |= 1u << k;
  }
  return 0;
}

/* ---- the scan ----------------------------------------------------------------- */

/* src with comments blanked (newlines kept), malloc'd. String literals stay:
 * inline PTX (mma.sync, cp.async) lives in them. */
char *skills_strip_comments(const char *src, size_t len) {
  char *o = malloc(len + 1);
  if (!o)
    return NULL;
  int st = 0; /* 0 code, 1 line comment, 2 block comment, 3 string, 4 char */
  for (size_t i = 0; i < len; i++) {
    char c = src[i], n = i + 1 < len ? src[i + 1] : 0;
    o[i] = c;
    if (st == 0 && c == '/' && (n == '/' || n == '*')) {
      st = n == '/' ? 1 : 2;
      o[i] = ' ';
    } else if (st == 1) {
      if (c == '\n')
        st = 0;
      else
        o[i] = ' ';
    } else if (st == 2) {
      if (c == '*' && n == '/') {
        o[i] = ' ';
        o[++i] = ' ';
        st = 0;
      } else if (c != '\n')
        o[i] = ' ';
    } else if (st == 3 || st == 4) {
      if (c == '\\' && i + 1 < len)
        o[i + 1] = src[i + 1], i++;
      else if (c == (st == 3 ? '"' : '\''))
        st = 0;
    } else if (c == '"')
      st = 3;
    else if (c == '\'')
      st = 4;
  }
  o[len] = 0;
  return o;
}

static int is_id(int c) {
  return isalnum(c) || c == '_';
}

/* The identifier starting the text at p is `w` (whole word) or starts with it (prefix). */
static int word_at(const char *line, const char *p, const char *w, int prefix) {
  size_t n = strlen(w);
  if (strncmp(p, w, n) || (p > line && is_id((unsigned char)p[-1])))
    return 0;
  return prefix || !is_id((unsigned char)p[n]);
}

static int has_word(const char *line, const char *w, int prefix) {
  for (const char *p = strstr(line, w); p; p = strstr(p + 1, w))
    if (word_at(line, p, w, prefix))
      return 1;
  return 0;
}

/* `#pragma` followed by the words of `what` (blanks free). */
static int pragma(const char *line, const char *what) {
  const char *p = line;
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p != '#')
    return 0;
  p++;
  while (*p == ' ' || *p == '\t')
    p++;
  if (strncmp(p, "pragma", 6))
    return 0;
  return strstr(p + 6, what) != NULL;
}

static const char *const vector_types[] = {
    "float2", "float4",  "double2", "int2",   "int4",           "uint2",   "uint4",
    "half2",  "__half2", "char4",   "uchar4", "__nv_bfloat162", "double4", "longlong2"};

static int vector_line(const char *l) {
  for (size_t i = 0; i < sizeof vector_types / sizeof *vector_types; i++)
    if (has_word(l, vector_types[i], 0))
      return 1;
  return 0;
}

/* Text that reads memory: an index, __ldg, a vector's component (v.x). */
static int loads(const char *t) {
  if (strchr(t, '[') || strstr(t, "__ldg("))
    return 1;
  static const char *const builtin[] = {"threadIdx", "blockIdx", "blockDim", "gridDim"};
  for (const char *p = strchr(t, '.'); p; p = strchr(p + 1, '.')) {
    if ((p[1] != 'x' && p[1] != 'y') || is_id((unsigned char)p[2]) || p == t ||
        !is_id((unsigned char)p[-1]))
      continue;
    const char *st = p;
    while (st > t && is_id((unsigned char)st[-1]))
      st--;
    int b = 0;
    for (size_t k = 0; k < 4; k++)
      b |= (size_t)(p - st) == strlen(builtin[k]) && !strncmp(st, builtin[k], (size_t)(p - st));
    if (!b)
      return 1;
  }
  return 0;
}

/* A statement accumulating values read from memory: `X op= ...[...]`,
 * `X = X op ...[`, `X = fmaxf(X, ...[` (or __ldg, v.x), `v += __shfl...`. The statement is the text
 * between
 * `;`, `{` and `}`, so a for header's `i += step` is its own statement. */
static int reduction_stmt(const char *s, size_t n) {
  char b[512];
  if (n >= sizeof b)
    n = sizeof b - 1;
  memcpy(b, s, n);
  b[n] = 0;
  const char *ops[] = {"+=", "*=", "|=", "&=", "^=", "-="};
  for (size_t k = 0; k < 6; k++) {
    const char *p = strstr(b, ops[k]);
    if (p && (loads(p + 2) || (k == 0 && strstr(p + 2, "__shfl"))))
      return 1;
  }
  /* X = X + ...[ or X = fmaxf(X, ...[ : the name before '=' reappears after it */
  const char *eq = strchr(b, '=');
  if (!eq || eq[1] == '=' || eq == b || strchr("!<>=", eq[-1]) || !loads(eq))
    return 0;
  const char *e = eq - 1;
  while (e > b && (*e == ' ' || *e == '\t'))
    e--;
  const char *st = e;
  while (st > b && is_id((unsigned char)st[-1]))
    st--;
  size_t k = (size_t)(e - st + 1);
  if (!k || !is_id((unsigned char)*st) || k > 64)
    return 0;
  char name[72];
  snprintf(name, sizeof name, "%.*s", (int)k, st);
  return has_word(eq + 1, name, 0);
}

/* Names of local arrays of arithmetic types declared on a line (not __shared__). */
static void array_decls(const char *l, char names[][48], int *n, int cap) {
  static const char *const types[] = {"float", "double", "int",   "__half",
                                      "half",  "float4", "float2"};
  if (strstr(l, "__shared__") || strchr(l, '(') > strchr(l, '['))
    return;
  for (size_t t = 0; t < sizeof types / sizeof *types; t++)
    for (const char *p = strstr(l, types[t]); p; p = strstr(p + 1, types[t])) {
      if (!word_at(l, p, types[t], 0))
        continue;
      const char *q = p + strlen(types[t]);
      while (*q == ' ')
        q++;
      const char *id = q;
      while (is_id((unsigned char)*q))
        q++;
      if (q > id && *q == '[' && *n < cap)
        snprintf(names[(*n)++], 48, "%.*s", (int)(q - id), id);
    }
}

static int atomic_call(const char *l) {
  for (const char *p = strstr(l, "atomic"); p; p = strstr(p + 1, "atomic"))
    if (word_at(l, p, "atomic", 1) && isupper((unsigned char)p[6]))
      return 1;
  return 0;
}

static void mark(struct kv_features *f, int k, int line) {
  if (!(f->bits >> k & 1u)) {
    f->bits |= 1u << k;
    f->line[k] = line;
  }
}

static void scan_line(const char *l, int ln, struct kv_features *f) {
  if (has_word(l, "__shared__", 0)) {
    mark(f, KV_FEAT_SMEM, ln);
    if (strstr(l, "[2]"))
      mark(f, KV_FEAT_SMEM_DB, ln);
  }
  if (vector_line(l) || strstr(l, "ld.global.v4") || strstr(l, "ld.global.nc.v4"))
    mark(f, KV_FEAT_VECTOR, ln);
  if (has_word(l, "_mm", 1) || has_word(l, "__m128", 1) || has_word(l, "__m256", 1) ||
      has_word(l, "__m512", 1) || has_word(l, "vld1q", 1) || has_word(l, "float32x4_t", 0))
    mark(f, KV_FEAT_SIMD, ln);
  if (pragma(l, "omp") && strstr(l, "simd"))
    mark(f, KV_FEAT_OMP_SIMD, ln);
  if (pragma(l, "omp") && (strstr(l, "parallel") || strstr(l, " for")))
    mark(f, KV_FEAT_OMP_THREADS, ln);
  if (has_word(l, "__shfl", 1) || (has_word(l, "__reduce_", 1) && strstr(l, "_sync")))
    mark(f, KV_FEAT_SHUFFLE, ln);
  if (atomic_call(l) || has_word(l, "__atomic_", 1) || has_word(l, "atomic_fetch_", 1) ||
      has_word(l, "_Atomic", 0) || (pragma(l, "omp") && strstr(l, "atomic")))
    mark(f, KV_FEAT_ATOMICS, ln);
  if (has_word(l, "wmma", 0) || strstr(l, "wmma::") || has_word(l, "mma_sync", 0) ||
      strstr(l, "mma.sync") || strstr(l, "wgmma") || has_word(l, "__hmma", 1))
    mark(f, KV_FEAT_TENSOR, ln);
  if (strstr(l, "cp.async") || has_word(l, "__pipeline_memcpy_async", 0) ||
      has_word(l, "memcpy_async", 0) || strstr(l, "cuda::pipeline"))
    mark(f, KV_FEAT_ASYNC, ln);
  if (pragma(l, "unroll"))
    mark(f, KV_FEAT_UNROLL, ln);
  if (has_word(l, "__syncthreads", 0) || has_word(l, "__syncwarp", 0) || strstr(l, "bar.sync") ||
      (pragma(l, "omp") && strstr(l, "barrier")))
    mark(f, KV_FEAT_BARRIER, ln);
  if (has_word(l, "for", 0) && strstr(l, "gridDim"))
    mark(f, KV_FEAT_GRID_STRIDE, ln);
  if (has_word(l, "__ldg", 0))
    mark(f, KV_FEAT_LDG, ln);
  if (has_word(l, "__restrict__", 0) || has_word(l, "__restrict", 0) || has_word(l, "restrict", 0))
    mark(f, KV_FEAT_RESTRICT, ln);
  if (has_word(l, "__launch_bounds__", 0))
    mark(f, KV_FEAT_LAUNCH_BOUNDS, ln);
  if (has_word(l, "__constant__", 0))
    mark(f, KV_FEAT_CONST_MEM, ln);
}

/* Reductions over the statements of the text (line: where one ends). */
static void scan_statements(const char *text, struct kv_features *f) {
  int ln = 1;
  const char *s = text;
  for (const char *p = text;; p++) {
    if (*p == ';' || *p == '{' || *p == '}' || *p == 0) {
      if (reduction_stmt(s, (size_t)(p - s)))
        mark(f, KV_FEAT_REDUCTION, ln);
      s = p + 1;
      if (!*p)
        break;
    }
    if (*p == '\n')
      ln++;
  }
}

/* Several accumulators: a local array (declared earlier) updated with +=. */
static void scan_accumulators(char *t, struct kv_features *f) {
  char arrays[32][48];
  int narr = 0, ln = 1;
  for (char *p = t; *p; ln++) {
    char *e = strchr(p, '\n');
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
    for (int a = 0; a < narr; a++) {
      char pat[64];
      snprintf(pat, sizeof pat, "%s[", arrays[a]);
      for (const char *q = strstr(line, pat); q; q = strstr(q + 1, pat)) {
        const char *close = strchr(q, ']');
        while (close && close[1] == '[')
          close = strchr(close + 1, ']');
        const char *r = close ? close + 1 : "";
        while (*r == ' ')
          r++;
        if (word_at(line, q, arrays[a], 0) && !strncmp(r, "+=", 2))
          mark(f, KV_FEAT_MULTI_ACC, ln);
      }
    }
    array_decls(line, arrays, &narr, 32);
    if (!e)
      break;
    p = e + 1;
  }
}

int kv_features_scan(const char *src, size_t len, struct kv_features *f) {
  memset(f, 0, sizeof *f);
  char *t = skills_strip_comments(src, len);
  if (!t)
    return -1;
  int ln = 1;
  for (char *p = t; *p; ln++) {
    char *e = strchr(p, '\n');
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
    scan_line(line, ln, f);
    if (!e)
      break;
    p = e + 1;
  }
  scan_statements(t, f);
  scan_accumulators(t, f);
  free(t);
  return 0;
}
