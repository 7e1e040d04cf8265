/* The memory of rules beyond schema v4's rows (scope, flags, evidence that
 * means the same in every store, merged phrasings, the judge's verdicts) and
 * the adaptation stage's records: kevo synthesize's attempts, kevo adapt's
 * passes. Every mutation in one transaction; values only through bound
 * parameters; nothing here prints or exits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kevo/store.h"

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

#define NOW "CAST(strftime('%s', 'now') AS INTEGER)"

int kv_store_id(struct kv_store *s, char out[33], char *err, size_t errlen) {
  out[0] = 0;
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT value FROM meta WHERE key = 'store_id'", &st, err, errlen) != 0)
    return -1;
  int rc = sqlite3_step(st), ret = 0;
  const unsigned char *v = rc == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
  if (v && strlen((const char *)v) == 32)
    memcpy(out, v, 33);
  else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    ret = store_db_fail(s, "cannot read the store's id", err, errlen);
  else
    ret = -1, store_seterr(err, errlen,
                           "store: %s: no store id in the meta table (a database from before "
                           "schema 6 that did not migrate?); open it with this kevo",
                           s->path);
  sqlite3_finalize(st);
  return ret;
}

/* ---- rules ---------------------------------------------------------------- */

int kv_store_rules_meta(struct kv_store *s, struct kv_rule_meta **rows, int *n, char *err,
                        size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT r.id, r.text, r.origin, r.surface, r.arch, r.flag, r.flag_key, "
                    "(SELECT group_concat(text, char(10)) FROM (SELECT text FROM rule_merges m "
                    "WHERE m.into_id = r.id ORDER BY m.rowid LIMIT 64)), r.count, "
                    "(SELECT count(*) FROM rule_evidence e WHERE e.rule_id = r.id), r.created, "
                    "r.updated FROM rules r ORDER BY r.id",
                    &st, err, errlen) != 0)
    return -1;
  int cap = 0, k = 0, rc, oom = 0;
  struct kv_rule_meta *out = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (k == cap) {
      cap = cap ? cap * 2 : 32;
      struct kv_rule_meta *g = realloc(out, (size_t)cap * sizeof *g);
      if (!g) {
        oom = 1;
        break;
      }
      out = g;
    }
    struct kv_rule_meta *o = &out[k++];
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    oom |= store_dup_col(st, 1, &o->text) | store_dup_col(st, 2, &o->origin) |
           store_dup_col(st, 3, &o->surface) | store_dup_col(st, 4, &o->arch) |
           store_dup_col(st, 5, &o->flag) | store_dup_col(st, 6, &o->flag_key) |
           store_dup_col(st, 7, &o->aliases);
    o->count = sqlite3_column_int(st, 8);
    o->nevidence = sqlite3_column_int(st, 9);
    o->created_unix = sqlite3_column_int64(st, 10);
    o->updated_unix = sqlite3_column_int64(st, 11);
    if (oom)
      break;
  }
  sqlite3_finalize(st);
  if (oom) {
    kv_rule_metas_free(out, k);
    return store_seterr(err, errlen, "store: out of memory"), -1;
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    kv_rule_metas_free(out, k);
    return store_db_fail(s, "cannot read the rules", err, errlen);
  }
  *rows = out;
  *n = k;
  return 0;
}

void kv_rule_metas_free(struct kv_rule_meta *rows, int n) {
  for (int i = 0; rows && i < n; i++) {
    free(rows[i].text);
    free(rows[i].origin);
    free(rows[i].surface);
    free(rows[i].arch);
    free(rows[i].flag);
    free(rows[i].flag_key);
    free(rows[i].aliases);
  }
  free(rows);
}

/* One statement with up to 4 bound values (strings or ints), stepped to done.
 * kinds: 's' string, 'i' int64 (as id: <= 0 binds NULL), 'n' int64. */
static int exec_bound(struct kv_store *s, const char *sql, const char *what, const char *kinds,
                      const void *const *vals, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  for (int i = 0; kinds[i]; i++) {
    if (kinds[i] == 's')
      store_bind_str(st, i + 1, (const char *)vals[i]);
    else if (kinds[i] == 'i')
      store_bind_id(st, i + 1, *(const int64_t *)vals[i]);
    else
      sqlite3_bind_int64(st, i + 1, *(const int64_t *)vals[i]);
  }
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, what, err, errlen);
}

/* The key of a local evaluation: "STORE_ID:EVAL_ID". */
static int local_key(struct kv_store *s, int64_t eval_id, char *out, size_t cap, char *err,
                     size_t errlen) {
  char id[33];
  if (kv_store_id(s, id, err, errlen) < 0)
    return -1;
  snprintf(out, cap, "%s:%lld", id, (long long)eval_id);
  return 0;
}

/* The weight the rule holds for key: 0 when none, -1 on error. */
static int held_weight(struct kv_store *s, int64_t rule_id, const char *key, char *err,
                       size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT weight FROM rule_evidence WHERE rule_id = ?1 AND key = ?2", &st, err,
                    errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, rule_id);
  store_bind_str(st, 2, key);
  int rc = sqlite3_step(st), w = 0;
  if (rc == SQLITE_ROW)
    w = sqlite3_column_int(st, 0);
  else if (rc != SQLITE_DONE)
    w = store_db_fail(s, "cannot read a rule's evidence", err, errlen);
  sqlite3_finalize(st);
  return w;
}

/* Adds (or raises) one item; *delta gets what the count gains. Inside a
 * transaction. */
static int add_evidence(struct kv_store *s, int64_t rule_id, const struct kv_rule_evidence *ev,
                        int *delta, char *err, size_t errlen) {
  *delta = 0;
  char kbuf[96];
  const char *key = ev->key;
  if (!key || !*key) {
    if (ev->eval_id <= 0)
      return store_seterr(err, errlen, "store: evidence needs a key or an evaluation"), -1;
    if (local_key(s, ev->eval_id, kbuf, sizeof kbuf, err, errlen) < 0)
      return -1;
    key = kbuf;
  }
  int w = ev->weight > 0 ? ev->weight : 1;
  int held = held_weight(s, rule_id, key, err, errlen);
  if (held < 0)
    return -1;
  sqlite3_stmt *st;
  if (held == 0) {
    /* Descriptions the caller did not give come from the store (a local
     * evaluation: its task, source, verdict, surface, and its run's model). */
    if (store_prepare(
            s,
            "INSERT INTO rule_evidence (rule_id, key, weight, eval_id, task, spec_hash, "
            "source_hash, verdict, surface, arch, model, created) SELECT ?1, ?2, ?3, ?4, "
            "coalesce(?5, t.name), coalesce(?6, t.spec_hash), coalesce(?7, e.source_hash), "
            "coalesce(?8, e.verdict), coalesce(?9, e.surface), ?10, coalesce(?11, (SELECT "
            "CASE WHEN json_valid(r.config_json) AND json_extract(r.config_json, "
            "'$.model.model') IS NOT NULL THEN json_extract(r.config_json, '$.model.provider') "
            "|| '/' || json_extract(r.config_json, '$.model.model') || CASE WHEN "
            "json_extract(r.config_json, '$.model.base_url') LIKE 'http://127.%' OR "
            "json_extract(r.config_json, '$.model.base_url') LIKE 'http://localhost%' OR "
            "json_extract(r.config_json, '$.model.base_url') LIKE 'http://[::1]%' THEN "
            "' (loopback)' ELSE '' END END FROM nodes n JOIN runs r ON r.id = n.run_id WHERE "
            "n.eval_id = ?4 LIMIT 1)), coalesce(?12, " NOW ") FROM (SELECT 1) LEFT JOIN "
            "evaluations e ON e.id = ?4 LEFT JOIN tasks t ON t.id = e.task_id",
            &st, err, errlen) != 0)
      return -1;
    sqlite3_bind_int64(st, 1, rule_id);
    store_bind_str(st, 2, key);
    sqlite3_bind_int(st, 3, w);
    store_bind_id(st, 4, ev->eval_id);
    store_bind_str(st, 5, ev->task);
    store_bind_str(st, 6, ev->spec_hash);
    store_bind_str(st, 7, ev->source_hash);
    store_bind_str(st, 8, ev->verdict);
    store_bind_str(st, 9, ev->surface);
    store_bind_str(st, 10, ev->arch);
    store_bind_str(st, 11, ev->model);
    store_bind_id(st, 12, ev->created_unix);
    *delta = w;
  } else if (w > held) {
    if (store_prepare(s, "UPDATE rule_evidence SET weight = ?3 WHERE rule_id = ?1 AND key = ?2",
                      &st, err, errlen) != 0)
      return -1;
    sqlite3_bind_int64(st, 1, rule_id);
    store_bind_str(st, 2, key);
    sqlite3_bind_int(st, 3, w);
    *delta = w - held;
  } else {
    return 0;
  }
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return store_db_fail(s, "cannot record a rule's evidence", err, errlen);
  if (ev->eval_id > 0) {
    const void *v[] = {&rule_id, &ev->eval_id};
    if (exec_bound(s, "INSERT OR IGNORE INTO rule_evals (rule_id, eval_id) VALUES (?1, ?2)",
                   "cannot record a rule's evaluation", "nn", v, err, errlen) < 0)
      return -1;
  }
  /* Seen on another architecture: no longer specific to one. */
  if (ev->arch && *ev->arch) {
    const void *v[] = {&rule_id, ev->arch};
    if (exec_bound(s, "UPDATE rules SET arch = NULL WHERE id = ?1 AND arch IS NOT ?2",
                   "cannot update a rule's architecture", "ns", v, err, errlen) < 0)
      return -1;
  }
  return 0;
}

int kv_store_rule_note(struct kv_store *s, int64_t rule_id, const struct kv_rule_new *r,
                       const struct kv_rule_evidence *ev, int legacy_add, int64_t *id, int *added,
                       char *err, size_t errlen) {
  if (added)
    *added = 0;
  if (rule_id <= 0 && (!r || !r->text || !*r->text || !r->origin))
    return store_seterr(err, errlen, "store: a new rule needs a text and an origin"), -1;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (rule_id <= 0) {
    if (store_prepare(s,
                      "INSERT INTO rules (text, origin, count, surface, arch) VALUES (?1, ?2, 0, "
                      "?3, ?4)",
                      &st, err, errlen) != 0)
      goto fail;
    store_bind_str(st, 1, r->text);
    store_bind_str(st, 2, r->origin);
    store_bind_str(st, 3, r->surface && *r->surface ? r->surface : NULL);
    store_bind_str(st, 4, r->arch && *r->arch ? r->arch : NULL);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
      store_db_fail(s, "cannot insert the rule", err, errlen);
      goto fail;
    }
    rule_id = sqlite3_last_insert_rowid(s->db);
  } else {
    if (store_prepare(s, "SELECT 1 FROM rules WHERE id = ?1", &st, err, errlen) != 0)
      goto fail;
    sqlite3_bind_int64(st, 1, rule_id);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
      store_seterr(err, errlen, "store: no rule %lld", (long long)rule_id);
      goto fail;
    }
  }
  int delta = 0;
  if (ev && add_evidence(s, rule_id, ev, &delta, err, errlen) < 0)
    goto fail;
  if (!ev && legacy_add > 0) {
    /* Occurrences without an evaluation are one item of this store that
     * grows, so that every count travels as evidence. */
    char sid[33], key[96];
    if (kv_store_id(s, sid, err, errlen) < 0)
      goto fail;
    snprintf(key, sizeof key, "legacy:%s:%lld", sid, (long long)rule_id);
    int64_t w = legacy_add;
    const void *v[] = {&rule_id, key, &w};
    if (exec_bound(s,
                   "INSERT INTO rule_evidence (rule_id, key, weight) VALUES (?1, ?2, ?3) ON "
                   "CONFLICT (rule_id, key) DO UPDATE SET weight = weight + ?3",
                   "cannot record a rule's evidence", "nsn", v, err, errlen) < 0)
      goto fail;
    delta = legacy_add;
  }
  if (delta > 0) {
    int64_t d = delta;
    const void *v[] = {&rule_id, &d};
    if (exec_bound(s, "UPDATE rules SET count = count + ?2, updated = " NOW " WHERE id = ?1",
                   "cannot update the rule", "nn", v, err, errlen) < 0)
      goto fail;
  }
  if (store_commit(s, err, errlen) != 0)
    goto fail;
  if (id)
    *id = rule_id;
  if (added)
    *added = delta;
  return 0;
fail:
  store_rollback(s);
  return -1;
}

int kv_store_rule_by_evidence(struct kv_store *s, const char *key, int64_t *rule_id, char *err,
                              size_t errlen) {
  *rule_id = 0;
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT rule_id FROM rule_evidence WHERE key = ?1 ORDER BY rule_id LIMIT 1",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, key);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    *rule_id = sqlite3_column_int64(st, 0);
    ret = 1;
  } else if (rc != SQLITE_DONE) {
    ret = store_db_fail(s, "cannot look up a rule's evidence", err, errlen);
  }
  sqlite3_finalize(st);
  return ret;
}

int kv_store_rule_evidence(struct kv_store *s, int64_t rule_id,
                           int (*cb)(void *arg, const struct kv_rule_evidence *e), void *arg,
                           char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT key, weight, eval_id, task, spec_hash, source_hash, verdict, surface, "
                    "arch, model, created FROM rule_evidence WHERE rule_id = ?1 ORDER BY "
                    "created, rowid",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, rule_id);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_rule_evidence e = {
        .key = (const char *)sqlite3_column_text(st, 0),
        .weight = sqlite3_column_int(st, 1),
        .eval_id = store_col_int_or(st, 2, 0),
        .task = (const char *)sqlite3_column_text(st, 3),
        .spec_hash = (const char *)sqlite3_column_text(st, 4),
        .source_hash = (const char *)sqlite3_column_text(st, 5),
        .verdict = (const char *)sqlite3_column_text(st, 6),
        .surface = (const char *)sqlite3_column_text(st, 7),
        .arch = (const char *)sqlite3_column_text(st, 8),
        .model = (const char *)sqlite3_column_text(st, 9),
        .created_unix = sqlite3_column_int64(st, 10),
    };
    k++;
    if (cb(arg, &e))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read a rule's evidence", err, errlen);
  return k;
}

int kv_store_rule_set_flag(struct kv_store *s, int64_t rule_id, const char *flag, const char *key,
                           char *err, size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const void *v[] = {&rule_id, flag, flag ? key : NULL};
  if (exec_bound(s, "UPDATE rules SET flag = ?2, flag_key = ?3, updated = " NOW " WHERE id = ?1",
                 "cannot flag the rule", "nss", v, err, errlen) < 0) {
    store_rollback(s);
    return -1;
  }
  if (sqlite3_changes(s->db) != 1) {
    store_rollback(s);
    return store_seterr(err, errlen, "store: no rule %lld", (long long)rule_id), -1;
  }
  return store_commit(s, err, errlen);
}

int kv_store_rule_alias(struct kv_store *s, int64_t rule_id, const char *text, const char *how,
                        int64_t call_id, char *err, size_t errlen) {
  if (!text || !*text || !how)
    return store_seterr(err, errlen, "store: an alias needs a text and how it came"), -1;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const void *v[] = {&rule_id, text, how, &call_id};
  if (exec_bound(s,
                 "INSERT OR IGNORE INTO rule_merges (into_id, text, how, call_id) SELECT ?1, ?2, "
                 "?3, ?4 WHERE (SELECT text FROM rules WHERE id = ?1) IS NOT ?2",
                 "cannot record a rule's phrasing", "nssi", v, err, errlen) < 0) {
    store_rollback(s);
    return -1;
  }
  return store_commit(s, err, errlen);
}

int kv_store_rule_merge(struct kv_store *s, int64_t into, int64_t from, const char *how,
                        int64_t call_id, char *err, size_t errlen) {
  if (into == from)
    return store_seterr(err, errlen, "store: cannot merge rule %lld into itself", (long long)into),
           -1;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  /* Both must exist; the count `into` gains: from's count less the weight
   * of the items both hold (those are counted once). */
  if (store_prepare(s,
                    "SELECT (SELECT count(*) FROM rules WHERE id IN (?1, ?2)), (SELECT count FROM "
                    "rules WHERE id = ?2), (SELECT coalesce(sum(min(a.weight, b.weight)), 0) FROM "
                    "rule_evidence a JOIN rule_evidence b ON a.key = b.key WHERE a.rule_id = ?1 "
                    "AND b.rule_id = ?2)",
                    &st, err, errlen) != 0)
    goto fail;
  sqlite3_bind_int64(st, 1, into);
  sqlite3_bind_int64(st, 2, from);
  int rc = sqlite3_step(st);
  int both = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
  int64_t gain = rc == SQLITE_ROW ? sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 2) : 0;
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW) {
    store_db_fail(s, "cannot read the rules to merge", err, errlen);
    goto fail;
  }
  if (both != 2) {
    store_seterr(err, errlen, "store: no rule %lld or %lld to merge", (long long)into,
                 (long long)from);
    goto fail;
  }
  if (gain < 0)
    gain = 0;
  const void *v[] = {&into, &from, how, &call_id, &gain};
  static const char *const steps[] = {
      /* Evidence: an item both hold keeps the larger weight. */
      "UPDATE rule_evidence SET weight = max(weight, (SELECT b.weight FROM rule_evidence b "
      "WHERE b.rule_id = ?2 AND b.key = rule_evidence.key)) WHERE rule_id = ?1 AND key IN "
      "(SELECT key FROM rule_evidence WHERE rule_id = ?2)",
      "UPDATE OR IGNORE rule_evidence SET rule_id = ?1 WHERE rule_id = ?2",
      "DELETE FROM rule_evidence WHERE rule_id = ?2",
      "UPDATE OR IGNORE rule_evals SET rule_id = ?1 WHERE rule_id = ?2",
      "DELETE FROM rule_evals WHERE rule_id = ?2",
      "UPDATE OR IGNORE rule_merges SET into_id = ?1 WHERE into_id = ?2",
      "DELETE FROM rule_merges WHERE into_id = ?2",
      "INSERT OR IGNORE INTO rule_merges (into_id, text, how, call_id) SELECT ?1, text, ?3, "
      "?4 FROM rules WHERE id = ?2 AND text IS NOT (SELECT text FROM rules WHERE id = ?1)",
      "UPDATE rules SET count = count + ?5, updated = " NOW ", flag = coalesce(flag, (SELECT "
      "flag FROM rules WHERE id = ?2)), flag_key = CASE WHEN flag IS NULL THEN (SELECT "
      "flag_key FROM rules WHERE id = ?2) ELSE flag_key END, surface = CASE WHEN surface IS "
      "(SELECT surface FROM rules WHERE id = ?2) THEN surface ELSE NULL END, arch = CASE WHEN "
      "arch IS (SELECT arch FROM rules WHERE id = ?2) THEN arch ELSE NULL END WHERE id = ?1",
      "DELETE FROM rules WHERE id = ?2",
  };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    /* Bind only the parameters a statement names, in order. */
    sqlite3_stmt *q;
    if (store_prepare(s, steps[i], &q, err, errlen) != 0)
      goto fail;
    int np = sqlite3_bind_parameter_count(q);
    for (int p = 1; p <= np && p <= 5; p++) {
      char kind = p <= 2 ? 'n' : p == 3 ? 's' : p == 4 ? 'i' : 'n';
      if (kind == 's')
        store_bind_str(q, p, (const char *)v[p - 1]);
      else if (kind == 'i')
        store_bind_id(q, p, *(const int64_t *)v[p - 1]);
      else
        sqlite3_bind_int64(q, p, *(const int64_t *)v[p - 1]);
    }
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
      store_db_fail(s, "cannot merge the rules", err, errlen);
      goto fail;
    }
  }
  return store_commit(s, err, errlen);
fail:
  store_rollback(s);
  return -1;
}

/* The two phrasings in a fixed order. */
static void pair_order(const char **a, const char **b) {
  if (strcmp(*a, *b) > 0) {
    const char *t = *a;
    *a = *b;
    *b = t;
  }
}

int kv_store_rule_judgement(struct kv_store *s, const char *a, const char *b, int *same, char *err,
                            size_t errlen) {
  pair_order(&a, &b);
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT same FROM rule_judgements WHERE a_text = ?1 AND b_text = ?2", &st,
                    err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, a);
  store_bind_str(st, 2, b);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    *same = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 0);
    ret = 1;
  } else if (rc != SQLITE_DONE) {
    ret = store_db_fail(s, "cannot read the judge's verdicts", err, errlen);
  }
  sqlite3_finalize(st);
  return ret;
}

int kv_store_rule_judgement_put(struct kv_store *s, const char *a, const char *b, int same,
                                int64_t call_id, char *err, size_t errlen) {
  pair_order(&a, &b);
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "INSERT OR REPLACE INTO rule_judgements (a_text, b_text, same, call_id) "
                    "VALUES (?1, ?2, ?3, ?4)",
                    &st, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  store_bind_str(st, 1, a);
  store_bind_str(st, 2, b);
  if (same < 0)
    sqlite3_bind_null(st, 3);
  else
    sqlite3_bind_int(st, 3, same ? 1 : 0);
  store_bind_id(st, 4, call_id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    store_db_fail(s, "cannot record the judge's verdict", err, errlen);
    store_rollback(s);
    return -1;
  }
  return store_commit(s, err, errlen);
}

int kv_store_accepted_sources(struct kv_store *s, const char *surface, int64_t after_id,
                              int (*cb)(void *arg, int64_t eval_id, const char *task,
                                        const char *surface, const char *source),
                              void *arg, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT e.id, t.name, e.surface, src.text FROM evaluations e JOIN sources src "
                    "ON src.hash = e.source_hash LEFT JOIN tasks t ON t.id = e.task_id WHERE "
                    "e.verdict = 'ok' AND e.id > ?1 AND (?2 IS NULL OR e.surface = ?2) ORDER BY "
                    "e.id",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, after_id);
  store_bind_str(st, 2, surface);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    k++;
    if (cb(arg, sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 1),
           (const char *)sqlite3_column_text(st, 2), (const char *)sqlite3_column_text(st, 3)))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the accepted evaluations", err, errlen);
  return k;
}

int kv_store_task_entries(struct kv_store *s, int (*cb)(void *arg, const char *entry), void *arg,
                          char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT DISTINCT json_extract(spec_json, '$.entry') FROM tasks WHERE "
                    "json_valid(spec_json) AND json_extract(spec_json, '$.entry') IS NOT NULL",
                    &st, err, errlen) != 0)
    return -1;
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *e = (const char *)sqlite3_column_text(st, 0);
    k++;
    if (e && cb(arg, e))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the tasks' entries", err, errlen);
  return k;
}

int kv_store_bench_rule_items(struct kv_store *s, int64_t bench_id,
                              int (*cb)(void *arg, const struct kv_bench_rule_item *it), void *arg,
                              char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT x.rule_id, x.eval_id, bt.name, n.verdict, n.step FROM bench_tasks bt "
                    "JOIN nodes n ON n.run_id = bt.run_id JOIN rule_evals x ON x.eval_id = "
                    "n.eval_id WHERE bt.bench_id = ?1 ORDER BY x.rule_id, x.eval_id",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, bench_id);
  int rc, k = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    struct kv_bench_rule_item it = {
        .rule_id = sqlite3_column_int64(st, 0),
        .eval_id = sqlite3_column_int64(st, 1),
        .task = (const char *)sqlite3_column_text(st, 2),
        .verdict = (const char *)sqlite3_column_text(st, 3),
        .step = sqlite3_column_int(st, 4),
    };
    k++;
    if (cb(arg, &it))
      break;
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return store_db_fail(s, "cannot read the bench's rules", err, errlen);
  return k;
}

int kv_store_bench_node_counts(struct kv_store *s, int64_t bench_id, int *nodes, int *accepted,
                               char *err, size_t errlen) {
  *nodes = *accepted = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT count(*), coalesce(sum(n.verdict = 'ok'), 0) FROM bench_tasks bt JOIN "
                    "nodes n ON n.run_id = bt.run_id WHERE bt.bench_id = ?1",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, bench_id);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    *nodes = sqlite3_column_int(st, 0);
    *accepted = sqlite3_column_int(st, 1);
  } else {
    ret = store_db_fail(s, "cannot count the bench's candidates", err, errlen);
  }
  sqlite3_finalize(st);
  return ret;
}

/* ---- kevo synthesize ------------------------------------------------------ */

int kv_store_synthesis_open(struct kv_store *s, const char *out_dir, const char *config_json, int n,
                            int fresh, int64_t *id, int *created, char *err, size_t errlen) {
  *id = 0;
  *created = 0;
  sqlite3_stmt *st;
  if (!fresh) {
    if (store_prepare(s,
                      "SELECT id FROM syntheses WHERE out_dir = ?1 AND config_json = ?2 "
                      "ORDER BY id DESC LIMIT 1",
                      &st, err, errlen) != 0)
      return -1;
    store_bind_str(st, 1, out_dir);
    store_bind_str(st, 2, config_json);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
      *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      return store_db_fail(s, "cannot look for an unfinished synthesis", err, errlen);
    if (*id > 0)
      return 0;
  }
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const char *ver = KEVO_VERSION;
  const void *v[] = {out_dir, config_json, ver};
  if (exec_bound(s,
                 "INSERT INTO syntheses (out_dir, config_json, status, kevo_version) VALUES (?1, "
                 "?2, 'running', ?3)",
                 "cannot create the synthesis", "sss", v, err, errlen) < 0)
    goto fail;
  *id = sqlite3_last_insert_rowid(s->db);
  for (int64_t i = 0; i < n; i++) {
    const void *w[] = {id, &i};
    if (exec_bound(s,
                   "INSERT INTO synth_attempts (synthesis_id, ord, status) VALUES (?1, ?2, "
                   "'pending')",
                   "cannot add an attempt", "nn", w, err, errlen) < 0)
      goto fail;
  }
  if (store_commit(s, err, errlen) != 0)
    goto fail;
  *created = 1;
  return 0;
fail:
  store_rollback(s);
  *id = 0;
  return -1;
}

int kv_store_synthesis_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                                  size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const void *v[] = {&id, status};
  if (exec_bound(s, "UPDATE syntheses SET status = ?2, updated = " NOW " WHERE id = ?1",
                 "cannot update the synthesis", "ns", v, err, errlen) < 0) {
    store_rollback(s);
    return -1;
  }
  return store_commit(s, err, errlen);
}

int kv_store_synth_attempts(struct kv_store *s, int64_t synthesis_id,
                            struct kv_synth_attempt_row **rows, int *n, char *err, size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id, synthesis_id, llm_call_id, ord, status, asked, reply_hash, name, "
                    "cause, detail, module_key, graph_key, task_dir, seconds FROM synth_attempts "
                    "WHERE synthesis_id = ?1 ORDER BY ord",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, synthesis_id);
  int cap = 0, k = 0, rc, oom = 0;
  struct kv_synth_attempt_row *out = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (k == cap) {
      cap = cap ? cap * 2 : 32;
      struct kv_synth_attempt_row *g = realloc(out, (size_t)cap * sizeof *g);
      if (!g) {
        oom = 1;
        break;
      }
      out = g;
    }
    struct kv_synth_attempt_row *o = &out[k++];
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    o->synthesis_id = sqlite3_column_int64(st, 1);
    o->llm_call_id = store_col_int_or(st, 2, 0);
    o->ord = sqlite3_column_int(st, 3);
    oom |= store_dup_col(st, 4, &o->status) | store_dup_col(st, 5, &o->asked) |
           store_dup_col(st, 6, &o->reply_hash) | store_dup_col(st, 7, &o->name) |
           store_dup_col(st, 8, &o->cause) | store_dup_col(st, 9, &o->detail) |
           store_dup_col(st, 10, &o->module_key) | store_dup_col(st, 11, &o->graph_key) |
           store_dup_col(st, 12, &o->task_dir);
    o->seconds = store_col_time(st, 13);
    if (oom)
      break;
  }
  sqlite3_finalize(st);
  if (oom) {
    kv_synth_attempt_rows_free(out, k);
    return store_seterr(err, errlen, "store: out of memory"), -1;
  }
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
    kv_synth_attempt_rows_free(out, k);
    return store_db_fail(s, "cannot read the synthesis's attempts", err, errlen);
  }
  *rows = out;
  *n = k;
  return 0;
}

void kv_synth_attempt_rows_free(struct kv_synth_attempt_row *rows, int n) {
  for (int i = 0; rows && i < n; i++) {
    struct kv_synth_attempt_row *r = &rows[i];
    free(r->status);
    free(r->asked);
    free(r->reply_hash);
    free(r->name);
    free(r->cause);
    free(r->detail);
    free(r->module_key);
    free(r->graph_key);
    free(r->task_dir);
  }
  free(rows);
}

int kv_store_synth_attempt_update(struct kv_store *s, const struct kv_synth_attempt_row *r,
                                  char *err, size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "UPDATE synth_attempts SET status = ?2, asked = ?3, llm_call_id = ?4, "
                    "reply_hash = ?5, name = ?6, cause = ?7, detail = ?8, module_key = ?9, "
                    "graph_key = ?10, task_dir = ?11, seconds = ?12, updated = " NOW
                    " WHERE id = ?1",
                    &st, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  sqlite3_bind_int64(st, 1, r->id);
  store_bind_str(st, 2, r->status);
  store_bind_str(st, 3, r->asked);
  store_bind_id(st, 4, r->llm_call_id);
  store_bind_str(st, 5, r->reply_hash);
  store_bind_str(st, 6, r->name);
  store_bind_str(st, 7, r->cause);
  store_bind_str(st, 8, r->detail);
  store_bind_str(st, 9, r->module_key);
  store_bind_str(st, 10, r->graph_key);
  store_bind_str(st, 11, r->task_dir);
  store_bind_time(st, 12, r->seconds);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE || sqlite3_changes(s->db) != 1) {
    if (rc != SQLITE_DONE)
      store_db_fail(s, "cannot update the attempt", err, errlen);
    else
      store_seterr(err, errlen, "store: no attempt %lld", (long long)r->id);
    store_rollback(s);
    return -1;
  }
  return store_commit(s, err, errlen);
}

/* ---- kevo adapt ----------------------------------------------------------- */

int kv_store_adaptation_latest(struct kv_store *s, const char *suite_dir, int64_t *id,
                               int64_t *bench_id, char **status, char **summary_json, char *err,
                               size_t errlen) {
  *id = 0;
  *bench_id = 0;
  *status = NULL;
  if (summary_json)
    *summary_json = NULL;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id, bench_id, status, summary_json FROM adaptations WHERE suite_dir = "
                    "?1 ORDER BY id DESC LIMIT 1",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, suite_dir);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
    *bench_id = store_col_int_or(st, 1, 0);
    if (store_dup_col(st, 2, status) < 0 ||
        (summary_json && store_dup_col(st, 3, summary_json) < 0))
      ret = -1, store_seterr(err, errlen, "store: out of memory");
  } else if (rc != SQLITE_DONE) {
    ret = store_db_fail(s, "cannot read the adaptations", err, errlen);
  }
  sqlite3_finalize(st);
  return ret;
}

int kv_store_adaptation_new(struct kv_store *s, const char *suite_dir, int64_t *id, char *err,
                            size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const char *ver = KEVO_VERSION;
  const void *v[] = {suite_dir, ver};
  if (exec_bound(s,
                 "INSERT INTO adaptations (suite_dir, status, kevo_version) VALUES (?1, "
                 "'running', ?2)",
                 "cannot create the adaptation", "ss", v, err, errlen) < 0) {
    store_rollback(s);
    return -1;
  }
  *id = sqlite3_last_insert_rowid(s->db);
  return store_commit(s, err, errlen);
}

int kv_store_adaptation_update(struct kv_store *s, int64_t id, int64_t bench_id, const char *status,
                               const char *summary_json, char *err, size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  const void *v[] = {&id, &bench_id, status, summary_json};
  if (exec_bound(s,
                 "UPDATE adaptations SET bench_id = coalesce(?2, bench_id), status = ?3, "
                 "summary_json = coalesce(?4, summary_json), updated = " NOW " WHERE id = ?1",
                 "cannot update the adaptation", "niss", v, err, errlen) < 0) {
    store_rollback(s);
    return -1;
  }
  return store_commit(s, err, errlen);
}
