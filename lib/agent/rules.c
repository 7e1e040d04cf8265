/* The memory of validity rules (see rules.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "kevo/llm.h"
#include "kevo/prompt.h"
#include "kevo/util.h"
#include "kevo/rules.h"
#include "kevo/surface.h"

#define MAX_WORDS 96
#define ACTIVE_MAX 32

/* Copies the text between the first pair of quotes after `at` (', ", or the
 * typographic ones gcc prints) into out. */
static int quoted(const char *at, char *out, size_t cap) {
  static const char *const opens[] = {"\xe2\x80\x98", "'", "\"", "`"};
  static const char *const closes[] = {"\xe2\x80\x99", "'", "\"", "'"};
  const char *best = NULL;
  int bi = -1;
  for (int i = 0; i < 4; i++) {
    const char *p = strstr(at, opens[i]);
    const char *eol = strchr(at, '\n');
    if (p && (!eol || p < eol) && (!best || p < best)) {
      best = p;
      bi = i;
    }
  }
  if (!best)
    return -1;
  best += strlen(opens[bi]);
  const char *e = strstr(best, closes[bi]);
  const char *eol = strchr(best, '\n');
  if (!e || (eol && e > eol) || e == best || (size_t)(e - best) >= cap)
    return -1;
  memcpy(out, best, (size_t)(e - best));
  out[e - best] = 0;
  return 0;
}

static int push(char out[][KV_RULE_MAX], int n, int max, const char *text) {
  if (n >= max)
    return n;
  for (int i = 0; i < n; i++)
    if (!strcmp(out[i], text))
      return n;
  snprintf(out[n], KV_RULE_MAX, "%s", text);
  return n + 1;
}

int kv_rules_from_log(const char *log, const char *entry, char out[][KV_RULE_MAX], int max) {
  int n = 0;
  if (!log)
    return 0;
  for (const char *line = log; line && *line && n < max;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    char l[1024];
    snprintf(l, sizeof l, "%.*s", (int)(len < sizeof l ? len : sizeof l - 1), line);
    char id[128], rule[KV_RULE_MAX];
    if ((strstr(l, "undeclared") || strstr(l, "was not declared") || strstr(l, "is undefined")) &&
        quoted(strstr(l, "error") ? strstr(l, "error") : l, id, sizeof id) == 0) {
      snprintf(rule, sizeof rule,
               "You cannot use %s without declaring it: it is not defined by the prototype or "
               "any header included.",
               id);
      n = push(out, n, max, rule);
    } else if (strstr(l, "implicit declaration of function") && quoted(l, id, sizeof id) == 0) {
      snprintf(rule, sizeof rule,
               "You cannot call %s without including the header that declares it.", id);
      n = push(out, n, max, rule);
    } else if ((strstr(l, "fatal error:") && strstr(l, "No such file")) ||
               strstr(l, "cannot open source file")) {
      const char *p = strstr(l, "fatal error:");
      char hdr[256] = "";
      if (p) {
        p += strlen("fatal error:");
        while (*p == ' ')
          p++;
        const char *c = strchr(p, ':');
        snprintf(hdr, sizeof hdr, "%.*s", (int)(c ? c - p : (long)strlen(p)), p);
      } else {
        quoted(l, hdr, sizeof hdr);
      }
      if (*hdr) {
        snprintf(rule, sizeof rule, "You cannot include %s: that header is not available.", hdr);
        n = push(out, n, max, rule);
      }
    } else if (strstr(l, "conflicting types for") || strstr(l, "declaration is incompatible") ||
               (strstr(l, "previous declaration") && entry && strstr(l, entry))) {
      if (quoted(l, id, sizeof id) == 0 && entry && !strcmp(id, entry)) {
        snprintf(rule, sizeof rule,
                 "You cannot change the signature of %s: define it exactly as the given "
                 "prototype.",
                 entry);
        n = push(out, n, max, rule);
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return n;
}

int kv_rules_from_reply(const char *text, char out[][KV_RULE_MAX], int max) {
  int n = 0;
  if (!text)
    return 0;
  for (const char *line = text; line && *line && n < max;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    const char *p = line;
    while (p < line + len && (*p == ' ' || *p == '-' || *p == '*' || *p == '\t'))
      p++;
    size_t rest = len - (size_t)(p - line);
    while (rest > 0 && (p[rest - 1] == ' ' || p[rest - 1] == '\r'))
      rest--;
    if (rest > 11 && !strncasecmp(p, "You cannot ", 11) && rest < KV_RULE_MAX) {
      char r[KV_RULE_MAX];
      snprintf(r, sizeof r, "%.*s", (int)rest, p);
      n = push(out, n, max, r);
    }
    line = eol ? eol + 1 : NULL;
  }
  return n;
}

static int words(const char *s, char w[][32], int max) {
  int n = 0;
  while (*s && n < max) {
    while (*s && !(isalnum((unsigned char)*s) || *s == '_'))
      s++;
    size_t k = 0;
    char cur[32];
    while (*s && (isalnum((unsigned char)*s) || *s == '_')) {
      if (k < sizeof cur - 1)
        cur[k++] = (char)tolower((unsigned char)*s);
      s++;
    }
    cur[k] = 0;
    if (!k || !strcmp(cur, "you") || !strcmp(cur, "cannot"))
      continue;
    int dup = 0;
    for (int i = 0; i < n && !dup; i++)
      dup = !strcmp(w[i], cur);
    if (!dup)
      memcpy(w[n++], cur, k + 1);
  }
  return n;
}

double kv_rules_similarity(const char *a, const char *b) {
  char wa[MAX_WORDS][32], wb[MAX_WORDS][32];
  int na = words(a, wa, MAX_WORDS), nb = words(b, wb, MAX_WORDS);
  if (na == 0 && nb == 0)
    return 1.0;
  int both = 0;
  for (int i = 0; i < na; i++)
    for (int j = 0; j < nb; j++)
      if (!strcmp(wa[i], wb[j])) {
        both++;
        break;
      }
  return (double)both / (double)(na + nb - both);
}

/* A rule of surface `b` may merge into (or be injected for) surface `a`
 * when either is unscoped or both are the same. */
static int scope_ok(const char *a, const char *b) {
  return !a || !*a || !b || !*b || !strcmp(a, b);
}

/* Similarity of text to a rule: the best of its text and its merged phrasings. */
static double rule_similarity(const char *text, const struct kv_rule_meta *r) {
  double best = kv_rules_similarity(text, r->text);
  for (const char *p = r->aliases; p && *p && best < 1.0;) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) : strlen(p);
    char alias[KV_RULE_MAX];
    snprintf(alias, sizeof alias, "%.*s", (int)(len < sizeof alias ? len : sizeof alias - 1), p);
    double sim = kv_rules_similarity(text, alias);
    if (sim > best)
      best = sim;
    p = eol ? eol + 1 : NULL;
  }
  return best;
}

void kv_rules_arch_of(const char *surface, const char *device, char *out, size_t cap) {
  if (!cap)
    return;
  out[0] = 0;
  if (kv_surface_gpu(kv_surface_find(surface))) {
    for (const char *p = device ? strstr(device, "sm_") : NULL; p; p = strstr(p + 3, "sm_"))
      if (isdigit((unsigned char)p[3])) {
        size_t k = 3;
        while (isalnum((unsigned char)p[k]) && k < 15)
          k++;
        snprintf(out, cap, "%.*s", (int)k, p);
        return;
      }
    return;
  }
  struct utsname u;
  if (uname(&u) == 0)
    snprintf(out, cap, "%s", u.machine);
}

int kv_rules_add_scoped(struct kv_store *st, const char *text, const char *origin,
                        const char *surface, const char *arch, int n, int64_t eval_id, int64_t *id,
                        char *err, size_t errlen) {
  struct kv_rule_meta *rows = NULL;
  int nr = 0;
  if (kv_store_rules_meta(st, &rows, &nr, err, errlen) < 0)
    return -1;
  int best = -1;
  double best_sim = 0;
  for (int i = 0; i < nr; i++) {
    if (!scope_ok(rows[i].surface, surface))
      continue;
    double sim = rule_similarity(text, &rows[i]);
    if (sim > best_sim) {
      best_sim = sim;
      best = i;
    }
  }
  struct kv_rule_new nw = {text, origin, surface, arch};
  struct kv_rule_evidence ev = {.eval_id = eval_id, .weight = n > 0 ? n : 1, .arch = arch};
  int64_t into = best >= 0 && best_sim >= KV_RULE_SIMILAR ? rows[best].id : 0;
  kv_rule_metas_free(rows, nr);
  return kv_store_rule_note(st, into, &nw, eval_id > 0 ? &ev : NULL, eval_id > 0 ? 0 : ev.weight,
                            id, NULL, err, errlen);
}

int kv_rules_add(struct kv_store *st, const char *text, const char *origin, int n, int64_t eval_id,
                 int64_t *id, char *err, size_t errlen) {
  return kv_rules_add_scoped(st, text, origin, NULL, NULL, n, eval_id, id, err, errlen);
}

int kv_rules_learn(struct kv_store *st, const struct kv_task *t, const struct kv_prompts *p,
                   const struct kv_gate_result *r, const char *code, const char *surface,
                   int64_t eval_id, struct kv_llm *llm, int64_t run_id, int64_t node_id, char *err,
                   size_t errlen) {
  char found[KV_RULES_PER_FAIL][KV_RULE_MAX];
  char arch[32];
  kv_rules_arch_of(surface, r->device, arch, sizeof arch);
  int learnt = 0;
  if (r->verdict == KV_V_COMPILE_ERROR || r->verdict == KV_V_LOAD_ERROR) {
    int n = kv_rules_from_log(r->compile_log, t->entry, found, KV_RULES_PER_FAIL);
    /* A symbol the loader could not resolve: "undefined symbol: NAME". */
    const char *u = strstr(r->detail, "undefined symbol: ");
    if (u && n < KV_RULES_PER_FAIL) {
      u += strlen("undefined symbol: ");
      size_t k = strcspn(u, " \n(");
      if (k > 0 && k < 128) {
        char rule[KV_RULE_MAX];
        /* The entry point itself missing is a definition the kernel lacks
         * (a misnamed or C++-mangled function), not a forbidden call. */
        if (t->entry && strlen(t->entry) == k && !strncmp(u, t->entry, k))
          snprintf(rule, sizeof rule,
                   "You must define %s yourself, with exactly the given prototype (extern \"C\" "
                   "in CUDA C++): a kernel that does not define it cannot be loaded.",
                   t->entry);
        else
          snprintf(rule, sizeof rule,
                   "You cannot call %.*s: no library the kernel is linked with defines it; write "
                   "it yourself.",
                   (int)k, u);
        n = push(found, n, KV_RULES_PER_FAIL, rule);
      }
    }
    for (int i = 0; i < n; i++) {
      if (kv_rules_add_scoped(st, found[i], "compiler", surface, arch, 1, eval_id, NULL, err,
                              errlen) < 0)
        return -1;
      learnt++;
    }
  }
  if (!llm || !p)
    return learnt;
  struct kv_prompt_ctx c = {0};
  c.task = t;
  c.surface = surface ? surface : "cpu";
  c.parent_code = code;
  c.parent = r;
  unsigned mask = (1u << KV_PB_PARENT) | (1u << KV_PB_COMPILE) | (1u << KV_PB_CORRECTNESS);
  char *text = kv_prompt_build(p, KV_PK_RULE, mask, &c, err, errlen);
  if (!text)
    return -1;
  struct kv_llm_message m = {"user", text};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = "rule_extractor";
  q.system = kv_prompts_system(p);
  q.messages = &m;
  q.n_messages = 1;
  q.run_id = run_id;
  q.node_id = node_id;
  q.max_tokens = 400;
  struct kv_llm_result res;
  int rc = kv_llm_ask(llm, &q, &res);
  free(text);
  if (rc == KV_LLM_OK) {
    int n = kv_rules_from_reply(res.text, found, KV_RULES_PER_FAIL);
    for (int i = 0; i < n && rc == 0; i++) {
      if (kv_rules_add_scoped(st, found[i], "llm", surface, arch, 1, eval_id, NULL, err, errlen) <
          0)
        rc = -1;
      else
        learnt++;
    }
  } else {
    kv_error(err, errlen, "rule_extractor: %s", res.error);
  }
  kv_llm_result_release(&res);
  return rc < 0 ? -1 : learnt;
}

static int by_count(const void *a, const void *b) {
  const struct kv_rule_meta *x = a, *y = b;
  if (x->count != y->count)
    return y->count - x->count;
  return x->id < y->id ? -1 : x->id > y->id;
}

int kv_rules_active_for(struct kv_store *st, int threshold, const char *surface, const char *arch,
                        char ***texts, int *n, char *err, size_t errlen) {
  *texts = NULL;
  *n = 0;
  struct kv_rule_meta *rows = NULL;
  int nr = 0;
  if (kv_store_rules_meta(st, &rows, &nr, err, errlen) < 0)
    return -1;
  if (nr > 1)
    qsort(rows, (size_t)nr, sizeof *rows, by_count);
  char **out = calloc(ACTIVE_MAX, sizeof *out);
  int k = 0;
  for (int i = 0; out && i < nr && k < ACTIVE_MAX; i++)
    if (rows[i].count >= threshold && rows[i].text && !rows[i].flag &&
        scope_ok(rows[i].surface, surface) && scope_ok(rows[i].arch, arch))
      out[k++] = strdup(rows[i].text);
  kv_rule_metas_free(rows, nr);
  if (!out)
    return kv_error(err, errlen, "out of memory");
  *texts = out;
  *n = k;
  return 0;
}

int kv_rules_active(struct kv_store *st, int threshold, char ***texts, int *n, char *err,
                    size_t errlen) {
  return kv_rules_active_for(st, threshold, NULL, NULL, texts, n, err, errlen);
}

void kv_rules_free(char **texts, int n) {
  for (int i = 0; texts && i < n; i++)
    free(texts[i]);
  free(texts);
}
