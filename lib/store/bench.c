/* Benches: a strategy over every task of a suite, with each task's state kept
 * as it changes so that a bench killed at any moment resumes where it was. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/store.h"

#ifndef KEVO_VERSION
#define KEVO_VERSION "unknown"
#endif

int kv_store_bench_create(struct kv_store *s, const char *suite_dir, const char *config_json,
                          const char *const *dirs, const char *const *names, const int *levels,
                          int n, int64_t *id, char *err, size_t errlen) {
  sqlite3_stmt *ins = NULL, *task = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "INSERT INTO benches (suite_dir, config_json, status, kevo_version) "
                    "VALUES (?1, ?2, 'running', ?3)",
                    &ins, err, errlen) != 0 ||
      store_prepare(s,
                    "INSERT INTO bench_tasks (bench_id, ord, task_dir, name, level, status) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, 'pending')",
                    &task, err, errlen) != 0)
    goto fail;
  store_bind_str(ins, 1, suite_dir);
  store_bind_str(ins, 2, config_json);
  store_bind_str(ins, 3, KEVO_VERSION);
  if (sqlite3_step(ins) != SQLITE_DONE) {
    store_db_fail(s, "cannot create the bench", err, errlen);
    goto fail;
  }
  *id = sqlite3_last_insert_rowid(s->db);
  for (int i = 0; i < n; i++) {
    sqlite3_reset(task);
    sqlite3_bind_int64(task, 1, *id);
    sqlite3_bind_int(task, 2, i);
    store_bind_str(task, 3, dirs[i]);
    store_bind_str(task, 4, names[i]);
    store_bind_id(task, 5, levels[i]);
    if (sqlite3_step(task) != SQLITE_DONE) {
      store_db_fail(s, "cannot add a task to the bench", err, errlen);
      goto fail;
    }
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(task);
  return store_commit(s, err, errlen);
fail:
  sqlite3_finalize(ins);
  sqlite3_finalize(task);
  store_rollback(s);
  return -1;
}

int kv_store_bench_find(struct kv_store *s, const char *suite_dir, const char *config_json,
                        int64_t *id, char *err, size_t errlen) {
  *id = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id FROM benches WHERE suite_dir = ?1 AND config_json = ?2 AND "
                    "status != 'done' ORDER BY id DESC LIMIT 1",
                    &st, err, errlen) != 0)
    return -1;
  store_bind_str(st, 1, suite_dir);
  store_bind_str(st, 2, config_json);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW)
    *id = sqlite3_column_int64(st, 0);
  else if (rc != SQLITE_DONE)
    ret = store_db_fail(s, "cannot look for an unfinished bench", err, errlen);
  sqlite3_finalize(st);
  return ret;
}

int kv_store_bench_get(struct kv_store *s, int64_t id, struct kv_bench_row *out, char *err,
                       size_t errlen) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  const char *sql = id > 0 ? "SELECT id, suite_dir, config_json, status, created FROM benches "
                             "WHERE id = ?1"
                           : "SELECT id, suite_dir, config_json, status, created FROM benches "
                             "ORDER BY id DESC LIMIT 1";
  if (store_prepare(s, sql, &st, err, errlen) != 0)
    return -1;
  if (id > 0)
    sqlite3_bind_int64(st, 1, id);
  int rc = sqlite3_step(st), ret = 0;
  if (rc == SQLITE_ROW) {
    out->id = sqlite3_column_int64(st, 0);
    out->created_unix = sqlite3_column_int64(st, 4);
    if (store_dup_col(st, 1, &out->suite_dir) | store_dup_col(st, 2, &out->config_json) |
        store_dup_col(st, 3, &out->status)) {
      kv_bench_row_release(out);
      store_seterr(err, errlen, "store: out of memory");
      ret = -1;
    }
  } else if (rc == SQLITE_DONE) {
    if (id > 0)
      store_seterr(err, errlen, "bench %lld is not in %s", (long long)id, s->path);
    else
      store_seterr(err, errlen, "%s holds no benches yet; start one with 'kevo bench SUITE_DIR'",
                   s->path);
    ret = -1;
  } else
    ret = store_db_fail(s, "cannot read the bench", err, errlen);
  sqlite3_finalize(st);
  return ret;
}

const char *kv_store_path(const struct kv_store *s) {
  return s ? s->path : NULL;
}

void kv_bench_row_release(struct kv_bench_row *r) {
  free(r->suite_dir);
  free(r->config_json);
  free(r->status);
  memset(r, 0, sizeof *r);
}

int kv_store_bench_set_status(struct kv_store *s, int64_t id, const char *status, char *err,
                              size_t errlen) {
  return store_set_status(s, "benches", id, status, err, errlen);
}

static double col_real(sqlite3_stmt *st, int i) {
  return sqlite3_column_type(st, i) == SQLITE_NULL ? 0 : sqlite3_column_double(st, i);
}

int kv_store_bench_tasks(struct kv_store *s, int64_t bench_id, struct kv_bench_task_row **rows,
                         int *n, char *err, size_t errlen) {
  *rows = NULL;
  *n = 0;
  sqlite3_stmt *st;
  if (store_prepare(s,
                    "SELECT id, bench_id, run_id, ord, level, correct, task_dir, name, status, "
                    "detail, speedup, speedup_baseline FROM bench_tasks WHERE bench_id = ?1 "
                    "ORDER BY ord",
                    &st, err, errlen) != 0)
    return -1;
  sqlite3_bind_int64(st, 1, bench_id);
  int cap = 0, rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (*n == cap) {
      int nc = cap ? 2 * cap : 64;
      struct kv_bench_task_row *g = realloc(*rows, (size_t)nc * sizeof *g);
      if (!g)
        goto oom;
      *rows = g;
      cap = nc;
    }
    struct kv_bench_task_row *o = &(*rows)[*n];
    memset(o, 0, sizeof *o);
    (*n)++;
    o->id = sqlite3_column_int64(st, 0);
    o->bench_id = sqlite3_column_int64(st, 1);
    o->run_id = store_col_int_or(st, 2, 0);
    o->ord = sqlite3_column_int(st, 3);
    o->level = (int)store_col_int_or(st, 4, 0);
    o->correct = (int)store_col_int_or(st, 5, 0);
    o->speedup = col_real(st, 10);
    o->speedup_baseline = col_real(st, 11);
    if (store_dup_col(st, 6, &o->dir) | store_dup_col(st, 7, &o->name) |
        store_dup_col(st, 8, &o->status) | store_dup_col(st, 9, &o->detail))
      goto oom;
  }
  if (rc != SQLITE_DONE) {
    store_db_fail(s, "cannot read the bench's tasks", err, errlen);
    goto fail;
  }
  sqlite3_finalize(st);
  return 0;
oom:
  store_seterr(err, errlen, "store: out of memory reading the bench's tasks");
fail:
  sqlite3_finalize(st);
  kv_bench_task_rows_free(*rows, *n);
  *rows = NULL;
  *n = 0;
  return -1;
}

void kv_bench_task_rows_free(struct kv_bench_task_row *rows, int n) {
  for (int i = 0; i < n; i++) {
    free(rows[i].dir);
    free(rows[i].name);
    free(rows[i].status);
    free(rows[i].detail);
  }
  free(rows);
}

int kv_store_bench_task_update(struct kv_store *s, const struct kv_bench_task_row *row, char *err,
                               size_t errlen) {
  sqlite3_stmt *up = NULL;
  if (store_begin(s, err, errlen) != 0)
    return -1;
  if (store_prepare(s,
                    "UPDATE bench_tasks SET status = ?1, run_id = ?2, correct = ?3, speedup = ?4, "
                    "speedup_baseline = ?5, detail = ?6, updated = (CAST(strftime('%s', 'now') AS "
                    "INTEGER)) WHERE id = ?7",
                    &up, err, errlen) != 0)
    goto fail;
  store_bind_str(up, 1, row->status);
  store_bind_id(up, 2, row->run_id);
  sqlite3_bind_int(up, 3, row->correct);
  store_bind_time(up, 4, row->speedup);
  store_bind_time(up, 5, row->speedup_baseline);
  store_bind_str(up, 6, row->detail);
  sqlite3_bind_int64(up, 7, row->id);
  if (sqlite3_step(up) != SQLITE_DONE) {
    store_db_fail(s, "cannot record the bench task's state", err, errlen);
    goto fail;
  }
  if (sqlite3_changes(s->db) != 1) {
    store_seterr(err, errlen, "store: %s: bench task %lld does not exist (a bug in the caller)",
                 s->path, (long long)row->id);
    goto fail;
  }
  sqlite3_finalize(up);
  return store_commit(s, err, errlen);
fail:
  sqlite3_finalize(up);
  store_rollback(s);
  return -1;
}

/* ---- who runs a bench --------------------------------------------------------- */

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* "DB-bench-HASH.lock": HASH of the suite and the configuration (FNV-1a). */
static void bench_lock_path(const struct kv_store *s, const char *suite_dir,
                            const char *config_json, char *out, size_t cap) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = suite_dir; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ '|') * 1099511628211ull;
  for (const char *p = config_json; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  snprintf(out, cap, "%s-bench-%016llx.lock", s->path, (unsigned long long)h);
}

/* One try: 1 held (fd kept), 0 another process holds it (its pid in pid), -1 error. */
static int bench_try(struct kv_store *s, const char *path, char *pid, size_t pidcap, char *err,
                     size_t errlen) {
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    store_seterr(err, errlen,
                 "store: %s: cannot create a bench's lock file: %s; kevo needs to write beside "
                 "the database (use another --db)",
                 path, strerror(errno));
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ssize_t n = pread(fd, pid, pidcap - 1, 0);
    pid[n > 0 ? n : 0] = 0;
    pid[strcspn(pid, "\n")] = 0;
    close(fd);
    return 0;
  }
  struct stat a, b; /* removed by its owner between our open and our lock: not it */
  if (fstat(fd, &a) != 0 || stat(path, &b) != 0 || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
    close(fd);
    pid[0] = 0;
    return 0;
  }
  char me[32];
  int n = snprintf(me, sizeof me, "%ld\n", (long)getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, me, (size_t)n, 0) != n) {
    /* the lock is what counts; the pid only names the owner */
  }
  s->bench_fd1 = fd + 1;
  snprintf(s->bench_lock, sizeof s->bench_lock, "%s", path);
  return 1;
}

int kv_store_bench_claim(struct kv_store *s, const char *suite_dir, const char *config_json,
                         double wait_s, char *err, size_t errlen) {
  if (!strcmp(s->path, ":memory:"))
    return 0;
  char path[STORE_PATH_CAP + 64], pid[32] = "";
  bench_lock_path(s, suite_dir, config_json, path, sizeof path);
  if (s->bench_fd1 && !strcmp(path, s->bench_lock))
    return 0;
  store_bench_unclaim(s); /* one bench per handle: the one before is over */
  double until = mono_s() + (wait_s > 0 ? wait_s : 0) + 0.2; /* a moment for a reader's probe */
  for (;;) {
    int rc = bench_try(s, path, pid, sizeof pid, err, errlen);
    if (rc != 0)
      return rc < 0 ? -1 : 0;
    if (mono_s() >= until)
      break;
    usleep(50000);
  }
  store_seterr(err, errlen,
               "%s: this suite's bench (the same configuration) is being run by another kevo "
               "process%s%s%s%s; two at once would run the same tasks. Wait for it to end "
               "(--wait SECONDS waits for it), or stop it (Ctrl-C, or kill -INT PID) and run the "
               "same command again: it continues where that one stopped",
               suite_dir, pid[0] ? " (pid " : "", pid, pid[0] ? ")" : "",
               wait_s > 0 ? ", still after the wait" : "");
  return -1;
}

void store_bench_unclaim(struct kv_store *s) {
  if (!s->bench_fd1)
    return;
  unlink(s->bench_lock);
  close(s->bench_fd1 - 1);
  s->bench_fd1 = 0;
}
