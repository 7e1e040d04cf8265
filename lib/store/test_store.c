/* Tests for kevo's store: migrations, idempotent puts, evaluation roundtrips,
 * odd strings, refusing newer schemas, default paths, error messages, crash
 * safety under SIGKILL, and concurrent writers. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <grp.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kevo/store.h"

static char g_root[512];

static void path_in(char *out, size_t cap, const char *rel) {
  int n = snprintf(out, cap, "%s/%s", g_root, rel);
  assert_true(n > 0 && (size_t)n < cap);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  chmod(p, 0700);
  return remove(p);
}

static int group_setup(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_root, sizeof g_root, "%s/kevo-test-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_root))
    return -1;
  srand((unsigned)time(NULL) ^ (unsigned)getpid());
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  return nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs a one-value query on a database with plain SQLite, bypassing the store. */
static void raw_query(const char *path, const char *sql, char *out, size_t cap) {
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  out[0] = '\0';
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(out, cap, "%s", t ? (const char *)t : "(null)");
  } else {
    assert_int_equal(rc, SQLITE_DONE);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static void raw_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

static struct kv_store *open_ok(const char *path) {
  struct kv_store *s = NULL;
  char err[1024] = "";
  int rc = kv_store_open(path, &s, err, sizeof err);
  if (rc != 0)
    print_error("kv_store_open: %s\n", err);
  assert_int_equal(rc, 0);
  assert_non_null(s);
  return s;
}

static int64_t put_task_ok(struct kv_store *s, const char *name, const char *hash) {
  int64_t id = -1;
  char err[1024] = "";
  int rc = kv_store_put_task(s, name, "/tasks/x", hash, "{\"name\":\"x\"}", &id, err, sizeof err);
  if (rc != 0)
    print_error("put_task: %s\n", err);
  assert_int_equal(rc, 0);
  assert_true(id > 0);
  return id;
}

static void test_open_migrate_reopen(void **state) {
  (void)state;
  char path[1024], dir[1024], v[512];
  path_in(path, sizeof path, "fresh/a/b/kevo.db");
  path_in(dir, sizeof dir, "fresh/a/b");

  struct kv_store *s = open_ok(path);
  assert_int_equal(kv_store_schema_version(s), KV_STORE_SCHEMA_VERSION);
  assert_int_equal(kv_store_count_evals(s), 0);
  kv_store_close(s);

  struct stat st;
  assert_int_equal(stat(dir, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 0777, 0700);

  raw_query(path, "PRAGMA journal_mode", v, sizeof v);
  assert_string_equal(v, "wal");
  raw_query(path, "PRAGMA user_version", v, sizeof v);
  assert_int_equal(atoi(v), KV_STORE_SCHEMA_VERSION);
  raw_query(path,
            "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE type IN "
            "('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY name)",
            v, sizeof v);
  assert_string_equal(v, "adaptations,analyses,analysis_gate,analysis_samples,bench_tasks,benches,"
                         "evaluations,evaluations_task_id,"
                         "evaluations_verdict,lineage_steps,lineages,llm_calls,"
                         "llm_calls_cache_key,llm_calls_run_id,meta,nodes,nodes_run_id,rule_evals,"
                         "rule_evidence,rule_evidence_eval_id,rule_evidence_key,rule_judgements,"
                         "rule_merges,rules,runs,skill_log,skill_log_uid,skills,sources,"
                         "synth_attempts,syntheses,tasks");

  /* Reopening migrates nothing and keeps data. */
  s = open_ok(path);
  int64_t id1 = put_task_ok(s, "rowsum", "hash-reopen");
  kv_store_close(s);
  s = open_ok(path);
  assert_int_equal(kv_store_schema_version(s), KV_STORE_SCHEMA_VERSION);
  assert_int_equal(put_task_ok(s, "rowsum", "hash-reopen"), id1);
  kv_store_close(s);
  kv_store_close(NULL);
}

static void test_put_task_idempotent(void **state) {
  (void)state;
  char path[1024], v[64];
  path_in(path, sizeof path, "tasks.db");
  struct kv_store *s = open_ok(path);
  int64_t a = put_task_ok(s, "rowsum", "h1");
  int64_t b = put_task_ok(s, "rowsum", "h1");
  int64_t c = put_task_ok(s, "renamed", "h1"); /* the spec hash is the key */
  int64_t d = put_task_ok(s, "rowsum", "h2");
  assert_int_equal(a, b);
  assert_int_equal(a, c);
  assert_int_not_equal(a, d);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM tasks", v, sizeof v);
  assert_string_equal(v, "2");

  /* Missing required fields are refused with a message. */
  s = open_ok(path);
  char err[512] = "";
  int64_t id = 0;
  assert_true(kv_store_put_task(s, "x", NULL, NULL, "{}", &id, err, sizeof err) < 0);
  assert_non_null(strstr(err, "spec hash"));
  kv_store_close(s);
}

static void test_put_source_idempotent(void **state) {
  (void)state;
  char path[1024], v[64], err[1024] = "";
  path_in(path, sizeof path, "sources.db");
  struct kv_store *s = open_ok(path);
  const char *text = "void f(void) {}\n";
  assert_int_equal(kv_store_put_source(s, "abc", text, strlen(text), err, sizeof err), 0);
  assert_int_equal(kv_store_put_source(s, "abc", text, strlen(text), err, sizeof err), 0);
  size_t len = 0;
  char *got = kv_store_get_source(s, "abc", &len);
  assert_non_null(got);
  assert_int_equal(len, strlen(text));
  assert_string_equal(got, text);
  free(got);

  /* Same hash, other bytes: refused, and the stored text is untouched. */
  err[0] = '\0';
  assert_true(kv_store_put_source(s, "abc", "other", 5, err, sizeof err) < 0);
  assert_non_null(strstr(err, "different content"));
  assert_non_null(strstr(err, path));
  got = kv_store_get_source(s, "abc", &len);
  assert_non_null(got);
  assert_string_equal(got, text);
  free(got);

  /* Embedded NUL and non-UTF-8 bytes survive; so does an empty source. */
  const char bin[] = {'a', '\0', 'b', '\xff', '\xfe', '\'', '"', '\n'};
  assert_int_equal(kv_store_put_source(s, "bin", bin, sizeof bin, err, sizeof err), 0);
  got = kv_store_get_source(s, "bin", &len);
  assert_non_null(got);
  assert_int_equal(len, sizeof bin);
  assert_memory_equal(got, bin, sizeof bin);
  free(got);
  assert_int_equal(kv_store_put_source(s, "empty", "", 0, err, sizeof err), 0);
  got = kv_store_get_source(s, "empty", &len);
  assert_non_null(got);
  assert_int_equal(len, 0);
  assert_string_equal(got, "");
  free(got);

  assert_null(kv_store_get_source(s, "absent", &len));
  assert_int_equal(len, 0);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) || ':' || sum(bytes) FROM sources", v, sizeof v);
  assert_string_equal(v, "3:24");
}

static void test_eval_roundtrip(void **state) {
  (void)state;
  char path[1024], v[64], err[1024] = "";
  path_in(path, sizeof path, "evals.db");
  struct kv_store *s = open_ok(path);
  int64_t task = put_task_ok(s, "rowsum", "th");
  assert_int_equal(kv_store_put_source(s, "sh", "code", 4, err, sizeof err), 0);

  struct kv_eval_record r = {
      .task_id = task,
      .source_hash = "sh",
      .candidate_path = "cand.c",
      .surface = "cpu",
      .device = "cpu:Test CPU",
      .verdict = "ok",
      .detail = "accepted",
      .median_us = 12.5,
      .speedup = 3.25,
      .result_json = "{\"verdict\":\"ok\"}",
  };
  int64_t timed = 0, untimed = 0;
  time_t before = time(NULL);
  assert_int_equal(kv_store_add_eval(s, &r, &timed, err, sizeof err), 0);
  r.verdict = "wrong_output";
  r.detail = "y[3] = 1 (expected 2)";
  r.median_us = -1;
  r.speedup = -1;
  r.candidate_path = NULL;
  assert_int_equal(kv_store_add_eval(s, &r, &untimed, err, sizeof err), 0);
  assert_true(timed > 0);
  assert_true(untimed > timed);
  assert_int_equal(kv_store_count_evals(s), 2);

  struct kv_eval_row row;
  assert_int_equal(kv_store_get_eval(s, timed, &row, err, sizeof err), 0);
  assert_int_equal(row.id, timed);
  assert_int_equal(row.task_id, task);
  assert_string_equal(row.task_name, "rowsum");
  assert_string_equal(row.source_hash, "sh");
  assert_string_equal(row.surface, "cpu");
  assert_string_equal(row.device, "cpu:Test CPU");
  assert_string_equal(row.verdict, "ok");
  assert_string_equal(row.detail, "accepted");
  assert_string_equal(row.result_json, "{\"verdict\":\"ok\"}");
  assert_true(row.median_us == 12.5);
  assert_true(row.speedup == 3.25);
  assert_true(row.created_unix >= before - 1 && row.created_unix <= time(NULL) + 1);
  kv_eval_row_release(&row);
  assert_null(row.verdict);

  assert_int_equal(kv_store_get_eval(s, untimed, &row, err, sizeof err), 0);
  assert_string_equal(row.verdict, "wrong_output");
  assert_true(row.median_us < 0);
  assert_true(row.speedup < 0);
  kv_eval_row_release(&row);

  /* A missing evaluation is an error that names it. */
  err[0] = '\0';
  assert_true(kv_store_get_eval(s, 999999, &row, err, sizeof err) < 0);
  assert_non_null(strstr(err, "999999"));

  /* Foreign keys are enforced: an unknown task is refused, nothing stored. */
  r.task_id = 424242;
  err[0] = '\0';
  assert_true(kv_store_add_eval(s, &r, NULL, err, sizeof err) < 0);
  assert_non_null(strstr(err, "424242"));
  assert_non_null(strstr(err, path));
  r.task_id = task;
  r.source_hash = "no-such-source";
  assert_true(kv_store_add_eval(s, &r, NULL, err, sizeof err) < 0);
  assert_int_equal(kv_store_count_evals(s), 2);
  kv_store_close(s);

  char q[128];
  snprintf(q, sizeof q,
           "SELECT (median_us IS NULL) || (speedup IS NULL) || (candidate_path IS NULL) "
           "FROM evaluations WHERE id = %lld",
           (long long)untimed);
  raw_query(path, q, v, sizeof v);
  assert_string_equal(v, "111");
  snprintf(q, sizeof q, "SELECT kevo_version FROM evaluations WHERE id = %lld", (long long)timed);
  raw_query(path, q, v, sizeof v);
  assert_true(strlen(v) > 0);
}

static void test_odd_strings(void **state) {
  (void)state;
  char path[1024], v[64], err[1024] = "";
  path_in(path, sizeof path, "it's a \"db\" dir/odd.db");
  struct kv_store *s = open_ok(path);
  const char *evil = "'); DROP TABLE evaluations; --";
  const char *multi = "line one\nline two\r\n\ttabbed \\ backslash %s %n %%";
  const char *uni = "ünïcödé ✓ 日本語 𝄞 \xf0\x9f\x9a\x80";
  int64_t task = -1;
  assert_int_equal(kv_store_put_task(s, evil, multi, "q'h\"", uni, &task, err, sizeof err), 0);
  assert_int_equal(kv_store_put_source(s, evil, multi, strlen(multi), err, sizeof err), 0);
  struct kv_eval_record r = {
      .task_id = task,
      .source_hash = evil,
      .candidate_path = uni,
      .surface = "cuda",
      .device = uni,
      .verdict = evil,
      .detail = multi,
      .median_us = 0,
      .speedup = 0,
      .result_json = "{\"detail\":\"a \\\"quoted\\\" word\\n\"}",
  };
  int64_t id = 0;
  assert_int_equal(kv_store_add_eval(s, &r, &id, err, sizeof err), 0);
  struct kv_eval_row row;
  assert_int_equal(kv_store_get_eval(s, id, &row, err, sizeof err), 0);
  assert_string_equal(row.task_name, evil);
  assert_string_equal(row.source_hash, evil);
  assert_string_equal(row.device, uni);
  assert_string_equal(row.verdict, evil);
  assert_string_equal(row.detail, multi);
  assert_string_equal(row.result_json, r.result_json);
  assert_true(row.median_us == 0); /* zero is a time, not "untimed" */
  kv_eval_row_release(&row);
  size_t len = 0;
  char *src = kv_store_get_source(s, evil, &len);
  assert_non_null(src);
  assert_string_equal(src, multi);
  free(src);
  int64_t again = -1;
  assert_int_equal(kv_store_put_task(s, "other", NULL, "q'h\"", "{}", &again, err, sizeof err), 0);
  assert_int_equal(again, task);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM evaluations", v, sizeof v);
  assert_string_equal(v, "1");
}

static void test_refuse_newer_schema(void **state) {
  (void)state;
  char path[1024], err[1024] = "", v[64];
  path_in(path, sizeof path, "newer.db");
  struct kv_store *s = open_ok(path);
  kv_store_close(s);
  raw_exec(path, "PRAGMA user_version = 99");
  s = (struct kv_store *)0x1;
  assert_true(kv_store_open(path, &s, err, sizeof err) < 0);
  assert_null(s);
  assert_non_null(strstr(err, path));
  char newer[96];
  snprintf(newer, sizeof newer, "database schema version 99 is newer than this kevo (%d)",
           KV_STORE_SCHEMA_VERSION);
  assert_non_null(strstr(err, newer));
  assert_non_null(strstr(err, "upgrade kevo or use another --db"));
  /* Refusing touched nothing. */
  raw_query(path, "PRAGMA user_version", v, sizeof v);
  assert_string_equal(v, "99");
}

static void test_default_path(void **state) {
  (void)state;
  char out[256];
  char *save_db = getenv("KEVO_DB") ? strdup(getenv("KEVO_DB")) : NULL;
  char *save_xdg = getenv("XDG_DATA_HOME") ? strdup(getenv("XDG_DATA_HOME")) : NULL;
  char *save_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;

  /* KEVO_DB is the command line's (cli/common.c): the library ignores it. */
  setenv("KEVO_DB", "/x/explicit.db", 1);
  setenv("XDG_DATA_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  assert_int_equal(kv_store_default_path(out, sizeof out), 0);
  assert_string_equal(out, "/xdg/kevo/kevo.db");
  unsetenv("KEVO_DB");
  assert_int_equal(kv_store_default_path(out, sizeof out), 0);
  assert_string_equal(out, "/xdg/kevo/kevo.db");
  unsetenv("XDG_DATA_HOME");
  assert_int_equal(kv_store_default_path(out, sizeof out), 0);
  assert_string_equal(out, "/home/u/.local/share/kevo/kevo.db");
  /* Too small a buffer fails rather than truncating. */
  assert_true(kv_store_default_path(out, 10) < 0);
  assert_string_equal(out, "");
  unsetenv("HOME");
  assert_true(kv_store_default_path(out, sizeof out) < 0);

  if (save_db)
    setenv("KEVO_DB", save_db, 1);
  if (save_xdg)
    setenv("XDG_DATA_HOME", save_xdg, 1);
  if (save_home)
    setenv("HOME", save_home, 1);
  free(save_db);
  free(save_xdg);
  free(save_home);
}

static void test_error_messages(void **state) {
  (void)state;
  char path[1024], err[2048];
  struct kv_store *s = NULL;

  /* Not a database. */
  path_in(path, sizeof path, "junk.db");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < 200; i++)
    fputs("this is not a sqlite database at all\n", f);
  fclose(f);
  err[0] = '\0';
  assert_true(kv_store_open(path, &s, err, sizeof err) < 0);
  assert_null(s);
  assert_non_null(strstr(err, path));
  assert_non_null(strstr(err, "not a database"));
  assert_non_null(strstr(err, "another --db"));

  /* A parent that is a file. */
  path_in(path, sizeof path, "junk.db/sub/kevo.db");
  err[0] = '\0';
  assert_true(kv_store_open(path, &s, err, sizeof err) < 0);
  assert_non_null(strstr(err, "not a directory"));

  /* No path. */
  err[0] = '\0';
  assert_true(kv_store_open("", &s, err, sizeof err) < 0);
  assert_non_null(strstr(err, "KEVO_DB"));
}

/* Runs in a child without root's powers: kv_store_open must fail on an
 * unwritable directory and an unwritable file, and say how to fix it.
 * Returns the number of failed checks (printed to stderr). */
static int read_only_checks(const char *ro_dir_db, const char *ro_deeper_db,
                            const char *ro_file_db) {
  struct {
    const char *path, *want[3];
  } cases[] = {
      {ro_dir_db, {"not writable", "another --db", "cannot open"}},
      {ro_deeper_db, {"cannot create directory", "another --db", "Permission denied"}},
      {ro_file_db, {"not readable and writable", "another --db", "read-only"}},
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct kv_store *s = NULL;
    char err[2048] = "";
    if (kv_store_open(cases[i].path, &s, err, sizeof err) == 0) {
      fprintf(stderr, "read-only: %s: opened, should have failed\n", cases[i].path);
      kv_store_close(s);
      failed++;
      continue;
    }
    if (!strstr(err, cases[i].path)) {
      fprintf(stderr, "read-only: message does not name the path: %s\n", err);
      failed++;
    }
    for (int k = 0; k < 3; k++) {
      if (!strstr(err, cases[i].want[k])) {
        fprintf(stderr, "read-only: message lacks '%s': %s\n", cases[i].want[k], err);
        failed++;
      }
    }
  }
  return failed;
}

static void test_read_only(void **state) {
  (void)state;
  char dir[1024], fdir[1024], p1[1024], p2[1024], p3[1024];
  int root = geteuid() == 0;
  path_in(dir, sizeof dir, "ro");
  path_in(fdir, sizeof fdir, "rofile");
  path_in(p1, sizeof p1, "ro/kevo.db");
  path_in(p2, sizeof p2, "ro/deeper/kevo.db");
  path_in(p3, sizeof p3, "rofile/kevo.db");
  assert_int_equal(mkdir(dir, 0700), 0);
  assert_int_equal(mkdir(fdir, 0700), 0);
  kv_store_close(open_ok(p3));
  /* As root, the child drops to nobody: then root-owned 0755 is read-only
   * for it. Otherwise, take the write bits away. */
  assert_int_equal(chmod(dir, root ? 0755 : 0500), 0);
  assert_int_equal(chmod(fdir, root ? 0777 : 0700), 0);
  assert_int_equal(chmod(p3, 0444), 0);
  if (root)
    assert_int_equal(chmod(g_root, 0711), 0);

  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (root && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
      fprintf(stderr, "read-only: cannot drop to nobody: %s\n", strerror(errno));
      _exit(100);
    }
    _exit(read_only_checks(p1, p2, p3) ? 1 : 0);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  chmod(g_root, 0700);
  chmod(dir, 0700);
  chmod(p3, 0600);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 100)
    skip();
  assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- processes ---------------------------------------------------------- */

static int read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return got == 0 ? 0 : -1;
    got += (size_t)r;
  }
  return 1;
}

static int write_full(int fd, const void *buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    ssize_t w = write(fd, (const char *)buf + put, n - put);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    put += (size_t)w;
  }
  return 0;
}

/* Child: commits evaluations forever, reporting (id, seq) after each commit. */
static void crash_child(const char *path, int64_t task, int fd) {
  struct kv_store *s = NULL;
  char err[1024];
  if (kv_store_open(path, &s, err, sizeof err) != 0) {
    fprintf(stderr, "child: %s\n", err);
    _exit(2);
  }
  for (int64_t seq = 0; seq < 10000000; seq++) {
    char detail[64];
    snprintf(detail, sizeof detail, "crash-%lld", (long long)seq);
    struct kv_eval_record r = {.task_id = task,
                               .source_hash = "crash-src",
                               .surface = "cpu",
                               .device = "cpu:test",
                               .verdict = (seq % 2) ? "ok" : "wrong_output",
                               .detail = detail,
                               .median_us = (seq % 2) ? (double)seq : -1,
                               .speedup = (seq % 2) ? 1.5 : -1,
                               .result_json = "{\"verdict\":\"x\",\"pad\":\"................\"}"};
    int64_t id = 0;
    if (kv_store_add_eval(s, &r, &id, err, sizeof err) != 0) {
      fprintf(stderr, "child: %s\n", err);
      _exit(3);
    }
    int64_t msg[2] = {id, seq};
    if (write_full(fd, msg, sizeof msg) != 0)
      _exit(4);
  }
  _exit(5);
}

static void test_crash_safety(void **state) {
  (void)state;
  char path[1024], err[1024] = "", v[64];
  path_in(path, sizeof path, "crash/kevo.db");
  struct kv_store *s = open_ok(path);
  int64_t task = put_task_ok(s, "crash", "crash-hash");
  assert_int_equal(kv_store_put_source(s, "crash-src", "x", 1, err, sizeof err), 0);
  kv_store_close(s);

  enum { ROUNDS = 6, CAP = 1 << 20 };
  int64_t(*seen)[2] = malloc(sizeof *seen * CAP);
  assert_non_null(seen);
  int64_t total_reported = 0;
  for (int round = 0; round < ROUNDS; round++) {
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(p[0]);
      crash_child(path, task, p[1]);
    }
    close(p[1]);
    /* Wait for a random number of commits, then a random extra delay. */
    int target = 1 + rand() % 400;
    size_t n = 0;
    while ((int)n < target) {
      int rc = read_full(p[0], seen[n], sizeof seen[n]);
      assert_int_equal(rc, 1);
      n++;
    }
    usleep((useconds_t)(rand() % 20000));
    assert_int_equal(kill(pid, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    /* Everything the child wrote before dying is still in the pipe. */
    while (n < CAP && read_full(p[0], seen[n], sizeof seen[n]) == 1)
      n++;
    close(p[0]);
    total_reported += (int64_t)n;

    s = open_ok(path);
    for (size_t i = 0; i < n; i++) {
      struct kv_eval_row row;
      char want[64];
      int rc = kv_store_get_eval(s, seen[i][0], &row, err, sizeof err);
      if (rc != 0)
        print_error("round %d: reported evaluation lost: %s\n", round, err);
      assert_int_equal(rc, 0);
      snprintf(want, sizeof want, "crash-%lld", (long long)seen[i][1]);
      assert_string_equal(row.detail, want);
      assert_true((seen[i][1] % 2) ? row.median_us == (double)seen[i][1] : row.median_us < 0);
      kv_eval_row_release(&row);
    }
    assert_true(kv_store_count_evals(s) >= total_reported);
    kv_store_close(s);
    raw_query(path, "PRAGMA integrity_check", v, sizeof v);
    assert_string_equal(v, "ok");
    raw_query(path, "PRAGMA foreign_key_check", v, sizeof v);
    assert_string_equal(v, "");
  }
  free(seen);
}

/* Child: opens (maybe a fresh database), stores the shared task and source,
 * and commits `count` evaluations. Exit 0 only if every call succeeded. */
static void writer_child(const char *path, int who, int count, int gate) {
  char byte, err[1024];
  /* Wait at the gate so all writers start together. */
  if (read(gate, &byte, 1) < 0)
    _exit(9);
  struct kv_store *s = NULL;
  if (kv_store_open(path, &s, err, sizeof err) != 0) {
    fprintf(stderr, "writer %d: %s\n", who, err);
    _exit(2);
  }
  int64_t task = 0;
  if (kv_store_put_task(s, "conc", NULL, "conc-hash", "{}", &task, err, sizeof err) != 0 ||
      kv_store_put_source(s, "conc-src", "y", 1, err, sizeof err) != 0) {
    fprintf(stderr, "writer %d: %s\n", who, err);
    _exit(3);
  }
  for (int i = 0; i < count; i++) {
    char detail[64];
    snprintf(detail, sizeof detail, "writer-%d-%d", who, i);
    struct kv_eval_record r = {.task_id = task,
                               .source_hash = "conc-src",
                               .surface = "cpu",
                               .verdict = "ok",
                               .detail = detail,
                               .median_us = i,
                               .speedup = 1};
    if (kv_store_add_eval(s, &r, NULL, err, sizeof err) != 0) {
      fprintf(stderr, "writer %d: %s\n", who, err);
      _exit(4);
    }
  }
  kv_store_close(s);
  _exit(0);
}

static void test_concurrent_writers(void **state) {
  (void)state;
  enum { WRITERS = 6, EACH = 200, ROUNDS = 5 };
  for (int round = 0; round < ROUNDS; round++) {
    char path[1024], rel[64], v[64];
    snprintf(rel, sizeof rel, "conc%d/kevo.db", round);
    path_in(path, sizeof path, rel); /* fresh: the writers race to create and migrate it */
    int gate[2];
    assert_int_equal(pipe(gate), 0);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
      pids[w] = fork();
      assert_true(pids[w] >= 0);
      if (pids[w] == 0) {
        close(gate[1]);
        writer_child(path, w, EACH, gate[0]);
      }
    }
    close(gate[0]);
    close(gate[1]); /* opens the gate: every child's read returns 0 */
    for (int w = 0; w < WRITERS; w++) {
      int status = 0;
      assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
      assert_true(WIFEXITED(status));
      assert_int_equal(WEXITSTATUS(status), 0);
    }
    struct kv_store *s = open_ok(path);
    assert_int_equal(kv_store_count_evals(s), WRITERS * EACH);
    kv_store_close(s);
    raw_query(path, "SELECT count(*) FROM tasks", v, sizeof v);
    assert_string_equal(v, "1");
    raw_query(path, "SELECT count(DISTINCT detail) FROM evaluations", v, sizeof v);
    char want[32];
    snprintf(want, sizeof want, "%d", WRITERS * EACH);
    assert_string_equal(v, want);
    raw_query(path, "PRAGMA integrity_check", v, sizeof v);
    assert_string_equal(v, "ok");
  }
}

/* ---- LLM calls (schema v2) ---------------------------------------------- */

static int64_t add_call_ok(struct kv_store *s, const struct kv_llm_call_record *r) {
  int64_t id = -1;
  char err[1024] = "";
  int rc = kv_store_add_llm_call(s, r, &id, err, sizeof err);
  if (rc != 0)
    print_error("add_llm_call: %s\n", err);
  assert_int_equal(rc, 0);
  assert_true(id > 0);
  return id;
}

static void test_llm_call_roundtrip(void **state) {
  (void)state;
  char path[1024], err[1024] = "", v[64];
  path_in(path, sizeof path, "llm.db");
  struct kv_store *s = open_ok(path);
  assert_int_equal(kv_store_count_llm_calls(s), 0);
  struct kv_llm_call_record r = {
      .role = "coder",
      .provider = "anthropic",
      .model = "claude-x",
      .base_url = "http://127.0.0.1:1",
      .cache_key = "k1",
      .sample = 3,
      .request_json = "{\"model\":\"claude-x\"}",
      .response_body = "{\"content\":[]}",
      .reply_text = "it's \"quoted\"\nline two",
      .status = "ok",
      .http_status = 200,
      .attempts = 2,
      .latency_s = 1.5,
      .input_tokens = 1234,
      .output_tokens = 567,
      .cost_usd = 0.012207,
      .run_id = 7,
      .node_id = 42,
  };
  int64_t a = add_call_ok(s, &r);
  /* An unknown-usage failure with no run: NULLs come back as 0 / -1 / NULL. */
  struct kv_llm_call_record f = {
      .role = "ask",
      .provider = "openai",
      .model = "gpt-x",
      .cache_key = "k2",
      .request_json = "{}",
      .status = "malformed",
      .error = "not JSON",
      .attempts = 1,
      .latency_s = 0.25,
      .input_tokens = -1,
      .output_tokens = -1,
      .cost_usd = -1,
  };
  int64_t b = add_call_ok(s, &f);
  assert_true(b > a);
  assert_int_equal(kv_store_count_llm_calls(s), 2);

  struct kv_llm_call_row row;
  assert_int_equal(kv_store_get_llm_call(s, a, &row, err, sizeof err), 0);
  assert_int_equal(row.id, a);
  assert_int_equal(row.run_id, 7);
  assert_int_equal(row.node_id, 42);
  assert_string_equal(row.role, "coder");
  assert_string_equal(row.provider, "anthropic");
  assert_string_equal(row.model, "claude-x");
  assert_string_equal(row.base_url, "http://127.0.0.1:1");
  assert_string_equal(row.cache_key, "k1");
  assert_int_equal(row.sample, 3);
  assert_string_equal(row.request_json, r.request_json);
  assert_string_equal(row.response_body, r.response_body);
  assert_string_equal(row.reply_text, r.reply_text);
  assert_string_equal(row.status, "ok");
  assert_null(row.error);
  assert_int_equal(row.http_status, 200);
  assert_int_equal(row.attempts, 2);
  assert_true(row.latency_s == 1.5);
  assert_int_equal(row.input_tokens, 1234);
  assert_int_equal(row.output_tokens, 567);
  assert_true(row.cost_usd == 0.012207);
  assert_true(row.created_unix > 0);
  kv_llm_call_row_release(&row);

  assert_int_equal(kv_store_get_llm_call(s, b, &row, err, sizeof err), 0);
  assert_int_equal(row.run_id, 0);
  assert_int_equal(row.node_id, 0);
  assert_null(row.base_url);
  assert_null(row.reply_text);
  assert_null(row.response_body);
  assert_int_equal(row.http_status, 0);
  assert_int_equal(row.input_tokens, -1);
  assert_int_equal(row.output_tokens, -1);
  assert_true(row.cost_usd < 0);
  assert_string_equal(row.error, "not JSON");
  kv_llm_call_row_release(&row);

  assert_true(kv_store_get_llm_call(s, 999, &row, err, sizeof err) < 0);
  assert_non_null(strstr(err, "LLM call 999 not found"));
  /* A record without its required fields is refused, naming them. */
  struct kv_llm_call_record empty = {0};
  assert_true(kv_store_add_llm_call(s, &empty, NULL, err, sizeof err) < 0);
  assert_non_null(strstr(err, "cache key"));
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM llm_calls WHERE run_id IS NULL AND cost_usd IS NULL", v,
            sizeof v);
  assert_string_equal(v, "1");
}

struct list_acc {
  int64_t ids[16];
  int n, stop_at;
};

static int collect_ids(void *arg, const struct kv_llm_call_row *row) {
  struct list_acc *a = arg;
  assert_true(a->n < 16);
  assert_non_null(row->status);
  a->ids[a->n++] = row->id;
  return a->stop_at > 0 && a->n >= a->stop_at;
}

static void test_llm_call_find_and_list(void **state) {
  (void)state;
  char path[1024], err[1024] = "";
  path_in(path, sizeof path, "llm-find.db");
  struct kv_store *s = open_ok(path);
  struct kv_llm_call_record r = {
      .role = "ask",
      .provider = "openai",
      .model = "m",
      .cache_key = "key-a",
      .request_json = "{}",
      .status = "ok",
      .reply_text = "first",
      .attempts = 1,
  };
  struct kv_llm_call_row row;
  assert_int_equal(kv_store_find_llm_call(s, "key-a", &row, err, sizeof err), 0);
  add_call_ok(s, &r);
  r.reply_text = "second";
  int64_t second = add_call_ok(s, &r);
  /* Failures and replays of the same key never answer a replay. */
  r.status = "timeout";
  r.reply_text = NULL;
  add_call_ok(s, &r);
  r.status = "ok";
  r.provider = "replay";
  r.reply_text = "replayed";
  add_call_ok(s, &r);
  r.provider = "openai";
  r.cache_key = "key-b";
  r.reply_text = "other";
  add_call_ok(s, &r);

  assert_int_equal(kv_store_find_llm_call(s, "key-a", &row, err, sizeof err), 1);
  assert_int_equal(row.id, second);
  assert_string_equal(row.reply_text, "second");
  kv_llm_call_row_release(&row);
  assert_int_equal(kv_store_find_llm_call(s, "key-c", &row, err, sizeof err), 0);

  struct list_acc acc = {.stop_at = 0};
  assert_int_equal(kv_store_list_llm_calls(s, 0, 0, collect_ids, &acc, err, sizeof err), 5);
  assert_int_equal(acc.n, 5);
  for (int i = 1; i < acc.n; i++)
    assert_true(acc.ids[i] > acc.ids[i - 1]);
  /* after_id and limit page through; a callback can stop early. */
  struct list_acc page = {.stop_at = 0};
  assert_int_equal(kv_store_list_llm_calls(s, acc.ids[1], 2, collect_ids, &page, err, sizeof err),
                   2);
  assert_int_equal(page.ids[0], acc.ids[2]);
  assert_int_equal(page.ids[1], acc.ids[3]);
  struct list_acc stop = {.stop_at = 1};
  assert_int_equal(kv_store_list_llm_calls(s, 0, 0, collect_ids, &stop, err, sizeof err), 1);
  kv_store_close(s);
}

/* A v1 database (as a kevo of schema 1 left it, with an evaluation) migrates
 * to v2 keeping its data. */
static void test_migrate_v1_to_v2(void **state) {
  (void)state;
  char path[1024], v[256];
  path_in(path, sizeof path, "v1.db");
  struct kv_store *s = open_ok(path);
  int64_t task = put_task_ok(s, "rowsum", "hash-v1");
  kv_store_close(s);
  /* Back to what schema 1 had. */
  raw_exec(path, "DROP TABLE skill_log; DROP TABLE skills; DROP TABLE lineage_steps; "
                 "DROP TABLE lineages; "
                 "DROP TABLE analysis_gate; DROP TABLE analysis_samples; DROP TABLE analyses; "
                 "DROP TABLE adaptations; DROP TABLE synth_attempts; DROP TABLE syntheses; "
                 "DROP TABLE rule_judgements; DROP TABLE rule_merges; DROP TABLE rule_evidence; "
                 "DROP TABLE bench_tasks; DROP TABLE benches; DROP TABLE rule_evals; DROP TABLE "
                 "rules; DROP TABLE nodes; DROP TABLE runs; DROP TABLE llm_calls; PRAGMA "
                 "user_version = 1;");
  raw_query(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'llm_calls%'", v, sizeof v);
  assert_string_equal(v, "0");
  s = open_ok(path);
  assert_int_equal(kv_store_schema_version(s), KV_STORE_SCHEMA_VERSION);
  assert_int_equal(kv_store_count_llm_calls(s), 0);
  assert_int_equal(put_task_ok(s, "rowsum", "hash-v1"), task);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'llm_calls%'", v, sizeof v);
  assert_string_equal(v, "3");
}

/* A v7 database (with an evaluation) migrates to v8: KLineage's tables
 * appear, the data stays, and cards can be stored at once. */
/* Why a run ended (schema 9): recorded with its status, cleared when it runs
 * again; a database that cannot take it (a full disk: tests/cli/full_disk.sh)
 * leaves it in the run's lock file. */
static void test_run_stop_reason(void **state) {
  (void)state;
  char path[1024], err[1024] = "";
  path_in(path, sizeof path, "stop.db");
  struct kv_store *s = open_ok(path);
  int64_t task = put_task_ok(s, "rowsum", "hash-stop"), rid = 0;
  assert_int_equal(kv_store_run_create(s, task, "tune", "{}", &rid, err, sizeof err), 0);
  assert_true(kv_store_run_is_mine(s, rid));
  assert_int_equal(
      kv_store_run_end(s, rid, "stopped", "the LLM budget is reached", err, sizeof err), 0);
  assert_false(kv_store_run_is_mine(s, rid));
  struct kv_run_row r;
  assert_int_equal(kv_store_run_get(s, rid, &r, err, sizeof err), 0);
  assert_string_equal(r.status, "stopped");
  assert_string_equal(r.stop_reason, "the LLM budget is reached");
  kv_run_row_release(&r);
  assert_int_equal(kv_store_run_set_status(s, rid, "running", err, sizeof err), 0);
  assert_int_equal(kv_store_run_get(s, rid, &r, err, sizeof err), 0);
  assert_null(r.stop_reason);
  kv_run_row_release(&r);
  kv_store_close(s);
}

static void test_migrate_v7_to_v8(void **state) {
  (void)state;
  char path[1024], v[256], err[1024] = "";
  path_in(path, sizeof path, "v7.db");
  struct kv_store *s = open_ok(path);
  int64_t task = put_task_ok(s, "rowsum", "hash-v7");
  kv_store_close(s);
  raw_exec(path, "DROP TABLE skill_log; DROP TABLE skills; DROP TABLE lineage_steps; "
                 "DROP TABLE lineages; ALTER TABLE runs DROP COLUMN stop_reason; "
                 "PRAGMA user_version = 7;");
  raw_query(path, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'skill%'", v, sizeof v);
  assert_string_equal(v, "0");
  s = open_ok(path);
  assert_int_equal(kv_store_schema_version(s), KV_STORE_SCHEMA_VERSION);
  assert_int_equal(put_task_ok(s, "rowsum", "hash-v7"), task);
  struct kv_skill_rec k = {.uid = "t/cpu/x86_64/A@0",
                           .name = "A",
                           .intent = "a",
                           .surface = "cpu",
                           .arch = "x86_64",
                           .status = "admitted",
                           .card_json = "{}",
                           .search_text = "a",
                           .speedup = 1.5,
                           .log_json = "{\"what\":\"lineage\"}\n{\"what\":\"import\"}\n"};
  int added = 0, updated = 0;
  assert_int_equal(kv_store_skills_put(s, &k, 1, &added, &updated, err, sizeof err), 0);
  assert_int_equal(added, 1);
  assert_int_equal(kv_store_skills_put(s, &k, 1, &added, &updated, err, sizeof err), 0);
  assert_int_equal(added + updated, 0);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM skill_log", v, sizeof v);
  assert_string_equal(v, "2"); /* a new card's log, once */
}

/* A v3 database with a run and a node migrates to v4 keeping them; nodes
 * gain reward and plan; rules count occurrences and keep their evaluations. */
static void test_migrate_v3_to_v4_and_rules(void **state) {
  (void)state;
  char path[1024], err[1024] = "", v[256];
  path_in(path, sizeof path, "v3.db");
  struct kv_store *s = open_ok(path);
  int64_t task = 0, rid = 0;
  assert_int_equal(kv_store_put_task(s, "rowsum", "/t", "h3", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_put_source(s, "cc", "c", 1, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(s, task, "tune", "{}", &rid, err, sizeof err), 0);
  kv_store_close(s);
  raw_exec(path, "DROP TABLE skill_log; DROP TABLE skills; DROP TABLE lineage_steps; "
                 "DROP TABLE lineages; "
                 "DROP TABLE analysis_gate; DROP TABLE analysis_samples; DROP TABLE analyses; "
                 "DROP TABLE adaptations; DROP TABLE synth_attempts; DROP TABLE syntheses; "
                 "DROP TABLE rule_judgements; DROP TABLE rule_merges; DROP TABLE rule_evidence; "
                 "DROP TABLE bench_tasks; DROP TABLE benches; DROP TABLE rule_evals; DROP TABLE "
                 "rules; ALTER TABLE nodes DROP COLUMN plan; "
                 "ALTER TABLE nodes DROP COLUMN reward; ALTER TABLE runs DROP COLUMN stop_reason; "
                 "PRAGMA user_version = 3;");
  raw_exec(path, "INSERT INTO nodes (run_id, step, source_hash, action, verdict) "
                 "VALUES (1, 0, 'cc', 'starter', 'ok');");
  s = open_ok(path);
  assert_int_equal(kv_store_schema_version(s), KV_STORE_SCHEMA_VERSION);
  struct kv_node_record n = {.run_id = rid,
                             .step = 1,
                             .source_hash = "cc",
                             .action = "refine",
                             .verdict = "ok",
                             .speedup = 2,
                             .reward = 1.1,
                             .plan = "unroll"};
  int64_t nid = 0;
  assert_int_equal(kv_store_node_add(s, &n, &nid, err, sizeof err), 0);
  n.step = 2;
  n.parent_id = nid;
  n.reward = -1;
  n.plan = NULL;
  assert_int_equal(kv_store_node_add(s, &n, NULL, err, sizeof err), 0);
  struct kv_node_row *rows = NULL;
  int nn = 0;
  assert_int_equal(kv_store_run_nodes(s, rid, &rows, &nn, err, sizeof err), 0);
  assert_int_equal(nn, 3);
  assert_int_equal(rows[0].parent_id, 0);
  assert_true(rows[0].reward < 0);
  assert_null(rows[0].plan);
  assert_true(rows[1].reward > 1.09 && rows[1].reward < 1.11);
  assert_string_equal(rows[1].plan, "unroll");
  assert_int_equal(rows[2].parent_id, nid);
  assert_true(rows[2].reward < 0);
  kv_node_rows_free(rows, nn);

  int64_t r1 = 0, r2 = 0;
  assert_int_equal(kv_store_rule_add(s, "", "llm", 1, 0, &r1, err, sizeof err), -1);
  assert_int_equal(
      kv_store_rule_add(s, "You cannot call foo", "compiler", 1, 7, &r1, err, sizeof err), 0);
  assert_int_equal(kv_store_rule_add(s, "You cannot use bar", "llm", 2, 0, &r2, err, sizeof err),
                   0);
  assert_int_equal(kv_store_rule_seen(s, r1, 1, 9, err, sizeof err), 0);
  assert_int_equal(kv_store_rule_seen(s, r1, 1, 9, err, sizeof err), 0);
  assert_int_equal(kv_store_rule_seen(s, 999, 1, 9, err, sizeof err), -1);
  assert_non_null(strstr(err, "no rule 999"));
  struct kv_rule_row *rr = NULL;
  int nr = 0;
  assert_int_equal(kv_store_rules(s, &rr, &nr, err, sizeof err), 0);
  assert_int_equal(nr, 2);
  assert_string_equal(rr[0].text, "You cannot call foo");
  assert_string_equal(rr[0].origin, "compiler");
  assert_int_equal(rr[0].count, 3);
  assert_string_equal(rr[0].evals, "7 9");
  assert_int_equal(rr[1].count, 2);
  assert_null(rr[1].evals);
  kv_rule_rows_free(rr, nr);
  kv_store_close(s);
  raw_query(path, "SELECT count(*) FROM nodes", v, sizeof v);
  assert_string_equal(v, "3");
}

static void test_runs_and_nodes(void **state) {
  (void)state;
  char path[1024], err[1024] = "";
  path_in(path, sizeof path, "runs.db");
  struct kv_store *s = open_ok(path);
  struct kv_run_row run;
  assert_int_equal(kv_store_run_get(s, 0, &run, err, sizeof err), -1);
  assert_non_null(strstr(err, "no runs yet"));
  int64_t task = 0, rid = 0, eid = 0;
  assert_int_equal(kv_store_put_task(s, "rowsum", "/t", "h1", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_put_source(s, "aa", "a", 1, err, sizeof err), 0);
  assert_int_equal(kv_store_put_source(s, "bb", "b", 1, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(s, task, "tune", "{\"steps\":3}", &rid, err, sizeof err), 0);
  struct kv_eval_record e = {.task_id = task,
                             .source_hash = "bb",
                             .surface = "cpu",
                             .verdict = "ok",
                             .median_us = 5,
                             .speedup = 3};
  assert_int_equal(kv_store_add_eval(s, &e, &eid, err, sizeof err), 0);
  struct kv_node_record n0 = {.run_id = rid,
                              .step = 0,
                              .source_hash = "aa",
                              .action = "exhaustive",
                              .params = "N=1",
                              .verdict = "wrong_output",
                              .speedup = -1};
  struct kv_node_record n1 = {.run_id = rid,
                              .step = 1,
                              .source_hash = "bb",
                              .eval_id = eid,
                              .action = "exhaustive",
                              .params = "N=2",
                              .verdict = "ok",
                              .speedup = 3};
  struct kv_node_record n2 = {.run_id = rid,
                              .step = 2,
                              .source_hash = "aa",
                              .action = "climb",
                              .params = "N=4",
                              .verdict = "ok",
                              .speedup = 2};
  assert_int_equal(kv_store_node_add(s, &n0, NULL, err, sizeof err), 0);
  assert_int_equal(kv_store_node_add(s, &n1, NULL, err, sizeof err), 0);
  assert_int_equal(kv_store_node_add(s, &n2, NULL, err, sizeof err), 0);
  /* A step is recorded once: a replayed step is refused, not duplicated. */
  assert_int_equal(kv_store_node_add(s, &n2, NULL, err, sizeof err), -1);
  assert_int_equal(kv_store_run_set_status(s, rid, "done", err, sizeof err), 0);
  assert_int_equal(kv_store_run_get(s, 0, &run, err, sizeof err), 0);
  assert_true(run.id == rid);
  assert_int_equal(run.nnodes, 3);
  assert_string_equal(run.status, "done");
  assert_string_equal(run.task_name, "rowsum");
  assert_string_equal(run.spec_hash, "h1");
  assert_string_equal(run.best_hash, "bb"); /* the fastest accepted node */
  assert_true(run.best_speedup == 3.0);
  assert_true(run.best_eval_id == eid);
  kv_run_row_release(&run);
  struct kv_node_row *rows;
  int nr;
  assert_int_equal(kv_store_run_nodes(s, rid, &rows, &nr, err, sizeof err), 0);
  assert_int_equal(nr, 3);
  assert_string_equal(rows[0].params, "N=1");
  assert_true(rows[0].speedup < 0);
  assert_string_equal(rows[2].action, "climb");
  kv_node_rows_free(rows, nr);
  struct kv_run_row *list;
  int nl;
  assert_int_equal(kv_store_runs(s, &list, &nl, 10, err, sizeof err), 0);
  assert_int_equal(nl, 1);
  kv_run_row_release(&list[0]);
  free(list);
  assert_int_equal(kv_store_run_get(s, 999, &run, err, sizeof err), -1);
  assert_non_null(strstr(err, "run 999 is not in"));
  kv_store_close(s);
}

/* A step that fails part-way (here: a corrupt table) is an error, not a
 * shorter list of runs (issue 17). */
static void test_runs_read_error(void **state) {
  (void)state;
  char path[1024], err[1024] = "";
  path_in(path, sizeof path, "runs-corrupt.db");
  struct kv_store *s = open_ok(path);
  int64_t task = 0, rid = 0;
  assert_int_equal(kv_store_put_task(s, "rowsum", "/t", "h1", "{}", &task, err, sizeof err), 0);
  for (int i = 0; i < 400; i++)
    assert_int_equal(kv_store_run_create(s, task, "tune", "{\"steps\":3}", &rid, err, sizeof err),
                     0);
  kv_store_close(s);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  assert_true(size > 8192);
  char junk[4096];
  memset(junk, 0xA5, sizeof junk);
  /* The last pages: the latest runs' leaves (the schema and the root pages
   * come first), so the store opens and the listing fails part-way. */
  for (long off = (size / 4096 - 2) * 4096; off < size; off += 4096) {
    assert_int_equal(fseek(f, off, SEEK_SET), 0);
    assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
  }
  fclose(f);
  assert_int_equal(kv_store_open(path, &s, err, sizeof err), 0);
  struct kv_run_row *list = NULL;
  int nl = -1;
  int rc = kv_store_runs(s, &list, &nl, 100, err, sizeof err);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err, "cannot read the runs"));
  kv_store_close(s);
}

static const char *run_status(struct kv_store *s, int64_t id, char *buf, size_t cap) {
  struct kv_run_row r;
  char err[1024];
  assert_int_equal(kv_store_run_get(s, id, &r, err, sizeof err), 0);
  snprintf(buf, cap, "%s", r.status);
  kv_run_row_release(&r);
  return buf;
}

/* Who runs a run (issue 17): while one handle runs it, another cannot take
 * it (a second `kevo resume` is refused before it writes anything); once
 * its owner is gone without ending it, it reads back as "killed" and can be
 * taken again; ending it removes its lock file. flock's locks belong to the
 * open file, so two handles of one process stand for two processes here
 * (the e2e test kills a real one). */
static void test_run_claims(void **state) {
  (void)state;
  char path[1024], lock[1100], err[1024] = "", st[32];
  path_in(path, sizeof path, "claims.db");
  struct kv_store *a = open_ok(path), *b = open_ok(path);
  int64_t task = 0, rid = 0;
  assert_int_equal(kv_store_put_task(a, "rowsum", "/t", "h1", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(a, task, "tune", "{\"steps\":3}", &rid, err, sizeof err), 0);
  snprintf(lock, sizeof lock, "%s-run%lld.lock", path, (long long)rid);
  assert_int_equal(access(lock, F_OK), 0);
  assert_string_equal(run_status(a, rid, st, sizeof st), "running");
  assert_string_equal(run_status(b, rid, st, sizeof st), "running");
  /* b cannot run it while a does, and leaves its status alone. */
  assert_int_equal(kv_store_run_set_status(b, rid, "running", err, sizeof err), -1);
  assert_non_null(strstr(err, "still running in another kevo process"));
  char pid[32];
  snprintf(pid, sizeof pid, "(pid %ld)", (long)getpid());
  assert_non_null(strstr(err, pid));
  /* a is gone without ending it: killed, for a reader and in the listing. */
  kv_store_close(a);
  assert_string_equal(run_status(b, rid, st, sizeof st), "killed");
  struct kv_store *r = NULL;
  assert_int_equal(kv_store_open_readonly(path, &r, err, sizeof err), 0);
  struct kv_run_row *list = NULL;
  int nl = 0;
  assert_int_equal(kv_store_runs(r, &list, &nl, 10, err, sizeof err), 0);
  assert_int_equal(nl, 1);
  assert_string_equal(list[0].status, "killed");
  kv_run_row_release(&list[0]);
  free(list);
  /* b takes it (kevo resume), then r sees it live; ending it lets go. */
  assert_int_equal(kv_store_run_set_status(b, rid, "running", err, sizeof err), 0);
  assert_string_equal(run_status(r, rid, st, sizeof st), "running");
  assert_int_equal(kv_store_run_set_status(b, rid, "done", err, sizeof err), 0);
  assert_int_equal(access(lock, F_OK), -1);
  assert_string_equal(run_status(r, rid, st, sizeof st), "done");
  kv_store_close(r);
  kv_store_close(b);
}

/* Reading commands open the store read-only: a missing path is an error
 * and creates nothing, an empty file is no store, a store this user cannot
 * write to is still read (issue 17). */
static void test_open_readonly(void **state) {
  (void)state;
  char path[1024], dir[1024], err[1024] = "";
  struct kv_store *s = NULL;
  path_in(dir, sizeof dir, "typo");
  snprintf(path, sizeof path, "%s/sub/kevo.db", dir);
  assert_int_equal(kv_store_open_readonly(path, &s, err, sizeof err), -1);
  assert_null(s);
  assert_non_null(strstr(err, "no such database"));
  assert_int_equal(access(dir, F_OK), -1); /* no directory made */
  path_in(path, sizeof path, "empty.db");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(kv_store_open_readonly(path, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, "not a kevo store"));
  path_in(path, sizeof path, "junk.db");
  f = fopen(path, "w");
  assert_non_null(f);
  for (int i = 0; i < 4096; i++)
    fputc(i * 7 & 0xff, f);
  fclose(f);
  assert_int_equal(kv_store_open_readonly(path, &s, err, sizeof err), -1);
  assert_non_null(strstr(err, path));
  path_in(path, sizeof path, "ro.db");
  struct kv_store *w = open_ok(path);
  int64_t task = 0, rid = 0;
  assert_int_equal(kv_store_put_task(w, "rowsum", "/t", "h1", "{}", &task, err, sizeof err), 0);
  assert_int_equal(kv_store_run_create(w, task, "tune", "{}", &rid, err, sizeof err), 0);
  assert_int_equal(kv_store_run_set_status(w, rid, "done", err, sizeof err), 0);
  kv_store_close(w);
  assert_int_equal(chmod(path, 0444), 0);
  assert_int_equal(kv_store_open_readonly(path, &s, err, sizeof err), 0);
  struct kv_run_row r;
  assert_int_equal(kv_store_run_get(s, rid, &r, err, sizeof err), 0);
  assert_string_equal(r.status, "done");
  kv_run_row_release(&r);
  /* Writing through it fails; nothing is written. */
  assert_int_equal(kv_store_run_set_status(s, rid, "stopped", err, sizeof err), -1);
  kv_store_close(s);
  assert_int_equal(chmod(path, 0644), 0);
}

/* A bench keeps its tasks in order and each task's state; an unfinished one
 * is found again by its suite and configuration, a finished one is not. */
static void test_bench_state(void **state) {
  (void)state;
  char path[1024], err[1024];
  path_in(path, sizeof path, "bench.db");
  struct kv_store *s = open_ok(path);
  const char *dirs[] = {"/s/level1/a", "/s/level2/b"}, *names[] = {"level1/a", "level2/b"};
  int levels[] = {1, 2};
  int64_t id = 0, found = -1;
  assert_int_equal(kv_store_bench_find(s, "/s", "{}", &found, err, sizeof err), 0);
  assert_int_equal(found, 0);
  assert_int_equal(
      kv_store_bench_create(s, "/s", "{}", dirs, names, levels, 2, &id, err, sizeof err), 0);
  assert_int_equal(kv_store_bench_find(s, "/s", "{\"x\":1}", &found, err, sizeof err), 0);
  assert_int_equal(found, 0); /* another configuration */
  assert_int_equal(kv_store_bench_find(s, "/s", "{}", &found, err, sizeof err), 0);
  assert_int_equal(found, id);
  struct kv_bench_task_row *rows;
  int n;
  assert_int_equal(kv_store_bench_tasks(s, id, &rows, &n, err, sizeof err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(rows[1].name, "level2/b");
  assert_int_equal(rows[1].level, 2);
  assert_string_equal(rows[0].status, "pending");
  free(rows[0].status);
  rows[0].status = strdup("done");
  rows[0].correct = 1;
  rows[0].speedup = 2.5;
  assert_int_equal(kv_store_bench_task_update(s, &rows[0], err, sizeof err), 0);
  rows[0].id = 999;
  assert_int_equal(kv_store_bench_task_update(s, &rows[0], err, sizeof err), -1);
  assert_non_null(strstr(err, "does not exist"));
  kv_bench_task_rows_free(rows, n);
  assert_int_equal(kv_store_bench_tasks(s, id, &rows, &n, err, sizeof err), 0);
  assert_string_equal(rows[0].status, "done");
  assert_true(rows[0].speedup == 2.5 && rows[0].correct == 1);
  kv_bench_task_rows_free(rows, n);
  /* Two tasks with one directory are refused: a suite lists each task once. */
  const char *twice[] = {"/s/a", "/s/a"};
  int64_t id2 = 0;
  assert_int_equal(
      kv_store_bench_create(s, "/t", "{}", twice, names, levels, 2, &id2, err, sizeof err), -1);
  assert_int_equal(kv_store_bench_find(s, "/t", "{}", &found, err, sizeof err), 0);
  assert_int_equal(found, 0); /* rolled back whole */
  assert_int_equal(kv_store_bench_set_status(s, id, "done", err, sizeof err), 0);
  assert_int_equal(kv_store_bench_find(s, "/s", "{}", &found, err, sizeof err), 0);
  assert_int_equal(found, 0);
  struct kv_bench_row b;
  assert_int_equal(kv_store_bench_get(s, 0, &b, err, sizeof err), 0);
  assert_int_equal(b.id, id);
  assert_string_equal(b.status, "done");
  kv_bench_row_release(&b);
  kv_store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bench_state),
      cmocka_unit_test(test_runs_read_error),
      cmocka_unit_test(test_run_claims),
      cmocka_unit_test(test_open_readonly),
      cmocka_unit_test(test_open_migrate_reopen),
      cmocka_unit_test(test_put_task_idempotent),
      cmocka_unit_test(test_put_source_idempotent),
      cmocka_unit_test(test_eval_roundtrip),
      cmocka_unit_test(test_odd_strings),
      cmocka_unit_test(test_refuse_newer_schema),
      cmocka_unit_test(test_migrate_v7_to_v8),
      cmocka_unit_test(test_run_stop_reason),
      cmocka_unit_test(test_default_path),
      cmocka_unit_test(test_error_messages),
      cmocka_unit_test(test_read_only),
      cmocka_unit_test(test_crash_safety),
      cmocka_unit_test(test_concurrent_writers),
      cmocka_unit_test(test_llm_call_roundtrip),
      cmocka_unit_test(test_llm_call_find_and_list),
      cmocka_unit_test(test_migrate_v1_to_v2),
      cmocka_unit_test(test_runs_and_nodes),
      cmocka_unit_test(test_migrate_v3_to_v4_and_rules),
  };
  return cmocka_run_group_tests_name("store", tests, group_setup, group_teardown);
}
