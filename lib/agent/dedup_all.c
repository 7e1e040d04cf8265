/* AdaExplore's duplicate judge as released (skill_memory/deduplicate_knowledge
 * .py): each rule, in the order learnt, is judged by one LLM call against
 * every earlier rule kept (kevo adapt --judge all; kevo/rules.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kevo/llm.h"
#include "kevo/rules.h"
#include "kevo/store.h"
#include "kevo/util.h"

#define ALL_PROMPT_MAX (256u << 10)

/* Rules of one surface, or of none, are compared. */
static int same_scope(const char *a, const char *b) {
  return !a || !b || !*a || !*b || !strcmp(a, b);
}

/* The reply's answer: the number of the earlier rule (1..n), 0 for NONE,
 * -1 when it says neither. */
static int all_verdict(const char *t, int n) {
  while (t && *t && !isalnum((unsigned char)*t))
    t++;
  if (!t || !*t)
    return -1;
  if (!strncasecmp(t, "NONE", 4))
    return 0;
  char *end;
  long k = strtol(t, &end, 10);
  return end != t && k >= 1 && k <= n ? (int)k : -1;
}

/* Asks whether R duplicates one of cand[0..nc): the answer (0: none, -1:
 * unclear) and the call; 1 stops (the budget), -1 on error. */
static int ask_all(struct kv_llm *llm, const struct kv_rule_meta *R,
                   const struct kv_rule_meta *const *cand, int nc, int *answer, int64_t *call,
                   char *err, size_t errlen) {
  struct kv_buf b;
  kv_buf_init(&b, ALL_PROMPT_MAX);
  kv_buf_appendf(&b,
                 "Validity rules learnt from failed attempts at writing %s kernels, kept so "
                 "far:\n",
                 R->surface && *R->surface ? R->surface : "C or CUDA");
  for (int i = 0; i < nc; i++)
    kv_buf_appendf(&b, "%d. %s\n", i + 1, cand[i]->text);
  kv_buf_appendf(&b,
                 "\nA new rule: %s\n\nDoes the new rule say the same thing as one of the rules "
                 "kept, so that a kernel obeying that one obeys the new one? Answer with its "
                 "number on the first line, or NONE, nothing else.\n",
                 R->text);
  if (!b.data || b.truncated) {
    kv_buf_release(&b);
    return kv_error(err, errlen, "the rules do not fit one judge's prompt (%u bytes)",
                    ALL_PROMPT_MAX);
  }
  struct kv_llm_message m = {"user", b.data};
  struct kv_llm_request q;
  kv_llm_request_init(&q);
  q.role = "rule_judge";
  q.messages = &m;
  q.n_messages = 1;
  q.max_tokens = 64;
  struct kv_llm_result res;
  int code = kv_llm_ask(llm, &q, &res);
  kv_buf_release(&b);
  *answer = code == KV_LLM_OK ? all_verdict(res.text, nc) : -2;
  *call = res.call_id;
  kv_llm_result_release(&res);
  return code == KV_LLM_EBUDGET ? 1 : 0;
}

/* R against the rules kept: the one it duplicates (an index of cand), -1
 * none, *decided 1 when that is known (the verdicts the store keeps, else
 * one call); 1 stops (the budget), -1 on error. */
static int judge_one(struct kv_store *st, struct kv_llm *llm, int can_ask,
                     const struct kv_rule_meta *R, const struct kv_rule_meta *const *cand, int nc,
                     int *match, int *decided, int64_t *call, struct kv_rules_dedup_stats *stats,
                     char *err, size_t errlen) {
  int known = 1;
  *match = -1;
  *decided = 0;
  for (int j = 0; j < nc; j++) {
    int same = -1, k = kv_store_rule_judgement(st, cand[j]->text, R->text, &same, err, errlen);
    if (k < 0)
      return -1;
    known &= k == 1;
    if (k == 1 && same == 1 && *match < 0)
      *match = j;
  }
  if (known) {
    *decided = 1;
    return 0;
  }
  if (!llm || !can_ask) {
    stats->pairs_left += nc;
    return 0;
  }
  int answer;
  if (ask_all(llm, R, cand, nc, &answer, call, err, errlen) != 0) {
    stats->pairs_left += nc;
    return 1;
  }
  stats->judge_calls++;
  if (answer < -1) {
    stats->judge_failed++;
    return 0;
  }
  if (answer < 0) {
    stats->judge_unclear++;
    return 0;
  }
  for (int j = 0; j < nc; j++)
    if (kv_store_rule_judgement_put(st, cand[j]->text, R->text, j + 1 == answer, *call, err,
                                    errlen) < 0)
      return -1;
  *match = answer - 1;
  *decided = 1;
  return 0;
}

int kv_rules_dedup_all(struct kv_store *st, struct kv_llm *llm, int judge_max,
                       struct kv_rules_dedup_stats *stats, char *err, size_t errlen) {
  if (kv_rules_dedup(st, NULL, 0, stats, err, errlen) < 0) /* the word-set merges */
    return -1;
  stats->pairs_left = 0;
  struct kv_rule_meta *rows;
  int n, rc = 0, stop = 0, nk = 0;
  if (kv_store_rules_meta(st, &rows, &n, err, errlen) < 0)
    return -1;
  const struct kv_rule_meta **kept = calloc((size_t)n + 1, sizeof *kept),
                            **cand = calloc((size_t)n + 1, sizeof *cand);
  if (!kept || !cand)
    rc = kv_error(err, errlen, "out of memory");
  for (int i = 0; i < n && rc == 0; i++) { /* in id order: the order learnt */
    const struct kv_rule_meta *R = &rows[i];
    if (R->flag && *R->flag)
      continue;
    int nc = 0, match = -1, decided = 0;
    for (int k = 0; k < nk; k++)
      if (same_scope(kept[k]->surface, R->surface))
        cand[nc++] = kept[k];
    int64_t call = 0;
    int r = nc ? judge_one(st, llm, !stop && stats->judge_calls < judge_max, R, cand, nc, &match,
                           &decided, &call, stats, err, errlen)
               : 0;
    if (r < 0) {
      rc = -1;
      break;
    }
    stop |= r == 1;
    if (match >= 0) {
      stats->judge_same++;
      if (kv_store_rule_merge(st, cand[match]->id, R->id, "judge", call, err, errlen) < 0)
        rc = -1;
      continue;
    }
    if (decided)
      stats->judge_different++;
    kept[nk++] = R;
  }
  free(kept);
  free(cand);
  kv_rule_metas_free(rows, n);
  return rc;
}
