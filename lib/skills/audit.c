/* The checks KLineage puts on a model-proposed step: the audit's citations,
 * re-read by kevo (lines that do not exist, or do not hold what the audit
 * quotes, fail the step), and the round trip's speed and features. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "kevo/skills.h"
#include "kevo/util.h"

int skills_field(const char *text, const char *key, char *out, size_t cap) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == '*' || *p == '-')
      p++;
    if (!strncasecmp(p, key, k) && p[k] == ':') {
      p += k + 1;
      while (*p == ' ' || *p == '\t' || *p == '*' || *p == '`')
        p++;
      size_t n = strcspn(p, "\r\n");
      while (n && (p[n - 1] == ' ' || p[n - 1] == '*' || p[n - 1] == '`'))
        n--;
      snprintf(out, cap, "%.*s", (int)n, p);
      return 1;
    }
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return 0;
}

/* Blanks squashed to one space, trimmed (malloc'd). */
char *skills_squash(const char *in, size_t n) {
  char *o = malloc(n + 1);
  if (!o)
    return NULL;
  size_t w = 0;
  int sp = 0;
  for (size_t i = 0; i < n; i++) {
    if (isspace((unsigned char)in[i])) {
      sp = w > 0;
      continue;
    }
    if (sp)
      o[w++] = ' ';
    sp = 0;
    o[w++] = in[i];
  }
  o[w] = 0;
  return o;
}

int kv_sources_same(const char *a, const char *b) {
  char *x = skills_squash(a, strlen(a)), *y = skills_squash(b, strlen(b));
  int same = x && y && !strcmp(x, y);
  free(x);
  free(y);
  return same;
}

/* Lines a..b (1-based) of src into a malloc'd string, or NULL when out of
 * range; *nlines: how many lines src has. */
static char *lines_of(const char *src, int a, int b, int *nlines) {
  int n = 0;
  const char *start = NULL, *end = NULL, *ls = src;
  for (const char *p = src;; p++) {
    if (*p == '\n' || (!*p && p > ls)) {
      n++;
      if (n == a)
        start = ls;
      if (n == b)
        end = p;
      ls = p + 1;
    }
    if (!*p)
      break;
  }
  *nlines = n;
  if (!start || !end || a < 1 || b < a)
    return NULL;
  char *o = malloc((size_t)(end - start) + 1);
  if (o) {
    memcpy(o, start, (size_t)(end - start));
    o[end - start] = 0;
  }
  return o;
}

/* One "Present:" or "Absent:" line: "L12-L14 `quote`", "12-14 `quote`", "L7 `quote`". */
static int parse_cite(const char *v, int *a, int *b, char *quote, size_t cap) {
  const char *p = v;
  while (*p == ' ' || *p == 'L' || *p == 'l')
    p++;
  char *e;
  long x = strtol(p, &e, 10);
  if (e == p)
    return -1;
  long y = x;
  p = e;
  while (*p == ' ')
    p++;
  if (*p == '-' || *p == ':') {
    p++;
    while (*p == ' ' || *p == 'L' || *p == 'l')
      p++;
    y = strtol(p, &e, 10);
    if (e == p)
      return -1;
    p = e;
  }
  const char *q1 = strchr(p, '`'), *q2 = q1 ? strrchr(q1 + 1, '`') : NULL;
  if (!q1 || !q2 || q2 == q1 + 1)
    return -2;
  snprintf(quote, cap, "%.*s", (int)(q2 - q1 - 1), q1 + 1);
  *a = x > 1000000 ? 1000000 : (int)x;
  *b = y > 1000000 ? 1000000 : (int)y;
  return 0;
}

struct cite_ctx {
  const char *kernel, *other, *name; /* other: the kernel a Present quote must be gone from */
  const char *code;                  /* kernel with comments blanked: a Present quote is code */
  json_t *arr;
  int n;
};

/* The squashed quote qq is in lines a..b of code (comments blanked). */
static int in_code(const char *code, int a, int b, const char *qq) {
  int nl;
  char *t = lines_of(code, a, b, &nl);
  char *sq = t ? skills_squash(t, strlen(t)) : NULL;
  int ok = sq && strstr(sq, qq) != NULL;
  free(sq);
  free(t);
  return ok;
}

static int check_cite(struct cite_ctx *c, const char *v, char *why, size_t cap) {
  int a, b, nl;
  char quote[512];
  int rc = parse_cite(v, &a, &b, quote, sizeof quote);
  if (rc)
    return snprintf(why, cap, "the %s citation '%.80s' is not 'L<a>-L<b> `quote`'", c->name, v), -1;
  if (++c->n > KV_AUDIT_CITES_MAX)
    return snprintf(why, cap, "more than %d %s citations", KV_AUDIT_CITES_MAX, c->name), -1;
  char *text = lines_of(c->kernel, a, b, &nl);
  if (!text)
    return snprintf(why, cap, "the %s citation L%d-L%d is outside the kernel (%d lines)", c->name,
                    a, b, nl),
           -1;
  char *sq = skills_squash(text, strlen(text)), *qq = skills_squash(quote, strlen(quote));
  int ok = -1;
  if (b - a + 1 > KV_AUDIT_LINES_MAX)
    snprintf(why, cap, "the %s citation L%d-L%d spans more than %d lines", c->name, a, b,
             KV_AUDIT_LINES_MAX);
  else if (!sq || !qq || !qq[0] || !strstr(sq, qq))
    snprintf(why, cap, "the %s citation L%d-L%d does not hold `%.120s` (it reads: %.160s)", c->name,
             a, b, quote, sq ? sq : "");
  else if (c->code && !in_code(c->code, a, b, qq))
    snprintf(why, cap,
             "the %s citation L%d-L%d holds `%.120s` only in a comment; a comment proves nothing",
             c->name, a, b, quote);
  else if (c->other) {
    char *os = skills_squash(c->other, strlen(c->other));
    if (os && strstr(os, qq))
      snprintf(why, cap,
               "the present citation `%.120s` is still in the simpler kernel: it is not what "
               "was removed",
               quote);
    else
      ok = 0;
    free(os);
  } else
    ok = 0;
  if (ok == 0)
    json_array_append_new(
        c->arr, json_pack("{s:[i,i],s:s,s:s}", "lines", a, b, "quote", quote, "text", text));
  free(sq);
  free(qq);
  free(text);
  return ok;
}

/* Every line of reply starting with key (e.g. "Present:") checked as a citation. */
static int check_all(const char *reply, const char *key, struct cite_ctx *c, char *why,
                     size_t cap) {
  size_t k = strlen(key);
  for (const char *p = reply; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == '*' || *p == '-')
      p++;
    if (!strncasecmp(p, key, k) && p[k] == ':') {
      char v[768];
      snprintf(v, sizeof v, "%.*s", (int)strcspn(p + k + 1, "\r\n"), p + k + 1);
      if (check_cite(c, v, why, cap) != 0)
        return -1;
    }
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  if (!c->n)
    return snprintf(why, cap, "no %s citation: the audit must cite the lines that decide", c->name),
           -1;
  return 0;
}

int kv_audit_check(const char *reply, const char *richer, const char *simpler,
                   struct kv_audit *out) {
  memset(out, 0, sizeof *out);
  char verdict[64] = "", reason[512] = "", hr[65], hs[65];
  skills_field(reply, "Verdict", verdict, sizeof verdict);
  skills_field(reply, "Reason", reason, sizeof reason);
  kv_sha256_hex(richer, strlen(richer), hr);
  kv_sha256_hex(simpler, strlen(simpler), hs);
  char *code = skills_strip_comments(richer, strlen(richer));
  struct cite_ctx pres = {richer, simpler, "present", code, json_array(), 0};
  struct cite_ctx abs = {simpler, NULL, "absent", NULL, json_array(), 0};
  if (strncasecmp(verdict, "removed", 7))
    snprintf(out->why, sizeof out->why, "the audit's verdict is '%s', not removed",
             verdict[0] ? verdict : "(none)");
  else if (!reason[0])
    snprintf(out->why, sizeof out->why, "the audit gave no reason");
  else if (check_all(reply, "Present", &pres, out->why, sizeof out->why) == 0 &&
           check_all(reply, "Absent", &abs, out->why, sizeof out->why) == 0) {
    out->passed = 1;
    snprintf(out->why, sizeof out->why, "removed: %d present and %d absent citations re-read",
             pres.n, abs.n);
  }
  free(code);
  json_t *j = json_pack("{s:b,s:s,s:s,s:s,s:o,s:o,s:s,s:s}", "passed", out->passed, "verdict",
                        verdict, "reason", reason, "why", out->why, "present", pres.arr, "absent",
                        abs.arr, "richer_sha256", hr, "simpler_sha256", hs);
  out->json = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(j);
  return out->passed;
}

/* ---- the round trip ----------------------------------------------------------- */

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  double t[KV_PAIRS_MAX];
  memcpy(t, v, (size_t)n * sizeof *v);
  qsort(t, (size_t)n, sizeof *t, by_double);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* KLineage's rule: every trial and the medians' ratio reach min_ratio. */
static void speed_every(const double *rich_us, const double *re_us, int n, double min_ratio,
                        struct kv_roundtrip *rt) {
  int worst = 0;
  for (int i = 1; i < n; i++)
    if (rt->ratio[i] < rt->ratio[worst])
      worst = i;
  rt->min_ratio = rt->ratio[worst];
  rt->overall = median(rich_us, n) / median(re_us, n);
  rt->passed = rt->min_ratio >= min_ratio && rt->overall >= min_ratio;
  if (!rt->passed)
    snprintf(rt->why, sizeof rt->why,
             "speed not restored: %.3fx of the richer kernel's overall, %.3fx in trial %d of %d "
             "(every trial must reach %.2fx)",
             rt->overall, rt->min_ratio, worst + 1, n, min_ratio);
  else
    snprintf(rt->why, sizeof rt->why,
             "speed restored: %.3fx overall, at least %.3fx in each of %d trials (>= %.2fx)",
             rt->overall, rt->min_ratio, n, min_ratio);
}

/* kevo's rule: the geometric mean ratio's 95% interval reaches min_ratio. */
static void speed_interval(const double *rich_us, const double *re_us, int n, double min_ratio,
                           uint64_t seed, struct kv_roundtrip *rt) {
  struct kv_paired p;
  char err[200];
  /* kv_paired_stats' ratio is its first argument over its second: rich / re */
  if (kv_paired_stats(rich_us, re_us, n, seed ? seed : 1, 0, &p, err, sizeof err) != 0) {
    rt->passed = 0;
    snprintf(rt->why, sizeof rt->why, "speed not judged: %s", err);
    return;
  }
  rt->overall = p.speedup;
  rt->ci_lo = p.ci_lo;
  rt->ci_hi = p.ci_hi;
  rt->passed = p.ci_hi >= min_ratio;
  snprintf(rt->why, sizeof rt->why,
           "speed %s: %.3fx of the richer kernel's, 95%% interval [%.3f, %.3f] over %d trials "
           "(its upper end must reach %.2fx; worst trial %.3fx)",
           rt->passed ? "restored" : "not restored", p.speedup, p.ci_lo, p.ci_hi, n, min_ratio,
           rt->min_ratio);
}

void kv_roundtrip_speed(const double *rich_us, const double *re_us, int n, double min_ratio,
                        int every, uint64_t seed, struct kv_roundtrip *rt) {
  if (min_ratio <= 0)
    min_ratio = KV_ROUNDTRIP_MIN_RATIO;
  if (n > KV_PAIRS_MAX)
    n = KV_PAIRS_MAX;
  rt->checked = 1;
  rt->n = n;
  rt->every = every;
  if (n < 2) {
    rt->passed = 0;
    snprintf(rt->why, sizeof rt->why, "%d trials timed: too few to judge", n);
    return;
  }
  rt->min_ratio = 1e300;
  for (int i = 0; i < n; i++) {
    rt->ratio[i] = re_us[i] > 0 ? rich_us[i] / re_us[i] : 0;
    if (rt->ratio[i] < rt->min_ratio)
      rt->min_ratio = rt->ratio[i];
  }
  if (every)
    speed_every(rich_us, re_us, n, min_ratio, rt);
  else
    speed_interval(rich_us, re_us, n, min_ratio, seed, rt);
}

void kv_roundtrip_features(uint32_t rich, uint32_t rederived, struct kv_roundtrip *rt) {
  uint32_t s = kv_features_mask(KV_FEAT_STRATEGY);
  rt->missing = rich & s & ~rederived;
  rt->extra = rederived & s & ~rich;
}
