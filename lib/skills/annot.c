/* Annotated experts: `// kevo:mechanism` header lines and `#if KV_MECH_NAME`
 * blocks, parsed, checked (unknown names, cycles) and resolved for any set
 * of enabled mechanisms. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"
#include "kevo/util.h"

#define HEADER_TAG "kevo:mechanism"
#define MECH_PREFIX "KV_MECH_"
#define DEPTH_MAX 64
#define LINES_MAX 200000

struct line {
  const char *p;
  size_t n; /* without the newline */
};

static int is_ident(int c) {
  return isalnum(c) || c == '_';
}

int kv_annot_find(const struct kv_annot *a, const char *name) {
  for (int i = 0; i < a->n; i++)
    if (!strcmp(a->m[i].name, name))
      return i;
  return -1;
}

/* Copies the line into buf (NUL-terminated, capped) without leading blanks. */
static const char *trimmed(const struct line *l, char *buf, size_t cap) {
  size_t i = 0;
  while (i < l->n && (l->p[i] == ' ' || l->p[i] == '\t'))
    i++;
  size_t n = l->n - i;
  if (n >= cap)
    n = cap - 1;
  memcpy(buf, l->p + i, n);
  buf[n] = 0;
  while (n && isspace((unsigned char)buf[n - 1]))
    buf[--n] = 0;
  return buf;
}

/* "// kevo:mechanism ..." -> the text after the tag, or NULL. */
static const char *header_body(const char *t) {
  if (strncmp(t, "//", 2) != 0)
    return NULL;
  t += 2;
  while (*t == ' ' || *t == '\t')
    t++;
  size_t k = strlen(HEADER_TAG);
  if (strncmp(t, HEADER_TAG, k) != 0 || (t[k] && t[k] != ' ' && t[k] != '\t'))
    return NULL;
  return t + k;
}

static void copy_field(char *dst, size_t cap, const char *v, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, v, n);
  dst[n] = 0;
}

/* Names of a comma list, resolved later: kept as text in a scratch array. */
struct pending {
  char req[512], conf[512];
};

static int parse_header(const char *body, int lineno, const char *file, struct kv_mech *m,
                        struct pending *pd, char *err, size_t errlen) {
  const char *p = body;
  while (*p == ' ' || *p == '\t')
    p++;
  size_t n = 0;
  while (is_ident((unsigned char)p[n]))
    n++;
  if (n == 0)
    return kv_error(err, errlen,
                    "%s: line %d: kevo:mechanism: no name; write '// kevo:mechanism NAME "
                    "[requires=A,B] -- intent' (NAME: letters, digits, _)",
                    file, lineno);
  if (n >= KV_MECH_NAME_MAX)
    return kv_error(err, errlen,
                    "%s: line %d: kevo:mechanism: the name is longer than %d "
                    "characters; shorten it",
                    file, lineno, KV_MECH_NAME_MAX - 1);
  copy_field(m->name, sizeof m->name, p, n);
  m->line = lineno;
  p += n;
  for (;;) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p)
      return kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s: no intent; end the line with ' -- what "
                      "the mechanism does'",
                      file, lineno, m->name);
    if (p[0] == '-' && p[1] == '-') {
      p += 2;
      while (*p == ' ' || *p == '\t')
        p++;
      if (!*p)
        return kv_error(err, errlen,
                        "%s: line %d: kevo:mechanism %s: the intent after '--' is empty; say "
                        "what the mechanism does",
                        file, lineno, m->name);
      copy_field(m->intent, sizeof m->intent, p, strlen(p));
      return 0;
    }
    size_t k = 0;
    while (is_ident((unsigned char)p[k]))
      k++;
    if (k == 0 || p[k] != '=')
      return kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s: expected key=value or '-- intent' at "
                      "'%.20s'",
                      file, lineno, m->name, p);
    char key[32];
    copy_field(key, sizeof key, p, k);
    p += k + 1;
    const char *v = p;
    size_t vn;
    if (*p == '"') {
      v = ++p;
      const char *q = strchr(p, '"');
      if (!q)
        return kv_error(err, errlen,
                        "%s: line %d: kevo:mechanism %s: %s: the quoted value has no closing "
                        "'\"'",
                        file, lineno, m->name, key);
      vn = (size_t)(q - p);
      p = q + 1;
    } else {
      while (*p && *p != ' ' && *p != '\t')
        p++;
      vn = (size_t)(p - v);
    }
    if (vn == 0)
      return kv_error(err, errlen, "%s: line %d: kevo:mechanism %s: %s= has no value", file, lineno,
                      m->name, key);
    if (!strcmp(key, "requires"))
      copy_field(pd->req, sizeof pd->req, v, vn);
    else if (!strcmp(key, "conflicts"))
      copy_field(pd->conf, sizeof pd->conf, v, vn);
    else if (!strcmp(key, "anchor"))
      copy_field(m->anchor, sizeof m->anchor, v, vn);
    else if (!strcmp(key, "dtypes"))
      copy_field(m->dtypes, sizeof m->dtypes, v, vn);
    else if (!strcmp(key, "layout"))
      copy_field(m->layout, sizeof m->layout, v, vn);
    else if (!strcmp(key, "storage"))
      copy_field(m->storage, sizeof m->storage, v, vn);
    else if (!strcmp(key, "pipeline"))
      copy_field(m->pipeline, sizeof m->pipeline, v, vn);
    else if (!strcmp(key, "hardware"))
      copy_field(m->hardware, sizeof m->hardware, v, vn);
    else if (!strcmp(key, "divides")) {
      copy_field(m->divides, sizeof m->divides, v, vn);
      /* SIZE:N[,SIZE:N] */
      char tmp[96];
      snprintf(tmp, sizeof tmp, "%s", m->divides);
      for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok;
           tok = strtok_r(NULL, ",", &save)) {
        char *c = strchr(tok, ':');
        char *end = NULL;
        long by = c ? strtol(c + 1, &end, 10) : 0;
        if (!c || c == tok || !end || *end || by < 1)
          return kv_error(err, errlen,
                          "%s: line %d: kevo:mechanism %s: divides=%s: write SIZE:N (e.g. "
                          "cols:4), comma-separated",
                          file, lineno, m->name, m->divides);
      }
    } else if (!strcmp(key, "smem")) {
      char tmp[32], *end;
      copy_field(tmp, sizeof tmp, v, vn);
      long b = strtol(tmp, &end, 10);
      if (*end || b < 0)
        return kv_error(err, errlen,
                        "%s: line %d: kevo:mechanism %s: smem=%s: give the bytes of shared "
                        "memory per block as a whole number",
                        file, lineno, m->name, tmp);
      m->smem_bytes = b;
    } else
      return kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s: unknown key '%s'; use requires, "
                      "conflicts, anchor, dtypes, layout, storage, pipeline, hardware, divides "
                      "or smem",
                      file, lineno, m->name, key);
  }
}

/* A condition: KV_MECH_A, !KV_MECH_A, joined by &&. terms[i] = index, neg[i]. */
struct cond {
  int n, idx[8], neg[8];
};

/* 0 parsed, 1 not about mechanisms, -1 error. */
static int parse_cond(const struct kv_annot *a, const char *expr, const char *file, int lineno,
                      struct cond *c, char *err, size_t errlen) {
  if (!strstr(expr, MECH_PREFIX))
    return 1;
  c->n = 0;
  const char *p = expr;
  for (;;) {
    while (*p == ' ' || *p == '\t')
      p++;
    int neg = 0;
    if (*p == '!') {
      neg = 1;
      p++;
      while (*p == ' ' || *p == '\t')
        p++;
    }
    size_t k = strlen(MECH_PREFIX);
    if (strncmp(p, MECH_PREFIX, k) != 0)
      goto bad;
    p += k;
    size_t n = 0;
    while (is_ident((unsigned char)p[n]))
      n++;
    char name[KV_MECH_NAME_MAX];
    if (n == 0 || n >= sizeof name)
      goto bad;
    copy_field(name, sizeof name, p, n);
    p += n;
    int i = kv_annot_find(a, name);
    if (i < 0)
      return kv_error(err, errlen,
                      "%s: line %d: KV_MECH_%s: no mechanism %s is declared; add a line "
                      "'// kevo:mechanism %s -- intent' or fix the name",
                      file, lineno, name, name, name);
    if (c->n >= 8)
      goto bad;
    c->idx[c->n] = i;
    c->neg[c->n++] = neg;
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p || (p[0] == '/' && (p[1] == '/' || p[1] == '*')))
      return 0;
    if (p[0] == '&' && p[1] == '&') {
      p += 2;
      continue;
    }
    goto bad;
  }
bad:
  return kv_error(err, errlen,
                  "%s: line %d: '#if %s': kevo resolves only KV_MECH_NAME, !KV_MECH_NAME and "
                  "&& of them; nest the #if blocks instead",
                  file, lineno, expr);
}

/* A preprocessor line: the directive name into dir, the rest into rest. */
static int directive(const char *t, char *dir, size_t dcap, const char **rest) {
  if (*t != '#')
    return 0;
  t++;
  while (*t == ' ' || *t == '\t')
    t++;
  size_t n = 0;
  while (isalpha((unsigned char)t[n]))
    n++;
  if (n == 0 || n >= dcap)
    return 0;
  memcpy(dir, t, n);
  dir[n] = 0;
  t += n;
  while (*t == ' ' || *t == '\t')
    t++;
  *rest = t;
  return 1;
}

struct frame {
  int mech;  /* 1: a KV_MECH_ block */
  int taken; /* mech: the branch now read is kept */
  int in_else;
  int first_if; /* mech: the single mechanism of a plain "#if KV_MECH_X" (for the anchor), -1 */
};

/* One pass over the lines: with resolve, appends the kept lines to out;
 * with record (parse), counts blocks and takes default anchors. */
static int pass(const char *src, size_t len, const char *file, const struct kv_annot *a,
                uint32_t enabled, struct kv_annot *record, struct kv_buf *out, char *err,
                size_t errlen) {
  struct frame st[DEPTH_MAX];
  int depth = 0, lineno = 0;
  char buf[1024];
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && src[j] != '\n')
      j++;
    struct line l = {src + i, j - i};
    size_t next = j < len ? j + 1 : j;
    lineno++;
    if (lineno > LINES_MAX)
      return kv_error(err, errlen, "%s: more than %d lines; kevo walks smaller kernels", file,
                      LINES_MAX);
    const char *t = trimmed(&l, buf, sizeof buf);
    int active = 1;
    for (int d = 0; d < depth; d++)
      if (st[d].mech && !st[d].taken)
        active = 0;
    char dir[16];
    const char *rest = NULL;
    const char *hb = header_body(t);
    if (hb) {
      /* the mechanism's name */
      while (*hb == ' ' || *hb == '\t')
        hb++;
      size_t n = 0;
      while (is_ident((unsigned char)hb[n]))
        n++;
      char name[KV_MECH_NAME_MAX];
      copy_field(name, sizeof name, hb, n);
      int m = kv_annot_find(a, name);
      if (out && active && m >= 0 && (enabled >> m & 1u))
        kv_buf_append(out, src + i, next - i);
      i = next;
      continue;
    }
    if (directive(t, dir, sizeof dir, &rest)) {
      int is_if = !strcmp(dir, "if"), is_ifdef = !strcmp(dir, "ifdef") || !strcmp(dir, "ifndef");
      if (is_if || is_ifdef) {
        if (depth >= DEPTH_MAX)
          return kv_error(err, errlen, "%s: line %d: #if nested deeper than %d", file, lineno,
                          DEPTH_MAX);
        struct cond c;
        int rc = is_if ? parse_cond(a, rest, file, lineno, &c, err, errlen)
                       : (strstr(rest, MECH_PREFIX) ? 2 : 1);
        if (rc < 0)
          return -1;
        if (rc == 2)
          return kv_error(err, errlen,
                          "%s: line %d: '#%s %s': KV_MECH_ macros are always 0 or 1, never "
                          "undefined; write '#if KV_MECH_NAME'",
                          file, lineno, dir, rest);
        struct frame f = {0, 1, 0, -1};
        if (rc == 0) {
          f.mech = 1;
          for (int k = 0; k < c.n; k++) {
            int on = (int)(enabled >> c.idx[k] & 1u);
            if (c.neg[k] ? on : !on)
              f.taken = 0;
          }
          if (record)
            for (int k = 0; k < c.n; k++)
              record->m[c.idx[k]].nblocks++;
          if (c.n == 1 && !c.neg[0])
            f.first_if = c.idx[0];
        }
        st[depth++] = f;
        if (!f.mech && out && active)
          kv_buf_append(out, src + i, next - i);
        i = next;
        continue;
      }
      if (!strcmp(dir, "elif")) {
        if (depth == 0)
          return kv_error(err, errlen, "%s: line %d: #elif without #if", file, lineno);
        if (st[depth - 1].mech || strstr(rest, MECH_PREFIX))
          return kv_error(err, errlen,
                          "%s: line %d: #elif in or about a KV_MECH_ block: kevo resolves only "
                          "#if/#else/#endif there; nest an #if inside the #else",
                          file, lineno);
        if (out && active)
          kv_buf_append(out, src + i, next - i);
        i = next;
        continue;
      }
      if ((!strcmp(dir, "else") || !strcmp(dir, "endif")) && depth > 0 && !st[depth - 1].mech &&
          strstr(rest, MECH_PREFIX))
        return kv_error(err, errlen,
                        "%s: line %d: #%s of a block that is not about mechanisms names a "
                        "KV_MECH_ macro; remove the name",
                        file, lineno, dir);
      if (!strcmp(dir, "else")) {
        if (depth == 0)
          return kv_error(err, errlen, "%s: line %d: #else without #if", file, lineno);
        struct frame *f = &st[depth - 1];
        if (f->mech) {
          if (f->in_else)
            return kv_error(err, errlen, "%s: line %d: a second #else in one block", file, lineno);
          f->in_else = 1;
          f->taken = !f->taken;
          f->first_if = -1;
        } else if (out && active) {
          kv_buf_append(out, src + i, next - i);
        }
        i = next;
        continue;
      }
      if (!strcmp(dir, "endif")) {
        if (depth == 0)
          return kv_error(err, errlen, "%s: line %d: #endif without #if", file, lineno);
        struct frame f = st[--depth];
        if (!f.mech && out && active)
          kv_buf_append(out, src + i, next - i);
        i = next;
        continue;
      }
    }
    if (strstr(t, MECH_PREFIX) && strncmp(t, "//", 2) != 0 && strncmp(t, "/*", 2) != 0 &&
        strncmp(t, "*", 1) != 0)
      return kv_error(err, errlen,
                      "%s: line %d: KV_MECH_ outside an #if line; use the macros only in "
                      "'#if KV_MECH_NAME' lines",
                      file, lineno);
    /* The default anchor: the first code line of a mechanism's first block. */
    if (record && depth > 0 && st[depth - 1].mech && st[depth - 1].first_if >= 0) {
      struct kv_mech *m = &record->m[st[depth - 1].first_if];
      if (!m->anchor[0] && t[0] && strncmp(t, "//", 2) != 0 && strncmp(t, "/*", 2) != 0 &&
          strcmp(t, "{") != 0 && strcmp(t, "}") != 0) {
        snprintf(m->anchor, sizeof m->anchor, "%s", t);
        m->anchor_default = 1;
      }
    }
    if (out && active)
      kv_buf_append(out, src + i, next - i);
    i = next;
  }
  if (depth)
    return kv_error(err, errlen, "%s: the file ends inside %d #if block%s; add the #endif", file,
                    depth, depth == 1 ? "" : "s");
  return 0;
}

static int resolve_names(struct kv_annot *a, int mi, const char *list, int *idx, int *n,
                         const char *key, const char *file, char *err, size_t errlen) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", list);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int j = kv_annot_find(a, tok);
    if (j < 0)
      return kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s: %s=%s: no mechanism %s is declared; "
                      "declare it or fix the name",
                      file, a->m[mi].line, a->m[mi].name, key, list, tok);
    if (j == mi)
      return kv_error(err, errlen, "%s: line %d: kevo:mechanism %s: %s itself; remove it", file,
                      a->m[mi].line, a->m[mi].name, key);
    if (*n < KV_MECH_MAX)
      idx[(*n)++] = j;
  }
  return 0;
}

/* Depth-first search for a cycle through requires; writes "A -> B -> A". */
static int find_cycle(const struct kv_annot *a, int v, int *color, int *stack, int *sp, char *out,
                      size_t cap) {
  color[v] = 1;
  stack[(*sp)++] = v;
  for (int k = 0; k < a->m[v].nreq; k++) {
    int w = a->m[v].req[k];
    if (color[w] == 1) {
      size_t o = 0;
      int from = 0;
      while (stack[from] != w)
        from++;
      for (int s = from; s < *sp; s++)
        o += (size_t)snprintf(out + (o < cap ? o : cap), o < cap ? cap - o : 0, "%s -> ",
                              a->m[stack[s]].name);
      snprintf(out + (o < cap ? o : cap), o < cap ? cap - o : 0, "%s", a->m[w].name);
      return 1;
    }
    if (color[w] == 0 && find_cycle(a, w, color, stack, sp, out, cap))
      return 1;
  }
  color[v] = 2;
  (*sp)--;
  return 0;
}

int kv_annot_parse(const char *src, size_t len, const char *file, struct kv_annot *a, char *err,
                   size_t errlen) {
  memset(a, 0, sizeof *a);
  if (len > KV_ANNOT_SRC_MAX)
    return kv_error(err, errlen, "%s: larger than %d bytes", file, KV_ANNOT_SRC_MAX);
  if (memchr(src, 0, len))
    return kv_error(err, errlen, "%s: holds a NUL byte; give a C or CUDA source", file);
  struct pending *pend = calloc(KV_MECH_MAX, sizeof *pend);
  if (!pend)
    return kv_error(err, errlen, "out of memory");
  char buf[1024];
  int lineno = 0, rc = 0;
  for (size_t i = 0; i < len && rc == 0;) {
    size_t j = i;
    while (j < len && src[j] != '\n')
      j++;
    struct line l = {src + i, j - i};
    lineno++;
    const char *hb = header_body(trimmed(&l, buf, sizeof buf));
    if (hb) {
      if (a->n >= KV_MECH_MAX) {
        rc = kv_error(err, errlen, "%s: line %d: more than %d mechanisms; split the kernel", file,
                      lineno, KV_MECH_MAX);
        break;
      }
      struct kv_mech *m = &a->m[a->n];
      rc = parse_header(hb, lineno, file, m, &pend[a->n], err, errlen);
      if (rc == 0 && kv_annot_find(a, m->name) >= 0)
        rc = kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s is declared twice (first on line %d); "
                      "keep one",
                      file, lineno, m->name, a->m[kv_annot_find(a, m->name)].line);
      if (rc == 0)
        a->n++;
    }
    i = j < len ? j + 1 : j;
  }
  for (int k = 0; rc == 0 && k < a->n; k++) {
    rc =
        resolve_names(a, k, pend[k].req, a->m[k].req, &a->m[k].nreq, "requires", file, err, errlen);
    if (rc == 0)
      rc = resolve_names(a, k, pend[k].conf, a->m[k].conf, &a->m[k].nconf, "conflicts", file, err,
                         errlen);
  }
  free(pend);
  if (rc != 0)
    return -1;
  if (a->n == 0)
    return kv_error(err, errlen,
                    "%s: no '// kevo:mechanism NAME -- intent' line; annotate the expert's "
                    "mechanisms (see docs/skills.md)",
                    file);
  /* cycles */
  int color[KV_MECH_MAX] = {0}, stack[KV_MECH_MAX + 1], sp = 0;
  for (int v = 0; v < a->n; v++) {
    char path[KV_MECH_MAX * (KV_MECH_NAME_MAX + 4)];
    if (color[v] == 0 && find_cycle(a, v, color, stack, &sp, path, sizeof path))
      return kv_error(err, errlen,
                      "%s: requires form a cycle: %s; a mechanism cannot depend on itself "
                      "through others: remove one of these requires",
                      file, path);
  }
  /* blocks, default anchors */
  uint32_t all = a->n >= 32 ? 0xffffffffu : ((1u << a->n) - 1u);
  if (pass(src, len, file, a, all, a, NULL, err, errlen) != 0)
    return -1;
  for (int k = 0; k < a->n; k++)
    if (a->m[k].nblocks == 0)
      return kv_error(err, errlen,
                      "%s: line %d: kevo:mechanism %s has no '#if KV_MECH_%s' block; add one "
                      "or remove the line",
                      file, a->m[k].line, a->m[k].name, a->m[k].name);
  /* removal order: dependents first; among the free, the one declared last */
  int gone[KV_MECH_MAX] = {0};
  for (int o = 0; o < a->n; o++) {
    int pick = -1;
    for (int v = a->n - 1; v >= 0 && pick < 0; v--) {
      if (gone[v])
        continue;
      int needed = 0;
      for (int u = 0; u < a->n && !needed; u++)
        if (!gone[u] && u != v)
          for (int k = 0; k < a->m[u].nreq; k++)
            if (a->m[u].req[k] == v)
              needed = 1;
      if (!needed)
        pick = v;
    }
    if (pick < 0) /* cannot happen without a cycle */
      return kv_error(err, errlen, "%s: no removal order (a cycle kevo missed)", file);
    gone[pick] = 1;
    a->order[o] = pick;
  }
  return 0;
}

int kv_annot_resolve(const char *src, size_t len, const char *file, const struct kv_annot *a,
                     uint32_t enabled, char **out, size_t *outlen, char *err, size_t errlen) {
  *out = NULL;
  struct kv_buf b;
  kv_buf_init(&b, (size_t)KV_ANNOT_SRC_MAX + 1);
  if (pass(src, len, file, a, enabled, NULL, &b, err, errlen) != 0) {
    kv_buf_release(&b);
    return -1;
  }
  if (b.truncated) {
    kv_buf_release(&b);
    return kv_error(err, errlen, "%s: the resolved source is larger than %d bytes", file,
                    KV_ANNOT_SRC_MAX);
  }
  if (outlen)
    *outlen = b.len;
  *out = kv_buf_detach(&b);
  return 0;
}
