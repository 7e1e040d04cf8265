/* Retrieval: which skills fit a task (and a candidate), in what order, and
 * why each other skill does not. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"
#include "kevo/util.h"

static const char *str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static const char *str_of(const json_t *v) {
  const char *s = json_string_value(v);
  return s ? s : "";
}

/* text with every run of blanks made one space, trimmed (capped). */
static void squash(const char *in, char *out, size_t cap) {
  size_t o = 0;
  int sp = 0;
  for (const char *p = in; *p && o + 1 < cap; p++) {
    if (isspace((unsigned char)*p)) {
      sp = o > 0;
      continue;
    }
    if (sp && o + 2 < cap)
      out[o++] = ' ';
    sp = 0;
    out[o++] = *p;
  }
  out[o] = 0;
}

/* 1 when the candidate holds the mechanism: its anchor's code (blanks
 * squashed), its KV_MECH_ macro, or a kevo:mechanism line naming it. */
static int holds(const char *cand_sq, const char *cand, const char *name, const char *anchor) {
  if (!cand)
    return 0;
  char pat[512];
  squash(anchor, pat, sizeof pat);
  if (pat[0] && strlen(pat) >= 4 && strstr(cand_sq, pat))
    return 1;
  char m[128];
  snprintf(m, sizeof m, "KV_MECH_%s", name);
  const char *p = strstr(cand, m);
  if (p && !(isalnum((unsigned char)p[strlen(m)]) || p[strlen(m)] == '_'))
    return 1;
  snprintf(m, sizeof m, "kevo:mechanism %s", name);
  p = strstr(cand, m);
  return p && !(isalnum((unsigned char)p[strlen(m)]) || p[strlen(m)] == '_');
}

static int in_list(const json_t *a, const char *s);

/* The candidate holds mechanism `name`: by its macro or header line, or by
 * the anchor of any card that provides it. */
static int present(const char *cand_sq, const char *cand, const json_t *cards, const char *name) {
  if (!cand)
    return 0;
  if (holds(cand_sq, cand, name, ""))
    return 1;
  for (size_t i = 0; i < json_array_size(cards); i++) {
    const json_t *c = json_array_get(cards, i);
    if (in_list(json_object_get(c, "provides"), name) &&
        holds(cand_sq, cand, name, str(json_object_get(c, "anchor"), "pattern")))
      return 1;
  }
  return 0;
}

static int in_list(const json_t *a, const char *s) {
  for (size_t i = 0; i < json_array_size(a); i++)
    if (json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), s))
      return 1;
  return 0;
}

/* log distance of the task's bench sizes to the card's (0: same). */
static double shape_distance(const struct kv_task *t, const json_t *sizes) {
  if (!json_is_object(sizes) || t->nbench < 1)
    return 1.0;
  double d = 0;
  int n = 0;
  for (int i = 0; i < t->nparams; i++) {
    if (t->params[i].role != KV_ROLE_SIZE)
      continue;
    const json_t *v = json_object_get(sizes, t->params[i].name);
    double a = (double)t->bench[0].values[i];
    if (!json_is_integer(v) || a <= 0 || json_integer_value(v) <= 0)
      return 1.0 + d;
    d += fabs(log2(a / (double)json_integer_value(v)));
    n++;
  }
  return n ? d / n : 1.0;
}

static int precondition_fail(const struct kv_task *t, const json_t *c,
                             const struct kv_match_opts *o, char *why, size_t cap) {
  const json_t *sc = json_object_get(c, "scope"), *pre = json_object_get(c, "preconditions");
  if (strcmp(str(sc, "surface"), o->surface ? o->surface : "cpu"))
    return snprintf(why, cap, "surface: the skill is for %s, the task runs on %s",
                    str(sc, "surface"), o->surface ? o->surface : "cpu"),
           1;
  if (strcmp(str(sc, "arch"), o->arch ? o->arch : ""))
    return snprintf(why, cap,
                    "architecture: measured on %s, this is %s (another architecture is not "
                    "assumed to behave the same)",
                    str(sc, "arch"), o->arch ? o->arch : "unknown"),
           1;
  const char *status = str(c, "status");
  if (strcmp(status, "admitted"))
    return snprintf(why, cap, "status %s%s%s", status,
                    json_is_string(json_object_get(c, "retired")) ? ": " : "", str(c, "retired")),
           1;
  const json_t *flag = json_object_get(json_object_get(c, "record"), "flag");
  if (json_is_string(flag))
    return snprintf(why, cap, "flagged: %s", json_string_value(flag)), 1;
  const json_t *dt = json_object_get(pre, "dtypes");
  if (json_array_size(dt))
    for (int i = 0; i < t->nparams; i++) {
      if (t->params[i].role == KV_ROLE_SIZE || t->params[i].role == KV_ROLE_SCALAR)
        continue;
      const char *d = kv_dtype_name(t->params[i].dtype);
      int ok = 0;
      for (size_t k = 0; k < json_array_size(dt); k++)
        ok |= !strcmp(json_string_value(json_array_get(dt, k)), d);
      if (!ok)
        return snprintf(why, cap, "dtype: %s is %s; the skill holds for %s only", t->params[i].name,
                        d, json_string_value(json_array_get(dt, 0))),
               1;
    }
  const json_t *lay = json_object_get(pre, "layout");
  for (size_t k = 0; k < json_array_size(lay); k++) {
    const char *l = json_string_value(json_array_get(lay, k));
    if (l && strcmp(l, "row-major") && strcmp(l, "contiguous"))
      return snprintf(why, cap,
                      "layout: the skill needs %s; kevo tasks are row-major and "
                      "contiguous",
                      l),
             1;
  }
  const json_t *div = json_object_get(pre, "divides");
  for (size_t k = 0; k < json_array_size(div); k++) {
    const json_t *d = json_array_get(div, k);
    const char *size = str(d, "size");
    int64_t by = json_integer_value(json_object_get(d, "by"));
    for (int set = 0; set < t->ncheck + t->nbench; set++) {
      const struct kv_sizeset *ss = set < t->ncheck ? &t->check[set] : &t->bench[set - t->ncheck];
      int64_t v;
      if (kv_sizeset_get(t, ss, size, &v) != 0)
        return snprintf(why, cap,
                        "sizes: the skill needs %s divisible by %lld; the task has no "
                        "size %s",
                        size, (long long)by, size),
               1;
      if (by > 0 && v % by) {
        char f[256];
        kv_sizeset_format(t, ss, f, sizeof f);
        return snprintf(why, cap, "sizes: the skill needs %s divisible by %lld; %s has %s=%lld",
                        size, (long long)by, f, size, (long long)v),
               1;
      }
    }
  }
  long budget = o->smem_budget > 0 ? o->smem_budget : 48 * 1024;
  json_int_t sm = json_integer_value(json_object_get(pre, "smem_bytes"));
  if (sm > budget)
    return snprintf(why, cap, "shared memory: needs %lld bytes per block, the budget is %ld",
                    (long long)sm, budget),
           1;
  return 0;
}

/* names (a JSON array of feature names) as bits; unknown names count as
 * unmet (bit 31, never observed). */
static uint32_t feature_bits(const json_t *names) {
  uint32_t b = 0;
  for (size_t i = 0; i < json_array_size(names); i++) {
    int k = kv_feature_find(str_of(json_array_get(names, i)));
    b |= k >= 0 ? 1u << k : 1u << 31;
  }
  return b;
}

/* KLineage's retrieval by observed features: a card with a contract is
 * offered only where its requires are in the code and its conflicts are not;
 * and only to the tasks its scope names. */
static int contract_fail(const struct kv_task *t, const json_t *c, const char *code,
                         const char *whose, const struct kv_features *have, char *why, size_t cap) {
  const json_t *cases = json_object_get(json_object_get(c, "scope"), "cases");
  if (json_array_size(cases)) {
    int ok = 0;
    for (size_t i = 0; i < json_array_size(cases); i++)
      ok |= !strcmp(str_of(json_array_get(cases, i)), "*") ||
            !strcmp(str_of(json_array_get(cases, i)), t->name);
    if (!ok)
      return snprintf(why, cap, "scope: the skill holds for %s, not %s",
                      str_of(json_array_get(cases, 0)), t->name),
             1;
  }
  const json_t *k = json_object_get(c, "contract");
  if (!json_is_object(k))
    return 0;
  uint32_t req = feature_bits(json_object_get(k, "requires"));
  uint32_t conf = feature_bits(json_object_get(k, "conflicts"));
  uint32_t prov = feature_bits(json_object_get(k, "provides"));
  char a[400], b[400];
  uint32_t seen = code ? have->bits : 0;
  kv_features_format(seen, b, sizeof b);
  if (req & ~seen) {
    kv_features_format(req & ~seen & ((1u << KV_FEAT_N) - 1u), a, sizeof a);
    return snprintf(why, cap, "requires %s, which the %s does not show (it shows %s)", a,
                    code ? whose : "task (no code given)", b),
           1;
  }
  if (conf & seen) {
    kv_features_format(conf & seen, a, sizeof a);
    return snprintf(why, cap, "conflicts with %s, which the %s shows", a, whose), 1;
  }
  if (prov && code && !(prov & ~seen)) {
    kv_features_format(prov, a, sizeof a);
    return snprintf(why, cap, "already provided: the %s shows %s", whose, a), 1;
  }
  return 0;
}

struct ranked {
  int idx;
  double score;
};

static int by_score(const void *a, const void *b) {
  const struct ranked *x = a, *y = b;
  if (x->score != y->score)
    return x->score > y->score ? -1 : 1;
  return x->idx - y->idx;
}

int kv_skills_match(const struct kv_task *t, const json_t *cards, const struct kv_match_opts *o,
                    struct kv_match *out, int cap, int *nout) {
  size_t n = json_array_size(cards);
  if (n > (size_t)cap)
    n = (size_t)cap;
  char *cand_sq = NULL;
  if (o->candidate_src) {
    size_t l = strlen(o->candidate_src) + 1;
    cand_sq = malloc(l);
    if (cand_sq)
      squash(o->candidate_src, cand_sq, l);
  }
  const char *fsrc = o->features_src ? o->features_src : o->candidate_src;
  const char *whose = o->features_src ? "reference's code" : "candidate's code";
  struct kv_features have = {0};
  if (fsrc)
    kv_features_scan(fsrc, strlen(fsrc), &have);
  struct ranked *rk = calloc(n ? n : 1, sizeof *rk);
  int nr = 0;
  for (size_t i = 0; i < n; i++) {
    struct kv_match *m = &out[i];
    memset(m, 0, sizeof *m);
    m->card = json_array_get(cards, i);
    const json_t *c = m->card;
    /* does it fit the code at all (features, scope), then is it trusted here */
    if (contract_fail(t, c, fsrc, whose, &have, m->why, sizeof m->why) ||
        precondition_fail(t, c, o, m->why, sizeof m->why))
      continue;
    const json_t *prov = json_object_get(c, "provides");
    const char *pat = str(json_object_get(c, "anchor"), "pattern");
    int already = 0;
    for (size_t k = 0; k < json_array_size(prov) && !already; k++)
      if (holds(cand_sq, o->candidate_src, json_string_value(json_array_get(prov, k)), pat)) {
        snprintf(m->why, sizeof m->why, "already provided: the candidate holds %s",
                 json_string_value(json_array_get(prov, k)));
        already = 1;
      }
    if (already)
      continue;
    const json_t *conf = json_object_get(c, "conflicts");
    int clash = 0;
    for (size_t k = 0; k < json_array_size(conf) && !clash; k++)
      if (present(cand_sq, o->candidate_src, cards, json_string_value(json_array_get(conf, k)))) {
        snprintf(m->why, sizeof m->why, "conflicts with %s, which the candidate holds",
                 json_string_value(json_array_get(conf, k)));
        clash = 1;
      }
    if (clash)
      continue;
    m->fts = o->fts ? o->fts(o->fts_ud, str(c, "id")) : 0;
    m->shape =
        1.0 /
        (1.0 + shape_distance(t, json_object_get(json_object_get(c, "scope"), "bench_sizes")));
    double sp = json_number_value(json_object_get(json_object_get(c, "effect"), "speedup"));
    m->effect = sp > 0 ? log2(sp) : 0;
    m->score = m->fts + m->shape + m->effect;
    rk[nr].idx = (int)i;
    rk[nr++].score = m->score;
  }
  qsort(rk, (size_t)nr, sizeof *rk, by_score);
  /* walk requires and conflicts in rank order: a skill whose requirement is
   * neither in the candidate nor provided by a skill taken before it waits
   * for one that is (repeat until nothing changes). */
  int *taken = calloc(n ? n : 1, sizeof *taken), ntaken = 0;
  int *order = calloc(n ? n : 1, sizeof *order);
  for (int changed = 1; changed;) {
    changed = 0;
    for (int r = 0; r < nr; r++) {
      int i = rk[r].idx;
      if (taken[i])
        continue;
      const json_t *c = out[i].card;
      const json_t *req = json_object_get(c, "requires");
      int ok = 1;
      for (size_t k = 0; k < json_array_size(req) && ok; k++) {
        const char *need = json_string_value(json_array_get(req, k));
        int have = present(cand_sq, o->candidate_src, cards, need);
        for (int q = 0; q < ntaken && !have; q++)
          have = in_list(json_object_get(out[order[q]].card, "provides"), need);
        if (!have) {
          ok = 0;
          snprintf(out[i].why, sizeof out[i].why,
                   "requires %s, which neither the candidate nor a matched skill provides", need);
        }
      }
      for (int q = 0; q < ntaken && ok; q++) {
        const json_t *oc = out[order[q]].card;
        const json_t *cl = json_object_get(c, "conflicts"), *ocl = json_object_get(oc, "conflicts");
        const json_t *pv = json_object_get(c, "provides"), *opv = json_object_get(oc, "provides");
        for (size_t k = 0; k < json_array_size(pv) && ok; k++)
          if (in_list(ocl, json_string_value(json_array_get(pv, k))) ||
              in_list(opv, json_string_value(json_array_get(pv, k))))
            ok = 0;
        for (size_t k = 0; k < json_array_size(cl) && ok; k++)
          if (in_list(opv, json_string_value(json_array_get(cl, k))))
            ok = 0;
        if (!ok)
          snprintf(out[i].why, sizeof out[i].why,
                   "conflicts with %s (or provides the same), ranked higher", str(oc, "id"));
      }
      if (!ok)
        continue;
      taken[i] = 1;
      order[ntaken++] = i;
      out[i].matched = 1;
      snprintf(out[i].why, sizeof out[i].why,
               "#%d: preconditions hold; score %.2f = relevance %.2f + shape %.2f + effect "
               "%.2f (%.2fx)%s",
               ntaken, out[i].score, out[i].fts, out[i].shape, out[i].effect,
               json_number_value(json_object_get(json_object_get(c, "effect"), "speedup")),
               json_array_size(req) ? "; its requirements come first" : "");
      changed = 1;
    }
  }
  /* matched first, in order; then the rest as given */
  struct kv_match *tmp = malloc((n ? n : 1) * sizeof *tmp);
  int w = 0;
  if (tmp) {
    for (int q = 0; q < ntaken; q++)
      tmp[w++] = out[order[q]];
    for (size_t i = 0; i < n; i++)
      if (!taken[i])
        tmp[w++] = out[i];
    memcpy(out, tmp, n * sizeof *tmp);
    free(tmp);
  }
  free(taken);
  free(order);
  free(rk);
  free(cand_sq);
  *nout = (int)n;
  return ntaken;
}
