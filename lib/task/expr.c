/* Integer shape and cost expressions: a recursive-descent evaluator over
 * int64 with overflow checks.
 *
 *   expr  := term (('+' | '-') term)*
 *   term  := unary (('*' | '/' | '%') unary)*
 *   unary := '-' unary | prim
 *   prim  := NUMBER | NAME | '(' expr ')'
 *
 * NAME is a size param; '/' and '%' truncate toward zero as in C. */
#include "task_internal.h"

#include <stdio.h>
#include <string.h>

struct ep {
  const struct kv_task *t;
  const struct kv_sizeset *s; /* NULL: check syntax and names only */
  const char *src;
  size_t pos;
  int depth;
  char *err;
  size_t errlen;
};

void kvt_vseterr(char *err, size_t errlen, const char *fmt, va_list ap) {
  if (!err || errlen == 0)
    return;
  vsnprintf(err, errlen, fmt, ap);
  for (char *p = err; *p; p++) {
    unsigned char ch = (unsigned char)*p;
    if (ch < 0x20 || ch == 0x7f)
      *p = '?';
  }
}

void kvt_seterr(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kvt_vseterr(err, errlen, fmt, ap);
  va_end(ap);
}

const char *kvt_quote(const char *s, size_t max, char *out, size_t cap) {
  size_t i = 0, n = 0;
  if (cap == 0)
    return out;
  if (!s)
    s = "(null)";
  if (max + 4 > cap)
    max = cap > 4 ? cap - 4 : 0;
  for (; s[n] && i < max; n++) {
    unsigned char ch = (unsigned char)s[n];
    out[i++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch; /* UTF-8 passes: names, not bytes */
  }
  if (s[n] && cap >= 4) {
    if (i + 4 > cap)
      i = cap - 4;
    memcpy(out + i, "...", 3);
    i += 3;
  }
  out[i] = '\0';
  return out;
}

void kvt_size_names(const struct kv_task *t, char *out, size_t cap) {
  size_t len = 0;
  if (cap == 0)
    return;
  out[0] = '\0';
  for (int i = 0; i < t->nparams && i < KV_MAX_PARAMS; i++) {
    if (t->params[i].role != KV_ROLE_SIZE)
      continue;
    int n = snprintf(out + len, cap - len, "%s%s", len ? " " : "", t->params[i].name);
    if (n < 0 || (size_t)n >= cap - len) {
      out[len] = '\0';
      return;
    }
    len += (size_t)n;
  }
  if (len == 0)
    snprintf(out, cap, "(none)");
}

static int fail(struct ep *p, size_t at, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(struct ep *p, size_t at, const char *fix, const char *fmt, ...) {
  char problem[256], q[72];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(problem, sizeof problem, fmt, ap);
  va_end(ap);
  kvt_seterr(p->err, p->errlen, "'%s': %s at column %zu; %s", kvt_quote(p->src, 60, q, sizeof q),
             problem, at + 1, fix);
  return -1;
}

static void skip_ws(struct ep *p) {
  while (p->src[p->pos] == ' ' || p->src[p->pos] == '\t')
    p->pos++;
}

static int is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

static int unexpected(struct ep *p, const char *expected) {
  unsigned char c = (unsigned char)p->src[p->pos];
  if (c == '\0')
    return fail(p, p->pos, "complete the expression", "unexpected end; expected %s", expected);
  if (c < 0x20 || c >= 0x7f)
    return fail(p, p->pos, "use only integers, size names, + - * / % ( ) and spaces",
                "unexpected byte 0x%02x; expected %s", c, expected);
  return fail(p, p->pos, "use only integers, size names, + - * / % ( ) and spaces",
              "unexpected '%c'; expected %s", c, expected);
}

static int parse_expr(struct ep *p, int64_t *v);

static int parse_prim(struct ep *p, int64_t *v) {
  skip_ws(p);
  size_t start = p->pos;
  char c = p->src[p->pos];
  if (is_digit(c)) {
    int64_t acc = 0;
    while (is_digit(p->src[p->pos])) {
      if (__builtin_mul_overflow(acc, 10, &acc) ||
          __builtin_add_overflow(acc, p->src[p->pos] - '0', &acc))
        return fail(p, start, "use a smaller number", "integer literal exceeds %lld",
                    (long long)INT64_MAX);
      p->pos++;
    }
    if (is_alpha(p->src[p->pos]))
      return fail(p, p->pos, "separate numbers and names with an operator",
                  "unexpected '%c' after a number", p->src[p->pos]);
    *v = acc;
    return 0;
  }
  if (is_alpha(c)) {
    size_t n = 0;
    while (is_alpha(p->src[p->pos + n]) || is_digit(p->src[p->pos + n]))
      n++;
    p->pos += n;
    for (int i = 0; i < p->t->nparams && i < KV_MAX_PARAMS; i++) {
      const struct kv_param *prm = &p->t->params[i];
      if (strlen(prm->name) != n || memcmp(prm->name, p->src + start, n) != 0)
        continue;
      if (prm->role != KV_ROLE_SIZE) {
        char names[512], fix[600];
        kvt_size_names(p->t, names, sizeof names);
        snprintf(fix, sizeof fix, "use only size params (%s)", names);
        return fail(p, start, fix, "'%s' is not a size (its role is %s)", prm->name,
                    kv_role_name(prm->role));
      }
      *v = p->s ? p->s->values[i] : 0;
      return 0;
    }
    char names[512], fix[600], q[48];
    char name[KVT_EXPR_MAX + 1];
    memcpy(name, p->src + start, n < KVT_EXPR_MAX ? n : KVT_EXPR_MAX);
    name[n < KVT_EXPR_MAX ? n : KVT_EXPR_MAX] = '\0';
    kvt_size_names(p->t, names, sizeof names);
    snprintf(fix, sizeof fix, "use only size params (%s)", names);
    return fail(p, start, fix, "unknown name '%s'", kvt_quote(name, 40, q, sizeof q));
  }
  if (c == '(') {
    if (++p->depth > KVT_EXPR_DEPTH)
      return fail(p, start, "simplify the expression", "nesting deeper than %d", KVT_EXPR_DEPTH);
    p->pos++;
    if (parse_expr(p, v) < 0)
      return -1;
    skip_ws(p);
    if (p->src[p->pos] != ')')
      return unexpected(p, "an operator or ')'");
    p->pos++;
    p->depth--;
    return 0;
  }
  return unexpected(p, "a number, a size name or '('");
}

static int parse_unary(struct ep *p, int64_t *v) {
  skip_ws(p);
  if (p->src[p->pos] != '-')
    return parse_prim(p, v);
  size_t at = p->pos;
  if (++p->depth > KVT_EXPR_DEPTH)
    return fail(p, at, "simplify the expression", "nesting deeper than %d", KVT_EXPR_DEPTH);
  p->pos++;
  int64_t x;
  if (parse_unary(p, &x) < 0)
    return -1;
  p->depth--;
  if (p->s && __builtin_sub_overflow((int64_t)0, x, v))
    return fail(p, at, "use smaller sizes or reorder the expression", "overflow in negation");
  if (!p->s)
    *v = 0;
  return 0;
}

static int parse_term(struct ep *p, int64_t *v) {
  int64_t acc;
  if (parse_unary(p, &acc) < 0)
    return -1;
  for (;;) {
    skip_ws(p);
    char op = p->src[p->pos];
    if (op != '*' && op != '/' && op != '%')
      break;
    size_t at = p->pos;
    p->pos++;
    int64_t rhs;
    if (parse_unary(p, &rhs) < 0)
      return -1;
    if (!p->s)
      continue;
    if (op == '*') {
      if (__builtin_mul_overflow(acc, rhs, &acc))
        return fail(p, at, "use smaller sizes", "64-bit overflow in '*'");
    } else if (rhs == 0) {
      return fail(p, at, "make the divisor non-zero for every size set", "%s by zero",
                  op == '/' ? "division" : "modulo");
    } else if (acc == INT64_MIN && rhs == -1) {
      if (op == '/')
        return fail(p, at, "use smaller sizes", "64-bit overflow in '/'");
      acc = 0;
    } else {
      acc = op == '/' ? acc / rhs : acc % rhs;
    }
  }
  *v = p->s ? acc : 0;
  return 0;
}

static int parse_expr(struct ep *p, int64_t *v) {
  int64_t acc;
  if (parse_term(p, &acc) < 0)
    return -1;
  for (;;) {
    skip_ws(p);
    char op = p->src[p->pos];
    if (op != '+' && op != '-')
      break;
    size_t at = p->pos;
    p->pos++;
    int64_t rhs;
    if (parse_term(p, &rhs) < 0)
      return -1;
    if (!p->s)
      continue;
    if (op == '+' ? __builtin_add_overflow(acc, rhs, &acc) : __builtin_sub_overflow(acc, rhs, &acc))
      return fail(p, at, "use smaller sizes", "64-bit overflow in '%c'", op);
  }
  *v = p->s ? acc : 0;
  return 0;
}

int kvt_expr(const struct kv_task *t, const struct kv_sizeset *s, const char *expr, int64_t *out,
             char *err, size_t errlen) {
  struct ep p = {t, s, expr, 0, 0, err, errlen};
  int64_t v = 0;
  if (!t || !expr) {
    kvt_seterr(err, errlen, "kv_expr_eval: no task or no expression; pass both");
    return -1;
  }
  size_t len = strnlen(expr, KVT_EXPR_MAX + 1);
  if (len > KVT_EXPR_MAX) {
    char q[72];
    kvt_seterr(err, errlen, "'%s': longer than %d characters; shorten the expression",
               kvt_quote(expr, 60, q, sizeof q), KVT_EXPR_MAX);
    return -1;
  }
  skip_ws(&p);
  if (expr[p.pos] == '\0')
    return fail(&p, p.pos, "write an integer expression over the size names", "empty expression");
  if (parse_expr(&p, &v) < 0)
    return -1;
  skip_ws(&p);
  if (expr[p.pos] != '\0')
    return unexpected(&p, "an operator");
  if (out)
    *out = v;
  return 0;
}

int kv_expr_eval(const struct kv_task *t, const struct kv_sizeset *s, const char *expr,
                 int64_t *out, char *err, size_t errlen) {
  if (!s) {
    kvt_seterr(err, errlen, "kv_expr_eval: no size set; pass one");
    return -1;
  }
  return kvt_expr(t, s, expr, out, err, errlen);
}
