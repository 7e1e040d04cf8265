/* kevo analyze's tables (schema v7): analyses, their samples, gate results
 * by source hash. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/store.h"

int kv_store_analysis_open(struct kv_store *s, int64_t run_id, const char *experiment,
                           const char *config_json, int fresh, int64_t *id, int *created, char *err,
                           size_t errlen) {
  *id = 0;
  *created = 0;
  sqlite3_stmt *st;
  if (!fresh) {
    if (store_prepare(s,
                      "SELECT id FROM analyses WHERE run_id = ?1 AND experiment = ?2 AND "
                      "config_json = ?3 ORDER BY id DESC LIMIT 1",
                      &st, err, errlen) != 0)
      return -1;
    sqlite3_bind_int64(st, 1, run_id);
    store_bind_str(st, 2, experiment);
    store_bind_str(st, 3, config_json);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
      *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return store_db_fail(s, "cannot look for an unfinished analysis", err, errlen);
    if (*id)
      return 0;
  }
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "INSERT INTO analyses (run_id, experiment, config_json, status) "
                    "VALUES (?1, ?2, ?3, 'running')",
                    &st, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  sqlite3_bind_int64(st, 1, run_id);
  store_bind_str(st, 2, experiment);
  store_bind_str(st, 3, config_json);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    store_db_fail(s, "cannot record the analysis", err, errlen);
    store_rollback(s);
    return -1;
  }
  *id = sqlite3_last_insert_rowid(s->db);
  *created = 1;
  return store_commit(s, err, errlen);
}

int kv_store_analysis_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                                 size_t errlen) {
  return store_set_status(s, "analyses", id, status, err, errlen);
}

int kv_store_analysis_get(struct kv_store *s, int64_t id, struct kv_analysis_row *out, char *err,
                          size_t errlen) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  const char *sql = id > 0 ? "SELECT id, run_id, experiment, config_json, status, created, updated "
                             "FROM analyses WHERE id = ?1"
                           : "SELECT id, run_id, experiment, config_json, status, created, updated "
                             "FROM analyses ORDER BY id DESC LIMIT 1";
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  if (id > 0)
    sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    out->id = sqlite3_column_int64(st, 0);
    out->run_id = sqlite3_column_int64(st, 1);
    out->created_unix = sqlite3_column_int64(st, 5);
    out->updated_unix = sqlite3_column_int64(st, 6);
    if (store_dup_col(st, 2, &out->experiment) | store_dup_col(st, 3, &out->config_json) |
        store_dup_col(st, 4, &out->status)) {
      kv_analysis_row_release(out);
      store_seterr(err, errlen, "store: out of memory");
      ret = -1;
    }
  } else if (rc == SQLITE_DONE) {
    if (id > 0)
      store_seterr(err, errlen, "analysis %lld is not in %s; 'kevo analyze RUN' makes one",
                   (long long)id, s->path);
    else
      store_seterr(err, errlen, "%s holds no analyses yet; make one with 'kevo analyze RUN'",
                   s->path);
    ret = -1;
  } else
    ret = store_db_fail(s, "cannot read the analysis", err, errlen);
  sqlite3_finalize(st);
  return ret;
}

void kv_analysis_row_release(struct kv_analysis_row *r) {
  free(r->experiment);
  free(r->config_json);
  free(r->status);
  memset(r, 0, sizeof *r);
}

int kv_store_analysis_sample_put(struct kv_store *s, const struct kv_analysis_sample *r, char *err,
                                 size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "INSERT OR IGNORE INTO analysis_samples (analysis_id, node_id, cond, sample, "
                    "prompt_hash, call_id, plan_call_id, source_hash, verdict, speedup, "
                    "plan_tags, gate_cached) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                    "?11, ?12)",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, r->analysis_id);
  sqlite3_bind_int64(st, 2, r->node_id);
  sqlite3_bind_int(st, 3, r->cond);
  sqlite3_bind_int(st, 4, r->sample);
  store_bind_str(st, 5, r->prompt_hash);
  store_bind_id(st, 6, r->call_id);
  store_bind_id(st, 7, r->plan_call_id);
  store_bind_str(st, 8, r->source_hash);
  store_bind_str(st, 9, r->verdict);
  if (r->speedup >= 0)
    sqlite3_bind_double(st, 10, r->speedup);
  else
    sqlite3_bind_null(st, 10);
  sqlite3_bind_int64(st, 11, (sqlite3_int64)r->plan_tags);
  sqlite3_bind_int(st, 12, r->gate_cached);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot record an analysis sample", err, errlen);
}

#define SAMPLE_COLS                                                                                \
  "analysis_id, node_id, cond, sample, prompt_hash, call_id, plan_call_id, source_hash, "          \
  "verdict, speedup, plan_tags, gate_cached"

static void sample_of(sqlite3_stmt *st, struct kv_analysis_sample *r) {
  memset(r, 0, sizeof *r);
  r->analysis_id = sqlite3_column_int64(st, 0);
  r->node_id = sqlite3_column_int64(st, 1);
  r->cond = sqlite3_column_int(st, 2);
  r->sample = sqlite3_column_int(st, 3);
  r->prompt_hash = (const char *)sqlite3_column_text(st, 4);
  r->call_id = sqlite3_column_int64(st, 5);
  r->plan_call_id = sqlite3_column_int64(st, 6);
  r->source_hash = (const char *)sqlite3_column_text(st, 7);
  r->verdict = (const char *)sqlite3_column_text(st, 8);
  r->speedup = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 9);
  r->plan_tags = (unsigned)sqlite3_column_int64(st, 10);
  r->gate_cached = sqlite3_column_int(st, 11);
}

int kv_store_analysis_samples(struct kv_store *s, int64_t analysis_id,
                              int (*cb)(void *arg, const struct kv_analysis_sample *r), void *arg,
                              char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT " SAMPLE_COLS " FROM analysis_samples WHERE analysis_id = ?1 "
                    "ORDER BY node_id, cond, sample",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, analysis_id);
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_analysis_sample r;
    sample_of(st, &r);
    n++;
    if (cb(arg, &r))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the analysis's samples", err, errlen);
  return n;
}

int kv_store_analysis_same_prompt(struct kv_store *s, int64_t analysis_id, int64_t node_id,
                                  const char *prompt_hash, int sample,
                                  struct kv_analysis_sample *out, char verdict[32],
                                  char source_hash[65], char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT " SAMPLE_COLS " FROM analysis_samples WHERE analysis_id = ?1 AND "
                    "node_id = ?2 AND prompt_hash = ?3 AND sample = ?4 LIMIT 1",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, analysis_id);
  sqlite3_bind_int64(st, 2, node_id);
  store_bind_str(st, 3, prompt_hash);
  sqlite3_bind_int(st, 4, sample);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    sample_of(st, out);
    snprintf(verdict, 32, "%s", out->verdict ? out->verdict : "");
    snprintf(source_hash, 65, "%s", out->source_hash ? out->source_hash : "");
    out->verdict = verdict;
    out->source_hash = out->source_hash ? source_hash : NULL;
    out->prompt_hash = NULL;
    ret = 1;
  } else if (rc != SQLITE_DONE)
    ret = store_db_fail(s, "cannot look up an analysis sample", err, errlen);
  sqlite3_finalize(st);
  return ret;
}

int kv_store_analysis_gate_get(struct kv_store *s, int64_t task_id, const char *surface, int timed,
                               const char *source_hash, char *verdict, size_t vcap, double *speedup,
                               char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT verdict, speedup FROM analysis_gate WHERE task_id = ?1 AND surface = "
                    "?2 AND timed = ?3 AND source_hash = ?4",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, task_id);
  store_bind_str(st, 2, surface);
  sqlite3_bind_int(st, 3, timed);
  store_bind_str(st, 4, source_hash);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    snprintf(verdict, vcap, "%s", (const char *)sqlite3_column_text(st, 0));
    *speedup = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 1);
    ret = 1;
  } else if (rc != SQLITE_DONE)
    ret = store_db_fail(s, "cannot read the analysis's gate cache", err, errlen);
  sqlite3_finalize(st);
  return ret;
}

int kv_store_analysis_gate_put(struct kv_store *s, int64_t task_id, const char *surface, int timed,
                               const char *source_hash, const char *verdict, double speedup,
                               int64_t eval_id, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "INSERT OR REPLACE INTO analysis_gate (task_id, surface, timed, source_hash, "
                    "verdict, speedup, eval_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, task_id);
  store_bind_str(st, 2, surface);
  sqlite3_bind_int(st, 3, timed);
  store_bind_str(st, 4, source_hash);
  store_bind_str(st, 5, verdict);
  if (speedup >= 0)
    sqlite3_bind_double(st, 6, speedup);
  else
    sqlite3_bind_null(st, 6);
  store_bind_id(st, 7, eval_id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot record a gate result", err, errlen);
}

int kv_store_node_note(struct kv_store *s, int64_t node_id, const char *note, char *err,
                       size_t errlen) {
  if (node_id <= 0 || !note || !*note)
    return 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "UPDATE nodes SET params = CASE WHEN params IS NULL OR params = '' THEN ?2 "
                    "ELSE params || ' | ' || ?2 END WHERE id = ?1",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, node_id);
  store_bind_str(st, 2, note);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot note a decision on a node", err, errlen);
}
