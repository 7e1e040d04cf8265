/* kevo's store: one SQLite database in WAL mode with versioned migrations.
 *
 * Rules kept throughout this file:
 * - every mutation runs inside BEGIN IMMEDIATE ... COMMIT, rolled back on error;
 * - values only ever reach SQL through bound parameters;
 * - errors name the database path and SQLite's message, plus the fix when
 *   there is an obvious one; nothing here prints or exits. */
#include "kevo/store.h"

#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

enum { STORE_BUSY_MS = 10000 };

/* ---- migrations --------------------------------------------------------- */

/* migrations[i] takes the schema from version i to version i + 1. Each runs in
 * its own transaction together with the user_version bump. Never edit a
 * released entry; append a new one and raise KV_STORE_SCHEMA_VERSION. */
#define NOW_UNIX "(CAST(strftime('%s', 'now') AS INTEGER))"
static const char *const migrations[] = {
    /* 1: tasks, sources, evaluations, meta. */
    "CREATE TABLE meta (\n"
    "  key   TEXT PRIMARY KEY NOT NULL,\n"
    "  value TEXT\n"
    ");\n"
    "CREATE TABLE tasks (\n"
    "  id        INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  name      TEXT NOT NULL,\n"
    "  dir       TEXT,\n"
    "  spec_hash TEXT NOT NULL UNIQUE,\n"
    "  spec_json TEXT NOT NULL,\n"
    "  created   INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE sources (\n"
    "  hash    TEXT PRIMARY KEY NOT NULL,\n"
    "  text    TEXT NOT NULL,\n"
    "  bytes   INTEGER NOT NULL CHECK (bytes >= 0),\n"
    "  created INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE evaluations (\n"
    "  id             INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  task_id        INTEGER NOT NULL REFERENCES tasks(id),\n"
    "  source_hash    TEXT REFERENCES sources(hash),\n"
    "  candidate_path TEXT,\n"
    "  surface        TEXT NOT NULL,\n"
    "  device         TEXT,\n"
    "  verdict        TEXT NOT NULL,\n"
    "  detail         TEXT,\n"
    "  median_us      REAL CHECK (median_us IS NULL OR median_us >= 0),\n"
    "  speedup        REAL CHECK (speedup IS NULL OR speedup >= 0),\n"
    "  result_json    TEXT,\n"
    "  created        INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version   TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX evaluations_task_id ON evaluations(task_id);\n"
    "CREATE INDEX evaluations_verdict ON evaluations(verdict);\n"
    "PRAGMA user_version = 1;\n",
    /* 2: every call to a model (the LLM layer's log, and replay's source). */
    "CREATE TABLE llm_calls (\n"
    "  id            INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  run_id        INTEGER,\n"
    "  node_id       INTEGER,\n"
    "  role          TEXT NOT NULL,\n"
    "  provider      TEXT NOT NULL,\n"
    "  model         TEXT NOT NULL,\n"
    "  base_url      TEXT,\n"
    "  cache_key     TEXT NOT NULL,\n"
    "  sample        INTEGER NOT NULL DEFAULT 0,\n"
    "  request_json  TEXT NOT NULL,\n"
    "  response_body TEXT,\n"
    "  reply_text    TEXT,\n"
    "  status        TEXT NOT NULL,\n"
    "  error         TEXT,\n"
    "  http_status   INTEGER,\n"
    "  attempts      INTEGER NOT NULL CHECK (attempts >= 0),\n"
    "  latency_s     REAL CHECK (latency_s IS NULL OR latency_s >= 0),\n"
    "  input_tokens  INTEGER CHECK (input_tokens IS NULL OR input_tokens >= 0),\n"
    "  output_tokens INTEGER CHECK (output_tokens IS NULL OR output_tokens >= 0),\n"
    "  cost_usd      REAL CHECK (cost_usd IS NULL OR cost_usd >= 0),\n"
    "  created       INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version  TEXT NOT NULL\n"
    ");\n"
    "CREATE INDEX llm_calls_cache_key ON llm_calls(cache_key);\n"
    "CREATE INDEX llm_calls_run_id ON llm_calls(run_id);\n"
    "PRAGMA user_version = 2;\n",
    /* 3: runs (searches) and their nodes (one evaluated candidate each). */
    "CREATE TABLE runs (\n"
    "  id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  task_id     INTEGER NOT NULL REFERENCES tasks(id),\n"
    "  strategy    TEXT NOT NULL,\n"
    "  config_json TEXT NOT NULL,\n"
    "  status      TEXT NOT NULL,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE nodes (\n"
    "  id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  run_id      INTEGER NOT NULL REFERENCES runs(id),\n"
    "  parent_id   INTEGER REFERENCES nodes(id),\n"
    "  step        INTEGER NOT NULL CHECK (step >= 0),\n"
    "  source_hash TEXT NOT NULL REFERENCES sources(hash),\n"
    "  eval_id     INTEGER REFERENCES evaluations(id),\n"
    "  action      TEXT NOT NULL,\n"
    "  params      TEXT,\n"
    "  verdict     TEXT NOT NULL,\n"
    "  speedup     REAL,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (run_id, step)\n"
    ");\n"
    "CREATE INDEX nodes_run_id ON nodes(run_id);\n"
    "PRAGMA user_version = 3;\n",
    /* 4: the agent: a node's reward and plan, and the memory of validity rules
     * (with the evaluations that gave rise to each). */
    "ALTER TABLE nodes ADD COLUMN reward REAL;\n"
    "ALTER TABLE nodes ADD COLUMN plan TEXT;\n"
    "CREATE TABLE rules (\n"
    "  id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  text        TEXT NOT NULL,\n"
    "  origin      TEXT NOT NULL,\n"
    "  count       INTEGER NOT NULL DEFAULT 1,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated     INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE rule_evals (\n"
    "  rule_id     INTEGER NOT NULL REFERENCES rules(id),\n"
    "  eval_id     INTEGER NOT NULL,\n"
    "  UNIQUE (rule_id, eval_id)\n"
    ");\n"
    "PRAGMA user_version = 4;\n",
    /* 5: benches: one strategy over every task of a suite, each task's state
     * and result kept so that a killed bench resumes where it was. */
    "CREATE TABLE benches (\n"
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  suite_dir    TEXT NOT NULL,\n"
    "  config_json  TEXT NOT NULL,\n"
    "  status       TEXT NOT NULL,\n"
    "  created      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE bench_tasks (\n"
    "  id               INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  bench_id         INTEGER NOT NULL REFERENCES benches(id),\n"
    "  ord              INTEGER NOT NULL,\n"
    "  task_dir         TEXT NOT NULL,\n"
    "  name             TEXT NOT NULL,\n"
    "  level            INTEGER,\n"
    "  status           TEXT NOT NULL,\n"
    "  run_id           INTEGER REFERENCES runs(id),\n"
    "  correct          INTEGER,\n"
    "  speedup          REAL,\n"
    "  speedup_baseline REAL,\n"
    "  detail           TEXT,\n"
    "  updated          INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (bench_id, task_dir),\n"
    "  UNIQUE (bench_id, ord)\n"
    ");\n"
    "PRAGMA user_version = 5;\n",
    /* 6: a memory of rules that can be trusted and shared (lib/store/rules_meta.c):
     * each rule's scope (surface, architecture) and flag (why it is no longer
     * injected), its evidence under keys that mean the same in every store
     * (STORE_ID:EVAL_ID, so that importing a file twice adds nothing), the
     * phrasings merged into it, the judge's verdicts on pairs; and the
     * adaptation stage: kevo synthesize's attempts and kevo adapt's passes.
     * Existing rules keep their counts: their evaluations become evidence,
     * the rest of a count one legacy item. */
    "ALTER TABLE rules ADD COLUMN surface TEXT;\n"
    "ALTER TABLE rules ADD COLUMN arch TEXT;\n"
    "ALTER TABLE rules ADD COLUMN flag TEXT;\n"
    "ALTER TABLE rules ADD COLUMN flag_key TEXT;\n"
    "CREATE TABLE rule_evidence (\n"
    "  rule_id     INTEGER NOT NULL REFERENCES rules(id),\n"
    "  key         TEXT NOT NULL,\n"
    "  weight      INTEGER NOT NULL CHECK (weight >= 1),\n"
    "  eval_id     INTEGER,\n"
    "  task        TEXT,\n"
    "  spec_hash   TEXT,\n"
    "  source_hash TEXT,\n"
    "  verdict     TEXT,\n"
    "  surface     TEXT,\n"
    "  arch        TEXT,\n"
    "  model       TEXT,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (rule_id, key)\n"
    ");\n"
    "CREATE INDEX rule_evidence_eval_id ON rule_evidence(eval_id);\n"
    "CREATE INDEX rule_evidence_key ON rule_evidence(key);\n"
    "CREATE TABLE rule_merges (\n"
    "  into_id     INTEGER NOT NULL REFERENCES rules(id),\n"
    "  text        TEXT NOT NULL,\n"
    "  how         TEXT NOT NULL,\n"
    "  call_id     INTEGER,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (into_id, text)\n"
    ");\n"
    "CREATE TABLE rule_judgements (\n"
    "  a_text      TEXT NOT NULL,\n"
    "  b_text      TEXT NOT NULL,\n"
    "  same        INTEGER,\n"
    "  call_id     INTEGER,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (a_text, b_text)\n"
    ");\n"
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))));\n"
    "INSERT INTO rule_evidence (rule_id, key, weight, eval_id, task, spec_hash, source_hash,\n"
    "                           verdict, surface)\n"
    "  SELECT x.rule_id, (SELECT value FROM meta WHERE key = 'store_id') || ':' || x.eval_id, 1,\n"
    "         x.eval_id, t.name, t.spec_hash, e.source_hash, e.verdict, e.surface\n"
    "  FROM rule_evals x LEFT JOIN evaluations e ON e.id = x.eval_id\n"
    "  LEFT JOIN tasks t ON t.id = e.task_id;\n"
    "INSERT INTO rule_evidence (rule_id, key, weight)\n"
    "  SELECT id, 'legacy:' || (SELECT value FROM meta WHERE key = 'store_id') || ':' || id,\n"
    "         count - n FROM (SELECT r.id, r.count,\n"
    "    (SELECT count(*) FROM rule_evals x WHERE x.rule_id = r.id) AS n FROM rules r)\n"
    "  WHERE count > n;\n"
    "CREATE TABLE syntheses (\n"
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  out_dir      TEXT NOT NULL,\n"
    "  config_json  TEXT NOT NULL,\n"
    "  status       TEXT NOT NULL,\n"
    "  created      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE synth_attempts (\n"
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  synthesis_id INTEGER NOT NULL REFERENCES syntheses(id),\n"
    "  ord          INTEGER NOT NULL,\n"
    "  status       TEXT NOT NULL,\n"
    "  asked        TEXT,\n"
    "  llm_call_id  INTEGER,\n"
    "  reply_hash   TEXT,\n"
    "  name         TEXT,\n"
    "  cause        TEXT,\n"
    "  detail       TEXT,\n"
    "  module_key   TEXT,\n"
    "  graph_key    TEXT,\n"
    "  task_dir     TEXT,\n"
    "  seconds      REAL,\n"
    "  updated      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  UNIQUE (synthesis_id, ord)\n"
    ");\n"
    "CREATE TABLE adaptations (\n"
    "  id           INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  suite_dir    TEXT NOT NULL,\n"
    "  bench_id     INTEGER REFERENCES benches(id),\n"
    "  status       TEXT NOT NULL,\n"
    "  summary_json TEXT,\n"
    "  created      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  kevo_version TEXT NOT NULL\n"
    ");\n"
    "PRAGMA user_version = 6;\n",
    /* 7: kevo analyze: analyses of recorded runs, each sample of each
     * (node, condition) as it completes, and gate results by source hash. */
    "CREATE TABLE analyses (\n"
    "  id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  run_id      INTEGER NOT NULL REFERENCES runs(id),\n"
    "  experiment  TEXT NOT NULL,\n"
    "  config_json TEXT NOT NULL,\n"
    "  status      TEXT NOT NULL,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated     INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE analysis_samples (\n"
    "  analysis_id  INTEGER NOT NULL REFERENCES analyses(id),\n"
    "  node_id      INTEGER NOT NULL REFERENCES nodes(id),\n"
    "  cond         INTEGER NOT NULL,\n"
    "  sample       INTEGER NOT NULL,\n"
    "  prompt_hash  TEXT,\n"
    "  call_id      INTEGER,\n"
    "  plan_call_id INTEGER,\n"
    "  source_hash  TEXT,\n"
    "  verdict      TEXT NOT NULL,\n"
    "  speedup      REAL,\n"
    "  plan_tags    INTEGER NOT NULL DEFAULT 0,\n"
    "  gate_cached  INTEGER NOT NULL DEFAULT 0,\n"
    "  created      INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  PRIMARY KEY (analysis_id, node_id, cond, sample)\n"
    ");\n"
    "CREATE TABLE analysis_gate (\n"
    "  task_id     INTEGER NOT NULL REFERENCES tasks(id),\n"
    "  surface     TEXT NOT NULL,\n"
    "  timed       INTEGER NOT NULL,\n"
    "  source_hash TEXT NOT NULL,\n"
    "  verdict     TEXT NOT NULL,\n"
    "  speedup     REAL,\n"
    "  eval_id     INTEGER,\n"
    "  PRIMARY KEY (task_id, surface, timed, source_hash)\n"
    ");\n"
    "PRAGMA user_version = 7;\n",
    /* 8: KLineage: lineages of expert kernels walked backward, their steps,
     * skill cards (the card's JSON is the record; the columns index it) and
     * each card's verification log. The FTS5 index of the cards is made by
     * lib/store/skills.c where SQLite has FTS5 (derived: rebuilt from skills). */
    "CREATE TABLE lineages (\n"
    "  id          INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  key         TEXT NOT NULL UNIQUE,\n"
    "  task_id     INTEGER NOT NULL REFERENCES tasks(id),\n"
    "  mode        TEXT NOT NULL,\n"
    "  surface     TEXT NOT NULL,\n"
    "  arch        TEXT,\n"
    "  device      TEXT,\n"
    "  expert_path TEXT,\n"
    "  expert_hash TEXT NOT NULL REFERENCES sources(hash),\n"
    "  expert_json TEXT,\n"
    "  expert_us   REAL,\n"
    "  nsteps      INTEGER NOT NULL,\n"
    "  created     INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE lineage_steps (\n"
    "  lineage_id   INTEGER NOT NULL REFERENCES lineages(id),\n"
    "  ord          INTEGER NOT NULL,\n"
    "  mechanism    TEXT NOT NULL,\n"
    "  verdict      TEXT NOT NULL,\n"
    "  detail       TEXT,\n"
    "  accepted     INTEGER NOT NULL,\n"
    "  admitted     INTEGER NOT NULL,\n"
    "  parent_hash  TEXT,\n"
    "  child_hash   TEXT REFERENCES sources(hash),\n"
    "  forward_diff TEXT,\n"
    "  result_json  TEXT,\n"
    "  paired_json  TEXT,\n"
    "  median_us    REAL,\n"
    "  speedup      REAL,\n"
    "  skill_uid    TEXT,\n"
    "  PRIMARY KEY (lineage_id, ord)\n"
    ");\n"
    "CREATE TABLE skills (\n"
    "  id        INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  uid       TEXT NOT NULL UNIQUE,\n"
    "  name      TEXT NOT NULL,\n"
    "  intent    TEXT NOT NULL,\n"
    "  surface   TEXT NOT NULL,\n"
    "  arch      TEXT,\n"
    "  status    TEXT NOT NULL,\n"
    "  speedup   REAL,\n"
    "  card_json TEXT NOT NULL,\n"
    "  search    TEXT NOT NULL,\n"
    "  retired   TEXT,\n"
    "  created   INTEGER NOT NULL DEFAULT " NOW_UNIX ",\n"
    "  updated   INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE TABLE skill_log (\n"
    "  id         INTEGER PRIMARY KEY AUTOINCREMENT,\n"
    "  skill_uid  TEXT NOT NULL,\n"
    "  entry_json TEXT NOT NULL,\n"
    "  verdict    TEXT,\n"
    "  matched    INTEGER NOT NULL DEFAULT 1,\n"
    "  created    INTEGER NOT NULL DEFAULT " NOW_UNIX "\n"
    ");\n"
    "CREATE INDEX skill_log_uid ON skill_log(skill_uid);\n"
    "PRAGMA user_version = 8;\n",
    /* 8 -> 9: why a run ended (issue 33: "stopped" alone, a full disk as "killed") */
    "ALTER TABLE runs ADD COLUMN stop_reason TEXT;\n"
    "PRAGMA user_version = 9;\n",
};
#undef NOW_UNIX

_Static_assert(sizeof migrations / sizeof migrations[0] == KV_STORE_SCHEMA_VERSION,
               "one migration per schema version");

/* ---- errors ------------------------------------------------------------- */

void store_seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || errlen == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static void dir_of(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(out, cap, ".");
  } else if (slash == path) {
    snprintf(out, cap, "/");
  } else {
    size_t n = (size_t)(slash - path);
    if (n >= cap)
      n = cap - 1;
    memcpy(out, path, n);
    out[n] = '\0';
  }
}

/* The fix to suggest for a failure, or "" when none is obvious. */
static const char *hint_for(int code, const char *path, char *buf, size_t cap) {
  char dir[STORE_PATH_CAP];
  switch (code & 0xff) {
  case SQLITE_READONLY:
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
  case SQLITE_AUTH:
    if (access(path, F_OK) == 0 && access(path, R_OK | W_OK) != 0) {
      snprintf(buf, cap,
               "; the file is not readable and writable by you: fix its permissions "
               "or use another --db");
      return buf;
    }
    dir_of(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0) {
      snprintf(buf, cap,
               "; directory %s is not writable (WAL mode needs to create files next to the "
               "database): make it writable or use another --db",
               dir);
      return buf;
    }
    snprintf(buf, cap, "; check the path and its permissions, or use another --db");
    return buf;
  case SQLITE_NOTADB:
    return "; this file is not a SQLite database: use another --db";
  case SQLITE_CORRUPT:
    return "; the database is damaged: restore it from a copy or use another --db";
  case SQLITE_FULL:
    return "; the disk is full: free some space";
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return "; another process held the database locked for too long: retry, or stop the "
           "other kevo";
  case SQLITE_IOERR:
    return "; an I/O error occurred: check the disk and the file system";
  default:
    return "";
  }
}

/* "store: PATH: WHAT: SQLITE MESSAGE; FIX". Returns -1. */
int store_db_fail(struct kv_store *s, const char *what, char *err, size_t errlen) {
  char hint[STORE_PATH_CAP + 160];
  int code = sqlite3_extended_errcode(s->db);
  store_seterr(err, errlen, "store: %s: %s: %s%s", s->path, what, sqlite3_errmsg(s->db),
               hint_for(code, s->path, hint, sizeof hint));
  return -1;
}

/* ---- helpers ------------------------------------------------------------ */

/* Creates each missing parent directory of path with mode 0700. */
static int make_parents(const char *path, char *err, size_t errlen) {
  char buf[STORE_PATH_CAP];
  size_t n = strlen(path);
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i < n; i++) {
    if (buf[i] != '/')
      continue;
    buf[i] = '\0';
    if (mkdir(buf, 0700) != 0) {
      int e = errno;
      struct stat st;
      if (e != EEXIST) {
        store_seterr(err, errlen,
                     "store: %s: cannot create directory %s: %s; create it yourself or use another "
                     "--db",
                     path, buf, strerror(e));
        return -1;
      }
      if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode)) {
        store_seterr(
            err, errlen,
            "store: %s: %s exists and is not a directory; move it away or use another --db", path,
            buf);
        return -1;
      }
    }
    buf[i] = '/';
  }
  return 0;
}

int store_exec(struct kv_store *s, const char *sql, const char *what, char *err, size_t errlen) {
  if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return store_db_fail(s, what, err, errlen);
  return 0;
}

int store_begin(struct kv_store *s, char *err, size_t errlen) {
  return store_exec(s, "BEGIN IMMEDIATE", "cannot begin a transaction", err, errlen);
}

int store_commit(struct kv_store *s, char *err, size_t errlen) {
  if (store_exec(s, "COMMIT", "cannot commit", err, errlen) != 0) {
    if (!sqlite3_get_autocommit(s->db))
      sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
  }
  return 0;
}

void store_rollback(struct kv_store *s) {
  if (!sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_prepare(struct kv_store *s, const char *sql, sqlite3_stmt **st, char *err,
                  size_t errlen) {
  if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
    *st = NULL;
    return store_db_fail(s, "cannot prepare a statement", err, errlen);
  }
  return 0;
}

/* Binds a string as given (any bytes); NULL binds SQL NULL. */
int store_bind_str(sqlite3_stmt *st, int i, const char *v) {
  if (!v)
    return sqlite3_bind_null(st, i);
  return sqlite3_bind_text(st, i, v, (int)strnlen(v, INT_MAX), SQLITE_TRANSIENT);
}

/* Binds a non-negative finite time; anything else means "not timed": NULL. */
int store_bind_time(sqlite3_stmt *st, int i, double v) {
  if (!(v >= 0) || isinf(v))
    return sqlite3_bind_null(st, i);
  return sqlite3_bind_double(st, i, v);
}

static int read_user_version(struct kv_store *s, int *out, char *err, size_t errlen) {
  sqlite3_stmt *st;
  if (store_prepare(s, "PRAGMA user_version", &st, err, errlen) != 0)
    return -1;
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    sqlite3_finalize(st);
    return store_db_fail(s, "cannot read the schema version", err, errlen);
  }
  *out = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  return 0;
}

static int refuse_newer(struct kv_store *s, int v, char *err, size_t errlen) {
  store_seterr(
      err, errlen,
      "store: %s: database schema version %d is newer than this kevo (%d); upgrade kevo or "
      "use another --db",
      s->path, v, KV_STORE_SCHEMA_VERSION);
  return -1;
}

static int migrate(struct kv_store *s, char *err, size_t errlen) {
  int v = 0;
  if (read_user_version(s, &v, err, errlen) != 0)
    return -1;
  if (v > KV_STORE_SCHEMA_VERSION)
    return refuse_newer(s, v, err, errlen);
  while (v < KV_STORE_SCHEMA_VERSION) {
    char what[96];
    if (store_begin(s, err, errlen) != 0)
      return -1;
    /* Another process may have migrated while we waited for the lock. */
    if (read_user_version(s, &v, err, errlen) != 0) {
      store_rollback(s);
      return -1;
    }
    if (v > KV_STORE_SCHEMA_VERSION) {
      store_rollback(s);
      return refuse_newer(s, v, err, errlen);
    }
    if (v == KV_STORE_SCHEMA_VERSION) {
      store_rollback(s);
      break;
    }
    snprintf(what, sizeof what, "migration to schema version %d failed", v + 1);
    if (store_exec(s, migrations[v], what, err, errlen) != 0) {
      store_rollback(s);
      return -1;
    }
    int now = 0;
    if (read_user_version(s, &now, err, errlen) != 0) {
      store_rollback(s);
      return -1;
    }
    if (now != v + 1) {
      store_rollback(s);
      store_seterr(err, errlen, "store: %s: migration %d left schema version %d (a bug in kevo)",
                   s->path, v + 1, now);
      return -1;
    }
    if (store_commit(s, err, errlen) != 0)
      return -1;
    v = now;
  }
  return 0;
}

/* Reads the header (failing early on a file that is not a database) and
 * switches to WAL. Returns 0, or -1 with the SQLite result in *code (0 when
 * the failure is not SQLite's). */
static int try_wal(struct kv_store *s, int memory, int *code, char *err, size_t errlen) {
  int v = 0;
  *code = 0;
  if (read_user_version(s, &v, err, errlen) != 0) {
    *code = sqlite3_extended_errcode(s->db);
    return -1;
  }
  /* journal_mode returns the mode now in force; anything but WAL (or memory,
   * for :memory:) means the file system refused it. */
  sqlite3_stmt *st;
  if (store_prepare(s, "PRAGMA journal_mode = WAL", &st, err, errlen) != 0) {
    *code = sqlite3_extended_errcode(s->db);
    return -1;
  }
  if (sqlite3_step(st) != SQLITE_ROW) {
    *code = sqlite3_extended_errcode(s->db);
    store_db_fail(s, "cannot switch to WAL mode", err, errlen);
    sqlite3_finalize(st);
    return -1;
  }
  const char *mode = (const char *)sqlite3_column_text(st, 0);
  int ok = mode && (strcmp(mode, "wal") == 0 || (memory && strcmp(mode, "memory") == 0));
  if (!ok)
    store_seterr(
        err, errlen,
        "store: %s: cannot switch to WAL mode (journal mode stays '%s'); put the database on "
        "a local file system or use another --db",
        s->path, mode ? mode : "?");
  sqlite3_finalize(st);
  return ok ? 0 : -1;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Switching a database to WAL needs an exclusive lock, and SQLite reports
 * SQLITE_BUSY at once (without its busy handler) when another connection is
 * in the middle of the same switch or of recovery. Retry until the busy
 * timeout has passed, as a transaction would wait. */
static int enter_wal(struct kv_store *s, int memory, char *err, size_t errlen) {
  double deadline = now_ms() + STORE_BUSY_MS;
  unsigned nap_us = 1000;
  for (;;) {
    int code;
    if (try_wal(s, memory, &code, err, errlen) == 0)
      return 0;
    int primary = code & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || now_ms() >= deadline)
      return -1;
    usleep(nap_us);
    if (nap_us < 50000)
      nap_us *= 2;
  }
}

/* ---- public API --------------------------------------------------------- */

int kv_store_default_path(char *out, size_t cap) {
  const char *v;
  int n;
  if (!out || cap == 0)
    return -1;
  out[0] = '\0';
  if ((v = getenv("XDG_DATA_HOME")) && *v)
    n = snprintf(out, cap, "%s/kevo/kevo.db", v);
  else if ((v = getenv("HOME")) && *v)
    n = snprintf(out, cap, "%s/.local/share/kevo/kevo.db", v);
  else
    return -1;
  if (n < 0 || (size_t)n >= cap) {
    out[0] = '\0';
    return -1;
  }
  return 0;
}

int kv_store_open(const char *path, struct kv_store **out, char *err, size_t errlen) {
  if (out)
    *out = NULL;
  if (!path || !*path || !out) {
    store_seterr(err, errlen, "store: no database path given; pass --db or set KEVO_DB");
    return -1;
  }
  size_t n = strnlen(path, STORE_PATH_CAP);
  if (n >= STORE_PATH_CAP) {
    store_seterr(err, errlen, "store: database path is longer than %d bytes; use a shorter --db",
                 STORE_PATH_CAP - 1);
    return -1;
  }
  int memory = strcmp(path, ":memory:") == 0;
  if (!memory && make_parents(path, err, errlen) != 0)
    return -1;

  struct kv_store *s = calloc(1, sizeof *s);
  if (!s) {
    store_seterr(err, errlen, "store: %s: out of memory", path);
    return -1;
  }
  memcpy(s->path, path, n + 1);

  int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
  if (rc != SQLITE_OK) {
    if (!s->db) {
      store_seterr(err, errlen, "store: %s: cannot open: %s", path, sqlite3_errstr(rc));
      free(s);
      return -1;
    }
    goto fail_open;
  }
  sqlite3_extended_result_codes(s->db, 1);
  if (sqlite3_busy_timeout(s->db, STORE_BUSY_MS) != SQLITE_OK)
    goto fail_open;

  /* The database is the log: a store kevo cannot write to is of no use. */
  if (sqlite3_db_readonly(s->db, "main") == 1) {
    char hint[STORE_PATH_CAP + 160];
    store_seterr(err, errlen, "store: %s: the database is read-only for this user%s", path,
                 hint_for(SQLITE_READONLY, path, hint, sizeof hint));
    goto fail;
  }
  if (enter_wal(s, memory, err, errlen) != 0)
    goto fail;

  if (store_exec(s, "PRAGMA foreign_keys = ON", "cannot enable foreign keys", err, errlen) != 0 ||
      store_exec(s, "PRAGMA synchronous = NORMAL", "cannot set synchronous mode", err, errlen) != 0)
    goto fail;
  if (migrate(s, err, errlen) != 0)
    goto fail;
  *out = s;
  return 0;

fail_open:
  store_db_fail(s, "cannot open", err, errlen);
fail:
  sqlite3_close_v2(s->db);
  free(s);
  return -1;
}

static void unclaim_run(struct kv_store *s, int64_t run_id);

void kv_store_close(struct kv_store *s) {
  if (!s)
    return;
  /* Runs still claimed did not end: shown as "killed" from now on. */
  while (s->nclaims > 0)
    unclaim_run(s, s->claims[0].run_id);
  free(s->claims);
  store_bench_unclaim(s);
  if (s->db) {
    if (!s->readonly)
      sqlite3_exec(s->db, "PRAGMA optimize", NULL, NULL, NULL);
    sqlite3_close_v2(s->db);
  }
  free(s);
}

int kv_store_open_readonly(const char *path, struct kv_store **out, char *err, size_t errlen) {
  if (out)
    *out = NULL;
  if (!path || !*path || !out) {
    store_seterr(err, errlen, "store: no database path given; pass --db or set KEVO_DB");
    return -1;
  }
  size_t n = strnlen(path, STORE_PATH_CAP);
  if (n >= STORE_PATH_CAP) {
    store_seterr(err, errlen, "store: database path is longer than %d bytes; use a shorter --db",
                 STORE_PATH_CAP - 1);
    return -1;
  }
  struct stat sb;
  if (strcmp(path, ":memory:") == 0 || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    int e = errno;
    if (strcmp(path, ":memory:") == 0)
      store_seterr(err, errlen, "store: :memory: holds nothing to read; give a database file");
    else if (stat(path, &sb) == 0)
      store_seterr(err, errlen, "store: %s: not a database file; check --db or KEVO_DB", path);
    else
      store_seterr(err, errlen,
                   "store: %s: %s; check --db or KEVO_DB (kevo run creates the store; this "
                   "command only reads one)",
                   path, e == ENOENT ? "no such database" : strerror(e));
    return -1;
  }
  struct kv_store *s = calloc(1, sizeof *s);
  if (!s) {
    store_seterr(err, errlen, "store: %s: out of memory", path);
    return -1;
  }
  memcpy(s->path, path, n + 1);
  s->readonly = 1;
  int rc = sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READONLY, NULL);
  if (rc != SQLITE_OK) {
    if (!s->db) {
      store_seterr(err, errlen, "store: %s: cannot open: %s", path, sqlite3_errstr(rc));
      free(s);
      return -1;
    }
    store_db_fail(s, "cannot open", err, errlen);
    goto fail;
  }
  sqlite3_extended_result_codes(s->db, 1);
  if (sqlite3_busy_timeout(s->db, STORE_BUSY_MS) != SQLITE_OK) {
    store_db_fail(s, "cannot open", err, errlen);
    goto fail;
  }
  /* The header first: a file that is not a database (or a damaged one)
   * fails here, not as an empty listing. */
  int v = 0;
  if (read_user_version(s, &v, err, errlen) != 0)
    goto fail;
  if (v == 0) {
    store_seterr(err, errlen,
                 "store: %s: not a kevo store (no schema); check --db or KEVO_DB (kevo run "
                 "creates the store)",
                 path);
    goto fail;
  }
  if (v > KV_STORE_SCHEMA_VERSION) {
    store_seterr(err, errlen,
                 "store: %s: schema version %d is newer than this kevo's (%d); use a newer kevo",
                 path, v, KV_STORE_SCHEMA_VERSION);
    goto fail;
  }
  if (v < KV_STORE_SCHEMA_VERSION) {
    /* An older store is upgraded by any command that writes (its reader
     * here would query tables it lacks). */
    sqlite3_close_v2(s->db);
    free(s);
    return kv_store_open(path, out, err, errlen);
  }
  *out = s;
  return 0;
fail:
  sqlite3_close_v2(s->db);
  free(s);
  return -1;
}

int kv_store_schema_version(struct kv_store *s) {
  int v = -1;
  if (!s || read_user_version(s, &v, NULL, 0) != 0)
    return -1;
  return v;
}

int kv_store_put_task(struct kv_store *s, const char *name, const char *dir, const char *spec_hash,
                      const char *spec_json, int64_t *task_id, char *err, size_t errlen) {
  if (!s || !name || !spec_hash || !*spec_hash || !spec_json) {
    store_seterr(err, errlen,
                 "store: put_task needs a store, a name, a spec hash and the spec JSON "
                 "(a bug in the caller)");
    return -1;
  }
  sqlite3_stmt *ins = NULL, *sel = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "INSERT INTO tasks (name, dir, spec_hash, spec_json) VALUES (?1, ?2, ?3, ?4) "
                    "ON CONFLICT (spec_hash) DO NOTHING",
                    &ins, err, errlen) != 0)
    goto fail;
  store_bind_str(ins, 1, name);
  store_bind_str(ins, 2, dir);
  store_bind_str(ins, 3, spec_hash);
  store_bind_str(ins, 4, spec_json);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot insert the task", err, errlen);
    goto fail;
  }
  if (store_prepare(s, "SELECT id FROM tasks WHERE spec_hash = ?1", &sel, err, errlen) != 0)
    goto fail;
  store_bind_str(sel, 1, spec_hash);
  if (sqlite3_step(sel) != SQLITE_ROW) {
    store_db_fail(s, "cannot find the task just stored", err, errlen);
    goto fail;
  }
  int64_t id = sqlite3_column_int64(sel, 0);
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  ins = sel = NULL;
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (task_id)
    *task_id = id;
  return 0;
fail:
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  store_rollback(s);
  return -1;
}

int kv_store_put_source(struct kv_store *s, const char *hash, const char *text, size_t len,
                        char *err, size_t errlen) {
  if (!s || !hash || !*hash || (!text && len > 0)) {
    store_seterr(err, errlen,
                 "store: put_source needs a store, a hash and the text (a bug in the "
                 "caller)");
    return -1;
  }
  if (len > (size_t)INT_MAX) {
    store_seterr(err, errlen, "store: %s: source %s is %zu bytes, more than a source may hold (%d)",
                 s->path, hash, len, INT_MAX);
    return -1;
  }
  sqlite3_stmt *ins = NULL, *sel = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "INSERT INTO sources (hash, text, bytes) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT (hash) DO NOTHING",
                    &ins, err, errlen) != 0)
    goto fail;
  store_bind_str(ins, 1, hash);
  sqlite3_bind_text(ins, 2, text ? text : "", (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(ins, 3, (sqlite3_int64)len);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot insert the source", err, errlen);
    goto fail;
  }
  if (sqlite3_changes(s->db) == 0) {
    /* Already there: the same hash must name the same bytes. */
    if (store_prepare(s, "SELECT text FROM sources WHERE hash = ?1", &sel, err, errlen) != 0)
      goto fail;
    store_bind_str(sel, 1, hash);
    if (sqlite3_step(sel) != SQLITE_ROW) {
      store_db_fail(s, "cannot read back the stored source", err, errlen);
      goto fail;
    }
    const void *old = sqlite3_column_blob(sel, 0);
    size_t oldlen = (size_t)sqlite3_column_bytes(sel, 0);
    if (oldlen != len || (len > 0 && memcmp(old, text, len) != 0)) {
      store_seterr(
          err, errlen,
          "store: %s: source %s is already stored with different content; the hash must be "
          "the sha256 of the text (a bug in the caller)",
          s->path, hash);
      goto fail;
    }
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  ins = sel = NULL;
  return store_commit(s, err, errlen);
fail:
  sqlite3_finalize(ins);
  sqlite3_finalize(sel);
  store_rollback(s);
  return -1;
}

int kv_store_add_eval(struct kv_store *s, const struct kv_eval_record *r, int64_t *id, char *err,
                      size_t errlen) {
  if (!s || !r || !r->surface || !r->verdict) {
    store_seterr(err, errlen,
                 "store: add_eval needs a store and a record with a surface and a verdict "
                 "(a bug in the caller)");
    return -1;
  }
  sqlite3_stmt *ins = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(
          s,
          "INSERT INTO evaluations (task_id, source_hash, candidate_path, surface, device, "
          "verdict, detail, median_us, speedup, result_json, kevo_version) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
          &ins, err, errlen) != 0)
    goto fail;
  sqlite3_bind_int64(ins, 1, r->task_id);
  store_bind_str(ins, 2, r->source_hash);
  store_bind_str(ins, 3, r->candidate_path);
  store_bind_str(ins, 4, r->surface);
  store_bind_str(ins, 5, r->device);
  store_bind_str(ins, 6, r->verdict);
  store_bind_str(ins, 7, r->detail);
  store_bind_time(ins, 8, r->median_us);
  store_bind_time(ins, 9, r->speedup);
  store_bind_str(ins, 10, r->result_json);
  store_bind_str(ins, 11, KEVO_VERSION);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    if ((sqlite3_extended_errcode(s->db)) == SQLITE_CONSTRAINT_FOREIGNKEY) {
      store_seterr(err, errlen,
                   "store: %s: cannot insert the evaluation: task %lld or source %s is not in the "
                   "store; store them first with put_task and put_source",
                   s->path, (long long)r->task_id, r->source_hash ? r->source_hash : "(none)");
    } else {
      store_db_fail(s, "cannot insert the evaluation", err, errlen);
    }
    goto fail;
  }
  int64_t rowid = sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(ins);
  ins = NULL;
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (id)
    *id = rowid;
  return 0;
fail:
  sqlite3_finalize(ins);
  store_rollback(s);
  return -1;
}

/* Copies column i as a malloc'd NUL-terminated string; NULL stays NULL.
 * Returns -1 only when out of memory. */
int store_dup_col(sqlite3_stmt *st, int i, char **out) {
  *out = NULL;
  if (sqlite3_column_type(st, i) == SQLITE_NULL)
    return 0;
  const unsigned char *t = sqlite3_column_text(st, i);
  size_t n = (size_t)sqlite3_column_bytes(st, i);
  if (!t)
    return -1;
  char *p = malloc(n + 1);
  if (!p)
    return -1;
  memcpy(p, t, n);
  p[n] = '\0';
  *out = p;
  return 0;
}

double store_col_time(sqlite3_stmt *st, int i) {
  if (sqlite3_column_type(st, i) == SQLITE_NULL)
    return -1.0;
  return sqlite3_column_double(st, i);
}

int kv_store_get_eval(struct kv_store *s, int64_t id, struct kv_eval_row *out, char *err,
                      size_t errlen) {
  if (!s || !out) {
    store_seterr(err, errlen, "store: get_eval needs a store and a row (a bug in the caller)");
    return -1;
  }
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  if (store_prepare(
          s,
          "SELECT e.id, e.task_id, t.name, e.source_hash, e.surface, e.device, e.verdict, "
          "e.detail, e.result_json, e.median_us, e.speedup, e.created "
          "FROM evaluations e LEFT JOIN tasks t ON t.id = e.task_id WHERE e.id = ?1",
          &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_finalize(st);
    store_seterr(err, errlen, "store: %s: evaluation %lld not found", s->path, (long long)id);
    return -1;
  }
  if (rc != SQLITE_ROW) {
    store_db_fail(s, "cannot read the evaluation", err, errlen);
    sqlite3_finalize(st);
    return -1;
  }
  out->id = sqlite3_column_int64(st, 0);
  out->task_id = sqlite3_column_int64(st, 1);
  int bad = 0;
  bad |= store_dup_col(st, 2, &out->task_name);
  bad |= store_dup_col(st, 3, &out->source_hash);
  bad |= store_dup_col(st, 4, &out->surface);
  bad |= store_dup_col(st, 5, &out->device);
  bad |= store_dup_col(st, 6, &out->verdict);
  bad |= store_dup_col(st, 7, &out->detail);
  bad |= store_dup_col(st, 8, &out->result_json);
  out->median_us = store_col_time(st, 9);
  out->speedup = store_col_time(st, 10);
  out->created_unix = sqlite3_column_int64(st, 11);
  sqlite3_finalize(st);
  if (bad) {
    kv_eval_row_release(out);
    store_seterr(err, errlen, "store: %s: out of memory reading evaluation %lld", s->path,
                 (long long)id);
    return -1;
  }
  return 0;
}

void kv_eval_row_release(struct kv_eval_row *r) {
  if (!r)
    return;
  free(r->task_name);
  free(r->source_hash);
  free(r->surface);
  free(r->device);
  free(r->verdict);
  free(r->detail);
  free(r->result_json);
  memset(r, 0, sizeof *r);
}

int64_t kv_store_count_evals(struct kv_store *s) {
  sqlite3_stmt *st;
  if (!s || store_prepare(s, "SELECT count(*) FROM evaluations", &st, NULL, 0) != 0)
    return -1;
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

char *kv_store_get_source(struct kv_store *s, const char *hash, size_t *len) {
  sqlite3_stmt *st;
  char *text = NULL;
  if (len)
    *len = 0;
  if (!s || !hash ||
      store_prepare(s, "SELECT text FROM sources WHERE hash = ?1", &st, NULL, 0) != 0)
    return NULL;
  store_bind_str(st, 1, hash);
  if (sqlite3_step(st) == SQLITE_ROW) {
    const void *t = sqlite3_column_blob(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    text = malloc(n + 1);
    if (text) {
      if (n > 0)
        memcpy(text, t, n);
      text[n] = '\0';
      if (len)
        *len = n;
    }
  }
  sqlite3_finalize(st);
  return text;
}

/* ---- LLM calls (schema v2) ---------------------------------------------- */

/* Binds an id; <= 0 means none: NULL. */
int store_bind_id(sqlite3_stmt *st, int i, int64_t v) {
  if (v <= 0)
    return sqlite3_bind_null(st, i);
  return sqlite3_bind_int64(st, i, v);
}

/* Binds a count; < 0 means unknown: NULL. */
int store_bind_count(sqlite3_stmt *st, int i, int64_t v) {
  if (v < 0)
    return sqlite3_bind_null(st, i);
  return sqlite3_bind_int64(st, i, v);
}

int kv_store_add_llm_call(struct kv_store *s, const struct kv_llm_call_record *r, int64_t *id,
                          char *err, size_t errlen) {
  if (!s || !r || !r->role || !r->provider || !r->model || !r->cache_key || !r->request_json ||
      !r->status) {
    store_seterr(
        err, errlen,
        "store: add_llm_call needs a store and a record with a role, provider, model, cache "
        "key, request and status (a bug in the caller)");
    return -1;
  }
  sqlite3_stmt *ins = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(
          s,
          "INSERT INTO llm_calls (run_id, node_id, role, provider, model, base_url, cache_key, "
          "sample, request_json, response_body, reply_text, status, error, http_status, "
          "attempts, latency_s, input_tokens, output_tokens, cost_usd, kevo_version) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
          "?17, ?18, ?19, ?20)",
          &ins, err, errlen) != 0)
    goto fail;
  store_bind_id(ins, 1, r->run_id);
  store_bind_id(ins, 2, r->node_id);
  store_bind_str(ins, 3, r->role);
  store_bind_str(ins, 4, r->provider);
  store_bind_str(ins, 5, r->model);
  store_bind_str(ins, 6, r->base_url);
  store_bind_str(ins, 7, r->cache_key);
  sqlite3_bind_int(ins, 8, r->sample);
  store_bind_str(ins, 9, r->request_json);
  store_bind_str(ins, 10, r->response_body);
  store_bind_str(ins, 11, r->reply_text);
  store_bind_str(ins, 12, r->status);
  store_bind_str(ins, 13, r->error);
  if (r->http_status > 0)
    sqlite3_bind_int(ins, 14, r->http_status);
  else
    sqlite3_bind_null(ins, 14);
  sqlite3_bind_int(ins, 15, r->attempts < 0 ? 0 : r->attempts);
  store_bind_time(ins, 16, r->latency_s);
  store_bind_count(ins, 17, r->input_tokens);
  store_bind_count(ins, 18, r->output_tokens);
  store_bind_time(ins, 19, r->cost_usd);
  store_bind_str(ins, 20, KEVO_VERSION);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot insert the LLM call", err, errlen);
    goto fail;
  }
  int64_t rowid = sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(ins);
  ins = NULL;
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (id)
    *id = rowid;
  return 0;
fail:
  sqlite3_finalize(ins);
  store_rollback(s);
  return -1;
}

#define LLM_CALL_COLUMNS                                                                           \
  "id, run_id, node_id, created, role, provider, model, base_url, cache_key, request_json, "       \
  "response_body, reply_text, status, error, sample, http_status, attempts, latency_s, cost_usd, " \
  "input_tokens, output_tokens"

int64_t store_col_int_or(sqlite3_stmt *st, int i, int64_t none) {
  if (sqlite3_column_type(st, i) == SQLITE_NULL)
    return none;
  return sqlite3_column_int64(st, i);
}

/* Fills *out from a row selected with LLM_CALL_COLUMNS; -1 when out of memory. */
static int llm_row(sqlite3_stmt *st, struct kv_llm_call_row *out) {
  memset(out, 0, sizeof *out);
  out->id = sqlite3_column_int64(st, 0);
  out->run_id = store_col_int_or(st, 1, 0);
  out->node_id = store_col_int_or(st, 2, 0);
  out->created_unix = sqlite3_column_int64(st, 3);
  int bad = 0;
  bad |= store_dup_col(st, 4, &out->role);
  bad |= store_dup_col(st, 5, &out->provider);
  bad |= store_dup_col(st, 6, &out->model);
  bad |= store_dup_col(st, 7, &out->base_url);
  bad |= store_dup_col(st, 8, &out->cache_key);
  bad |= store_dup_col(st, 9, &out->request_json);
  bad |= store_dup_col(st, 10, &out->response_body);
  bad |= store_dup_col(st, 11, &out->reply_text);
  bad |= store_dup_col(st, 12, &out->status);
  bad |= store_dup_col(st, 13, &out->error);
  out->sample = (int)sqlite3_column_int64(st, 14);
  out->http_status = (int)store_col_int_or(st, 15, 0);
  out->attempts = (int)sqlite3_column_int64(st, 16);
  out->latency_s = store_col_time(st, 17);
  out->cost_usd = store_col_time(st, 18);
  out->input_tokens = store_col_int_or(st, 19, -1);
  out->output_tokens = store_col_int_or(st, 20, -1);
  if (bad) {
    kv_llm_call_row_release(out);
    return -1;
  }
  return 0;
}

void kv_llm_call_row_release(struct kv_llm_call_row *r) {
  if (!r)
    return;
  free(r->role);
  free(r->provider);
  free(r->model);
  free(r->base_url);
  free(r->cache_key);
  free(r->request_json);
  free(r->response_body);
  free(r->reply_text);
  free(r->status);
  free(r->error);
  memset(r, 0, sizeof *r);
}

/* Runs a query expected to give at most one call row: 1 found, 0 none, -1 error. */
static int llm_one(struct kv_store *s, sqlite3_stmt *st, const char *what,
                   struct kv_llm_call_row *out, char *err, size_t errlen) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE) {
    sqlite3_finalize(st);
    return 0;
  }
  if (rc != SQLITE_ROW) {
    store_db_fail(s, what, err, errlen);
    sqlite3_finalize(st);
    return -1;
  }
  int bad = llm_row(st, out);
  sqlite3_finalize(st);
  if (bad) {
    store_seterr(err, errlen, "store: %s: out of memory reading an LLM call", s->path);
    return -1;
  }
  return 1;
}

int kv_store_get_llm_call(struct kv_store *s, int64_t id, struct kv_llm_call_row *out, char *err,
                          size_t errlen) {
  if (!s || !out) {
    store_seterr(err, errlen, "store: get_llm_call needs a store and a row (a bug in the caller)");
    return -1;
  }
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  if (store_prepare(s, "SELECT " LLM_CALL_COLUMNS " FROM llm_calls WHERE id = ?1", &st, err,
                    errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, id);
  int rc = llm_one(s, st, "cannot read the LLM call", out, err, errlen);
  if (rc == 0) {
    store_seterr(err, errlen, "store: %s: LLM call %lld not found", s->path, (long long)id);
    return -1;
  }
  return rc < 0 ? -1 : 0;
}

int kv_store_find_llm_call(struct kv_store *s, const char *cache_key, struct kv_llm_call_row *out,
                           char *err, size_t errlen) {
  if (!s || !cache_key || !out) {
    store_seterr(err, errlen,
                 "store: find_llm_call needs a store, a cache key and a row (a bug in the caller)");
    return -1;
  }
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT " LLM_CALL_COLUMNS
                    " FROM llm_calls WHERE cache_key = ?1 AND status = 'ok' "
                    "AND provider <> 'replay' ORDER BY id DESC LIMIT 1",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, cache_key);
  return llm_one(s, st, "cannot look up a recorded LLM call", out, err, errlen);
}

int kv_store_list_llm_calls(struct kv_store *s, int64_t after_id, int limit,
                            int (*cb)(void *arg, const struct kv_llm_call_row *row), void *arg,
                            char *err, size_t errlen) {
  if (!s || !cb) {
    store_seterr(err, errlen,
                 "store: list_llm_calls needs a store and a callback (a bug in the caller)");
    return -1;
  }
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT " LLM_CALL_COLUMNS " FROM llm_calls WHERE id > ?1 ORDER BY id LIMIT ?2",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, after_id);
  sqlite3_bind_int64(st, 2, limit > 0 ? (sqlite3_int64)limit : -1);
  int n = 0;
  for (;;) {
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
      break;
    if (rc != SQLITE_ROW) {
      store_db_fail(s, "cannot list LLM calls", err, errlen);
      sqlite3_finalize(st);
      return -1;
    }
    struct kv_llm_call_row row;
    if (llm_row(st, &row) != 0) {
      sqlite3_finalize(st);
      store_seterr(err, errlen, "store: %s: out of memory listing LLM calls", s->path);
      return -1;
    }
    n++;
    int stop = cb(arg, &row);
    kv_llm_call_row_release(&row);
    if (stop)
      break;
  }
  sqlite3_finalize(st);
  return n;
}

int kv_store_llm_call_set_node(struct kv_store *s, int64_t call_id, int64_t node_id, char *err,
                               size_t errlen) {
  if (call_id <= 0 || node_id <= 0)
    return 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "UPDATE llm_calls SET node_id = ?2 WHERE id = ?1 AND (node_id IS NULL OR "
                    "node_id = 0)",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, call_id);
  sqlite3_bind_int64(st, 2, node_id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot record an LLM call's node", err, errlen);
}

int64_t kv_store_count_llm_calls(struct kv_store *s) {
  sqlite3_stmt *st;
  if (!s || store_prepare(s, "SELECT count(*) FROM llm_calls", &st, NULL, 0) != 0)
    return -1;
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* ---- runs and nodes ------------------------------------------------------ */

/* Who is running a run. A process that runs one (kevo run, kevo resume)
 * holds an exclusive flock(2) on "DB-run<ID>.lock" beside the database, with
 * its pid inside, until the run ends or the store is closed; the kernel drops
 * the lock when that process dies, even by SIGKILL. So a second `kevo resume`
 * of a live run is refused before it writes anything, and a run whose status
 * says "running" but whose lock nobody holds is shown as "killed" and may be
 * resumed. flock's locks belong to the open file, so another handle of the
 * same process sees them too (a bench's threads). */

static int memory_store(const struct kv_store *s) {
  return strcmp(s->path, ":memory:") == 0;
}

static void claim_path(const struct kv_store *s, int64_t run_id, char *out, size_t cap) {
  snprintf(out, cap, "%s-run%lld.lock", s->path, (long long)run_id);
}

static int claim_index(const struct kv_store *s, int64_t run_id) {
  for (int i = 0; i < s->nclaims; i++)
    if (s->claims[i].run_id == run_id)
      return i;
  return -1;
}

static int claim_run(struct kv_store *s, int64_t run_id, char *err, size_t errlen) {
  if (memory_store(s) || claim_index(s, run_id) >= 0)
    return 0;
  if (s->nclaims == s->claims_cap) {
    int cap = s->claims_cap ? s->claims_cap * 2 : 4;
    struct store_claim *g = realloc(s->claims, (size_t)cap * sizeof *g);
    if (!g) {
      store_seterr(err, errlen, "store: out of memory");
      return -1;
    }
    s->claims = g;
    s->claims_cap = cap;
  }
  char path[STORE_PATH_CAP + 64];
  claim_path(s, run_id, path, sizeof path);
  /* A reader's probe holds a shared lock for a moment: wait that out (at
   * most ~0.2 s); a live owner holds it for as long as it runs. A file that
   * its owner removed between our open and our lock is opened again. */
  for (int tries = 0; tries < 20; tries++) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      store_seterr(err, errlen,
                   "store: %s: cannot create the lock file of run %lld: %s; kevo needs to write "
                   "beside the database (use another --db)",
                   path, (long long)run_id, strerror(errno));
      return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      char pid[32] = "";
      ssize_t n = e == EWOULDBLOCK ? pread(fd, pid, sizeof pid - 1, 0) : -1;
      close(fd);
      if (e != EWOULDBLOCK) {
        store_seterr(err, errlen, "store: %s: cannot lock: %s", path, strerror(e));
        return -1;
      }
      if (tries < 19) {
        usleep(10000);
        continue;
      }
      pid[n > 0 ? n : 0] = 0;
      pid[strcspn(pid, "\n")] = 0;
      store_seterr(err, errlen,
                   "run %lld is still running in another kevo process%s%s%s; wait for it to end, "
                   "or stop it (Ctrl-C, or kill -INT PID) and resume it then",
                   (long long)run_id, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "");
      return -1;
    }
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
      close(fd);
      continue;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
      /* The lock is what counts; the pid only names the owner. */
    }
    s->claims[s->nclaims].run_id = run_id;
    s->claims[s->nclaims].keep = 0;
    s->claims[s->nclaims++].fd = fd;
    return 0;
  }
  store_seterr(err, errlen, "store: %s: the lock file keeps being replaced; try again", path);
  return -1;
}

/* Removes the file while holding its lock, then lets go. */
static void unclaim_run(struct kv_store *s, int64_t run_id) {
  int i = claim_index(s, run_id);
  if (i < 0)
    return;
  char path[STORE_PATH_CAP + 64];
  claim_path(s, run_id, path, sizeof path);
  if (!s->claims[i].keep)
    unlink(path);
  close(s->claims[i].fd);
  s->claims[i] = s->claims[--s->nclaims];
}

/* Does a live process (this handle included) run it? Unknown counts as yes. */
static int run_is_live(struct kv_store *s, int64_t run_id) {
  if (memory_store(s) || claim_index(s, run_id) >= 0)
    return 1;
  char path[STORE_PATH_CAP + 64];
  claim_path(s, run_id, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return errno != ENOENT;
  int live = 1;
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    live = 0;
    flock(fd, LOCK_UN);
  }
  close(fd);
  return live;
}

/* The note kv_store_run_end left in the lock file when the database could
 * not take it: "ended STATUS\nREASON\n". 1 read into status and reason. */
static int lock_note(const struct kv_store *s, int64_t run_id, char *status, size_t scap,
                     char *reason, size_t rcap) {
  char path[STORE_PATH_CAP + 64], buf[1024];
  claim_path(s, run_id, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return 0;
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  char *nl = strchr(buf, '\n');
  if (strncmp(buf, "ended ", 6) || !nl)
    return 0;
  *nl = 0;
  snprintf(status, scap, "%s", buf + 6);
  snprintf(reason, rcap, "%.*s", (int)strcspn(nl + 1, "\n"), nl + 1);
  return 1;
}

/* "running" with nobody running it: its process died, or ended with a
 * reason the database could not take (lock_note). */
static int run_liveness(struct kv_store *s, struct kv_run_row *r) {
  if (!r->status || strcmp(r->status, "running") != 0 || run_is_live(s, r->id))
    return 0;
  char status[32], reason[900];
  int noted = lock_note(s, r->id, status, sizeof status, reason, sizeof reason);
  char *k = strdup(noted ? status : "killed");
  char *why = noted ? strdup(reason) : NULL;
  if (!k || (noted && !why)) {
    free(k);
    free(why);
    return -1;
  }
  free(r->status);
  r->status = k;
  if (noted) {
    free(r->stop_reason);
    r->stop_reason = why;
  }
  return 0;
}

int kv_store_run_create(struct kv_store *s, int64_t task_id, const char *strategy,
                        const char *config_json, int64_t *run_id, char *err, size_t errlen) {
  sqlite3_stmt *ins = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "INSERT INTO runs (task_id, strategy, config_json, status, kevo_version) "
                    "VALUES (?1, ?2, ?3, 'running', ?4)",
                    &ins, err, errlen) != 0)
    goto fail;
  sqlite3_bind_int64(ins, 1, task_id);
  store_bind_str(ins, 2, strategy);
  store_bind_str(ins, 3, config_json);
  store_bind_str(ins, 4, KEVO_VERSION);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot create the run", err, errlen);
    goto fail;
  }
  *run_id = sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(ins);
  if (store_commit(s, err, errlen) != 0)
    return -1;
  return claim_run(s, *run_id, err, errlen);
fail:
  sqlite3_finalize(ins);
  store_rollback(s);
  return -1;
}

int store_set_status(struct kv_store *s, const char *table, int64_t id, const char *status,
                     char *err, size_t errlen) {
  /* The table is one of kevo's, never outside input: it cannot be bound. */
  if (strcmp(table, "runs") && strcmp(table, "benches") && strcmp(table, "analyses")) {
    store_seterr(err, errlen, "store: no status in table %s (a bug in kevo)", table);
    return -1;
  }
  char sql[160];
  snprintf(sql, sizeof sql,
           "UPDATE %s SET status = ?1, updated = (CAST(strftime('%%s', 'now') AS INTEGER)) "
           "WHERE id = ?2",
           table);
  sqlite3_stmt *up = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s, sql, &up, err, errlen) != 0)
    goto fail;
  store_bind_str(up, 1, status);
  sqlite3_bind_int64(up, 2, id);
  if (sqlite3_step(up) != SQLITE_DONE) {
    char what[64];
    snprintf(what, sizeof what, "cannot update the status in %s", table);
    store_db_fail(s, what, err, errlen);
    goto fail;
  }
  sqlite3_finalize(up);
  return store_commit(s, err, errlen);
fail:
  sqlite3_finalize(up);
  store_rollback(s);
  return -1;
}

int kv_store_run_is_mine(const struct kv_store *s, int64_t run_id) {
  return claim_index(s, run_id) >= 0;
}

int kv_store_run_set_status(struct kv_store *s, int64_t run_id, const char *status, char *err,
                            size_t errlen) {
  return kv_store_run_end(s, run_id, status, NULL, err, errlen);
}

/* The database could not take why the run ended: the run's lock file
 * (whose first block its pid already holds) keeps it, and stays. */
static void note_in_lock(struct kv_store *s, int64_t run_id, const char *status,
                         const char *reason) {
  int i = claim_index(s, run_id);
  if (i < 0)
    return;
  char note[1024];
  int n = snprintf(note, sizeof note, "ended %.20s\n%.900s\n", status, reason ? reason : "");
  if (n > 0 && pwrite(s->claims[i].fd, note, (size_t)n, 0) == n &&
      ftruncate(s->claims[i].fd, n) == 0)
    s->claims[i].keep = 1;
}

int kv_store_run_end(struct kv_store *s, int64_t run_id, const char *status, const char *reason,
                     char *err, size_t errlen) {
  /* Running it takes it (or is refused while another process runs it);
   * ending it lets go. */
  int running = status && !strcmp(status, "running");
  if (running && claim_run(s, run_id, err, errlen) != 0)
    return -1;
  sqlite3_stmt *up = NULL;
  if (store_begin(s, err, errlen) != 0)
    goto fail_nobegin;
  if (store_prepare(s,
                    "UPDATE runs SET status = ?1, stop_reason = ?2, updated = "
                    "(CAST(strftime('%s', 'now') AS INTEGER)) WHERE id = ?3",
                    &up, err, errlen) != 0)
    goto fail;
  store_bind_str(up, 1, status);
  store_bind_str(up, 2, reason);
  sqlite3_bind_int64(up, 3, run_id);
  if (sqlite3_step(up) != SQLITE_DONE) {
    store_db_fail(s, "cannot update the run's status", err, errlen);
    goto fail;
  }
  sqlite3_finalize(up);
  if (store_commit(s, err, errlen) != 0)
    goto fail_nobegin;
  if (!running)
    unclaim_run(s, run_id);
  return 0;
fail:
  sqlite3_finalize(up);
  store_rollback(s);
fail_nobegin:
  if (!running)
    note_in_lock(s, run_id, status, reason);
  return -1;
}

int kv_store_run_set_config(struct kv_store *s, int64_t run_id, const char *config_json, char *err,
                            size_t errlen) {
  sqlite3_stmt *up = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s, "UPDATE runs SET config_json = ?1 WHERE id = ?2", &up, err, errlen) != 0)
    goto fail;
  store_bind_str(up, 1, config_json);
  sqlite3_bind_int64(up, 2, run_id);
  if (sqlite3_step(up) != SQLITE_DONE) {
    store_db_fail(s, "cannot update the run's configuration", err, errlen);
    goto fail;
  }
  if (sqlite3_changes(s->db) != 1) {
    store_seterr(err, errlen, "run %lld is not in %s; see 'kevo runs'", (long long)run_id, s->path);
    goto fail;
  }
  sqlite3_finalize(up);
  return store_commit(s, err, errlen);
fail:
  sqlite3_finalize(up);
  store_rollback(s);
  return -1;
}

int kv_store_node_add(struct kv_store *s, const struct kv_node_record *n, int64_t *id, char *err,
                      size_t errlen) {
  sqlite3_stmt *ins = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(
          s,
          "INSERT INTO nodes (run_id, parent_id, step, source_hash, eval_id, action, params, "
          "verdict, speedup, reward, plan) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
          "?11)",
          &ins, err, errlen) != 0)
    goto fail;
  sqlite3_bind_int64(ins, 1, n->run_id);
  if (n->parent_id > 0)
    sqlite3_bind_int64(ins, 2, n->parent_id);
  else
    sqlite3_bind_null(ins, 2);
  sqlite3_bind_int(ins, 3, n->step);
  store_bind_str(ins, 4, n->source_hash);
  if (n->eval_id > 0)
    sqlite3_bind_int64(ins, 5, n->eval_id);
  else
    sqlite3_bind_null(ins, 5);
  store_bind_str(ins, 6, n->action);
  store_bind_str(ins, 7, n->params);
  store_bind_str(ins, 8, n->verdict);
  store_bind_time(ins, 9, n->speedup);
  store_bind_time(ins, 10, n->reward);
  store_bind_str(ins, 11, n->plan);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot insert the node", err, errlen);
    goto fail;
  }
  int64_t rowid = sqlite3_last_insert_rowid(s->db);
  sqlite3_finalize(ins);
  if (store_commit(s, err, errlen) != 0)
    return -1;
  if (id)
    *id = rowid;
  return 0;
fail:
  sqlite3_finalize(ins);
  store_rollback(s);
  return -1;
}

#define RUN_SELECT                                                                                 \
  "SELECT r.id, r.task_id, t.name, t.spec_hash, r.strategy, r.status, r.config_json, r.created, "  \
  "(SELECT count(*) FROM nodes n WHERE n.run_id = r.id), "                                         \
  "(SELECT n.speedup FROM nodes n WHERE n.run_id = r.id AND n.verdict = 'ok' "                     \
  " ORDER BY n.speedup IS NULL, n.speedup DESC, n.step LIMIT 1), "                                 \
  "(SELECT n.source_hash FROM nodes n WHERE n.run_id = r.id AND n.verdict = 'ok' "                 \
  " ORDER BY n.speedup IS NULL, n.speedup DESC, n.step LIMIT 1), "                                 \
  "(SELECT n.eval_id FROM nodes n WHERE n.run_id = r.id AND n.verdict = 'ok' "                     \
  " ORDER BY n.speedup IS NULL, n.speedup DESC, n.step LIMIT 1), r.stop_reason "                   \
  "FROM runs r JOIN tasks t ON t.id = r.task_id "

static int run_row(sqlite3_stmt *st, struct kv_run_row *o) {
  memset(o, 0, sizeof *o);
  o->id = sqlite3_column_int64(st, 0);
  o->task_id = sqlite3_column_int64(st, 1);
  int bad = store_dup_col(st, 2, &o->task_name) | store_dup_col(st, 3, &o->spec_hash) |
            store_dup_col(st, 4, &o->strategy) | store_dup_col(st, 5, &o->status) |
            store_dup_col(st, 6, &o->config_json) | store_dup_col(st, 10, &o->best_hash) |
            store_dup_col(st, 12, &o->stop_reason);
  o->created_unix = sqlite3_column_int64(st, 7);
  o->nnodes = sqlite3_column_int(st, 8);
  o->best_speedup = sqlite3_column_type(st, 9) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 9);
  o->best_eval_id = sqlite3_column_int64(st, 11);
  return bad ? -1 : 0;
}

void kv_run_row_release(struct kv_run_row *r) {
  free(r->task_name);
  free(r->spec_hash);
  free(r->strategy);
  free(r->status);
  free(r->config_json);
  free(r->best_hash);
  free(r->stop_reason);
  memset(r, 0, sizeof *r);
}

int kv_store_run_get(struct kv_store *s, int64_t run_id, struct kv_run_row *out, char *err,
                     size_t errlen) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  const char *sql =
      run_id > 0 ? RUN_SELECT "WHERE r.id = ?1" : RUN_SELECT "ORDER BY r.id DESC LIMIT 1";
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  if (run_id > 0)
    sqlite3_bind_int64(st, 1, run_id);
  int rc = sqlite3_step(st);
  int ret = 0;
  if (rc == SQLITE_ROW && run_row(st, out) != 0) {
    store_seterr(err, errlen, "store: out of memory");
    ret = -1;
  } else if (rc == SQLITE_ROW) {
    ret = run_liveness(s, out);
    if (ret != 0)
      store_seterr(err, errlen, "store: out of memory");
  } else if (rc == SQLITE_DONE) {
    if (run_id > 0)
      store_seterr(err, errlen, "run %lld is not in %s; see 'kevo runs'", (long long)run_id,
                   s->path);
    else
      store_seterr(err, errlen, "%s holds no runs yet; start one with 'kevo run'", s->path);
    ret = -1;
  } else
    ret = store_db_fail(s, "cannot read the run", err, errlen);
  sqlite3_finalize(st);
  if (ret != 0)
    kv_run_row_release(out);
  return ret;
}

int kv_store_runs(struct kv_store *s, struct kv_run_row **rows, int *n, int limit, char *err,
                  size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(s, RUN_SELECT "ORDER BY r.id DESC LIMIT ?1", &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int(st, 1, limit > 0 ? limit : 100);
  struct kv_run_row *out = calloc((size_t)(limit > 0 ? limit : 100), sizeof *out);
  int k = 0, rc = SQLITE_DONE;
  while (out && (rc = sqlite3_step(st)) == SQLITE_ROW)
    run_row(st, &out[k++]);
  sqlite3_finalize(st);
  if (!out) {
    store_seterr(err, errlen, "store: out of memory");
    return -1;
  }
  /* A busy or broken database stops the steps early: that is an error, not
   * a shorter list. */
  if (rc != SQLITE_DONE) {
    for (int i = 0; i < k; i++)
      kv_run_row_release(&out[i]);
    free(out);
    return store_db_fail(s, "cannot read the runs", err, errlen);
  }
  for (int i = 0; i < k; i++)
    if (run_liveness(s, &out[i]) != 0) {
      for (int j = 0; j < k; j++)
        kv_run_row_release(&out[j]);
      free(out);
      store_seterr(err, errlen, "store: out of memory");
      return -1;
    }
  *rows = out;
  *n = k;
  return 0;
}

int kv_store_run_nodes(struct kv_store *s, int64_t run_id, struct kv_node_row **rows, int *n,
                       char *err, size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id, eval_id, step, source_hash, action, params, verdict, speedup, "
                    "parent_id, reward, plan FROM nodes WHERE run_id = ?1 ORDER BY step",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, run_id);
  int cap = 0, k = 0, rc;
  struct kv_node_row *out = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (k == cap) {
      cap = cap ? cap * 2 : 64;
      struct kv_node_row *g = realloc(out, (size_t)cap * sizeof *g);
      if (!g) {
        kv_node_rows_free(out, k);
        sqlite3_finalize(st);
        store_seterr(err, errlen, "store: out of memory");
        return -1;
      }
      out = g;
    }
    struct kv_node_row *o = &out[k++];
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    o->eval_id = sqlite3_column_int64(st, 1);
    o->step = sqlite3_column_int(st, 2);
    store_dup_col(st, 3, &o->source_hash);
    store_dup_col(st, 4, &o->action);
    store_dup_col(st, 5, &o->params);
    store_dup_col(st, 6, &o->verdict);
    o->speedup = store_col_time(st, 7);
    o->parent_id = sqlite3_column_int64(st, 8);
    o->reward = store_col_time(st, 9);
    store_dup_col(st, 10, &o->plan);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    kv_node_rows_free(out, k);
    return store_db_fail(s, "cannot read the nodes", err, errlen);
  }
  *rows = out;
  *n = k;
  return 0;
}

void kv_node_rows_free(struct kv_node_row *rows, int n) {
  for (int i = 0; rows && i < n; i++) {
    free(rows[i].source_hash);
    free(rows[i].action);
    free(rows[i].params);
    free(rows[i].verdict);
    free(rows[i].plan);
  }
  free(rows);
}

/* ---- validity rules (schema v4) ----------------------------------------- */

static int rule_link(struct kv_store *s, int64_t rule_id, int64_t eval_id, char *err,
                     size_t errlen) {
  if (eval_id <= 0)
    return 0;
  sqlite3_stmt *st;
  if (store_prepare(s, "INSERT OR IGNORE INTO rule_evals (rule_id, eval_id) VALUES (?1, ?2)", &st,
                    err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, rule_id);
  sqlite3_bind_int64(st, 2, eval_id);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : store_db_fail(s, "cannot record a rule's evaluation", err, errlen);
}

int kv_store_rule_add(struct kv_store *s, const char *text, const char *origin, int count,
                      int64_t eval_id, int64_t *id, char *err, size_t errlen) {
  if (!text || !*text || !origin)
    return store_seterr(err, errlen, "store: a rule needs a text and an origin"), -1;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(s, "INSERT INTO rules (text, origin, count) VALUES (?1, ?2, ?3)", &st, err,
                    errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  store_bind_str(st, 1, text);
  store_bind_str(st, 2, origin);
  sqlite3_bind_int(st, 3, count > 0 ? count : 1);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  int64_t rowid = sqlite3_last_insert_rowid(s->db);
  if (rc != SQLITE_DONE) {
    store_db_fail(s, "cannot insert the rule", err, errlen);
    store_rollback(s);
    return -1;
  }
  if (rule_link(s, rowid, eval_id, err, errlen) != 0 || store_commit(s, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  if (id)
    *id = rowid;
  return 0;
}

int kv_store_rule_seen(struct kv_store *s, int64_t rule_id, int add, int64_t eval_id, char *err,
                       size_t errlen) {
  if (store_begin(s, err, errlen) != 0)
    return -1;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "UPDATE rules SET count = count + ?2, updated = CAST(strftime('%s', 'now') AS "
                    "INTEGER) WHERE id = ?1",
                    &st, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  sqlite3_bind_int64(st, 1, rule_id);
  sqlite3_bind_int(st, 2, add);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE || sqlite3_changes(s->db) != 1) {
    if (rc != SQLITE_DONE)
      store_db_fail(s, "cannot update the rule", err, errlen);
    else
      store_seterr(err, errlen, "store: no rule %lld", (long long)rule_id);
    store_rollback(s);
    return -1;
  }
  if (rule_link(s, rule_id, eval_id, err, errlen) != 0 || store_commit(s, err, errlen) != 0) {
    store_rollback(s);
    return -1;
  }
  return 0;
}

int kv_store_rules(struct kv_store *s, struct kv_rule_row **rows, int *n, char *err,
                   size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(
          s,
          "SELECT r.id, r.text, r.origin, r.count, r.created, r.updated, "
          "(SELECT group_concat(e.eval_id, ' ') FROM (SELECT eval_id FROM rule_evals WHERE "
          "rule_id = r.id ORDER BY eval_id LIMIT 64) e) FROM rules r ORDER BY r.id",
          &st, err, errlen) != 0)
    return -1;
  int cap = 0, k = 0, rc;
  struct kv_rule_row *out = NULL;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (k == cap) {
      cap = cap ? cap * 2 : 32;
      struct kv_rule_row *g = realloc(out, (size_t)cap * sizeof *g);
      if (!g) {
        kv_rule_rows_free(out, k);
        sqlite3_finalize(st);
        return store_seterr(err, errlen, "store: out of memory"), -1;
      }
      out = g;
    }
    struct kv_rule_row *o = &out[k++];
    memset(o, 0, sizeof *o);
    o->id = sqlite3_column_int64(st, 0);
    store_dup_col(st, 1, &o->text);
    store_dup_col(st, 2, &o->origin);
    o->count = sqlite3_column_int(st, 3);
    o->created_unix = sqlite3_column_int64(st, 4);
    o->updated_unix = sqlite3_column_int64(st, 5);
    store_dup_col(st, 6, &o->evals);
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    kv_rule_rows_free(out, k);
    return store_db_fail(s, "cannot read the rules", err, errlen);
  }
  *rows = out;
  *n = k;
  return 0;
}

void kv_rule_rows_free(struct kv_rule_row *rows, int n) {
  for (int i = 0; rows && i < n; i++) {
    free(rows[i].text);
    free(rows[i].origin);
    free(rows[i].evals);
  }
  free(rows);
}
