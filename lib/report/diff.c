/* A line diff for the page: the lines both texts start and end with are set
 * aside, the rest is aligned by a longest common subsequence (a table of
 * 16-bit lengths, at most 4 million cells: the shorter middle is then at most
 * 2,000 lines), and the edit script is printed as unified-diff hunks. Lines
 * are compared without their newline, so a missing newline at the end of a
 * file is not a change. */
#include "kevo/report.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { DIFF_MAX_LINES = 20000 };
#define DIFF_MAX_CELLS ((size_t)4000000)

struct line {
  const char *p;
  size_t n;
  uint64_t h;
};

/* Splits text into at most DIFF_MAX_LINES lines: 0, 1 too many, -1 no memory. */
static int split(const char *t, size_t len, struct line **out, size_t *nout) {
  size_t cnt = 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] == '\n')
      cnt++;
  if (len && t[len - 1] != '\n')
    cnt++;
  *out = NULL;
  *nout = 0;
  if (cnt > DIFF_MAX_LINES)
    return 1;
  if (cnt == 0)
    return 0;
  struct line *l = malloc(cnt * sizeof *l);
  if (!l)
    return -1;
  size_t k = 0, start = 0;
  for (size_t i = 0; i <= len && k < cnt; i++) {
    if (i == len || t[i] == '\n') {
      uint64_t h = 1469598103934665603ull; /* FNV-1a */
      for (size_t j = start; j < i; j++)
        h = (h ^ (unsigned char)t[j]) * 1099511628211ull;
      l[k].p = t + start;
      l[k].n = i - start;
      l[k].h = h;
      k++;
      start = i + 1;
    }
  }
  *out = l;
  *nout = k;
  return 0;
}

static int same(const struct line *a, const struct line *b) {
  return a->h == b->h && a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* One step of the edit script: '=' (a line of both), '-' (of a), '+' (of b). */
struct op {
  char kind;
  size_t ai, bi; /* the line it is, in a or b (for '=': both) */
};

static int emit_line(struct kv_buf *out, char kind, const struct line *l) {
  if (kv_buf_append(out, &kind, 1) < 0 || kv_buf_append(out, l->p, l->n) < 0)
    return -1;
  return kv_buf_append(out, "\n", 1);
}

/* Unified hunks over ops[0..nops) with `ctx` lines of context. */
static int emit_hunks(const struct op *ops, size_t nops, const struct line *la,
                      const struct line *lb, size_t ctx, struct kv_buf *out) {
  size_t i = 0;
  while (i < nops) {
    while (i < nops && ops[i].kind == '=')
      i++;
    if (i == nops)
      break;
    size_t start = i > ctx ? i - ctx : 0;
    /* Extend while the next change is within 2 * ctx of this one's end. */
    size_t end = i; /* one past the last change so far */
    size_t j = i;
    while (j < nops) {
      if (ops[j].kind != '=') {
        end = j + 1;
        j++;
        continue;
      }
      size_t k = j;
      while (k < nops && ops[k].kind == '=')
        k++;
      if (k == nops || k - j > 2 * ctx)
        break;
      j = k;
    }
    size_t stop = end + ctx < nops ? end + ctx : nops;
    size_t a0 = 0, b0 = 0, ac = 0, bc = 0;
    /* The first line of each side in the hunk: the side's index at `start`. */
    for (size_t k = start; k < stop; k++) {
      if (ops[k].kind != '+' && ac++ == 0)
        a0 = ops[k].ai;
      if (ops[k].kind != '-' && bc++ == 0)
        b0 = ops[k].bi;
    }
    if (ac == 0)
      a0 = ops[start].ai; /* the number of a's lines before the hunk */
    if (bc == 0)
      b0 = ops[start].bi;
    if (kv_buf_appendf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ac ? a0 + 1 : a0, ac, bc ? b0 + 1 : b0,
                       bc) < 0)
      return -1;
    for (size_t k = start; k < stop; k++) {
      const struct op *o = &ops[k];
      int rc = o->kind == '+' ? emit_line(out, '+', &lb[o->bi])
                              : emit_line(out, o->kind == '=' ? ' ' : '-', &la[o->ai]);
      if (rc < 0)
        return -1;
    }
    i = stop;
  }
  return 0;
}

int kv_line_diff(const char *a, size_t alen, const char *b, size_t blen, int context,
                 struct kv_buf *out) {
  struct line *la = NULL, *lb = NULL;
  size_t na, nb;
  int rc = split(a, alen, &la, &na);
  if (rc == 0)
    rc = split(b, blen, &lb, &nb);
  if (rc != 0) {
    free(la);
    return rc;
  }
  size_t pre = 0, suf = 0;
  while (pre < na && pre < nb && same(&la[pre], &lb[pre]))
    pre++;
  while (suf < na - pre && suf < nb - pre && same(&la[na - 1 - suf], &lb[nb - 1 - suf]))
    suf++;
  size_t n = na - pre - suf, m = nb - pre - suf;
  if (n && m && (n + 1) > DIFF_MAX_CELLS / (m + 1)) {
    free(la);
    free(lb);
    return 1;
  }
  if (n == 0 && m == 0) {
    free(la);
    free(lb);
    return 0;
  }
  /* L[i][j]: the longest common subsequence of the middles' a[i..] and b[j..]. */
  uint16_t *L = NULL;
  if (n && m) {
    L = calloc((n + 1) * (m + 1), sizeof *L);
    if (!L) {
      free(la);
      free(lb);
      return -1;
    }
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;) {
        uint16_t *c = &L[i * (m + 1) + j];
        if (same(&la[pre + i], &lb[pre + j]))
          *c = (uint16_t)(L[(i + 1) * (m + 1) + j + 1] + 1);
        else {
          uint16_t down = L[(i + 1) * (m + 1) + j], right = L[i * (m + 1) + j + 1];
          *c = down >= right ? down : right;
        }
      }
  }
  size_t cap = na + nb;
  struct op *ops = malloc((cap ? cap : 1) * sizeof *ops);
  if (!ops) {
    free(L);
    free(la);
    free(lb);
    return -1;
  }
  size_t k = 0;
  for (size_t i = 0; i < pre; i++)
    ops[k++] = (struct op){'=', i, i};
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && same(&la[pre + i], &lb[pre + j])) {
      ops[k++] = (struct op){'=', pre + i, pre + j};
      i++;
      j++;
    } else if (j == m || (i < n && L[(i + 1) * (m + 1) + j] >= L[i * (m + 1) + j + 1])) {
      ops[k++] = (struct op){'-', pre + i, pre + j};
      i++;
    } else {
      ops[k++] = (struct op){'+', pre + i, pre + j};
      j++;
    }
  }
  for (size_t s = 0; s < suf; s++)
    ops[k++] = (struct op){'=', na - suf + s, nb - suf + s};
  rc = emit_hunks(ops, k, la, lb, context > 0 ? (size_t)context : 0, out);
  free(ops);
  free(L);
  free(la);
  free(lb);
  return rc;
}
