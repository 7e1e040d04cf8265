/* An LLM walk's state as JSON: written after every proposal, so that a walk
 * that lost a call to the model continues where it stood (kevo lineage
 * extract --resume). Everything a step holds is kept: sources, verdicts,
 * audits, features, round trips, paired tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/skills.h"
#include "kevo/util.h"

#define CHECKPOINT_VERSION 1

static void S(json_t *o, const char *k, const char *v) {
  json_object_set_new(o, k, v ? json_string(v) : json_null());
}
static void I(json_t *o, const char *k, long long v) {
  json_object_set_new(o, k, json_integer(v));
}
static void R(json_t *o, const char *k, double v) {
  json_object_set_new(o, k, json_real(v));
}
static void gs(const json_t *o, const char *k, char *out, size_t cap) {
  const char *v = json_string_value(json_object_get(o, k));
  snprintf(out, cap, "%s", v ? v : "");
}
static char *gdup(const json_t *o, const char *k) {
  const char *v = json_string_value(json_object_get(o, k));
  return v ? strdup(v) : NULL;
}
static long long gi(const json_t *o, const char *k) {
  return json_integer_value(json_object_get(o, k));
}
static double gr(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

static json_t *doubles(const double *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(a, json_real(v[i]));
  return a;
}
static void gdoubles(const json_t *o, const char *k, double *v, int cap) {
  const json_t *a = json_object_get(o, k);
  for (size_t i = 0; i < json_array_size(a) && (int)i < cap; i++)
    v[i] = json_number_value(json_array_get(a, i));
}

static json_t *mech_json(const struct kv_mech *m) {
  json_t *o = json_object();
  S(o, "name", m->name);
  S(o, "intent", m->intent);
  S(o, "anchor", m->anchor);
  S(o, "dtypes", m->dtypes);
  S(o, "layout", m->layout);
  S(o, "storage", m->storage);
  S(o, "pipeline", m->pipeline);
  S(o, "hardware", m->hardware);
  S(o, "scope", m->scope);
  return o;
}

static void mech_load(const json_t *o, struct kv_mech *m) {
  memset(m, 0, sizeof *m);
  gs(o, "name", m->name, sizeof m->name);
  gs(o, "intent", m->intent, sizeof m->intent);
  gs(o, "anchor", m->anchor, sizeof m->anchor);
  gs(o, "dtypes", m->dtypes, sizeof m->dtypes);
  gs(o, "layout", m->layout, sizeof m->layout);
  gs(o, "storage", m->storage, sizeof m->storage);
  gs(o, "pipeline", m->pipeline, sizeof m->pipeline);
  gs(o, "hardware", m->hardware, sizeof m->hardware);
  gs(o, "scope", m->scope, sizeof m->scope);
  m->nblocks = 1;
}

static json_t *paired_json(const struct kv_paired *p) {
  json_t *o = json_object();
  I(o, "n", p->n);
  json_object_set_new(o, "rich_us", doubles(p->rich_us, p->n));
  json_object_set_new(o, "simple_us", doubles(p->simple_us, p->n));
  json_object_set_new(o, "ratio", doubles(p->ratio, p->n));
  R(o, "speedup", p->speedup);
  R(o, "ci_lo", p->ci_lo);
  R(o, "ci_hi", p->ci_hi);
  R(o, "wilcoxon_p", p->wilcoxon_p);
  I(o, "resamples", p->resamples);
  I(o, "admitted", p->admitted);
  S(o, "why", p->why);
  return o;
}

static void paired_load(const json_t *o, struct kv_paired *p) {
  p->n = (int)gi(o, "n");
  if (p->n < 0 || p->n > KV_PAIRS_MAX)
    p->n = 0;
  gdoubles(o, "rich_us", p->rich_us, p->n);
  gdoubles(o, "simple_us", p->simple_us, p->n);
  gdoubles(o, "ratio", p->ratio, p->n);
  p->speedup = gr(o, "speedup");
  p->ci_lo = gr(o, "ci_lo");
  p->ci_hi = gr(o, "ci_hi");
  p->wilcoxon_p = gr(o, "wilcoxon_p");
  p->resamples = (int)gi(o, "resamples");
  p->admitted = (int)gi(o, "admitted");
  gs(o, "why", p->why, sizeof p->why);
}

static json_t *rt_json(const struct kv_roundtrip *rt) {
  json_t *o = json_object();
  I(o, "checked", rt->checked);
  I(o, "passed", rt->passed);
  I(o, "identical", rt->identical);
  I(o, "n", rt->n);
  json_object_set_new(o, "ratio", doubles(rt->ratio, rt->n));
  R(o, "min_ratio", rt->min_ratio);
  R(o, "overall", rt->overall);
  R(o, "ci_lo", rt->ci_lo);
  R(o, "ci_hi", rt->ci_hi);
  I(o, "every", rt->every);
  I(o, "missing", rt->missing);
  I(o, "extra", rt->extra);
  S(o, "why", rt->why);
  return o;
}

static void rt_load(const json_t *o, struct kv_roundtrip *rt) {
  rt->checked = (int)gi(o, "checked");
  rt->passed = (int)gi(o, "passed");
  rt->identical = (int)gi(o, "identical");
  rt->n = (int)gi(o, "n");
  if (rt->n < 0 || rt->n > KV_PAIRS_MAX)
    rt->n = 0;
  gdoubles(o, "ratio", rt->ratio, rt->n);
  rt->min_ratio = gr(o, "min_ratio");
  rt->overall = gr(o, "overall");
  rt->ci_lo = gr(o, "ci_lo");
  rt->ci_hi = gr(o, "ci_hi");
  rt->every = (int)gi(o, "every");
  rt->missing = (uint32_t)gi(o, "missing");
  rt->extra = (uint32_t)gi(o, "extra");
  gs(o, "why", rt->why, sizeof rt->why);
}

static json_t *step_json(const struct kv_lineage_step *st) {
  json_t *o = json_object();
  I(o, "ord", st->ord);
  I(o, "mech", st->mech);
  S(o, "verdict", st->verdict);
  S(o, "detail", st->detail);
  I(o, "accepted", st->accepted);
  I(o, "admitted", st->admitted);
  S(o, "parent_hash", st->parent_hash);
  S(o, "child_hash", st->child_hash);
  S(o, "child_src", st->child_src);
  S(o, "forward_diff", st->forward_diff);
  S(o, "result_json", st->result_json);
  R(o, "child_median_us", st->child_median_us);
  R(o, "child_speedup", st->child_speedup);
  json_object_set_new(o, "paired", paired_json(&st->paired));
  S(o, "skipped", st->skipped);
  I(o, "regs_rich", st->regs_rich);
  I(o, "regs_simple", st->regs_simple);
  I(o, "smem_rich", st->smem_rich);
  I(o, "smem_simple", st->smem_simple);
  I(o, "rederived", st->rederived);
  S(o, "rederive", st->rederive);
  S(o, "rederived_hash", st->rederived_hash);
  I(o, "feat_rich", st->feat_rich);
  I(o, "feat_simple", st->feat_simple);
  I(o, "feat_rederived", st->feat_rederived);
  I(o, "f_requires", st->f_requires);
  I(o, "f_conflicts", st->f_conflicts);
  I(o, "audited", st->audited);
  S(o, "audit_json", st->audit_json);
  json_object_set_new(o, "roundtrip", rt_json(&st->rt));
  return o;
}

static void step_load(const json_t *o, struct kv_lineage_step *st) {
  memset(st, 0, sizeof *st);
  st->ord = (int)gi(o, "ord");
  st->mech = (int)gi(o, "mech");
  gs(o, "verdict", st->verdict, sizeof st->verdict);
  gs(o, "detail", st->detail, sizeof st->detail);
  st->accepted = (int)gi(o, "accepted");
  st->admitted = (int)gi(o, "admitted");
  gs(o, "parent_hash", st->parent_hash, sizeof st->parent_hash);
  gs(o, "child_hash", st->child_hash, sizeof st->child_hash);
  st->child_src = gdup(o, "child_src");
  st->forward_diff = gdup(o, "forward_diff");
  st->result_json = gdup(o, "result_json");
  st->child_median_us = gr(o, "child_median_us");
  st->child_speedup = gr(o, "child_speedup");
  paired_load(json_object_get(o, "paired"), &st->paired);
  gs(o, "skipped", st->skipped, sizeof st->skipped);
  st->regs_rich = (int)gi(o, "regs_rich");
  st->regs_simple = (int)gi(o, "regs_simple");
  st->smem_rich = (long)gi(o, "smem_rich");
  st->smem_simple = (long)gi(o, "smem_simple");
  st->rederived = (int)gi(o, "rederived");
  gs(o, "rederive", st->rederive, sizeof st->rederive);
  gs(o, "rederived_hash", st->rederived_hash, sizeof st->rederived_hash);
  st->feat_rich = (uint32_t)gi(o, "feat_rich");
  st->feat_simple = (uint32_t)gi(o, "feat_simple");
  st->feat_rederived = (uint32_t)gi(o, "feat_rederived");
  st->f_requires = (uint32_t)gi(o, "f_requires");
  st->f_conflicts = (uint32_t)gi(o, "f_conflicts");
  st->audited = (int)gi(o, "audited");
  st->audit_json = gdup(o, "audit_json");
  rt_load(json_object_get(o, "roundtrip"), &st->rt);
}

json_t *skills_walk_json(const struct kv_lineage *L) {
  json_t *o = json_object(), *mechs = json_array(), *steps = json_array();
  I(o, "kevo_lineage_walk", CHECKPOINT_VERSION);
  S(o, "file", L->file);
  S(o, "surface", L->surface);
  S(o, "device", L->device);
  S(o, "arch", L->arch);
  S(o, "expert_hash", L->expert_hash);
  S(o, "expert_src", L->expert_src);
  S(o, "expert_json", L->expert_json);
  R(o, "expert_median_us", L->expert_median_us);
  R(o, "expert_speedup", L->expert_speedup);
  S(o, "key", L->key);
  S(o, "mode", L->mode);
  S(o, "stop", L->stop);
  S(o, "termination", L->termination);
  S(o, "cur", L->cur);
  I(o, "regs_cur", L->regs_cur);
  I(o, "smem_cur", L->smem_cur);
  I(o, "accepted_steps", L->accepted_steps);
  I(o, "rejections", L->rejections);
  I(o, "refused_in_row", L->refused_in_row);
  S(o, "feedback", L->feedback);
  S(o, "task_dir", L->task_dir);
  S(o, "spec_hash", L->spec_hash);
  for (int i = 0; i < L->annot.n; i++)
    json_array_append_new(mechs, mech_json(&L->annot.m[i]));
  for (int i = 0; i < L->nsteps; i++)
    json_array_append_new(steps, step_json(&L->steps[i]));
  json_object_set_new(o, "mechanisms", mechs);
  json_object_set_new(o, "steps", steps);
  return o;
}

int skills_walk_load(const json_t *o, struct kv_lineage *L, char *err, size_t errlen) {
  memset(L, 0, sizeof *L);
  json_int_t v = gi(o, "kevo_lineage_walk");
  if (v != CHECKPOINT_VERSION)
    return kv_error(err, errlen,
                    "kevo_lineage_walk: version %lld; this kevo reads checkpoints of version %d",
                    (long long)v, CHECKPOINT_VERSION);
  const json_t *mechs = json_object_get(o, "mechanisms"), *steps = json_object_get(o, "steps");
  if (json_array_size(mechs) > KV_MECH_MAX || json_array_size(steps) > KV_MECH_MAX ||
      !json_is_string(json_object_get(o, "cur")) ||
      !json_is_string(json_object_get(o, "expert_src")))
    return kv_error(err, errlen,
                    "not a walk kevo wrote: cur, expert_src, mechanisms or steps "
                    "missing or too many");
  gs(o, "file", L->file, sizeof L->file);
  gs(o, "surface", L->surface, sizeof L->surface);
  gs(o, "device", L->device, sizeof L->device);
  gs(o, "arch", L->arch, sizeof L->arch);
  gs(o, "expert_hash", L->expert_hash, sizeof L->expert_hash);
  L->expert_src = gdup(o, "expert_src");
  L->expert_resolved = gdup(o, "expert_src");
  L->expert_json = gdup(o, "expert_json");
  L->expert_median_us = gr(o, "expert_median_us");
  L->expert_speedup = gr(o, "expert_speedup");
  gs(o, "key", L->key, sizeof L->key);
  gs(o, "mode", L->mode, sizeof L->mode);
  gs(o, "stop", L->stop, sizeof L->stop);
  gs(o, "termination", L->termination, sizeof L->termination);
  L->cur = gdup(o, "cur");
  L->regs_cur = (int)gi(o, "regs_cur");
  L->smem_cur = (long)gi(o, "smem_cur");
  L->accepted_steps = (int)gi(o, "accepted_steps");
  L->rejections = (int)gi(o, "rejections");
  L->refused_in_row = (int)gi(o, "refused_in_row");
  gs(o, "feedback", L->feedback, sizeof L->feedback);
  gs(o, "task_dir", L->task_dir, sizeof L->task_dir);
  gs(o, "spec_hash", L->spec_hash, sizeof L->spec_hash);
  L->annot.n = (int)json_array_size(mechs);
  for (int i = 0; i < L->annot.n; i++)
    mech_load(json_array_get(mechs, (size_t)i), &L->annot.m[i]);
  L->nsteps = (int)json_array_size(steps);
  for (int i = 0; i < L->nsteps; i++) {
    step_load(json_array_get(steps, (size_t)i), &L->steps[i]);
    if (L->steps[i].mech < 0 || L->steps[i].mech >= L->annot.n)
      return kv_error(err, errlen, "steps[%d].mech: %d is not a mechanism of the walk", i,
                      L->steps[i].mech);
  }
  if (!L->expert_src || !L->cur)
    return kv_error(err, errlen, "out of memory");
  return 0;
}
