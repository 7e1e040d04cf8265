/* The backward walk in LLM mode: the model proposes one atomic
 * de-optimization at a time, the gate judges each, and each accepted step is
 * re-derived forward from its card alone before its paired test. */
#include <ctype.h>
#include <limits.h>
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
#define DEOPT_VARS "name surface summary entry lang code removed attempt attempts feedback"
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
    "code block. If the kernel is already naive (nothing left to remove), reply with the single "
    "word NAIVE.\n";
#define REDERIVE_VARS "name surface summary lang code mechanism intent anchor"
static const char rederive_default[] =
    "Task: {{name}} ({{surface}} surface). {{summary}}\nA kernel (it passes every correctness "
    "check):\n```{{lang}}\n{{code}}```\n\nSkill card:\nMechanism: {{mechanism}}\nIntent: "
    "{{intent}}\nAnchor: {{anchor}}\n\nApply this skill to the kernel: add the mechanism, "
    "keeping the result correct at the same tolerance and sizes and the entry point unchanged. "
    "Reply with the complete kernel in one fenced code block.\n";

struct walk_prompts {
  char *system, *deopt, *rederive;
};

static void walk_prompts_free(struct walk_prompts *w) {
  free(w->system);
  free(w->deopt);
  free(w->rederive);
}

static int walk_prompts_load(const char *dir, struct walk_prompts *w, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  if (!(w->system = kv_prompt_template(dir, "lineage_system", "", deopt_system, err, errlen)) ||
      !(w->deopt =
            kv_prompt_template(dir, "lineage_deopt", DEOPT_VARS, deopt_default, err, errlen)) ||
      !(w->rederive = kv_prompt_template(dir, "lineage_rederive", REDERIVE_VARS, rederive_default,
                                         err, errlen))) {
    walk_prompts_free(w);
    return -1;
  }
  return 0;
}

/* "Key: value" line of a reply into out (trimmed), 1 found. */
static int field(const char *text, const char *key, char *out, size_t cap) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p;) {
    while (*p == ' ' || *p == '\t' || *p == '*' || *p == '-')
      p++;
    if (!strncasecmp(p, key, k) && p[k] == ':') {
      p += k + 1;
      while (*p == ' ' || *p == '\t' || *p == '*' || *p == '`')
        p++;
      size_t n = strcspn(p, "\r\n");
      while (n && (p[n - 1] == ' ' || p[n - 1] == '*' || p[n - 1] == '`'))
        n--;
      snprintf(out, cap, "%.*s", (int)n, p);
      return 1;
    }
    p = strchr(p, '\n');
    if (p)
      p++;
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
    return -1;
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

int kv_lineage_walk_llm(const struct kv_task *t, const char *expert_path,
                        const struct kv_lineage_opts *o, struct kv_llm *llm, int retries,
                        int max_steps, struct kv_lineage *L, char *err, size_t errlen) {
  memset(L, 0, sizeof *L);
  snprintf(L->file, sizeof L->file, "%s", expert_path);
  snprintf(L->mode, sizeof L->mode, "llm");
  if (retries < 0)
    retries = 0;
  if (max_steps <= 0 || max_steps > KV_MECH_MAX)
    max_steps = KV_MECH_MAX;
  struct walk_prompts wp;
  if (walk_prompts_load(o->prompt_dir, &wp, err, errlen) < 0)
    return -1;
  size_t len = 0;
  if (kv_read_file(expert_path, KV_ANNOT_SRC_MAX, &L->expert_src, &len, err, errlen) != 0) {
    walk_prompts_free(&wp);
    return -1;
  }
  kv_sha256_hex(L->expert_src, len, L->expert_hash);
  L->expert_resolved = strdup(L->expert_src);
  struct kv_gate_result *r = calloc(1, sizeof *r);
  char *cur = NULL, *reply = NULL, *prompt = NULL, *code = NULL;
  int rc = -1;
  if (!r || !L->expert_resolved) {
    kv_error(err, errlen, "out of memory");
    goto out;
  }
  const char *ext = skills_ext_of(expert_path);
  skills_say(o, "expert   %s (LLM mode)", expert_path);
  int regs_cur, regs_tmp;
  long smem_cur, smem_tmp;
  char name[160]; /* each step's file name */
  if (skills_judge_expert(t, o, expert_path, L->expert_src, len, L, r, &regs_cur, &smem_cur, err,
                          errlen) != 0)
    goto out;
  skills_lineage_key(L, t);
  cur = strdup(L->expert_src);
  if (!cur) {
    kv_error(err, errlen, "out of memory");
    goto out;
  }
  int accepted_steps = 0, done = 0;
  while (!done && accepted_steps < max_steps) {
    char feedback[768] = "";
    int stepped = 0;
    for (int attempt = 1; attempt <= retries + 1 && !stepped; attempt++) {
      if (L->nsteps >= KV_MECH_MAX || L->annot.n >= KV_MECH_MAX) {
        snprintf(L->stop, sizeof L->stop, "%d attempts, the most a lineage holds", KV_MECH_MAX);
        done = 1;
        break;
      }
      free(prompt);
      prompt = deopt_prompt(&wp, t, L->surface, cur, L, attempt, retries + 1, feedback);
      free(reply);
      reply = NULL;
      if (ask(llm, wp.system, "lineage:deopt", prompt, attempt - 1, &reply, err, errlen) != 0)
        goto out;
      if (says_naive(reply) && !strstr(reply, "```")) {
        snprintf(L->stop, sizeof L->stop, "the model says the kernel is naive");
        done = 1;
        break;
      }
      char mname[128] = "", intent[256] = "", anchor[256] = "";
      field(reply, "Mechanism", mname, sizeof mname);
      field(reply, "Intent", intent, sizeof intent);
      field(reply, "Anchor", anchor, sizeof anchor);
      free(code);
      code = code_of(t, reply);
      struct kv_mech *m = &L->annot.m[L->annot.n];
      memset(m, 0, sizeof *m);
      clean_name(mname[0] ? mname : "UNNAMED", m->name, sizeof m->name);
      snprintf(m->intent, sizeof m->intent, "%s", intent[0] ? intent : "(no intent given)");
      snprintf(m->anchor, sizeof m->anchor, "%s", anchor);
      m->nblocks = 1;
      int mi = L->annot.n++;
      struct kv_lineage_step *st = &L->steps[L->nsteps++];
      st->ord = L->nsteps;
      st->mech = mi;
      st->child_median_us = st->child_speedup = -1;
      kv_sha256_hex(cur, strlen(cur), st->parent_hash);
      if (!code || !mname[0]) {
        snprintf(st->verdict, sizeof st->verdict, "no_code");
        snprintf(st->detail, sizeof st->detail, "the reply had %s",
                 !code ? "no kernel in a code block" : "no 'Mechanism:' line");
        snprintf(feedback, sizeof feedback, "%s; follow the reply format", st->detail);
        skills_say(o, "step %2d  -%-20s no kernel: %s", st->ord, m->name, st->detail);
        continue;
      }
      st->child_src = code;
      code = NULL;
      size_t clen = strlen(st->child_src);
      kv_sha256_hex(st->child_src, clen, st->child_hash);
      char tag[96];
      snprintf(tag, sizeof tag, "step%02d-%s", st->ord, m->name);
      snprintf(name, sizeof name, "%s%s", tag, ext);
      if (skills_judge(t, o, name, st->child_src, clen, o->seed + (uint64_t)st->ord, 1, r, err,
                       errlen) != 0)
        goto out;
      snprintf(st->verdict, sizeof st->verdict, "%s", kv_verdict_name(r->verdict));
      snprintf(st->detail, sizeof st->detail, "%s", r->detail);
      st->result_json = kv_gate_result_json(r);
      st->accepted = r->verdict == KV_V_OK;
      if (r->timed) {
        st->child_median_us = r->timing.cand.median_us;
        st->child_speedup = r->timing.speedup;
      }
      skills_resources(r, &regs_tmp, &smem_tmp);
      kv_gate_result_release(r);
      st->regs_rich = regs_cur;
      st->smem_rich = smem_cur;
      st->regs_simple = regs_tmp;
      st->smem_simple = smem_tmp;
      if (!st->accepted) {
        /* no timings in what goes back: the prompt must replay */
        snprintf(feedback, sizeof feedback, "removing %s gave %s: %.500s", m->name, st->verdict,
                 st->detail);
        skills_say(o, "step %2d  -%-20s rejected: %s: %.200s", st->ord, m->name, st->verdict,
                   st->detail);
        continue;
      }
      stepped = 1;
      accepted_steps++;
      /* forward: re-derived from the card alone */
      free(prompt);
      prompt = rederive_prompt(&wp, t, L->surface, st->child_src, m);
      free(reply);
      reply = NULL;
      if (ask(llm, wp.system, "lineage:rederive", prompt, 0, &reply, err, errlen) != 0)
        goto out;
      char *rich = code_of(t, reply);
      if (!rich) {
        st->rederived = -1;
        snprintf(st->rederive, sizeof st->rederive, "no_code: the reply had no kernel");
      } else {
        snprintf(name, sizeof name, "%s-rederived%s", tag, ext);
        if (skills_judge(t, o, name, rich, strlen(rich), o->seed + (uint64_t)st->ord, 1, r, err,
                         errlen) != 0) {
          free(rich);
          goto out;
        }
        st->rederived = r->verdict == KV_V_OK ? 1 : -1;
        snprintf(st->rederive, sizeof st->rederive, "%s: %.400s", kv_verdict_name(r->verdict),
                 r->detail);
        kv_gate_result_release(r);
        kv_sha256_hex(rich, strlen(rich), st->rederived_hash);
        struct kv_buf d;
        kv_buf_init(&d, 256 * 1024);
        kv_line_diff(st->child_src, clen, rich, strlen(rich), 3, &d);
        st->forward_diff = kv_buf_detach(&d);
      }
      if (st->rederived == 1 && o->pairs >= 2 && o->gate->timing) {
        int prc = skills_paired(t, o, ext, rich, strlen(rich), st->child_src, clen, tag, st, r, err,
                                errlen);
        if (prc < 0) {
          free(rich);
          goto out;
        }
        if (prc == 0)
          st->admitted = st->paired.admitted;
      }
      free(rich);
      if (st->paired.n)
        skills_say(o, "step %2d  -%-20s ok; re-derived: ok; forward %.2fx [%.2f, %.2f] p=%.3g: %s",
                   st->ord, m->name, st->paired.speedup, st->paired.ci_lo, st->paired.ci_hi,
                   st->paired.wilcoxon_p, st->paired.why);
      else
        skills_say(o, "step %2d  -%-20s ok; re-derived: %s", st->ord, m->name,
                   st->rederived == 1 ? "ok (no paired test)" : st->rederive);
      free(cur);
      cur = strdup(st->child_src);
      if (!cur) {
        kv_error(err, errlen, "out of memory");
        goto out;
      }
      regs_cur = regs_tmp;
      smem_cur = smem_tmp;
    }
    if (!stepped && !done) {
      snprintf(L->stop, sizeof L->stop, "%d proposals in a row were refused", retries + 1);
      done = 1;
    }
  }
  if (!L->stop[0])
    snprintf(L->stop, sizeof L->stop, "%d steps, the most asked for", max_steps);
  skills_say(o, "end      %s", L->stop);
  rc = 0;
out:
  walk_prompts_free(&wp);
  free(cur);
  free(reply);
  free(prompt);
  free(code);
  free(r);
  if (rc != 0)
    kv_lineage_release(L);
  return rc;
}
