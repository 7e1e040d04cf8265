/* The memory of validity rules ("You cannot ..."), learnt from failures and
 * persisted in the store across runs and tasks. Never prints, never exits. */
#ifndef KEVO_RULES_H
#define KEVO_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "kevo/gate.h"
#include "kevo/store.h"
#include "kevo/task.h"

struct kv_llm;
struct kv_prompts;

#define KV_RULE_MAX 400      /* longest rule kept, bytes */
#define KV_RULES_PER_FAIL 4  /* rules taken from one failure at most */
#define KV_RULE_SIMILAR 0.75 /* word-set similarity at which two rules merge */

/* Rules read deterministically from a compiler log (undeclared identifiers,
 * missing headers, a wrong signature of `entry`, implicit declarations).
 * Returns how many were written to out[0..max) (each KV_RULE_MAX bytes). */
int kv_rules_from_log(const char *log, const char *entry, char out[][KV_RULE_MAX], int max);
/* "You cannot ..." lines of a rule_extractor's reply. Same return. */
int kv_rules_from_reply(const char *text, char out[][KV_RULE_MAX], int max);
/* Similarity of two rules in [0, 1]: the Jaccard index of their sets of
 * lowercased words (letters, digits, _), ignoring "you" and "cannot". */
double kv_rules_similarity(const char *a, const char *b);
/* Records one occurrence of `text`: merged into the most similar stored rule
 * when its similarity is >= KV_RULE_SIMILAR (count + n), else a new rule.
 * *id gets the rule (may be NULL). */
int kv_rules_add(struct kv_store *st, const char *text, const char *origin, int n, int64_t eval_id,
                 int64_t *id, char *err, size_t errlen);
/* Learns from a failed evaluation: the compiler log's rules, then (llm
 * non-NULL) a rule_extractor call with the failure's evidence. Returns the
 * number of rules recorded, or -1. */
int kv_rules_learn(struct kv_store *st, const struct kv_task *t, const struct kv_prompts *p,
                   const struct kv_gate_result *r, const char *code, const char *surface,
                   int64_t eval_id, struct kv_llm *llm, int64_t run_id, int64_t node_id, char *err,
                   size_t errlen);
/* Rules seen at least `threshold` times, most frequent first (at most 32). */
int kv_rules_active(struct kv_store *st, int threshold, char ***texts, int *n, char *err,
                    size_t errlen);
void kv_rules_free(char **texts, int n);

#endif
