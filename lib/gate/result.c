/* A judgement's result JSON (kv_gate_result_json) back into a result: what
 * a gate server on another host sent, or what the store recorded (kevo
 * resume, kevo analyze). Outside input: strings are capped, counts bounded,
 * unknown verdicts refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/gate.h"
#include "kevo/sass.h"
#include "kevo/util.h"

static void str_into(json_t *o, const char *key, char *out, size_t cap) {
  const char *s = json_string_value(json_object_get(o, key));
  snprintf(out, cap, "%s", s ? s : "");
}

static char *str_dup_capped(json_t *o, const char *key, size_t cap) {
  const char *s = json_string_value(json_object_get(o, key));
  return s && *s ? strndup(s, cap) : NULL;
}

static double num(json_t *o, const char *key) {
  double v = json_number_value(json_object_get(o, key));
  return v == v ? v : 0; /* no NaN from a number jansson would not give anyway */
}

static void stats_of(json_t *o, struct kv_stats *s) {
  s->n = (int)json_integer_value(json_object_get(o, "n"));
  s->median_us = num(o, "median_us");
  s->iqr_us = num(o, "iqr_us");
  s->cv = num(o, "cv");
  s->min_us = num(o, "min_us");
  s->mean_us = num(o, "mean_us");
}

/* "compile": its seconds, log and each kernel's resources; "static": the
 * static analysis. */
static void compile_of(json_t *j, struct kv_gate_result *r) {
  json_t *c = json_object_get(j, "compile");
  r->compile_s = num(c, "seconds");
  r->compile_cached = json_is_true(json_object_get(c, "cached"));
  r->compile_log = str_dup_capped(c, "log", KV_LOG_CAP);
  size_t i;
  json_t *k;
  json_array_foreach(json_object_get(c, "kernels"), i, k) {
    if (r->nkernels >= KV_MAX_KERNELS)
      break;
    struct kv_kernel_res *kr = &r->kernels[r->nkernels++];
    str_into(k, "name", kr->name, sizeof kr->name);
    kr->registers = (int)json_integer_value(json_object_get(k, "registers"));
    kr->barriers = (int)json_integer_value(json_object_get(k, "barriers"));
    kr->smem_bytes = (long)json_integer_value(json_object_get(k, "smem_bytes"));
    kr->cmem_bytes = (long)json_integer_value(json_object_get(k, "cmem_bytes"));
    kr->stack_bytes = (long)json_integer_value(json_object_get(k, "stack_bytes"));
    kr->spill_store_bytes = (long)json_integer_value(json_object_get(k, "spill_store_bytes"));
    kr->spill_load_bytes = (long)json_integer_value(json_object_get(k, "spill_load_bytes"));
    /* cuda: its instruction mix (kevo/sass.h) */
    kr->has_sass = kv_sass_mix_from_json(json_object_get(k, "static"), &kr->sass) == 0;
  }
  json_t *sa = json_object_get(j, "static");
  if (json_is_object(sa)) {
    r->static_done = json_is_true(json_object_get(sa, "done"));
    r->static_s = num(sa, "seconds");
    str_into(sa, "note", r->static_note, sizeof r->static_note);
    r->sass = str_dup_capped(sa, "sass", KV_SASS_RAW_CAP);
  }
}

/* "checks", "seconds" and "timeline". */
static void checks_of(json_t *j, struct kv_gate_result *r) {
  size_t i;
  json_t *k;
  json_array_foreach(json_object_get(j, "checks"), i, k) {
    if (r->nchecks >= KV_GATE_MAX_CHECKS)
      break;
    struct kv_check *ck = &r->checks[r->nchecks++];
    str_into(k, "sizes", ck->sizes, sizeof ck->sizes);
    str_into(k, "detail", ck->detail, sizeof ck->detail);
    ck->seed = (uint64_t)json_integer_value(json_object_get(k, "seed"));
    int cv = kv_verdict_from_name(json_string_value(json_object_get(k, "verdict")));
    ck->verdict = cv >= 0 ? (enum kv_verdict)cv : KV_V_WRONG_OUTPUT;
    ck->max_abs_err = num(k, "max_abs_err");
    ck->max_rel_err = num(k, "max_rel_err");
  }
  json_t *s = json_object_get(j, "seconds");
  r->check_s = num(s, "check");
  r->time_s = num(s, "timing");
  r->lock_wait_s = num(s, "lock_wait");
  json_array_foreach(json_object_get(j, "timeline"), i, k) {
    const char *w = json_string_value(json_array_get(k, 0));
    if (r->nmarks >= KV_MARKS_MAX || !w)
      break;
    struct kv_mark *m = &r->marks[r->nmarks++];
    snprintf(m->what, sizeof m->what, "%s", w);
    m->at_s = json_number_value(json_array_get(k, 1));
  }
}

/* timing's "clock" (kevo's bound on the candidate's times), "ci" (the
 * speedup's interval, kevo/timeci.h), "torch_lead" and "stages". */
static void clock_of(json_t *t, struct kv_timing *tm) {
  json_t *cl = json_object_get(t, "clock");
  tm->phases = (int)json_integer_value(json_object_get(cl, "phases"));
  tm->calls_per_phase = (int)json_integer_value(json_object_get(cl, "calls_per_phase"));
  tm->validated_calls = (int)json_integer_value(json_object_get(cl, "validated_calls"));
  tm->parent_us = num(cl, "parent_us_per_call");
  tm->clock_ratio = num(cl, "reported_over_parent");
  tm->clock_slack_us = num(cl, "slack_us_per_call");
  tm->cand_phase_us = num(cl, "cand_phase_us");
  tm->empty_phase_us = num(cl, "empty_phase_us");
  tm->empty_beside_phase_us = num(cl, "empty_beside_phase_us");
  tm->cand_clamped = json_is_true(json_object_get(cl, "median_raised"));
  tm->clock_blind = json_is_true(json_object_get(cl, "blind"));
  json_t *ci = json_object_get(t, "ci");
  tm->ci_level = num(ci, "level");
  tm->speedup_lo = num(ci, "low");
  tm->speedup_hi = num(ci, "high");
  tm->ci_half_width = num(ci, "half_width");
  tm->ci_clock_half_width =
      json_is_number(json_object_get(ci, "clock_half_width")) ? num(ci, "clock_half_width") : -1;
  tm->ci_target = num(ci, "target");
  str_into(ci, "stop", tm->stop, sizeof tm->stop);
  tm->min_phases = (int)json_integer_value(json_object_get(ci, "min_phases"));
  tm->max_phases = (int)json_integer_value(json_object_get(ci, "max_phases"));
  json_t *tl = json_object_get(t, "torch_lead");
  tm->torch_lead_us = num(tl, "us");
  tm->torch_uncovered = (int)json_integer_value(json_object_get(tl, "uncovered_calls"));
  json_t *sg = json_object_get(t, "stages");
  tm->stage_warmup_s = num(sg, "warmup");
  tm->stage_loop_s = num(sg, "loop");
  tm->stage_validate_s = num(sg, "validate");
  tm->stage_alone_s = num(sg, "alone");
}

/* "timing", where the candidate was timed. */
static void timing_of(json_t *t, struct kv_gate_result *r) {
  struct kv_timing *tm = &r->timing;
  r->timed = 1;
  str_into(t, "sizes", tm->sizes, sizeof tm->sizes);
  str_into(t, "method", tm->method, sizeof tm->method);
  tm->kb_kept = json_is_true(json_object_get(json_object_get(t, "kernelbench"), "inputs_kept"));
  stats_of(json_object_get(t, "candidate"), &tm->cand);
  stats_of(json_object_get(t, "reference"), &tm->ref);
  stats_of(json_object_get(t, "reference_alone"), &tm->ref_alone);
  tm->ref_from_alone = json_is_true(json_object_get(t, "reference_from_alone"));
  tm->ref_beside_us = tm->ref_from_alone ? num(t, "reference_beside_median_us") : 0;
  tm->cand.median_us = num(t, "median_us");
  tm->ref.median_us = num(t, "reference_median_us");
  tm->speedup = num(t, "speedup");
  tm->bytes = num(t, "bytes");
  tm->flops = num(t, "flops");
  tm->gbs = num(t, "gbs");
  tm->gflops = num(t, "gflops");
  tm->roofline = num(t, "roofline_fraction");
  tm->wall_s = num(t, "wall_s");
  tm->covered_s = num(t, "covered_s");
  json_t *b = json_object_get(t, "baseline");
  if (json_is_object(b)) {
    tm->has_baseline = 1;
    stats_of(b, &tm->base);
    str_into(t, "baseline_kind", tm->baseline_kind, sizeof tm->baseline_kind);
    tm->baseline_compile_s = num(t, "baseline_compile_s");
    tm->speedup_vs_baseline = num(t, "speedup_vs_baseline");
  }
  json_t *db = json_object_get(t, "do_bench");
  if (json_is_object(db)) {
    tm->ref_do_bench_us = num(db, "reference_us");
    tm->base_do_bench_us = num(db, "baseline_us");
    str_into(db, "why", tm->do_bench_why, sizeof tm->do_bench_why);
  }
  clock_of(t, tm);
  size_t i;
  json_t *k;
  json_array_foreach(json_object_get(t, "per_size"), i, k) {
    if (tm->nsizes >= KV_MAX_BENCH)
      break;
    struct kv_size_timing *z = &tm->size[tm->nsizes++];
    str_into(k, "sizes", z->sizes, sizeof z->sizes);
    z->cand_us = num(k, "median_us");
    z->ref_us = num(k, "reference_median_us");
    z->speedup = num(k, "speedup");
    z->lo = num(k, "low");
    z->hi = num(k, "high");
    z->stages_s = num(k, "seconds");
  }
}

int kv_gate_result_from_json(const char *json, struct kv_gate_result *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  json_error_t je;
  json_t *j = json_loads(json ? json : "", 0, &je);
  if (!json_is_object(j)) {
    json_decref(j);
    return kv_error(err, errlen, "a verdict's result is not a JSON object (%s)", je.text);
  }
  const char *v = json_string_value(json_object_get(j, "verdict"));
  int vi = v ? kv_verdict_from_name(v) : -1;
  if (vi < 0) {
    kv_error(err, errlen,
             "a verdict's result has no verdict kevo knows (\"%.40s\"): it was written by "
             "another kevo version; run the same kevo version on every host",
             v ? v : "");
    json_decref(j);
    return -1;
  }
  r->verdict = (enum kv_verdict)vi;
  str_into(j, "detail", r->detail, sizeof r->detail);
  str_into(j, "surface", r->surface, sizeof r->surface);
  str_into(j, "device", r->device, sizeof r->device);
  str_into(j, "source_sha256", r->source_hash, sizeof r->source_hash);
  compile_of(j, r);
  /* The profiler's and the debugger's (kevo/ncu.h, kevo/sanitize.h). */
  r->profile = kv_ncu_from_json(json_object_get(j, "profile"));
  r->profile_ref = kv_ncu_from_json(json_object_get(j, "profile_ref"));
  r->debug = kv_san_from_json(json_object_get(j, "debug"));
  checks_of(j, r);
  json_t *t = json_object_get(j, "timing");
  if (json_is_object(t))
    timing_of(t, r);
  json_t *ce = json_object_get(j, "ceilings");
  if (json_is_object(ce)) {
    str_into(ce, "device", r->calib.device, sizeof r->calib.device);
    r->calib.bandwidth_gbs = num(ce, "bandwidth_gbs");
    r->calib.fma_gflops = num(ce, "fma_gflops");
  }
  r->cand_stdout = str_dup_capped(j, "stdout", KV_OUTPUT_CAP);
  r->cand_stderr = str_dup_capped(j, "stderr", KV_OUTPUT_CAP);
  r->stdout_truncated = json_is_true(json_object_get(j, "stdout_truncated"));
  r->stderr_truncated = json_is_true(json_object_get(j, "stderr_truncated"));
  json_decref(j);
  return 0;
}

int kv_side_note(const struct kv_timing *t, int baseline, char *out, size_t cap) {
  if (cap)
    out[0] = 0;
  double db = baseline ? t->base_do_bench_us : t->ref_do_bench_us;
  double us = baseline ? t->base.median_us : t->ref.median_us;
  if (!(db > 0) || !(us > 0) || (baseline && !t->has_baseline))
    return 0;
  double off = us / db - 1;
  if (fabs(off) <= KV_DO_BENCH_TOL)
    return 0;
  snprintf(out, cap, " (kevo's %s time %.1f%% %s do_bench: not comparable)",
           baseline ? "compile" : "eager", 100 * fabs(off), off > 0 ? "above" : "below");
  return 1;
}

int kv_side_note_json(struct json_t *timing, int baseline, char *out, size_t cap) {
  struct kv_timing t;
  memset(&t, 0, sizeof t);
  json_t *db = json_object_get(timing, "do_bench");
  if (cap)
    out[0] = 0;
  if (!json_is_object(timing) || !json_is_object(db))
    return 0;
  t.ref.median_us = num(timing, "reference_median_us");
  t.base.median_us = num(timing, "baseline_median_us");
  t.has_baseline = json_is_object(json_object_get(timing, "baseline"));
  t.ref_do_bench_us = num(db, "reference_us");
  t.base_do_bench_us = num(db, "baseline_us");
  return kv_side_note(&t, baseline, out, cap);
}
