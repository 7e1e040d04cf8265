/* What a report reads from the store beyond kv_store_run_get and
 * kv_store_run_nodes: a run's facts (times, device, the totals of its LLM
 * calls), its nodes joined with their evaluations, its LLM calls without
 * their bodies, and the rules its evaluations gave rise to. Read-only; rows
 * are handed to a callback one at a time, so a run of any size is read in
 * constant memory here. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/store.h"

static const char *col_str(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? NULL
                                                   : (const char *)sqlite3_column_text(st, i);
}

static int exists_run(struct kv_store *s, int64_t run_id, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT 1 FROM runs WHERE id = ?1", &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_DONE) {
    store_seterr(err, errlen, "run %lld is not in %s; see 'kevo runs'", (long long)run_id, s->path);
    ret = -1;
  } else if (rc != SQLITE_ROW) {
    ret = store_db_fail(s, "cannot read the run", err, errlen);
  }
  sqlite3_finalize(st);
  return ret;
}

int kv_store_run_facts(struct kv_store *s, int64_t run_id, struct kv_run_facts *out, char *err,
                       size_t errlen) {
  memset(out, 0, sizeof *out);
  if (exists_run(s, run_id, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(
          s,
          "SELECT r.created, r.updated, "
          " (SELECT max(n.created) FROM nodes n WHERE n.run_id = r.id), "
          " (SELECT max(c.created) FROM llm_calls c WHERE c.run_id = r.id), "
          " (SELECT e.device FROM nodes n JOIN evaluations e ON e.id = n.eval_id "
          "  WHERE n.run_id = r.id AND e.device IS NOT NULL "
          "  GROUP BY e.device ORDER BY count(*) DESC, e.device LIMIT 1), "
          " (SELECT e.surface FROM nodes n JOIN evaluations e ON e.id = n.eval_id "
          "  WHERE n.run_id = r.id GROUP BY e.surface ORDER BY count(*) DESC LIMIT 1), "
          " (SELECT count(*) FROM llm_calls c WHERE c.run_id = r.id), "
          " (SELECT count(*) FROM llm_calls c WHERE c.run_id = r.id AND c.status != 'ok'), "
          " (SELECT coalesce(sum(c.input_tokens), 0) FROM llm_calls c WHERE c.run_id = r.id), "
          " (SELECT coalesce(sum(c.output_tokens), 0) FROM llm_calls c WHERE c.run_id = r.id), "
          " (SELECT coalesce(sum(c.cost_usd), 0) FROM llm_calls c WHERE c.run_id = r.id) "
          "FROM runs r WHERE r.id = ?1",
          &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    out->created_unix = sqlite3_column_int64(st, 0);
    out->updated_unix = sqlite3_column_int64(st, 1);
    int64_t last = out->updated_unix;
    int64_t n = store_col_int_or(st, 2, 0), c = store_col_int_or(st, 3, 0);
    out->last_unix = last > n ? (last > c ? last : c) : (n > c ? n : c);
    if (store_dup_col(st, 4, &out->device) != 0 || store_dup_col(st, 5, &out->surface) != 0) {
      store_seterr(err, errlen, "store: out of memory");
      ret = -1;
    }
    out->llm_calls = sqlite3_column_int64(st, 6);
    out->llm_failed = sqlite3_column_int64(st, 7);
    out->tokens_in = sqlite3_column_int64(st, 8);
    out->tokens_out = sqlite3_column_int64(st, 9);
    out->cost_usd = sqlite3_column_double(st, 10);
  } else {
    ret = store_db_fail(s, "cannot read the run's facts", err, errlen);
  }
  sqlite3_finalize(st);
  if (ret != 0)
    kv_run_facts_release(out);
  return ret;
}

void kv_run_facts_release(struct kv_run_facts *f) {
  free(f->device);
  free(f->surface);
  memset(f, 0, sizeof *f);
}

int kv_store_run_node_details(struct kv_store *s, int64_t run_id, int with_results,
                              int (*cb)(void *arg, const struct kv_node_detail *d), void *arg,
                              char *err, size_t errlen) {
  if (exists_run(s, run_id, err, errlen) != 0)
    return -1;
  /* The evaluation's columns are read only when asked for: result_json is
   * the bulk of a run (a few KiB a node). */
  const char *sql =
      with_results ? "SELECT n.id, n.parent_id, n.eval_id, n.created, n.step, n.action, n.params, "
                     "n.verdict, n.plan, n.source_hash, n.speedup, n.reward, "
                     "(SELECT s.bytes FROM sources s WHERE s.hash = n.source_hash), "
                     "e.detail, e.result_json, e.median_us "
                     "FROM nodes n LEFT JOIN evaluations e ON e.id = n.eval_id "
                     "WHERE n.run_id = ?1 ORDER BY n.step"
                   : "SELECT n.id, n.parent_id, n.eval_id, n.created, n.step, n.action, n.params, "
                     "n.verdict, n.plan, n.source_hash, n.speedup, n.reward, "
                     "(SELECT s.bytes FROM sources s WHERE s.hash = n.source_hash), "
                     "NULL, NULL, NULL "
                     "FROM nodes n WHERE n.run_id = ?1 ORDER BY n.step";
  sqlite3_stmt *st;
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_node_detail d = {0};
    d.id = sqlite3_column_int64(st, 0);
    d.parent_id = store_col_int_or(st, 1, 0);
    d.eval_id = store_col_int_or(st, 2, 0);
    d.created_unix = sqlite3_column_int64(st, 3);
    d.step = sqlite3_column_int(st, 4);
    d.action = col_str(st, 5);
    d.params = col_str(st, 6);
    d.verdict = col_str(st, 7);
    d.plan = col_str(st, 8);
    d.source_hash = col_str(st, 9);
    d.speedup = store_col_time(st, 10);
    d.reward = store_col_time(st, 11);
    d.source_bytes = store_col_int_or(st, 12, -1);
    d.detail = col_str(st, 13);
    d.result_json = col_str(st, 14);
    d.median_us = store_col_time(st, 15);
    k++;
    if (cb(arg, &d) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the run's nodes", err, errlen);
  return k;
}

int kv_store_run_llm_calls(struct kv_store *s, int64_t run_id,
                           int (*cb)(void *arg, const struct kv_llm_call_brief *c), void *arg,
                           char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id, node_id, created, role, provider, model, status, error, "
                    "http_status, attempts, latency_s, input_tokens, output_tokens, cost_usd "
                    "FROM llm_calls WHERE run_id = ?1 ORDER BY id",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_llm_call_brief c = {0};
    c.id = sqlite3_column_int64(st, 0);
    c.node_id = store_col_int_or(st, 1, 0);
    c.created_unix = sqlite3_column_int64(st, 2);
    c.role = col_str(st, 3);
    c.provider = col_str(st, 4);
    c.model = col_str(st, 5);
    c.status = col_str(st, 6);
    c.error = col_str(st, 7);
    c.http_status = (int)store_col_int_or(st, 8, 0);
    c.attempts = sqlite3_column_int(st, 9);
    c.latency_s = store_col_time(st, 10);
    c.input_tokens = store_col_int_or(st, 11, -1);
    c.output_tokens = store_col_int_or(st, 12, -1);
    c.cost_usd = store_col_time(st, 13);
    k++;
    if (cb(arg, &c) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the run's LLM calls", err, errlen);
  return k;
}

int kv_store_run_rules(struct kv_store *s, int64_t run_id,
                       int (*cb)(void *arg, const struct kv_run_rule *r), void *arg, char *err,
                       size_t errlen) {
  /* The run's evaluations first (an IN list SQLite indexes once), then the
   * links to them grouped by rule: no scan of the nodes per link. */
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT r.id, r.text, r.origin, r.count, r.created, r.updated, l.n, l.evals "
                    "FROM (SELECT rule_id, count(*) AS n, group_concat(eval_id, ' ') AS evals "
                    "      FROM (SELECT re.rule_id, re.eval_id FROM rule_evals re "
                    "            WHERE re.eval_id IN (SELECT eval_id FROM nodes "
                    "                                 WHERE run_id = ?1 AND eval_id IS NOT NULL) "
                    "            ORDER BY re.rule_id, re.eval_id) "
                    "      GROUP BY rule_id) l "
                    "JOIN rules r ON r.id = l.rule_id ORDER BY r.id",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_run_rule r = {0};
    r.id = sqlite3_column_int64(st, 0);
    r.text = col_str(st, 1);
    r.origin = col_str(st, 2);
    r.count = sqlite3_column_int(st, 3);
    r.created_unix = sqlite3_column_int64(st, 4);
    r.updated_unix = sqlite3_column_int64(st, 5);
    r.run_evals = sqlite3_column_int(st, 6);
    r.evals = col_str(st, 7);
    k++;
    if (cb(arg, &r) != 0) {
      rc = SQLITE_DONE;
      break;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the run's rules", err, errlen);
  return k;
}
