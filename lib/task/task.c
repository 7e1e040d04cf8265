/* task.json v1: loading, parsing, strict validation (docs/task-format.md;
 * the format, v1). Every failure leaves one line "FILE: FIELD: problem; fix". */
#include "task_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define TASK_NAME_MAX 63
#define SUMMARY_MAX 4096
#define ALLOW_NAME_MAX 63
#define SIZE_VALUE_MAX 2147483647LL
/* Largest magnitude a double holds exactly as an integer (2^53). */
#define EXACT_INT_MAX 9007199254740992.0
/* Largest finite bfloat16 (0x7f7f). */
#define BF16_MAX 3.3895313892515355e38

static const char DTYPE_LIST[] = "f32 f64 i32 i64 u8 f16 bf16";
static const char ROLE_LIST[] = "in out inout size scalar";

/* ---- small tables ---------------------------------------------------- */

static const char *const dtype_names[KV_DTYPE_COUNT] = {"f32", "f64", "i32", "i64",
                                                        "u8",  "f16", "bf16"};
static const size_t dtype_sizes[KV_DTYPE_COUNT] = {4, 8, 4, 8, 1, 2, 2};

size_t kv_dtype_size(enum kv_dtype d) {
  return (unsigned)d < KV_DTYPE_COUNT ? dtype_sizes[d] : 0;
}

const char *kv_dtype_name(enum kv_dtype d) {
  return (unsigned)d < KV_DTYPE_COUNT ? dtype_names[d] : "?";
}

int kv_dtype_is_float(enum kv_dtype d) {
  return d == KV_F32 || d == KV_F64 || d == KV_F16 || d == KV_BF16;
}

const char *kv_dtype_ctype(enum kv_dtype d, enum kv_lang lang) {
  switch (d) {
  case KV_F32:
    return "float";
  case KV_F64:
    return "double";
  case KV_I32:
    return "int32_t";
  case KV_I64:
    return "int64_t";
  case KV_U8:
    return "uint8_t";
  case KV_F16:
    return lang == KV_LANG_CUDA ? "__half" : "uint16_t";
  case KV_BF16:
    return lang == KV_LANG_CUDA ? "__nv_bfloat16" : "uint16_t";
  default:
    return "void";
  }
}

const char *kv_role_name(enum kv_role r) {
  switch (r) {
  case KV_ROLE_IN:
    return "in";
  case KV_ROLE_OUT:
    return "out";
  case KV_ROLE_INOUT:
    return "inout";
  case KV_ROLE_SIZE:
    return "size";
  case KV_ROLE_SCALAR:
    return "scalar";
  default:
    return "?";
  }
}

static int is_buffer(enum kv_role r) {
  return r == KV_ROLE_IN || r == KV_ROLE_OUT || r == KV_ROLE_INOUT;
}

/* Words a parameter or entry name may not be: C11, C++ and CUDA keywords,
 * the type names the prototype uses, and names the shim or headers use. */
static const char *const reserved_words[] = {
    /* C11 */
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict",
    "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_Bool", "_Complex",
    "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local",
    /* C++ (CUDA sources are C++) */
    "alignas", "alignof", "and", "and_eq", "asm", "bitand", "bitor", "bool", "catch", "char8_t",
    "char16_t", "char32_t", "class", "compl", "concept", "consteval", "constexpr", "constinit",
    "const_cast", "co_await", "co_return", "co_yield", "decltype", "delete", "dynamic_cast",
    "explicit", "export", "false", "friend", "mutable", "namespace", "new", "noexcept", "not",
    "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
    "reinterpret_cast", "requires", "static_assert", "static_cast", "template", "this",
    "thread_local", "throw", "true", "try", "typeid", "typename", "using", "virtual", "wchar_t",
    "xor", "xor_eq",
    /* CUDA built-in variables and types */
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "cudaStream_t", "half",
    "nv_bfloat16",
    /* types and macros of the generated headers */
    "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
    "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "intmax_t", "uintmax_t", "NULL", "EOF", "errno",
    "assert", "offsetof", "stdin", "stdout", "stderr",
    /* names the generated shim uses */
    "stream", "args", "main"};

static const char *reserved_reason(const char *s) {
  for (size_t i = 0; i < sizeof reserved_words / sizeof reserved_words[0]; i++)
    if (strcmp(s, reserved_words[i]) == 0)
      return "is a reserved word (C, C++, CUDA or generated code)";
  if (s[0] == '_' && (s[1] == '_' || (s[1] >= 'A' && s[1] <= 'Z')))
    return "is a reserved identifier (leading underscore)";
  if (strncmp(s, "kevo_", 5) == 0)
    return "starts with 'kevo_', which kevo reserves";
  /* stdint.h macros: INT32_MAX, UINT8_C, SIZE_MAX, ... */
  static const char *const macro_prefix[] = {"INT",    "UINT",  "SIZE_",      "PTRDIFF_",
                                             "WCHAR_", "WINT_", "SIG_ATOMIC_"};
  int upper = 1;
  for (const char *p = s; *p; p++)
    if (*p >= 'a' && *p <= 'z')
      upper = 0;
  if (upper)
    for (size_t i = 0; i < sizeof macro_prefix / sizeof macro_prefix[0]; i++)
      if (strncmp(s, macro_prefix[i], strlen(macro_prefix[i])) == 0 && strchr(s, '_'))
        return "collides with a <stdint.h> macro";
  return NULL;
}

static int is_ident(const char *s) {
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
    return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return 1;
}

/* ---- parse context and messages ---------------------------------------- */

struct pctx {
  const char *file;
  char *err;
  size_t errlen;
};

static int fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct pctx *c, const char *fmt, ...) {
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kvt_seterr(c->err, c->errlen, "%s: %s", c->file, msg);
  return -1;
}

static const char *jkind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  default:
    return "null";
  }
}

static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  size_t row[33];
  if (la > 32 || lb > 32)
    return 99;
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (row[j] + 1 < best)
        best = row[j] + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* Every key of obj must be one of allowed (NULL-terminated). path is the
 * object's field path ("" at the top level). */
static int check_keys(struct pctx *c, json_t *obj, const char *path, const char *const *allowed) {
  const char *key;
  json_t *val;
  json_object_foreach(obj, key, val) {
    int ok = 0;
    const char *close = NULL;
    size_t best = 3;
    for (size_t i = 0; allowed[i]; i++) {
      if (strcmp(key, allowed[i]) == 0)
        ok = 1;
      size_t d = edit_distance(key, allowed[i]);
      if (d < best) {
        best = d;
        close = allowed[i];
      }
    }
    if (ok)
      continue;
    char list[256] = "", hint[96] = "", q[56];
    size_t len = 0;
    for (size_t i = 0; allowed[i]; i++) {
      int n = snprintf(list + len, sizeof list - len, "%s%s", i ? " " : "", allowed[i]);
      if (n < 0 || (size_t)n >= sizeof list - len)
        break;
      len += (size_t)n;
    }
    if (close)
      snprintf(hint, sizeof hint, " (did you mean '%s'?)", close);
    return fail(c, "%s%s%s: unknown key; use one of: %s%s", path, *path ? "." : "",
                kvt_quote(key, 40, q, sizeof q), list, hint);
  }
  return 0;
}

/* Reads a string field; *out is NULL when absent and not required. */
static int get_string(struct pctx *c, json_t *obj, const char *key, const char *field, int required,
                      size_t maxlen, const char **out) {
  json_t *v = json_object_get(obj, key);
  *out = NULL;
  if (!v) {
    if (required)
      return fail(c, "%s: missing; it is required", field);
    return 0;
  }
  if (!json_is_string(v))
    return fail(c, "%s: must be a string, not %s; quote it", field, jkind(v));
  const char *s = json_string_value(v);
  if (strlen(s) > maxlen)
    return fail(c, "%s: longer than %zu characters; shorten it", field, maxlen);
  *out = s;
  return 0;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

static int oom(struct pctx *c) {
  return fail(c, "(task): out of memory; free memory and retry");
}

static int parse_dtype(struct pctx *c, const char *field, const char *s, enum kv_dtype *out) {
  for (int i = 0; i < KV_DTYPE_COUNT; i++)
    if (strcmp(s, dtype_names[i]) == 0) {
      *out = (enum kv_dtype)i;
      return 0;
    }
  char q[56];
  return fail(c, "%s: '%s' is not a dtype; use one of %s", field, kvt_quote(s, 40, q, sizeof q),
              DTYPE_LIST);
}

/* Largest magnitude a float dtype holds. */
static double dtype_float_max(enum kv_dtype d) {
  switch (d) {
  case KV_F16:
    return 65504.0;
  case KV_BF16:
    return BF16_MAX;
  case KV_F32:
    return FLT_MAX;
  default:
    return DBL_MAX;
  }
}

/* Inclusive integer range of an integer dtype, or of exact integers in a
 * float dtype's init (the value is held in a double). */
static void dtype_int_range(enum kv_dtype d, double *lo, double *hi) {
  switch (d) {
  case KV_I32:
    *lo = -2147483648.0;
    *hi = 2147483647.0;
    break;
  case KV_U8:
    *lo = 0;
    *hi = 255;
    break;
  case KV_F16:
    *lo = -65504.0;
    *hi = 65504.0;
    break;
  default:
    *lo = -EXACT_INT_MAX;
    *hi = EXACT_INT_MAX;
    break;
  }
}

/* A JSON number as a double; must be finite. */
static int get_num(struct pctx *c, json_t *obj, const char *key, const char *field, double *out) {
  json_t *v = json_object_get(obj, key);
  if (!v)
    return fail(c, "%s: missing; give a number", field);
  if (!json_is_number(v))
    return fail(c, "%s: must be a number, not %s; write a plain JSON number", field, jkind(v));
  double x = json_number_value(v);
  if (!isfinite(x))
    return fail(c, "%s: not finite; use a finite number", field);
  *out = x;
  return 0;
}

static int check_int_value(struct pctx *c, const char *field, double x, enum kv_dtype d,
                           const char *what) {
  double lo, hi;
  dtype_int_range(d, &lo, &hi);
  if (x != floor(x))
    return fail(c, "%s: %.10g is not an integer; %s takes integers", field, x, what);
  if (x < lo || x > hi)
    return fail(c, "%s: %.10g does not fit %s; use an integer from %.0f to %.0f", field, x,
                kv_dtype_name(d), lo, hi);
  return 0;
}

static int parse_init(struct pctx *c, json_t *v, const char *path, enum kv_dtype dt,
                      struct kv_init *init) {
  char field[128];
  if (!json_is_object(v))
    return fail(c,
                "%s: must be an object, not %s; write e.g. {\"dist\": \"uniform\", \"lo\": -1, "
                "\"hi\": 1}",
                path, jkind(v));
  snprintf(field, sizeof field, "%s.dist", path);
  const char *dist;
  if (get_string(c, v, "dist", field, 1, 64, &dist) < 0)
    return -1;
  static const char *const keys_range[] = {"dist", "lo", "hi", NULL};
  static const char *const keys_normal[] = {"dist", "mean", "std", NULL};
  int isfloat = kv_dtype_is_float(dt);
  double fmax = isfloat ? dtype_float_max(dt) : 0;
  char fa[128], fb[128];
  if (strcmp(dist, "uniform") == 0 || strcmp(dist, "int") == 0) {
    int is_int = dist[0] == 'i';
    if (check_keys(c, v, path, keys_range) < 0)
      return -1;
    snprintf(fa, sizeof fa, "%s.lo", path);
    snprintf(fb, sizeof fb, "%s.hi", path);
    if (get_num(c, v, "lo", fa, &init->a) < 0 || get_num(c, v, "hi", fb, &init->b) < 0)
      return -1;
    if (!is_int && !isfloat)
      return fail(c,
                  "%s: 'uniform' needs a float dtype, not %s; use {\"dist\": \"int\", \"lo\": "
                  "..., \"hi\": ...}",
                  field, kv_dtype_name(dt));
    if (is_int) {
      if (check_int_value(c, fa, init->a, dt, "dist int") < 0 ||
          check_int_value(c, fb, init->b, dt, "dist int") < 0)
        return -1;
    } else {
      if (fabs(init->a) > fmax)
        return fail(c, "%s: %.10g is beyond the range of %s; use |lo| <= %.10g", fa, init->a,
                    kv_dtype_name(dt), fmax);
      if (fabs(init->b) > fmax)
        return fail(c, "%s: %.10g is beyond the range of %s; use |hi| <= %.10g", fb, init->b,
                    kv_dtype_name(dt), fmax);
    }
    if (init->a > init->b)
      return fail(c, "%s: %.10g is above hi (%.10g); make lo <= hi", fa, init->a, init->b);
    if (!is_int && !(init->b - init->a <= fmax))
      return fail(c, "%s: hi - lo overflows %s; narrow the range", fb, kv_dtype_name(dt));
    init->dist = is_int ? KV_DIST_INT : KV_DIST_UNIFORM;
    return 0;
  }
  if (strcmp(dist, "normal") == 0) {
    if (check_keys(c, v, path, keys_normal) < 0)
      return -1;
    snprintf(fa, sizeof fa, "%s.mean", path);
    snprintf(fb, sizeof fb, "%s.std", path);
    if (get_num(c, v, "mean", fa, &init->a) < 0 || get_num(c, v, "std", fb, &init->b) < 0)
      return -1;
    if (!isfloat)
      return fail(c,
                  "%s: 'normal' needs a float dtype, not %s; use {\"dist\": \"int\", \"lo\": "
                  "..., \"hi\": ...}",
                  field, kv_dtype_name(dt));
    if (init->b < 0)
      return fail(c, "%s: %.10g is negative; use a standard deviation >= 0", fb, init->b);
    /* Draws reach about 6.7 standard deviations. */
    if (!(fabs(init->a) + 8.0 * init->b <= fmax))
      return fail(c, "%s: draws would overflow %s; keep |mean| + 8*std <= %.10g", fb,
                  kv_dtype_name(dt), fmax);
    init->dist = KV_DIST_NORMAL;
    return 0;
  }
  char q[56];
  return fail(c, "%s: '%s' is not a distribution; use one of uniform normal int", field,
              kvt_quote(dist, 40, q, sizeof q));
}

static void default_init(enum kv_dtype d, struct kv_init *init) {
  init->dist = KV_DIST_DEFAULT;
  if (kv_dtype_is_float(d)) {
    init->a = -1;
    init->b = 1;
  } else if (d == KV_U8) {
    init->a = 0;
    init->b = 255;
  } else {
    init->a = -100;
    init->b = 100;
  }
}

/* The vendor libraries a cuda candidate may be allowed (lib/gate/nvcc.c
 * links them, lib/gate/compile.c's policy admits their symbols). */
static const char *const allow_names[] = {"cublas", "cublaslt", "cudnn", NULL};

/* field: "allow[2]", or "" (kevo eval --allow: the origin says it). */
static int check_allow_name(struct pctx *c, const char *field, const char *a) {
  char q[56], hint[64] = "";
  const char *close = NULL;
  size_t best = 3;
  for (size_t k = 0; allow_names[k]; k++) {
    if (strcmp(a, allow_names[k]) == 0)
      return 0;
    size_t d = strcasecmp(a, allow_names[k]) == 0 ? 0 : edit_distance(a, allow_names[k]);
    if (d < best) {
      best = d;
      close = allow_names[k];
    }
  }
  if (close)
    snprintf(hint, sizeof hint, " (did you mean '%s'?)", close);
  return fail(c, "%s%s'%s' is not a library kevo can link; use one of cublas cublaslt cudnn%s",
              field, *field ? ": " : "", kvt_quote(a, 40, q, sizeof q), hint);
}

static int parse_param(struct pctx *c, struct kv_task *t, json_t *v, int i) {
  static const char *const keys[] = {"name", "role",  "dtype", "shape",
                                     "init", "value", "pack",  NULL};
  struct kv_param *p = &t->params[i];
  char path[32], field[64], q[56];
  snprintf(path, sizeof path, "params[%d]", i);
  if (!json_is_object(v))
    return fail(c, "%s: must be an object, not %s; write {\"name\": ..., \"role\": ...}", path,
                jkind(v));
  if (check_keys(c, v, path, keys) < 0)
    return -1;

  const char *s;
  snprintf(field, sizeof field, "%s.name", path);
  if (get_string(c, v, "name", field, 1, 4096, &s) < 0)
    return -1;
  if (!is_ident(s))
    return fail(c,
                "%s: '%s' is not a C identifier; use letters, digits and '_', not starting "
                "with a digit",
                field, kvt_quote(s, 40, q, sizeof q));
  if (strlen(s) >= KV_NAME_MAX)
    return fail(c, "%s: longer than %d characters; shorten it", field, KV_NAME_MAX - 1);
  const char *why = reserved_reason(s);
  if (why)
    return fail(c, "%s: '%s' %s; choose another name", field, s, why);
  for (int j = 0; j < i; j++)
    if (strcmp(t->params[j].name, s) == 0)
      return fail(c, "%s: '%s' is already the name of params[%d]; give each param a unique name",
                  field, s, j);
  memcpy(p->name, s, strlen(s) + 1);

  snprintf(field, sizeof field, "%s.role", path);
  if (get_string(c, v, "role", field, 1, 4096, &s) < 0)
    return -1;
  static const char *const roles[] = {"in", "out", "inout", "size", "scalar"};
  int role = -1;
  for (int r = 0; r < 5; r++)
    if (strcmp(s, roles[r]) == 0)
      role = r;
  if (role < 0)
    return fail(c, "%s: '%s' is not a role; use one of %s", field, kvt_quote(s, 40, q, sizeof q),
                ROLE_LIST);
  p->role = (enum kv_role)role;

  json_t *dtype = json_object_get(v, "dtype");
  json_t *shape = json_object_get(v, "shape");
  json_t *init = json_object_get(v, "init");
  json_t *value = json_object_get(v, "value");

  snprintf(field, sizeof field, "%s.dtype", path);
  if (p->role == KV_ROLE_SIZE) {
    p->dtype = KV_I32;
    if (dtype && (!json_is_string(dtype) || strcmp(json_string_value(dtype), "i32") != 0))
      return fail(c, "%s: a size param is always an int; remove dtype (or write \"i32\")", field);
    if (shape)
      return fail(c, "%s.shape: a size param has no shape; remove it", path);
    if (init)
      return fail(c, "%s.init: a size param takes its value from the size set; remove init", path);
    if (value)
      return fail(c,
                  "%s.value: a size param takes its value from the size set (check, bench); "
                  "remove value",
                  path);
    return 0;
  }
  if (!dtype)
    return fail(c, "%s: missing; a %s param needs a dtype (one of %s)", field,
                kv_role_name(p->role), DTYPE_LIST);
  if (!json_is_string(dtype))
    return fail(c, "%s: must be a string, not %s; use one of %s", field, jkind(dtype), DTYPE_LIST);
  if (parse_dtype(c, field, json_string_value(dtype), &p->dtype) < 0)
    return -1;
  default_init(p->dtype, &p->init);

  if (is_buffer(p->role)) {
    snprintf(field, sizeof field, "%s.shape", path);
    if (!shape)
      return fail(c,
                  "%s: missing; a buffer needs a shape, e.g. [\"rows\", \"cols\"] ([] for one "
                  "element)",
                  field);
    if (!json_is_array(shape))
      return fail(c, "%s: must be an array, not %s; write e.g. [\"rows\", \"cols\"]", field,
                  jkind(shape));
    if (json_array_size(shape) > KV_MAX_DIMS)
      return fail(c, "%s: %zu dimensions; use at most %d", field, json_array_size(shape),
                  KV_MAX_DIMS);
    size_t d;
    json_t *e;
    json_array_foreach(shape, d, e) {
      char buf[32];
      const char *expr;
      if (json_is_integer(e)) {
        if (json_integer_value(e) < 0)
          return fail(c, "%s[%zu]: %lld is negative; use a size >= 0", field, d,
                      (long long)json_integer_value(e));
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(e));
        expr = buf;
      } else if (json_is_string(e)) {
        expr = json_string_value(e);
      } else {
        return fail(c, "%s[%zu]: must be a string or an integer, not %s; write e.g. \"rows\"",
                    field, d, jkind(e));
      }
      p->shape[d] = xstrdup(expr);
      if (!p->shape[d])
        return oom(c);
      p->ndim = (int)d + 1;
    }
    if (value)
      return fail(c, "%s.value: only scalar params take a value; remove it (or use init)", path);
    json_t *pack = json_object_get(v, "pack");
    char msg[1024];
    if (pack && kvt_pack_parse(t, p, pack, msg, sizeof msg) < 0)
      return fail(c, "%s.pack%s", path, msg);
    if (init && p->role == KV_ROLE_OUT)
      return fail(c,
                  "%s.init: out params are written by the entry, not initialized; remove init "
                  "(or make the role inout)",
                  path);
  } else { /* scalar */
    if (shape)
      return fail(c, "%s.shape: a scalar has no shape; remove it (or make it a buffer)", path);
    if (!!init == !!value)
      return fail(c, "%s: a scalar needs exactly one of value or init; %s", path,
                  init ? "remove one of them" : "add \"value\": NUMBER or an init");
    if (value) {
      snprintf(field, sizeof field, "%s.value", path);
      if (get_num(c, v, "value", field, &p->value) < 0)
        return -1;
      if (kv_dtype_is_float(p->dtype)) {
        if (fabs(p->value) > dtype_float_max(p->dtype))
          return fail(c, "%s: %.10g is beyond the range of %s; use a smaller value", field,
                      p->value, kv_dtype_name(p->dtype));
      } else if (check_int_value(c, field, p->value, p->dtype, kv_dtype_name(p->dtype)) < 0) {
        return -1;
      }
      p->has_value = 1;
    }
  }
  if (init) {
    snprintf(field, sizeof field, "%s.init", path);
    if (parse_init(c, init, field, p->dtype, &p->init) < 0)
      return -1;
  }
  return 0;
}

/* check or bench: an array of size sets. */
static int parse_sets(struct pctx *c, struct kv_task *t, json_t *arr, const char *key,
                      struct kv_sizeset *sets, int *nsets) {
  char names[512];
  kvt_size_names(t, names, sizeof names);
  if (!json_is_array(arr))
    return fail(c, "%s: must be an array of size sets, not %s; write e.g. [{\"rows\": 7}]", key,
                jkind(arr));
  size_t n = json_array_size(arr);
  if (n == 0)
    return fail(c, "%s: empty; give at least one size set", key);
  if (n > KV_MAX_SIZESETS)
    return fail(c, "%s: %zu size sets; use at most %d", key, n, KV_MAX_SIZESETS);
  for (size_t i = 0; i < n; i++) {
    json_t *set = json_array_get(arr, i);
    struct kv_sizeset *s = &sets[i];
    char q[56];
    if (!json_is_object(set))
      return fail(c, "%s[%zu]: must be an object, not %s; write e.g. {\"rows\": 7}", key, i,
                  jkind(set));
    const char *k;
    json_t *val;
    json_object_foreach(set, k, val) {
      int idx = -1;
      for (int j = 0; j < t->nparams; j++)
        if (strcmp(t->params[j].name, k) == 0)
          idx = j;
      if (idx < 0)
        return fail(c, "%s[%zu].%s: unknown size; give exactly the size params (%s)", key, i,
                    kvt_quote(k, 40, q, sizeof q), names);
      if (t->params[idx].role != KV_ROLE_SIZE)
        return fail(c,
                    "%s[%zu].%s: '%s' is not a size (its role is %s); give exactly the size "
                    "params (%s)",
                    key, i, k, k, kv_role_name(t->params[idx].role), names);
      if (!json_is_integer(val))
        return fail(c, "%s[%zu].%s: must be an integer, not %s; write e.g. %s: 1024", key, i, k,
                    jkind(val), k);
      json_int_t x = json_integer_value(val);
      if (x < 1 || x > SIZE_VALUE_MAX)
        return fail(c, "%s[%zu].%s: %lld is out of range; use an integer from 1 to %lld", key, i, k,
                    (long long)x, SIZE_VALUE_MAX);
      s->values[idx] = x;
    }
    for (int j = 0; j < t->nparams; j++)
      if (t->params[j].role == KV_ROLE_SIZE && !json_object_get(set, t->params[j].name))
        return fail(c, "%s[%zu].%s: missing; every size set gives every size param (%s)", key, i,
                    t->params[j].name, names);
  }
  *nsets = (int)n;
  return 0;
}

/* A cost or shape entry given as a string or a non-negative integer. */
static int parse_cost(struct pctx *c, struct kv_task *t, json_t *cost, const char *key,
                      char **out) {
  json_t *v = json_object_get(cost, key);
  char field[32], buf[32], msg[1024];
  const char *expr;
  snprintf(field, sizeof field, "cost.%s", key);
  if (!v)
    return 0;
  if (json_is_integer(v)) {
    if (json_integer_value(v) < 0)
      return fail(c, "%s: %lld is negative; use a count >= 0", field,
                  (long long)json_integer_value(v));
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    expr = buf;
  } else if (json_is_string(v)) {
    expr = json_string_value(v);
  } else {
    return fail(c, "%s: must be a string expression, not %s; write e.g. \"4*rows*cols\"", field,
                jkind(v));
  }
  if (kvt_expr(t, NULL, expr, NULL, msg, sizeof msg) < 0)
    return fail(c, "%s: %s", field, msg);
  *out = xstrdup(expr);
  return *out ? 0 : oom(c);
}

/* Shapes, byte caps and costs under one size set. */
static int check_set(struct pctx *c, struct kv_task *t, const struct kv_sizeset *s, const char *key,
                     int i) {
  char msg[1024];
  int64_t total, v;
  if (kv_sizeset_bytes(t, s, &total, msg, sizeof msg) < 0)
    return fail(c, "%s[%d]: %s", key, i, msg);
  for (int p = 0; p < t->nparams; p++)
    if (kvt_pack_check(t, p, s, msg, sizeof msg) < 0)
      return fail(c, "%s[%d]: %s", key, i, msg);
  const char *names[2] = {"bytes", "flops"};
  const char *exprs[2] = {t->cost_bytes, t->cost_flops};
  for (int k = 0; k < 2; k++) {
    if (!exprs[k])
      continue;
    if (kvt_expr(t, s, exprs[k], &v, msg, sizeof msg) < 0)
      return fail(c, "%s[%d]: cost.%s: %s", key, i, names[k], msg);
    if (v < 0)
      return fail(c, "%s[%d]: cost.%s: evaluates to %lld; a cost must be >= 0", key, i, names[k],
                  (long long)v);
  }
  return 0;
}

static int parse_root(struct pctx *c, struct kv_task *t, json_t *root) {
  static const char *const keys[] = {"name",  "summary",   "entry", "params", "check",
                                     "bench", "tolerance", "cost",  "allow",  NULL};
  char q[56];
  if (!json_is_object(root))
    return fail(c, "(top level): must be an object, not %s; write {\"name\": ..., ...}",
                jkind(root));
  if (check_keys(c, root, "", keys) < 0)
    return -1;

  const char *s;
  if (get_string(c, root, "name", "name", 1, 4096, &s) < 0)
    return -1;
  if (!*s || strlen(s) > TASK_NAME_MAX)
    return fail(c, "name: must have 1 to %d characters; give the task a short name", TASK_NAME_MAX);
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '-' || *p == '.')) {
      /* the character as written: a UTF-8 sequence whole, a control byte in hex */
      unsigned char b = (unsigned char)*p;
      int n = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
      char ch[16];
      if (b < 0x20 || b == 0x7f || (b >= 0x80 && b < 0xc0))
        snprintf(ch, sizeof ch, "\\x%02x", b);
      else
        snprintf(ch, sizeof ch, "%.*s", (int)strnlen(p, (size_t)n), p);
      return fail(c,
                  "name: '%s' has the character '%s'; use ASCII letters, digits, '_', '-' and "
                  "'.' (the name names files and tables)",
                  kvt_quote(s, 40, q, sizeof q), ch);
    }
  if (!(t->name = xstrdup(s)))
    return oom(c);

  if (get_string(c, root, "summary", "summary", 0, SUMMARY_MAX, &s) < 0)
    return -1;
  if (!(t->summary = xstrdup(s ? s : "")))
    return oom(c);

  if (get_string(c, root, "entry", "entry", 1, 4096, &s) < 0)
    return -1;
  if (!is_ident(s))
    return fail(c,
                "entry: '%s' is not a C identifier; use letters, digits and '_', not starting "
                "with a digit",
                kvt_quote(s, 40, q, sizeof q));
  if (strlen(s) >= KV_NAME_MAX)
    return fail(c, "entry: longer than %d characters; shorten it", KV_NAME_MAX - 1);
  const char *why = reserved_reason(s);
  if (why)
    return fail(c, "entry: '%s' %s; choose another name", s, why);
  if (!(t->entry = xstrdup(s)))
    return oom(c);

  json_t *params = json_object_get(root, "params");
  if (!params)
    return fail(c, "params: missing; list the entry's parameters in order");
  if (!json_is_array(params))
    return fail(c, "params: must be an array, not %s; list the entry's parameters in order",
                jkind(params));
  size_t np = json_array_size(params);
  if (np == 0)
    return fail(c, "params: empty; list the entry's parameters in order");
  if (np > KV_MAX_PARAMS)
    return fail(c, "params: %zu params; use at most %d", np, KV_MAX_PARAMS);
  for (size_t i = 0; i < np; i++) {
    t->nparams = (int)i + 1;
    if (parse_param(c, t, json_array_get(params, i), (int)i) < 0)
      return -1;
  }
  int nout = 0;
  for (int i = 0; i < t->nparams; i++)
    nout += t->params[i].role == KV_ROLE_OUT || t->params[i].role == KV_ROLE_INOUT;
  if (!nout)
    return fail(c, "params: no out or inout param; the entry must write at least one buffer");
  /* Shape expressions may name only size params, wherever they are listed. */
  for (int i = 0; i < t->nparams; i++) {
    char msg[1024];
    for (int d = 0; d < t->params[i].ndim; d++)
      if (kvt_expr(t, NULL, t->params[i].shape[d], NULL, msg, sizeof msg) < 0)
        return fail(c, "params[%d].shape[%d]: %s", i, d, msg);
  }

  json_t *check = json_object_get(root, "check");
  if (!check)
    return fail(c, "check: missing; give the size sets to check, e.g. [{\"rows\": 7}]");
  if (parse_sets(c, t, check, "check", t->check, &t->ncheck) < 0)
    return -1;
  json_t *bench = json_object_get(root, "bench");
  if (bench) {
    if (parse_sets(c, t, bench, "bench", t->bench, &t->nbench) < 0)
      return -1;
    if (t->nbench > KV_MAX_BENCH)
      return fail(c,
                  "bench: %d size sets; use at most %d (each is timed on its own: move the "
                  "others to check)",
                  t->nbench, KV_MAX_BENCH);
  } else {
    t->bench[0] = t->check[t->ncheck - 1];
    t->nbench = 1;
  }

  t->atol = t->rtol = 1e-5;
  json_t *tol = json_object_get(root, "tolerance");
  if (tol) {
    static const char *const tkeys[] = {"atol", "rtol", NULL};
    if (!json_is_object(tol))
      return fail(c,
                  "tolerance: must be an object, not %s; write {\"atol\": 1e-5, \"rtol\": "
                  "1e-5}",
                  jkind(tol));
    if (check_keys(c, tol, "tolerance", tkeys) < 0)
      return -1;
    double *dst[2] = {&t->atol, &t->rtol};
    for (int k = 0; k < 2; k++) {
      char field[32];
      snprintf(field, sizeof field, "tolerance.%s", tkeys[k]);
      if (!json_object_get(tol, tkeys[k]))
        continue;
      if (get_num(c, tol, tkeys[k], field, dst[k]) < 0)
        return -1;
      if (*dst[k] < 0)
        return fail(c, "%s: %.10g is negative; use a finite number >= 0", field, *dst[k]);
    }
  }

  json_t *cost = json_object_get(root, "cost");
  if (cost) {
    static const char *const ckeys[] = {"bytes", "flops", NULL};
    if (!json_is_object(cost))
      return fail(c,
                  "cost: must be an object, not %s; write {\"bytes\": \"...\", \"flops\": "
                  "\"...\"}",
                  jkind(cost));
    if (check_keys(c, cost, "cost", ckeys) < 0 ||
        parse_cost(c, t, cost, "bytes", &t->cost_bytes) < 0 ||
        parse_cost(c, t, cost, "flops", &t->cost_flops) < 0)
      return -1;
  }

  json_t *allow = json_object_get(root, "allow");
  if (allow) {
    if (!json_is_array(allow))
      return fail(c, "allow: must be an array of strings, not %s; write e.g. [\"cublas\"]",
                  jkind(allow));
    if (json_array_size(allow) > KV_MAX_ALLOW)
      return fail(c, "allow: %zu entries; use at most %d", json_array_size(allow), KV_MAX_ALLOW);
    size_t i;
    json_t *e;
    json_array_foreach(allow, i, e) {
      if (!json_is_string(e))
        return fail(c, "allow[%zu]: must be a string, not %s; write e.g. \"cublas\"", i, jkind(e));
      const char *a = json_string_value(e);
      if (!*a || strlen(a) > ALLOW_NAME_MAX)
        return fail(c, "allow[%zu]: must have 1 to %d characters; name a library, e.g. \"cublas\"",
                    i, ALLOW_NAME_MAX);
      char field[32];
      snprintf(field, sizeof field, "allow[%zu]", i);
      if (check_allow_name(c, field, a) < 0)
        return -1;
      for (int j = 0; j < t->nallow; j++)
        if (strcmp(t->allow[j], a) == 0)
          return fail(c, "allow[%zu]: '%s' is listed twice; remove the duplicate", i, a);
      if (!(t->allow[t->nallow] = xstrdup(a)))
        return oom(c);
      t->nallow++;
    }
  }

  /* Every size set: shapes evaluate, buffers fit the caps, costs evaluate.
   * Nothing is allocated from these sizes here or before. */
  for (int i = 0; i < t->ncheck; i++)
    if (check_set(c, t, &t->check[i], "check", i) < 0)
      return -1;
  if (bench)
    for (int i = 0; i < t->nbench; i++)
      if (check_set(c, t, &t->bench[i], "bench", i) < 0)
        return -1;
  return 0;
}

int kv_task_parse(const char *text, size_t len, const char *filename, struct kv_task **out,
                  char *err, size_t errlen) {
  struct pctx c = {filename && *filename ? filename : "task.json", err, errlen};
  if (out)
    *out = NULL;
  if (!text || !out)
    return fail(&c, "(call): no text or no output pointer; pass both to kv_task_parse");
  if (len > KV_MAX_TASK_JSON)
    return fail(&c, "(file): %zu bytes, over the limit of %d bytes; shrink the spec", len,
                KV_MAX_TASK_JSON);
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return fail(&c, "line %d, column %d: invalid JSON: %s; fix the JSON there", je.line, je.column,
                je.text);
  struct kv_task *t = calloc(1, sizeof *t);
  if (!t) {
    json_decref(root);
    return oom(&c);
  }
  int rc = parse_root(&c, t, root);
  if (rc == 0) {
    t->json = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
    t->dir = xstrdup("");
    if (!t->json || !t->dir)
      rc = oom(&c);
  }
  json_decref(root);
  if (rc < 0) {
    kv_task_free(t);
    return -1;
  }
  *out = t;
  return 0;
}

void kv_task_free(struct kv_task *t) {
  if (!t)
    return;
  free(t->dir);
  free(t->name);
  free(t->summary);
  free(t->entry);
  for (int i = 0; i < KV_MAX_PARAMS; i++) {
    for (int d = 0; d < KV_MAX_DIMS; d++)
      free(t->params[i].shape[d]);
    kvt_pack_free(&t->params[i]);
  }
  free(t->cost_bytes);
  free(t->cost_flops);
  for (int i = 0; i < KV_MAX_ALLOW; i++)
    free(t->allow[i]);
  free(t->json);
  free(t);
}

/* ---- allow, added by the caller (kevo eval --allow) ----------------------- */

/* Adds one name (not yet listed) to t->allow and to t->json's "allow". */
static int allow_one(struct kv_task *t, json_t *root, const char *name, const char *origin,
                     char *err, size_t errlen) {
  struct pctx c = {origin, err, errlen};
  if (check_allow_name(&c, "", name) < 0)
    return -1;
  for (int j = 0; j < t->nallow; j++)
    if (strcmp(t->allow[j], name) == 0)
      return 0;
  if (t->nallow >= KV_MAX_ALLOW)
    return fail(&c, "allow: more than %d entries; name fewer", KV_MAX_ALLOW);
  json_t *arr = json_object_get(root, "allow");
  if (!arr) {
    arr = json_array();
    if (!arr || json_object_set_new(root, "allow", arr) < 0)
      return oom(&c);
  }
  if (!(t->allow[t->nallow] = xstrdup(name)) || json_array_append_new(arr, json_string(name)) < 0)
    return oom(&c);
  t->nallow++;
  return 0;
}

int kv_task_allow_add(struct kv_task *t, const char *list, const char *origin, char *err,
                      size_t errlen) {
  struct pctx c = {origin && *origin ? origin : "--allow", err, errlen};
  if (!t || !list)
    return fail(&c, "(call): no task or no list; pass both to kv_task_allow_add");
  json_t *root = t->json ? json_loads(t->json, 0, NULL) : NULL;
  if (!root)
    return fail(&c, "(task): its JSON does not parse; load the task again");
  char buf[1024];
  if (strlen(list) >= sizeof buf) {
    json_decref(root);
    return fail(&c, "'%.40s...': longer than %zu characters; name fewer libraries", list,
                sizeof buf - 1);
  }
  snprintf(buf, sizeof buf, "%s", list);
  int rc = 0;
  char *save = NULL;
  for (char *n = strtok_r(buf, ", ", &save); n && rc == 0; n = strtok_r(NULL, ", ", &save))
    rc = allow_one(t, root, n, c.file, err, errlen);
  if (rc == 0) {
    char *js = json_dumps(root, JSON_SORT_KEYS | JSON_COMPACT);
    if (!js)
      rc = oom(&c);
    else {
      free(t->json);
      t->json = js;
    }
  }
  json_decref(root);
  return rc;
}

/* Joins dir and name into out; -1 when it does not fit. */
static int join_path(char *out, size_t cap, const char *dir, const char *name) {
  size_t n = strlen(dir);
  int r;
  if (n == 0)
    r = snprintf(out, cap, "%s", name);
  else if (dir[n - 1] == '/')
    r = snprintf(out, cap, "%s%s", dir, name);
  else
    r = snprintf(out, cap, "%s/%s", dir, name);
  return (r < 0 || (size_t)r >= cap) ? -1 : 0;
}

int kv_task_load(const char *dir, struct kv_task **out, char *err, size_t errlen) {
  char path[4096], ref[4096];
  struct stat st;
  if (out)
    *out = NULL;
  if (!dir || !out) {
    kvt_seterr(err, errlen, "kv_task_load: no directory or no output pointer; pass both");
    return -1;
  }
  if (join_path(path, sizeof path, dir, "task.json") < 0 ||
      join_path(ref, sizeof ref, dir, "reference.c") < 0) {
    kvt_seterr(err, errlen, "%.200s...: path too long; use a shorter task directory path", dir);
    return -1;
  }
  if (*dir && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
    kvt_seterr(err, errlen, "%s: not a directory; pass a task directory that holds task.json", dir);
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      kvt_seterr(err, errlen,
                 "%s: not found; a task directory needs a task.json (docs/task-format.md; "
                 "examples/tasks/ has six)",
                 path);
    else
      kvt_seterr(err, errlen, "%s: cannot open (%s); make it readable", path, strerror(errno));
    return -1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    kvt_seterr(err, errlen, "%s: not a regular file; make task.json a plain file", path);
    return -1;
  }
  if (st.st_size > KV_MAX_TASK_JSON) {
    close(fd);
    kvt_seterr(err, errlen, "%s: (file): %lld bytes, over the limit of %d bytes; shrink the spec",
               path, (long long)st.st_size, KV_MAX_TASK_JSON);
    return -1;
  }
  size_t cap = KV_MAX_TASK_JSON + 1, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    kvt_seterr(err, errlen, "%s: out of memory; free memory and retry", path);
    return -1;
  }
  for (;;) {
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      kvt_seterr(err, errlen, "%s: read failed (%s); check the file", path, strerror(errno));
      free(buf);
      close(fd);
      return -1;
    }
    if (r == 0)
      break;
    len += (size_t)r;
    if (len == cap)
      break;
  }
  close(fd);
  struct kv_task *t = NULL;
  int rc = kv_task_parse(buf, len, path, &t, err, errlen);
  free(buf);
  if (rc < 0)
    return -1;
  /* kevo import writes reference.py: the gate runs it in the torch
   * reference worker (lib/gate/torchref.c). */
  char py[4096];
  int has_py = join_path(py, sizeof py, dir, "reference.py") == 0 && stat(py, &st) == 0 &&
               S_ISREG(st.st_mode);
  if (!has_py && (stat(ref, &st) != 0 || !S_ISREG(st.st_mode))) {
    kvt_seterr(err, errlen,
               "%s: not found; write the CPU reference there, defining void %s(...) as in the "
               "task's prototype",
               ref, t->entry);
    kv_task_free(t);
    return -1;
  }
  free(t->dir);
  if (!(t->dir = xstrdup(dir))) {
    kv_task_free(t);
    kvt_seterr(err, errlen, "%s: out of memory; free memory and retry", path);
    return -1;
  }
  *out = t;
  return 0;
}

/* ---- size sets ---------------------------------------------------------- */

int kv_param_elems(const struct kv_task *t, int p, const struct kv_sizeset *s, int64_t *out,
                   char *err, size_t errlen) {
  if (!t || !s || p < 0 || p >= t->nparams) {
    kvt_seterr(err, errlen,
               "kv_param_elems: no task, no size set or param %d out of range; pass "
               "a valid param index",
               p);
    return -1;
  }
  const struct kv_param *prm = &t->params[p];
  if (!is_buffer(prm->role)) {
    kvt_seterr(err, errlen,
               "params[%d]: '%s' is not a buffer (its role is %s); ask only for buffers", p,
               prm->name, kv_role_name(prm->role));
    return -1;
  }
  int64_t n = 1;
  char msg[1024];
  for (int d = 0; d < prm->ndim; d++) {
    int64_t v;
    if (kvt_expr(t, s, prm->shape[d], &v, msg, sizeof msg) < 0) {
      kvt_seterr(err, errlen, "params[%d].shape[%d]: %s", p, d, msg);
      return -1;
    }
    if (v < 0) {
      char q[72];
      kvt_seterr(err, errlen, "params[%d].shape[%d]: '%s' is %lld; a dimension must be >= 0", p, d,
                 kvt_quote(prm->shape[d], 60, q, sizeof q), (long long)v);
      return -1;
    }
    if (__builtin_mul_overflow(n, v, &n)) {
      kvt_seterr(err, errlen,
                 "params[%d].shape: the element count of '%s' overflows 64 bits; use "
                 "smaller sizes",
                 p, prm->name);
      return -1;
    }
  }
  int64_t bytes;
  int ovf = __builtin_mul_overflow(n, (int64_t)kv_dtype_size(prm->dtype), &bytes);
  if (ovf || bytes > KV_MAX_BUFFER_BYTES) {
    char sizes[512], nbytes[32];
    kv_sizeset_format(t, s, sizes, sizeof sizes);
    if (ovf)
      snprintf(nbytes, sizeof nbytes, "over 2^63");
    else
      snprintf(nbytes, sizeof nbytes, "%lld", (long long)bytes);
    char note[256];
    kv_task_cap_note(note, sizeof note);
    kvt_seterr(err, errlen,
               "params[%d]: '%s' needs %lld elements of %s (%s bytes), over the per-buffer "
               "limit of %lld bytes (%s); use smaller sizes than %s",
               p, prm->name, (long long)n, kv_dtype_name(prm->dtype), nbytes,
               (long long)KV_MAX_BUFFER_BYTES, note, sizes);
    return -1;
  }
  if (out)
    *out = n;
  return 0;
}

int kv_sizeset_bytes(const struct kv_task *t, const struct kv_sizeset *s, int64_t *total, char *err,
                     size_t errlen) {
  int64_t sum = 0;
  if (!t || !s) {
    kvt_seterr(err, errlen, "kv_sizeset_bytes: no task or no size set; pass both");
    return -1;
  }
  for (int i = 0; i < t->nparams; i++) {
    int64_t n;
    if (!is_buffer(t->params[i].role))
      continue;
    if (kv_param_elems(t, i, s, &n, err, errlen) < 0)
      return -1;
    /* Each buffer is at most KV_MAX_BUFFER_BYTES, so 32 of them cannot overflow. */
    sum += n * (int64_t)kv_dtype_size(t->params[i].dtype);
  }
  if (sum > KV_MAX_TOTAL_BYTES) {
    char sizes[512];
    kv_sizeset_format(t, s, sizes, sizeof sizes);
    char note[256];
    kv_task_cap_note(note, sizeof note);
    kvt_seterr(err, errlen,
               "params: the buffers need %lld bytes in all, over the total limit of %lld bytes "
               "(%s); use smaller sizes than %s",
               (long long)sum, (long long)KV_MAX_TOTAL_BYTES, note, sizes);
    return -1;
  }
  if (total)
    *total = sum;
  return 0;
}

int kv_sizeset_get(const struct kv_task *t, const struct kv_sizeset *s, const char *name,
                   int64_t *out) {
  if (!t || !s || !name)
    return -1;
  for (int i = 0; i < t->nparams; i++)
    if (t->params[i].role == KV_ROLE_SIZE && strcmp(t->params[i].name, name) == 0) {
      if (out)
        *out = s->values[i];
      return 0;
    }
  return -1;
}

void kv_sizeset_format(const struct kv_task *t, const struct kv_sizeset *s, char *out, size_t cap) {
  size_t len = 0;
  if (!out || cap == 0)
    return;
  out[0] = '\0';
  if (!t || !s)
    return;
  for (int i = 0; i < t->nparams; i++) {
    if (t->params[i].role != KV_ROLE_SIZE)
      continue;
    int n = snprintf(out + len, cap - len, "%s%s=%lld", len ? " " : "", t->params[i].name,
                     (long long)s->values[i]);
    if (n < 0 || (size_t)n >= cap - len) {
      out[len] = '\0';
      return;
    }
    len += (size_t)n;
  }
}
