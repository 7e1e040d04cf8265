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
 * when its similarity (to the rule's text or a phrasing merged into it) is
 * >= KV_RULE_SIMILAR, else a new rule. With eval_id > 0 the occurrence is
 * evidence keyed by this store and that evaluation, and the count grows by n
 * only if the rule did not hold it yet; else the count grows by n. *id gets
 * the rule (may be NULL). kv_rules_add is kv_rules_add_scoped with no scope. */
int kv_rules_add(struct kv_store *st, const char *text, const char *origin, int n, int64_t eval_id,
                 int64_t *id, char *err, size_t errlen);
/* The same, scoped: merged only into a rule of the same surface (or of none);
 * a new rule gets this surface and architecture (NULL or "": any). */
int kv_rules_add_scoped(struct kv_store *st, const char *text, const char *origin,
                        const char *surface, const char *arch, int n, int64_t eval_id, int64_t *id,
                        char *err, size_t errlen);
/* The architecture of an evaluation's device: "sm_90" from a cuda device
 * ("cuda:NVIDIA H200 sm_90 x132"), this machine's (uname: "x86_64") for the
 * cpu surface; "" when unknown. */
void kv_rules_arch_of(const char *surface, const char *device, char *out, size_t cap);
/* Learns from a failed evaluation: the compiler log's rules, then (llm
 * non-NULL) a rule_extractor call with the failure's evidence. Returns the
 * number of rules recorded, or -1. */
int kv_rules_learn(struct kv_store *st, const struct kv_task *t, const struct kv_prompts *p,
                   const struct kv_gate_result *r, const char *code, const char *surface,
                   int64_t eval_id, struct kv_llm *llm, int64_t run_id, int64_t node_id, char *err,
                   size_t errlen);
/* Rules seen at least `threshold` times and not flagged, most frequent first
 * (at most 32). */
int kv_rules_active(struct kv_store *st, int threshold, char ***texts, int *n, char *err,
                    size_t errlen);
/* The same, for a prompt on `surface` and `arch` (NULL or "": unknown): only
 * rules of that surface (or of none) and architecture (or of none). */
int kv_rules_active_for(struct kv_store *st, int threshold, const char *surface, const char *arch,
                        char ***texts, int *n, char *err, size_t errlen);
void kv_rules_free(char **texts, int n);

/* ---- trust and sharing (lib/agent/memory.c) ---------------------------- */

/* What a rule forbids, when it names a construct the way "You cannot call
 * X", "You cannot use `X`", "You cannot include X", "Do not use X", "Never
 * call X" do: *kind is 'c' (call), 'i' (include) or 'u' (use), x the
 * construct. Returns 0, or -1 when the rule names none that a source can be
 * searched for: a conditional rule ("... without ...", "unless", "more
 * than", "before", ...), one about device/host code on its own, or a subject
 * that is an ordinary word ("You cannot use more threads ..."). */
int kv_rules_subject(const char *rule, int *kind, char *x, size_t cap);
/* 1 when `source` (C or CUDA, comments and string literals ignored) does
 * what `rule` forbids: calls X without defining X itself, includes X, or
 * uses X; *why says where. 0 when not, or when the rule names no construct. */
int kv_rules_contradicts(const char *rule, const char *source, char *why, size_t cap);
/* An accepted kernel (verdict ok) of evaluation eval_id on `surface` flags
 * every unflagged rule of that surface (or of none) that it contradicts:
 * such a rule is wrong and is no longer injected. *nflagged (may be NULL)
 * gets how many. */
int kv_rules_check_accepted(struct kv_store *st, const char *source, const char *surface,
                            int64_t eval_id, const char *task, int *nflagged, char *err,
                            size_t errlen);
/* Why a rule is noise rather than a lesson about code, or 0 with why "":
 * it is about the environment (missing files, permissions, timeouts, the
 * network, the sandbox, the disk), names a path on one machine, names the
 * entry of one task (entries: the store's task entries), or is too vague to
 * act on (fewer than three content words and no construct named, see
 * kv_rules_subject). Returns 1 when noisy. */
int kv_rules_noisy(const char *rule, const char *const *entries, int nentries, char *why,
                   size_t cap);

/* The memory as JSON (kevo rules export): {"kevo_rules": 2, "store": ID,
 * "exported": DATE, "rules": [{"text", "origin", "count", "surface", "arch",
 * "flag", "aliases", "provenance": [{"key", "weight", "role" (produced |
 * confirmed), "task", "spec_hash", "source", "verdict", "surface", "arch",
 * "model", "created"}]}]}. Rules seen fewer than min_count times are left
 * out. Returns malloc'd text, or NULL with err. */
char *kv_rules_export_json(struct kv_store *st, int min_count, int *nrules, char *err,
                           size_t errlen);
/* Imports a file made by kv_rules_export_json (or a version 1 file: text,
 * origin, count). Each rule joins the most similar local rule of its surface
 * (>= KV_RULE_SIMILAR, its text or a phrasing merged into it), else becomes
 * a new rule; evidence already held adds nothing, so importing the same file
 * twice changes no count. A flagged rule flags its local match. Errors name
 * `file`, the rule's index and the field. */
struct kv_rules_import_stats {
  int rules, created, merged, count_added, flagged;
};
int kv_rules_import_json(struct kv_store *st, const char *text, size_t len, const char *file,
                         struct kv_rules_import_stats *stats, char *err, size_t errlen);

/* kevo rules audit: first flags the rules that accepted kernels in the store
 * contradict, then lists every flagged rule and every noisy one (apply: flag
 * the noisy ones too, so that they stop being injected). */
struct kv_rules_audit_item {
  int64_t id;
  int count;
  int flagged; /* 1: flagged (why: the flag), 0: noisy and not flagged */
  char text[KV_RULE_MAX];
  char why[512];
};
int kv_rules_audit(struct kv_store *st, int apply, struct kv_rules_audit_item **items, int *n,
                   int *contradicted, char *err, size_t errlen);

/* The deduplication pass of kevo adapt: pairs of unflagged rules of one
 * surface whose word-set similarity is >= KV_RULE_SIMILAR merge; pairs at
 * >= KV_RULE_JUDGE_MIN (or naming the same construct) go to an LLM judge
 * (llm non-NULL; at most judge_max calls, verdicts kept so a pair is asked
 * once) that answers SAME or DIFFERENT; SAME merges. A merge keeps the more
 * frequent rule, both provenances, and the sum of the counts. */
#define KV_RULE_JUDGE_MIN 0.2
struct kv_rules_dedup_stats {
  int word_merges, judge_calls, judge_same, judge_different, judge_unclear, judge_failed;
  int pairs_left; /* pairs not judged: judge_max reached or the budget spent */
};
int kv_rules_dedup(struct kv_store *st, struct kv_llm *llm, int judge_max,
                   struct kv_rules_dedup_stats *stats, char *err, size_t errlen);
/* AdaExplore's judge as released (kevo adapt --judge all; lib/agent/
 * dedup_all.c): the word-set merges, then each unflagged rule in the order
 * learnt goes to one LLM call with every earlier rule kept of its surface
 * ("its number, or NONE"); a number merges the new rule into that one. The
 * verdicts are kept per pair, so a rule judged once is not asked again; at
 * most judge_max calls. */
int kv_rules_dedup_all(struct kv_store *st, struct kv_llm *llm, int judge_max,
                       struct kv_rules_dedup_stats *stats, char *err, size_t errlen);

#endif
