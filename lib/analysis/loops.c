/* CUDAnalyst's Analyzer for kevo analyze: the loop-nest structure of a C or
 * CUDA source, per function, summarised (kevo/analysis.h). A small scanner,
 * not a compiler: comments, strings and preprocessor lines are blanked, a
 * function is `name ( ... ) { ... }` at file level, a loop is `for`, `while`
 * or `do`, and its body is the statement after its header. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/analysis.h"
#include "kevo/util.h"

#define MAX_LOOPS 256
#define HEADER_SHOWN 100

struct loop {
  size_t start, body, end; /* the keyword, the body's first byte, one past its end */
  size_t tail;             /* do-while: its `while`, else 0 */
  int depth, level;        /* loops around it; 1 + the deepest nest inside it */
};

/* Comments, string and character literals and preprocessor lines become
 * spaces (newlines kept), so braces and keywords in them do not count. */
static char *blanked(const char *src) {
  size_t n = strlen(src);
  char *b = malloc(n + 1);
  if (!b)
    return NULL;
  memcpy(b, src, n + 1);
  int line_start = 1;
  for (size_t i = 0; i < n; i++) {
    char c = b[i];
    size_t j = i;
    if (c == '/' && b[i + 1] == '/')
      while (j < n && b[j] != '\n')
        b[j++] = ' ';
    else if (c == '/' && b[i + 1] == '*') {
      for (j = i + 2; j + 1 < n && !(b[j] == '*' && b[j + 1] == '/'); j++)
        if (b[j] != '\n')
          b[j] = ' ';
      b[i] = b[i + 1] = ' ';
      if (j + 1 < n)
        b[j] = b[j + 1] = ' ', j += 2;
    } else if (c == '"' || c == '\'') {
      for (j = i + 1; j < n && b[j] != c && b[j] != '\n'; j++) {
        if (b[j] == '\\' && j + 1 < n)
          b[j++] = ' ';
        b[j] = ' ';
      }
      b[i] = ' ';
      if (j < n && b[j] == c)
        b[j++] = ' ';
    } else if (c == '#' && line_start) {
      while (j < n && !(b[j] == '\n' && b[j - 1] != '\\'))
        b[j++] = ' ';
    }
    if (j > i)
      i = j - 1;
    if (b[i] == '\n')
      line_start = 1;
    else if (!isspace((unsigned char)b[i]))
      line_start = 0;
  }
  return b;
}

static size_t skip_space(const char *b, size_t i) {
  while (b[i] && isspace((unsigned char)b[i]))
    i++;
  return i;
}

/* The index one past the bracket matching the one at i (or the end). */
static size_t matching(const char *b, size_t i) {
  char open = b[i], close = open == '(' ? ')' : open == '{' ? '}' : ']';
  int depth = 0;
  for (; b[i]; i++) {
    depth += b[i] == open;
    depth -= b[i] == close;
    if (depth == 0)
      return i + 1;
  }
  return i;
}

static int word_at(const char *b, size_t i, const char *w) {
  size_t n = strlen(w);
  return !strncmp(b + i, w, n) && !(isalnum((unsigned char)b[i + n]) || b[i + n] == '_') &&
         (i == 0 || !(isalnum((unsigned char)b[i - 1]) || b[i - 1] == '_'));
}

/* One past the end of the statement that starts at i. */
static size_t statement_end(const char *b, size_t i, int guard) {
  i = skip_space(b, i);
  if (!b[i] || guard > 64)
    return i;
  if (b[i] == '{')
    return matching(b, i);
  if (word_at(b, i, "for") || word_at(b, i, "while") || word_at(b, i, "if")) {
    int is_if = b[i] == 'i';
    size_t h = skip_space(b, i + (is_if ? 2 : b[i] == 'f' ? 3 : 5));
    if (b[h] != '(')
      return h;
    size_t e = statement_end(b, matching(b, h), guard + 1);
    size_t k = skip_space(b, e);
    if (is_if && word_at(b, k, "else"))
      e = statement_end(b, k + 4, guard + 1);
    return e;
  }
  if (word_at(b, i, "do")) {
    size_t e = skip_space(b, statement_end(b, i + 2, guard + 1));
    if (word_at(b, e, "while")) {
      size_t h = skip_space(b, e + 5);
      if (b[h] == '(')
        e = matching(b, h);
    }
    while (b[e] && b[e] != ';')
      e++;
    return b[e] ? e + 1 : e;
  }
  int depth = 0;
  for (; b[i]; i++) {
    depth += b[i] == '(' || b[i] == '[';
    depth -= b[i] == ')' || b[i] == ']';
    if (b[i] == ';' && depth <= 0)
      return i + 1;
    if (b[i] == '}' && depth <= 0)
      return i;
  }
  return i;
}

/* The loops of the function body [lo, hi). */
static int find_loops(const char *b, size_t lo, size_t hi, struct loop *L, int cap) {
  int n = 0;
  for (size_t i = lo; i < hi && n < cap; i++) {
    int f = word_at(b, i, "for"), w = word_at(b, i, "while"), d = word_at(b, i, "do");
    if (!(f || w || d))
      continue;
    if (w) { /* the `while` of a do-while is not a loop of its own */
      int tail = 0;
      for (int k = 0; k < n; k++)
        tail |= L[k].start < i && i < L[k].end && b[L[k].start] == 'd' && L[k].body <= i &&
                statement_end(b, L[k].body, 0) <= i;
      if (tail)
        continue;
    }
    size_t h = skip_space(b, i + (f ? 3 : w ? 5 : 2));
    if (!d && b[h] != '(')
      continue;
    L[n].start = i;
    L[n].body = d ? h : matching(b, h);
    L[n].end = d ? statement_end(b, i, 0) : statement_end(b, L[n].body, 0);
    L[n].tail = 0;
    if (d) {
      size_t w2 = skip_space(b, statement_end(b, h, 0));
      L[n].tail = word_at(b, w2, "while") ? w2 : 0;
    }
    n++;
  }
  for (int a = 0; a < n; a++) {
    L[a].depth = 0;
    for (int c = 0; c < n; c++)
      L[a].depth += c != a && L[c].start < L[a].start && L[a].start < L[c].end;
  }
  for (int a = n - 1; a >= 0; a--) { /* inner loops come later in the text */
    L[a].level = 1;
    for (int c = a + 1; c < n; c++)
      if (L[c].start < L[a].end && L[c].depth == L[a].depth + 1 && L[c].level + 1 > L[a].level)
        L[a].level = L[c].level + 1;
  }
  return n;
}

/* The header of a loop as written ("do ... while (c)" for a do-while),
 * spaces squeezed, capped. */
static void header(const char *src, const struct loop *l, char *out, size_t cap) {
  size_t o = 0, from = l->tail ? l->tail : l->start, end = l->tail ? l->end : l->body;
  int space = 0;
  if (l->tail)
    o += (size_t)snprintf(out, cap, "do ... ");
  while (l->tail && end > from && (src[end - 1] == ';' || src[end - 1] == ' '))
    end--;
  for (size_t i = from; i < end && o + 4 < cap && o < HEADER_SHOWN; i++) {
    if (isspace((unsigned char)src[i])) {
      space = 1;
      continue;
    }
    if (space && o)
      out[o++] = ' ';
    space = 0;
    out[o++] = src[i];
  }
  if (o >= HEADER_SHOWN)
    o += (size_t)snprintf(out + o, cap - o, "...");
  out[o] = 0;
}

/* The function whose body starts at brace i: its name, else "". */
static void function_name(const char *b, size_t i, char *out, size_t cap) {
  out[0] = 0;
  size_t j = i;
  while (j > 0 && isspace((unsigned char)b[j - 1]))
    j--;
  while (j > 0 && isalpha((unsigned char)b[j - 1])) { /* const, noexcept */
    size_t k = j;
    while (k > 0 && (isalnum((unsigned char)b[k - 1]) || b[k - 1] == '_'))
      k--;
    j = k;
    while (j > 0 && isspace((unsigned char)b[j - 1]))
      j--;
  }
  if (j == 0 || b[j - 1] != ')')
    return;
  int depth = 0;
  do { /* back to the matching '(' */
    j--;
    depth += b[j] == ')';
    depth -= b[j] == '(';
  } while (j > 0 && depth > 0);
  while (j > 0 && isspace((unsigned char)b[j - 1]))
    j--;
  size_t e = j;
  while (j > 0 && (isalnum((unsigned char)b[j - 1]) || b[j - 1] == '_'))
    j--;
  if (e > j && !isdigit((unsigned char)b[j]))
    snprintf(out, cap, "%.*s", (int)(e - j), b + j);
}

int kv_an_loop_nests(const char *src, char *out, size_t cap) {
  if (cap)
    out[0] = 0;
  char *b = src ? blanked(src) : NULL;
  struct loop *L = b ? malloc(MAX_LOOPS * sizeof *L) : NULL;
  int total = 0;
  struct kv_buf o;
  kv_buf_init(&o, cap > 0 ? cap - 1 : 0);
  for (size_t i = 0; L && b[i];) {
    if (b[i] != '{') {
      i++;
      continue;
    }
    size_t end = matching(b, i);
    char name[128];
    function_name(b, i, name, sizeof name);
    int n = name[0] && strcmp(name, "if") && strcmp(name, "for") && strcmp(name, "while")
                ? find_loops(b, i + 1, end, L, MAX_LOOPS)
                : 0;
    if (n > 0) {
      int deepest = 0;
      for (int k = 0; k < n; k++)
        deepest = L[k].level > deepest ? L[k].level : deepest;
      kv_buf_appendf(&o, "function %s: %d loop%s, nested %d deep\n", name, n, n == 1 ? "" : "s",
                     deepest);
      for (int k = 0; k < n; k++) {
        char h[HEADER_SHOWN + 8];
        header(src, &L[k], h, sizeof h);
        kv_buf_appendf(&o, "%*s%s  [nested level %d]\n", 2 + 2 * L[k].depth, "", h, L[k].level);
      }
      total += n;
    }
    i = end > i ? end : i + 1;
  }
  if (cap && o.data)
    snprintf(out, cap, "%s", o.data);
  kv_buf_release(&o);
  free(L);
  free(b);
  return total;
}
