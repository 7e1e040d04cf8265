/* kevo analyze: freeze a recorded run, inject feedback selectively, sample,
 * gate, record, attribute (see kevo/analysis.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/analysis.h"
#include "kevo/llm.h"
#include "kevo/prompt.h"
#include "kevo/reply.h"
#include "kevo/rules.h"
#include "kevo/run.h"
#include "kevo/task.h"
#include "kevo/surface.h"
#include "kevo/util.h"
#include "internal.h"

#define SOURCE_MAX (1 << 20)
#define MAX_LLM_TRIES 3

static const int player_blocks[] = {KV_PB_PERFORMANCE, KV_PB_PROFILE, KV_PB_RULES, KV_PB_HISTORY,
                                    KV_PB_STATIC};
/* Named only (not in "every player the run had"): CUDAnalyst's released
 * code keeps them in every prompt. */
static const int named_blocks[] = {KV_PB_COMPILE, KV_PB_CORRECTNESS};

/* ---- a recorded judgement, rebuilt ---------------------------------------- */

static void fb_free(struct kv_gate_result *r) {
  if (!r)
    return;
  kv_gate_result_release(r);
  free(r);
}

/* What the search kept of a judgement for its prompts (search.c's
 * feedback_of), from the evaluation's result JSON: its failing checks, the
 * first KV_PROMPT_MISMATCH_MAX, and the rest as recorded. */
static struct kv_gate_result *fb_from_json(const char *verdict, const char *detail,
                                           const char *text) {
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  if (kv_gate_result_from_json(text, r, NULL, 0) < 0)
    snprintf(r->detail, sizeof r->detail, "%s", detail ? detail : "");
  int v = verdict ? kv_verdict_from_name(verdict) : -1;
  r->verdict = v >= 0 ? (enum kv_verdict)v : KV_V_CRASH;
  int nf = 0;
  for (int i = 0; i < r->nchecks && nf < KV_PROMPT_MISMATCH_MAX; i++)
    if (r->checks[i].verdict != KV_V_OK)
      r->checks[nf++] = r->checks[i];
  r->nchecks = nf;
  free(r->cand_stdout);
  r->cand_stdout = NULL;
  return r;
}

static int has_data(const struct an *a, const struct frozen *f, int block) {
  switch (block) {
  case KV_PB_COMPILE:
    return f->fb->compile_log && *f->fb->compile_log &&
           (f->fb->verdict == KV_V_COMPILE_ERROR || f->fb->verdict == KV_V_POLICY_VIOLATION);
  case KV_PB_CORRECTNESS:
    return 1;
  case KV_PB_PERFORMANCE:
    return f->fb->verdict == KV_V_OK && f->fb->timed;
  case KV_PB_PROFILE:
    return f->fb->nkernels > 0;
  case KV_PB_RULES:
    return a->nrules > 0;
  case KV_PB_HISTORY:
    return f->nhist > 0;
  case KV_PB_STATIC:
    for (int i = 0; i < f->fb->nkernels; i++)
      if (f->fb->kernels[i].has_sass)
        return 1;
    return 0;
  }
  return 0;
}

/* ---- the run, frozen ------------------------------------------------------ */

static int row_of(const struct an *a, int64_t id) {
  for (int i = 0; i < a->nrows; i++)
    if (a->rows[i].id == id)
      return i;
  return -1;
}

/* A prompt block as a player, if the run's chosen nodes had it. */
static int add_block(struct an *a, const char *w, int blk, int summary, char *err, size_t errlen) {
  for (int i = 0; i < a->npl; i++)
    if (a->pl[i].block == blk)
      return kv_error(err, errlen, "--players: %s is named twice; name each block once", w);
  int any = 0;
  for (int i = 0; i < a->nfz; i++)
    any |= has_data(a, &a->fz[i], blk);
  if (!(a->run_mask & (1u << blk)) || !any)
    return kv_error(err, errlen,
                    "--players: run %lld never had a %s block in the prompts of the chosen "
                    "nodes (%s); choose players it had",
                    (long long)a->o->run_id, w,
                    !(a->run_mask & (1u << blk)) ? "--prompt-blocks switched it off"
                    : blk == KV_PB_PERFORMANCE   ? "no parent was accepted and timed"
                    : blk == KV_PB_PROFILE       ? "no parent had kernel resources: cuda only"
                    : blk == KV_PB_RULES         ? "no rule is active"
                    : blk == KV_PB_COMPILE       ? "no parent failed to compile"
                                                 : "no earlier attempts");
  struct player *pl = &a->pl[a->npl++];
  pl->block = blk;
  pl->summary = summary;
  snprintf(pl->name, sizeof pl->name, "%s%s", w, summary ? ":summary" : "");
  return 0;
}

/* A CUDAnalyst tool as a player, if it has a report at a chosen node. */
static int add_tool(struct an *a, const char *w, int tool, int summary, char *err, size_t errlen) {
  if (summary)
    return kv_error(err, errlen, "--players: %s:summary: a tool's report has one form; name %s", w,
                    w);
  for (int i = 0; i < a->npl; i++)
    if (a->pl[i].tool == tool)
      return kv_error(err, errlen, "--players: %s is named twice; name each player once", w);
  int any = 0;
  for (int i = 0; i < a->nfz; i++)
    any |= kva_an_tool_has_data(&a->fz[i], tool);
  if (!any)
    return kv_error(err, errlen,
                    "--players: %s has no report at any chosen node of run %lld (%s); choose "
                    "players it had",
                    w, (long long)a->o->run_id,
                    tool == KVA_AN_DEBUGGER ? "no parent failed with diagnostics to show"
                    : tool == KVA_AN_ANALYZER
                        ? "no parent passed with a loop in its code"
                        : "no parent passed under Nsight Compute: cuda with ncu only");
  struct player *pl = &a->pl[a->npl++];
  pl->block = -1;
  pl->tool = tool;
  snprintf(pl->name, sizeof pl->name, "%s", w);
  return 0;
}

static int parse_players(struct an *a, char *err, size_t errlen) {
  const char *list = a->o->players;
  char known[256] = "performance, profile, rules, history, static (each optionally :summary), "
                    "compile, correctness, and CUDAnalyst's " KV_AN_TOOLS;
  if (!list || !*list) { /* every player the run had */
    for (size_t b = 0; b < KV_ARRAY_LEN(player_blocks); b++) {
      int blk = player_blocks[b], any = 0;
      for (int i = 0; i < a->nfz; i++)
        any |= has_data(a, &a->fz[i], blk);
      if (any && (a->run_mask & (1u << blk))) {
        struct player *p = &a->pl[a->npl++];
        p->block = blk;
        snprintf(p->name, sizeof p->name, "%s", kv_prompt_block_name(blk));
      }
    }
    if (!a->npl)
      return kv_error(err, errlen,
                      "run %lld: its chosen nodes had no switchable feedback (%s) in their "
                      "prompts; choose other --generations",
                      (long long)a->o->run_id, known);
    return 0;
  }
  int count = 1;
  for (const char *p = list; *p; p++)
    count += *p == ',';
  if (count > KV_AN_MAX_PLAYERS)
    return kv_error(err, errlen,
                    "--players: %d players; exact attribution takes at most %d (2^n coalitions "
                    "each sampled): name fewer",
                    count, KV_AN_MAX_PLAYERS);
  for (const char *p = list; *p;) {
    size_t n = strcspn(p, ",");
    char w[64];
    snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
    char *colon = strchr(w, ':');
    int summary = 0;
    if (colon) {
      *colon = 0;
      if (!strcmp(colon + 1, "summary"))
        summary = 1;
      else if (strcmp(colon + 1, "raw"))
        return kv_error(err, errlen, "--players: '%s:%s': the form is raw or summary", w,
                        colon + 1);
    }
    int blk = -1, tool = kva_an_tool_of(w);
    for (size_t b = 0; b < KV_ARRAY_LEN(player_blocks); b++)
      if (!strcmp(w, kv_prompt_block_name(player_blocks[b])))
        blk = player_blocks[b];
    for (size_t b = 0; b < KV_ARRAY_LEN(named_blocks); b++)
      if (!strcmp(w, kv_prompt_block_name(named_blocks[b])))
        blk = named_blocks[b];
    int rc = tool      ? add_tool(a, w, tool, summary, err, errlen)
             : blk < 0 ? kv_error(err, errlen,
                                  "--players: '%s' is not a player; players are the switchable "
                                  "feedback blocks and CUDAnalyst's tools: %s (task and parent "
                                  "are always present)",
                                  w, known)
                       : add_block(a, w, blk, summary, err, errlen);
    if (rc < 0)
      return -1;
    p += n;
    if (*p == ',')
      p++;
  }
  if (!a->npl)
    return kv_error(err, errlen, "--players: the list is empty; name at least one player");
  return 0;
}

static int load_run(struct an *a, char *err, size_t errlen) {
  const struct kv_an_opts *o = a->o;
  struct kv_run_row run;
  if (kv_store_run_get(a->st, o->run_id, &run, err, errlen) < 0)
    return -1;
  a->task_id = run.task_id;
  json_t *cfg = json_loads(run.config_json ? run.config_json : "", 0, NULL);
  json_t *llm = json_object_get(cfg, "llm");
  int rc = 0;
  if (kv_run_strategy_needs_llm(run.strategy) != 1 || !json_is_object(llm) ||
      !json_object_get(llm, "prompt_mask")) {
    rc = kv_error(err, errlen,
                  "run %lld (strategy %s) has no recorded LLM prompts to freeze: it is a %s; "
                  "analyze a run of ada, greedy or best-of-n recorded by this kevo",
                  (long long)o->run_id, run.strategy ? run.strategy : "?",
                  kv_run_strategy_needs_llm(run.strategy) != 1
                      ? "run without an LLM"
                      : "run recorded with an older schema (no prompt settings)");
  }
  const char *dir = json_string_value(json_object_get(cfg, "task_dir"));
  const char *surf = json_string_value(json_object_get(cfg, "surface"));
  snprintf(a->surface, sizeof a->surface, "%s", surf ? surf : "cpu");
  if (rc == 0) {
    a->run_mask = (unsigned)json_integer_value(json_object_get(llm, "prompt_mask"));
    const char *pm = json_string_value(json_object_get(llm, "plan_mode"));
    a->plan_explicit = pm && !strcmp(pm, "explicit");
    const char *pdir = json_string_value(json_object_get(llm, "prompt_dir"));
    int thr = json_integer_value(json_object_get(llm, "rule_threshold")) > 0
                  ? (int)json_integer_value(json_object_get(llm, "rule_threshold"))
                  : 2;
    if (!dir)
      rc = kv_error(err, errlen, "run %lld: its configuration names no task_dir",
                    (long long)o->run_id);
    if (rc == 0 && kv_task_load(dir, &a->task, err, errlen) < 0)
      rc = -1;
    if (rc == 0 && kv_prompts_load(pdir, &a->prompts, err, errlen) < 0)
      rc = -1;
    if (rc == 0) {
      char path[PATH_MAX];
      snprintf(path, sizeof path, "%s/reference.%s", dir,
               kv_surface_ext(kv_surface_find(a->surface)));
      size_t len;
      if (kv_read_file(path, SOURCE_MAX, &a->reference, &len, NULL, 0) < 0)
        a->reference = NULL;
      struct kv_run_facts facts;
      if (kv_store_run_facts(a->st, o->run_id, &facts, NULL, 0) == 0) {
        snprintf(a->device, sizeof a->device, "%s", facts.device ? facts.device : "");
        kv_run_facts_release(&facts);
      }
      if (a->run_mask & (1u << KV_PB_RULES)) {
        char arch[32];
        kv_rules_arch_of(a->surface, a->device, arch, sizeof arch);
        kv_rules_active_for(a->st, thr, a->surface, arch, &a->rules, &a->nrules, NULL, 0);
      }
    }
  }
  json_decref(cfg);
  kv_run_row_release(&run);
  if (rc < 0)
    return -1;
  if (kv_store_run_nodes(a->st, o->run_id, &a->rows, &a->nrows, err, errlen) < 0)
    return -1;
  a->codes = calloc((size_t)a->nrows + 1, sizeof *a->codes);
  a->fbs = calloc((size_t)a->nrows + 1, sizeof *a->fbs);
  a->fz = calloc((size_t)a->nrows + 1, sizeof *a->fz);
  if (!a->codes || !a->fbs || !a->fz)
    return kv_error(err, errlen, "out of memory");
  for (int i = 0; i < a->nrows; i++) {
    const struct kv_node_row *w = &a->rows[i];
    if (!w->verdict || !strcmp(w->verdict, "no_code") || w->eval_id <= 0)
      continue;
    size_t len;
    a->codes[i] = kv_store_get_source(a->st, w->source_hash, &len);
    struct kv_eval_row ev;
    if (kv_store_get_eval(a->st, w->eval_id, &ev, NULL, 0) == 0) {
      a->fbs[i] = fb_from_json(w->verdict, ev.detail, ev.result_json);
      kv_eval_row_release(&ev);
    }
  }
  /* The chosen nodes: small steps (a parent with a judgement) in range. */
  for (int i = 0; i < a->nrows; i++) {
    const struct kv_node_row *w = &a->rows[i];
    if (w->step < o->gen_lo || (o->gen_hi >= 0 && w->step > o->gen_hi) || w->parent_id <= 0)
      continue;
    int p = row_of(a, w->parent_id);
    if (p < 0 || !a->fbs[p] || !a->codes[p])
      continue;
    struct frozen *f = &a->fz[a->nfz++];
    f->node_id = w->id;
    f->step = w->step;
    f->parent_step = a->rows[p].step;
    f->parent_code = a->codes[p];
    f->fb = a->fbs[p];
    f->plan = w->plan;
    f->kind = f->fb->verdict == KV_V_OK ? KV_PK_REFINE : KV_PK_DEBUG;
    /* History: the run's latest nodes before this one, newest first. */
    for (int h = i - 1; h >= 0 && f->nhist < MAX_HISTORY; h--) {
      const struct kv_node_row *x = &a->rows[h];
      int ok = x->verdict && !strcmp(x->verdict, "ok");
      f->hist[f->nhist++] = (struct kv_prompt_attempt){
          x->step, x->action, x->verdict ? x->verdict : "no_code", ok ? x->speedup : 0, NULL};
    }
    /* Misaligned feedback: the judgement of the evaluated node nearest in
     * steps to the parent, preferring one of another verdict. */
    int best = -1, bestd = INT_MAX, bestdiff = 0;
    for (int q = 0; q < a->nrows; q++) {
      if (q == p || !a->fbs[q])
        continue;
      int diff = a->fbs[q]->verdict != f->fb->verdict;
      int d = abs(a->rows[q].step - a->rows[p].step);
      if (diff > bestdiff || (diff == bestdiff && d < bestd)) {
        best = q;
        bestd = d;
        bestdiff = diff;
      }
    }
    f->mis = best >= 0 ? a->fbs[best] : NULL;
  }
  if (!a->nfz)
    return kv_error(err, errlen,
                    "run %lld: no node in steps %d..%d refines or debugs a judged parent "
                    "(roots and large steps have no feedback to vary); widen --generations",
                    (long long)o->run_id, o->gen_lo, o->gen_hi);
  return 0;
}

/* ---- sampling --------------------------------------------------------------- */

void kva_an_cond_of(const struct an *a, int c, struct cond *q) {
  unsigned base =
      (a->run_mask | (1u << KV_PB_COMPILE) | (1u << KV_PB_CORRECTNESS)) & ~(1u << KV_PB_PLAN);
  memset(q, 0, sizeof *q);
  q->llm = a->o->llm;
  if (!strcmp(a->exp, "shapley")) {
    q->mask = base;
    for (int i = 0; i < a->npl; i++) {
      if (a->pl[i].tool) {
        q->tools |= c & (1 << i) ? 1u << a->pl[i].tool : 0;
        continue;
      }
      q->mask &= ~(1u << a->pl[i].block);
      if (c & (1 << i)) {
        q->mask |= 1u << a->pl[i].block;
        if (a->pl[i].summary)
          q->summary |= 1u << a->pl[i].block;
      }
    }
    q->plan = a->plan_explicit;
  } else if (!strcmp(a->exp, "planning")) {
    q->mask = base;
    q->plan = c & 1;
    q->misaligned = !(c & 2);
  } else { /* transfer */
    q->mask = base;
    q->llm = a->o->target;
    q->plan = c == 0 ? 0 : c == 1 ? 1 : 2;
  }
}

static const char *cell_name(const char *exp, int c) {
  static const char *const planning[4] = {"no plan, misaligned", "plan, misaligned",
                                          "no plan, aligned", "plan, aligned"};
  static const char *const transfer[3] = {"no plan", "own plan", "transferred plan"};
  return !strcmp(exp, "planning") ? planning[c & 3] : transfer[c % 3];
}

char *kva_an_prompt_of(const struct an *a, const struct frozen *f, const struct cond *q,
                       enum kv_prompt_kind kind, const char *plan, char *err, size_t errlen) {
  struct kv_prompt_ctx c = {0};
  c.task = a->task;
  c.surface = a->surface;
  c.device = a->device;
  c.reference = a->reference;
  c.parent_code = f->parent_code;
  c.parent_step = f->parent_step;
  c.parent = q->misaligned && f->mis ? f->mis : f->fb;
  c.rules = (const char *const *)a->rules;
  c.nrules = a->nrules;
  c.history = f->hist;
  c.nhistory = f->nhist;
  c.plan = plan;
  c.summary_mask = q->summary;
  unsigned mask = q->mask | (plan ? 1u << KV_PB_PLAN : 0);
  return kv_prompt_build(a->prompts, kind, mask, &c, err, errlen);
}

/* One call, retried on failures other than the budget. *text malloc'd. */
int kva_an_ask(struct an *a, struct kv_llm *llm, const char *role, const char *prompt, int sample,
               char **text, int64_t *call_id, char *err, size_t errlen) {
  struct kv_llm_message m = {"user", prompt};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = role;
  q.system = kv_prompts_system(a->prompts);
  q.messages = &m;
  q.n_messages = 1;
  q.sample = sample;
  for (int t = 0; t < MAX_LLM_TRIES; t++) {
    struct kv_llm_result r;
    int rc = kv_llm_ask(llm, &q, &r);
    a->llm_calls++;
    if (rc == KV_LLM_OK && r.text) {
      *text = r.text;
      r.text = NULL;
      *call_id = r.call_id;
      kv_llm_result_release(&r);
      return 0;
    }
    kv_error(err, errlen, "%s call: %s", role, r.error);
    kv_llm_result_release(&r);
    if (rc == KV_LLM_EBUDGET || rc == KV_LLM_ENOTRECORDED || rc == KV_LLM_EUSAGE ||
        rc == KV_LLM_ENOKEY || rc == KV_LLM_EAUTH)
      return rc;
  }
  return -1;
}

/* Judges code (cached by source hash): verdict and speedup. */
int kva_an_judge(struct an *a, const char *code, char hash[65], char *verdict, size_t vcap,
                 double *speedup, int *cached, char *err, size_t errlen) {
  size_t len = strlen(code);
  kv_sha256_hex(code, len, hash);
  int timed = a->o->g->timing != 0;
  int got = kv_store_analysis_gate_get(a->st, a->task_id, a->surface, timed, hash, verdict, vcap,
                                       speedup, err, errlen);
  if (got < 0)
    return -1;
  if (got) {
    *cached = 1;
    a->gate_cached++;
    return 0;
  }
  *cached = 0;
  char cache[PATH_MAX - 64], dir[PATH_MAX - 32], path[PATH_MAX];
  if (a->o->g->cache_dir)
    snprintf(cache, sizeof cache, "%s", a->o->g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    cache[0] = 0;
  if (!cache[0] || kv_mkdtemp(cache, "analyze", dir, sizeof dir, err, errlen) < 0)
    return kv_error(err, errlen, "analyze: cannot make a scratch directory in the cache");
  snprintf(path, sizeof path, "%s/candidate.%s", dir, kv_surface_ext(kv_surface_find(a->surface)));
  struct kv_gate_result *r = calloc(1, sizeof *r);
  int rc = r ? kv_write_file(path, code, len, err, errlen) : kv_error(err, errlen, "no memory");
  struct kv_gate_opts g = *a->o->g;
  g.surface = a->surface;
  if (rc == 0)
    rc = kv_gate_eval(a->task, path, &g, r, err, errlen);
  kv_rmtree(dir);
  if (rc == 0) {
    a->gate_evals++;
    snprintf(verdict, vcap, "%s", kv_verdict_name(r->verdict));
    *speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
    char *rj = kv_gate_result_json(r);
    struct kv_eval_record er = {.task_id = a->task_id,
                                .source_hash = hash,
                                .surface = a->surface,
                                .device = r->device,
                                .verdict = verdict,
                                .detail = r->detail,
                                .median_us = r->timed ? r->timing.cand.median_us : -1,
                                .speedup = *speedup,
                                .result_json = rj};
    int64_t eval_id = 0;
    rc = kv_store_put_source(a->st, hash, code, len, err, errlen);
    if (rc == 0)
      rc = kv_store_add_eval(a->st, &er, &eval_id, err, errlen);
    if (rc == 0)
      rc = kv_store_analysis_gate_put(a->st, a->task_id, a->surface, timed, hash, verdict, *speedup,
                                      eval_id, err, errlen);
    free(rj);
  }
  if (r)
    kv_gate_result_release(r);
  free(r);
  return rc;
}

/* One sample of condition c at node f: asks, judges, records. */
static int one_sample(struct an *a, const struct frozen *f, int c, int j, char *err,
                      size_t errlen) {
  struct cond q;
  kva_an_cond_of(a, c, &q);
  const char *given = q.plan == 2 ? f->plan : NULL;
  char *first = kva_an_prompt_of(a, f, &q, q.plan == 1 ? KV_PK_PLAN : f->kind, given, err, errlen);
  if (!first)
    return -1;
  char ph[65], mode[16];
  struct kv_buf hb;
  kv_buf_init(&hb, KV_PROMPT_MAX + 64);
  snprintf(mode, sizeof mode, "plan%d|", q.plan);
  kv_buf_append(&hb, mode, strlen(mode));
  const struct kv_llm_model *mm = kv_llm_model_of(q.llm);
  kv_buf_appendf(&hb, "%s|%s|", mm->provider, mm->model);
  kv_buf_append(&hb, first, strlen(first));
  kv_sha256_hex(hb.data, hb.len, ph);
  kv_buf_release(&hb);
  struct kv_analysis_sample s = {0}, same;
  char vbuf[32], hbuf[65];
  int found = kv_store_analysis_same_prompt(a->st, a->analysis_id, f->node_id, ph, j, &same, vbuf,
                                            hbuf, err, errlen);
  if (found < 0) {
    free(first);
    return -1;
  }
  if (found) { /* the same prompt was asked already: the same sample */
    free(first);
    same.analysis_id = a->analysis_id;
    same.node_id = f->node_id;
    same.cond = c;
    same.sample = j;
    same.prompt_hash = ph;
    return kv_store_analysis_sample_put(a->st, &same, err, errlen);
  }
  char *plan = NULL, *text = NULL;
  int64_t plan_call = 0, call = 0;
  int rc = 0;
  if (q.plan == 1) {
    char *ptext = NULL;
    rc = kva_an_ask(a, q.llm, "analyze:planner", first, j, &ptext, &plan_call, err, errlen);
    if (rc == 0 && kv_reply_plan(ptext, strlen(ptext), &plan, NULL, 0) < 0)
      plan = strdup("(no plan)");
    free(ptext);
    free(first);
    first = NULL;
    if (rc == 0) {
      first = kva_an_prompt_of(a, f, &q, f->kind, plan, err, errlen);
      if (!first)
        rc = -1;
    }
  }
  if (rc == 0)
    rc = kva_an_ask(a, q.llm, "analyze:coder", first, j, &text, &call, err, errlen);
  free(first);
  char verdict[32] = "no_code", hash[65] = "";
  double speedup = -1;
  int cached = 0;
  unsigned tags = kv_an_plan_tags(q.plan == 2 ? f->plan : plan);
  if (rc == 0) {
    struct kv_reply rp;
    if (kv_reply_parse(text, strlen(text), a->task->entry, &rp, NULL, 0) == 0) {
      if (q.plan == 0)
        tags = kv_an_plan_tags(rp.plan);
      rc = kva_an_judge(a, rp.code, hash, verdict, sizeof verdict, &speedup, &cached, err, errlen);
      kv_reply_release(&rp);
    } else if (q.plan == 0) {
      tags = kv_an_plan_tags(text);
    }
  }
  free(text);
  free(plan);
  if (rc != 0)
    return rc;
  s.analysis_id = a->analysis_id;
  s.node_id = f->node_id;
  s.cond = c;
  s.sample = j;
  s.prompt_hash = ph;
  s.call_id = call;
  s.plan_call_id = plan_call;
  s.source_hash = hash[0] ? hash : NULL;
  s.verdict = verdict;
  s.speedup = speedup;
  s.plan_tags = tags;
  s.gate_cached = cached;
  return kv_store_analysis_sample_put(a->st, &s, err, errlen);
}

/* ---- results ---------------------------------------------------------------- */

struct collect {
  struct an *a;
  struct kv_an_result *r;
  unsigned char *have;
};

static int node_index(const struct an *a, int64_t id) {
  for (int i = 0; i < a->nfz; i++)
    if (a->fz[i].node_id == id)
      return i;
  return -1;
}

static int collect_cb(void *arg, const struct kv_analysis_sample *s) {
  struct collect *c = arg;
  int ni = node_index(c->a, s->node_id);
  if (ni < 0 || s->cond < 0 || s->cond >= c->r->ncond || s->sample < 0 || s->sample >= c->r->k)
    return 0;
  size_t at =
      ((size_t)ni * (size_t)c->r->ncond + (size_t)s->cond) * (size_t)c->r->k + (size_t)s->sample;
  c->have[at] = 1;
  if (c->a->pcall)
    c->a->pcall[at] = s->plan_call_id;
  double thr = c->a->o->fast_threshold > 0 ? c->a->o->fast_threshold : 1.0;
  int ok = s->verdict && !strcmp(s->verdict, "ok");
  int compiled = s->verdict && strcmp(s->verdict, "no_code") &&
                 strcmp(s->verdict, "compile_error") && strcmp(s->verdict, "policy_violation");
  double sp = ok && s->speedup > 0 ? s->speedup : 0;
  double clip = sp < 0.25 ? 0.25 : sp > 64 ? 64 : sp;
  c->r->y[KV_AN_M_COMPILE][at] = compiled;
  c->r->y[KV_AN_M_PASS][at] = ok;
  c->r->y[KV_AN_M_FAST][at] = ok && sp > thr;
  c->r->y[KV_AN_M_LOGSP][at] = log(clip);
  for (int t = 0; t < KV_AN_NTAGS; t++)
    c->r->y[KV_AN_M_COUNT + t][at] = (s->plan_tags >> t) & 1;
  return 0;
}

static int results(struct an *a, struct kv_an_result *r, int attribute, char *err, size_t errlen) {
  r->nnodes = a->nfz;
  r->k = a->k;
  r->ncond = a->ncond;
  r->timed = a->timed;
  size_t cube = (size_t)a->nfz * (size_t)a->ncond * (size_t)a->k;
  r->node_steps = calloc((size_t)a->nfz, sizeof *r->node_steps);
  unsigned char *have = calloc(cube, 1);
  free(a->pcall);
  a->pcall = a->ca ? calloc(cube + 1, sizeof *a->pcall) : NULL;
  if (!r->node_steps || !have || (a->ca && !a->pcall)) {
    free(have);
    return kv_error(err, errlen, "out of memory");
  }
  for (int i = 0; i < a->nfz; i++)
    r->node_steps[i] = a->fz[i].step;
  for (int m = 0; m < KV_AN_NMETRICS; m++) {
    r->y[m] = malloc(cube * sizeof(double));
    if (!r->y[m]) {
      free(have);
      return kv_error(err, errlen, "out of memory");
    }
    for (size_t i = 0; i < cube; i++)
      r->y[m][i] = NAN;
  }
  struct collect c = {a, r, have};
  if (kv_store_analysis_samples(a->st, a->analysis_id, collect_cb, &c, err, errlen) < 0) {
    free(have);
    return -1;
  }
  r->complete = 1;
  for (size_t i = 0; i < cube; i++)
    r->complete &= have[i];
  free(have);
  if (!r->complete || !attribute)
    return 0;
  if (a->best) /* a rollout's outcome: the best of its samples */
    for (int m = 0; m < KV_AN_NMETRICS; m++)
      r->k = kva_an_best_of_k(r->y[m], a->nfz, a->ncond, a->rollouts, a->per);
  int B = a->o->bootstrap > 0 ? a->o->bootstrap : 1000;
  int P = a->o->perms > 0 ? a->o->perms : 1000;
  for (int m = 0; m < KV_AN_NMETRICS; m++) {
    if (!strcmp(a->exp, "shapley")) {
      struct kv_an_data d = {a->npl, a->nfz, r->k, r->y[m]};
      if (kv_an_attribute(&d, B, P, 0x6b65766fu + (unsigned)m, &r->attr[m], err, errlen) < 0)
        return -1;
    } else {
      for (int cell = 0; cell < a->ncond; cell++)
        kv_an_cell_ci(r->y[m], a->nfz, a->ncond, r->k, cell, B, 0x6b65766fu + (unsigned)m,
                      &r->cell[m][cell], &r->cell_lo[m][cell], &r->cell_hi[m][cell]);
    }
  }
  return 0;
}

/* ---- the analysis ------------------------------------------------------------ */

static void an_release(struct an *a) {
  kv_task_free(a->task);
  free(a->reference);
  kv_prompts_free(a->prompts);
  kv_rules_free(a->rules, a->nrules);
  for (int i = 0; i < a->nrows; i++) {
    if (a->codes)
      free(a->codes[i]);
    if (a->fbs)
      fb_free(a->fbs[i]);
  }
  free(a->codes);
  free(a->fbs);
  for (int i = 0; a->fz && i < a->nfz; i++)
    kva_an_frozen_release(&a->fz[i]);
  free(a->fz);
  free(a->pcall);
  free(a->ca_plan);
  kv_node_rows_free(a->rows, a->nrows);
}

int kva_an_put(struct an *a, int fi, const struct kv_analysis_sample *s, char *err, size_t errlen) {
  size_t at = ((size_t)fi * (size_t)a->ncond + (size_t)s->cond) * (size_t)a->k + (size_t)s->sample;
  if (a->pcall)
    a->pcall[at] = s->plan_call_id;
  return kv_store_analysis_sample_put(a->st, s, err, errlen);
}

/* CUDAnalyst's settings (kevo/preset.h): rollouts, best-of-k, the planner,
 * the recorded prompt and the tool players, whose feedback is recomputed. */
static int ca_setup(struct an *a, char *err, size_t errlen) {
  const struct kv_an_opts *o = a->o;
  a->per = a->k;
  a->rollouts = o->rollouts > 0 ? o->rollouts : 1;
  a->best = o->best_of_k;
  if (a->rollouts > 16 || a->per * a->rollouts > 256)
    return kv_error(err, errlen,
                    "--rollouts %d x --samples %d: at most 16 rollouts and 256 "
                    "samples a coalition",
                    a->rollouts, a->per);
  a->k = a->per * a->rollouts;
  int tools = 0;
  for (const char *p = o->players ? o->players : ""; *p;) {
    size_t n = strcspn(p, ",");
    char w[64];
    snprintf(w, sizeof w, "%.*s", (int)(n < 63 ? n : 63), p);
    tools |= kva_an_tool_of(w) != 0;
    p += n + (p[n] == ',');
  }
  a->ca = tools || o->planner == 1 || o->frozen_recorded;
  if (a->ca && strcmp(a->exp, "shapley"))
    return kv_error(err, errlen,
                    "--planner, --frozen and CUDAnalyst's players (%s) apply to the "
                    "Shapley analysis, not --experiment %s",
                    KV_AN_TOOLS, a->exp);
  return a->ca ? kva_an_recompute(a, tools, err, errlen) : 0;
}

/* What an analysis is, for its config beside kevo's own keys: only what is
 * set, so an analysis of kevo's own keeps its identity. */
static void ca_config(const struct an *a, json_t *cj) {
  const struct kv_an_opts *o = a->o;
  if (a->rollouts > 1)
    json_object_set_new(cj, "rollouts", json_integer(a->rollouts));
  if (a->best)
    json_object_set_new(cj, "score", json_string("best-of-k"));
  if (o->planner == 1)
    json_object_set_new(cj, "planner", json_true());
  if (o->frozen_recorded)
    json_object_set_new(cj, "frozen", json_string("recorded"));
}

int kv_analyze(struct kv_store *st, const struct kv_an_opts *o, struct kv_an_result *out, char *err,
               size_t errlen) {
  memset(out, 0, sizeof *out);
  struct an a;
  memset(&a, 0, sizeof a);
  a.st = st;
  a.o = o;
  a.exp = o->experiment && *o->experiment ? o->experiment : "shapley";
  if (strcmp(a.exp, "shapley") && strcmp(a.exp, "planning") && strcmp(a.exp, "transfer"))
    return kv_error(err, errlen, "--experiment %s: unknown; use planning (or --transfer-to MODEL)",
                    a.exp);
  if (!o->llm || (!strcmp(a.exp, "transfer") && !o->target))
    return kv_error(err, errlen, "analyze: needs a model (the run's, or --model)%s",
                    !strcmp(a.exp, "transfer") ? " and a --transfer-to model" : "");
  a.k = o->samples > 0 ? o->samples : 5;
  if (a.k > 256)
    return kv_error(err, errlen, "--samples %d: at most 256", a.k);
  a.timed = o->g->timing != 0;
  int rc = load_run(&a, err, errlen);
  if (rc == 0)
    rc = ca_setup(&a, err, errlen);
  if (rc == 0 && !strcmp(a.exp, "shapley"))
    rc = parse_players(&a, err, errlen);
  for (int i = 0; rc == 0 && o->frozen_recorded && i < a.npl; i++)
    if (!a.pl[i].tool)
      rc = kv_error(err, errlen,
                    "--frozen recorded: the child's recorded prompt is fixed, so only CUDAnalyst's "
                    "players (%s) vary it; %s needs --frozen rebuilt",
                    KV_AN_TOOLS, a.pl[i].name);
  if (rc == 0 && !strcmp(a.exp, "planning") && o->players && *o->players)
    rc = kv_error(err, errlen, "--players applies to the Shapley analysis, not --experiment %s",
                  a.exp);
  if (rc == 0 && !strcmp(a.exp, "planning")) {
    for (int i = 0; i < a.nfz; i++)
      if (!a.fz[i].mis)
        rc = kv_error(err, errlen,
                      "--experiment planning: run %lld has a single judged node, so there is "
                      "no other node's feedback to misalign with",
                      (long long)o->run_id);
  }
  if (rc == 0 && !strcmp(a.exp, "transfer")) { /* only nodes with a recorded plan */
    int m = 0;
    for (int i = 0; i < a.nfz; i++)
      if (a.fz[i].plan && *a.fz[i].plan)
        a.fz[m++] = a.fz[i];
    a.nfz = m;
    if (!m)
      rc = kv_error(err, errlen,
                    "--transfer-to: run %lld recorded no plans for the chosen nodes; record a "
                    "run with --plan-mode explicit",
                    (long long)o->run_id);
  }
  if (rc < 0) {
    an_release(&a);
    return -1;
  }
  a.ncond = !strcmp(a.exp, "shapley") ? 1 << a.npl : !strcmp(a.exp, "planning") ? 4 : 3;
  /* The analysis's identity: what changes its samples. */
  const struct kv_llm_model *m = kv_llm_model_of(o->llm);
  json_t *pj = json_array();
  for (int i = 0; i < a.npl; i++)
    json_array_append_new(pj, json_string(a.pl[i].name));
  json_t *cj = json_pack("{s:i,s:i,s:o,s:i,s:f,s:b,s:s,s:s,s:s}", "gen_lo", o->gen_lo, "gen_hi",
                         o->gen_hi, "players", pj, "samples", a.per, "fast_threshold",
                         o->fast_threshold > 0 ? o->fast_threshold : 1.0, "timing", a.timed,
                         "provider", m->provider, "model", m->model, "label",
                         o->model_label ? o->model_label : m->model);
  if (cj)
    ca_config(&a, cj);
  if (o->target) {
    const struct kv_llm_model *t = kv_llm_model_of(o->target);
    json_object_set_new(cj, "target",
                        json_pack("{s:s,s:s}", "provider", t->provider, "model", t->model));
  }
  char *cfg = json_dumps(cj, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(cj);
  int created = 0;
  rc = cfg ? kv_store_analysis_open(st, o->run_id, a.exp, cfg, o->fresh, &a.analysis_id, &created,
                                    err, errlen)
           : kv_error(err, errlen, "out of memory");
  free(cfg);
  /* What is left to do, and its cost. */
  int64_t total = (int64_t)a.nfz * a.ncond * a.k, done = 0;
  struct kv_an_result tmp;
  memset(&tmp, 0, sizeof tmp);
  if (rc == 0) {
    struct kv_an_cost cost = {a.nfz, a.ncond, a.k, 0, 0, 0, 0, 0};
    rc = results(&a, &tmp, 0, err, errlen); /* only what is recorded */
    size_t cube = (size_t)total;
    for (size_t i = 0; rc == 0 && i < cube; i++)
      done += !isnan(tmp.y[KV_AN_M_PASS][i]);
    int per = 1;
    struct cond q;
    for (int c = 0; c < a.ncond; c++) {
      kva_an_cond_of(&a, c, &q);
      cost.llm_calls += (int64_t)(q.plan == 1 ? 2 : 1);
    }
    per = (int)cost.llm_calls;
    cost.llm_calls = (int64_t)a.nfz * a.k * per;
    if (a.ca) /* a planner call per rollout, a coder call per sample */
      cost.llm_calls = (int64_t)a.nfz * a.ncond * a.rollouts * (a.per + (o->planner == 1));
    cost.recompute = a.ca ? a.nfz : 0;
    cost.llm_calls = cost.llm_calls * (total - done) / (total ? total : 1);
    cost.gate_evals = total - done;
    cost.done = done;
    /* Worst case: the largest prompt of the first node at the model's prices. */
    struct cond full;
    kva_an_cond_of(&a, a.ncond - 1, &full);
    char *p0 = kva_an_prompt_of(&a, &a.fz[0], &full, a.fz[0].kind, a.fz[0].plan, NULL, 0);
    double in_tok = p0 ? (double)strlen(p0) / 3.0 : 4000;
    free(p0);
    const struct kv_llm_model *cm = kv_llm_model_of(o->target ? o->target : o->llm);
    cost.usd = (double)cost.llm_calls *
               (in_tok * cm->input_usd_per_mtok + cm->max_tokens * cm->output_usd_per_mtok) / 1e6;
    if (rc == 0 && o->confirm && o->confirm(o->ud, &cost) != 0)
      rc = 1; /* refused: nothing spent */
  }
  /* Sample every (node, condition, sample) not yet recorded. */
  int64_t at = done;
  int stopped = 0;
  for (int i = 0; rc == 0 && i < a.nfz; i++)
    for (int c = 0; rc == 0 && c < a.ncond; c++)
      for (int j = 0; rc == 0 && j < a.k; j++) {
        size_t key = ((size_t)i * (size_t)a.ncond + (size_t)c) * (size_t)a.k + (size_t)j;
        if (tmp.y[KV_AN_M_PASS] && !isnan(tmp.y[KV_AN_M_PASS][key]))
          continue;
        if (o->stop && *o->stop) {
          stopped = 1;
          break;
        }
        rc = a.ca ? kva_an_sample_ca(&a, i, c, j, err, errlen)
                  : one_sample(&a, &a.fz[i], c, j, err, errlen);
        at++;
        if (rc == 0 && o->progress) {
          char last[256];
          if (!strcmp(a.exp, "shapley")) {
            char names[200] = "";
            for (int p = 0; p < a.npl; p++)
              if (c & (1 << p))
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? "+" : "", a.pl[p].name);
            snprintf(last, sizeof last, "step %d S={%s} sample %d", a.fz[i].step, names, j);
          } else
            snprintf(last, sizeof last, "step %d %s sample %d", a.fz[i].step, cell_name(a.exp, c),
                     j);
          struct kv_an_progress pr = {a.analysis_id, at, total, last};
          o->progress(o->ud, &pr);
        }
      }
  kv_an_result_free(&tmp);
  int refused = rc == 1;
  if (rc > 0)
    rc = 0;
  out->analysis_id = a.analysis_id;
  out->run_id = o->run_id;
  snprintf(out->experiment, sizeof out->experiment, "%s", a.exp);
  if (!strcmp(a.exp, "shapley")) {
    out->n = a.npl;
    for (int i = 0; i < a.npl; i++)
      snprintf(out->names[i], sizeof out->names[i], "%s", a.pl[i].name);
  } else {
    out->n = a.ncond;
    for (int c = 0; c < a.ncond; c++)
      snprintf(out->names[c], sizeof out->names[c], "%s", cell_name(a.exp, c));
  }
  out->fast_threshold = o->fast_threshold > 0 ? o->fast_threshold : 1.0;
  snprintf(out->model, sizeof out->model, "%s", o->model_label ? o->model_label : m->model);
  if (o->target)
    snprintf(out->target, sizeof out->target, "%s",
             o->target_label ? o->target_label : kv_llm_model_of(o->target)->model);
  out->llm_calls = a.llm_calls;
  out->gate_evals = a.gate_evals;
  out->gate_cached = a.gate_cached;
  if (rc == 0 && !refused)
    rc = results(&a, out, 1, err, errlen);
  if (rc == 0 && !refused && out->complete)
    rc = kv_store_analysis_set_status(st, a.analysis_id, "done", err, errlen);
  an_release(&a);
  if (rc < 0)
    return rc == KV_LLM_EBUDGET ? rc : -1;
  return refused ? 1 : stopped ? 2 : 0;
}

void kv_an_result_free(struct kv_an_result *r) {
  free(r->node_steps);
  for (int m = 0; m < KV_AN_NMETRICS; m++)
    free(r->y[m]);
  memset(r, 0, sizeof *r);
}

/* ---- a recorded analysis, read back ------------------------------------------ */

struct seen {
  int64_t *ids;
  int n, cap;
};

static int seen_cb(void *arg, const struct kv_analysis_sample *r) {
  struct seen *v = arg;
  if (v->n && v->ids[v->n - 1] == r->node_id) /* samples come in node order */
    return 0;
  if (v->n == v->cap) {
    int cap = v->cap ? 2 * v->cap : 64;
    int64_t *t = realloc(v->ids, (size_t)cap * sizeof *t);
    if (!t)
      return 1;
    v->ids = t;
    v->cap = cap;
  }
  v->ids[v->n++] = r->node_id;
  return 0;
}

int kv_an_load(struct kv_store *st, int64_t analysis_id, int bootstrap, struct kv_an_result *out,
               char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  struct kv_analysis_row row;
  if (kv_store_analysis_get(st, analysis_id, &row, err, errlen) < 0)
    return -1;
  struct an a;
  struct kv_an_opts o;
  memset(&a, 0, sizeof a);
  memset(&o, 0, sizeof o);
  struct seen sn = {0};
  int rc = 0;
  json_t *cfg = json_loads(row.config_json ? row.config_json : "", 0, NULL);
  const char *exp = row.experiment ? row.experiment : "";
  json_t *pl = json_object_get(cfg, "players");
  json_int_t k = json_integer_value(json_object_get(cfg, "samples"));
  if (!json_is_object(cfg))
    rc = kv_error(err, errlen,
                  "analysis %lld: analyses.config_json does not parse as a JSON object; the "
                  "store is damaged: run 'kevo analyze --fresh %lld' to make it again",
                  (long long)row.id, (long long)row.run_id);
  else if (strcmp(exp, "shapley") && strcmp(exp, "planning") && strcmp(exp, "transfer"))
    rc = kv_error(err, errlen,
                  "analysis %lld: analyses.experiment '%s' is none this kevo knows (shapley, "
                  "planning, transfer); read it with the kevo that made it",
                  (long long)row.id, exp);
  else if (k < 1 || k > 256)
    rc = kv_error(err, errlen,
                  "analysis %lld: analyses.config_json has samples %lld, outside 1..256; the "
                  "store is damaged: run 'kevo analyze --fresh %lld'",
                  (long long)row.id, (long long)k, (long long)row.run_id);
  else if (!strcmp(exp, "shapley") &&
           (json_array_size(pl) < 1 || json_array_size(pl) > KV_AN_MAX_PLAYERS))
    rc = kv_error(err, errlen,
                  "analysis %lld: analyses.config_json has %zu players, not 1..%d; the store "
                  "is damaged: run 'kevo analyze --fresh %lld'",
                  (long long)row.id, json_array_size(pl), KV_AN_MAX_PLAYERS, (long long)row.run_id);
  if (rc == 0) {
    double thr = json_number_value(json_object_get(cfg, "fast_threshold"));
    o.run_id = row.run_id;
    o.fast_threshold = thr > 0 ? thr : 1.0;
    o.bootstrap = o.perms = bootstrap;
    a.st = st;
    a.o = &o;
    a.exp = !strcmp(exp, "shapley")    ? "shapley"
            : !strcmp(exp, "planning") ? "planning"
                                       : "transfer";
    a.analysis_id = row.id;
    json_int_t ro = json_integer_value(json_object_get(cfg, "rollouts"));
    const char *score = json_string_value(json_object_get(cfg, "score"));
    a.per = (int)k;
    a.rollouts = ro >= 1 && ro <= 16 ? (int)ro : 1;
    a.best = score && !strcmp(score, "best-of-k");
    a.k = a.per * a.rollouts;
    a.timed = json_is_true(json_object_get(cfg, "timing"));
    if (!strcmp(a.exp, "shapley")) {
      a.npl = (int)json_array_size(pl);
      for (int i = 0; i < a.npl; i++)
        snprintf(a.pl[i].name, sizeof a.pl[i].name, "%s",
                 json_string_value(json_array_get(pl, (size_t)i))
                     ? json_string_value(json_array_get(pl, (size_t)i))
                     : "?");
    }
    a.ncond = !strcmp(a.exp, "shapley") ? 1 << a.npl : !strcmp(a.exp, "planning") ? 4 : 3;
    /* The chosen nodes: those with samples, in the run's step order (as
     * kv_analyze chose them, so the same bootstrap draws the same nodes). */
    if (kv_store_analysis_samples(st, row.id, seen_cb, &sn, err, errlen) < 0)
      rc = -1;
    else if (kv_store_run_nodes(st, row.run_id, &a.rows, &a.nrows, err, errlen) < 0)
      rc = -1;
    else if (!(a.fz = calloc((size_t)a.nrows + 1, sizeof *a.fz)))
      rc = kv_error(err, errlen, "out of memory");
    for (int i = 0; rc == 0 && i < a.nrows; i++)
      for (int j = 0; j < sn.n; j++)
        if (sn.ids[j] == a.rows[i].id) {
          a.fz[a.nfz].node_id = a.rows[i].id;
          a.fz[a.nfz++].step = a.rows[i].step;
          break;
        }
  }
  if (rc == 0)
    rc = results(&a, out, 1, err, errlen);
  if (rc == 0) {
    out->analysis_id = row.id;
    out->run_id = row.run_id;
    snprintf(out->experiment, sizeof out->experiment, "%s", a.exp);
    out->complete = out->complete && a.nfz > 0 && row.status && !strcmp(row.status, "done");
    out->fast_threshold = o.fast_threshold;
    out->n = !strcmp(a.exp, "shapley") ? a.npl : a.ncond;
    for (int i = 0; i < out->n; i++)
      snprintf(out->names[i], sizeof out->names[i], "%s",
               !strcmp(a.exp, "shapley") ? a.pl[i].name : cell_name(a.exp, i));
    const char *lb = json_string_value(json_object_get(cfg, "label"));
    const char *pv = json_string_value(json_object_get(cfg, "provider"));
    const char *md = json_string_value(json_object_get(cfg, "model"));
    snprintf(out->model, sizeof out->model, "%s", lb ? lb : md ? md : "?");
    if (pv && md && lb && strcmp(lb, md))
      snprintf(out->model + strlen(out->model), sizeof out->model - strlen(out->model), " (%s/%s)",
               pv, md);
    json_t *tg = json_object_get(cfg, "target");
    if (json_is_object(tg)) {
      const char *tm = json_string_value(json_object_get(tg, "model"));
      snprintf(out->target, sizeof out->target, "%s", tm ? tm : "?");
    }
  } else
    kv_an_result_free(out);
  free(sn.ids);
  free(a.fz);
  kv_node_rows_free(a.rows, a.nrows);
  json_decref(cfg);
  kv_analysis_row_release(&row);
  return rc;
}
