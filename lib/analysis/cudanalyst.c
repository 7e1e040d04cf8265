/* kevo analyze as CUDAnalyst released it (yuxuan-z19/cudanalyst): the tool
 * players (Debugger, Analyzer, Profiler) made on the parent judged again,
 * status-gated; their reports to a planner once per (node, coalition,
 * rollout); the plan and the reports injected into the child's recorded
 * prompt; k samples a rollout, scored by the best (kevo/analysis.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"
#include "kevo/llm.h"
#include "kevo/ncu.h"
#include "kevo/reply.h"
#include "kevo/sanitize.h"
#include "kevo/surface.h"
#include "kevo/util.h"

#define REPORT_MAX 6000
#define PLAN_MAX 4000
#define RECORDED_MAX (256u << 10)
#define ANCHOR "## Earlier attempts"

static const char *const tool_names[] = {"", "debugger", "analyzer", "profiler"};
static const char *const titles[] = {"Error", "Debugger", "Analyzer", "Profiler"};

static const char planner_default[] =
    "You are the planning agent for the next version of the kernel below. From the diagnostic "
    "reports, give a prioritised plan: correctness problems first, then the main performance "
    "bottleneck, then fine-tuning; note where two changes would conflict.\n\n## Current kernel\n"
    "```\n{{code}}\n```\n\n## Planning context\n{{context}}\nAnswer with a `## Plan` section "
    "only: at most three numbered steps.\n";

int kva_an_tool_of(const char *name) {
  for (int t = 1; t < 4; t++)
    if (name && !strcmp(name, tool_names[t]))
      return t;
  return 0;
}

int kva_an_tool_has_data(const struct frozen *f, int tool) {
  return tool > 0 && tool < 4 && f->report[tool] && f->report[tool][0];
}

void kva_an_frozen_release(struct frozen *f) {
  if (f->re) {
    kv_gate_result_release(f->re);
    free(f->re);
  }
  for (int t = 0; t < 4; t++)
    free(f->report[t]);
  free(f->recorded);
  f->re = NULL;
  f->recorded = NULL;
  memset(f->report, 0, sizeof f->report);
}

/* ---- the parent judged again, its reports ------------------------------- */

static struct kv_gate_result *rejudge(struct an *a, const char *code, char *err, size_t errlen) {
  char cache[PATH_MAX - 64], dir[PATH_MAX - 32], path[PATH_MAX];
  if (a->o->g->cache_dir)
    snprintf(cache, sizeof cache, "%s", a->o->g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    cache[0] = 0;
  if (!cache[0] || kv_mkdtemp(cache, "analyze", dir, sizeof dir, err, errlen) < 0) {
    kv_error(err, errlen, "analyze: cannot make a scratch directory in the cache");
    return NULL;
  }
  snprintf(path, sizeof path, "%s/parent.%s", dir, kv_surface_ext(kv_surface_find(a->surface)));
  struct kv_gate_result *r = calloc(1, sizeof *r);
  struct kv_gate_opts g = *a->o->g;
  g.surface = a->surface;
  if (!strcmp(a->surface, "cuda")) /* the Profiler on a pass, the Debugger on a failure */
    g.profile = g.debug = 1;
  int rc = r ? kv_write_file(path, code, strlen(code), err, errlen) : -1;
  if (rc == 0)
    rc = kv_gate_eval(a->task, path, &g, r, err, errlen);
  kv_rmtree(dir);
  if (rc == 0) {
    a->gate_evals++;
    return r;
  }
  if (r)
    kv_gate_result_release(r);
  free(r);
  return NULL;
}

static char *capped_dup(const char *s, size_t cap) {
  size_t n = strlen(s);
  char *d = malloc((n < cap ? n : cap) + 16);
  if (d)
    snprintf(d, (n < cap ? n : cap) + 16, "%.*s%s", (int)(n < cap ? n : cap), s,
             n > cap ? "\n(cut)" : "");
  return d;
}

/* The reports of f's parent, status-gated as CUDAnalyst's pipeline: a
 * failing parent gets the Error report and the Debugger's; a passing one the
 * Analyzer's and the Profiler's. */
static void make_reports(struct frozen *f) {
  const struct kv_gate_result *r = f->re;
  char buf[REPORT_MAX];
  if (r->verdict != KV_V_OK) {
    snprintf(buf, sizeof buf, "%s: %s", kv_verdict_name(r->verdict), r->detail);
    f->report[0] = strdup(buf);
    struct kv_buf b;
    kv_buf_init(&b, REPORT_MAX);
    if (r->compile_log && *r->compile_log)
      kv_buf_appendf(&b, "Compiler diagnostics:\n%.*s\n", KV_PROMPT_LOG_MAX, r->compile_log);
    if (r->debug) {
      kv_san_summary(r->debug, buf, sizeof buf);
      kv_buf_appendf(&b, "compute-sanitizer:\n%s\n", buf);
    }
    f->report[KVA_AN_DEBUGGER] = b.len ? kv_buf_detach(&b) : NULL;
    kv_buf_release(&b);
    return;
  }
  if (kv_an_loop_nests(f->parent_code, buf, sizeof buf) > 0)
    f->report[KVA_AN_ANALYZER] = strdup(buf);
  if (r->profile && r->profile->nkernels > 0) {
    kv_ncu_summary(r->profile, buf, sizeof buf);
    f->report[KVA_AN_PROFILER] = strdup(buf);
  }
}

/* ---- the child's recorded prompt ------------------------------------------- */

struct recorded_scan {
  struct an *a;
};

/* The last user message of a recorded request (OpenAI's or Anthropic's
 * shape), malloc'd, or NULL. */
static char *last_user_message(const char *request_json) {
  json_t *j = json_loads(request_json ? request_json : "", 0, NULL);
  json_t *msgs = json_object_get(j, "messages");
  const char *text = NULL;
  for (size_t i = json_array_size(msgs); i > 0 && !text; i--) {
    json_t *m = json_array_get(msgs, i - 1);
    const char *role = json_string_value(json_object_get(m, "role"));
    json_t *c = json_object_get(m, "content");
    if (!role || strcmp(role, "user"))
      continue;
    text = json_is_string(c) ? json_string_value(c)
                             : json_string_value(json_object_get(json_array_get(c, 0), "text"));
  }
  char *out = text ? capped_dup(text, RECORDED_MAX) : NULL;
  json_decref(j);
  return out;
}

static int recorded_cb(void *arg, const struct kv_llm_call_row *row) {
  struct recorded_scan *rs = arg;
  if (!row->role || strcmp(row->role, "coder") || row->node_id <= 0)
    return 0;
  for (int i = 0; i < rs->a->nfz; i++) {
    struct frozen *f = &rs->a->fz[i];
    if (f->node_id != row->node_id)
      continue;
    char *t = last_user_message(row->request_json);
    if (t) { /* the last call that wrote the node */
      free(f->recorded);
      f->recorded = t;
    }
  }
  return 0;
}

int kva_an_recompute(struct an *a, int judge_parents, char *err, size_t errlen) {
  if (a->o->frozen_recorded) {
    struct recorded_scan rs = {a};
    if (kv_store_list_llm_calls(a->st, 0, 0, recorded_cb, &rs, err, errlen) < 0)
      return -1;
    for (int i = 0; i < a->nfz; i++)
      if (!a->fz[i].recorded)
        return kv_error(err, errlen,
                        "--frozen recorded: run %lld's step %d has no recorded coder prompt in "
                        "the store (llm_calls); use --frozen rebuilt",
                        (long long)a->o->run_id, a->fz[i].step);
  }
  for (int i = 0; judge_parents && i < a->nfz; i++) {
    struct frozen *f = &a->fz[i];
    int same = -1;
    for (int p = 0; p < i && same < 0; p++) /* one parent of several nodes: judged once */
      if (a->fz[p].parent_code == f->parent_code)
        same = p;
    if (same >= 0) {
      for (int t = 0; t < 4; t++)
        f->report[t] = a->fz[same].report[t] ? strdup(a->fz[same].report[t]) : NULL;
      continue;
    }
    f->re = rejudge(a, f->parent_code, err, errlen);
    if (!f->re)
      return -1;
    make_reports(f);
    kv_gate_result_release(f->re);
    free(f->re);
    f->re = NULL;
  }
  return 0;
}

/* ---- a sample --------------------------------------------------------------- */

/* The planning context (CUDAnalyst's SUMMARY_MAP sections) of the reports
 * coalition q has, and the decision section given the plan. */
static void contexts(const struct frozen *f, const struct cond *q, const char *plan,
                     struct kv_buf *ctx, struct kv_buf *dec) {
  for (int t = 0; t < 4; t++) {
    if (!f->report[t] || !f->report[t][0] || (t > 0 && !(q->tools & (1u << t))))
      continue;
    kv_buf_appendf(ctx, "### %s Context\n%s\n", titles[t], f->report[t]);
  }
  const char *p = plan ? plan : ctx->len ? ctx->data : NULL;
  if (!p && !ctx->len)
    return;
  kv_buf_appendf(dec, "# Plan Decision\n\n");
  if (p && *p)
    kv_buf_appendf(dec, "## Planner\nPlan decision: %s\n\n", p);
  for (int t = 0; t < 4; t++)
    if (f->report[t] && f->report[t][0] && (t == 0 || (q->tools & (1u << t))))
      kv_buf_appendf(dec, "## %s\nPlan decision: %s\n\n", titles[t], f->report[t]);
}

/* The plan of (node fi, condition c, rollout r): remembered, recorded with a
 * sample of the rollout, or asked. *plan malloc'd. */
static int plan_of(struct an *a, int fi, int c, int r, const char *ctx, char **plan, int64_t *call,
                   char *err, size_t errlen) {
  long key = ((long)fi * a->ncond + c) * a->rollouts + r + 1;
  size_t base = ((size_t)fi * (size_t)a->ncond + (size_t)c) * (size_t)a->k + (size_t)r * a->per;
  for (int t = 0; a->ca_key != key && t < a->per; t++) {
    struct kv_llm_call_row row;
    if (a->pcall[base + t] <= 0 ||
        kv_store_get_llm_call(a->st, a->pcall[base + t], &row, NULL, 0) < 0)
      continue;
    if (row.reply_text) {
      free(a->ca_plan);
      a->ca_plan = capped_dup(row.reply_text, PLAN_MAX);
      a->ca_key = key;
      *call = a->pcall[base + t];
    }
    kv_llm_call_row_release(&row);
  }
  if (a->ca_key != key) {
    char *tmpl =
        kv_prompt_template(NULL, "analyze_planner", "code context", planner_default, err, errlen);
    const char *pairs[] = {"code", a->fz[fi].parent_code, "context", ctx, NULL};
    char *prompt = tmpl ? kv_prompt_fill(tmpl, pairs) : NULL, *text = NULL;
    free(tmpl);
    int rc = prompt
                 ? kva_an_ask(a, a->o->llm, "analyze:planner", prompt, r, &text, call, err, errlen)
                 : -1;
    free(prompt);
    if (rc != 0)
      return rc;
    free(a->ca_plan);
    a->ca_plan = capped_dup(text, PLAN_MAX);
    free(text);
    a->ca_key = key;
  } else if (*call <= 0) {
    for (int t = 0; t < a->per && *call <= 0; t++)
      *call = a->pcall[base + t];
  }
  *plan = a->ca_plan ? strdup(a->ca_plan) : NULL;
  return *plan ? 0 : kv_error(err, errlen, "out of memory");
}

/* The coder's prompt: the decision injected into the recorded prompt before
 * its history (CUDAnalyst: before "# Program Evolution History"), else at
 * its end; or the prompt rebuilt with the decision as its plan block. */
static char *coder_prompt(struct an *a, const struct frozen *f, const struct cond *q,
                          const char *dec, char *err, size_t errlen) {
  if (!a->o->frozen_recorded)
    return kva_an_prompt_of(a, f, q, f->kind, dec && *dec ? dec : NULL, err, errlen);
  struct kv_buf b;
  kv_buf_init(&b, KV_PROMPT_MAX);
  const char *rec = f->recorded, *at = dec && *dec ? strstr(rec, ANCHOR) : NULL;
  size_t head = at ? (size_t)(at - rec) : strlen(rec);
  while (head > 0 && (rec[head - 1] == '\n' || rec[head - 1] == ' '))
    head--;
  kv_buf_append(&b, rec, head);
  if (dec && *dec)
    kv_buf_appendf(&b, "\n\n%s", dec);
  if (at)
    kv_buf_appendf(&b, "\n%s", at);
  else if (!(dec && *dec))
    kv_buf_append(&b, rec + head, strlen(rec + head));
  return kv_buf_detach(&b);
}

static int sample_rest(struct an *a, int fi, const struct cond *q, struct kv_analysis_sample *s,
                       const char *prompt, char *err, size_t errlen);

int kva_an_sample_ca(struct an *a, int fi, int c, int j, char *err, size_t errlen) {
  struct frozen *f = &a->fz[fi];
  struct cond q;
  kva_an_cond_of(a, c, &q);
  struct kv_buf ctx, dec;
  kv_buf_init(&ctx, 64u << 10);
  kv_buf_init(&dec, 64u << 10);
  contexts(f, &q, NULL, &ctx, &dec);
  char *plan = NULL;
  int64_t pcall = 0;
  int rc = 0;
  if (a->o->planner == 1) {
    rc = plan_of(a, fi, c, j / a->per, ctx.len ? ctx.data : "", &plan, &pcall, err, errlen);
    kv_buf_reset(&dec);
    kv_buf_reset(&ctx);
    if (rc == 0)
      contexts(f, &q, plan, &ctx, &dec);
  }
  char *prompt = rc == 0 ? coder_prompt(a, f, &q, dec.len ? dec.data : NULL, err, errlen) : NULL;
  kv_buf_release(&ctx);
  kv_buf_release(&dec);
  free(plan);
  if (!prompt)
    return rc ? rc : -1;
  struct kv_analysis_sample s = {0};
  s.analysis_id = a->analysis_id;
  s.node_id = f->node_id;
  s.cond = c;
  s.sample = j;
  s.plan_call_id = pcall;
  rc = sample_rest(a, fi, &q, &s, prompt, err, errlen);
  free(prompt);
  return rc;
}

/* The same prompt asked already at this node and sample index: the same
 * sample; else the coder asked and its kernel judged. */
static int sample_rest(struct an *a, int fi, const struct cond *q, struct kv_analysis_sample *s,
                       const char *prompt, char *err, size_t errlen) {
  char ph[65], vbuf[32], hbuf[65];
  struct kv_buf hb;
  kv_buf_init(&hb, KV_PROMPT_MAX + 256);
  const struct kv_llm_model *mm = kv_llm_model_of(q->llm);
  kv_buf_appendf(&hb, "ca|%s|%s|", mm->provider, mm->model);
  kv_buf_append(&hb, prompt, strlen(prompt));
  kv_sha256_hex(hb.data ? hb.data : "", hb.len, ph);
  kv_buf_release(&hb);
  s->prompt_hash = ph;
  struct kv_analysis_sample same;
  int found = kv_store_analysis_same_prompt(a->st, a->analysis_id, s->node_id, ph, s->sample, &same,
                                            vbuf, hbuf, err, errlen);
  if (found < 0)
    return -1;
  if (found) {
    same.analysis_id = s->analysis_id;
    same.node_id = s->node_id;
    same.cond = s->cond;
    same.sample = s->sample;
    same.prompt_hash = ph;
    same.plan_call_id = s->plan_call_id;
    return kva_an_put(a, fi, &same, err, errlen);
  }
  char *text = NULL, verdict[32] = "no_code", hash[65] = "";
  double speedup = -1;
  int cached = 0;
  int rc =
      kva_an_ask(a, q->llm, "analyze:coder", prompt, s->sample, &text, &s->call_id, err, errlen);
  if (rc != 0)
    return rc;
  struct kv_reply rp;
  if (kv_reply_parse(text, strlen(text), a->task->entry, &rp, NULL, 0) == 0) {
    s->plan_tags = kv_an_plan_tags(rp.plan);
    rc = kva_an_judge(a, rp.code, hash, verdict, sizeof verdict, &speedup, &cached, err, errlen);
    kv_reply_release(&rp);
  } else
    s->plan_tags = kv_an_plan_tags(text);
  free(text);
  if (rc != 0)
    return rc;
  s->source_hash = hash[0] ? hash : NULL;
  s->verdict = verdict;
  s->speedup = speedup;
  s->gate_cached = cached;
  return kva_an_put(a, fi, s, err, errlen);
}

int kva_an_best_of_k(double *y, int nnodes, int ncond, int rollouts, int per) {
  size_t cells = (size_t)nnodes * (size_t)ncond;
  for (size_t c = 0; c < cells; c++)
    for (int r = 0; r < rollouts; r++) {
      double best = -INFINITY;
      for (int j = 0; j < per; j++) {
        double v = y[(c * (size_t)rollouts + (size_t)r) * (size_t)per + (size_t)j];
        best = isnan(v) || isnan(best) ? NAN : v > best ? v : best;
      }
      y[c * (size_t)rollouts + (size_t)r] = best;
    }
  return rollouts;
}
