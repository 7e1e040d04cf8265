/* LLM reply parsing: fenced blocks, the block that defines the entry, the
 * plan, and `// kevo:tune` declarations. See include/kevo/reply.h for the
 * rules. Everything here is linear in the size of the reply. */
#include "kevo/reply.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* Copies at most cap-1 bytes of s[0..n) into out for a message: printable
 * ASCII kept, anything else as '?', "..." when cut. */
static const char *quote(const char *s, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < cap; i++)
    out[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
  if (n > k && cap >= 4) {
    k = k > cap - 4 ? cap - 4 : k;
    memcpy(out + k, "...", 3);
    k += 3;
  }
  out[k] = '\0';
  return out;
}

static int is_idstart(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int is_idchar(int c) {
  return is_idstart(c) || (c >= '0' && c <= '9');
}
static int is_alpha(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_blank(int c) {
  return c == ' ' || c == '\t';
}
static int lower(int c) {
  return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c;
}

/* ---- text as lines ---------------------------------------------------- */

struct line {
  uint32_t off, len; /* len excludes the '\n' */
};

struct text {
  char *s; /* normalized (LF only), NUL-terminated */
  size_t n;
  struct line *lines;
  int nlines;
};

static void text_release(struct text *t) {
  free(t->s);
  free(t->lines);
  memset(t, 0, sizeof *t);
}

/* Normalizes line endings and splits into lines. */
static int text_load(struct text *t, const char *p, size_t len, char *err, size_t errlen) {
  memset(t, 0, sizeof *t);
  if (!p)
    return fail(err, errlen, "reply: no text");
  if (len > KV_REPLY_MAX)
    return fail(err, errlen, "reply: %zu bytes, more than the %u-byte limit; refused", len,
                (unsigned)KV_REPLY_MAX);
  const char *nul = memchr(p, '\0', len);
  if (nul)
    return fail(err, errlen, "reply: NUL byte at offset %zu; refused", (size_t)(nul - p));
  t->s = malloc(len + 1);
  if (!t->s)
    return fail(err, errlen, "reply: out of memory");
  size_t n = 0, nl = 0;
  for (size_t i = 0; i < len; i++) {
    char c = p[i];
    if (c == '\r') {
      c = '\n';
      if (i + 1 < len && p[i + 1] == '\n')
        i++;
    }
    nl += c == '\n';
    t->s[n++] = c;
  }
  t->s[n] = '\0';
  t->n = n;
  t->lines = malloc((nl + 1) * sizeof *t->lines);
  if (!t->lines) {
    text_release(t);
    return fail(err, errlen, "reply: out of memory");
  }
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n && start == n)
      break; /* no empty line after a final '\n' */
    if (i == n || t->s[i] == '\n') {
      t->lines[t->nlines].off = (uint32_t)start;
      t->lines[t->nlines].len = (uint32_t)(i - start);
      t->nlines++;
      start = i + 1;
    }
  }
  return 0;
}

static const char *L(const struct text *t, int i) {
  return t->s + t->lines[i].off;
}
static size_t LN(const struct text *t, int i) {
  return t->lines[i].len;
}

static int line_blank(const char *l, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!is_blank(l[i]))
      return 0;
  return 1;
}

static int text_blank(const struct text *t) {
  for (size_t i = 0; i < t->n; i++)
    if (!is_blank(t->s[i]) && t->s[i] != '\n')
      return 0;
  return 1;
}

/* ---- a small growable string (bounded by the reply's size) ------------- */

struct sb {
  char *s;
  size_t n, cap;
  int oom;
};

static void sb_add(struct sb *b, const char *p, size_t n) {
  if (b->oom)
    return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->n + n + 1 > cap)
      cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
      b->oom = 1;
      return;
    }
    b->s = s;
    b->cap = cap;
  }
  memcpy(b->s + b->n, p, n);
  b->n += n;
  b->s[b->n] = '\0';
}

/* Returns the string (never NULL unless out of memory) and resets b. */
static char *sb_take(struct sb *b) {
  if (b->oom) {
    free(b->s);
    memset(b, 0, sizeof *b);
    return NULL;
  }
  char *s = b->s ? b->s : calloc(1, 1);
  memset(b, 0, sizeof *b);
  return s;
}

/* ---- fences ------------------------------------------------------------ */

struct block {
  int open;       /* line of the opening fence */
  int first, end; /* content lines [first, end) */
  int close;      /* line of the closing fence, -1 when unterminated */
  int indent;     /* spaces before the opening fence */
  char tag[16];
  int cls; /* 1: C family, -1: not code, 0: none or unknown */
  char *content;
  size_t clen;
  int defines, looks;
};

static int leading_spaces(const char *l, size_t n) {
  size_t i = 0;
  while (i < n && l[i] == ' ')
    i++;
  return (int)i;
}

/* An opening fence: returns 1 with its indent, character, length and info. */
static int fence_open(const char *l, size_t n, int *indent, char *ch, size_t *count,
                      const char **info, size_t *infolen) {
  size_t i = (size_t)leading_spaces(l, n);
  if (i > 3 || i >= n || (l[i] != '`' && l[i] != '~'))
    return 0;
  char c = l[i];
  size_t k = i;
  while (k < n && l[k] == c)
    k++;
  if (k - i < 3)
    return 0;
  size_t a = k, b = n;
  while (a < b && is_blank(l[a]))
    a++;
  while (b > a && is_blank(l[b - 1]))
    b--;
  if (c == '`' && memchr(l + a, '`', b - a))
    return 0;
  *indent = (int)i;
  *ch = c;
  *count = k - i;
  *info = l + a;
  *infolen = b - a;
  return 1;
}

static int fence_close(const char *l, size_t n, char ch, size_t count) {
  size_t i = (size_t)leading_spaces(l, n);
  if (i > 3)
    return 0;
  size_t k = i;
  while (k < n && l[k] == ch)
    k++;
  return k - i >= count && line_blank(l + k, n - k);
}

static const char *const C_TAGS[] = {"c",   "h",  "cpp", "c++",  "cc", "cxx",
                                     "hpp", "hh", "hxx", "cuda", "cu", "cuh"};
static const char *const OTHER_TAGS[] = {
    "text", "txt",        "plain", "plaintext", "markdown", "md",     "bash",
    "sh",   "zsh",        "shell", "console",   "terminal", "python", "py",
    "json", "yaml",       "yml",   "toml",      "ini",      "xml",    "html",
    "diff", "patch",      "make",  "makefile",  "cmake",    "output", "log",
    "sql",  "javascript", "js",    "rust",      "go",       "java"};

static int tag_class(const char *tag) {
  for (size_t i = 0; i < sizeof C_TAGS / sizeof *C_TAGS; i++)
    if (!strcmp(tag, C_TAGS[i]))
      return 1;
  for (size_t i = 0; i < sizeof OTHER_TAGS / sizeof *OTHER_TAGS; i++)
    if (!strcmp(tag, OTHER_TAGS[i]))
      return -1;
  return 0;
}

/* The info string's first word: `{.c}`, `c title="x"`, `cuda:kernel.cu` give
 * c, c and cuda. */
static void info_tag(const char *info, size_t n, char tag[16]) {
  size_t i = 0, k = 0;
  while (i < n && (info[i] == '{' || info[i] == '.'))
    i++;
  for (; i < n && k < 15; i++) {
    char c = info[i];
    if (is_blank(c) || c == ',' || c == ':' || c == '{' || c == '}' || c == ';')
      break;
    tag[k++] = (char)lower((unsigned char)c);
  }
  tag[k] = '\0';
}

/* ---- C scanning -------------------------------------------------------- */

/* Significant tokens for the definition test: identifiers, ( ) {, and
 * anything else as one 'x' per run. */
struct tok {
  uint32_t pos, len;
  char kind;     /* 'i', '(', ')', '{', 'x' */
  int32_t match; /* for '(': index of the matching ')', or -1 */
};

struct toks {
  struct tok *v;
  size_t n, cap;
  int oom;
};

static void tok_add(struct toks *t, char kind, size_t pos, size_t len) {
  if (t->oom)
    return;
  if (kind == 'x' && t->n && t->v[t->n - 1].kind == 'x')
    return;
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 256;
    struct tok *v = realloc(t->v, cap * sizeof *v);
    if (!v) {
      t->oom = 1;
      return;
    }
    t->v = v;
    t->cap = cap;
  }
  t->v[t->n++] = (struct tok){(uint32_t)pos, (uint32_t)len, kind, -1};
}

/* Skips a literal starting at s[i] (a quote); it ends at the matching quote
 * or at the end of the line. Returns the index after it. */
static size_t skip_literal(const char *s, size_t n, size_t i) {
  char q = s[i++];
  while (i < n && s[i] != '\n') {
    if (s[i] == '\\' && i + 1 < n && s[i + 1] != '\n') {
      i += 2;
      continue;
    }
    if (s[i++] == q)
      break;
  }
  return i;
}

static void tokenize(const char *s, size_t n, struct toks *t) {
  int bol = 1;
  size_t i = 0;
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      bol = 1;
      i++;
    } else if (is_blank(c) || c == '\f' || c == '\v') {
      i++;
    } else if (bol && c == '#') { /* preprocessor line, with continuations */
      while (i < n && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n')
          i++;
        i++;
      }
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n')
        i++;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      const char *e = NULL;
      for (size_t k = i + 2; k + 1 < n; k++)
        if (s[k] == '*' && s[k + 1] == '/') {
          e = s + k;
          break;
        }
      i = e ? (size_t)(e - s) + 2 : n;
    } else if (c == '"' || c == '\'') {
      bol = 0;
      tok_add(t, 'x', i, 1);
      i = skip_literal(s, n, i);
    } else if (is_idstart((unsigned char)c)) {
      bol = 0;
      size_t k = i;
      while (k < n && is_idchar((unsigned char)s[k]))
        k++;
      tok_add(t, 'i', i, k - i);
      i = k;
    } else if (c >= '0' && c <= '9') {
      bol = 0;
      size_t k = i;
      while (k < n && (is_idchar((unsigned char)s[k]) || s[k] == '.'))
        k++;
      tok_add(t, 'x', i, k - i);
      i = k;
    } else {
      bol = 0;
      tok_add(t, (c == '(' || c == ')' || c == '{') ? c : 'x', i, 1);
      i++;
    }
  }
}

/* 1 when s[0..n) defines `entry`, 0 when not, -1 when out of memory. */
static int defines_entry(const char *s, size_t n, const char *entry) {
  if (!entry)
    return 0;
  size_t elen = strlen(entry);
  struct toks t = {0};
  tokenize(s, n, &t);
  if (t.oom) {
    free(t.v);
    return -1;
  }
  /* Match parentheses with a stack threaded through the match fields. */
  int32_t top = -1;
  for (size_t k = 0; k < t.n; k++) {
    if (t.v[k].kind == '(') {
      t.v[k].match = top; /* temporarily: the enclosing '(' */
      top = (int32_t)k;
    } else if (t.v[k].kind == ')' && top >= 0) {
      int32_t up = t.v[top].match;
      t.v[top].match = (int32_t)k;
      top = up;
    }
  }
  while (top >= 0) { /* unclosed */
    int32_t up = t.v[top].match;
    t.v[top].match = -1;
    top = up;
  }
  int found = 0;
  for (size_t k = 0; k + 1 < t.n && !found; k++) {
    if (t.v[k].kind != 'i' || t.v[k].len != elen || memcmp(s + t.v[k].pos, entry, elen) != 0)
      continue;
    /* A class of that name (the torch surface's Python ModelNew). */
    if (k > 0 && t.v[k - 1].kind == 'i' && t.v[k - 1].len == 5 &&
        !memcmp(s + t.v[k - 1].pos, "class", 5)) {
      found = 1;
      break;
    }
    if (t.v[k + 1].kind != '(' || t.v[k + 1].match < 0)
      continue;
    size_t j = (size_t)t.v[k + 1].match + 1;
    /* Qualifiers between ')' and '{': noexcept, __attribute__((...)), ... */
    for (int q = 0; q < 8 && j < t.n; q++) {
      if (t.v[j].kind == '{') {
        found = 1;
        break;
      }
      if (t.v[j].kind != 'i')
        break;
      j++;
      if (j < t.n && t.v[j].kind == '(') {
        if (t.v[j].match < 0)
          break;
        j = (size_t)t.v[j].match + 1;
      }
    }
  }
  free(t.v);
  return found;
}

/* C-looking content: a #include/#define/#pragma line, or ; { and } all. */
static int looks_like_c(const char *s, size_t n) {
  int semi = 0, open = 0, close = 0, bol = 1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == '\n') {
      bol = 1;
      continue;
    }
    if (bol && c == '#') {
      size_t k = i + 1;
      while (k < n && is_blank(s[k]))
        k++;
      static const char *const dirs[] = {"include", "define", "pragma"};
      for (size_t d = 0; d < 3; d++) {
        size_t dl = strlen(dirs[d]);
        if (n - k >= dl && !memcmp(s + k, dirs[d], dl))
          return 1;
      }
    }
    if (!is_blank(c))
      bol = 0;
    semi |= c == ';';
    open |= c == '{';
    close |= c == '}';
  }
  return semi && open && close;
}

/* ---- unfenced code: where prose ends and code begins -------------------- */

static const char *const C_WORDS[] = {"auto",
                                      "break",
                                      "case",
                                      "char",
                                      "const",
                                      "continue",
                                      "default",
                                      "do",
                                      "double",
                                      "else",
                                      "enum",
                                      "extern",
                                      "float",
                                      "for",
                                      "goto",
                                      "if",
                                      "inline",
                                      "int",
                                      "long",
                                      "register",
                                      "restrict",
                                      "return",
                                      "short",
                                      "signed",
                                      "sizeof",
                                      "static",
                                      "struct",
                                      "switch",
                                      "typedef",
                                      "union",
                                      "unsigned",
                                      "void",
                                      "volatile",
                                      "while",
                                      "bool",
                                      "_Bool",
                                      "template",
                                      "typename",
                                      "namespace",
                                      "using",
                                      "class",
                                      "constexpr",
                                      "__global__",
                                      "__device__",
                                      "__host__",
                                      "__forceinline__",
                                      "__launch_bounds__",
                                      "__restrict__",
                                      "__shared__",
                                      "__constant__"};

static int is_directive(const char *w, size_t n) {
  static const char *const d[] = {"include", "define",  "undef", "if",    "ifdef",
                                  "ifndef",  "elif",    "else",  "endif", "pragma",
                                  "error",   "warning", "line"};
  for (size_t i = 0; i < sizeof d / sizeof *d; i++)
    if (strlen(d[i]) == n && !memcmp(w, d[i], n))
      return 1;
  return 0;
}

/* 2 blank, 1 prose, 0 code. Used only on the lines before the first and
 * after the last code line of unfenced text. */
static int prose_line(const char *l, size_t n) {
  size_t a = 0, b = n;
  while (a < b && is_blank(l[a]))
    a++;
  while (b > a && is_blank(l[b - 1]))
    b--;
  if (a == b)
    return 2;
  const char *t = l + a;
  size_t m = b - a;
  if (m >= 2 && t[0] == '/' && (t[1] == '/' || t[1] == '*'))
    return 0;
  if (m >= 2 && t[0] == '*' && t[1] == '/')
    return 0;
  if (t[0] == '#') {
    size_t k = 1;
    while (k < m && is_blank(t[k]))
      k++;
    size_t w = k;
    while (w < m && is_idchar((unsigned char)t[w]))
      w++;
    return is_directive(t + k, w - k) ? 0 : 1;
  }
  if (memchr(t, '`', m))
    return 1;
  if (m >= 2 && (t[0] == '-' || t[0] == '+' || t[0] == '*' || t[0] == '>') && t[1] == ' ')
    return 1;
  size_t d = 0;
  while (d < m && t[d] >= '0' && t[d] <= '9')
    d++;
  if (d > 0 && d + 1 < m && (t[d] == '.' || t[d] == ')') && t[d + 1] == ' ')
    return 1;
  char last = t[m - 1];
  if (last == '.' || last == ':' || last == '!' || last == '?')
    return 1;
  size_t w = 0;
  while (w < m && is_idchar((unsigned char)t[w]))
    w++;
  if (w >= 3 && t[w - 2] == '_' && t[w - 1] == 't')
    return 0;
  for (size_t i = 0; i < sizeof C_WORDS / sizeof *C_WORDS; i++)
    if (strlen(C_WORDS[i]) == w && !memcmp(t, C_WORDS[i], w))
      return 0;
  for (size_t i = 0; i < m; i++)
    if (strchr(";{}()[]=<>\\", t[i]))
      return 0;
  return 1;
}

/* ---- building code and plan ----------------------------------------------- */

/* Lines [a, b) less up to `indent` leading spaces each, without leading and
 * trailing blank lines, each ending in "\n". */
static char *join_code(const struct text *t, int a, int b, int indent, size_t *len) {
  while (a < b && line_blank(L(t, a), LN(t, a)))
    a++;
  while (b > a && line_blank(L(t, b - 1), LN(t, b - 1)))
    b--;
  struct sb sb = {0};
  for (int i = a; i < b; i++) {
    const char *l = L(t, i);
    size_t n = LN(t, i);
    int k = 0;
    while (k < indent && (size_t)k < n && l[k] == ' ')
      k++;
    sb_add(&sb, l + k, n - (size_t)k);
    sb_add(&sb, "\n", 1);
  }
  *len = sb.n;
  return sb_take(&sb);
}

/* Collects plan lines: trailing blanks cut, blank runs collapsed, no leading
 * or trailing blank lines. */
struct planb {
  struct sb sb;
  int pending_blank;
};

static void plan_line(struct planb *p, const char *l, size_t n) {
  while (n > 0 && is_blank(l[n - 1]))
    n--;
  if (n == 0) {
    p->pending_blank = p->sb.n > 0;
    return;
  }
  if (p->sb.n > 0)
    sb_add(&p->sb, p->pending_blank ? "\n\n" : "\n", p->pending_blank ? 2 : 1);
  sb_add(&p->sb, l, n);
  p->pending_blank = 0;
}

static char *plan_take(struct planb *p, int *truncated) {
  char *s = sb_take(&p->sb);
  if (!s)
    return NULL;
  size_t n = strlen(s);
  *truncated = 0;
  if (n > KV_REPLY_PLAN_MAX) {
    size_t cut = KV_REPLY_PLAN_MAX;
    char *nl = NULL;
    for (size_t i = cut; i > KV_REPLY_PLAN_MAX / 2; i--)
      if (s[i] == '\n') {
        nl = s + i;
        break;
      }
    if (nl)
      cut = (size_t)(nl - s);
    else
      while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    while (cut > 0 && (s[cut - 1] == '\n' || is_blank(s[cut - 1])))
      cut--;
    s[cut] = '\0';
    *truncated = 1;
  }
  return s;
}

/* ---- Plan sections ---------------------------------------------------------- */

/* Markdown ATX heading level (1..6) of a line, or 0. */
static int heading_level(const char *l, size_t n) {
  size_t i = (size_t)leading_spaces(l, n);
  if (i > 3)
    return 0;
  size_t k = i;
  while (k < n && l[k] == '#')
    k++;
  if (k == i || k - i > 6 || (k < n && !is_blank(l[k])))
    return 0;
  return (int)(k - i);
}

static size_t skip_emph(const char *l, size_t n, size_t i) {
  for (int k = 0; k < 3 && i < n && (l[i] == '*' || l[i] == '_'); k++)
    i++;
  return i;
}

/* Reads 1..3 words of letters from l[i..]; returns the index after them or 0
 * when there are none or more. *has_plan: the first or last word is "plan". */
static size_t read_words(const char *l, size_t n, size_t i, int *has_plan) {
  int words = 0;
  const char *first = NULL, *last = NULL;
  size_t flen = 0, llen = 0, end = i;
  while (i < n && is_alpha((unsigned char)l[i])) {
    size_t k = i;
    while (k < n && is_alpha((unsigned char)l[k]))
      k++;
    if (++words > 3)
      return 0;
    if (!first) {
      first = l + i;
      flen = k - i;
    }
    last = l + i;
    llen = k - i;
    end = k;
    if (k + 1 < n && l[k] == ' ' && is_alpha((unsigned char)l[k + 1]))
      i = k + 1;
    else
      break;
  }
  if (!words)
    return 0;
  *has_plan = 0;
  const char *w[2] = {first, last};
  size_t wl[2] = {flen, llen};
  for (int j = 0; j < 2; j++)
    if (wl[j] == 4 && lower(w[j][0]) == 'p' && lower(w[j][1]) == 'l' && lower(w[j][2]) == 'a' &&
        lower(w[j][3]) == 'n')
      *has_plan = 1;
  return end;
}

/* A `Label:` line (1..3 words, optional emphasis, a colon). */
static int label_line(const char *l, size_t n, int *has_plan, size_t *rest) {
  size_t i = (size_t)leading_spaces(l, n);
  if (i > 3)
    return 0;
  size_t e = skip_emph(l, n, i);
  int emph = e > i;
  size_t w = read_words(l, n, e, has_plan);
  if (!w)
    return 0;
  size_t k = skip_emph(l, n, w);
  while (k < n && l[k] == ' ')
    k++;
  int colon = k < n && l[k] == ':';
  if (colon)
    k = skip_emph(l, n, k + 1);
  while (k < n && is_blank(l[k]))
    k++;
  if (!colon && !(emph && k == n))
    return 0;
  *rest = k;
  return 1;
}

/* A line opening a Plan section: *level is its heading level (0 for a
 * label), *rest where content on the same line starts (== n when none). */
static int plan_start(const char *l, size_t n, int *level, size_t *rest) {
  int h = heading_level(l, n), has_plan = 0;
  if (h == 0) {
    *level = 0;
    return label_line(l, n, &has_plan, rest) && has_plan;
  }
  size_t i = (size_t)leading_spaces(l, n) + (size_t)h;
  while (i < n && is_blank(l[i]))
    i++;
  i = skip_emph(l, n, i);
  size_t w = read_words(l, n, i, &has_plan);
  if (!w || !has_plan)
    return 0;
  size_t k = skip_emph(l, n, w);
  while (k < n && l[k] == ' ')
    k++;
  *level = h;
  *rest = n;
  if (k < n && l[k] == ':') {
    k = skip_emph(l, n, k + 1);
    while (k < n && is_blank(l[k]))
      k++;
    *rest = k;
  }
  return 1;
}

/* Line flags: inside a fenced block (fences included) or the chosen code. */
enum { LF_BLOCK = 1, LF_CODE = 2 };

/* Appends the Plan section to p; returns 1 when there is one. */
static int plan_section(const struct text *t, const uint8_t *flags, struct planb *p) {
  for (int h = 0; h < t->nlines; h++) {
    if (flags[h])
      continue;
    int level;
    size_t rest;
    if (!plan_start(L(t, h), LN(t, h), &level, &rest))
      continue;
    if (rest < LN(t, h))
      plan_line(p, L(t, h) + rest, LN(t, h) - rest);
    for (int i = h + 1; i < t->nlines; i++) {
      if (flags[i] & LF_CODE)
        break;
      if (!flags[i]) {
        int hl = heading_level(L(t, i), LN(t, i)), dummy;
        size_t r;
        if (hl && (level == 0 || hl <= level))
          break;
        if (level == 0 && label_line(L(t, i), LN(t, i), &dummy, &r))
          break;
      }
      plan_line(p, L(t, i), LN(t, i));
    }
    return 1;
  }
  return 0;
}

/* ---- the parser ---------------------------------------------------------- */

struct parse {
  struct text t;
  struct block *b;
  int nb;
  uint8_t *flags;
};

static void parse_release(struct parse *ps) {
  for (int i = 0; i < ps->nb; i++)
    free(ps->b[i].content);
  free(ps->b);
  free(ps->flags);
  text_release(&ps->t);
  memset(ps, 0, sizeof *ps);
}

/* Loads the text, finds the fenced blocks and flags their lines. */
static int parse_blocks(struct parse *ps, const char *text, size_t len, char *err, size_t errlen) {
  memset(ps, 0, sizeof *ps);
  if (text_load(&ps->t, text, len, err, errlen) < 0)
    return -1;
  const struct text *t = &ps->t;
  ps->flags = calloc((size_t)t->nlines + 1, 1);
  if (!ps->flags) {
    parse_release(ps);
    return fail(err, errlen, "reply: out of memory");
  }
  int cap = 0;
  for (int i = 0; i < t->nlines; i++) {
    int indent;
    char ch;
    size_t count, infolen;
    const char *info;
    if (!fence_open(L(t, i), LN(t, i), &indent, &ch, &count, &info, &infolen))
      continue;
    if (ps->nb == KV_REPLY_MAX_BLOCKS) {
      parse_release(ps);
      return fail(err, errlen, "reply: more than %d fenced blocks; refused", KV_REPLY_MAX_BLOCKS);
    }
    if (ps->nb == cap) {
      cap = cap ? cap * 2 : 8;
      struct block *nbk = realloc(ps->b, (size_t)cap * sizeof *nbk);
      if (!nbk) {
        parse_release(ps);
        return fail(err, errlen, "reply: out of memory");
      }
      ps->b = nbk;
    }
    struct block *bk = &ps->b[ps->nb++];
    memset(bk, 0, sizeof *bk);
    bk->open = i;
    bk->first = i + 1;
    bk->close = -1;
    bk->indent = indent;
    info_tag(info, infolen, bk->tag);
    bk->cls = tag_class(bk->tag);
    int j = i + 1;
    while (j < t->nlines && !fence_close(L(t, j), LN(t, j), ch, count))
      j++;
    bk->end = j;
    if (j < t->nlines)
      bk->close = j;
    for (int k = i; k <= j && k < t->nlines; k++)
      ps->flags[k] |= LF_BLOCK;
    i = j; /* continue after the closing fence */
  }
  return 0;
}

static void build_plan(struct parse *ps, int ra, int rb, char **plan, int *explicit_,
                       int *truncated) {
  const struct text *t = &ps->t;
  for (int i = ra; i < rb; i++)
    ps->flags[i] |= LF_CODE;
  struct planb p = {0};
  *explicit_ = 0;
  if (plan_section(t, ps->flags, &p) && p.sb.n > 0) {
    *explicit_ = 1;
  } else {
    free(p.sb.s);
    memset(&p, 0, sizeof p);
    for (int i = 0; i < t->nlines; i++) {
      if (i == ra && i > 0)
        p.pending_blank = p.sb.n > 0;
      if (i >= ra && i < rb)
        continue;
      plan_line(&p, L(t, i), LN(t, i));
    }
  }
  *plan = plan_take(&p, truncated);
}

static int valid_entry(const char *e) {
  size_t n = strlen(e);
  if (n == 0 || n >= KV_REPLY_ENTRY_MAX || !is_idstart((unsigned char)e[0]))
    return 0;
  for (size_t i = 1; i < n; i++)
    if (!is_idchar((unsigned char)e[i]))
      return 0;
  return 1;
}

int kv_reply_parse(const char *text, size_t len, const char *entry, struct kv_reply *out, char *err,
                   size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!out)
    return fail(err, errlen, "reply: no output struct");
  memset(out, 0, sizeof *out);
  out->block = -1;
  if (entry && !valid_entry(entry)) {
    char q[48];
    return fail(err, errlen, "reply: entry '%s' is not a C identifier",
                quote(entry, strlen(entry), q, sizeof q));
  }
  struct parse ps;
  if (parse_blocks(&ps, text, len, err, errlen) < 0)
    return -1;
  const struct text *t = &ps.t;
  if (text_blank(t)) {
    parse_release(&ps);
    return fail(err, errlen, "reply: empty; no code");
  }
  int oom = 0, chosen = -1;
  for (int i = 0; i < ps.nb; i++) {
    struct block *bk = &ps.b[i];
    bk->content = join_code(t, bk->first, bk->end, bk->indent, &bk->clen);
    if (!bk->content) {
      oom = 1;
      break;
    }
    int d = defines_entry(bk->content, bk->clen, entry);
    if (d < 0) {
      oom = 1;
      break;
    }
    bk->defines = d;
    bk->looks =
        bk->clen > 0 && (bk->cls == 1 || (bk->cls == 0 && looks_like_c(bk->content, bk->clen)));
    if (d)
      chosen = i;
  }
  /* Unfenced text: the last stretch outside the blocks that defines the entry. */
  int ua = -1, ub = -1;
  for (int i = 0; !oom && chosen < 0 && entry && i < t->nlines;) {
    if (ps.flags[i] & LF_BLOCK) {
      i++;
      continue;
    }
    int j = i;
    while (j < t->nlines && !(ps.flags[j] & LF_BLOCK))
      j++;
    size_t n = (size_t)(t->lines[j - 1].off + t->lines[j - 1].len - t->lines[i].off);
    int d = defines_entry(L(t, i), n, entry);
    if (d < 0)
      oom = 1;
    if (d > 0) {
      ua = i;
      ub = j;
    }
    i = j;
  }
  if (ua >= 0) {
    int a = ua, b = ub;
    while (a < b && prose_line(L(t, a), LN(t, a)))
      a++;
    while (b > a && prose_line(L(t, b - 1), LN(t, b - 1)))
      b--;
    size_t n = a < b ? (size_t)(t->lines[b - 1].off + t->lines[b - 1].len - t->lines[a].off) : 0;
    int d = defines_entry(L(t, a < b ? a : ua), n, entry);
    if (d < 0)
      oom = 1;
    if (d <= 0) { /* the cut went wrong: keep the whole stretch */
      a = ua;
      b = ub;
    }
    ua = a;
    ub = b;
  }
  if (!oom && chosen < 0 && ua < 0) {
    for (int i = 0; i < ps.nb; i++)
      if (ps.b[i].looks && (chosen < 0 || ps.b[i].clen >= ps.b[chosen].clen))
        chosen = i;
  }
  if (oom) {
    parse_release(&ps);
    return fail(err, errlen, "reply: out of memory");
  }
  if (chosen < 0 && ua < 0) {
    int nb = ps.nb;
    parse_release(&ps);
    if (nb == 0)
      return fail(err, errlen, "reply: no code: no fenced block%s%s%s",
                  entry ? " and no definition of " : "", entry ? entry : "", entry ? "()" : "");
    return fail(err, errlen, "reply: no code: %d fenced block%s, none C-like%s%s%s", nb,
                nb == 1 ? "" : "s", entry ? " and none defining " : "", entry ? entry : "",
                entry ? "()" : "");
  }
  int ra, rb;
  if (chosen >= 0) {
    struct block *bk = &ps.b[chosen];
    out->code = bk->content;
    bk->content = NULL;
    memcpy(out->lang, bk->tag, sizeof out->lang);
    out->had_fence = 1;
    out->block = chosen;
    out->defines_entry = bk->defines;
    out->unterminated = bk->close < 0;
    ra = bk->open;
    rb = bk->close < 0 ? t->nlines : bk->close + 1;
  } else {
    size_t n;
    out->code = join_code(t, ua, ub, 0, &n);
    out->defines_entry = 1;
    ra = ua;
    rb = ub;
  }
  out->nblocks = ps.nb;
  if (out->code)
    build_plan(&ps, ra, rb, &out->plan, &out->plan_explicit, &out->plan_truncated);
  parse_release(&ps);
  if (!out->code || !out->plan) {
    kv_reply_release(out);
    return fail(err, errlen, "reply: out of memory");
  }
  return 0;
}

void kv_reply_release(struct kv_reply *r) {
  if (!r)
    return;
  free(r->plan);
  free(r->code);
  memset(r, 0, sizeof *r);
  r->block = -1;
}

int kv_reply_plan(const char *text, size_t len, char **plan, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!plan)
    return fail(err, errlen, "reply: no output pointer");
  *plan = NULL;
  struct parse ps;
  if (parse_blocks(&ps, text, len, err, errlen) < 0)
    return -1;
  if (text_blank(&ps.t)) {
    parse_release(&ps);
    return fail(err, errlen, "reply: empty; no plan");
  }
  int explicit_, truncated;
  build_plan(&ps, ps.t.nlines, ps.t.nlines, plan, &explicit_, &truncated);
  parse_release(&ps);
  if (!*plan)
    return fail(err, errlen, "reply: out of memory");
  return 0;
}

/* ---- kevo:tune ------------------------------------------------------------- */

static int valid_value(const char *v, size_t n) {
  if (is_idstart((unsigned char)v[0])) {
    for (size_t i = 1; i < n; i++)
      if (!is_idchar((unsigned char)v[i]))
        return 0;
    return 1;
  }
  size_t i = v[0] == '-';
  if (i == n)
    return 0;
  if (n - i > 2 && v[i] == '0' && (v[i + 1] == 'x' || v[i + 1] == 'X')) {
    for (size_t k = i + 2; k < n; k++) {
      char c = v[k];
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
        return 0;
    }
    return 1;
  }
  if (v[i] == '0' && n - i > 1)
    return 0; /* 08 would be octal */
  for (size_t k = i; k < n; k++)
    if (v[k] < '0' || v[k] > '9')
      return 0;
  return 1;
}

static int tune_line(const char *l, size_t n, int lineno, struct kv_tunable *out, int *count,
                     int max, char *err, size_t errlen) {
  char q[48];
  size_t i = 0;
  while (i < n && is_blank(l[i]))
    i++;
  /* `// kevo:tune` (C, CUDA) or `# kevo:tune` (the torch surface's Python) */
  int py = i < n && l[i] == '#';
  if (!py && (n - i < 2 || l[i] != '/' || l[i + 1] != '/'))
    return 0;
  i += py ? 1 : 2;
  while (i < n && is_blank(l[i]))
    i++;
  static const char kw[] = "kevo:tune";
  if (n - i < sizeof kw - 1 || memcmp(l + i, kw, sizeof kw - 1) != 0)
    return 0;
  i += sizeof kw - 1;
  while (n > i && (is_blank(l[n - 1]) || l[n - 1] == '\r'))
    n--;
  if (i < n && !is_blank(l[i]))
    return 0; /* kevo:tuner and the like are not ours */
  while (i < n && is_blank(l[i]))
    i++;
  if (i == n)
    return fail(err, errlen, "line %d: kevo:tune without NAME=v1,v2,...", lineno);
  size_t a = i;
  while (i < n && is_idchar((unsigned char)l[i]))
    i++;
  if (i == a || !is_idstart((unsigned char)l[a]))
    return fail(err, errlen, "line %d: kevo:tune: '%s' does not start with a C identifier", lineno,
                quote(l + a, n - a, q, sizeof q));
  if (i - a >= KV_TUNE_NAME_MAX)
    return fail(err, errlen, "line %d: kevo:tune: name '%s' longer than %d characters", lineno,
                quote(l + a, i - a, q, sizeof q), KV_TUNE_NAME_MAX - 1);
  size_t nlen = i - a;
  for (int k = 0; k < *count; k++)
    if (strlen(out[k].name) == nlen && !memcmp(out[k].name, l + a, nlen))
      return fail(err, errlen, "line %d: kevo:tune: %s declared twice", lineno, out[k].name);
  if (*count >= max)
    return fail(err, errlen, "line %d: kevo:tune: more than %d tunables", lineno, max);
  struct kv_tunable *tu = &out[*count];
  memset(tu, 0, sizeof *tu);
  memcpy(tu->name, l + a, nlen);
  tu->py = py;
  while (i < n && is_blank(l[i]))
    i++;
  if (i == n || l[i] != '=')
    return fail(err, errlen, "line %d: kevo:tune %s: expected '=' and values", lineno, tu->name);
  i++;
  for (;;) {
    while (i < n && is_blank(l[i]))
      i++;
    size_t v = i;
    while (i < n && !is_blank(l[i]) && l[i] != ',')
      i++;
    if (i == v)
      return fail(err, errlen, "line %d: kevo:tune %s: empty value", lineno, tu->name);
    if (!valid_value(l + v, i - v))
      return fail(err, errlen,
                  "line %d: kevo:tune %s: '%s' is neither an integer nor an identifier", lineno,
                  tu->name, quote(l + v, i - v, q, sizeof q));
    if (i - v >= KV_TUNE_VALUE_MAX)
      return fail(err, errlen, "line %d: kevo:tune %s: value '%s' longer than %d characters",
                  lineno, tu->name, quote(l + v, i - v, q, sizeof q), KV_TUNE_VALUE_MAX - 1);
    for (int k = 0; k < tu->nvalues; k++)
      if (strlen(tu->values[k]) == i - v && !memcmp(tu->values[k], l + v, i - v))
        return fail(err, errlen, "line %d: kevo:tune %s: value %s repeated", lineno, tu->name,
                    tu->values[k]);
    if (tu->nvalues == KV_TUNE_MAX_VALUES)
      return fail(err, errlen, "line %d: kevo:tune %s: more than %d values", lineno, tu->name,
                  KV_TUNE_MAX_VALUES);
    memcpy(tu->values[tu->nvalues++], l + v, i - v);
    while (i < n && is_blank(l[i]))
      i++;
    if (i == n)
      break;
    if (l[i] != ',')
      return fail(err, errlen, "line %d: kevo:tune %s: unexpected '%s' after the values", lineno,
                  tu->name, quote(l + i, n - i, q, sizeof q));
    i++;
  }
  (*count)++;
  return 0;
}

int kv_tunables_parse(const char *code, struct kv_tunable *out, int max, char *err, size_t errlen) {
  if (err && errlen)
    err[0] = '\0';
  if (!code || max < 0 || (max > 0 && !out))
    return fail(err, errlen, "kevo:tune: bad arguments");
  int count = 0, lineno = 0;
  const char *p = code;
  while (*p) {
    lineno++;
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    if (tune_line(p, n, lineno, out, &count, max, err, errlen) < 0)
      return -1;
    p += n + (eol ? 1 : 0);
  }
  return count;
}
