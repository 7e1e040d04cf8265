/* Skill cards: made from a lineage's accepted steps, checked, read from and
 * written to JSON, printed as Markdown, kept in the store. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/skills.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "kevo/surface.h"
#include "internal.h"

#define CI_METHOD                                                                                  \
  "percentile bootstrap (95%%, %d draws) of the geometric mean of simpler/richer medians "         \
  "over %d interleaved pairs (ABBA order, one input seed per pair); Wilcoxon signed-rank p "       \
  "reported beside it"

static json_t *comma_list(const char *s) {
  json_t *a = json_array();
  char tmp[256];
  snprintf(tmp, sizeof tmp, "%s", s ? s : "");
  for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    json_array_append_new(a, json_string(tok));
  return a;
}

static json_t *task_dtypes(const struct kv_task *t) {
  json_t *a = json_array();
  for (int i = 0; i < t->nparams; i++) {
    const struct kv_param *p = &t->params[i];
    if (p->role == KV_ROLE_SIZE)
      continue;
    const char *n = kv_dtype_name(p->dtype);
    int seen = 0;
    for (size_t k = 0; k < json_array_size(a); k++)
      seen |= !strcmp(json_string_value(json_array_get(a, k)), n);
    if (!seen)
      json_array_append_new(a, json_string(n));
  }
  return a;
}

static json_t *bench_sizes(const struct kv_task *t) {
  json_t *o = json_object();
  if (t->nbench < 1)
    return o;
  for (int i = 0; i < t->nparams; i++)
    if (t->params[i].role == KV_ROLE_SIZE)
      json_object_set_new(o, t->params[i].name, json_integer(t->bench[0].values[i]));
  return o;
}

static json_t *mech_names(const struct kv_annot *a, const int *idx, int n) {
  json_t *arr = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(arr, json_string(a->m[idx[i]].name));
  return arr;
}

/* The first distinctive line the forward edit adds (not a brace, a comment,
 * a directive that closes a block, shorter than 10 characters, or text the
 * simpler kernel already holds), into out; 0 when there is none. */
static int added_line(const char *diff, const char *before, char *out, size_t cap) {
  for (const char *p = diff; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    if (n > 1 && p[0] == '+' && strncmp(p, "+++", 3) != 0) {
      const char *q = p + 1;
      size_t k = n - 1;
      while (k && (*q == ' ' || *q == '\t'))
        q++, k--;
      while (k && (q[k - 1] == ' ' || q[k - 1] == '\t' || q[k - 1] == '\r'))
        k--;
      if (k >= 10 && strncmp(q, "//", 2) && strncmp(q, "/*", 2) && strncmp(q, "#endif", 6) &&
          strncmp(q, "#else", 5) && k < cap) {
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)k, q);
        if (!before || !strstr(before, line)) {
          snprintf(out, cap, "%s", line);
          return 1;
        }
      }
    }
    p = eol ? eol + 1 : NULL;
  }
  return 0;
}

/* A verdict of kevo's own checks on a proposed step (not the gate's). */
static int kevo_check(const char *v) {
  static const char *const k[] = {"no_code", "contract_failed", "preconditions",
                                  "anchor",  "audit_failed",    "roundtrip_failed",
                                  NULL};
  for (int i = 0; k[i]; i++)
    if (!strcmp(v, k[i]))
      return 1;
  return 0;
}

/* LLM mode: the feature contract (observed, checked), the audit and the
 * round trip go on the card. */
static void llm_card_parts(json_t *card, const struct kv_lineage_step *st,
                           const struct kv_mech *m) {
  uint32_t strat = kv_features_mask(KV_FEAT_STRATEGY);
  json_object_set_new(card, "contract",
                      json_pack("{s:o,s:o,s:o,s:o,s:o,s:s}", "requires",
                                kv_features_json(st->f_requires), "provides",
                                kv_features_json(st->feat_rich & strat & ~st->feat_simple),
                                "conflicts", kv_features_json(st->f_conflicts), "observed_simpler",
                                kv_features_json(st->feat_simple), "observed_richer",
                                kv_features_json(st->feat_rich), "method",
                                "kevo's lexical feature scan of the code (comments blanked)"));
  json_t *ev = json_object_get(card, "evidence");
  json_t *au = st->audit_json ? json_loads(st->audit_json, 0, NULL) : NULL;
  json_object_set_new(ev, "audit", au ? au : json_null());
  const struct kv_roundtrip *rt = &st->rt;
  json_t *ratios = json_array();
  for (int i = 0; i < rt->n; i++)
    json_array_append_new(ratios, json_real(rt->ratio[i]));
  json_object_set_new(
      ev, "roundtrip",
      json_pack("{s:b,s:b,s:b,s:o,s:f,s:f,s:[f,f],s:s,s:s}", "checked", rt->checked, "passed",
                rt->passed, "identical", rt->identical, "trial_ratios", ratios, "min_ratio",
                rt->n ? rt->min_ratio : 0.0, "overall", rt->overall, "ci", rt->ci_lo, rt->ci_hi,
                "rule", rt->every ? "every trial (KLineage)" : "interval (kevo)", "why", rt->why));
  json_t *sc = json_object_get(card, "scope");
  json_object_set_new(sc, "cases", comma_list(m->scope));
  json_object_set_new(json_object_get(card, "preconditions"), "written_by", json_string("model"));
}

json_t *kv_lineage_cards(const struct kv_task *t, const struct kv_lineage *L) {
  const struct kv_annot *a = &L->annot;
  json_t *cards = json_array();
  /* what the walk taught about the whole kernel: its rejected steps */
  json_t *lineage_risks = json_array();
  for (int i = 0; i < L->nsteps; i++) {
    const struct kv_lineage_step *st = &L->steps[i];
    if (!st->accepted && !st->skipped[0]) {
      char r[768];
      snprintf(r, sizeof r, "removing %s from this kernel was rejected by %s (%s: %.400s)",
               a->m[st->mech].name, kevo_check(st->verdict) ? "kevo's checks" : "the gate",
               st->verdict, st->detail);
      json_array_append_new(lineage_risks, json_string(r));
    }
  }
  uint32_t present = L->annot.n >= 32 ? 0xffffffffu : ((1u << L->annot.n) - 1u);
  for (int i = 0; i < L->nsteps; i++) {
    const struct kv_lineage_step *st = &L->steps[i];
    if (!st->accepted)
      continue;
    present &= ~(1u << st->mech);
    const struct kv_mech *m = &a->m[st->mech];
    char uid[256];
    snprintf(uid, sizeof uid, "%s/%s/%s/%s@%.8s", t->name, L->surface, L->arch[0] ? L->arch : "-",
             m->name, st->parent_hash);
    int llm = !strcmp(L->mode, "llm");
    json_t *prior = json_array(); /* LLM mode: what stays is not named */
    for (int k = 0; k < a->n && !llm; k++)
      if (present >> k & 1u)
        json_array_append_new(prior, json_string(a->m[k].name));
    json_t *pipeline = comma_list(m->pipeline);
    json_t *hw = m->hardware[0] ? comma_list(m->hardware) : json_array();
    if (!m->hardware[0] && L->arch[0])
      json_array_append_new(hw, json_string(L->arch));
    json_t *div = json_array();
    char tmp[96];
    snprintf(tmp, sizeof tmp, "%s", m->divides);
    for (char *save = NULL, *tok = strtok_r(tmp, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
      char *c = strchr(tok, ':');
      if (!c)
        continue;
      *c = 0;
      json_array_append_new(
          div, json_pack("{s:s,s:I}", "size", tok, "by", (json_int_t)strtol(c + 1, NULL, 10)));
    }
    json_t *pre = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:I}", "dtypes",
                            m->dtypes[0] ? comma_list(m->dtypes) : task_dtypes(t), "layout",
                            m->layout[0] ? comma_list(m->layout) : json_pack("[s]", "row-major"),
                            "storage", comma_list(m->storage), "pipeline", pipeline, "hardware", hw,
                            "divides", div, "smem_bytes", (json_int_t)m->smem_bytes);
    json_t *effect = json_object();
    const struct kv_paired *p = &st->paired;
    char method[600];
    if (p->n) {
      snprintf(method, sizeof method, CI_METHOD, p->resamples, p->n);
      json_object_set_new(effect, "speedup", json_real(p->speedup));
      json_object_set_new(effect, "ci", json_pack("[f,f]", p->ci_lo, p->ci_hi));
      json_object_set_new(effect, "ci_method", json_string(method));
      json_object_set_new(effect, "wilcoxon_p", json_real(p->wilcoxon_p));
      json_object_set_new(effect, "pairs", json_integer(p->n));
      json_t *pairs = json_array();
      for (int k = 0; k < p->n; k++)
        json_array_append_new(pairs, json_pack("[f,f]", p->simple_us[k], p->rich_us[k]));
      json_object_set_new(effect, "pairs_us", pairs);
    } else {
      double sp = st->child_median_us > 0 && L->expert_median_us > 0 ? -1 : -1;
      (void)sp;
      json_object_set_new(effect, "speedup", json_real(0));
      json_object_set_new(effect, "ci", json_null());
      snprintf(method, sizeof method, "not measured (%s)", skills_unpaired_why(st));
      json_object_set_new(effect, "ci_method", json_string(method));
    }
    json_object_set_new(effect, "median_us_simpler", json_real(st->child_median_us));
    json_object_set_new(effect, "resources",
                        json_pack("{s:[i,i],s:[I,I]}", "registers", st->regs_simple, st->regs_rich,
                                  "smem_bytes", (json_int_t)st->smem_simple,
                                  (json_int_t)st->smem_rich));
    json_t *risks = json_deep_copy(lineage_risks);
    if (p->n && !st->admitted) {
      char r[512];
      snprintf(r, sizeof r,
               "did not pay on %s: %.2fx with 95%% interval [%.2f, %.2f], p = %.3g; %s", L->device,
               p->speedup, p->ci_lo, p->ci_hi, p->wilcoxon_p, p->why);
      json_array_append_new(risks, json_string(r));
    }
    if (!p->n && strcmp(skills_unpaired_why(st), "no paired test"))
      json_array_append_new(risks, json_string(st->detail));
    if (st->rederived < 0) {
      char r[768];
      snprintf(r, sizeof r, "the forward edit re-derived from this card failed the gate (%s)",
               st->rederive);
      json_array_append_new(risks, json_string(r));
    }
    const char *after = llm && st->rederived_hash[0] ? st->rederived_hash : st->parent_hash;
    char spec_hash[65];
    kv_sha256_hex(t->json, strlen(t->json), spec_hash);
    json_t *card = json_object();
    json_object_set_new(card, "id", json_string(uid));
    json_object_set_new(card, "name", json_string(m->name));
    json_object_set_new(card, "intent", json_string(m->intent));
    char anchor[256];
    snprintf(anchor, sizeof anchor, "%s", m->anchor);
    if ((m->anchor_default || !anchor[0]) && st->forward_diff)
      added_line(st->forward_diff, st->child_src, anchor, sizeof anchor);
    json_object_set_new(card, "anchor",
                        json_pack("{s:s,s:s}", "words", m->intent, "pattern", anchor));
    json_object_set_new(card, "carrier",
                        json_pack("{s:s,s:s,s:s}", "diff", st->forward_diff ? st->forward_diff : "",
                                  "before_hash", st->child_hash, "after_hash", after));
    json_object_set_new(card, "preconditions", pre);
    json_object_set_new(card, "effect", effect);
    json_object_set_new(card, "evidence",
                        json_pack("{s:s,s:s,s:s,s:i,s:s,s:s,s:s,s:s,s:{s:s,s:s,s:s}}", "lineage",
                                  L->key, "mode", L->mode[0] ? L->mode : "annotated", "expert",
                                  L->file, "step", st->ord, "task", t->name, "spec_hash", spec_hash,
                                  "before_hash", st->child_hash, "after_hash", after, "verdicts",
                                  "simpler", st->verdict, "richer", "ok", "rederived",
                                  llm ? (st->rederived > 0 ? "ok" : st->rederive) : "n/a"));
    json_object_set_new(card, "risks", risks);
    json_object_set_new(card, "scope",
                        json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "task", t->name, "surface",
                                  L->surface, "arch", L->arch, "device", L->device, "prior_actions",
                                  prior, "bench_sizes", bench_sizes(t)));
    json_object_set_new(card, "requires", mech_names(a, m->req, m->nreq));
    json_object_set_new(card, "provides", json_pack("[s]", m->name));
    json_object_set_new(card, "conflicts", mech_names(a, m->conf, m->nconf));
    if (llm) {
      llm_card_parts(card, st, m);
      if (st->rt.checked && !st->rt.passed)
        json_array_append_new(risks, json_sprintf("the round trip failed: %s", st->rt.why));
    }
    json_object_set_new(card, "admitted", json_boolean(st->admitted));
    json_object_set_new(card, "status",
                        json_string(st->admitted ? "admitted"
                                    : p->n       ? "rejected"
                                                 : "unmeasured"));
    json_object_set_new(card, "verification_log",
                        json_pack("[{s:s,s:s,s:i,s:s,s:f,s:I}]", "what", "lineage", "lineage",
                                  L->key, "step", st->ord, "verdict", "ok", "speedup",
                                  p->n ? p->speedup : 0.0, "when", (json_int_t)kv_unix_time()));
    json_array_append_new(cards, card);
  }
  json_decref(lineage_risks);
  return cards;
}

/* ---- validation ------------------------------------------------------------ */

static int need(const json_t *o, const char *key, json_type type, const char *where,
                const char *fix, char *err, size_t errlen) {
  json_t *v = json_object_get(o, key);
  static const char *names[] = {"an object", "an array",      "a string",      "a whole number",
                                "a number",  "true or false", "true or false", "null"};
  int ok = v && (json_typeof(v) == type || (type == JSON_REAL && json_is_number(v)) ||
                 (type == JSON_TRUE && json_is_boolean(v)));
  if (!ok)
    return kv_error(err, errlen, "%s: %s: %s; it must be %s (%s)", where, key,
                    v ? "has the wrong type" : "missing", names[type], fix);
  return 0;
}

int kv_skill_validate(const json_t *c, const char *where, char *err, size_t errlen) {
  if (!json_is_object(c))
    return kv_error(err, errlen, "%s: a skill card must be a JSON object", where);
  char w[512];
  if (need(c, "id", JSON_STRING, where, "a unique name such as rowsum/cpu/x86_64/LANES@1a2b3c4d",
           err, errlen) ||
      need(c, "name", JSON_STRING, where, "the mechanism's name", err, errlen) ||
      need(c, "intent", JSON_STRING, where, "one line: what the edit does", err, errlen) ||
      need(c, "anchor", JSON_OBJECT, where, "{\"words\", \"pattern\"}", err, errlen) ||
      need(c, "carrier", JSON_OBJECT, where, "{\"diff\": the forward edit}", err, errlen) ||
      need(c, "preconditions", JSON_OBJECT, where,
           "{\"dtypes\", \"layout\", \"storage\", \"pipeline\", \"hardware\"}", err, errlen) ||
      need(c, "effect", JSON_OBJECT, where, "{\"speedup\", \"ci\"}", err, errlen) ||
      need(c, "scope", JSON_OBJECT, where, "{\"surface\", \"arch\", \"task\"}", err, errlen) ||
      need(c, "provides", JSON_ARRAY, where, "the mechanisms the edit adds", err, errlen) ||
      need(c, "requires", JSON_ARRAY, where, "mechanisms that must be present (may be [])", err,
           errlen) ||
      need(c, "conflicts", JSON_ARRAY, where, "mechanisms it cannot join (may be [])", err,
           errlen) ||
      need(c, "status", JSON_STRING, where, "admitted, rejected, unmeasured or retired", err,
           errlen))
    return -1;
  const char *id = json_string_value(json_object_get(c, "id"));
  if (!id[0] || strlen(id) > 255)
    return kv_error(err, errlen, "%s: id: empty or longer than 255 characters", where);
  snprintf(w, sizeof w, "%s: anchor", where);
  if (need(json_object_get(c, "anchor"), "pattern", JSON_STRING, w,
           "code text a candidate with the mechanism contains", err, errlen))
    return -1;
  snprintf(w, sizeof w, "%s: carrier", where);
  if (need(json_object_get(c, "carrier"), "diff", JSON_STRING, w, "the forward edit as a diff", err,
           errlen))
    return -1;
  snprintf(w, sizeof w, "%s: effect", where);
  const json_t *e = json_object_get(c, "effect");
  if (need(e, "speedup", JSON_REAL, w, "the measured forward speedup", err, errlen))
    return -1;
  const json_t *ci = json_object_get(e, "ci");
  if (!ci || !(json_is_null(ci) ||
               (json_is_array(ci) && json_array_size(ci) == 2 &&
                json_is_number(json_array_get(ci, 0)) && json_is_number(json_array_get(ci, 1)))))
    return kv_error(err, errlen,
                    "%s: ci: %s; it must be [low, high] (the 95%% interval) or null when not "
                    "measured",
                    w, ci ? "has the wrong type" : "missing");
  snprintf(w, sizeof w, "%s: scope", where);
  if (need(json_object_get(c, "scope"), "surface", JSON_STRING, w, "cpu or cuda", err, errlen) ||
      need(json_object_get(c, "scope"), "arch", JSON_STRING, w, "x86_64, sm_90, ...", err, errlen))
    return -1;
  const char *sf = json_string_value(json_object_get(json_object_get(c, "scope"), "surface"));
  if (!kv_surface_find(sf))
    return kv_error(err, errlen, "%s: surface: '%s'; use one of %s", w, sf, kv_surface_names());
  const char *stt = json_string_value(json_object_get(c, "status"));
  if (strcmp(stt, "admitted") && strcmp(stt, "rejected") && strcmp(stt, "unmeasured") &&
      strcmp(stt, "retired"))
    return kv_error(err, errlen, "%s: status: '%s'; use admitted, rejected, unmeasured or retired",
                    where, stt);
  const char *lists[] = {"provides", "requires", "conflicts"};
  for (size_t k = 0; k < 3; k++) {
    const json_t *a = json_object_get(c, lists[k]);
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!json_is_string(json_array_get(a, i)))
        return kv_error(err, errlen, "%s: %s[%zu]: must be a mechanism's name (a string)", where,
                        lists[k], i);
  }
  const json_t *pre = json_object_get(c, "preconditions");
  const char *cats[] = {"dtypes", "layout", "storage", "pipeline", "hardware"};
  for (size_t k = 0; k < 5; k++) {
    const json_t *a = json_object_get(pre, cats[k]);
    if (a && !json_is_array(a))
      return kv_error(err, errlen, "%s: preconditions.%s: must be an array of strings", where,
                      cats[k]);
  }
  const json_t *div = json_object_get(pre, "divides");
  for (size_t i = 0; i < json_array_size(div); i++) {
    const json_t *d = json_array_get(div, i);
    if (!json_is_string(json_object_get(d, "size")) || !json_is_integer(json_object_get(d, "by")) ||
        json_integer_value(json_object_get(d, "by")) < 1)
      return kv_error(err, errlen,
                      "%s: preconditions.divides[%zu]: write {\"size\": NAME, \"by\": N >= 1}",
                      where, i);
  }
  return 0;
}

int kv_skills_parse(const char *text, size_t len, const char *file, json_t **cards, char *err,
                    size_t errlen) {
  *cards = NULL;
  if (len > KV_SKILLS_JSON_MAX)
    return kv_error(err, errlen, "%s: larger than %d bytes", file, KV_SKILLS_JSON_MAX);
  json_error_t je;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!root)
    return kv_error(err, errlen, "%s: line %d, column %d: invalid JSON: %s", file, je.line,
                    je.column, je.text);
  int rc = -1;
  json_t *v = json_object_get(root, "kevo_skills");
  if (!json_is_object(root) || !json_is_integer(v)) {
    kv_error(err, errlen,
             "%s: kevo_skills: missing; a skills file is {\"kevo_skills\": %d, \"skills\": [...]} "
             "as kevo skills export writes it",
             file, KV_SKILLS_SCHEMA);
    goto out;
  }
  json_int_t ver = json_integer_value(v);
  if (ver > KV_SKILLS_SCHEMA) {
    kv_error(err, errlen,
             "%s: kevo_skills: version %lld is newer than this kevo reads (%d); upgrade kevo", file,
             (long long)ver, KV_SKILLS_SCHEMA);
    goto out;
  }
  if (ver < 1) {
    kv_error(err, errlen, "%s: kevo_skills: version %lld; the first version is 1", file,
             (long long)ver);
    goto out;
  }
  json_t *arr = json_object_get(root, "skills");
  if (!json_is_array(arr)) {
    kv_error(err, errlen, "%s: skills: missing or not an array; give the cards as an array", file);
    goto out;
  }
  for (size_t i = 0; i < json_array_size(arr); i++) {
    char where[600];
    snprintf(where, sizeof where, "%s: skills[%zu]", file, i);
    if (kv_skill_validate(json_array_get(arr, i), where, err, errlen) != 0)
      goto out;
  }
  *cards = json_incref(arr);
  rc = 0;
out:
  json_decref(root);
  return rc;
}

/* ---- Markdown, search text ----------------------------------------------------- */

static void md_list(struct kv_buf *b, const char *label, const json_t *a) {
  if (!json_is_array(a) || json_array_size(a) == 0)
    return;
  kv_buf_appendf(b, "- %s: ", label);
  for (size_t i = 0; i < json_array_size(a); i++) {
    const json_t *v = json_array_get(a, i);
    if (json_is_string(v))
      kv_buf_appendf(b, "%s%s", i ? ", " : "", json_string_value(v));
    else if (json_is_object(v))
      kv_buf_appendf(b, "%s%s %% %lld == 0", i ? ", " : "",
                     json_string_value(json_object_get(v, "size")),
                     (long long)json_integer_value(json_object_get(v, "by")));
  }
  kv_buf_appendf(b, "\n");
}

static const char *str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

char *kv_skill_markdown(const json_t *c) {
  struct kv_buf b;
  kv_buf_init(&b, 1 << 20);
  const json_t *e = json_object_get(c, "effect"), *sc = json_object_get(c, "scope"),
               *pre = json_object_get(c, "preconditions"), *ev = json_object_get(c, "evidence");
  kv_buf_appendf(&b, "## %s\n\n`%s` (%s)\n\n%s\n\n", str(c, "name"), str(c, "id"), str(c, "status"),
                 str(c, "intent"));
  const json_t *ci = json_object_get(e, "ci");
  if (json_is_array(ci))
    kv_buf_appendf(&b, "**Effect**: %.2fx forward, 95%% interval [%.2f, %.2f]; %s\n\n",
                   json_number_value(json_object_get(e, "speedup")),
                   json_number_value(json_array_get(ci, 0)),
                   json_number_value(json_array_get(ci, 1)), str(e, "ci_method"));
  else
    kv_buf_appendf(&b, "**Effect**: not measured\n\n");
  kv_buf_appendf(&b, "**Anchor**: %s\n\n    %s\n\n", str(json_object_get(c, "anchor"), "words"),
                 str(json_object_get(c, "anchor"), "pattern"));
  kv_buf_appendf(&b, "**Scope**: task %s, surface %s, arch %s, device %s\n\n", str(sc, "task"),
                 str(sc, "surface"), str(sc, "arch"), str(sc, "device"));
  kv_buf_appendf(&b, "**Preconditions**\n\n");
  md_list(&b, "dtypes", json_object_get(pre, "dtypes"));
  md_list(&b, "layout", json_object_get(pre, "layout"));
  md_list(&b, "storage", json_object_get(pre, "storage"));
  md_list(&b, "pipeline", json_object_get(pre, "pipeline"));
  md_list(&b, "hardware", json_object_get(pre, "hardware"));
  md_list(&b, "sizes", json_object_get(pre, "divides"));
  if (json_integer_value(json_object_get(pre, "smem_bytes")) > 0)
    kv_buf_appendf(&b, "- shared memory: %lld bytes per block\n",
                   (long long)json_integer_value(json_object_get(pre, "smem_bytes")));
  kv_buf_appendf(&b, "\n");
  md_list(&b, "requires", json_object_get(c, "requires"));
  md_list(&b, "provides", json_object_get(c, "provides"));
  md_list(&b, "conflicts", json_object_get(c, "conflicts"));
  md_list(&b, "prior actions", json_object_get(sc, "prior_actions"));
  const json_t *risks = json_object_get(c, "risks");
  if (json_array_size(risks)) {
    kv_buf_appendf(&b, "\n**Risks**\n\n");
    for (size_t i = 0; i < json_array_size(risks); i++)
      kv_buf_appendf(&b, "- %s\n", json_string_value(json_array_get(risks, i)));
  }
  if (ev)
    kv_buf_appendf(&b, "\n**Evidence**: lineage %s step %lld of %s; %s -> %s\n", str(ev, "lineage"),
                   (long long)json_integer_value(json_object_get(ev, "step")), str(ev, "expert"),
                   str(ev, "before_hash"), str(ev, "after_hash"));
  kv_buf_appendf(&b, "\n**Carrier** (the forward edit)\n\n```diff\n%s```\n",
                 str(json_object_get(c, "carrier"), "diff"));
  const json_t *log = json_object_get(c, "verification_log");
  if (json_array_size(log)) {
    kv_buf_appendf(&b, "\n**Verification log**\n\n");
    for (size_t i = 0; i < json_array_size(log); i++) {
      char *s = json_dumps(json_array_get(log, i), JSON_COMPACT | JSON_SORT_KEYS);
      kv_buf_appendf(&b, "- %s\n", s ? s : "?");
      free(s);
    }
  }
  return kv_buf_detach(&b);
}

char *kv_skill_search_text(const json_t *c) {
  struct kv_buf b;
  kv_buf_init(&b, 64 * 1024);
  const json_t *sc = json_object_get(c, "scope");
  kv_buf_appendf(&b, "%s %s %s %s %s", str(c, "name"), str(c, "intent"),
                 str(json_object_get(c, "anchor"), "pattern"), str(sc, "task"), str(sc, "surface"));
  const json_t *risks = json_object_get(c, "risks");
  for (size_t i = 0; i < json_array_size(risks); i++)
    kv_buf_appendf(&b, " %s", json_string_value(json_array_get(risks, i)));
  return kv_buf_detach(&b);
}

/* ---- the store ----------------------------------------------------------------- */

/* The card without its log (the log lives in the store's skill_log). */
static char *card_text(const json_t *c) {
  json_t *k = json_deep_copy(c);
  json_object_del(k, "verification_log");
  json_object_del(k, "record");
  json_object_del(k, "retired");
  char *s = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(k);
  return s;
}

static char *log_lines(const json_t *c) {
  const json_t *log = json_object_get(c, "verification_log");
  if (!json_array_size(log))
    return NULL;
  struct kv_buf b;
  kv_buf_init(&b, 4 << 20);
  for (size_t i = 0; i < json_array_size(log); i++) {
    char *s = json_dumps(json_array_get(log, i), JSON_COMPACT | JSON_SORT_KEYS);
    if (s)
      kv_buf_appendf(&b, "%s\n", s);
    free(s);
  }
  return kv_buf_detach(&b);
}

static int make_recs(json_t *cards, struct kv_skill_rec **out, char ***owned, int *nowned) {
  size_t n = json_array_size(cards);
  struct kv_skill_rec *r = calloc(n ? n : 1, sizeof *r);
  char **own = calloc(3 * (n ? n : 1), sizeof *own);
  if (!r || !own) {
    free(r);
    free(own);
    return -1;
  }
  int k = 0;
  for (size_t i = 0; i < n; i++) {
    const json_t *c = json_array_get(cards, i);
    const json_t *sc = json_object_get(c, "scope");
    r[i].uid = str(c, "id");
    r[i].name = str(c, "name");
    r[i].intent = str(c, "intent");
    r[i].surface = str(sc, "surface");
    r[i].arch = str(sc, "arch");
    r[i].status = str(c, "status");
    r[i].speedup = json_number_value(json_object_get(json_object_get(c, "effect"), "speedup"));
    own[k++] = (char *)(r[i].card_json = card_text(c));
    own[k++] = (char *)(r[i].search_text = kv_skill_search_text(c));
    own[k++] = (char *)(r[i].log_json = log_lines(c));
  }
  *out = r;
  *owned = own;
  *nowned = k;
  return 0;
}

static void free_recs(struct kv_skill_rec *r, char **own, int n) {
  for (int i = 0; i < n; i++)
    free(own[i]);
  free(own);
  free(r);
}

int kv_skills_store(struct kv_store *s, json_t *cards, int *added, int *updated, char *err,
                    size_t errlen) {
  struct kv_skill_rec *r;
  char **own;
  int nown;
  if (make_recs(cards, &r, &own, &nown) != 0)
    return kv_error(err, errlen, "out of memory");
  int rc = kv_store_skills_put(s, r, (int)json_array_size(cards), added, updated, err, errlen);
  free_recs(r, own, nown);
  return rc;
}

static int log_cb(void *ud, const char *entry, int64_t created) {
  (void)created;
  json_t *e = json_loads(entry, 0, NULL);
  if (e)
    json_array_append_new((json_t *)ud, e);
  return 0;
}

struct load_ctx {
  struct kv_store *s;
  json_t *cards;
  int bad;
};

static int load_cb(void *ud, const struct kv_skill_row *row) {
  struct load_ctx *c = ud;
  json_t *card = json_loads(row->card_json, 0, NULL);
  if (!card) {
    c->bad++;
    return 0;
  }
  json_object_set_new(card, "status", json_string(row->status));
  if (row->retired)
    json_object_set_new(card, "retired", json_string(row->retired));
  json_t *log = json_array();
  kv_store_skill_log(c->s, row->uid, log_cb, log, NULL, 0);
  json_object_set_new(card, "verification_log", log);
  json_t *rec = json_pack("{s:i,s:i}", "uses", row->uses, "failures", row->failures);
  /* matched but failed repeatedly: flagged */
  if (row->failures >= 3 && row->failures * 2 > row->uses)
    json_object_set_new(rec, "flag",
                        json_sprintf("failed %d of %d uses where its preconditions matched",
                                     row->failures, row->uses));
  json_object_set_new(card, "record", rec);
  json_object_set_new(card, "store_id", json_integer(row->id));
  json_array_append_new(c->cards, card);
  return 0;
}

int kv_skills_load(struct kv_store *s, int with_retired, json_t **cards, char *err, size_t errlen) {
  struct load_ctx c = {s, json_array(), 0};
  if (kv_store_skills_each(s, with_retired, load_cb, &c, err, errlen) < 0) {
    json_decref(c.cards);
    return -1;
  }
  *cards = c.cards;
  return 0;
}

int kv_lineage_save(struct kv_store *s, const struct kv_task *t, const struct kv_lineage *L,
                    json_t *cards, int64_t *lineage_id, char *err, size_t errlen) {
  char spec_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  int64_t task_id;
  if (kv_store_put_task(s, t->name, t->dir, spec_hash, t->json, &task_id, err, errlen) != 0)
    return -1;
  struct kv_lineage_step_rec steps[KV_MECH_MAX];
  char *paired[KV_MECH_MAX] = {0};
  memset(steps, 0, sizeof steps);
  for (int i = 0; i < L->nsteps; i++) {
    const struct kv_lineage_step *st = &L->steps[i];
    struct kv_lineage_step_rec *p = &steps[i];
    p->ord = st->ord;
    p->mechanism = L->annot.m[st->mech].name;
    p->verdict = st->verdict;
    p->detail = st->detail;
    p->parent_hash = st->parent_hash;
    p->child_hash = st->child_src ? st->child_hash : NULL;
    p->child_source = st->child_src;
    p->forward_diff = st->forward_diff;
    p->result_json = st->result_json;
    p->median_us = st->child_median_us;
    p->speedup = st->child_speedup;
    p->accepted = st->accepted;
    p->admitted = st->admitted;
    if (st->paired.n) {
      json_t *pj = json_pack("{s:f,s:f,s:f,s:f,s:i,s:b,s:s}", "speedup", st->paired.speedup,
                             "ci_lo", st->paired.ci_lo, "ci_hi", st->paired.ci_hi, "wilcoxon_p",
                             st->paired.wilcoxon_p, "pairs", st->paired.n, "admitted",
                             st->paired.admitted, "why", st->paired.why);
      json_t *pairs = json_array();
      for (int k = 0; k < st->paired.n; k++)
        json_array_append_new(pairs,
                              json_pack("[f,f]", st->paired.simple_us[k], st->paired.rich_us[k]));
      json_object_set_new(pj, "pairs_us", pairs);
      paired[i] = json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS);
      json_decref(pj);
      p->paired_json = paired[i];
    }
    for (size_t k = 0; k < json_array_size(cards); k++) {
      const json_t *c = json_array_get(cards, k);
      if (json_integer_value(json_object_get(json_object_get(c, "evidence"), "step")) == st->ord)
        p->skill_uid = str(c, "id");
    }
  }
  struct kv_lineage_rec rec = {
      .key = L->key,
      .mode = L->mode[0] ? L->mode : "annotated",
      .surface = L->surface,
      .arch = L->arch,
      .device = L->device,
      .expert_path = L->file,
      .expert_hash = L->expert_hash,
      .expert_source = L->expert_src,
      .expert_json = L->expert_json,
      .task_id = task_id,
      .expert_us = L->expert_median_us,
      .nsteps = L->nsteps,
      .steps = steps,
  };
  struct kv_skill_rec *r;
  char **own;
  int nown, rc;
  if (make_recs(cards, &r, &own, &nown) != 0)
    rc = kv_error(err, errlen, "out of memory");
  else {
    rc = kv_store_lineage_put(s, &rec, r, (int)json_array_size(cards), lineage_id, err, errlen);
    free_recs(r, own, nown);
  }
  /* The first step's richer kernel (the expert resolved) by its hash too, as
   * every simpler one is: kevo skills export carries each card's kernels, so
   * that an importing host judges them itself (issue 30, lib/exec/rejudge.c). */
  if (rc == 0 && L->expert_resolved) {
    char rh[65];
    kv_sha256_hex(L->expert_resolved, strlen(L->expert_resolved), rh);
    rc = kv_store_put_source(s, rh, L->expert_resolved, strlen(L->expert_resolved), err, errlen);
  }
  for (int i = 0; i < L->nsteps; i++)
    free(paired[i]);
  return rc;
}
