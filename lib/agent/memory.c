/* The memory of rules as something to trust and share (see rules.h): what a
 * rule forbids and whether an accepted kernel does it anyway, which rules are
 * noise, export and import as JSON with provenance, the audit, and the
 * deduplication pass (word-set similarity, then an LLM judge). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kevo/llm.h"
#include "kevo/rules.h"
#include "kevo/util.h"
#include "kevo/surface.h"

#define SOURCE_SCAN_MAX (1u << 20) /* a source longer than this is searched in its first MiB */
#define EXPORT_EVIDENCE_MAX 2000   /* items per rule in an export; the rest fold into one */
#define IMPORT_EVIDENCE_MAX 5000   /* items per rule accepted from a file */
#define IMPORT_ALIASES_MAX 64
#define IMPORT_RULES_MAX 100000
#define FIELD_MAX 512 /* longest key, task, hash, verdict, model in a file */
#define FLAG_MAX 1024 /* longest flag read from a file */
#define FLAG_KEPT 600 /* longest flag kept: every flag kevo writes fits, prefix included */
#define JUDGE_PAIRS_MAX 4096

/* ---- what a rule forbids ---------------------------------------------------- */

static const char *const verbs[][2] = {
    {"you cannot call ", "c"},      {"you cannot invoke ", "c"}, {"you cannot use ", "u"},
    {"you cannot include ", "i"},   {"you must not call ", "c"}, {"you must not use ", "u"},
    {"you must not include ", "i"}, {"do not call ", "c"},       {"do not use ", "u"},
    {"do not include ", "i"},       {"don't call ", "c"},        {"don't use ", "u"},
    {"don't include ", "i"},        {"never call ", "c"},        {"never use ", "u"},
    {"never include ", "i"},
};

/* Words after which mere presence of the construct is not what the rule
 * forbids (it forbids a use in some context, or some amount). */
static const char *const conditions[] = {
    " without ",         " unless ",       " except ",         " outside ",   " before ",
    " after ",           " more than",     " less than",       " fewer than", " larger than",
    " greater than",     " when ",         " while ",          " if ",        " together with",
    " at the same time", " twice",         " instead of ",     " only ",      " both ",
    "__global__",        "__device__",     "device code",      "host code",   "device function",
    "host function",     "kernel body",    " as a ",           " as an ",     " on the host",
    " on the device",    " from the host", " from the device", " in host",    " in device",
};

static const char *const ordinary[] = {
    "a",          "an",       "any",       "the",        "this",      "that",          "these",
    "those",      "it",       "them",      "its",        "more",      "less",          "such",
    "other",      "another",  "external",  "undeclared", "undefined", "unknown",       "helper",
    "helpers",    "function", "functions", "library",    "libraries", "header",        "headers",
    "memory",     "shared",   "global",    "threads",    "thread",    "blocks",        "block",
    "pointers",   "pointer",  "arrays",    "array",      "loops",     "loop",          "variables",
    "variable",   "code",     "kernels",   "kernel",     "output",    "outputs",       "input",
    "inputs",     "values",   "value",     "types",      "type",      "macros",        "macro",
    "all",        "every",    "each",      "same",       "one",       "two",           "multiple",
    "recursion",  "atomics",  "floats",    "doubles",    "integers",  "vectors",       "simd",
    "intrinsics", "assembly", "inline",    "new",        "old",       "global_memory",
};

static int is_ordinary(const char *w) {
  char low[64];
  size_t k = 0;
  for (; w[k] && k + 1 < sizeof low; k++)
    low[k] = (char)tolower((unsigned char)w[k]);
  low[k] = 0;
  for (size_t i = 0; i < KV_ARRAY_LEN(ordinary); i++)
    if (!strcmp(low, ordinary[i]))
      return 1;
  return 0;
}

static int ident_char(int c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* X is a C or CUDA identifier, possibly qualified (a.b, a::b, a->b). */
static int identifier_like(const char *x) {
  if (!(isalpha((unsigned char)x[0]) || x[0] == '_'))
    return 0;
  for (const char *p = x; *p; p++) {
    if (ident_char(*p))
      continue;
    if ((*p == '.' || (*p == ':' && p[1] == ':')) && p[1] && p[1] != '.') {
      if (*p == ':')
        p++;
      continue;
    }
    return 0;
  }
  return 1;
}

/* Looks like code rather than a word: an underscore, a qualifier, a digit
 * or an inner capital. */
static int code_shaped(const char *x) {
  if (strchr(x, '_') || strchr(x, '.') || strstr(x, "::"))
    return 1;
  for (const char *p = x; *p; p++)
    if (isdigit((unsigned char)*p) || (p > x && isupper((unsigned char)*p)))
      return 1;
  return 0;
}

int kv_rules_subject(const char *rule, int *kind, char *x, size_t cap) {
  if (!rule || cap < 2)
    return -1;
  char low[KV_RULE_MAX + 2];
  size_t n = strlen(rule);
  if (n >= KV_RULE_MAX)
    n = KV_RULE_MAX - 1;
  low[0] = ' ';
  for (size_t i = 0; i < n; i++)
    low[i + 1] = (char)tolower((unsigned char)rule[i]);
  low[n + 1] = 0;
  const char *at = NULL;
  int k = 0;
  for (size_t i = 0; i < KV_ARRAY_LEN(verbs) && !at; i++) {
    const char *p = strstr(low, verbs[i][0]);
    if (p && (p == low || !ident_char(p[-1]))) {
      at = p + strlen(verbs[i][0]);
      k = verbs[i][1][0];
    }
  }
  if (!at)
    return -1;
  for (size_t i = 0; i < KV_ARRAY_LEN(conditions); i++)
    if (strstr(at, conditions[i]))
      return -1;
  /* Back to the rule's own case, past the verb. */
  const char *p = rule + (at - low - 1);
  static const char *const fillers[] = {"the ",    "a ",     "function ",  "functions ",
                                        "header ", "macro ", "intrinsic ", "builtin "};
  for (int again = 1; again;) {
    again = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(fillers); i++)
      if (!strncasecmp(p, fillers[i], strlen(fillers[i]))) {
        p += strlen(fillers[i]);
        again = 1;
      }
  }
  int quoted = 0, angled = 0;
  if (*p == '`' || *p == '\'' || *p == '"') {
    quoted = 1;
    p++;
  } else if (!strncmp(p, "\xe2\x80\x98", 3) || !strncmp(p, "\xe2\x80\x9c", 3)) {
    quoted = 1;
    p += 3;
  } else if (*p == '<') {
    angled = 1;
    p++;
  }
  size_t len = 0;
  if (k == 'i') {
    while (p[len] && (ident_char(p[len]) || strchr("./+-", p[len])))
      len++;
  } else {
    while (p[len] &&
           (ident_char(p[len]) || p[len] == '.' || (p[len] == ':' && p[len + 1] == ':') ||
            (p[len] == ':' && len && p[len - 1] == ':') || (p[len] == '-' && p[len + 1] == '>') ||
            (p[len] == '>' && len && p[len - 1] == '-')))
      len++;
  }
  while (len && (p[len - 1] == '.' || p[len - 1] == ':' || p[len - 1] == '-'))
    len--;
  if (!len || len >= cap)
    return -1;
  memcpy(x, p, len);
  x[len] = 0;
  int called = !strncmp(p + len, "()", 2);
  if (k == 'i') {
    if (!(angled || quoted || strchr(x, '.') || strchr(x, '/')))
      return -1;
  } else {
    if (!identifier_like(x) || is_ordinary(x))
      return -1;
    if (k == 'u' && !quoted && !called && !code_shaped(x))
      return -1;
    if (k == 'c' && !quoted && !called && strlen(x) < 3)
      return -1;
  }
  *kind = k;
  return 0;
}

/* The source with comments blanked (and string and character literals too
 * unless keep_strings), same length and line breaks. */
static char *blank_source(const char *src, size_t n, int keep_strings) {
  char *o = malloc(n + 1);
  if (!o)
    return NULL;
  memcpy(o, src, n);
  o[n] = 0;
  for (size_t i = 0; i < n;) {
    if (o[i] == '/' && i + 1 < n && o[i + 1] == '/') {
      while (i < n && o[i] != '\n')
        o[i++] = ' ';
    } else if (o[i] == '/' && i + 1 < n && o[i + 1] == '*') {
      o[i++] = ' ';
      o[i++] = ' ';
      while (i < n && !(o[i] == '*' && i + 1 < n && o[i + 1] == '/')) {
        if (o[i] != '\n')
          o[i] = ' ';
        i++;
      }
      if (i < n)
        o[i++] = ' ';
      if (i < n)
        o[i++] = ' ';
    } else if (o[i] == '"' || o[i] == '\'') {
      char q = o[i++];
      while (i < n && o[i] != q && o[i] != '\n') {
        if (o[i] == '\\' && i + 1 < n && o[i + 1] != '\n') {
          if (!keep_strings)
            o[i] = ' ', o[i + 1] = ' ';
          i += 2;
          continue;
        }
        if (!keep_strings)
          o[i] = ' ';
        i++;
      }
      if (i < n && o[i] == q)
        i++;
    } else {
      i++;
    }
  }
  return o;
}

static int line_of(const char *s, const char *at) {
  int l = 1;
  for (const char *p = s; p < at; p++)
    l += *p == '\n';
  return l;
}

/* The next occurrence of x in s at or after from, with x not part of a
 * longer identifier or qualified name. */
static const char *find_word(const char *s, const char *from, const char *x) {
  size_t n = strlen(x);
  for (const char *p = strstr(from, x); p; p = strstr(p + 1, x)) {
    int before = p > s && (ident_char(p[-1]) || p[-1] == '.' ||
                           (p[-1] == ':' && p - 1 > s && p[-2] == ':') ||
                           (p[-1] == '>' && p - 1 > s && p[-2] == '-'));
    int after = ident_char(p[n]);
    if (!before && !after)
      return p;
  }
  return NULL;
}

/* At a '(' : the position after its matching ')' (or NULL). */
static const char *past_parens(const char *p) {
  int depth = 0;
  for (size_t k = 0; p[k] && k < 65536; k++) {
    if (p[k] == '(')
      depth++;
    else if (p[k] == ')' && --depth == 0)
      return p + k + 1;
  }
  return NULL;
}

/* The source defines function x: `x(...)` followed by `{` (qualifiers such
 * as const or __attribute__ between are allowed), or `#define x`. */
static int defines(const char *code, const char *x) {
  for (const char *p = find_word(code, code, x); p; p = find_word(code, p + 1, x)) {
    const char *q = p + strlen(x);
    while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
      q++;
    if (*q != '(')
      continue;
    const char *e = past_parens(q);
    while (e && *e && *e != '{' && *e != ';' && *e != '=' && *e != ',' && *e != ')' && e - q < 4096)
      e++;
    if (e && *e == '{')
      return 1;
  }
  for (const char *p = strstr(code, "define"); p; p = strstr(p + 1, "define")) {
    const char *h = p;
    while (h > code && (h[-1] == ' ' || h[-1] == '\t'))
      h--;
    if (h == code || h[-1] != '#')
      continue;
    const char *q = p + 6;
    while (*q == ' ' || *q == '\t')
      q++;
    if (!strncmp(q, x, strlen(x)) && !ident_char(q[strlen(x)]))
      return 1;
  }
  return 0;
}

int kv_rules_contradicts(const char *rule, const char *source, char *why, size_t cap) {
  if (why && cap)
    why[0] = 0;
  int kind;
  char x[256];
  if (!source || kv_rules_subject(rule, &kind, x, sizeof x) < 0)
    return 0;
  size_t n = strnlen(source, SOURCE_SCAN_MAX);
  char *code = blank_source(source, n, kind == 'i');
  if (!code)
    return 0;
  int hit = 0;
  if (kind == 'i') {
    for (const char *p = strstr(code, "include"); p && !hit; p = strstr(p + 1, "include")) {
      const char *h = p;
      while (h > code && (h[-1] == ' ' || h[-1] == '\t'))
        h--;
      if (h == code || h[-1] != '#')
        continue;
      const char *q = p + 7;
      while (*q == ' ' || *q == '\t')
        q++;
      if (*q != '<' && *q != '"')
        continue;
      char close = *q == '<' ? '>' : '"';
      const char *e = strchr(q + 1, close);
      const char *eol = strchr(q + 1, '\n');
      if (!e || (eol && e > eol))
        continue;
      size_t len = (size_t)(e - q - 1), xl = strlen(x);
      if ((len == xl && !strncmp(q + 1, x, xl)) ||
          (len > xl && !strncmp(e - xl, x, xl) && e[-(long)xl - 1] == '/')) {
        hit = 1;
        if (why)
          snprintf(why, cap, "includes %s (line %d)", x, line_of(code, p));
      }
    }
  } else if (kind == 'c') {
    const char *first = NULL;
    for (const char *p = find_word(code, code, x); p && !first; p = find_word(code, p + 1, x)) {
      const char *q = p + strlen(x);
      while (*q == ' ' || *q == '\t')
        q++;
      if (*q == '(')
        first = p;
    }
    if (first && !defines(code, x)) {
      hit = 1;
      if (why)
        snprintf(why, cap, "calls %s (line %d) without defining it", x, line_of(code, first));
    }
  } else {
    const char *p = find_word(code, code, x);
    if (p) {
      hit = 1;
      if (why)
        snprintf(why, cap, "uses %s (line %d)", x, line_of(code, p));
    }
  }
  free(code);
  return hit;
}

/* ---- noise -------------------------------------------------------------------- */

static const char *const environment[] = {
    "no such file", "file not found", "not found on", "permission",           "denied",
    "read-only",    "timed out",      "timeout",      "time limit",           "deadline",
    "disk",         "quota",          "network",      "connection",           "sandbox",
    "seccomp",      "landlock",       "killed",       "rate limit",           "api key",
    "server",       "driver",         "installed",    "environment variable", "directory",
    "the file ",    "working dir",    "the machine",  "the worker",           "the gate",
    "the harness",  "out of disk",    "license",
};
static const char *const paths[] = {"/tmp/",  "/home/", "/root/", "/usr/", "/var/", "/opt/",
                                    "/proc/", "/dev/",  "/etc/",  "/mnt/", "~/",    "c:\\"};
static const char *const filler[] = {
    "you", "cannot", "the", "a",    "an",   "to",     "of",   "in",    "it",     "is",
    "be",  "do",     "not", "use",  "call", "any",    "this", "that",  "or",     "and",
    "for", "with",   "on",  "as",   "by",   "its",    "must", "never", "should", "are",
    "was", "from",   "at",  "into", "your", "kernel", "code"};

int kv_rules_noisy(const char *rule, const char *const *entries, int nentries, char *why,
                   size_t cap) {
  if (why && cap)
    why[0] = 0;
  if (!rule)
    return 0;
  char low[KV_RULE_MAX];
  size_t n = 0;
  for (; rule[n] && n + 1 < sizeof low; n++)
    low[n] = (char)tolower((unsigned char)rule[n]);
  low[n] = 0;
  for (size_t i = 0; i < KV_ARRAY_LEN(environment); i++)
    if (strstr(low, environment[i])) {
      if (why)
        snprintf(why, cap, "about the environment, not the code (it mentions '%s')",
                 environment[i]);
      return 1;
    }
  for (size_t i = 0; i < KV_ARRAY_LEN(paths); i++)
    if (strstr(low, paths[i])) {
      if (why)
        snprintf(why, cap, "names a path on one machine (%s...)", paths[i]);
      return 1;
    }
  for (int i = 0; entries && i < nentries; i++) {
    const char *e = entries[i];
    if (!e || strlen(e) < 3)
      continue;
    for (const char *p = strstr(rule, e); p; p = strstr(p + 1, e))
      if ((p == rule || !ident_char(p[-1])) && !ident_char(p[strlen(e)])) {
        if (why)
          snprintf(why, cap, "names the entry of one task (%s): no lesson for other tasks", e);
        return 1;
      }
  }
  int content = 0;
  for (const char *p = low; *p;) {
    while (*p && !ident_char(*p))
      p++;
    const char *w = p;
    while (*p && ident_char(*p))
      p++;
    size_t wl = (size_t)(p - w);
    if (!wl)
      continue;
    int fill = 0;
    for (size_t i = 0; i < KV_ARRAY_LEN(filler) && !fill; i++)
      fill = strlen(filler[i]) == wl && !strncmp(filler[i], w, wl);
    content += !fill;
  }
  int kind;
  char x[256];
  if (content < 3 && kv_rules_subject(rule, &kind, x, sizeof x) < 0) {
    if (why)
      snprintf(why, cap, "too vague to act on (%d content word%s)", content,
               content == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

/* ---- flagging rules that accepted kernels contradict --------------------------- */

static int scope_ok(const char *a, const char *b) {
  return !a || !*a || !b || !*b || !strcmp(a, b);
}

/* Flags the unflagged rules of rows[0..n) that source contradicts (and marks
 * them flagged in rows). */
static int flag_contradicted(struct kv_store *st, struct kv_rule_meta *rows, int n,
                             const char *source, const char *surface, int64_t eval_id,
                             const char *task, int *nflagged, char *err, size_t errlen) {
  char sid[33] = "", key[80] = "";
  for (int i = 0; i < n; i++) {
    if (rows[i].flag || !scope_ok(rows[i].surface, surface))
      continue;
    char why[300];
    if (!kv_rules_contradicts(rows[i].text, source, why, sizeof why))
      continue;
    if (!sid[0]) {
      if (kv_store_id(st, sid, err, errlen) < 0)
        return -1;
      snprintf(key, sizeof key, "%s:%lld", sid, (long long)eval_id);
    }
    char flag[600];
    snprintf(flag, sizeof flag, "contradicted: accepted evaluation %lld (task %s) %s",
             (long long)eval_id, task ? task : "?", why);
    if (kv_store_rule_set_flag(st, rows[i].id, flag, key, err, errlen) < 0)
      return -1;
    rows[i].flag = strdup(flag);
    if (!rows[i].flag)
      return kv_error(err, errlen, "out of memory");
    if (nflagged)
      (*nflagged)++;
  }
  return 0;
}

int kv_rules_check_accepted(struct kv_store *st, const char *source, const char *surface,
                            int64_t eval_id, const char *task, int *nflagged, char *err,
                            size_t errlen) {
  if (nflagged)
    *nflagged = 0;
  struct kv_rule_meta *rows;
  int n;
  if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
    return -1;
  int rc = flag_contradicted(st, rows, n, source, surface, eval_id, task, nflagged, err, errlen);
  kv_rule_metas_free(rows, n);
  return rc;
}

/* ---- export ------------------------------------------------------------------- */

struct export_ctx {
  json_t *prov;
  int k;
  int64_t rest, sum;
  const char *sid;
  int64_t rule_id;
};

static int export_item(void *arg, const struct kv_rule_evidence *e) {
  struct export_ctx *c = arg;
  if (c->k >= EXPORT_EVIDENCE_MAX) {
    c->rest += e->weight;
    return 0;
  }
  c->sum += e->weight;
  json_t *o = json_pack("{s:s,s:i,s:s}", "key", e->key ? e->key : "", "weight", e->weight, "role",
                        c->k == 0 ? "produced" : "confirmed");
  if (!o)
    return 1;
  const char *names[] = {"task", "spec_hash", "source", "verdict", "surface", "arch", "model"};
  const char *vals[] = {e->task,    e->spec_hash, e->source_hash, e->verdict,
                        e->surface, e->arch,      e->model};
  for (size_t i = 0; i < KV_ARRAY_LEN(names); i++)
    if (vals[i])
      json_object_set_new(o, names[i], json_string(vals[i]));
  if (e->created_unix > 0)
    json_object_set_new(o, "created", json_integer(e->created_unix));
  json_array_append_new(c->prov, o);
  c->k++;
  return 0;
}

char *kv_rules_export_json(struct kv_store *st, int min_count, int *nrules, char *err,
                           size_t errlen) {
  if (nrules)
    *nrules = 0;
  char sid[33];
  if (kv_store_id(st, sid, err, errlen) < 0)
    return NULL;
  struct kv_rule_meta *rows;
  int n;
  if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
    return NULL;
  json_t *arr = json_array();
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  json_t *top = json_pack("{s:i,s:s,s:s,s:s,s:o}", "kevo_rules", 2, "store", sid, "exported", when,
                          "kevo_version", KEVO_VERSION, "rules", arr);
  int k = 0, fail = !top;
  for (int i = 0; i < n && !fail; i++) {
    if (rows[i].count < min_count)
      continue;
    struct export_ctx c = {.prov = json_array(), .sid = sid, .rule_id = rows[i].id};
    if (kv_store_rule_evidence(st, rows[i].id, export_item, &c, err, errlen) < 0) {
      json_decref(c.prov);
      fail = 2;
      break;
    }
    if (c.rest > 0) {
      char key[96];
      snprintf(key, sizeof key, "more:%s:%lld", sid, (long long)rows[i].id);
      json_array_append_new(c.prov, json_pack("{s:s,s:I,s:s}", "key", key, "weight",
                                              (json_int_t)c.rest, "role", "confirmed"));
    }
    /* A count beyond its evidence (written through the store's older calls)
     * travels as one item of this store, so that a round trip adds nothing. */
    int64_t held = c.sum + c.rest;
    if (rows[i].count > held) {
      char key[96];
      snprintf(key, sizeof key, "rest:%s:%lld", sid, (long long)rows[i].id);
      json_array_append_new(c.prov, json_pack("{s:s,s:I,s:s}", "key", key, "weight",
                                              (json_int_t)(rows[i].count - held), "role",
                                              json_array_size(c.prov) ? "confirmed" : "produced"));
    }
    json_t *aliases = json_array();
    for (const char *p = rows[i].aliases; p && *p;) {
      const char *eol = strchr(p, '\n');
      size_t len = eol ? (size_t)(eol - p) : strlen(p);
      json_array_append_new(aliases, json_stringn(p, len));
      p = eol ? eol + 1 : NULL;
    }
    json_t *r = json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o,s:o}", "text", rows[i].text, "origin",
                          rows[i].origin ? rows[i].origin : "?", "count", rows[i].count, "surface",
                          rows[i].surface ? json_string(rows[i].surface) : json_null(), "arch",
                          rows[i].arch ? json_string(rows[i].arch) : json_null(), "flag",
                          rows[i].flag ? json_string(rows[i].flag) : json_null(), "aliases",
                          aliases, "provenance", c.prov);
    if (!r) {
      fail = 1;
      break;
    }
    if (rows[i].flag_key)
      json_object_set_new(r, "flag_key", json_string(rows[i].flag_key));
    json_array_append_new(arr, r);
    k++;
  }
  kv_rule_metas_free(rows, n);
  char *text = fail ? NULL : json_dumps(top, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
  json_decref(top);
  if (!text) {
    if (fail != 2)
      kv_error(err, errlen, "out of memory");
    return NULL;
  }
  if (nrules)
    *nrules = k;
  return text;
}

/* ---- import ------------------------------------------------------------------- */

/* A string field: absent or null gives NULL; too long or not a string is an
 * error naming the file, the rule and the field. */
static int str_field(json_t *o, const char *name, size_t max, const char **out, const char *file,
                     const char *where, char *err, size_t errlen) {
  json_t *v = json_object_get(o, name);
  *out = NULL;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v) || json_string_length(v) >= max || !json_string_length(v) ||
      strlen(json_string_value(v)) != json_string_length(v))
    return kv_error(err, errlen,
                    "%s: %s.%s: want a non-empty string of at most %zu bytes (no NUL); fix or "
                    "remove it",
                    file, where, name, max - 1);
  *out = json_string_value(v);
  return 0;
}

static int int_field(json_t *o, const char *name, long long lo, long long hi, long long dflt,
                     long long *out, const char *file, const char *where, char *err,
                     size_t errlen) {
  json_t *v = json_object_get(o, name);
  *out = dflt;
  if (!v || json_is_null(v))
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return kv_error(err, errlen, "%s: %s.%s: want a whole number from %lld to %lld", file, where,
                    name, lo, hi);
  *out = (long long)json_integer_value(v);
  return 0;
}

/* The local rule this file rule joins: the most similar one of a compatible
 * surface (its text or a phrasing merged into it, >= KV_RULE_SIMILAR); 0:
 * none. Shared evidence does not count: one failure can teach several
 * rules. */
static int match_rule(struct kv_store *st, const char *text, const char *surface, int64_t *id,
                      char *err, size_t errlen) {
  *id = 0;
  struct kv_rule_meta *rows;
  int n;
  if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
    return -1;
  double best = 0;
  for (int r = 0; r < n; r++) {
    if (!scope_ok(rows[r].surface, surface))
      continue;
    double sim = kv_rules_similarity(text, rows[r].text);
    for (const char *p = rows[r].aliases; p && *p && sim < 1.0;) {
      const char *eol = strchr(p, '\n');
      size_t len = eol ? (size_t)(eol - p) : strlen(p);
      char a[KV_RULE_MAX];
      snprintf(a, sizeof a, "%.*s", (int)(len < sizeof a ? len : sizeof a - 1), p);
      double s2 = kv_rules_similarity(text, a);
      if (s2 > sim)
        sim = s2;
      p = eol ? eol + 1 : NULL;
    }
    if (sim > best) {
      best = sim;
      if (sim >= KV_RULE_SIMILAR)
        *id = rows[r].id;
    }
  }
  kv_rule_metas_free(rows, n);
  return 0;
}

static int import_rule(struct kv_store *st, json_t *r, size_t idx, const char *file,
                       struct kv_rules_import_stats *stats, char *err, size_t errlen) {
  char where[48];
  snprintf(where, sizeof where, "rules[%zu]", idx);
  if (!json_is_object(r))
    return kv_error(err, errlen, "%s: %s: want an object with a \"text\"", file, where);
  const char *text, *origin, *surface, *arch, *flag, *flag_key;
  long long count;
  if (str_field(r, "text", KV_RULE_MAX, &text, file, where, err, errlen) < 0 ||
      str_field(r, "origin", 32, &origin, file, where, err, errlen) < 0 ||
      str_field(r, "surface", 16, &surface, file, where, err, errlen) < 0 ||
      str_field(r, "arch", 32, &arch, file, where, err, errlen) < 0 ||
      str_field(r, "flag", FLAG_MAX, &flag, file, where, err, errlen) < 0 ||
      str_field(r, "flag_key", FIELD_MAX, &flag_key, file, where, err, errlen) < 0 ||
      int_field(r, "count", 1, 1000000, 1, &count, file, where, err, errlen) < 0)
    return -1;
  if (!text)
    return kv_error(err, errlen, "%s: %s.text: missing; every rule needs its text", file, where);
  if (surface && !kv_surface_find(surface))
    return kv_error(err, errlen, "%s: %s.surface: '%s' is not a surface; use one of %s or null",
                    file, where, surface, kv_surface_names());
  json_t *prov = json_object_get(r, "provenance"), *aliases = json_object_get(r, "aliases");
  if (prov && !json_is_null(prov) &&
      (!json_is_array(prov) || json_array_size(prov) > IMPORT_EVIDENCE_MAX))
    return kv_error(err, errlen, "%s: %s.provenance: want an array of at most %d items", file,
                    where, IMPORT_EVIDENCE_MAX);
  if (aliases && !json_is_null(aliases) &&
      (!json_is_array(aliases) || json_array_size(aliases) > IMPORT_ALIASES_MAX))
    return kv_error(err, errlen, "%s: %s.aliases: want an array of at most %d strings", file, where,
                    IMPORT_ALIASES_MAX);
  if (!json_is_array(prov))
    prov = NULL;
  /* Validate every item before touching the store. */
  long long sum = 0;
  size_t i;
  json_t *it;
  json_array_foreach(prov, i, it) {
    char w2[80];
    snprintf(w2, sizeof w2, "%s.provenance[%zu]", where, i);
    const char *key, *dummy;
    long long weight, created;
    if (!json_is_object(it))
      return kv_error(err, errlen, "%s: %s: want an object with a \"key\"", file, w2);
    if (str_field(it, "key", 200, &key, file, w2, err, errlen) < 0 ||
        int_field(it, "weight", 1, 1000000, 1, &weight, file, w2, err, errlen) < 0 ||
        int_field(it, "created", 0, (long long)1 << 40, 0, &created, file, w2, err, errlen) < 0)
      return -1;
    static const char *const sf[] = {"task",    "spec_hash", "source", "verdict",
                                     "surface", "arch",      "model"};
    for (size_t f = 0; f < KV_ARRAY_LEN(sf); f++)
      if (str_field(it, sf[f], FIELD_MAX, &dummy, file, w2, err, errlen) < 0)
        return -1;
    if (!key)
      return kv_error(err, errlen, "%s: %s.key: missing; each item of provenance needs its key",
                      file, w2);
    sum += weight;
  }
  json_array_foreach(aliases, i, it) {
    if (!json_is_string(it) || json_string_length(it) >= KV_RULE_MAX || !json_string_length(it))
      return kv_error(err, errlen,
                      "%s: %s.aliases[%zu]: want a non-empty string of at most %d bytes", file,
                      where, i, KV_RULE_MAX - 1);
  }

  int64_t id = 0;
  if (match_rule(st, text, surface, &id, err, errlen) < 0)
    return -1;
  int created = id == 0;
  struct kv_rule_new nw = {text, origin ? origin : "import", surface, arch};
  stats->rules++;
  /* Occurrences without evidence (a version 1 file, or a count beyond its
   * items) are one item keyed by the rule itself, so that a second import of
   * the file finds it. */
  char hkey[128];
  char hash[65];
  char basis[KV_RULE_MAX + 32];
  snprintf(basis, sizeof basis, "%s\n%s", surface ? surface : "", text);
  kv_sha256_hex(basis, strlen(basis), hash);
  int added = 0;
  if (count > sum) {
    snprintf(hkey, sizeof hkey, "%s:%s", prov && json_array_size(prov) ? "import-rest" : "import",
             hash);
    struct kv_rule_evidence ev = {.key = hkey, .weight = (int)(count - sum)};
    if (kv_store_rule_note(st, id, &nw, &ev, 0, &id, &added, err, errlen) < 0)
      return -1;
    stats->count_added += added;
  }
  json_array_foreach(prov, i, it) {
    long long weight = 1, created_at = 0;
    json_t *w = json_object_get(it, "weight");
    if (json_is_integer(w))
      weight = json_integer_value(w);
    w = json_object_get(it, "created");
    if (json_is_integer(w))
      created_at = json_integer_value(w);
    struct kv_rule_evidence ev = {
        .key = json_string_value(json_object_get(it, "key")),
        .weight = (int)weight,
        .task = json_string_value(json_object_get(it, "task")),
        .spec_hash = json_string_value(json_object_get(it, "spec_hash")),
        .source_hash = json_string_value(json_object_get(it, "source")),
        .verdict = json_string_value(json_object_get(it, "verdict")),
        .surface = json_string_value(json_object_get(it, "surface")),
        .arch = json_string_value(json_object_get(it, "arch")),
        .model = json_string_value(json_object_get(it, "model")),
        .created_unix = created_at,
    };
    if (kv_store_rule_note(st, id, &nw, &ev, 0, &id, &added, err, errlen) < 0)
      return -1;
    stats->count_added += added;
  }
  if (created)
    stats->created++;
  else
    stats->merged++;
  /* Its phrasings: the file's text (when it joined another rule) and aliases. */
  if (kv_store_rule_alias(st, id, text, "import", 0, err, errlen) < 0)
    return -1;
  json_array_foreach(aliases, i, it) {
    if (kv_store_rule_alias(st, id, json_string_value(it), "import", 0, err, errlen) < 0)
      return -1;
  }
  if (flag) {
    struct kv_rule_meta *rows;
    int n;
    if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
      return -1;
    int already = 0;
    for (int k = 0; k < n; k++)
      if (rows[k].id == id)
        already = rows[k].flag != NULL;
    kv_rule_metas_free(rows, n);
    if (!already) {
      char f[FLAG_KEPT]; /* kept short enough to export and import again */
      snprintf(f, sizeof f, "%s%s", strncmp(flag, "imported ", 9) ? "imported flag: " : "", flag);
      if (kv_store_rule_set_flag(st, id, f, flag_key, err, errlen) < 0)
        return -1;
      stats->flagged++;
    }
  }
  return 0;
}

int kv_rules_import_json(struct kv_store *st, const char *text, size_t len, const char *file,
                         struct kv_rules_import_stats *stats, char *err, size_t errlen) {
  memset(stats, 0, sizeof *stats);
  json_error_t je;
  json_t *top = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!top)
    return kv_error(err, errlen,
                    "%s: line %d, column %d: not JSON (%s); a rules file is what "
                    "'kevo rules export' writes",
                    file, je.line, je.column, je.text);
  json_t *ver = json_object_get(top, "kevo_rules"), *arr = json_object_get(top, "rules");
  int rc = 0;
  if (!json_is_object(top) || !json_is_integer(ver) || !json_is_array(arr))
    rc = kv_error(err, errlen,
                  "%s: not a kevo rules file (want {\"kevo_rules\": 2, \"rules\": [...]}, as "
                  "'kevo rules export' writes)",
                  file);
  else if (json_integer_value(ver) < 1 || json_integer_value(ver) > 2)
    rc = kv_error(err, errlen,
                  "%s: kevo_rules: version %lld; this kevo reads versions 1 and 2 (upgrade kevo)",
                  file, (long long)json_integer_value(ver));
  else if (json_array_size(arr) > IMPORT_RULES_MAX)
    rc = kv_error(err, errlen,
                  "%s: rules: %zu rules, over the %d this kevo imports at once; split "
                  "the file",
                  file, json_array_size(arr), IMPORT_RULES_MAX);
  size_t i;
  json_t *r;
  if (rc == 0)
    json_array_foreach(arr, i, r) {
      if (import_rule(st, r, i, file, stats, err, errlen) < 0) {
        rc = -1;
        break;
      }
    }
  json_decref(top);
  return rc;
}

/* ---- audit -------------------------------------------------------------------- */

struct audit_ctx {
  struct kv_store *st;
  struct kv_rule_meta *rows;
  int n, flagged, failed;
  char *err;
  size_t errlen;
};

static int audit_source(void *arg, int64_t eval_id, const char *task, const char *surface,
                        const char *source) {
  struct audit_ctx *c = arg;
  if (flag_contradicted(c->st, c->rows, c->n, source, surface, eval_id, task, &c->flagged, c->err,
                        c->errlen) < 0) {
    c->failed = 1;
    return 1;
  }
  return 0;
}

struct entries {
  char **v;
  int n, cap;
};

static int add_entry(void *arg, const char *e) {
  struct entries *l = arg;
  if (l->n >= 10000)
    return 1;
  if (l->n == l->cap) {
    int nc = l->cap ? 2 * l->cap : 64;
    char **g = realloc(l->v, (size_t)nc * sizeof *g);
    if (!g)
      return 1;
    l->v = g;
    l->cap = nc;
  }
  if ((l->v[l->n] = strdup(e)))
    l->n++;
  return 0;
}

int kv_rules_audit(struct kv_store *st, int apply, struct kv_rules_audit_item **items, int *n,
                   int *contradicted, char *err, size_t errlen) {
  *items = NULL;
  *n = 0;
  if (contradicted)
    *contradicted = 0;
  struct kv_rule_meta *rows;
  int nr;
  if (kv_store_rules_meta(st, &rows, &nr, err, errlen) < 0)
    return -1;
  struct audit_ctx c = {st, rows, nr, 0, 0, err, errlen};
  if (kv_store_accepted_sources(st, NULL, 0, audit_source, &c, err, errlen) < 0 || c.failed) {
    kv_rule_metas_free(rows, nr);
    return -1;
  }
  if (contradicted)
    *contradicted = c.flagged;
  struct entries en = {0};
  int rc = kv_store_task_entries(st, add_entry, &en, err, errlen) < 0 ? -1 : 0;
  struct kv_rules_audit_item *out = rc == 0 && nr ? calloc((size_t)nr, sizeof *out) : NULL;
  if (rc == 0 && nr && !out)
    rc = kv_error(err, errlen, "out of memory");
  int k = 0;
  for (int i = 0; rc == 0 && i < nr; i++) {
    char why[512];
    int noisy = !rows[i].flag &&
                kv_rules_noisy(rows[i].text, (const char *const *)en.v, en.n, why, sizeof why);
    if (!rows[i].flag && !noisy)
      continue;
    struct kv_rules_audit_item *a = &out[k++];
    a->id = rows[i].id;
    a->count = rows[i].count;
    snprintf(a->text, sizeof a->text, "%s", rows[i].text);
    if (rows[i].flag) {
      a->flagged = 1;
      snprintf(a->why, sizeof a->why, "%s", rows[i].flag);
    } else if (apply) {
      char f[600];
      snprintf(f, sizeof f, "noisy: %s", why);
      if (kv_store_rule_set_flag(st, rows[i].id, f, NULL, err, errlen) < 0)
        rc = -1;
      a->flagged = 1;
      snprintf(a->why, sizeof a->why, "%s", f);
    } else {
      snprintf(a->why, sizeof a->why, "noisy: %s", why);
    }
  }
  for (int i = 0; i < en.n; i++)
    free(en.v[i]);
  free(en.v);
  kv_rule_metas_free(rows, nr);
  if (rc < 0) {
    free(out);
    return -1;
  }
  *items = out;
  *n = k;
  return 0;
}

/* ---- deduplication --------------------------------------------------------------- */

struct pair {
  int64_t a, b; /* a: the one kept (more frequent) */
  double sim;
};

static int by_sim(const void *x, const void *y) {
  const struct pair *p = x, *q = y;
  if (p->sim != q->sim)
    return p->sim < q->sim ? 1 : -1;
  return p->a < q->a ? -1 : p->a > q->a ? 1 : (p->b > q->b) - (p->b < q->b);
}

static int same_subject(const char *a, const char *b) {
  int ka, kb;
  char xa[256], xb[256];
  return kv_rules_subject(a, &ka, xa, sizeof xa) == 0 &&
         kv_rules_subject(b, &kb, xb, sizeof xb) == 0 && ka == kb && !strcmp(xa, xb);
}

/* "SAME" / "DIFFERENT" (or yes / no) as the reply's first word: 1, 0, -1. */
static int judge_verdict(const char *t) {
  if (!t)
    return -1;
  while (*t && !isalpha((unsigned char)*t))
    t++;
  char w[16];
  size_t k = 0;
  while (isalpha((unsigned char)t[k]) && k + 1 < sizeof w) {
    w[k] = (char)toupper((unsigned char)t[k]);
    k++;
  }
  w[k] = 0;
  if (!strcmp(w, "SAME") || !strcmp(w, "YES"))
    return 1;
  if (!strcmp(w, "DIFFERENT") || !strcmp(w, "DIFFER") || !strcmp(w, "NO"))
    return 0;
  return -1;
}

static const char judge_prompt[] =
    "Two validity rules were learnt from failed attempts at writing %s kernels. Do they say the "
    "same thing, so that a kernel obeying one obeys the other?\n\nRule A: %s\nRule B: %s\n\n"
    "Answer SAME or DIFFERENT on the first line, nothing else.\n";

static const struct kv_rule_meta *find_row(const struct kv_rule_meta *rows, int n, int64_t id) {
  for (int i = 0; i < n; i++)
    if (rows[i].id == id)
      return &rows[i];
  return NULL;
}

int kv_rules_dedup(struct kv_store *st, struct kv_llm *llm, int judge_max,
                   struct kv_rules_dedup_stats *stats, char *err, size_t errlen) {
  memset(stats, 0, sizeof *stats);
  /* Word-set merges until none is left (each removes a rule: bounded). */
  for (int round = 0; round < 100000; round++) {
    struct kv_rule_meta *rows;
    int n;
    if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
      return -1;
    int64_t into = 0, from = 0;
    for (int i = 0; i < n && !from; i++)
      for (int j = i + 1; j < n && !from; j++) {
        if (rows[i].flag || rows[j].flag || !scope_ok(rows[i].surface, rows[j].surface))
          continue;
        if (kv_rules_similarity(rows[i].text, rows[j].text) >= KV_RULE_SIMILAR) {
          int keep_i = rows[i].count >= rows[j].count;
          into = keep_i ? rows[i].id : rows[j].id;
          from = keep_i ? rows[j].id : rows[i].id;
        }
      }
    kv_rule_metas_free(rows, n);
    if (!from)
      break;
    if (kv_store_rule_merge(st, into, from, "words", 0, err, errlen) < 0)
      return -1;
    stats->word_merges++;
  }
  /* The judge: pairs close enough to be worth a question, closest first. */
  struct kv_rule_meta *rows;
  int n;
  if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
    return -1;
  struct pair *pairs = NULL;
  int np = 0, cap = 0, rc = 0;
  for (int i = 0; i < n && rc == 0; i++)
    for (int j = i + 1; j < n && rc == 0 && np < JUDGE_PAIRS_MAX; j++) {
      if (rows[i].flag || rows[j].flag || !scope_ok(rows[i].surface, rows[j].surface))
        continue;
      double sim = kv_rules_similarity(rows[i].text, rows[j].text);
      if (sim < KV_RULE_JUDGE_MIN && !same_subject(rows[i].text, rows[j].text))
        continue;
      if (np == cap) {
        int nc = cap ? cap * 2 : 64;
        struct pair *g = realloc(pairs, (size_t)nc * sizeof *g);
        if (!g) {
          rc = kv_error(err, errlen, "out of memory");
          break;
        }
        pairs = g;
        cap = nc;
      }
      int keep_i = rows[i].count >= rows[j].count;
      pairs[np++] =
          (struct pair){keep_i ? rows[i].id : rows[j].id, keep_i ? rows[j].id : rows[i].id, sim};
    }
  if (np > 1)
    qsort(pairs, (size_t)np, sizeof *pairs, by_sim);
  int64_t *gone = np ? calloc((size_t)np * 2, sizeof *gone) : NULL;
  int ngone = 0, stop = 0;
  for (int p = 0; p < np && rc == 0; p++) {
    int skip = 0;
    for (int g = 0; g < ngone && !skip; g++)
      skip = gone[g] == pairs[p].a || gone[g] == pairs[p].b;
    if (skip)
      continue;
    const struct kv_rule_meta *A = find_row(rows, n, pairs[p].a),
                              *B = find_row(rows, n, pairs[p].b);
    if (!A || !B)
      continue;
    int same = -1;
    int64_t call_id = 0;
    int known = kv_store_rule_judgement(st, A->text, B->text, &same, err, errlen);
    if (known < 0) {
      rc = -1;
      break;
    }
    if (!known) {
      if (!llm || stop || stats->judge_calls >= judge_max) {
        stats->pairs_left++;
        continue;
      }
      const char *surface = A->surface ? A->surface : B->surface ? B->surface : "C or CUDA";
      size_t plen = sizeof judge_prompt + strlen(A->text) + strlen(B->text) + 16;
      char *prompt = malloc(plen);
      if (!prompt) {
        rc = kv_error(err, errlen, "out of memory");
        break;
      }
      snprintf(prompt, plen, judge_prompt, surface, A->text, B->text);
      struct kv_llm_message m = {"user", prompt};
      struct kv_llm_request q;
      kv_llm_request_init(&q);
      q.role = "rule_judge";
      q.messages = &m;
      q.n_messages = 1;
      q.max_tokens = 64;
      struct kv_llm_result res;
      int code = kv_llm_ask(llm, &q, &res);
      free(prompt);
      stats->judge_calls++;
      if (code == KV_LLM_EBUDGET) {
        stop = 1;
        stats->judge_calls--;
        stats->pairs_left++;
        kv_llm_result_release(&res);
        continue;
      }
      if (code != KV_LLM_OK) {
        stats->judge_failed++;
        kv_llm_result_release(&res);
        continue;
      }
      same = judge_verdict(res.text);
      call_id = res.call_id;
      kv_llm_result_release(&res);
      if (kv_store_rule_judgement_put(st, A->text, B->text, same, call_id, err, errlen) < 0) {
        rc = -1;
        break;
      }
    }
    if (same == 1) {
      stats->judge_same++;
      if (kv_store_rule_merge(st, A->id, B->id, "judge", call_id, err, errlen) < 0) {
        rc = -1;
        break;
      }
      gone[ngone++] = B->id;
    } else if (same == 0) {
      stats->judge_different++;
    } else {
      stats->judge_unclear++;
    }
  }
  free(gone);
  free(pairs);
  kv_rule_metas_free(rows, n);
  return rc;
}
