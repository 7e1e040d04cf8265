/* The backward walk of an annotated expert (no LLM): gate the expert, then
 * turn its mechanisms off one at a time, dependents first, gating each
 * simpler kernel; each accepted step's forward edit gets a paired,
 * interleaved performance test. */
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/report.h"
#include "kevo/rules.h"
#include "kevo/skills.h"
#include "kevo/util.h"
#include "internal.h"

/* How the paired test's own details begin (skills_unpaired_why). */
#define PAIRED_DETAIL "the paired test's "

void skills_say(const struct kv_lineage_opts *o, const char *fmt, ...) {
  if (!o->progress)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  o->progress(o->ud, line);
}

static uint32_t all_on(int n) {
  return n >= 32 ? 0xffffffffu : ((1u << n) - 1u);
}

const char *skills_ext_of(const char *path) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  return dot && (!slash || dot > slash) ? dot : ".c";
}

/* Writes text to DIR/NAME and judges it. */
int skills_judge(const struct kv_task *t, const struct kv_lineage_opts *o, const char *name,
                 const char *text, size_t len, uint64_t seed, int timing, struct kv_gate_result *r,
                 char *err, size_t errlen) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", o->scratch, name);
  if (kv_write_file(path, text, len, err, errlen) != 0)
    return -1;
  struct kv_gate_opts g = *o->gate;
  g.seed = seed;
  g.timing = timing && o->gate->timing;
  memset(r, 0, sizeof *r);
  return kv_gate_eval(t, path, &g, r, err, errlen);
}

void skills_resources(const struct kv_gate_result *r, int *regs, long *smem) {
  *regs = 0;
  *smem = 0;
  for (int i = 0; i < r->nkernels; i++) {
    if (r->kernels[i].registers > *regs)
      *regs = r->kernels[i].registers;
    if (r->kernels[i].smem_bytes > *smem)
      *smem = r->kernels[i].smem_bytes;
  }
}

/* A pair member judged again (same seed, same kernel) up to HOST_RETRIES
 * more times while what it was judged says more about the host than about
 * the kernel: interference (something slowed the reference beside it), or a
 * time raised to kevo's clock's floor because that clock could not see its
 * calls (cand_clamped: a busy host; on a loaded 2-core host LANES's
 * 16-accumulator kernel, ~95 us, was raised to 460, above the serial
 * kernel's unraised ~405).
 * Either would end or flip the pair on a busy machine, not on the kernel;
 * any other verdict is the kernel's and ends the paired test at once. */
#define HOST_RETRIES 2

static int about_host(const struct kv_gate_result *r) {
  /* or calls spread so wide (an IQR over 20% of the median) that the host
   * took turns with them (a 2.87x mechanism lost one pair of six on a loaded
   * CI host, unclamped, and with it its admission) */
  const struct kv_stats *c = &r->timing.cand;
  return r->verdict == KV_V_INTERFERENCE ||
         (r->verdict == KV_V_OK && r->timed &&
          (r->timing.cand_clamped || c->iqr_us > 0.2 * c->median_us));
}

/* 0 (r holds the last judgment, *tries how many), or -1 kevo failed. */
static int judge_member(const struct kv_task *t, const struct kv_lineage_opts *o, const char *name,
                        const char *src, size_t len, uint64_t seed, struct kv_gate_result *r,
                        int *tries, char *err, size_t errlen) {
  for (*tries = 1;; ++*tries) {
    if (skills_judge(t, o, name, src, len, seed, 1, r, err, errlen) != 0)
      return -1;
    if (!about_host(r) || *tries > HOST_RETRIES)
      return 0;
    kv_gate_result_release(r);
  }
}

/* n interleaved pairs (ABBA: a first on even pairs), each pair on one seed:
 * a_us[i], b_us[i] the medians. 0, 1 a kernel was not accepted (detail
 * says which), -1 kevo failed. */
int skills_time_pairs(const struct kv_task *t, const struct kv_lineage_opts *o, const char *ext,
                      const char *a, size_t alen, const char *b, size_t blen, const char *tag,
                      int ord, int n, double *a_us, double *b_us, struct kv_gate_result *r,
                      char *detail, size_t dlen, char *err, size_t errlen) {
  static const char *const label[2] = {"richer", "simpler"};
  if (n > KV_PAIRS_MAX)
    n = KV_PAIRS_MAX;
  for (int i = 0; i < n; i++) {
    uint64_t seed = o->seed + 1000003ull * (uint64_t)(ord * 97 + i + 1);
    for (int k = 0; k < 2; k++) {
      int a_now = (i % 2 == 0) == (k == 0), tries;
      char name[200];
      snprintf(name, sizeof name, "%s-%s%s", tag, a_now ? "rich" : "simple", ext);
      if (judge_member(t, o, name, a_now ? a : b, a_now ? alen : blen, seed, r, &tries, err,
                       errlen) != 0)
        return -1;
      if (r->verdict != KV_V_OK || !r->timed) {
        snprintf(detail, dlen, PAIRED_DETAIL "pair %d: the %s kernel was judged %s (%d %s): %.300s",
                 i + 1, label[!a_now], kv_verdict_name(r->verdict), tries,
                 tries > 1 ? "times" : "time", r->detail);
        kv_gate_result_release(r);
        return 1;
      }
      (a_now ? a_us : b_us)[i] = r->timing.cand.median_us;
      kv_gate_result_release(r);
    }
  }
  return 0;
}

const char *skills_unpaired_why(const struct kv_lineage_step *st) {
  return !strncmp(st->detail, PAIRED_DETAIL, strlen(PAIRED_DETAIL)) ? st->detail : "no paired test";
}

int skills_paired(const struct kv_task *t, const struct kv_lineage_opts *o, const char *ext,
                  const char *rich, size_t rlen, const char *simple, size_t slen, const char *tag,
                  struct kv_lineage_step *st, struct kv_gate_result *r, char *err, size_t errlen) {
  double su[KV_PAIRS_MAX], ru[KV_PAIRS_MAX];
  int n = o->pairs > KV_PAIRS_MAX ? KV_PAIRS_MAX : o->pairs;
  int rc = skills_time_pairs(t, o, ext, rich, rlen, simple, slen, tag, st->ord, n, ru, su, r,
                             st->detail, sizeof st->detail, err, errlen);
  if (rc != 0)
    return rc;
  if (kv_paired_stats(su, ru, n, o->seed + (uint64_t)st->ord, o->resamples, &st->paired, err,
                      errlen) != 0)
    return -1;
  return 0;
}

void skills_lineage_key(struct kv_lineage *L, const struct kv_task *t) {
  char buf[512], hex[65];
  snprintf(buf, sizeof buf, "%s|%s|%s|%s|%lld", L->expert_hash, t->name, L->surface, L->device,
           (long long)kv_unix_time());
  kv_sha256_hex(buf, strlen(buf), hex);
  snprintf(L->key, sizeof L->key, "%.32s", hex);
}

int skills_judge_expert(const struct kv_task *t, const struct kv_lineage_opts *o,
                        const char *expert_path, const char *src, size_t len, struct kv_lineage *L,
                        struct kv_gate_result *r, int *regs, long *smem, char *err, size_t errlen) {
  char name[160];
  snprintf(name, sizeof name, "expert%s", skills_ext_of(expert_path));
  if (skills_judge(t, o, name, src, len, o->seed, 1, r, err, errlen) != 0)
    return -1;
  snprintf(L->surface, sizeof L->surface, "%s", r->surface);
  snprintf(L->device, sizeof L->device, "%s", r->device);
  kv_rules_arch_of(L->surface, L->device, L->arch, sizeof L->arch);
  if (r->verdict != KV_V_OK) {
    kv_error(err, errlen,
             "%s: the gate rejects the expert kernel%s: %s: %.600s; an expert must be accepted "
             "before kevo walks it back: fix it (kevo eval %s %s)",
             expert_path, !strcmp(L->mode, "annotated") ? " (every mechanism on)" : "",
             kv_verdict_name(r->verdict), r->detail, t->dir ? t->dir : "TASK", expert_path);
    kv_gate_result_release(r);
    return -1;
  }
  L->expert_json = kv_gate_result_json(r);
  L->expert_median_us = r->timed ? r->timing.cand.median_us : -1;
  L->expert_speedup = r->timed ? r->timing.speedup : -1;
  skills_resources(r, regs, smem);
  kv_gate_result_release(r);
  return 0;
}

int kv_lineage_walk(const struct kv_task *t, const char *expert_path,
                    const struct kv_lineage_opts *o, struct kv_lineage *L, char *err,
                    size_t errlen) {
  memset(L, 0, sizeof *L);
  snprintf(L->file, sizeof L->file, "%s", expert_path);
  size_t len = 0;
  if (kv_read_file(expert_path, KV_ANNOT_SRC_MAX, &L->expert_src, &len, err, errlen) != 0)
    return -1;
  kv_sha256_hex(L->expert_src, len, L->expert_hash);
  if (kv_annot_parse(L->expert_src, len, expert_path, &L->annot, err, errlen) != 0)
    return -1;
  const struct kv_annot *a = &L->annot;
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r)
    return kv_error(err, errlen, "out of memory");
  int rc = -1;
  uint32_t on = all_on(a->n);
  size_t elen = 0;
  char *cur = NULL;
  size_t curlen = 0;
  if (kv_annot_resolve(L->expert_src, len, expert_path, a, on, &L->expert_resolved, &elen, err,
                       errlen) != 0)
    goto out;
  snprintf(L->mode, sizeof L->mode, "annotated");
  const char *ext = skills_ext_of(expert_path);
  skills_say(o, "expert   %s: %d mechanisms", expert_path, a->n);
  int regs_cur, regs_tmp;
  long smem_cur, smem_tmp;
  char name[160]; /* each step's file name */
  if (skills_judge_expert(t, o, expert_path, L->expert_resolved, elen, L, r, &regs_cur, &smem_cur,
                          err, errlen) != 0)
    goto out;
  skills_say(o, "expert   accepted%s%.1f us (%.2fx the reference)", "  ", L->expert_median_us,
             L->expert_speedup);
  skills_lineage_key(L, t);
  cur = strdup(L->expert_resolved);
  if (!cur) {
    kv_error(err, errlen, "out of memory");
    goto out;
  }
  curlen = elen;
  for (int k = 0; k < a->n; k++) {
    int m = a->order[k];
    struct kv_lineage_step *st = &L->steps[L->nsteps++];
    st->ord = L->nsteps;
    st->mech = m;
    st->child_median_us = st->child_speedup = -1;
    kv_sha256_hex(cur, curlen, st->parent_hash);
    /* a mechanism that stays needs this one */
    for (int u = 0; u < a->n && !st->skipped[0]; u++)
      if ((on >> u & 1u) && u != m)
        for (int q = 0; q < a->m[u].nreq; q++)
          if (a->m[u].req[q] == m)
            snprintf(st->skipped, sizeof st->skipped,
                     "not tried: %s, which requires it, could not be removed", a->m[u].name);
    if (st->skipped[0]) {
      snprintf(st->verdict, sizeof st->verdict, "skipped");
      memcpy(st->detail, st->skipped, sizeof st->skipped);
      skills_say(o, "step %2d  -%-20s skipped: %s", st->ord, a->m[m].name, st->skipped);
      continue;
    }
    uint32_t next = on & ~(1u << m);
    size_t clen = 0;
    if (kv_annot_resolve(L->expert_src, len, expert_path, a, next, &st->child_src, &clen, err,
                         errlen) != 0)
      goto out;
    kv_sha256_hex(st->child_src, clen, st->child_hash);
    struct kv_buf d;
    kv_buf_init(&d, 256 * 1024);
    if (kv_line_diff(st->child_src, clen, cur, curlen, 3, &d) < 0) {
      kv_buf_release(&d);
      kv_error(err, errlen, "out of memory");
      goto out;
    }
    st->forward_diff = kv_buf_detach(&d);
    char tag[96];
    snprintf(tag, sizeof tag, "step%02d-%s", st->ord, a->m[m].name);
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
      skills_say(o, "step %2d  -%-20s rejected: %s: %.200s (the mechanism stays)", st->ord,
                 a->m[m].name, st->verdict, st->detail);
      continue;
    }
    if (o->pairs >= 2 && o->gate->timing) {
      int prc = skills_paired(t, o, ext, cur, curlen, st->child_src, clen, tag, st, r, err, errlen);
      if (prc < 0)
        goto out;
      if (prc == 0)
        st->admitted = st->paired.admitted;
    }
    if (st->paired.n)
      skills_say(o, "step %2d  -%-20s ok  %9.1f us; forward %.2fx [%.2f, %.2f] p=%.3g: %s", st->ord,
                 a->m[m].name, st->child_median_us, st->paired.speedup, st->paired.ci_lo,
                 st->paired.ci_hi, st->paired.wilcoxon_p, st->paired.why);
    else
      skills_say(o, "step %2d  -%-20s ok  (unmeasured: %s)", st->ord, a->m[m].name,
                 skills_unpaired_why(st));
    on = next;
    free(cur);
    cur = strdup(st->child_src);
    if (!cur) {
      kv_error(err, errlen, "out of memory");
      goto out;
    }
    curlen = clen;
    regs_cur = regs_tmp;
    smem_cur = smem_tmp;
  }
  rc = 0;
out:
  free(cur);
  free(r);
  if (rc != 0)
    kv_lineage_release(L);
  return rc;
}

void kv_lineage_release(struct kv_lineage *L) {
  if (!L)
    return;
  free(L->expert_src);
  free(L->expert_resolved);
  free(L->expert_json);
  for (int i = 0; i < L->nsteps; i++) {
    free(L->steps[i].child_src);
    free(L->steps[i].forward_diff);
    free(L->steps[i].result_json);
    free(L->steps[i].audit_json);
  }
  for (int i = 0; i < L->nsteps; i++)
    L->steps[i].child_src = L->steps[i].forward_diff = L->steps[i].result_json =
        L->steps[i].audit_json = NULL;
  free(L->cur);
  L->expert_src = L->expert_resolved = L->expert_json = L->cur = NULL;
}
