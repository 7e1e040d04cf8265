/* kevo adapt: the agent over a practice suite (kv_bench_run: resumable), then
 * the deduplication pass and the contradiction audit (see adapt.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kevo/adapt.h"
#include "kevo/llm.h"
#include "kevo/util.h"

static char *summary_json(const struct kv_adapt_summary *s) {
  const struct kv_rules_dedup_stats *d = &s->dedup;
  json_t *j = json_pack("{s:I,s:i,s:i,s:i,s:{s:i,s:i,s:i,s:i,s:i,s:i,s:i}}", "bench",
                        (json_int_t)s->bench_id, "nodes", s->nodes, "accepted", s->accepted,
                        "contradicted", s->contradicted, "dedup", "word_merges", d->word_merges,
                        "judge_calls", d->judge_calls, "judge_same", d->judge_same,
                        "judge_different", d->judge_different, "judge_unclear", d->judge_unclear,
                        "judge_failed", d->judge_failed, "pairs_left", d->pairs_left);
  char *t = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(j);
  return t;
}

static void summary_read(const char *text, struct kv_adapt_summary *s) {
  json_t *j = text ? json_loads(text, 0, NULL) : NULL;
  json_t *d = json_object_get(j, "dedup");
  s->contradicted = (int)json_integer_value(json_object_get(j, "contradicted"));
  s->dedup.word_merges = (int)json_integer_value(json_object_get(d, "word_merges"));
  s->dedup.judge_calls = (int)json_integer_value(json_object_get(d, "judge_calls"));
  s->dedup.judge_same = (int)json_integer_value(json_object_get(d, "judge_same"));
  s->dedup.judge_different = (int)json_integer_value(json_object_get(d, "judge_different"));
  s->dedup.judge_unclear = (int)json_integer_value(json_object_get(d, "judge_unclear"));
  s->dedup.judge_failed = (int)json_integer_value(json_object_get(d, "judge_failed"));
  s->dedup.pairs_left = (int)json_integer_value(json_object_get(d, "pairs_left"));
  json_decref(j);
}

int kv_adapt_run(struct kv_store *s, struct kv_llm *llm, const struct kv_adapt_opts *o,
                 const struct kv_bench_hooks *h, struct kv_adapt_summary *sum, char *err,
                 size_t errlen) {
  memset(sum, 0, sizeof *sum);
  const char *suite = o->bench.suite_dir;
  if (!suite)
    return kv_error(err, errlen, "kevo adapt: no suite directory");
  if (!llm || kv_run_strategy_needs_llm(o->bench.run.strategy) != 1)
    return kv_error(err, errlen,
                    "kevo adapt learns rules from an LLM's failures: configure a model "
                    "(kevo.json, --model, --base-url) and an LLM strategy (ada, greedy, "
                    "best-of-n)");
  int64_t id = 0, bench_id = 0;
  char *status = NULL, *sj = NULL;
  if (kv_store_adaptation_latest(s, suite, &id, &bench_id, &status, &sj, err, errlen) < 0)
    return -1;
  int done = status && !strcmp(status, "done");
  free(status);
  if (done && !o->fresh) {
    sum->already = 1;
    sum->id = id;
    sum->bench_id = bench_id;
    summary_read(sj, sum);
    free(sj);
    return bench_id > 0
               ? kv_store_bench_node_counts(s, bench_id, &sum->nodes, &sum->accepted, err, errlen)
               : 0;
  }
  free(sj);
  if (id == 0 || done) {
    if (kv_store_adaptation_new(s, suite, &id, err, errlen) < 0)
      return -1;
  }
  sum->id = id;
  struct kv_bench_opts bo = o->bench;
  bo.fresh = o->fresh;
  struct kv_bench_hooks hk = h ? *h : (struct kv_bench_hooks){0};
  hk.run.llm = llm;
  int resumed = 0;
  int rc = kv_bench_run(s, &bo, &hk, &bench_id, &resumed, sum->stopped, sizeof sum->stopped, err,
                        errlen);
  sum->bench_id = bench_id;
  sum->resumed = resumed;
  char uerr[512];
  if (bench_id > 0 &&
      kv_store_adaptation_update(s, id, bench_id, "running", NULL, uerr, sizeof uerr) < 0 &&
      rc == 0)
    rc = kv_error(err, errlen, "%s", uerr);
  if (rc < 0)
    return -1;
  if (kv_store_bench_node_counts(s, bench_id, &sum->nodes, &sum->accepted, err, errlen) < 0)
    return -1;
  if (sum->stopped[0])
    return 0; /* the next run continues the bench, then deduplicates */
  if ((o->judge_all ? kv_rules_dedup_all : kv_rules_dedup)(s, llm, o->judge_max, &sum->dedup, err,
                                                           errlen) < 0)
    return -1;
  struct kv_rules_audit_item *items = NULL;
  int n = 0;
  if (kv_rules_audit(s, 0, &items, &n, &sum->contradicted, err, errlen) < 0)
    return -1;
  free(items);
  char *text = summary_json(sum);
  if (!text)
    return kv_error(err, errlen, "out of memory");
  rc = kv_store_adaptation_update(s, id, bench_id, "done", text, err, errlen);
  free(text);
  return rc;
}
