/* The LLM strategies: greedy, best-of-n and ada (an AdaExplore-style tree
 * search). One loop for all three: keep up to `concurrency` requests in
 * flight, judge each kernel as its reply arrives (step.c), record the node,
 * and ask the strategy's pick what to propose next. run.c's strategy table
 * names each strategy's pick; nothing here calls back into run.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/attrib.h"
#include "kevo/llm.h"
#include "kevo/prompt.h"
#include "kevo/reply.h"
#include "kevo/util.h"
#include "kevo/rules.h"
#include "kevo/surface.h"

#define SOURCE_MAX (1 << 20)
#define MAX_PENDING 64
#define MAX_POOL 8
#define MAX_HISTORY 8
#define MAX_LLM_FAILURES 3

/* What a node's judgement says, kept for later prompts. */
struct feedback {
  int verdict;
  char detail[1024];
  char *compile_log;
  int nfail;
  struct kv_check fail[KV_PROMPT_MISMATCH_MAX];
  int timed;
  struct kv_timing timing;
  int nkernels;
  struct kv_kernel_res *kernels;
  char *cand_stderr;
  char *sass; /* static=raw: the listing (kevo/sass.h), capped */
};

struct node {
  int64_t id;
  int step;
  char *code;
  char action[16];
  int verdict; /* kv_verdict, -1: no code in the reply */
  double speedup;
  struct feedback *fb;
};

struct pending {
  uint64_t handle;
  int phase; /* 0: planner, 1: coder */
  int parent;
  int at; /* --tree adaexplore: a large step's parent in the tree (-1: the task) */
  int rt; /* --small-step reviser-tuner: phase 0 the reviser, 1 the tuner */
  enum kv_prompt_kind kind;
  char action[16];
  char params[256];
  int pool[MAX_POOL];
  int npool;
  char *plan;
  int sample;
  unsigned mask;     /* the prompt's blocks */
  unsigned players;  /* online attribution: the players on */
  int randomised;    /* online attribution: a randomised step */
  char skill[256];   /* a skill step: the card's id */
  char *skill_card;  /* its card (Markdown) for the prompt */
  int64_t plan_call; /* the planner's call in the store (its node set once it exists) */
};

struct kva_search {
  struct kv_store *st;
  const struct kv_task *task;
  int64_t task_id, run_id;
  const char *strategy;
  const struct kv_run_config *cfg;
  const struct kv_gate_opts *g;
  const struct kv_run_hooks *h;
  struct kv_llm *llm;
  struct kv_prompts *prompts;
  char *reference;
  char device[256];
  uint64_t rng;
  int cap;
  struct node *nodes;
  struct kva_ada_node *tree;
  int nn;
  struct pending pend[MAX_PENDING];
  int npend;
  int issued;
  int llm_failures;
  const char *stop_reason;
  char last_what[300]; /* what the progress line's last_params points to */
  struct kv_run_progress pr;
  struct kv_attr attr; /* online attribution (attr_on) */
  int attr_on;
};

static void feedback_free(struct feedback *f) {
  if (!f)
    return;
  free(f->compile_log);
  free(f->kernels);
  free(f->cand_stderr);
  free(f->sass);
  free(f);
}

static struct feedback *feedback_of(const struct kv_gate_result *r) {
  struct feedback *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->verdict = (int)r->verdict;
  snprintf(f->detail, sizeof f->detail, "%s", r->detail);
  if (r->compile_log)
    f->compile_log = strndup(r->compile_log, KV_PROMPT_LOG_MAX + 1024);
  if (r->cand_stderr)
    f->cand_stderr = strndup(r->cand_stderr, 2048);
  if (r->sass)
    f->sass = strndup(r->sass, KV_PROMPT_SASS_MAX + 1024);
  for (int i = 0; i < r->nchecks && f->nfail < KV_PROMPT_MISMATCH_MAX; i++)
    if (r->checks[i].verdict != KV_V_OK)
      f->fail[f->nfail++] = r->checks[i];
  f->timed = r->timed;
  f->timing = r->timing;
  if (r->nkernels > 0) {
    f->kernels = calloc((size_t)r->nkernels, sizeof *f->kernels);
    if (f->kernels) {
      memcpy(f->kernels, r->kernels, (size_t)r->nkernels * sizeof *f->kernels);
      f->nkernels = r->nkernels;
    }
  }
  return f;
}

/* A gate result rebuilt from feedback, for the prompt's feedback blocks. */
static void result_of(const struct feedback *f, struct kv_gate_result *r) {
  memset(r, 0, sizeof *r);
  r->verdict = (enum kv_verdict)f->verdict;
  snprintf(r->detail, sizeof r->detail, "%s", f->detail);
  r->compile_log = f->compile_log;
  r->cand_stderr = f->cand_stderr;
  r->sass = f->sass;
  r->nchecks = f->nfail;
  memcpy(r->checks, f->fail, (size_t)f->nfail * sizeof *f->fail);
  r->timed = f->timed;
  r->timing = f->timing;
  r->nkernels = f->nkernels;
  if (f->nkernels)
    memcpy(r->kernels, f->kernels, (size_t)f->nkernels * sizeof *f->kernels);
}

static int grow(struct kva_search *s, char *err, size_t errlen) {
  if (s->nn < s->cap)
    return 0;
  int cap = s->cap ? s->cap * 2 : 64;
  struct node *n = realloc(s->nodes, (size_t)cap * sizeof *n);
  if (n)
    s->nodes = n;
  struct kva_ada_node *t = realloc(s->tree, (size_t)cap * sizeof *t);
  if (t)
    s->tree = t;
  if (!n || !t)
    return kv_error(err, errlen, "out of memory");
  s->cap = cap;
  return 0;
}

/* Nodes are added in step order and the store's ids grow with the steps of
 * a run, so the ids are sorted: binary search. */
static int index_of_id(const struct kva_search *s, int64_t id) {
  int lo = 0, hi = s->nn - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->nodes[mid].id == id)
      return mid;
    if (s->nodes[mid].id < id)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return -1;
}

/* Adds an evaluated node to the in-memory tree. */
static int add_node(struct kva_search *s, int64_t id, int step, int parent, const char *action,
                    char *code, int verdict, double speedup, struct feedback *fb, char *err,
                    size_t errlen) {
  if (grow(s, err, errlen) < 0) {
    free(code);
    feedback_free(fb);
    return -1;
  }
  int i = s->nn++;
  struct node *n = &s->nodes[i];
  memset(n, 0, sizeof *n);
  n->id = id;
  n->step = step;
  n->code = code;
  snprintf(n->action, sizeof n->action, "%s", action ? action : "?");
  n->verdict = verdict;
  n->speedup = speedup;
  n->fb = fb;
  struct kva_ada_node *t = &s->tree[i];
  memset(t, 0, sizeof *t);
  t->parent = parent;
  t->chain = parent >= 0 ? s->tree[parent].chain : i;
  t->small = parent >= 0 ? s->tree[parent].small + 1 : 0;
  t->large = s->cfg->llm.tree == KV_TREE_ADAEXPLORE && action && !strcmp(action, "large");
  if (t->large) /* AdaExplore: a large step begins a component of its own */
    t->chain = i, t->small = 0;
  t->has_code = verdict >= 0 && code != NULL;
  t->reward = kva_ada_reward_as(s->cfg->llm.reward, verdict, speedup);
  kva_ada_backprop(s->tree, i);
  return i;
}

/* What to ask next. */
struct kva_pick {
  int parent; /* -1: none */
  int at;     /* --tree adaexplore: a large step's place in the tree (-1: the task) */
  enum kv_prompt_kind kind;
  const char *action;
  int pool[MAX_POOL];
  int npool;
};

static int best_accepted(const struct kva_search *s) {
  int b = -1;
  for (int i = 0; i < s->nn; i++)
    if (s->nodes[i].verdict == KV_V_OK && (b < 0 || s->nodes[i].speedup > s->nodes[b].speedup))
      b = i;
  return b;
}

static void small_step(const struct kva_search *s, int at, struct kva_pick *p) {
  p->parent = at;
  int ok = s->nodes[at].verdict == KV_V_OK;
  p->kind = ok ? KV_PK_REFINE : KV_PK_DEBUG;
  p->action = ok ? "refine" : "debug";
}

/* The strategies' picks (internal.h). */
void kva_pick_best_of_n(struct kva_search *s, struct kva_pick *p) {
  (void)s;
  p->parent = -1;
  p->kind = KV_PK_WRITE;
  p->action = "sample";
}

void kva_pick_greedy(struct kva_search *s, struct kva_pick *p) {
  int b = best_accepted(s);
  if (b < 0) /* nothing accepted yet: debug the latest kernel with code */
    for (int i = s->nn - 1; i >= 0 && b < 0; i--)
      if (s->tree[i].has_code)
        b = i;
  if (b < 0)
    kva_pick_best_of_n(s, p);
  else
    small_step(s, b, p);
}

/* AdaExplore as released: descend or expand by its rule; the task takes a
 * large step, a node with small_limit small-step children too, else one at
 * p_large. A large step's node is a child of the node selected. */
static void pick_adaexplore(struct kva_search *s, struct kva_pick *p) {
  const struct kv_run_llm_settings *a = &s->cfg->llm;
  int at = kva_ada_select_adaexplore(s->tree, s->nn, a->c_explore);
  int large = at < 0 || kva_ada_small_children(s->tree, s->nn, at) >= a->small_limit ||
              kva_ada_uniform(&s->rng) < a->p_large;
  if (!large) {
    small_step(s, at, p);
    return;
  }
  p->parent = -1;
  p->at = at;
  p->kind = KV_PK_WRITE;
  p->action = "large";
  int max = a->pool_max < MAX_POOL ? a->pool_max : MAX_POOL;
  p->npool = kva_ada_pool_path(s->tree, s->nn, at, max, &s->rng, p->pool);
}

void kva_pick_ada(struct kva_search *s, struct kva_pick *p) {
  const struct kv_run_llm_settings *a = &s->cfg->llm;
  if (a->tree == KV_TREE_ADAEXPLORE) {
    pick_adaexplore(s, p);
    return;
  }
  int at = kva_ada_select(s->tree, s->nn, a->c_explore);
  int large =
      at < 0 || kva_ada_uniform(&s->rng) < a->p_large || s->tree[at].small >= a->small_limit;
  if (!large) {
    small_step(s, at, p);
    return;
  }
  p->parent = -1;
  p->kind = KV_PK_WRITE;
  p->action = "large";
  int max = a->pool_max < MAX_POOL ? a->pool_max : MAX_POOL;
  p->npool = kva_ada_pool(s->tree, s->nn, max, &s->rng, p->pool);
}

static char *build_prompt(struct kva_search *s, const struct pending *pd, enum kv_prompt_kind kind,
                          const char *plan, char *err, size_t errlen) {
  struct kv_prompt_ctx c = {0};
  c.task = s->task;
  c.surface = s->g->surface ? s->g->surface : "cpu";
  c.device = s->device;
  c.reference = s->reference;
  struct kv_gate_result *r = NULL;
  if (pd->parent >= 0) {
    const struct node *n = &s->nodes[pd->parent];
    c.parent_code = n->code;
    c.parent_step = n->step;
    if (n->fb) {
      r = malloc(sizeof *r);
      if (!r) {
        kv_error(err, errlen, "out of memory");
        return NULL;
      }
      result_of(n->fb, r);
      c.parent = r;
    }
  }
  struct kv_prompt_attempt hist[MAX_POOL + MAX_HISTORY];
  int nh = 0;
  for (int i = 0; i < pd->npool; i++) {
    const struct node *n = &s->nodes[pd->pool[i]];
    hist[nh++] = (struct kv_prompt_attempt){
        n->step, n->action, n->verdict >= 0 ? kv_verdict_name(n->verdict) : "no_code",
        n->verdict == KV_V_OK ? n->speedup : 0, n->code};
  }
  for (int i = s->nn - 1; i >= 0 && i >= s->nn - MAX_HISTORY; i--) {
    const struct node *n = &s->nodes[i];
    hist[nh++] = (struct kv_prompt_attempt){
        n->step, n->action, n->verdict >= 0 ? kv_verdict_name(n->verdict) : "no_code",
        n->verdict == KV_V_OK ? n->speedup : 0, NULL};
  }
  c.history = hist;
  c.nhistory = nh;
  c.plan = plan;
  c.skill = pd->skill_card;
  char **rules = NULL;
  int nrules = 0;
  if (pd->mask & (1u << KV_PB_RULES)) {
    char arch[32];
    kv_rules_arch_of(c.surface, s->device, arch, sizeof arch);
    kv_rules_active_for(s->st, s->cfg->llm.rule_threshold, c.surface, arch, &rules, &nrules, NULL,
                        0);
  }
  c.rules = (const char *const *)rules;
  c.nrules = nrules;
  char *text = kv_prompt_build(s->prompts, kind, pd->mask, &c, err, errlen);
  kv_rules_free(rules, nrules);
  free(r);
  return text;
}

static int submit(struct kva_search *s, struct pending *pd, enum kv_prompt_kind kind,
                  const char *role, char *err, size_t errlen) {
  char *text = build_prompt(s, pd, kind, pd->plan, err, errlen);
  if (!text)
    return -1;
  struct kv_llm_message m = {"user", text};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = role;
  q.system = kv_prompts_system(s->prompts);
  q.messages = &m;
  q.n_messages = 1;
  q.sample = pd->sample;
  q.run_id = s->run_id;
  int rc = kv_llm_submit(s->llm, &q, &pd->handle, err, errlen);
  free(text);
  return rc;
}

/* ---- AdaExplore's small step: the Reviser, then the Tuner (revise.c) ---- */

/* A node's result, one paragraph, for the reviser and the tuner. */
static void rt_result(const struct node *n, struct kv_buf *b) {
  if (n->verdict < 0 || !n->fb) {
    kv_buf_appendf(b, "%s\n", n->verdict < 0 ? "no code" : "not judged");
    return;
  }
  kv_buf_appendf(b, "%s: %s", kv_verdict_name(n->verdict), n->fb->detail);
  if (n->verdict == KV_V_OK && n->speedup > 0)
    kv_buf_appendf(b, " (%.2fx the reference)", n->speedup);
  if (n->fb->compile_log && *n->fb->compile_log)
    kv_buf_appendf(b, "\nCompiler output:\n%.2000s", n->fb->compile_log);
  kv_buf_appendf(b, "\n");
}

/* The tuner's context: the path from the parent back to the nearest node a
 * large step made (or a chain's root), at most KVA_RT_CONTEXT nodes with
 * the parent, oldest first, the parent left out (it is the kernel to edit). */
static void rt_context(const struct kva_search *s, int parent, struct kv_buf *b) {
  int path[KVA_RT_CONTEXT], np = 0;
  for (int i = parent; i >= 0 && np < KVA_RT_CONTEXT; i = s->tree[i].parent) {
    path[np++] = i;
    if (s->tree[i].large || s->tree[i].parent < 0)
      break;
  }
  for (int k = np - 1; k >= 1; k--) {
    const struct node *n = &s->nodes[path[k]];
    kv_buf_appendf(b, "### step %d (%s)\n```\n%.8000s```\n", n->step, n->action,
                   n->code ? n->code : "(no code)\n");
    rt_result(n, b);
  }
}

static int submit_rt(struct kva_search *s, struct pending *pd, int tuner, char *err,
                     size_t errlen) {
  const struct node *n = &s->nodes[pd->parent];
  struct kv_buf res, ctx;
  kv_buf_init(&res, 8192);
  kv_buf_init(&ctx, 64u << 10);
  rt_result(n, &res);
  if (tuner)
    rt_context(s, pd->parent, &ctx);
  struct kva_rt_ctx c = {s->task->name, s->task->summary, s->task->entry, s->reference,
                         ctx.data,      n->code,          res.data,       pd->plan};
  char *text = kva_rt_prompt(s->cfg->llm.prompt_dir, tuner, &c, err, errlen);
  kv_buf_release(&res);
  kv_buf_release(&ctx);
  if (!text)
    return -1;
  struct kv_llm_message m = {"user", text};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = tuner ? "tuner" : "reviser";
  q.system = kv_prompts_system(s->prompts);
  q.messages = &m;
  q.n_messages = 1;
  q.sample = pd->sample;
  q.run_id = s->run_id;
  int rc = kv_llm_submit(s->llm, &q, &pd->handle, err, errlen);
  free(text);
  return rc;
}

/* The tuner's edits applied to the parent, as a reply with the whole kernel
 * (malloc'd into *out), or NULL with why in the node's params. */
static const char *rt_reply(struct kva_search *s, struct pending *pd, const char *reply,
                            char **out) {
  char why[200], *code = NULL;
  int n = kva_rt_apply(s->nodes[pd->parent].code, reply, &code, why, sizeof why);
  size_t u = strlen(pd->params);
  if (n < 0) {
    snprintf(pd->params + u, sizeof pd->params - u, "%sedit failed: %s", u ? " " : "", why);
    return NULL;
  }
  snprintf(pd->params + u, sizeof pd->params - u, "%sedits=%d", u ? " " : "", n);
  const char *ext = kv_surface_ext(kv_surface_find(s->g->surface));
  size_t cap = strlen(code) + 64;
  *out = malloc(cap);
  if (*out)
    snprintf(*out, cap, "```%s\n%s\n```\n", !strcmp(ext, "cu") ? "cuda" : ext, code);
  free(code);
  return *out;
}

static void progress(struct kva_search *s, const char *verdict, const char *what) {
  struct kv_llm_spend sp;
  kv_llm_spent(s->llm, &sp);
  s->pr.usd = sp.usd;
  s->pr.llm_calls = sp.calls;
  s->pr.in_flight = sp.in_flight;
  s->pr.step = s->nn;
  s->pr.last_verdict = verdict;
  if (what != s->last_what)
    snprintf(s->last_what, sizeof s->last_what, "%s", what ? what : "");
  s->pr.last_params = s->last_what;
  s->pr.stop_reason = s->stop_reason;
  if (s->h && s->h->progress)
    s->h->progress(s->h->ud, &s->pr);
}

/* Online attribution: the step's players (kevo/attrib.h), and on a
 * randomised step what each player's block adds to the prompt; both go into
 * the node's params. */
static void attr_step(struct kva_search *s, struct pending *pd) {
  unsigned base = s->cfg->llm.prompt_mask;
  pd->mask = base;
  if (!s->attr_on)
    return;
  pd->players = kv_attr_draw(&s->attr, &pd->randomised);
  size_t bytes[KV_ATTR_MAX] = {0};
  if (pd->randomised) {
    unsigned all = 0;
    for (int i = 0; i < s->attr.n; i++)
      all |= s->attr.off[i] ? 0 : 1u << i;
    pd->mask = kv_attr_prompt_mask(&s->attr, base, all);
    char *full = build_prompt(s, pd, pd->kind, NULL, NULL, 0);
    for (int i = 0; full && i < s->attr.n; i++) {
      if (!(all & (1u << i)))
        continue;
      pd->mask = kv_attr_prompt_mask(&s->attr, base, all & ~(1u << i));
      char *less = build_prompt(s, pd, pd->kind, NULL, NULL, 0);
      bytes[i] = less && strlen(full) > strlen(less) ? strlen(full) - strlen(less) : 0;
      kv_attr_cost_seen(&s->attr, i, bytes[i]);
      free(less);
    }
    free(full);
  }
  pd->mask = kv_attr_prompt_mask(&s->attr, base, pd->players);
  char t[200];
  kv_attr_params(&s->attr, pd->players, pd->randomised, bytes, t, sizeof t);
  size_t u = strlen(pd->params);
  if (t[0])
    snprintf(pd->params + u, sizeof pd->params - u, "%s%s", u ? " " : "", t);
}

/* --skills on: a refine step of an accepted kernel becomes a skill step when
 * a matching skill was not applied on the parent's path. */
static void skill_step(struct kva_search *s, struct pending *pd) {
  if (!s->h || !s->h->skill_pick || pd->kind != KV_PK_REFINE || pd->parent < 0)
    return;
  int64_t path[256];
  int np = 0;
  for (int i = pd->parent; i >= 0 && np < 256; i = s->tree[i].parent)
    path[np++] = s->nodes[i].id;
  char *card = NULL, uid[256] = "";
  if (s->h->skill_pick(s->h->skill_ud, s->nodes[pd->parent].code, s->device, path, np, &card,
                       uid) != 1 ||
      !card)
    return;
  pd->skill_card = card;
  snprintf(pd->skill, sizeof pd->skill, "%s", uid);
  snprintf(pd->action, sizeof pd->action, "skill");
  size_t u = strlen(pd->params);
  snprintf(pd->params + u, sizeof pd->params - u, "%sskill=%s", u ? " " : "", uid);
}

/* Proposes and submits one request; 1 when the budget refused it. */
static int propose(struct kva_search *s, kva_pick_fn *pick, char *err, size_t errlen) {
  struct kva_pick p = {.parent = -1, .at = -1};
  pick(s, &p);
  struct pending *pd = &s->pend[s->npend];
  memset(pd, 0, sizeof *pd);
  pd->parent = p.parent;
  pd->at = p.parent >= 0 ? p.parent : p.at;
  pd->kind = p.kind;
  snprintf(pd->action, sizeof pd->action, "%s", p.action);
  pd->npool = p.npool;
  memcpy(pd->pool, p.pool, sizeof p.pool);
  pd->sample = s->issued;
  size_t used = 0;
  pd->params[0] = 0;
  if (p.parent >= 0)
    used += (size_t)snprintf(pd->params, sizeof pd->params, "parent=%d", s->nodes[p.parent].step);
  else if (p.at >= 0)
    used += (size_t)snprintf(pd->params, sizeof pd->params, "at=%d", s->nodes[p.at].step);
  for (int i = 0; i < p.npool && used < sizeof pd->params; i++)
    used += (size_t)snprintf(pd->params + used, sizeof pd->params - used, "%s%d",
                             i ? "," : (used ? " pool=" : "pool="), s->nodes[p.pool[i]].step);
  skill_step(s, pd);
  attr_step(s, pd);
  pd->phase = s->cfg->llm.plan_explicit ? 0 : 1;
  pd->rt = s->cfg->llm.small_step == KV_SMALL_REVISER_TUNER && p.parent >= 0 && !pd->skill[0] &&
           s->nodes[p.parent].code;
  int rc = pd->rt           ? (pd->phase = 0, submit_rt(s, pd, 0, err, errlen))
           : pd->phase == 0 ? submit(s, pd, KV_PK_PLAN, "planner", err, errlen)
                            : submit(s, pd, p.kind, "coder", err, errlen);
  if (rc == KV_LLM_EBUDGET) {
    s->stop_reason = KVA_BUDGET_STOP;
    return 1;
  }
  if (rc < 0)
    return -1;
  s->issued++;
  s->npend++;
  return 0;
}

static void pending_drop(struct kva_search *s, int k) {
  free(s->pend[k].plan);
  free(s->pend[k].skill_card);
  s->pend[k] = s->pend[--s->npend];
}

/* A reply without code: the reply itself is the node's source; nothing to
 * judge. */
static int record_no_code(struct kva_search *s, const struct kv_node_record *node, const char *text,
                          int64_t *node_id, char *err, size_t errlen) {
  char hash[65];
  size_t len = strlen(text);
  kv_sha256_hex(text, len, hash);
  struct kv_node_record nr = *node;
  nr.source_hash = hash;
  nr.verdict = "no_code";
  nr.speedup = -1;
  nr.reward = 0;
  int rc = kv_store_put_source(s->st, hash, text, len, err, errlen);
  if (rc == 0)
    rc = kv_store_node_add(s->st, &nr, node_id, err, errlen);
  return rc;
}

/* The memory of validity rules learns from a judged kernel: a failure's
 * rules; an accepted kernel flags the rules it shows to be wrong. */
static void learn_rules(struct kva_search *s, const struct kv_gate_result *r, const char *code,
                        int64_t eval_id, int64_t node_id) {
  unsigned src = s->cfg->llm.rule_sources;
  if (r->verdict != KV_V_OK && src && !(src & kv_rule_source_of((int)r->verdict)))
    return; /* --rule-sources: not a failure rules are learnt from */
  if (r->verdict != KV_V_OK)
    kv_rules_learn(s->st, s->task, s->prompts, r, code, s->g->surface, eval_id,
                   s->cfg->llm.rules_llm ? s->llm : NULL, s->run_id, node_id, NULL, 0);
  else
    kv_rules_check_accepted(s->st, code, s->g->surface, eval_id, s->task->name, NULL, NULL, 0);
}

/* What a reply must define: the task's entry, or the torch surface's ModelNew. */
static const char *entry_of(const struct kva_search *s) {
  return kv_surface_entry(kv_surface_find(s->g->surface), s->task);
}

/* A coder's reply: judge its kernel and record the node. */
static int judge(struct kva_search *s, struct pending *pd, const struct kv_llm_result *res,
                 struct kv_gate_result *r, char *err, size_t errlen) {
  struct kv_reply rp;
  char perr[256], *edited = NULL;
  const char *text = pd->rt ? rt_reply(s, pd, res->text, &edited) : res->text;
  int parsed = text && kv_reply_parse(text, strlen(text), entry_of(s), &rp, perr, sizeof perr) == 0;
  free(edited);
  const char *plan = pd->plan ? pd->plan : parsed && *rp.plan ? rp.plan : NULL;
  struct kv_node_record nr = {0};
  nr.run_id = s->run_id;
  nr.parent_id = pd->at >= 0 ? s->nodes[pd->at].id : 0;
  nr.step = s->nn;
  nr.action = pd->action;
  nr.params = pd->params;
  nr.plan = plan;
  int rc = 0, verdict = -1;
  double speedup = -1, lo = 0, hi = 0, cv = 0; /* an accepted kernel's interval and CV */
  char hash_ok[65] = "";
  struct feedback *fb = NULL;
  char *code = NULL;
  int64_t node_id = 0, eval_id = 0;
  if (!parsed) {
    rc = record_no_code(s, &nr, res->text, &node_id, err, errlen);
  } else {
    memset(r, 0, sizeof *r);
    struct kva_step_out out = {0};
    rc = kva_step(s->h->exec, s->st, s->task, s->task_id, &nr, rp.code, strlen(rp.code), s->g, r,
                  1 + s->cfg->llm.reward, &out, err, errlen);
    if (rc == 1) { /* no gate server could judge it: an unjudged node */
      rc = 0;
      node_id = out.node_id;
      code = strdup(rp.code);
    } else if (rc == 0) {
      verdict = (int)r->verdict;
      speedup = r->verdict == KV_V_OK && r->timed ? r->timing.speedup : -1;
      lo = r->timing.speedup_lo;
      hi = r->timing.speedup_hi;
      cv = r->timing.cand.cv;
      snprintf(hash_ok, sizeof hash_ok, "%s", r->source_hash);
      fb = feedback_of(r);
      code = strdup(rp.code);
      node_id = out.node_id;
      eval_id = out.eval_id;
      if (r->device[0])
        snprintf(s->device, sizeof s->device, "%s", r->device);
      learn_rules(s, r, rp.code, eval_id, node_id);
    }
    kv_gate_result_release(r);
  }
  if (parsed)
    kv_reply_release(&rp);
  if (rc < 0) {
    free(code);
    feedback_free(fb);
    return -1;
  }
  /* the calls that wrote the node name it (llm calls, the report) */
  if (kv_store_llm_call_set_node(s->st, res->call_id, node_id, err, errlen) < 0 ||
      kv_store_llm_call_set_node(s->st, pd->plan_call, node_id, err, errlen) < 0) {
    free(code);
    feedback_free(fb);
    return -1;
  }
  int parent = pd->at;
  if (add_node(s, node_id, nr.step, parent, pd->action, code, verdict,
               verdict == KV_V_OK ? (speedup > 0 ? speedup : 0) : -1, fb, err, errlen) < 0)
    return -1;
  if (pd->skill[0] && s->h->skill_used)
    s->h->skill_used(s->h->skill_ud, pd->skill, s->run_id, node_id, eval_id,
                     verdict >= 0 ? kv_verdict_name(verdict) : "no_code", speedup,
                     parent >= 0 ? s->nodes[parent].speedup : -1);
  if (verdict >= 0 && verdict < KV_V_COUNT)
    s->pr.counts[verdict]++;
  if (verdict == KV_V_OK)
    kv_run_progress_accepted(&s->pr, hash_ok, speedup, lo, hi, cv);
  char note[512] = "";
  if (s->attr_on && pd->randomised && (!parsed || verdict >= 0) && /* unjudged: no outcome */
      kv_attr_observe(&s->attr, pd->players, s->tree[s->nn - 1].reward, nr.step, note,
                      sizeof note) >= 0 &&
      kv_store_node_note(s->st, node_id, note, err, errlen) < 0)
    return -1;
  s->pr.note = note[0] ? note : NULL;
  char what[300];
  snprintf(what, sizeof what, "%s%s%s", pd->action, pd->params[0] ? " " : "", pd->params);
  progress(s, verdict >= 0 ? kv_verdict_name(verdict) : "no_code", what);
  s->pr.note = NULL;
  return 0;
}

static int on_result(struct kva_search *s, int k, const struct kv_llm_result *res,
                     struct kv_gate_result *r, char *err, size_t errlen) {
  struct pending *pd = &s->pend[k];
  if (res->code != KV_LLM_OK) {
    pending_drop(s, k);
    if (res->code == KV_LLM_EBUDGET) {
      s->stop_reason = KVA_BUDGET_STOP;
      return 0;
    }
    if (++s->llm_failures >= MAX_LLM_FAILURES)
      return kv_error(err, errlen, "%d LLM calls failed in a row; the last: %s", s->llm_failures,
                      res->error);
    return 0;
  }
  s->llm_failures = 0;
  if (pd->phase == 0 && pd->rt) { /* the reviser's guidance, to the tuner */
    pd->plan = strndup(res->text, 4000);
    pd->plan_call = res->call_id;
    pd->phase = 1;
    int rc = pd->plan ? submit_rt(s, pd, 1, err, errlen) : kv_error(err, errlen, "out of memory");
    if (rc == KV_LLM_EBUDGET)
      s->stop_reason = KVA_BUDGET_STOP;
    if (rc != 0)
      pending_drop(s, k);
    return rc == KV_LLM_EBUDGET ? 0 : rc;
  }
  if (pd->phase == 0) {
    char *plan = NULL;
    if (kv_reply_plan(res->text, strlen(res->text), &plan, NULL, 0) < 0 || !plan) {
      pending_drop(s, k);
      return 0;
    }
    pd->plan = plan;
    pd->plan_call = res->call_id;
    pd->phase = 1;
    int rc = submit(s, pd, pd->kind, "coder", err, errlen);
    if (rc == KV_LLM_EBUDGET) {
      s->stop_reason = KVA_BUDGET_STOP;
      pending_drop(s, k);
      return 0;
    }
    if (rc < 0) {
      pending_drop(s, k);
      return -1;
    }
    return 0;
  }
  struct pending copy = *pd;
  s->pend[k] = s->pend[--s->npend]; /* copy owns the plan now */
  int rc = judge(s, &copy, res, r, err, errlen);
  free(copy.plan);
  free(copy.skill_card);
  return rc;
}

/* The compile pool: builds the kernels of several coder replies in parallel
 * into the gate's cache. Best effort: whatever fails here is judged (and
 * reported) by the gate afterwards. */
static void prebuild(struct kva_search *s, const struct kv_llm_result *done, int nd) {
  char cache[PATH_MAX - 64], dir[PATH_MAX - 32], paths[MAX_PENDING][PATH_MAX];
  const char *list[MAX_PENDING];
  int n = 0;
  if (s->g && s->g->cache_dir)
    snprintf(cache, sizeof cache, "%s", s->g->cache_dir);
  else if (kv_cache_dir(cache, sizeof cache) < 0)
    return;
  if (kv_mkdtemp(cache, "pool", dir, sizeof dir, NULL, 0) < 0)
    return;
  const char *ext = kv_surface_ext(kv_surface_find(s->g->surface));
  for (int d = 0; d < nd; d++) {
    int coder = 0;
    for (int i = 0; i < s->npend; i++)
      if (s->pend[i].handle == done[d].handle && s->pend[i].phase == 1)
        coder = 1;
    struct kv_reply rp;
    if (!coder || done[d].code != KV_LLM_OK || !done[d].text ||
        kv_reply_parse(done[d].text, strlen(done[d].text), entry_of(s), &rp, NULL, 0) < 0)
      continue;
    snprintf(paths[n], sizeof paths[n], "%s/c%d.%s", dir, n, ext);
    if (kv_write_file(paths[n], rp.code, strlen(rp.code), NULL, 0) == 0) {
      list[n] = paths[n];
      n++;
    }
    kv_reply_release(&rp);
  }
  if (n > 1)
    kv_gate_prebuild(s->task, list, n, s->g, NULL, 0);
  kv_rmtree(dir);
}

/* With an executor: the kernels of several coder replies go to its servers
 * at once; judge() takes each result in turn. Best effort, like prebuild. */
static void prefetch(struct kva_search *s, const struct kv_llm_result *done, int nd) {
  for (int d = 0; d < nd; d++) {
    int coder = 0;
    for (int i = 0; i < s->npend; i++)
      if (s->pend[i].handle == done[d].handle && s->pend[i].phase == 1)
        coder = 1;
    struct kv_reply rp;
    if (!coder || done[d].code != KV_LLM_OK || !done[d].text ||
        kv_reply_parse(done[d].text, strlen(done[d].text), entry_of(s), &rp, NULL, 0) < 0)
      continue;
    kva_step_prefetch(s->h->exec, s->task, rp.code, strlen(rp.code), s->g, NULL, 0);
    kv_reply_release(&rp);
  }
}

static void search_free(struct kva_search *s) {
  for (int i = 0; i < s->nn; i++) {
    free(s->nodes[i].code);
    feedback_free(s->nodes[i].fb);
  }
  for (int i = 0; i < s->npend; i++) {
    free(s->pend[i].plan);
    free(s->pend[i].skill_card);
  }
  free(s->nodes);
  free(s->tree);
  free(s->reference);
  kv_prompts_free(s->prompts);
  kv_attr_free(&s->attr);
}

/* Rebuilds the tree from the store's nodes (resume). */
static int load_nodes(struct kva_search *s, const struct kv_node_row *rows, int n, char *err,
                      size_t errlen) {
  s->attr.replay = 1;
  for (int i = 0; i < n; i++) {
    const struct kv_node_row *w = &rows[i];
    int parent = w->parent_id > 0 ? index_of_id(s, w->parent_id) : -1;
    int verdict = w->verdict ? kv_verdict_from_name(w->verdict) : -1;
    size_t len = 0;
    char *code = verdict >= 0 ? kv_store_get_source(s->st, w->source_hash, &len) : NULL;
    /* its judgement as recorded, as the live run kept it (feedback_of) */
    struct feedback *fb = NULL;
    if (verdict >= 0) {
      struct kv_gate_result *r = calloc(1, sizeof *r);
      struct kv_eval_row ev;
      if (r && w->eval_id > 0 && kv_store_get_eval(s->st, w->eval_id, &ev, NULL, 0) == 0) {
        if (kv_gate_result_from_json(ev.result_json, r, NULL, 0) < 0)
          snprintf(r->detail, sizeof r->detail, "%s", ev.detail ? ev.detail : "");
        kv_eval_row_release(&ev);
      }
      if (r) {
        r->verdict = (enum kv_verdict)verdict;
        fb = feedback_of(r);
        kv_gate_result_release(r);
        free(r);
      }
    }
    double sp = verdict == KV_V_OK ? (w->speedup > 0 ? w->speedup : 0) : -1;
    if (add_node(s, w->id, w->step, parent, w->action, code, verdict, sp, fb, err, errlen) < 0)
      return -1;
    if (verdict >= 0 && verdict < KV_V_COUNT)
      s->pr.counts[verdict]++;
    if (verdict == KV_V_OK) /* its interval is not read back: unknown, never "luck" */
      kv_run_progress_accepted(&s->pr, w->source_hash, w->speedup, 0, 0, 0);
    /* Online attribution: its judged randomised steps again (the fit does
     * not depend on their order), and its decisions as recorded, where they
     * were taken: live, steps are observed in the order they were judged,
     * which with concurrency is not the order of the rows, so deciding
     * again here could decide differently. */
    unsigned players;
    if (s->attr_on && verdict >= 0 && kv_attr_params_read(&s->attr, w->params, &players))
      kv_attr_observe(&s->attr, players, s->tree[s->nn - 1].reward, w->step, NULL, 0);
    if (s->attr_on)
      kv_attr_apply_note(&s->attr, w->params);
  }
  s->attr.replay = 0;
  s->issued = n;
  return 0;
}

/* A search of run_id before its prompts, reference and nodes are loaded
 * (nrows: the nodes the store holds, which seed online attribution). */
static void search_init(struct kva_search *s, struct kv_store *st, const struct kv_task *t,
                        int64_t task_id, int64_t run_id, const struct kv_run_config *c,
                        const struct kv_gate_opts *g, const struct kv_run_hooks *h, int nrows) {
  memset(s, 0, sizeof *s);
  s->st = st;
  s->task = t;
  s->task_id = task_id;
  s->run_id = run_id;
  s->strategy = c->strategy;
  s->cfg = c;
  s->g = g;
  s->h = h;
  s->llm = h->llm;
  s->rng = c->seed ^ 0x6b65766f61646121ull;
  s->pr.run_id = run_id;
  s->pr.steps = c->steps;
  if (c->llm.attr_share > 0) {
    struct kv_attr_opts ao = {c->llm.attr_share, c->llm.attr_price, 0};
    /* static analysis exists on the cuda surface only: elsewhere it would be
     * a player that never plays */
    unsigned players = c->llm.prompt_mask;
    if (!kv_surface_analyzed(kv_surface_find(g->surface)))
      players &= ~(1u << KV_PB_STATIC);
    kv_attr_init(&s->attr, players, &ao, c->seed ^ (uint64_t)nrows);
    s->attr_on = s->attr.n > 0;
  }
}

/* Takes every reply that has arrived, compiles their kernels at once, then
 * judges them one by one (timing needs the device to itself). 0 or -1. */
static int take_replies(struct kva_search *s, struct kv_gate_result *r, char *err, size_t errlen) {
  struct kv_llm_result done[MAX_PENDING];
  int nd = 0, rc = 0;
  while (nd < MAX_PENDING && kv_llm_complete(s->llm, 0, &done[nd]) == 1)
    nd++;
  if (nd > 1 && s->h->exec) /* judged at once by the executor's servers */
    prefetch(s, done, nd);
  else if (nd > 1)
    prebuild(s, done, nd);
  for (int d = 0; d < nd; d++) {
    int k = -1;
    for (int i = 0; i < s->npend; i++)
      if (s->pend[i].handle == done[d].handle)
        k = i;
    if (k >= 0 && rc == 0 && !(s->h->stop && *s->h->stop))
      rc = on_result(s, k, &done[d], r, err, errlen);
    kv_llm_result_release(&done[d]);
  }
  return rc;
}

int kva_need_llm(const struct kv_run_config *c, const struct kv_run_hooks *h, char *err,
                 size_t errlen) {
  if (!h || !h->llm)
    return kv_error(err, errlen,
                    "--strategy %s needs an LLM: configure a model (kevo.json or --model, "
                    "--base-url) or use --strategy tune",
                    c->strategy);
  return 0;
}

int kva_search_llm(struct kv_store *st, const struct kv_task *t, int64_t task_id, int64_t run_id,
                   kva_pick_fn *pick, const struct kv_run_config *c, const struct kv_gate_opts *g,
                   const struct kv_run_hooks *h, const struct kv_node_row *rows, int nrows,
                   char *err, size_t errlen) {
  if (kva_need_llm(c, h, err, errlen) < 0)
    return -1;
  struct kva_search s;
  search_init(&s, st, t, task_id, run_id, c, g, h, nrows);
  int rc = kv_prompts_load(c->llm.prompt_dir, &s.prompts, err, errlen);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (rc == 0 && !r)
    rc = kv_error(err, errlen, "out of memory");
  if (rc == 0) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/reference.%s", t->dir,
             kv_surface_ext(kv_surface_find(g->surface)));
    size_t len;
    if (kv_read_file(path, SOURCE_MAX, &s.reference, &len, NULL, 0) < 0)
      s.reference = NULL;
    rc = load_nodes(&s, rows, nrows, err, errlen);
  }
  int concurrency = c->llm.concurrency < 1             ? 1
                    : c->llm.concurrency > MAX_PENDING ? MAX_PENDING
                                                       : c->llm.concurrency;
  int stopped = 0;
  while (rc == 0) {
    if (h->stop && *h->stop) {
      stopped = 1;
      break;
    }
    while (!s.stop_reason && s.npend < concurrency && s.nn + s.npend < c->steps) {
      int p = propose(&s, pick, err, errlen);
      if (p < 0)
        rc = -1;
      if (p != 0)
        break;
    }
    if (rc < 0 || s.npend == 0)
      break;
    if (kv_llm_poll(s.llm, 0.2, err, errlen) < 0) {
      rc = -1;
      break;
    }
    rc = take_replies(&s, r, err, errlen);
  }
  if (s.stop_reason && rc == 0)
    progress(&s, s.pr.last_verdict ? s.pr.last_verdict : "-", s.pr.last_params);
  if (rc == 0)
    rc = kv_store_run_set_status(st, run_id, stopped || s.stop_reason ? "stopped" : "done", err,
                                 errlen);
  else
    kv_store_run_set_status(st, run_id, "stopped", NULL, 0);
  free(r);
  search_free(&s);
  return rc;
}
