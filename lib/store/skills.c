/* KLineage's tables (schema v8): lineages and their steps, skill cards and
 * their verification logs, and an FTS5 index of the cards (made here, where
 * SQLite has FTS5; it is derived from skills.search and rebuilt when absent). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/store.h"

/* 1 when the index exists (made now if needed), 0 when SQLite lacks FTS5. */
static int fts_ready(struct kv_store *s) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(s->db, "SELECT 1 FROM sqlite_master WHERE name = 'skills_fts'", -1, &st,
                         NULL) != SQLITE_OK)
    return 0;
  int have = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  if (have)
    return 1;
  if (!sqlite3_compileoption_used("ENABLE_FTS5"))
    return 0;
  if (sqlite3_exec(s->db,
                   "CREATE VIRTUAL TABLE IF NOT EXISTS skills_fts USING fts5(uid UNINDEXED, "
                   "body);"
                   "INSERT INTO skills_fts (uid, body) SELECT uid, search FROM skills;",
                   NULL, NULL, NULL) != SQLITE_OK)
    return 0;
  return 1;
}

static int fts_put(struct kv_store *s, const char *uid, const char *body, char *err,
                   size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "DELETE FROM skills_fts WHERE uid = ?1", &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, uid);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot update the skills' search index", err, errlen);
  if (store_prepare(s, "INSERT INTO skills_fts (uid, body) VALUES (?1, ?2)", &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, uid);
  store_bind_str(st, 2, body);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot update the skills' search index", err, errlen);
  return 0;
}

/* One card, inside the caller's transaction: 1 added, 2 updated, 0 same, -1. */
static int skill_put1(struct kv_store *s, const struct kv_skill_rec *k, int fts, char *err,
                      size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT card_json FROM skills WHERE uid = ?1", &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, k->uid);
  int rc = sqlite3_step(st), had = rc == SQLITE_ROW, same = 0;
  if (had)
    same = !strcmp((const char *)sqlite3_column_text(st, 0), k->card_json);
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot look up a skill", err, errlen);
  if (same)
    return 0;
  const char *sql =
      had ? "UPDATE skills SET name = ?2, intent = ?3, surface = ?4, arch = ?5, status = "
            "CASE WHEN status = 'retired' THEN status ELSE ?6 END, speedup = ?7, card_json = ?8, "
            "search = ?9, updated = CAST(strftime('%s','now') AS INTEGER) WHERE uid = ?1"
          : "INSERT INTO skills (uid, name, intent, surface, arch, status, speedup, card_json, "
            "search) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, k->uid);
  store_bind_str(st, 2, k->name);
  store_bind_str(st, 3, k->intent);
  store_bind_str(st, 4, k->surface);
  store_bind_str(st, 5, k->arch);
  store_bind_str(st, 6, k->status);
  if (k->speedup > 0)
    sqlite3_bind_double(st, 7, k->speedup);
  store_bind_str(st, 8, k->card_json);
  store_bind_str(st, 9, k->search_text ? k->search_text : k->name);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot record a skill", err, errlen);
  if (fts && fts_put(s, k->uid, k->search_text ? k->search_text : k->name, err, errlen) != 0)
    return -1;
  /* a new card's log: one JSON entry per line */
  for (const char *p = had ? NULL : k->log_json; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n) {
      char *line = strndup(p, n);
      if (!line)
        return store_db_fail(s, "out of memory", err, errlen);
      int rc2 = kv_store_skill_log_add(s, k->uid, line, NULL, err, errlen);
      free(line);
      if (rc2 != 0)
        return -1;
    }
    p = nl ? nl + 1 : p + n;
  }
  return had ? 2 : 1;
}

int kv_store_skills_put(struct kv_store *s, const struct kv_skill_rec *skills, int n, int *added,
                        int *updated, char *err, size_t errlen) {
  int a = 0, u = 0;
  int fts = fts_ready(s);
  if (store_begin(s, err, errlen) != 0)
    return -1;
  for (int i = 0; i < n; i++) {
    int rc = skill_put1(s, &skills[i], fts, err, errlen);
    if (rc < 0) {
      store_rollback(s);
      return -1;
    }
    a += rc == 1;
    u += rc == 2;
  }
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (added)
    *added = a;
  if (updated)
    *updated = u;
  return 0;
}

static int put_source(struct kv_store *s, const char *hash, const char *text, char *err,
                      size_t errlen) {
  if (!hash || !text)
    return 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "INSERT INTO sources (hash, text, bytes) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT (hash) DO NOTHING",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, hash);
  store_bind_str(st, 2, text);
  sqlite3_bind_int64(st, 3, (sqlite3_int64)strlen(text));
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot record a kernel's source", err, errlen);
}

int kv_store_lineage_put(struct kv_store *s, const struct kv_lineage_rec *L,
                         const struct kv_skill_rec *skills, int nskills, int64_t *id, char *err,
                         size_t errlen) {
  int fts = fts_ready(s);
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st = NULL;
  if (put_source(s, L->expert_hash, L->expert_source, err, errlen) != 0)
    goto fail;
  if (store_prepare(s,
                    "INSERT INTO lineages (key, task_id, mode, surface, arch, device, "
                    "expert_path, expert_hash, expert_json, expert_us, nsteps) VALUES "
                    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                    &st, err, errlen) != 0)
    goto fail;
  store_bind_str(st, 1, L->key);
  sqlite3_bind_int64(st, 2, L->task_id);
  store_bind_str(st, 3, L->mode);
  store_bind_str(st, 4, L->surface);
  store_bind_str(st, 5, L->arch);
  store_bind_str(st, 6, L->device);
  store_bind_str(st, 7, L->expert_path);
  store_bind_str(st, 8, L->expert_hash);
  store_bind_str(st, 9, L->expert_json);
  store_bind_time(st, 10, L->expert_us);
  sqlite3_bind_int(st, 11, L->nsteps);
  if (sqlite3_step(st) != SQLITE_DONE) {
    store_db_fail(s, "cannot record the lineage", err, errlen);
    goto fail;
  }
  sqlite3_finalize(st);
  st = NULL;
  int64_t lid = sqlite3_last_insert_rowid(s->db);
  for (int i = 0; i < L->nsteps; i++) {
    const struct kv_lineage_step_rec *p = &L->steps[i];
    if (put_source(s, p->child_hash, p->child_source, err, errlen) != 0)
      goto fail;
    if (store_prepare(s,
                      "INSERT INTO lineage_steps (lineage_id, ord, mechanism, verdict, detail, "
                      "accepted, admitted, parent_hash, child_hash, forward_diff, result_json, "
                      "paired_json, median_us, speedup, skill_uid) VALUES (?1, ?2, ?3, ?4, ?5, "
                      "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                      &st, err, errlen) != 0)
      goto fail;
    sqlite3_bind_int64(st, 1, lid);
    sqlite3_bind_int(st, 2, p->ord);
    store_bind_str(st, 3, p->mechanism);
    store_bind_str(st, 4, p->verdict);
    store_bind_str(st, 5, p->detail);
    sqlite3_bind_int(st, 6, p->accepted);
    sqlite3_bind_int(st, 7, p->admitted);
    store_bind_str(st, 8, p->parent_hash);
    store_bind_str(st, 9, p->child_source ? p->child_hash : NULL);
    store_bind_str(st, 10, p->forward_diff);
    store_bind_str(st, 11, p->result_json);
    store_bind_str(st, 12, p->paired_json);
    store_bind_time(st, 13, p->median_us);
    store_bind_time(st, 14, p->speedup);
    store_bind_str(st, 15, p->skill_uid);
    if (sqlite3_step(st) != SQLITE_DONE) {
      store_db_fail(s, "cannot record a lineage step", err, errlen);
      goto fail;
    }
    sqlite3_finalize(st);
    st = NULL;
  }
  for (int i = 0; i < nskills; i++)
    if (skill_put1(s, &skills[i], fts, err, errlen) < 0)
      goto fail;
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (id)
    *id = lid;
  return 0;
fail:
  if (st)
    sqlite3_finalize(st);
  store_rollback(s);
  return -1;
}

int kv_store_skills_each(struct kv_store *s, int with_retired,
                         int (*cb)(void *ud, const struct kv_skill_row *r), void *ud, char *err,
                         size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT k.id, k.uid, k.name, k.status, k.card_json, k.retired, k.speedup, "
                    "k.created, k.updated, "
                    "(SELECT COUNT(*) FROM skill_log l WHERE l.skill_uid = k.uid AND l.verdict "
                    "IS NOT NULL), "
                    "(SELECT COUNT(*) FROM skill_log l WHERE l.skill_uid = k.uid AND l.verdict "
                    "IS NOT NULL AND l.verdict != 'ok') "
                    "FROM skills k WHERE ?1 OR k.status != 'retired' ORDER BY k.id",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int(st, 1, with_retired);
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_skill_row r = {0};
    r.id = sqlite3_column_int64(st, 0);
    r.uid = (const char *)sqlite3_column_text(st, 1);
    r.name = (const char *)sqlite3_column_text(st, 2);
    r.status = (const char *)sqlite3_column_text(st, 3);
    r.card_json = (const char *)sqlite3_column_text(st, 4);
    r.retired = (const char *)sqlite3_column_text(st, 5);
    r.speedup = store_col_time(st, 6);
    r.created_unix = sqlite3_column_int64(st, 7);
    r.updated_unix = sqlite3_column_int64(st, 8);
    r.uses = sqlite3_column_int(st, 9);
    r.failures = sqlite3_column_int(st, 10);
    n++;
    if (cb(ud, &r))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot list the skills", err, errlen);
  return n;
}

int kv_store_skill_retire(struct kv_store *s, const char *uid_or_id, const char *reason, char *err,
                          size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "UPDATE skills SET status = CASE WHEN ?2 IS NULL THEN CASE WHEN "
                    "json_extract(card_json, '$.admitted') THEN 'admitted' ELSE 'rejected' END "
                    "ELSE 'retired' END, retired = ?2, updated = CAST(strftime('%s','now') AS "
                    "INTEGER) WHERE uid = ?1 OR CAST(id AS TEXT) = ?1",
                    &st, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  store_bind_str(st, 1, uid_or_id);
  store_bind_str(st, 2, reason);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    store_db_fail(s, "cannot retire the skill", err, errlen);
    store_rollback(s);
    return -1;
  }
  int changed = sqlite3_changes(s->db);
  if (store_commit(s, err, errlen) != 0)
    return -1;
  return changed ? 0 : 1;
}

int kv_store_skill_log_add(struct kv_store *s, const char *uid, const char *entry_json,
                           const char *verdict, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "INSERT INTO skill_log (skill_uid, entry_json, verdict) VALUES (?1, ?2, ?3)",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, uid);
  store_bind_str(st, 2, entry_json);
  store_bind_str(st, 3, verdict);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot append to a skill's log", err, errlen);
}

int kv_store_skill_log(struct kv_store *s, const char *uid,
                       int (*cb)(void *ud, const char *entry_json, int64_t created), void *ud,
                       char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT entry_json, created FROM skill_log WHERE skill_uid = ?1 ORDER BY id",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, uid);
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    n++;
    if (cb(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1)))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read a skill's log", err, errlen);
  return n;
}

int kv_store_skills_rank(struct kv_store *s, const char *text,
                         int (*cb)(void *ud, const char *uid, double rank), void *ud, int *fts,
                         char *err, size_t errlen) {
  *fts = fts_ready(s);
  if (!*fts)
    return 0;
  /* The words of text, each quoted, joined by OR (at most 64 distinct). */
  char q[4096];
  size_t o = 0;
  int words = 0;
  for (const char *p = text; *p && words < 64;) {
    while (*p && !isalnum((unsigned char)*p))
      p++;
    const char *w = p;
    while (isalnum((unsigned char)*p) || *p == '_')
      p++;
    size_t n = (size_t)(p - w);
    if (n < 3 || n > 40)
      continue;
    if (o + n + 8 >= sizeof q)
      break;
    o += (size_t)snprintf(q + o, sizeof q - o, "%s\"%.*s\"", words ? " OR " : "", (int)n, w);
    words++;
  }
  if (!words)
    return 0;
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT uid, -bm25(skills_fts) FROM skills_fts WHERE skills_fts MATCH ?1",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, q);
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    n++;
    if (cb(ud, (const char *)sqlite3_column_text(st, 0), sqlite3_column_double(st, 1)))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot search the skills", err, errlen);
  return n;
}

int kv_store_lineage_steps(struct kv_store *s, int64_t id,
                           int (*cb)(void *ud, const char *task, const char *surface,
                                     const char *device, int64_t lineage_id,
                                     const struct kv_lineage_step_rec *st),
                           void *ud, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT t.name, l.surface, l.device, l.id, p.ord, p.mechanism, p.verdict, "
                    "p.detail, p.accepted, p.admitted, p.parent_hash, p.child_hash, "
                    "p.paired_json, p.median_us, p.speedup, p.skill_uid, p.forward_diff "
                    "FROM lineages l JOIN tasks t ON t.id = l.task_id "
                    "LEFT JOIN lineage_steps p ON p.lineage_id = l.id "
                    "WHERE l.id = CASE WHEN ?1 > 0 THEN ?1 ELSE (SELECT MAX(id) FROM lineages) "
                    "END ORDER BY p.ord",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, id);
  int n = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_lineage_step_rec r = {0};
    int has = sqlite3_column_type(st, 4) != SQLITE_NULL;
    r.ord = sqlite3_column_int(st, 4);
    r.mechanism = (const char *)sqlite3_column_text(st, 5);
    r.verdict = (const char *)sqlite3_column_text(st, 6);
    r.detail = (const char *)sqlite3_column_text(st, 7);
    r.accepted = sqlite3_column_int(st, 8);
    r.admitted = sqlite3_column_int(st, 9);
    r.parent_hash = (const char *)sqlite3_column_text(st, 10);
    r.child_hash = (const char *)sqlite3_column_text(st, 11);
    r.paired_json = (const char *)sqlite3_column_text(st, 12);
    r.median_us = store_col_time(st, 13);
    r.speedup = store_col_time(st, 14);
    r.skill_uid = (const char *)sqlite3_column_text(st, 15);
    r.forward_diff = (const char *)sqlite3_column_text(st, 16);
    n++;
    if (cb(ud, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2), sqlite3_column_int64(st, 3), has ? &r : NULL))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the lineage", err, errlen);
  return n;
}
