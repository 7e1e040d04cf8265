/* The kernel-only contract's launch lines (kevo/launch.h): a parser of
 * candidate source, i.e. of outside input. Every count and length is capped;
 * every error names the line, the field and the fix. */
#include "kevo/launch.h"

#include <stdio.h>
#include <string.h>

#include "task_internal.h"

#define TAG "kevo:launch"

struct def {
  char name[KV_NAME_MAX];
  char value[KV_LAUNCH_EXPR_MAX];
};

struct defs {
  int n;
  struct def d[KV_LAUNCH_DEFINES_MAX];
};

static int is_ident0(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_ident(char c) {
  return is_ident0(c) || (c >= '0' && c <= '9');
}

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* `#define NAME VALUE` where VALUE is made of integers, names, + - * / % ( )
 * and spaces (an integer expression, such as `(CV_THREADS * CV_PER_THREAD)`,
 * checked when a launch line uses it), with u/l suffixes dropped and a
 * trailing comment ignored: remembered, the first definition of a name wins.
 * Function-like macros and anything else are not. */
static void scan_define(const char *line, size_t n, struct defs *d) {
  size_t i = 0;
  while (i < n && is_space(line[i]))
    i++;
  if (i >= n || line[i] != '#')
    return;
  i++;
  while (i < n && is_space(line[i]))
    i++;
  if (n - i < 7 || memcmp(line + i, "define", 6) != 0 || !is_space(line[i + 6]))
    return;
  i += 6;
  while (i < n && is_space(line[i]))
    i++;
  size_t ns = i;
  if (i >= n || !is_ident0(line[i]))
    return;
  while (i < n && is_ident(line[i]))
    i++;
  size_t nl = i - ns;
  if (nl >= KV_NAME_MAX || (i < n && line[i] == '(')) /* too long, or a function-like macro */
    return;
  char val[KV_LAUNCH_EXPR_MAX];
  size_t vl = 0;
  while (i < n && is_space(line[i]))
    i++;
  while (i < n) {
    char ch = line[i];
    if (ch == '/' && i + 1 < n && (line[i + 1] == '/' || line[i + 1] == '*'))
      break;
    if (ch >= '0' && ch <= '9') {
      /* A number and its suffixes (10u, 64UL). */
      while (i < n && line[i] >= '0' && line[i] <= '9') {
        if (vl + 1 >= sizeof val)
          return;
        val[vl++] = line[i++];
      }
      while (i < n && (line[i] == 'u' || line[i] == 'U' || line[i] == 'l' || line[i] == 'L'))
        i++;
      continue;
    }
    if (!(is_ident(ch) || is_space(ch) || strchr("+-*/%()", ch)))
      return; /* not an integer expression */
    if (vl + 1 >= sizeof val)
      return;
    val[vl++] = is_space(ch) ? ' ' : ch;
    i++;
  }
  while (vl && val[vl - 1] == ' ')
    vl--;
  val[vl] = 0;
  if (!vl)
    return;
  for (int k = 0; k < d->n; k++)
    if (strlen(d->d[k].name) == nl && !memcmp(d->d[k].name, line + ns, nl))
      return;
  if (d->n >= KV_LAUNCH_DEFINES_MAX)
    return;
  memcpy(d->d[d->n].name, line + ns, nl);
  d->d[d->n].name[nl] = 0;
  memcpy(d->d[d->n].value, val, vl + 1);
  d->n++;
}

static int is_param(const struct kv_task *t, const char *name, size_t n) {
  for (int p = 0; p < t->nparams && p < KV_MAX_PARAMS; p++)
    if (strlen(t->params[p].name) == n && !memcmp(t->params[p].name, name, n))
      return 1;
  return 0;
}

/* Copies expression `in` (n bytes) into out with each #define name replaced
 * by (its value), recursively up to 16 levels; -1 when the result does not
 * fit, -2 when the definitions nest deeper (or refer to themselves). */
static int substitute(const struct kv_task *t, const struct defs *d, const char *in, size_t n,
                      char *out, size_t cap, size_t *o, int depth) {
  for (size_t i = 0; i < n;) {
    if (is_ident0(in[i])) {
      size_t s = i;
      while (i < n && is_ident(in[i]))
        i++;
      const char *rep = NULL;
      if (!is_param(t, in + s, i - s))
        for (int k = 0; k < d->n && !rep; k++)
          if (strlen(d->d[k].name) == i - s && !memcmp(d->d[k].name, in + s, i - s))
            rep = d->d[k].value;
      if (rep) {
        if (depth >= 16)
          return -2;
        if (*o + 3 >= cap)
          return -1;
        out[(*o)++] = '(';
        int r = substitute(t, d, rep, strlen(rep), out, cap, o, depth + 1);
        if (r < 0)
          return r;
        if (*o + 2 >= cap)
          return -1;
        out[(*o)++] = ')';
      } else {
        if (i - s >= cap - *o)
          return -1;
        memcpy(out + *o, in + s, i - s);
        *o += i - s;
      }
      continue;
    }
    if (*o + 1 >= cap)
      return -1;
    out[(*o)++] = in[i++];
  }
  out[*o] = 0;
  return 0;
}

struct lctx {
  const struct kv_task *t;
  const char *file;
  int line;
  char kernel[80]; /* quoted, for messages */
  char *err;
  size_t errlen;
};

static int lfail(struct lctx *c, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int lfail(struct lctx *c, const char *field, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kvt_seterr(c->err, c->errlen, "%s:%d: kevo:launch%s%s%s%s: %s", c->file, c->line,
             c->kernel[0] ? " " : "", c->kernel, field ? ": " : "", field ? field : "", msg);
  return -1;
}

/* Splits "(a, b, c)" (or a bare "a") at top-level commas into at most max
 * parts; returns the count or -1. */
static int split_list(const char *v, size_t n, const char *parts[], size_t lens[], int max) {
  if (n >= 2 && v[0] == '(' && v[n - 1] == ')') {
    v++;
    n -= 2;
  }
  int k = 0, depth = 0;
  size_t s = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && v[i] == '(')
      depth++;
    else if (i < n && v[i] == ')')
      depth--;
    if (i == n || (v[i] == ',' && depth == 0)) {
      if (k >= max)
        return -1;
      parts[k] = v + s;
      lens[k] = i - s;
      k++;
      s = i + 1;
    }
  }
  return k;
}

static void trim(const char **s, size_t *n) {
  while (*n && is_space(**s)) {
    (*s)++;
    (*n)--;
  }
  while (*n && is_space((*s)[*n - 1]))
    (*n)--;
}

static int parse_exprs(struct lctx *c, const struct defs *d, const char *field, const char *v,
                       size_t n, char out[][KV_LAUNCH_EXPR_MAX], int max, int *count) {
  const char *parts[4];
  size_t lens[4];
  int k = split_list(v, n, parts, lens, max);
  if (k < 0)
    return lfail(c, field, "more than %d values; write %s=(x%s)", max, field,
                 max == 3 ? ", y, z" : "");
  for (int i = 0; i < k; i++) {
    const char *p = parts[i];
    size_t l = lens[i];
    trim(&p, &l);
    char fname[32];
    snprintf(fname, sizeof fname, max > 1 ? "%s[%d]" : "%s", field, i);
    if (l == 0)
      return lfail(c, fname, "empty value; write an integer expression over the size names");
    size_t o = 0;
    int sr = substitute(c->t, d, p, l, out[i], KV_LAUNCH_EXPR_MAX, &o, 0);
    if (sr == -2)
      return lfail(c, fname,
                   "its #defines nest deeper than 16 (or refer to themselves); "
                   "define the value directly");
    if (sr < 0)
      return lfail(c, fname, "longer than %d characters with its #defines substituted; shorten it",
                   KV_LAUNCH_EXPR_MAX - 1);
    char e[600];
    if (kvt_expr(c->t, NULL, out[i], NULL, e, sizeof e) < 0)
      return lfail(c, fname, "%s (integer #defines of the source may be used too)", e);
  }
  *count = k;
  return 0;
}

static int parse_args(struct lctx *c, const char *v, size_t n, struct kv_launch *l) {
  const char *parts[KV_LAUNCH_ARGS_MAX + 1];
  size_t lens[KV_LAUNCH_ARGS_MAX + 1];
  int k = split_list(v, n, parts, lens, KV_LAUNCH_ARGS_MAX);
  if (k < 0)
    return lfail(c, "args", "more than %d arguments", KV_LAUNCH_ARGS_MAX);
  l->nargs = 0;
  if (k == 1) {
    const char *p = parts[0];
    size_t ln = lens[0];
    trim(&p, &ln);
    if (ln == 0)
      return 0; /* args=() */
  }
  for (int i = 0; i < k; i++) {
    const char *p = parts[i];
    size_t ln = lens[i];
    trim(&p, &ln);
    int found = -1;
    for (int q = 0; q < c->t->nparams && q < KV_MAX_PARAMS; q++)
      if (strlen(c->t->params[q].name) == ln && !memcmp(c->t->params[q].name, p, ln))
        found = q;
    if (found < 0) {
      char names[1024] = "", q[80];
      size_t u = 0;
      for (int j = 0; j < c->t->nparams && j < KV_MAX_PARAMS && u < sizeof names; j++)
        u += (size_t)snprintf(names + u, sizeof names - u, "%s%s", j ? " " : "",
                              c->t->params[j].name);
      char fname[16];
      snprintf(fname, sizeof fname, "args[%d]", i);
      char nm[64];
      snprintf(nm, sizeof nm, "%.*s", (int)(ln < 63 ? ln : 63), p);
      return lfail(c, fname, "'%s' is not a param of task %s; name the task's params (%s)",
                   kvt_quote(nm, 60, q, sizeof q), c->t->name ? c->t->name : "", names);
    }
    l->args[l->nargs++] = found;
  }
  return 0;
}

/* One value: "(...)" with balanced parentheses, else up to whitespace. */
static size_t value_len(const char *s, size_t n) {
  if (n && s[0] == '(') {
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
      if (s[i] == '(')
        depth++;
      else if (s[i] == ')' && --depth == 0)
        return i + 1;
    }
    return (size_t)-1; /* unbalanced */
  }
  size_t i = 0;
  while (i < n && !is_space(s[i]))
    i++;
  return i;
}

static int parse_line(struct lctx *c, const struct defs *d, const char *s, size_t n,
                      struct kv_launch *l) {
  memset(l, 0, sizeof *l);
  l->line = c->line;
  snprintf(l->smem, sizeof l->smem, "0");
  trim(&s, &n);
  /* KERNEL: an identifier (with ::) and template arguments in <...>. */
  size_t i = 0;
  int angle = 0;
  while (i < n && (angle > 0 || !is_space(s[i]))) {
    char ch = s[i];
    if (ch == '<')
      angle++;
    else if (ch == '>')
      angle--;
    if (angle < 0 ||
        !(is_ident(ch) || ch == ':' || ch == '<' || ch == '>' || ch == ',' || ch == ' ' ||
          ch == '-' || ch == '+' || ch == '*' || ch == '(' || ch == ')' || ch == '.'))
      break;
    i++;
  }
  if (i == 0 || (!is_ident0(s[0]) && s[0] != ':') || (i < n && s[i] == '='))
    return lfail(c, "kernel",
                 "no kernel name; write `// kevo:launch KERNEL grid=(...) block=(...) "
                 "args=(...)`");
  if (i < n && !is_space(s[i]))
    return lfail(c, "kernel",
                 "unexpected '%c' in the kernel's name; write the __global__ function's name "
                 "(template arguments in <...>)",
                 (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?');
  if (angle != 0)
    return lfail(c, "kernel",
                 "unbalanced <...> in the kernel's name; close its template "
                 "arguments");
  if (i >= KV_LAUNCH_KERNEL_MAX)
    return lfail(c, "kernel", "name longer than %d characters; shorten it",
                 KV_LAUNCH_KERNEL_MAX - 1);
  memcpy(l->kernel, s, i);
  l->kernel[i] = 0;
  kvt_quote(l->kernel, 60, c->kernel, sizeof c->kernel);
  int seen_grid = 0, seen_block = 0, seen_smem = 0, seen_args = 0;
  while (i < n) {
    while (i < n && is_space(s[i]))
      i++;
    if (i >= n)
      break;
    size_t ks = i;
    while (i < n && is_ident(s[i]))
      i++;
    char key[16];
    size_t kl = i - ks;
    snprintf(key, sizeof key, "%.*s", (int)(kl < 15 ? kl : 15), s + ks);
    if (kl == 0 || i >= n || s[i] != '=') {
      char q[40], at[32];
      snprintf(at, sizeof at, "%.*s", (int)(n - ks < 31 ? n - ks : 31), s + ks);
      return lfail(c, NULL,
                   "expected FIELD=VALUE at '%s'; the fields are grid=(...) block=(...) "
                   "smem=EXPR args=(...)",
                   kvt_quote(at, 30, q, sizeof q));
    }
    i++;
    size_t vl = value_len(s + i, n - i);
    if (vl == (size_t)-1)
      return lfail(c, key, "unbalanced parentheses; close every '('");
    if (vl == 0)
      return lfail(c, key, "no value; write %s=(...)", key);
    const char *v = s + i;
    i += vl;
    int *seen = !strcmp(key, "grid")    ? &seen_grid
                : !strcmp(key, "block") ? &seen_block
                : !strcmp(key, "smem")  ? &seen_smem
                : !strcmp(key, "args")  ? &seen_args
                                        : NULL;
    if (!seen)
      return lfail(c, key, "not a field; the fields are grid, block, smem and args");
    if ((*seen)++)
      return lfail(c, key, "given twice; give each field once");
    if (!strcmp(key, "grid")) {
      if (parse_exprs(c, d, "grid", v, vl, l->grid, 3, &l->ngrid) < 0)
        return -1;
    } else if (!strcmp(key, "block")) {
      if (parse_exprs(c, d, "block", v, vl, l->block, 3, &l->nblock) < 0)
        return -1;
    } else if (!strcmp(key, "smem")) {
      char one[1][KV_LAUNCH_EXPR_MAX];
      int k = 0;
      if (parse_exprs(c, d, "smem", v, vl, one, 1, &k) < 0)
        return -1;
      memcpy(l->smem, one[0], sizeof l->smem);
    } else if (parse_args(c, v, vl, l) < 0) {
      return -1;
    }
  }
  if (!seen_grid)
    return lfail(c, "grid", "missing; add grid=(blocks) e.g. grid=((rows+255)/256)");
  if (!seen_block)
    return lfail(c, "block", "missing; add block=(threads) e.g. block=(256)");
  if (!seen_args)
    return lfail(c, "args",
                 "missing; add args=(...) naming the task's params in the kernel's order");
  return 0;
}

static int eval_one(struct lctx *c, const struct kv_sizeset *s, const char *field, const char *expr,
                    int64_t lo, int64_t hi, const char *fix, int64_t *v) {
  char e[600], sz[256];
  if (kvt_expr(c->t, s, expr, v, e, sizeof e) < 0) {
    kv_sizeset_format(c->t, s, sz, sizeof sz);
    return lfail(c, field, "at %s: %s", sz, e);
  }
  if (*v < lo || *v > hi) {
    kv_sizeset_format(c->t, s, sz, sizeof sz);
    return lfail(c, field, "%lld at %s; it must be %lld..%lld: %s", (long long)*v, sz,
                 (long long)lo, (long long)hi, fix);
  }
  return 0;
}

static int dims(struct lctx *c, const struct kv_launch *l, const struct kv_sizeset *s,
                unsigned grid[3], unsigned block[3], unsigned *smem) {
  static const int64_t gmax[3] = {2147483647LL, 65535, 65535};
  static const int64_t bmax[3] = {1024, 1024, 64};
  int64_t prod = 1;
  for (int k = 0; k < 3; k++) {
    int64_t v = 1;
    char f[16];
    snprintf(f, sizeof f, "grid[%d]", k);
    if (k < l->ngrid && eval_one(c, s, f, l->grid[k], 1, gmax[k],
                                 "a grid needs at least one block (round up: (n+255)/256)", &v) < 0)
      return -1;
    grid[k] = (unsigned)v;
    v = 1;
    snprintf(f, sizeof f, "block[%d]", k);
    if (k < l->nblock &&
        eval_one(c, s, f, l->block[k], 1, bmax[k], "use 1..1024 threads a block", &v) < 0)
      return -1;
    block[k] = (unsigned)v;
    prod *= v;
  }
  if (prod > 1024) {
    char sz[256];
    kv_sizeset_format(c->t, s, sz, sizeof sz);
    return lfail(c, "block", "%lld threads a block at %s; use at most 1024", (long long)prod, sz);
  }
  int64_t sm = 0;
  if (eval_one(c, s, "smem", l->smem, 0, KV_LAUNCH_SMEM_MAX,
               "dynamic shared memory is at most 227 KiB a block", &sm) < 0)
    return -1;
  *smem = (unsigned)sm;
  return 0;
}

int kv_launch_dims(const struct kv_task *t, const struct kv_launch *l, const struct kv_sizeset *s,
                   unsigned grid[3], unsigned block[3], unsigned *smem, char *err, size_t errlen) {
  struct lctx c = {t, "candidate", l->line, "", err, errlen};
  kvt_quote(l->kernel, 60, c.kernel, sizeof c.kernel);
  if (l->ngrid < 1 || l->ngrid > 3 || l->nblock < 1 || l->nblock > 3)
    return lfail(&c, NULL, "malformed launch");
  return dims(&c, l, s, grid, block, smem);
}

size_t kv_launch_arg_bytes(const struct kv_task *t, int p) {
  if (p < 0 || p >= t->nparams)
    return 0;
  switch (t->params[p].role) {
  case KV_ROLE_SIZE:
    return sizeof(int);
  case KV_ROLE_SCALAR:
    return kv_dtype_size(t->params[p].dtype);
  default:
    return sizeof(void *);
  }
}

/* Where a `// kevo:launch` comment starts in line [s, s+n), or NULL. Only a
 * line comment whose text begins with the tag counts. */
static const char *find_tag(const char *s, size_t n, size_t *rest) {
  size_t i = 0;
  while (i < n && is_space(s[i]))
    i++;
  if (n - i < 2 || s[i] != '/' || s[i + 1] != '/')
    return NULL;
  i += 2;
  while (i < n && is_space(s[i]))
    i++;
  size_t tl = strlen(TAG);
  if (n - i < tl || memcmp(s + i, TAG, tl) != 0)
    return NULL;
  i += tl;
  if (i < n && !is_space(s[i]))
    return NULL; /* kevo:launcher, ... */
  *rest = n - i;
  return s + i;
}

int kv_launch_parse(const struct kv_task *t, const char *src, size_t len, const char *file,
                    struct kv_launch_plan *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!file)
    file = "candidate.cu";
  struct lctx c = {t, file, 0, "", err, errlen};
  if (!t || !src)
    return lfail(&c, NULL, "no task or no source");
  if (len > KV_SOURCE_MAX)
    return lfail(&c, NULL, "the source is larger than %d bytes; shorten it", KV_SOURCE_MAX);
  static __thread struct defs d;
  d.n = 0;
  /* Pass 1: the integer #defines; pass 2: the launch lines. */
  for (int pass = 0; pass < 2; pass++) {
    int line = 0;
    for (size_t i = 0; i < len;) {
      size_t e = i;
      while (e < len && src[e] != '\n')
        e++;
      line++;
      c.line = line;
      if (pass == 0) {
        scan_define(src + i, e - i, &d);
      } else {
        size_t rest = 0;
        const char *r = find_tag(src + i, e - i, &rest);
        if (r) {
          c.kernel[0] = 0;
          if (e - i > KV_LAUNCH_LINE_MAX)
            return lfail(&c, NULL, "line longer than %d bytes; shorten it", KV_LAUNCH_LINE_MAX);
          if (memchr(src + i, 0, e - i))
            return lfail(&c, NULL, "a NUL byte in the line; remove it");
          if (p->n >= KV_LAUNCH_MAX)
            return lfail(&c, NULL, "more than %d launch lines; fuse kernels", KV_LAUNCH_MAX);
          if (parse_line(&c, &d, r, rest, &p->l[p->n]) < 0)
            return -1;
          /* Every size set of the task must give launchable dimensions. */
          for (int k = 0; k < t->ncheck + t->nbench; k++) {
            const struct kv_sizeset *s = k < t->ncheck ? &t->check[k] : &t->bench[k - t->ncheck];
            unsigned g[3], b[3], sm;
            if (dims(&c, &p->l[p->n], s, g, b, &sm) < 0)
              return -1;
          }
          p->n++;
        }
      }
      i = e + 1;
    }
  }
  return p->n;
}

int kv_launch_has_entry(const struct kv_task *t, const char *src, size_t len) {
  if (!t || !t->entry || !src)
    return 0;
  size_t el = strlen(t->entry);
  for (size_t i = 0; i < len;) {
    char ch = src[i];
    if (ch == '/' && i + 1 < len && src[i + 1] == '/') {
      while (i < len && src[i] != '\n')
        i++;
    } else if (ch == '/' && i + 1 < len && src[i + 1] == '*') {
      i += 2;
      while (i + 1 < len && !(src[i] == '*' && src[i + 1] == '/'))
        i++;
      i += 2;
    } else if (ch == '"' || ch == '\'') {
      i++;
      while (i < len && src[i] != ch && src[i] != '\n') {
        if (src[i] == '\\')
          i++;
        i++;
      }
      i++;
    } else if (is_ident0(ch)) {
      size_t s = i;
      while (i < len && is_ident(src[i]))
        i++;
      if (i - s == el && !memcmp(src + s, t->entry, el)) {
        size_t k = i;
        while (k < len && (is_space(src[k]) || src[k] == '\n'))
          k++;
        if (k < len && src[k] == '(')
          return 1;
      }
    } else if (ch >= '0' && ch <= '9') {
      while (i < len && is_ident(src[i]))
        i++;
    } else {
      i++;
    }
  }
  return 0;
}
