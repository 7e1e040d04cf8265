/* The backward walk in LLM mode: the model proposes one atomic
 * de-optimization at a time, the gate judges each, and each accepted step is
 * re-derived forward from its card alone before its paired test. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/llm.h"
#include "kevo/prompt.h"
#include "kevo/reply.h"
#include "kevo/report.h"
#include "kevo/rules.h"
#include "kevo/skills.h"
#include "kevo/util.h"
#include "kevo/surface.h"

#define REPLY_CODE_MAX (1 << 20)

/* The walk's prompts: embedded defaults, each overridable by
 * DIR/<name>.md (kevo/prompt.h's kv_prompt_template), with these variables. */
static const char deopt_system[] =
    "You take optimized GPU and CPU kernels apart, one mechanism at a time, so that each "
    "optimization can be studied on its own. You answer exactly in the format asked.";
#define DEOPT_VARS "name surface summary entry lang code removed attempt attempts feedback features"
static const char deopt_default[] =
    "Task: {{name}} ({{surface}} surface). {{summary}}\nThe entry point, which must not "
    "change:\n{{entry}}\nThe current kernel (it passes every correctness check):\n```{{lang}}\n"
    "{{code}}```\n\nMechanisms removed so far: {{removed}}.\nAttempt {{attempt}} of "
    "{{attempts}}.\n{{feedback}}\nPropose ONE atomic de-optimization: remove exactly one "
    "optimization mechanism that is actually present in the current kernel, keeping the result "
    "correct at the same tolerance and sizes (it may be slower). Remove mechanisms that others "
    "depend on only after their dependents. Tile sizes and vector widths are not separate "
    "mechanisms. Reply with a line 'Mechanism: NAME' (the mechanism removed, an identifier), a "
    "line 'Intent: ...' (one line: what the mechanism does), a line 'Anchor: ...' (a line of "
    "code that shows the mechanism is present), then the complete simpler kernel in one fenced "
    "code block. Before the code block, also write the preconditions of the optimization (the "
    "richer kernel's form of it), one line each: 'Dtypes: ...' (f32, f64, f16, bf16, i32, i64, "
    "u8), 'Layout: ...' (row-major, column-major, contiguous, strided or any), 'Storage: ...' "
    "(global, shared, registers, constant, local, host or any), 'Pipeline: ...' (the stages it "
    "needs, or none), 'Hardware: ...' (any, cpu, gpu, x86_64, sm_80+ ...), 'Scope: ...' (the "
    "tasks it holds for, or *), 'Requires: ...' and 'Conflicts: ...' (features of the simpler "
    "kernel it needs or cannot join, or none: {{features}}). If the kernel is already naive "
    "(nothing left to remove), reply with the single word NAIVE.\n";
#define REDERIVE_VARS "name surface summary lang code mechanism intent anchor"
static const char rederive_default[] =
    "Task: {{name}} ({{surface}} surface). {{summary}}\nA kernel (it passes every correctness "
    "check):\n```{{lang}}\n{{code}}```\n\nSkill card:\nMechanism: {{mechanism}}\nIntent: "
    "{{intent}}\nAnchor: {{anchor}}\n\nApply this skill to the kernel: add the mechanism, "
    "keeping the result correct at the same tolerance and sizes and the entry point unchanged. "
    "Reply with the complete kernel in one fenced code block.\n";

/* The audit: another conversation, another system prompt; it sees the two
 * kernels with line numbers and the claim, never the proposal's reply. */
static const char audit_system[] =
    "You audit claimed kernel edits independently. You trust no comment, name or claim: only the "
    "code. You answer exactly in the format asked.";
#define AUDIT_VARS "name surface summary lang mechanism intent richer simpler"
static const char audit_default[] =
    "Task: {{name}} ({{surface}} surface). {{summary}}\nA proposed de-optimization claims to "
    "remove ONE mechanism, {{mechanism}} ({{intent}}), from the richer kernel, giving the "
    "simpler kernel.\n\nRicher kernel:\n```{{lang}}\n{{richer}}```\n\nSimpler kernel:\n```"
    "{{lang}}\n{{simpler}}```\n\nCheck the claim against the code alone. Reply with a line "
    "'Verdict: removed' (the richer kernel has the mechanism and the simpler one does not), "
    "'Verdict: kept' or 'Verdict: unknown'; then 1 to 4 lines 'Present: L<a>-L<b> `code`' "
    "citing where the richer kernel holds it, 1 to 4 lines 'Absent: L<a>-L<b> `code`' citing "
    "the simpler kernel's decisive lines (line numbers as shown, at most 12 lines each, the "
    "quote copied from those lines), and a line 'Reason: ...' (one or two sentences).\n";

struct walk_prompts {
  char *system, *deopt, *rederive, *audit;
};

static void walk_prompts_free(struct walk_prompts *w) {
  free(w->system);
  free(w->deopt);
  free(w->rederive);
  free(w->audit);
}

static int walk_prompts_load(const char *dir, struct walk_prompts *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  if (!(w->system = kv_prompt_template(dir, "lineage_system", "", deopt_system, err, errlen)) ||
      !(w->deopt =
            kv_prompt_template(dir, "lineage_deopt", DEOPT_VARS, deopt_default, err, errlen)) ||
      !(w->rederive = kv_prompt_template(dir, "lineage_rederive", REDERIVE_VARS, rederive_default,
                                         err, errlen)) ||
      !(w->audit =
            kv_prompt_template(dir, "lineage_audit", AUDIT_VARS, audit_default, err, errlen))) {
    walk_prompts_free(w);
    return -1;
  }
  return 0;
}

static int says_naive(const char *text) {
  for (const char *p = text; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == '*' || *p == '#')
      p++;
    if (!strncmp(p, "NAIVE", 5) &&
        (p[5] == 0 || p[5] == '\n' || p[5] == '\r' || p[5] == '.' || p[5] == ' '))
      return 1;
    p = strchr(p, '\n');
    if (p)
      p++;
  }
  return 0;
}

/* A mechanism's name as kevo keeps it: letters, digits, _ (others become _). */
static void clean_name(const char *in, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = in; *p && o + 1 < cap && o + 1 < KV_MECH_NAME_MAX; p++)
    out[o++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
  out[o] = 0;
}

static char *deopt_prompt(const struct walk_prompts *wp, const struct kv_task *t,
                          const char *surface, const char *cur, const struct kv_lineage *L,
                          int attempt, int attempts, const char *feedback) {
  char removed[2048] = "", na[16], nb[16], fb[1024] = "";
  /* sized from the prototype: a packed network's table of offsets is long */
  char *proto = kv_task_prototype_alloc(t, kv_surface_lang(kv_surface_find(surface)));
  for (int i = 0; i < L->nsteps; i++)
    if (L->steps[i].accepted) {
      size_t u = strlen(removed);
      snprintf(removed + u, sizeof removed - u, "%s%s", u ? ", " : "",
               L->annot.m[L->steps[i].mech].name);
    }
  snprintf(na, sizeof na, "%d", attempt);
  snprintf(nb, sizeof nb, "%d", attempts);
  if (feedback && *feedback)
    snprintf(fb, sizeof fb, "\nYour previous proposal for this step was refused: %s\n", feedback);
  char feats[600];
  kv_features_format((1u << KV_FEAT_N) - 1u, feats, sizeof feats);
  const char *vars[] = {"name",     t->name,
                        "surface",  surface,
                        "summary",  t->summary ? t->summary : "",
                        "entry",    proto ? proto : "(the prototype is over kevo's cap)",
                        "lang",     kv_surface_lang_name(kv_surface_find(surface)),
                        "code",     cur,
                        "removed",  removed[0] ? removed : "none",
                        "attempt",  na,
                        "attempts", nb,
                        "feedback", fb,
                        "features", feats,
                        NULL};
  char *prompt = kv_prompt_fill(wp->deopt, vars);
  free(proto);
  return prompt;
}

static char *rederive_prompt(const struct walk_prompts *wp, const struct kv_task *t,
                             const char *surface, const char *simple, const struct kv_mech *m) {
  const char *vars[] = {"name",      t->name,
                        "surface",   surface,
                        "summary",   t->summary ? t->summary : "",
                        "lang",      kv_surface_lang_name(kv_surface_find(surface)),
                        "code",      simple,
                        "mechanism", m->name,
                        "intent",    m->intent,
                        "anchor",    m->anchor,
                        NULL};
  return kv_prompt_fill(wp->rederive, vars);
}

#define LOST (-2) /* a call to the model failed: the walk stops, resumable */

static int ask(struct kv_llm *llm, const char *system, const char *role, const char *text,
               int sample, char **reply, char *err, size_t errlen) {
  struct kv_llm_message msg = {"user", text};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = role;
  q.system = system;
  q.messages = &msg;
  q.n_messages = 1;
  q.sample = sample;
  struct kv_llm_result res;
  int rc = kv_llm_ask(llm, &q, &res);
  if (rc != KV_LLM_OK) {
    kv_error(err, errlen, "the model (%s) failed: %s", role, res.error);
    kv_llm_result_release(&res);
    return LOST;
  }
  *reply = res.text;
  res.text = NULL;
  kv_llm_result_release(&res);
  return 0;
}

/* The code of a reply (malloc'd), or NULL. */
static char *code_of(const struct kv_task *t, const char *reply) {
  struct kv_reply rp;
  char perr[256];
  if (kv_reply_parse(reply, strlen(reply), t->entry, &rp, perr, sizeof perr) != 0)
    return NULL;
  char *c = strdup(rp.code);
  kv_reply_release(&rp);
  return c;
}

/* src with line numbers ("  12| code"), for the audit (malloc'd). */
static char *numbered(const char *src) {
  struct kv_buf b;
  kv_buf_init(&b, 4 << 20);
  int n = 1;
  for (const char *p = src; *p; n++) {
    size_t k = strcspn(p, "\n");
    kv_buf_appendf(&b, "%4d| %.*s\n", n, (int)k, p);
    p += k;
    if (*p)
      p++;
  }
  return kv_buf_detach(&b);
}

static char *audit_prompt(const struct walk_prompts *wp, const struct kv_task *t,
                          const char *surface, const char *richer, const char *simpler,
                          const struct kv_mech *m) {
  char *nr = numbered(richer), *ns = numbered(simpler);
  const char *vars[] = {"name",      t->name,
                        "surface",   surface,
                        "summary",   t->summary ? t->summary : "",
                        "lang",      kv_surface_lang_name(kv_surface_find(surface)),
                        "mechanism", m->name,
                        "intent",    m->intent,
                        "richer",    nr ? nr : "",
                        "simpler",   ns ? ns : "",
                        NULL};
  char *p = kv_prompt_fill(wp->audit, vars);
  free(nr);
  free(ns);
  return p;
}

/* One walk: what every step's functions share. */
struct walk {
  const struct kv_task *t;
  const struct kv_lineage_opts *o;
  struct kv_llm *llm;
  struct walk_prompts wp;
  struct kv_gate_result *r;
  int retries;
  const char *ext;
  char *err;
  size_t errlen;
};

static int popcount32(uint32_t v) {
  int n = 0;
  for (; v; v &= v - 1)
    n++;
  return n;
}

/* A proposal refused by one of kevo's checks (not the gate): recorded, and
 * told to the model with the next proposal. Returns 0. */
static int refuse(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                  const char *verdict, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int refuse(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                  const char *verdict, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->detail, sizeof st->detail, fmt, ap);
  va_end(ap);
  snprintf(st->verdict, sizeof st->verdict, "%s", verdict);
  st->accepted = 0;
  L->rejections++;
  L->refused_in_row++;
  const char *name = L->annot.m[st->mech].name;
  snprintf(L->feedback, sizeof L->feedback, "removing %s was refused (%s): %.560s", name, verdict,
           st->detail);
  skills_say(w->o, "step %2d  -%-20s refused: %s: %.300s", st->ord, name, verdict, st->detail);
  return 0;
}

/* The gate on the simpler kernel (the task's unchanged checks). */
static int judge_child(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                       const char *tag) {
  char name[160];
  snprintf(name, sizeof name, "%s%s", tag, w->ext);
  size_t clen = strlen(st->child_src);
  if (skills_judge(w->t, w->o, name, st->child_src, clen, w->o->seed + (uint64_t)st->ord, 1, w->r,
                   w->err, w->errlen) != 0)
    return -1;
  struct kv_gate_result *r = w->r;
  snprintf(st->verdict, sizeof st->verdict, "%s", kv_verdict_name(r->verdict));
  snprintf(st->detail, sizeof st->detail, "%s", r->detail);
  st->result_json = kv_gate_result_json(r);
  st->accepted = r->verdict == KV_V_OK;
  if (r->timed) {
    st->child_median_us = r->timing.cand.median_us;
    st->child_speedup = r->timing.speedup;
  }
  skills_resources(r, &st->regs_simple, &st->smem_simple);
  kv_gate_result_release(r);
  st->regs_rich = L->regs_cur;
  st->smem_rich = L->smem_cur;
  return 0;
}

/* Features observed, the one-mechanism rule, the model's preconditions and
 * contract, the anchor: 1 passed, 0 refused. */
static int check_contract(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                          const char *reply) {
  struct kv_features fr, fs;
  kv_features_scan(L->cur, strlen(L->cur), &fr);
  kv_features_scan(st->child_src, strlen(st->child_src), &fs);
  st->feat_rich = fr.bits;
  st->feat_simple = fs.bits;
  uint32_t strat = kv_features_mask(KV_FEAT_STRATEGY);
  uint32_t added = fs.bits & strat & ~fr.bits, removed = fr.bits & strat & ~fs.bits;
  char a[400], perr[900];
  struct kv_mech *m = &L->annot.m[st->mech];
  if (added) {
    kv_features_format(added, a, sizeof a);
    return refuse(w, L, st, "contract_failed",
                  "the simpler kernel adds %s, which the richer kernel's code does not show; a "
                  "step removes one mechanism and adds none",
                  a);
  }
  if (popcount32(removed) > 1) {
    kv_features_format(removed, a, sizeof a);
    return refuse(w, L, st, "contract_failed",
                  "the step removes %d mechanisms kevo observes (%s); remove one per step, "
                  "dependents before what they need",
                  popcount32(removed), a);
  }
  uint32_t req, conf;
  if (kv_precond_read(reply, w->t, L->arch, fs.bits, w->o->require_preconditions, m, &req, &conf,
                      perr, sizeof perr) != 0)
    return refuse(w, L, st, "preconditions", "%s", perr);
  /* what the kernels compute is required too: the evidence holds only there */
  st->f_requires = req | (fs.bits & fr.bits & kv_features_mask(KV_FEAT_PATTERN));
  st->f_conflicts = conf;
  if (w->o->audit && m->anchor[0]) {
    char *an = skills_squash(m->anchor, strlen(m->anchor));
    char *rs = skills_squash(L->cur, strlen(L->cur));
    char *cs = skills_squash(st->child_src, strlen(st->child_src));
    int in_rich = an && rs && strstr(rs, an), in_simple = an && cs && strstr(cs, an);
    free(an);
    free(rs);
    free(cs);
    if (!in_rich || in_simple)
      return refuse(w, L, st, "anchor",
                    "Anchor: `%.200s` is %s; the anchor is a line of the richer kernel that the "
                    "simpler one lacks",
                    m->anchor,
                    !in_rich ? "not in the richer kernel" : "still in the simpler kernel");
  }
  return 1;
}

/* The independent audit: 1 passed, 0 refused, -1 error, LOST. */
static int run_audit(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st) {
  const struct kv_mech *m = &L->annot.m[st->mech];
  char *prompt = audit_prompt(&w->wp, w->t, L->surface, L->cur, st->child_src, m), *reply = NULL;
  if (!prompt)
    return kv_error(w->err, w->errlen, "out of memory");
  int rc = ask(w->llm, audit_system, "lineage:audit", prompt, 0, &reply, w->err, w->errlen);
  free(prompt);
  if (rc != 0)
    return rc;
  struct kv_audit a;
  kv_audit_check(reply, L->cur, st->child_src, &a);
  free(reply);
  st->audited = a.passed ? 1 : -1;
  st->audit_json = a.json;
  if (!a.passed)
    return refuse(w, L, st, "audit_failed", "the audit: %s", a.why);
  skills_say(w->o, "step %2d  -%-20s audit: %s", st->ord, m->name, a.why);
  return 1;
}

/* The re-derived kernel against the gate; its verdict in st. 0 or -1. */
static int judge_rederived(struct walk *w, struct kv_lineage_step *st, const char *rich,
                           const char *tag) {
  char name[160];
  snprintf(name, sizeof name, "%s-rederived%s", tag, w->ext);
  if (skills_judge(w->t, w->o, name, rich, strlen(rich), w->o->seed + (uint64_t)st->ord, 1, w->r,
                   w->err, w->errlen) != 0)
    return -1;
  st->rederived = w->r->verdict == KV_V_OK ? 1 : -1;
  snprintf(st->rederive, sizeof st->rederive, "%s: %.400s", kv_verdict_name(w->r->verdict),
           w->r->detail);
  kv_gate_result_release(w->r);
  kv_sha256_hex(rich, strlen(rich), st->rederived_hash);
  struct kv_buf d;
  kv_buf_init(&d, 256 * 1024);
  kv_line_diff(st->child_src, strlen(st->child_src), rich, strlen(rich), 3, &d);
  st->forward_diff = kv_buf_detach(&d);
  return 0;
}

/* The round trip's features and speed (st->rt). 0 or -1. */
static int judge_roundtrip(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                           const char *rich, const char *tag) {
  struct kv_roundtrip *rt = &st->rt;
  struct kv_features f;
  kv_features_scan(rich, strlen(rich), &f);
  st->feat_rederived = f.bits;
  kv_roundtrip_features(st->feat_rich, f.bits, rt);
  char a[400], b[400];
  if (rt->missing || rt->extra) {
    kv_features_format(rt->missing, a, sizeof a);
    kv_features_format(rt->extra, b, sizeof b);
    rt->checked = 1;
    snprintf(rt->why, sizeof rt->why, "features not restored: missing %s, added %s", a, b);
  } else if (kv_sources_same(rich, L->cur)) {
    rt->checked = rt->passed = rt->identical = 1;
    rt->every = w->o->roundtrip_every;
    snprintf(rt->why, sizeof rt->why,
             "identical to the richer kernel (blanks aside): its speed and features by "
             "construction");
  } else if (w->o->gate->timing && w->o->pairs >= 1) {
    double ru[KV_PAIRS_MAX], du[KV_PAIRS_MAX];
    int n = w->o->pairs < 3 ? 3 : w->o->pairs;
    char rtag[128];
    snprintf(rtag, sizeof rtag, "%s-roundtrip", tag);
    int prc =
        skills_time_pairs(w->t, w->o, w->ext, L->cur, strlen(L->cur), rich, strlen(rich), rtag,
                          st->ord, n, ru, du, w->r, rt->why, sizeof rt->why, w->err, w->errlen);
    if (prc < 0)
      return -1;
    if (prc == 0)
      kv_roundtrip_speed(ru, du, n, w->o->roundtrip_ratio, w->o->roundtrip_every,
                         w->o->seed + (uint64_t)st->ord, rt);
    else
      rt->checked = 1;
  } else
    snprintf(rt->why, sizeof rt->why,
             "not timed (--no-timing): the round trip's speed is unchecked and the card cannot be "
             "admitted");
  return 0;
}

/* Re-derivation from the card alone, then the round trip: 1 passed (*rich:
 * the re-derived kernel, malloc'd, or NULL), 0 refused, -1 error, LOST. */
static int round_trip(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                      const char *tag, char **rich) {
  *rich = NULL;
  const struct kv_mech *m = &L->annot.m[st->mech];
  char *prompt = rederive_prompt(&w->wp, w->t, L->surface, st->child_src, m), *reply = NULL;
  if (!prompt)
    return kv_error(w->err, w->errlen, "out of memory");
  int rc = ask(w->llm, w->wp.system, "lineage:rederive", prompt, 0, &reply, w->err, w->errlen);
  free(prompt);
  if (rc != 0)
    return rc;
  *rich = code_of(w->t, reply);
  free(reply);
  if (!*rich) {
    st->rederived = -1;
    snprintf(st->rederive, sizeof st->rederive, "no_code: the reply had no kernel");
  } else if (judge_rederived(w, st, *rich, tag) != 0 ||
             (st->rederived == 1 && judge_roundtrip(w, L, st, *rich, tag) != 0))
    return -1;
  if (w->o->roundtrip && (st->rederived != 1 || (st->rt.checked && !st->rt.passed))) {
    refuse(w, L, st, "roundtrip_failed", "the forward edit re-derived from the card: %s",
           st->rederived != 1 ? st->rederive : st->rt.why);
    if (st->rederived == 1 && !st->rt.missing && !st->rt.extra) /* no timings to the model: */
      snprintf(L->feedback, sizeof L->feedback,                 /* its prompts must replay */
               "removing %s was refused (roundtrip_failed): the forward edit re-derived from the "
               "card did not bring back the richer kernel's speed",
               m->name);
    return 0;
  }
  if (st->rederived == 1)
    skills_say(w->o, "step %2d  -%-20s round trip: %s", st->ord, m->name, st->rt.why);
  return 1;
}

/* The step is taken: its paired test, then the simpler kernel is the parent. */
static int take_step(struct walk *w, struct kv_lineage *L, struct kv_lineage_step *st,
                     const char *tag, const char *rich) {
  L->accepted_steps++;
  L->refused_in_row = 0;
  L->feedback[0] = 0;
  const struct kv_lineage_opts *o = w->o;
  const char *name = L->annot.m[st->mech].name;
  if (st->rederived == 1 && rich && o->pairs >= 2 && o->gate->timing) {
    int prc = skills_paired(w->t, o, w->ext, rich, strlen(rich), st->child_src,
                            strlen(st->child_src), tag, st, w->r, w->err, w->errlen);
    if (prc < 0)
      return -1;
    if (prc == 0)
      st->admitted = st->paired.admitted && (!o->roundtrip || st->rt.passed);
  }
  if (st->paired.n)
    skills_say(o, "step %2d  -%-20s ok; re-derived: ok; forward %.2fx [%.2f, %.2f] p=%.3g: %s",
               st->ord, name, st->paired.speedup, st->paired.ci_lo, st->paired.ci_hi,
               st->paired.wilcoxon_p, st->paired.why);
  else
    skills_say(o, "step %2d  -%-20s ok; re-derived: %s%s%s", st->ord, name,
               st->rederived == 1 ? "ok" : st->rederive, st->rederived == 1 ? "; unmeasured: " : "",
               st->rederived == 1 ? skills_unpaired_why(st) : "");
  char *next = strdup(st->child_src);
  if (!next)
    return kv_error(w->err, w->errlen, "out of memory");
  free(L->cur);
  L->cur = next;
  L->regs_cur = st->regs_simple;
  L->smem_cur = st->smem_simple;
  return 0;
}

/* One proposal's reply made into a step and put through every check:
 * 0 decided (taken or refused), -1 error, LOST. */
static int step_from_reply(struct walk *w, struct kv_lineage *L, const char *reply) {
  char mname[128] = "", intent[256] = "", anchor[256] = "", tag[96];
  skills_field(reply, "Mechanism", mname, sizeof mname);
  skills_field(reply, "Intent", intent, sizeof intent);
  skills_field(reply, "Anchor", anchor, sizeof anchor);
  char *code = code_of(w->t, reply);
  struct kv_mech *m = &L->annot.m[L->annot.n];
  memset(m, 0, sizeof *m);
  clean_name(mname[0] ? mname : "UNNAMED", m->name, sizeof m->name);
  snprintf(m->intent, sizeof m->intent, "%s", intent[0] ? intent : "(no intent given)");
  snprintf(m->anchor, sizeof m->anchor, "%s", anchor);
  m->nblocks = 1;
  struct kv_lineage_step *st = &L->steps[L->nsteps++];
  st->ord = L->nsteps;
  st->mech = L->annot.n++;
  st->child_median_us = st->child_speedup = -1;
  kv_sha256_hex(L->cur, strlen(L->cur), st->parent_hash);
  if (!code || !mname[0]) {
    free(code);
    return refuse(w, L, st, "no_code", "the reply had %s; follow the reply format",
                  !code ? "no kernel in a code block" : "no 'Mechanism:' line");
  }
  st->child_src = code;
  kv_sha256_hex(code, strlen(code), st->child_hash);
  snprintf(tag, sizeof tag, "step%02d-%s", st->ord, m->name);
  if (judge_child(w, L, st, tag) != 0)
    return -1;
  if (!st->accepted) {
    /* no timings in what goes back: the prompt must replay */
    snprintf(L->feedback, sizeof L->feedback, "removing %s gave %s: %.500s", m->name, st->verdict,
             st->detail);
    L->rejections++;
    L->refused_in_row++;
    skills_say(w->o, "step %2d  -%-20s rejected: %s: %.200s", st->ord, m->name, st->verdict,
               st->detail);
    return 0;
  }
  int rc = check_contract(w, L, st, reply);
  if (rc == 1 && w->o->audit)
    rc = run_audit(w, L, st);
  char *rich = NULL;
  if (rc == 1)
    rc = round_trip(w, L, st, tag, &rich);
  if (rc == 1)
    rc = take_step(w, L, st, tag, rich);
  free(rich);
  return rc;
}

/* The model says naive: complete when kevo observes no mechanism left. */
static void naive_stop(struct kv_lineage *L) {
  struct kv_features f;
  kv_features_scan(L->cur, strlen(L->cur), &f);
  uint32_t left = f.bits & kv_features_mask(KV_FEAT_STRATEGY);
  char a[400];
  kv_features_format(left, a, sizeof a);
  snprintf(L->termination, sizeof L->termination, "%s", left ? "unknown" : "complete");
  snprintf(L->stop, sizeof L->stop, "the model says the kernel is naive%s%s",
           left ? "; kevo still observes " : "", left ? a : "");
}

/* One proposal: 0 decided, 1 the walk is over, -1 error, LOST. */
static int propose(struct walk *w, struct kv_lineage *L) {
  if (L->nsteps >= KV_MECH_MAX || L->annot.n >= KV_MECH_MAX) {
    snprintf(L->termination, sizeof L->termination, "step_limit");
    snprintf(L->stop, sizeof L->stop, "%d proposals, the most a lineage holds", KV_MECH_MAX);
    return 1;
  }
  char *prompt = deopt_prompt(&w->wp, w->t, L->surface, L->cur, L, L->refused_in_row + 1,
                              w->retries + 1, L->feedback),
       *reply = NULL;
  if (!prompt)
    return kv_error(w->err, w->errlen, "out of memory");
  int rc = ask(w->llm, w->wp.system, "lineage:deopt", prompt, L->refused_in_row, &reply, w->err,
               w->errlen);
  free(prompt);
  if (rc != 0)
    return rc;
  if (says_naive(reply) && !strstr(reply, "```")) {
    naive_stop(L);
    free(reply);
    return 1;
  }
  rc = step_from_reply(w, L, reply);
  free(reply);
  return rc;
}

static int write_checkpoint(const struct kv_lineage_opts *o, const struct kv_lineage *L, char *err,
                            size_t errlen) {
  if (!o->checkpoint)
    return 0;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s.json", o->checkpoint, L->key);
  json_t *j = skills_walk_json(L);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  int rc = text ? kv_write_file(path, text, strlen(text), err, errlen)
                : kv_error(err, errlen, "out of memory");
  free(text);
  return rc;
}

/* Forgets the proposal in flight when its call was lost (asked again on resume). */
static void drop_undecided(struct kv_lineage *L, int nsteps, int nmech) {
  for (int i = nsteps; i < L->nsteps; i++) {
    struct kv_lineage_step *st = &L->steps[i];
    free(st->child_src);
    free(st->forward_diff);
    free(st->result_json);
    free(st->audit_json);
    memset(st, 0, sizeof *st);
  }
  L->nsteps = nsteps;
  L->annot.n = nmech;
}

static int limit_reached(const struct walk *w, struct kv_lineage *L, int max_steps) {
  const char *why = NULL;
  char buf[200];
  if (L->accepted_steps >= max_steps)
    snprintf(buf, sizeof buf, "%d steps, the most asked for", max_steps), why = "step_limit";
  else if (w->o->max_rejections > 0 && L->rejections >= w->o->max_rejections)
    snprintf(buf, sizeof buf, "%d proposals refused, the most allowed (--max-rejections)",
             L->rejections),
        why = "rejection_limit";
  else if (L->refused_in_row > w->retries)
    snprintf(buf, sizeof buf, "%d proposals in a row were refused", L->refused_in_row),
        why = "rejection_limit";
  if (!why)
    return 0;
  snprintf(L->termination, sizeof L->termination, "%s", why);
  snprintf(L->stop, sizeof L->stop, "%s", buf);
  return 1;
}

/* Proposals until the model says naive or a limit: 0 ended, 1 a call was
 * lost (checkpoint written), -1 error. */
static int walk_loop(struct walk *w, struct kv_lineage *L, int max_steps) {
  while (!limit_reached(w, L, max_steps)) {
    int n0 = L->nsteps, m0 = L->annot.n;
    int rc = propose(w, L);
    if (rc == LOST) {
      drop_undecided(L, n0, m0);
      snprintf(L->termination, sizeof L->termination, "interrupted");
      snprintf(L->stop, sizeof L->stop, "a call to the model was lost: %.200s", w->err);
      skills_say(w->o, "end      %s", L->stop);
      char cerr[512];
      if (write_checkpoint(w->o, L, cerr, sizeof cerr) != 0)
        return kv_error(w->err, w->errlen, "%s; and the walk's checkpoint: %s", L->stop, cerr);
      return 1;
    }
    if (rc < 0)
      return -1;
    if (write_checkpoint(w->o, L, w->err, w->errlen) != 0)
      return -1;
    if (rc == 1)
      break;
  }
  skills_say(w->o, "end      %s", L->stop);
  return write_checkpoint(w->o, L, w->err, w->errlen) != 0 ? -1 : 0;
}

static int walk_run(const struct kv_task *t, const struct kv_lineage_opts *o, struct kv_llm *llm,
                    int retries, int max_steps, struct kv_lineage *L, char *err, size_t errlen) {
  struct walk w = {.t = t,
                   .o = o,
                   .llm = llm,
                   .retries = retries < 0 ? 0 : retries,
                   .ext = skills_ext_of(L->file),
                   .err = err,
                   .errlen = errlen};
  if (max_steps <= 0 || max_steps > KV_MECH_MAX)
    max_steps = KV_MECH_MAX;
  if (walk_prompts_load(o->prompt_dir, &w.wp, err, errlen) < 0)
    return -1;
  w.r = calloc(1, sizeof *w.r);
  int rc = w.r ? walk_loop(&w, L, max_steps) : kv_error(err, errlen, "out of memory");
  free(w.r);
  walk_prompts_free(&w.wp);
  return rc;
}

int kv_lineage_walk_llm(const struct kv_task *t, const char *expert_path,
                        const struct kv_lineage_opts *o, struct kv_llm *llm, int retries,
                        int max_steps, struct kv_lineage *L, char *err, size_t errlen) {
  memset(L, 0, sizeof *L);
  snprintf(L->file, sizeof L->file, "%s", expert_path);
  snprintf(L->mode, sizeof L->mode, "llm");
  snprintf(L->task_dir, sizeof L->task_dir, "%s", t->dir ? t->dir : "");
  kv_sha256_hex(t->json, strlen(t->json), L->spec_hash);
  size_t len = 0;
  if (kv_read_file(expert_path, KV_ANNOT_SRC_MAX, &L->expert_src, &len, err, errlen) != 0)
    return -1;
  kv_sha256_hex(L->expert_src, len, L->expert_hash);
  L->expert_resolved = strdup(L->expert_src);
  L->cur = strdup(L->expert_src);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  int rc = -1;
  if (!r || !L->expert_resolved || !L->cur)
    kv_error(err, errlen, "out of memory");
  else if (skills_say(o, "expert   %s (LLM mode)", expert_path),
           skills_judge_expert(t, o, expert_path, L->expert_src, len, L, r, &L->regs_cur,
                               &L->smem_cur, err, errlen) == 0) {
    skills_lineage_key(L, t);
    rc = walk_run(t, o, llm, retries, max_steps, L, err, errlen);
  }
  free(r);
  if (rc < 0)
    kv_lineage_release(L);
  return rc;
}

static int read_checkpoint(const char *path, json_t **out, char *err, size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(path, 64 << 20, &text, &len, err, errlen) != 0)
    return -1;
  json_error_t je;
  *out = json_loadb(text, len, 0, &je);
  free(text);
  if (!*out)
    return kv_error(err, errlen, "%s: line %d: not JSON: %s; give a checkpoint kevo wrote", path,
                    je.line, je.text);
  return 0;
}

int kv_lineage_checkpoint_task(const char *checkpoint, char *task_dir, size_t cap, char *err,
                               size_t errlen) {
  json_t *j;
  if (read_checkpoint(checkpoint, &j, err, errlen) != 0)
    return -1;
  const char *d = json_string_value(json_object_get(j, "task_dir"));
  int rc =
      d && d[0] ? 0 : kv_error(err, errlen, "%s: task_dir: missing; give the task", checkpoint);
  snprintf(task_dir, cap, "%s", d ? d : "");
  json_decref(j);
  return rc;
}

int kv_lineage_resume_llm(const struct kv_task *t, const char *checkpoint,
                          const struct kv_lineage_opts *o, struct kv_llm *llm, int retries,
                          int max_steps, struct kv_lineage *L, char *err, size_t errlen) {
  json_t *j;
  if (read_checkpoint(checkpoint, &j, err, errlen) != 0)
    return -1;
  char e[600], spec[65];
  int rc = skills_walk_load(j, L, e, sizeof e);
  json_decref(j);
  kv_sha256_hex(t->json, strlen(t->json), spec);
  if (rc != 0)
    kv_error(err, errlen, "%s: %s", checkpoint, e);
  else if (strcmp(spec, L->spec_hash))
    rc = kv_error(err, errlen,
                  "%s: the task's task.json changed since the walk began (%s); resume on the "
                  "task as it was, or walk again",
                  checkpoint, t->dir ? t->dir : t->name);
  else if (L->termination[0] && strcmp(L->termination, "interrupted"))
    rc = kv_error(err, errlen, "%s: the walk ended (%s: %s): nothing to resume", checkpoint,
                  L->termination, L->stop);
  if (rc == 0) {
    L->termination[0] = L->stop[0] = 0;
    skills_say(o, "resume   %s at proposal %d (%d steps taken, %d refused)", L->file, L->nsteps + 1,
               L->accepted_steps, L->rejections);
    rc = walk_run(t, o, llm, retries, max_steps, L, err, errlen);
  }
  if (rc < 0)
    kv_lineage_release(L);
  return rc;
}
