/* What the store's source files share: the handle and the SQLite helpers
 * (errors that name the database, transactions, binding and reading columns).
 * Never included outside lib/store. */
#ifndef KEVO_STORE_INTERNAL_H
#define KEVO_STORE_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

enum { STORE_PATH_CAP = 4096 };

/* A run this handle is running: its lock file, held with flock(2). */
struct store_claim {
  int64_t run_id;
  int fd;
  int keep; /* the file holds why the run ended (a full disk): not removed */
};

struct kv_store {
  sqlite3 *db;
  char path[STORE_PATH_CAP];
  int readonly; /* kv_store_open_readonly */
  struct store_claim *claims;
  int nclaims, claims_cap;
  int bench_fd1; /* kv_store_bench_claim's lock file + 1; 0: none */
  char bench_lock[STORE_PATH_CAP + 64];
};
/* Lets go of kv_store_bench_claim's lock (kv_store_close). */
void store_bench_unclaim(struct kv_store *s);

void store_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "store: PATH: WHAT: SQLITE MESSAGE; FIX". Returns -1. */
int store_db_fail(struct kv_store *s, const char *what, char *err, size_t errlen);
int store_exec(struct kv_store *s, const char *sql, const char *what, char *err, size_t errlen);
/* BEGIN IMMEDIATE; every mutation runs inside one, rolled back on error. */
int store_begin(struct kv_store *s, char *err, size_t errlen);
int store_commit(struct kv_store *s, char *err, size_t errlen);
void store_rollback(struct kv_store *s);
int store_prepare(struct kv_store *s, const char *sql, sqlite3_stmt **st, char *err, size_t errlen);
/* NULL binds SQL NULL. */
int store_bind_str(sqlite3_stmt *st, int i, const char *v);
/* A non-negative finite time; anything else binds NULL ("not timed"). */
int store_bind_time(sqlite3_stmt *st, int i, double v);
/* An id; <= 0 binds NULL. */
int store_bind_id(sqlite3_stmt *st, int i, int64_t v);
/* A count; < 0 binds NULL. */
int store_bind_count(sqlite3_stmt *st, int i, int64_t v);
/* Column i as a malloc'd string (NULL stays NULL); -1 only when out of memory. */
int store_dup_col(sqlite3_stmt *st, int i, char **out);
/* Column i as a time; NULL reads -1. */
double store_col_time(sqlite3_stmt *st, int i);
int64_t store_col_int_or(sqlite3_stmt *st, int i, int64_t none);
/* Sets the status (and the updated time) of row id of table ("runs",
 * "benches" or "analyses"), in a transaction of its own. */
int store_set_status(struct kv_store *s, const char *table, int64_t id, const char *status,
                     char *err, size_t errlen);

#endif
