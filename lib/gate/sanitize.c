/* The debugger (see kevo/sanitize.h): compute-sanitizer's tools on one
 * check-size call of a rejected CUDA candidate, rebuilt with -lineinfo,
 * inside kevo's worker; and a parser of their text reports. */
#include "kevo/sanitize.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cudakit.h"
#include "internal.h"
#include "vendor.h"
#include "kevo/sandbox.h"
#include "kevo/util.h"
#include "toolcall.h"
#include "toolrun.h"

/* ---- the parser ------------------------------------------------------------ */

/* A line less the tool's "========= " prefix; *indent: spaces after it. */
static const char *unprefix(const char *l, size_t n, size_t *rest, int *indent) {
  size_t i = 0;
  while (i < n && l[i] == '=')
    i++;
  if (i > 0 && i < n && l[i] == ' ')
    i++;
  int sp = 0;
  while (i < n && (l[i] == ' ' || l[i] == '\t'))
    i++, sp++;
  size_t e = n;
  while (e > i && (l[e - 1] == '\r' || l[e - 1] == ' '))
    e--;
  *rest = e - i;
  *indent = sp;
  return l + i;
}

static int starts(const char *s, size_t n, const char *p) {
  size_t k = strlen(p);
  return n >= k && !strncmp(s, p, k);
}

static void copy_n(char *dst, size_t cap, const char *s, size_t n) {
  if (n >= cap)
    n = cap - 1;
  memcpy(dst, s, n);
  dst[n] = 0;
}

static const char *find_n(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp(s + i, needle, k))
      return s + i;
  return NULL;
}

/* "at FUNC(ARGS)+0x1b0 in FILE:LINE" somewhere in s: the function less its
 * argument list, the file and the line. 1 when a location was found. */
static int location(const char *s, size_t n, char *kernel, size_t kcap, char *file, size_t fcap,
                    int *line) {
  const char *at = NULL;
  for (size_t i = 0; i + 3 <= n; i++)
    if (!memcmp(s + i, "at ", 3) && (i == 0 || s[i - 1] == ' ')) {
      const char *plus = find_n(s + i + 3, n - i - 3, "+0x");
      if (plus) {
        at = s + i + 3;
        break;
      }
      /* cuda-memcheck's "at 0x000000c8 in FILE:LINE:FUNC" */
      if (i + 5 <= n && !memcmp(s + i + 3, "0x", 2)) {
        const char *in = find_n(s + i, n - i, " in ");
        if (!in)
          return 0;
        const char *f = in + 4;
        size_t left = n - (size_t)(f - s);
        const char *c1 = memchr(f, ':', left);
        if (!c1) {
          copy_n(file, fcap, f, left);
          return 1;
        }
        copy_n(file, fcap, f, (size_t)(c1 - f));
        int ln = 0;
        const char *d = c1 + 1;
        while (d < s + n && *d >= '0' && *d <= '9' && ln < 100000000)
          ln = ln * 10 + (*d++ - '0');
        *line = ln;
        if (kernel && kcap && d < s + n && *d == ':')
          copy_n(kernel, kcap, d + 1, (size_t)(s + n - d - 1));
        return 1;
      }
    }
  /* The location alone on its line (racecheck wraps: "Write access at" /
   * "k(float *)+0xb0 in f.cu:28"). */
  if (!at && find_n(s, n, "+0x") && find_n(s, n, " in "))
    at = s;
  if (!at)
    return 0;
  size_t an = n - (size_t)(at - s);
  const char *plus = find_n(at, an, "+0x");
  size_t fn = (size_t)(plus - at);
  /* The argument list: the parenthesised group that ends the name. */
  if (fn > 0 && at[fn - 1] == ')') {
    int depth = 0;
    for (size_t j = fn; j-- > 0;) {
      if (at[j] == ')')
        depth++;
      else if (at[j] == '(' && --depth == 0) {
        fn = j;
        break;
      }
    }
  }
  if (kernel && kcap)
    copy_n(kernel, kcap, at, fn);
  const char *in = find_n(plus, an - (size_t)(plus - at), " in ");
  if (!in)
    return 1;
  const char *f = in + 4;
  size_t left = n - (size_t)(f - s);
  size_t fl = 0;
  while (fl < left && f[fl] != ' ' && f[fl] != '\t')
    fl++;
  /* FILE:LINE: the line is the digits after the last ':'. */
  size_t colon = fl;
  while (colon > 0 && f[colon - 1] != ':')
    colon--;
  if (colon > 1 && colon < fl) {
    int ln = 0, ok = 1;
    for (size_t j = colon; j < fl; j++) {
      if (f[j] < '0' || f[j] > '9') {
        ok = 0;
        break;
      }
      if (ln < 100000000)
        ln = ln * 10 + (f[j] - '0');
    }
    if (ok) {
      copy_n(file, fcap, f, colon - 1);
      *line = ln;
      return 1;
    }
  }
  copy_n(file, fcap, f, fl);
  return 1;
}

static void add_access(struct kv_san_finding *f, const char *s, size_t n) {
  size_t u = strlen(f->access);
  if (u + 3 >= sizeof f->access)
    return;
  snprintf(f->access + u, sizeof f->access - u, "%s%.*s", u ? "; " : "", (int)n, s);
}

/* What starts a finding: the tools' headlines. Anything else at indent 0
 * ("Program hit ...", summaries, the banner) ends the current one. */
static int is_head(const char *s, size_t n) {
  static const char *const heads[] = {"Invalid ",      "Misaligned ",    "Out-of-range ",
                                      "Error: Race ",  "Warning: Race ", "Race reported",
                                      "Barrier error", "Uninitialized ", "Unused memory",
                                      "Malloc/Free",   "Illegal ",       "Warp "};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++)
    if (starts(s, n, heads[i]))
      return 1;
  return 0;
}

static long summary_count(const char *s, size_t n) {
  const char *p = find_n(s, n, "ERROR SUMMARY: ");
  if (!p)
    return -1;
  p += 15;
  long v = 0;
  int any = 0;
  /* digits, maybe with thousands separators ("1,024") */
  while (p < s + n && ((*p >= '0' && *p <= '9') ||
                       (*p == ',' && any && p + 1 < s + n && p[1] >= '0' && p[1] <= '9'))) {
    if (*p != ',' && v < 100000000)
      v = v * 10 + (*p - '0');
    p++;
    any = 1;
  }
  /* Past --print-limit a second line follows, "ERROR SUMMARY: 493 errors
   * were not printed. ...": not the total. */
  if (find_n(p, (size_t)(s + n - p), "not printed"))
    return -2;
  return any ? v : -1;
}

/* "#0 0x7f.. in FUNC FILE:LINE[:COL]" or "FILE:LINE:COL: runtime error:": the
 * function (may be NULL), file and line; 1 when a source line was found. */
static int frame_at(const char *s, size_t n, char *fn, size_t fcap, char *file, size_t filecap,
                    int *line) {
  const char *in = find_n(s, n, " in ");
  if (!in)
    return 0;
  const char *f = in + 4;
  size_t left = n - (size_t)(f - s);
  const char *sp = memchr(f, ' ', left);
  if (!sp)
    return 0;
  const char *loc = sp + 1;
  size_t ln = n - (size_t)(loc - s);
  /* FILE:LINE or FILE:LINE:COL, the file not in parentheses (a module). */
  if (!ln || loc[0] == '(')
    return 0;
  const char *c1 = memchr(loc, ':', ln);
  if (!c1 || c1 + 1 >= s + n || c1[1] < '0' || c1[1] > '9')
    return 0;
  int v = 0;
  for (const char *d = c1 + 1; d < s + n && *d >= '0' && *d <= '9' && v < 100000000; d++)
    v = v * 10 + (*d - '0');
  if (fn && fcap)
    copy_n(fn, fcap, f, (size_t)(sp - f));
  copy_n(file, filecap, loc, (size_t)(c1 - loc));
  *line = v;
  return 1;
}

/* AddressSanitizer's and UndefinedBehaviorSanitizer's reports (the cpu
 * surface's debugger): "==PID==ERROR: AddressSanitizer: KIND on address ...",
 * "WRITE of size 4 at ...", frames "#N 0x.. in FUNC FILE:LINE", "... is
 * located N bytes after ..."; "FILE:LINE:COL: runtime error: MSG". */
static int parse_asan(const char *text, struct kv_san_report *rep) {
  int total = 0, open = 0, have_loc = 0;
  struct kv_san_finding cur;
#define AFLUSH()                                                                                   \
  do {                                                                                             \
    if (open && rep->nfindings < KV_SAN_MAX_FINDINGS)                                              \
      rep->f[rep->nfindings++] = cur;                                                              \
    total += open;                                                                                 \
    open = 0;                                                                                      \
  } while (0)
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' '))
      n--;
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
      i++;
    const char *s = line + i;
    size_t rn = n - i;
    const char *e = find_n(s, rn, "ERROR: AddressSanitizer: ");
    const char *u = find_n(s, rn, ": runtime error: ");
    if (e) {
      AFLUSH();
      memset(&cur, 0, sizeof cur);
      open = 1;
      have_loc = 0;
      cur.count = 1;
      snprintf(cur.tool, sizeof cur.tool, "asan");
      const char *k = e + 7; /* "AddressSanitizer: KIND on address ..." */
      size_t kn = rn - (size_t)(k - s);
      const char *on = find_n(k, kn, " on ");
      copy_n(cur.kind, sizeof cur.kind, k, on ? (size_t)(on - k) : kn);
    } else if (u && !open) {
      memset(&cur, 0, sizeof cur);
      open = 1;
      cur.count = 1;
      snprintf(cur.tool, sizeof cur.tool, "ubsan");
      snprintf(cur.kind, sizeof cur.kind, "runtime error: %.*s", (int)(rn - (size_t)(u + 17 - s)),
               u + 17);
      /* FILE:LINE:COL before it */
      const char *c1 = memchr(s, ':', (size_t)(u - s));
      if (c1) {
        copy_n(cur.file, sizeof cur.file, s, (size_t)(c1 - s));
        int v = 0;
        for (const char *d = c1 + 1; d < u && *d >= '0' && *d <= '9' && v < 100000000; d++)
          v = v * 10 + (*d - '0');
        cur.line = v;
      }
      have_loc = 1;
    } else if (open && (starts(s, rn, "READ of size") || starts(s, rn, "WRITE of size"))) {
      const char *at = find_n(s, rn, " at 0x");
      add_access(&cur, s, at ? (size_t)(at - s) : rn);
    } else if (open && s[0] == '#' && rn > 2) {
      char fn[160], file[160];
      int ln = 0;
      if (frame_at(s, rn, fn, sizeof fn, file, sizeof file, &ln)) {
        if (!have_loc) {
          snprintf(cur.kernel, sizeof cur.kernel, "%s", fn);
          snprintf(cur.file, sizeof cur.file, "%s", file);
          cur.line = ln;
          have_loc = 1;
        } else if (!cur.kernel[0] && cur.tool[0] == 'u') {
          snprintf(cur.kernel, sizeof cur.kernel, "%s", fn);
        }
      }
    } else if (open && find_n(s, rn, " is located ")) {
      const char *l = find_n(s, rn, " is located ");
      add_access(&cur, l + 1, rn - (size_t)(l + 1 - s));
    } else if (open && starts(s, rn, "SUMMARY: ")) {
      AFLUSH();
    }
    line = nl ? nl + 1 : NULL;
  }
  AFLUSH();
#undef AFLUSH
  rep->errors += total;
  return total;
}

int kv_san_parse(const char *tool, const char *text, struct kv_san_report *rep) {
  if (tool && (!strcmp(tool, "asan") || !strcmp(tool, "ubsan")))
    return parse_asan(text, rep);
  int total = 0;
  struct kv_san_finding cur;
  int open = 0, pending = 0; /* pending: 1, 2: the first, second access's location comes next */
  long summary = -1;
#define FLUSH()                                                                                    \
  do {                                                                                             \
    if (open) {                                                                                    \
      int dup = -1;                                                                                \
      for (int q = 0; q < rep->nfindings; q++)                                                     \
        if (!strcmp(rep->f[q].tool, cur.tool) && !strcmp(rep->f[q].kind, cur.kind) &&              \
            !strcmp(rep->f[q].file, cur.file) && rep->f[q].line == cur.line &&                     \
            rep->f[q].line2 == cur.line2)                                                          \
          dup = q;                                                                                 \
      if (dup >= 0)                                                                                \
        rep->f[dup].count++;                                                                       \
      else if (rep->nfindings < KV_SAN_MAX_FINDINGS)                                               \
        rep->f[rep->nfindings++] = cur;                                                            \
      total++;                                                                                     \
      open = 0;                                                                                    \
    }                                                                                              \
  } while (0)
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    size_t rn;
    int indent;
    const char *s = unprefix(line, n, &rn, &indent);
    long sc = summary_count(s, rn);
    if (sc >= 0 || sc == -2) {
      FLUSH();
      if (sc >= 0)
        summary = sc;
    } else if (indent == 0 && is_head(s, rn)) {
      FLUSH();
      memset(&cur, 0, sizeof cur);
      open = 1;
      pending = 0;
      cur.count = 1;
      snprintf(cur.tool, sizeof cur.tool, "%s", tool ? tool : "");
      /* Racecheck names the first access on its headline. */
      const char *at = find_n(s, rn, " at ");
      size_t kn = at && find_n(at, rn - (size_t)(at - s), "+0x") ? (size_t)(at - s) : rn;
      copy_n(cur.kind, sizeof cur.kind, s, kn);
      if (kn < rn)
        location(s, rn, cur.kernel, sizeof cur.kernel, cur.file, sizeof cur.file, &cur.line);
      /* "... Write access at" with the location on the next line */
      if (kn == rn && rn >= 10 && !strncmp(s + rn - 10, " access at", 10)) {
        cur.kind[rn - 3 < sizeof cur.kind ? rn - 3 : sizeof cur.kind - 1] = 0;
        pending = 1;
      }
    } else if (open && pending && indent > 0 && find_n(s, rn, "+0x")) {
      if (pending == 1)
        location(s, rn, cur.kernel, sizeof cur.kernel, cur.file, sizeof cur.file, &cur.line);
      else if (pending == 2)
        location(s, rn, NULL, 0, cur.file2, sizeof cur.file2, &cur.line2);
      pending = 0;
      const char *h = find_n(s, rn, " [");
      if (h)
        add_access(&cur, h + 2, rn - (size_t)(h + 2 - s) - (s[rn - 1] == ']'));
    } else if (open && indent > 0 && rn > 0) {
      if (s[0] == '[') {
        add_access(&cur, s + 1, rn - 1 - (s[rn - 1] == ']'));
      } else if (starts(s, rn, "and ") && rn >= 10 && !strncmp(s + rn - 10, " access at", 10)) {
        /* Racecheck may pair one access with several ("and Read access at"
         * on each line): the first names the finding, the others add their
         * hazards (pending 3). */
        if (!cur.file2[0] && !cur.line2) {
          size_t u = strlen(cur.kind);
          snprintf(cur.kind + u, sizeof cur.kind - u, " and %.*s", (int)(rn - 7), s + 4);
          pending = 2;
        } else {
          pending = 3;
        }
      } else if (starts(s, rn, "at ") && !cur.kernel[0]) {
        location(s, rn, cur.kernel, sizeof cur.kernel, cur.file, sizeof cur.file, &cur.line);
      } else if (starts(s, rn, "and ") && find_n(s, rn, " access at ")) {
        /* racecheck: "and Read access at F+0x.. in FILE:LINE [N hazards]" */
        if (!cur.file2[0] && !cur.line2) { /* the first of several: see above */
          const char *a = find_n(s, rn, " access at ");
          char kind2[64];
          copy_n(kind2, sizeof kind2, s + 4, (size_t)(a - s) - 4 + 7);
          size_t u = strlen(cur.kind);
          snprintf(cur.kind + u, sizeof cur.kind - u, " and %s", kind2);
          location(s, rn, NULL, 0, cur.file2, sizeof cur.file2, &cur.line2);
        }
        const char *h = find_n(s, rn, " [");
        if (h)
          add_access(&cur, h + 2, rn - (size_t)(h + 2 - s) - (s[rn - 1] == ']'));
      } else if (starts(s, rn, "by thread ")) {
        add_access(&cur, s + 3, rn - 3);
      } else if (starts(s, rn, "Address ") || starts(s, rn, "Access at ") ||
                 starts(s, rn, "and is ") || starts(s, rn, "Access to ")) {
        add_access(&cur, s, rn);
      } else if (starts(s, rn, "Saved host backtrace") || starts(s, rn, "Host Frame") ||
                 starts(s, rn, "Device Frame")) {
        /* backtraces: not kept in the finding */
      }
    } else if (indent == 0 && rn > 0) {
      FLUSH();
    }
    line = nl ? nl + 1 : NULL;
  }
  FLUSH();
#undef FLUSH
  if (summary > 0)
    rep->errors += summary > 1000000 ? 1000000 : (int)summary;
  else if (summary < 0)
    rep->errors += total;
  return total;
}

void kv_san_append_raw(struct kv_san_report *rep, const char *tool, const char *text) {
  struct kv_buf b;
  kv_buf_init(&b, KV_SAN_RAW_CAP);
  if (rep->raw)
    kv_buf_append(&b, rep->raw, strlen(rep->raw));
  kv_buf_appendf(&b, "== %s\n", tool);
  for (const char *line = text; line && *line;) {
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    size_t rn;
    int indent;
    const char *s = unprefix(line, n, &rn, &indent);
    /* Host backtraces are long and say nothing about the kernel. */
    if (rn > 0 && !starts(s, rn, "Host Frame") && !starts(s, rn, "Saved host backtrace")) {
      if (b.len + rn + (size_t)indent + 2 > KV_SAN_RAW_CAP) {
        b.truncated = 1;
        break;
      }
      kv_buf_appendf(&b, "%*s%.*s\n", indent, "", (int)rn, s);
    }
    line = nl ? nl + 1 : NULL;
  }
  free(rep->raw);
  rep->raw = kv_buf_detach(&b);
}

static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

void kv_san_summary(const struct kv_san_report *r, char *out, size_t cap) {
  if (!cap)
    return;
  struct kv_buf b;
  kv_buf_init(&b, 8192);
  if (r->nfindings == 0)
    kv_buf_appendf(&b, "no findings (%s)", r->tools[0] ? r->tools : "no tool ran");
  for (int i = 0; i < r->nfindings; i++) {
    const struct kv_san_finding *f = &r->f[i];
    kv_buf_appendf(&b, "%s%s: %s", i ? "\n" : "", f->tool, f->kind);
    if (f->kernel[0])
      kv_buf_appendf(&b, " in %s", f->kernel);
    if (f->file[0] && f->line > 0)
      kv_buf_appendf(&b, " at %s:%d", base_name(f->file), f->line);
    if (f->file2[0] && f->line2 > 0)
      kv_buf_appendf(&b, " and %s:%d", base_name(f->file2), f->line2);
    if (f->access[0])
      kv_buf_appendf(&b, " (%s)", f->access);
    if (f->count > 1)
      kv_buf_appendf(&b, " [x%d]", f->count);
  }
  snprintf(out, cap, "%s", b.data ? b.data : "");
  kv_buf_release(&b);
}

json_t *kv_san_json(const struct kv_san_report *r) {
  json_t *fs = json_array();
  for (int i = 0; i < r->nfindings; i++) {
    const struct kv_san_finding *f = &r->f[i];
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:i}", "tool", f->tool, "kind", f->kind,
                          "kernel", f->kernel, "file", base_name(f->file), "line", f->line,
                          "access", f->access, "count", f->count);
    if (o && f->file2[0]) {
      json_object_set_new(o, "file2", json_string(base_name(f->file2)));
      json_object_set_new(o, "line2", json_integer(f->line2));
    }
    if (o)
      json_array_append_new(fs, o);
  }
  json_t *j =
      json_pack("{s:s,s:i,s:o,s:f,s:s,s:s}", "tools", r->tools, "errors", r->errors, "findings", fs,
                "seconds", r->seconds, "note", r->note, "sandbox_off", r->sandbox_off);
  if (j && r->raw) {
    json_t *raw = json_string(r->raw);
    json_object_set_new(j, "raw", raw ? raw : json_string(""));
  }
  return j;
}

static void jstr(const json_t *o, const char *k, char *out, size_t cap) {
  const char *s = json_string_value(json_object_get(o, k));
  snprintf(out, cap, "%s", s ? s : "");
}

static int jint(const json_t *o, const char *k) {
  json_int_t v = json_integer_value(json_object_get(o, k));
  return v < 0 ? 0 : v > 100000000 ? 100000000 : (int)v;
}

struct kv_san_report *kv_san_from_json(const json_t *j) {
  if (!json_is_object(j))
    return NULL;
  struct kv_san_report *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  size_t i;
  json_t *o;
  json_array_foreach(json_object_get(j, "findings"), i, o) {
    if (r->nfindings >= KV_SAN_MAX_FINDINGS)
      break;
    struct kv_san_finding *f = &r->f[r->nfindings++];
    jstr(o, "tool", f->tool, sizeof f->tool);
    jstr(o, "kind", f->kind, sizeof f->kind);
    jstr(o, "kernel", f->kernel, sizeof f->kernel);
    jstr(o, "file", f->file, sizeof f->file);
    jstr(o, "file2", f->file2, sizeof f->file2);
    jstr(o, "access", f->access, sizeof f->access);
    f->line = jint(o, "line");
    f->line2 = jint(o, "line2");
    f->count = jint(o, "count") > 0 ? jint(o, "count") : 1;
  }
  jstr(j, "tools", r->tools, sizeof r->tools);
  r->errors = jint(j, "errors");
  double s = json_number_value(json_object_get(j, "seconds"));
  r->seconds = s == s ? s : 0;
  jstr(j, "note", r->note, sizeof r->note);
  jstr(j, "sandbox_off", r->sandbox_off, sizeof r->sandbox_off);
  const char *raw = json_string_value(json_object_get(j, "raw"));
  if (raw && *raw)
    r->raw = strndup(raw, KV_SAN_RAW_CAP);
  return r;
}

void kv_san_report_free(struct kv_san_report *r) {
  if (!r)
    return;
  free(r->raw);
  free(r);
}

/* ---- the tool -------------------------------------------------------------- */

void kv_san_path(const struct kv_gate_opts *o, char *out, size_t cap) {
  kv_cuda_tool_find("KEVO_COMPUTE_SANITIZER", "compute-sanitizer",
                    "../compute-sanitizer/compute-sanitizer", o, out, cap);
}

const char *kv_san_version(const struct kv_gate_opts *o) {
  char path[PATH_MAX];
  kv_san_path(o, path, sizeof path);
  return kv_tool_version_cached(path);
}

/* The candidate again, with -lineinfo (source lines in the tools' reports;
 * the code is the same), as <objdir>/<key>-lineinfo.so; cached. */
int kv_san_build_lineinfo(const struct kv_session *s, const struct kv_build *cand, const char *src,
                          char *so, size_t socap, char *err, size_t errlen) {
  snprintf(so, socap, "%s/%s-lineinfo.so", s->objdir, cand->key);
  if (kv_path_exists(so))
    return 0;
  char arch[32], aflag[96];
  if (kv_cuda_arch(s->o, arch, sizeof arch, err, errlen) < 0)
    return -1;
  kv_cuda_arch_flag(arch, aflag, sizeof aflag);
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(src, KV_SOURCE_MAX, &text, &len, err, errlen) < 0)
    return -1;
  char *proto = kv_task_prototype_alloc(s->t, KV_LANG_CUDA),
       *shim = kv_task_shim_alloc(s->t, KV_LANG_CUDA);
  char *grown = shim ? realloc(shim, strlen(shim) + strlen(kv_cuda_guard_cu) + 1) : NULL;
  char dir[PATH_MAX];
  int rc = -1;
  if (grown)
    shim = grown;
  if (!proto || !grown) {
    kv_error(err, errlen, "%s: the task's prototype is over kevo's %u-byte cap, or memory ran out",
             s->t->name, KV_TASK_PROTO_MAX);
    goto done;
  }
  strcat(shim, kv_cuda_guard_cu);
  if (kv_mkdtemp(s->cache, "dbg", dir, sizeof dir, err, errlen) < 0)
    goto done;
  char f[PATH_MAX + 32];
  snprintf(f, sizeof f, "%s/candidate.cu", dir);
  int w = kv_write_file(f, text, len, err, errlen);
  snprintf(f, sizeof f, "%s/proto.h", dir);
  w = w < 0 ? w : kv_write_file(f, proto, strlen(proto), err, errlen);
  snprintf(f, sizeof f, "%s/kevo_shim.cu", dir);
  w = w < 0 ? w : kv_write_file(f, shim, strlen(shim), err, errlen);
  struct kv_vendor *ven = w == 0 ? malloc(sizeof *ven) : NULL;
  if (w == 0 && (!ven || kv_vendor_find(s->t, s->o, ven, err, errlen) < 0 ||
                 kv_vendor_stage(ven, dir, err, errlen) < 0))
    w = ven ? -1 : kv_error(err, errlen, "out of memory");
  if (w == 0) {
    char *nv = (char *)kv_nvcc_path(s->o);
    char *c1[16 + 2] = {nv,           "-c",           "-O3",       aflag,
                        "-Xcompiler", "-fPIC",        "-lineinfo", "-include",
                        "proto.h",    "candidate.cu", "-o",        "candidate.o"};
    for (int i = 0; i < ven->ncargs; i++)
      c1[12 + i] = ven->cargs[i];
    char *c2[] = {nv,      "-c",           "-O3", aflag,    "-Xcompiler",
                  "-fPIC", "kevo_shim.cu", "-o",  "shim.o", NULL};
    char *c3[16 + KV_VENDOR_MAX_ARGS];
    int a = 0;
    c3[a++] = nv;
    c3[a++] = "-shared";
    c3[a++] = aflag;
    c3[a++] = "-Xcompiler";
    c3[a++] = "-fPIC";
    c3[a++] = "candidate.o";
    c3[a++] = "shim.o";
    c3[a++] = "-o";
    c3[a++] = "out.so";
    /* The libraries the task allows, as the gate's own build links them. */
    for (int i = 0; i < ven->nlargs; i++)
      c3[a++] = ven->largs[i];
    c3[a] = NULL;
    char **steps[3] = {c1, c2, c3};
    char home[PATH_MAX + 8], tmp[PATH_MAX + 8];
    snprintf(home, sizeof home, "HOME=%s", dir);
    snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
    char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C", home, tmp, NULL};
    rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {
      struct kv_buf log;
      kv_buf_init(&log, 16384);
      struct kv_proc_result pr;
      struct kv_jail jail = {
          .dir = dir, .cpu_s = 300, .fsize = 256u << 20, .worker_path = s->o->worker_path};
      for (int r = 0; r < ven->nreads && jail.nreads < 4; r++)
        jail.reads[jail.nreads++] = ven->reads[r];
      if (kv_run_jailed(&jail, steps[i], envp, dir, 120, &log, &pr, err, errlen) < 0)
        rc = -1;
      else if (!pr.exited || pr.status != 0)
        rc = kv_error(err, errlen, "the -lineinfo build failed: %.300s", log.data ? log.data : "");
      kv_buf_release(&log);
    }
    snprintf(f, sizeof f, "%s/out.so", dir);
    if (rc == 0 && rename(f, so) < 0)
      rc = kv_error(err, errlen, "%s: cannot store the -lineinfo build", so);
  }
  free(ven);
  kv_rmtree(dir);
done:
  free(text);
  free(proto);
  free(shim);
  return rc;
}

/* libasan.so as the C compiler names it ("" when it has none). Cached. */
static const char *libasan_path(void) {
  static char path[PATH_MAX];
  static int done;
  if (done)
    return path;
  done = 1;
  char *argv[] = {"cc", "-print-file-name=libasan.so", NULL};
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", NULL};
  struct kv_buf b;
  kv_buf_init(&b, 4096);
  struct kv_proc_result pr;
  char err[256];
  if (kv_run(argv, envp, "/", 20, NULL, NULL, &b, &pr, err, sizeof err) == 0 && pr.exited &&
      pr.status == 0 && b.data && b.data[0] == '/') {
    b.data[strcspn(b.data, "\n")] = 0;
    char real[PATH_MAX];
    if (realpath(b.data, real) && access(real, R_OK) == 0)
      snprintf(path, sizeof path, "%s", real);
  }
  kv_buf_release(&b);
  return path;
}

/* The cpu candidate built again with AddressSanitizer and
 * UndefinedBehaviorSanitizer (-O1 -g), as <objdir>/<key>-asan.so; cached. */
static int build_asan(const struct kv_session *s, const struct kv_build *cand, const char *src,
                      char *so, size_t socap, char *err, size_t errlen) {
  snprintf(so, socap, "%s/%s-asan.so", s->objdir, cand->key);
  if (kv_path_exists(so))
    return 0;
  char *text = NULL, *proto = kv_task_prototype_alloc(s->t, KV_LANG_C),
       *shim = kv_task_shim_alloc(s->t, KV_LANG_C);
  size_t len = 0;
  char dir[PATH_MAX];
  int rc = -1;
  if (!proto || !shim) {
    kv_error(err, errlen, "%s: the task's prototype is over kevo's %u-byte cap, or memory ran out",
             s->t->name, KV_TASK_PROTO_MAX);
    goto done;
  }
  if (kv_read_file(src, KV_SOURCE_MAX, &text, &len, err, errlen) < 0)
    goto done;
  if (kv_mkdtemp(s->cache, "asan", dir, sizeof dir, err, errlen) < 0)
    goto done;
  char f[PATH_MAX + 32];
  snprintf(f, sizeof f, "%s/candidate.c", dir);
  int w = kv_write_file(f, text, len, err, errlen);
  snprintf(f, sizeof f, "%s/proto.h", dir);
  w = w < 0 ? w : kv_write_file(f, proto, strlen(proto), err, errlen);
  snprintf(f, sizeof f, "%s/kevo_shim.c", dir);
  w = w < 0 ? w : kv_write_file(f, shim, strlen(shim), err, errlen);
  if (w == 0) {
    char *argv[] = {"cc",
                    "-std=gnu11",
                    "-O1",
                    "-g",
                    "-fno-omit-frame-pointer",
                    "-fsanitize=address,undefined",
                    "-fno-sanitize-recover=undefined",
                    "-fopenmp",
                    "-fPIC",
                    "-shared",
                    "-include",
                    "proto.h",
                    "candidate.c",
                    "kevo_shim.c",
                    "-o",
                    "out.so",
                    "-lm",
                    NULL};
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "TMPDIR=%s", dir);
    char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", tmp, NULL};
    struct kv_buf log;
    kv_buf_init(&log, 16384);
    struct kv_proc_result pr;
    struct kv_jail jail = {
        .dir = dir, .cpu_s = 300, .fsize = 256u << 20, .worker_path = s->o->worker_path};
    if (kv_run_jailed(&jail, argv, envp, dir, 120, &log, &pr, err, errlen) == 0) {
      if (pr.exited && pr.status == 0) {
        snprintf(f, sizeof f, "%s/out.so", dir);
        rc = rename(f, so) == 0 ? 0 : kv_error(err, errlen, "%s: cannot store the build", so);
      } else {
        kv_error(err, errlen, "the AddressSanitizer build failed: %.300s",
                 log.data ? log.data : "");
      }
    }
    kv_buf_release(&log);
  }
  kv_rmtree(dir);
done:
  free(text);
  free(proto);
  free(shim);
  return rc;
}

/* The sanitizers inside the worker cannot start a symbolizer (no exec), so
 * their frames in the candidate read "#1 0x7f.. (/.../KEY-asan.so+0x2870)".
 * kevo symbolizes them itself: addr2line on that object, sandboxed (the
 * object's debug information is the candidate's), each such frame rewritten
 * as "#1 0x7f.. in FUNC FILE:LINE". Returns a new text (malloc'd), or NULL
 * to keep the original. */
static char *symbolize(const char *text, const char *so, const char *tmp_parent,
                       const char *worker_path) {
  char needle[PATH_MAX + 8];
  snprintf(needle, sizeof needle, "(%s+0x", so);
  size_t nl = strlen(needle);
  enum { MAXF = 64 };
  const char *at[MAXF];
  unsigned long long off[MAXF];
  int n = 0;
  for (const char *p = strstr(text, needle); p && n < MAXF; p = strstr(p + nl, needle)) {
    char *end;
    off[n] = strtoull(p + nl, &end, 16);
    if (*end == ')')
      at[n++] = p;
  }
  if (!n)
    return NULL;
  char dir[PATH_MAX], err[256];
  if (kv_mkdtemp(tmp_parent, "a2l", dir, sizeof dir, err, sizeof err) < 0)
    return NULL;
  char *argv[4 + MAXF + 1], hex[MAXF][24];
  int a = 0;
  argv[a++] = "addr2line";
  argv[a++] = "-f";
  argv[a++] = "-e";
  argv[a++] = (char *)so;
  for (int i = 0; i < n; i++) {
    /* addr2line wants the address of the instruction: the return address less one. */
    snprintf(hex[i], sizeof hex[i], "0x%llx", off[i] ? off[i] - 1 : 0);
    argv[a++] = hex[i];
  }
  argv[a] = NULL;
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", NULL};
  struct kv_buf out;
  kv_buf_init(&out, 1 << 20);
  struct kv_proc_result pr;
  char *res = NULL;
  struct kv_jail jail = {
      .dir = dir, .reads = {so}, .nreads = 1, .cpu_s = 30, .worker_path = worker_path};
  if (kv_run_jailed(&jail, argv, envp, dir, 20, &out, &pr, err, sizeof err) == 0 && pr.exited &&
      pr.status == 0 && out.data) {
    /* Two lines per address: FUNC, FILE:LINE. */
    char *fn[MAXF], *loc[MAXF];
    int k = 0;
    char *save = NULL;
    for (char *l = strtok_r(out.data, "\n", &save); l && k < n; l = strtok_r(NULL, "\n", &save)) {
      fn[k] = l;
      loc[k] = strtok_r(NULL, "\n", &save);
      if (!loc[k])
        break;
      k++;
    }
    struct kv_buf b;
    kv_buf_init(&b, KV_SAN_TEXT_CAP + 4096);
    const char *prev = text;
    for (int i = 0; i < k; i++) {
      kv_buf_append(&b, prev, (size_t)(at[i] - prev));
      const char *close = strchr(at[i], ')');
      /* "FILE:LINE (discriminator 2)" -> "FILE:LINE"; "??:0" stays unknown */
      char *sp = strchr(loc[i], ' ');
      if (sp)
        *sp = 0;
      if (strcmp(loc[i], "??:0") && strcmp(loc[i], "??:?"))
        kv_buf_appendf(&b, "in %s %s", fn[i], loc[i]);
      else
        kv_buf_append(&b, at[i], (size_t)(close + 1 - at[i]));
      prev = close + 1;
    }
    kv_buf_append(&b, prev, strlen(prev));
    res = kv_buf_detach(&b);
  }
  kv_buf_release(&out);
  kv_rmtree(dir);
  return res;
}

/* $KEVO_SANITIZER_LOG=DIR keeps each report as the parser got it, as
 * DIR/NAME.txt (fixtures for tests/sanitize/). */
static void keep_log(const char *name, const char *text) {
  const char *d = getenv("KEVO_SANITIZER_LOG");
  if (!d || !*d || !text)
    return;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s.txt", d, name);
  kv_write_file(p, text, strlen(text), NULL, 0);
}

/* The first failing check's size index and seed (the call to debug). */
static void failing_call(const struct kv_session *s, const struct kv_gate_result *r, int *index,
                         uint64_t *seed) {
  int nseeds = s->o->nseeds >= 2 ? s->o->nseeds : 2;
  *index = 0;
  *seed = kv_random_u64() >> 8;
  for (int i = 0; i < r->nchecks; i++)
    if (r->checks[i].verdict != KV_V_OK) {
      *index = i / nseeds;
      *seed = r->checks[i].seed;
      break;
    }
  if (*index >= s->t->ncheck)
    *index = 0;
}

void kv_san_debug_cpu(const struct kv_session *s, const struct kv_build *cand, const char *cand_src,
                      struct kv_gate_result *r) {
  double t0 = kv_now_s();
  struct kv_san_report *rep = calloc(1, sizeof *rep);
  if (!rep)
    return;
  kv_san_report_free(r->debug);
  r->debug = rep;
  char err[1024] = "", so[PATH_MAX];
  const char *lib = libasan_path();
  if (!lib[0]) {
    snprintf(rep->note, sizeof rep->note,
             "not available: the C compiler has no AddressSanitizer runtime (libasan.so); "
             "install it (apt-get install libasan8, or gcc's package that carries it)");
  } else if (build_asan(s, cand, cand_src, so, sizeof so, err, sizeof err) < 0) {
    snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
  } else {
    int index;
    uint64_t seed;
    failing_call(s, r, &index, &seed);
    /* The runtime comes first (LD_PRELOAD) into a worker with every layer on
     * but RLIMIT_AS, under which its shadow memory cannot be reserved. */
    char preload[PATH_MAX + 16], store[256];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
    const char *env[] = {preload,
                         "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:"
                         "allocator_may_return_null=1:detect_odr_violation=0",
                         "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1", NULL};
    const char *without[8];
    kv_tool_layers_off("asan", without, 8, store, sizeof store);
    kv_tool_layers_said(without, rep->sandbox_off, sizeof rep->sandbox_off);
    double budget = s->o->debug_deadline_s > 0 ? s->o->debug_deadline_s : 120;
    struct kv_tool_run tr = {.without = without,
                             .extra_env = env,
                             .start_s = 30,
                             .deadline_s = budget,
                             .exit_s = 5,
                             .keep_stderr = 1};
    struct kv_tool_outcome oc;
    if (kv_tool_call(s, so, 1, "check", index, seed, &tr, &oc, err, sizeof err) < 0) {
      snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
    } else {
      snprintf(rep->tools, sizeof rep->tools, "asan,ubsan");
      /* ASan's shadow-byte map says nothing a kernel writer needs. */
      char *shadow = oc.err_text ? strstr(oc.err_text, "Shadow bytes around") : NULL;
      if (shadow)
        *shadow = 0;
      char *sym = oc.err_text ? symbolize(oc.err_text, so, s->cache, s->o->worker_path) : NULL;
      const char *txt = sym ? sym : oc.err_text ? oc.err_text : "";
      keep_log("asan", txt);
      kv_san_parse("asan", txt, rep);
      kv_san_append_raw(rep, "asan,ubsan", txt);
      free(sym);
      if (oc.call == KV_CALL_TIMEOUT)
        snprintf(rep->note, sizeof rep->note, "the sanitized call did not finish: %.200s",
                 oc.detail);
    }
    free(oc.err_text);
  }
  for (int i = 0; i < rep->nfindings; i++)
    if (!strcmp(base_name(rep->f[i].file), "candidate.c"))
      snprintf(rep->f[i].file, sizeof rep->f[i].file, "%s", base_name(cand_src));
  rep->seconds = kv_now_s() - t0;
}

void kv_san_debug(const struct kv_session *s, const struct kv_build *cand, const char *cand_src,
                  struct kv_gate_result *r) {
  double t0 = kv_now_s();
  struct kv_san_report *rep = calloc(1, sizeof *rep);
  if (!rep)
    return;
  kv_san_report_free(r->debug);
  r->debug = rep;
  char tool[PATH_MAX];
  kv_san_path(s->o, tool, sizeof tool);
  char err[1024] = "";
  if (!tool[0]) {
    snprintf(rep->note, sizeof rep->note,
             "not available: compute-sanitizer not found (not beside nvcc, not on PATH); install "
             "the CUDA toolkit's or set KEVO_COMPUTE_SANITIZER to its path");
    goto done;
  }
  char so[PATH_MAX];
  if (kv_san_build_lineinfo(s, cand, cand_src, so, sizeof so, err, sizeof err) < 0) {
    snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
    goto done;
  }
  /* The call that failed: its size and seed (the first failing check). */
  int index;
  uint64_t seed;
  failing_call(s, r, &index, &seed);
  char tooldir[PATH_MAX], store[256];
  kv_tool_dir(tool, tooldir, sizeof tooldir);
  const char *without[8];
  kv_tool_layers_off("compute-sanitizer", without, 8, store, sizeof store);
  kv_tool_layers_said(without, rep->sandbox_off, sizeof rep->sandbox_off);
  static const char *const tools[] = {"memcheck", "racecheck", "synccheck", "initcheck"};
  double budget = s->o->debug_deadline_s > 0 ? s->o->debug_deadline_s : 120;
  /* $KEVO_SANITIZER_TOOLS ("memcheck,racecheck") runs only those. */
  const char *only = getenv("KEVO_SANITIZER_TOOLS");
  for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++) {
    if (only && *only && !strstr(only, tools[i]))
      continue;
    double left = budget - (kv_now_s() - t0);
    if (left < 10) {
      size_t u = strlen(rep->note);
      snprintf(rep->note + u, sizeof rep->note - u, "%sskipped %s and after: out of time (%.0f s)",
               u ? "; " : "", tools[i], budget);
      break;
    }
    char logdir[PATH_MAX], logp[PATH_MAX + 32];
    if (kv_mkdtemp(s->cache, "san", logdir, sizeof logdir, err, sizeof err) < 0) {
      snprintf(rep->note, sizeof rep->note, "not available: %.480s", err);
      break;
    }
    snprintf(logp, sizeof logp, "%s/%s.txt", logdir, tools[i]);
    const char *wrap[] = {tool, "--tool",           tools[i], "--log-file", logp, "--print-limit",
                          "20", "--show-backtrace", "device", NULL};
    struct kv_tool_run tr = {
        .wrap = wrap, .without = without, .start_s = 60, .deadline_s = left - 5, .exit_s = 20};
    tr.reads[tr.nreads++] = tooldir;
    struct kv_tool_outcome oc;
    int rc = kv_tool_call(s, so, 1, "check", index, seed, &tr, &oc, err, sizeof err);
    char *text = NULL;
    size_t len = 0;
    if (rc == 0 && kv_read_file(logp, KV_SAN_TEXT_CAP, &text, &len, NULL, 0) == 0) {
      size_t u = strlen(rep->tools);
      snprintf(rep->tools + u, sizeof rep->tools - u, "%s%s", u ? "," : "", tools[i]);
      keep_log(tools[i], text);
      kv_san_parse(tools[i], text, rep);
      kv_san_append_raw(rep, tools[i], text);
      if (!oc.tool_exited || oc.call == KV_CALL_TIMEOUT) {
        u = strlen(rep->note);
        snprintf(rep->note + u, sizeof rep->note - u, "%s%s did not finish: %.150s", u ? "; " : "",
                 tools[i], oc.detail);
      }
    } else {
      size_t u = strlen(rep->note);
      snprintf(rep->note + u, sizeof rep->note - u,
               "%snot available: %s: %.250s ('kevo doctor' shows whether compute-sanitizer "
               "needs sandbox layers off here, $KEVO_SANITIZER_WITHOUT)",
               u ? "; " : "", tools[i], rc < 0 ? err : "it wrote no report");
    }
    free(text);
    kv_rmtree(logdir);
    if (rc < 0)
      break; /* the worker does not start under it: the next tool will not do better */
  }
done:
  /* The rebuild compiled the candidate's text as candidate.cu, line for line
   * (the prototype is force-included): name the candidate's own file. */
  for (int i = 0; i < rep->nfindings; i++) {
    struct kv_san_finding *f = &rep->f[i];
    const char *base = base_name(cand_src);
    if (!strcmp(base_name(f->file), "candidate.cu"))
      snprintf(f->file, sizeof f->file, "%s", base);
    if (!strcmp(base_name(f->file2), "candidate.cu"))
      snprintf(f->file2, sizeof f->file2, "%s", base);
  }
  rep->seconds = kv_now_s() - t0;
}
