/* The gate server: job parsing (untrusted input) and `kevo gate serve --stdio`
 * end to end: hello with its protocol, a job with its task's files, a later
 * job naming the task by hash only, a job for a task the server lacks, a job
 * of another protocol, a wrong candidate, and QUIT. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kevo/serve.h"
#include "kevo/util.h"
#include "kevo/wire.h"

struct bundle {
  struct kv_job_file files[4];
  int n;
  char hash[65];
  uint8_t *blob; /* the files, then the candidate */
  size_t len;
};

static void add(struct bundle *b, const char *name, const char *data, size_t len) {
  struct kv_job_file *f = &b->files[b->n++];
  snprintf(f->name, sizeof f->name, "%s", name);
  b->blob = realloc(b->blob, b->len + len + 1);
  assert_non_null(b->blob);
  memcpy(b->blob + b->len, data, len);
  f->data = NULL;
  f->len = len;
  b->len += len;
}

static void seal(struct bundle *b) {
  size_t off = 0;
  for (int i = 0; i < b->n; i++) {
    b->files[i].data = b->blob + off;
    off += b->files[i].len;
  }
  kv_job_bundle_hash(b->files, b->n, b->hash);
}

static char *job_json(const struct bundle *b, int with_files, const char *id, const char *cname,
                      size_t clen, int protocol) {
  json_t *files = json_array();
  for (int i = 0; with_files && i < b->n; i++)
    json_array_append_new(files, json_pack("{s:s,s:I}", "name", b->files[i].name, "bytes",
                                           (json_int_t)b->files[i].len));
  json_t *task = json_pack("{s:s}", "hash", b->hash);
  if (with_files)
    json_object_set_new(task, "files", files);
  else
    json_decref(files);
  json_t *j =
      json_pack("{s:i,s:s,s:o,s:{s:s,s:I},s:{s:s,s:b,s:I,s:f}}", "protocol", protocol, "id", id,
                "task", task, "candidate", "name", cname, "bytes", (json_int_t)clen, "options",
                "surface", "cpu", "timing", 0, "seed", (json_int_t)7, "timing_ci", 0.02);
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

static void read_task(struct bundle *b, const char *dir) {
  const char *names[] = {"task.json", "reference.c"};
  for (int i = 0; i < 2; i++) {
    char p[4096], err[256], *data;
    size_t len;
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    assert_int_equal(kv_read_file(p, 1 << 20, &data, &len, err, sizeof err), 0);
    add(b, names[i], data, len);
    free(data);
  }
  seal(b);
}

static const char *src_dir(void) {
  const char *s = getenv("KEVO_SOURCE_DIR");
  return s ? s : KEVO_SOURCE_DIR;
}

static void test_parse(void **state) {
  (void)state;
  char dir[4096], err[512];
  snprintf(dir, sizeof dir, "%s/examples/tasks/rowsum", src_dir());
  struct bundle b = {0};
  read_task(&b, dir);
  const char *cand = "int x;";
  size_t base = b.len;
  uint8_t *blob = malloc(base + 6);
  memcpy(blob, b.blob, base);
  memcpy(blob + base, cand, 6);
  struct kv_job job;
  char *j = job_json(&b, 1, "a", "good.c", 6, 1);
  assert_int_equal(kv_job_parse(j, blob, base + 6, &job, err, sizeof err), 0);
  assert_int_equal(job.nfiles, 2);
  assert_string_equal(job.candidate.name, "good.c");
  assert_int_equal(job.candidate.len, 6);
  assert_true(job.has_seed && job.seed == 7 && job.timing == 0);
  assert_true(job.has_timing_ci && job.timing_ci == 0.02);
  /* adaptive timing's target out of range */
  char *bad = strdup(j);
  char *at = strstr(bad, "0.02");
  assert_non_null(at);
  at[0] = '7';
  assert_int_equal(kv_job_parse(bad, blob, base + 6, &job, err, sizeof err), -1);
  assert_non_null(strstr(err, "timing_ci"));
  free(bad);
  /* a byte the files do not claim */
  assert_int_equal(kv_job_parse(j, blob, base + 5, &job, err, sizeof err), -1);
  assert_non_null(strstr(err, "frame holds only"));
  free(j);
  /* another protocol */
  j = job_json(&b, 1, "a", "good.c", 6, 2);
  assert_int_equal(kv_job_parse(j, blob, base + 6, &job, err, sizeof err), -1);
  assert_non_null(strstr(err, "speaks protocol 1"));
  free(j);
  /* a name that climbs out */
  j = job_json(&b, 1, "a", "../good.c", 6, 1);
  assert_int_equal(kv_job_parse(j, blob, base + 6, &job, err, sizeof err), -1);
  assert_non_null(strstr(err, "plain file name"));
  free(j);
  /* files that are not the hash they claim */
  blob[0] ^= 1;
  j = job_json(&b, 1, "a", "good.c", 6, 1);
  assert_int_equal(kv_job_parse(j, blob, base + 6, &job, err, sizeof err), -1);
  assert_non_null(strstr(err, "not the"));
  free(j);
  free(blob);
  free(b.blob);
}

/* ---- end to end ---- */

struct server {
  pid_t pid;
  int to, from;
};

static void start(struct server *s) {
  const char *kevo = getenv("KEVO_BIN");
  assert_non_null(kevo);
  int in[2], out[2];
  assert_int_equal(pipe(in), 0);
  assert_int_equal(pipe(out), 0);
  s->pid = fork();
  assert_true(s->pid >= 0);
  if (s->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execl(kevo, kevo, "gate", "serve", "--stdio", "--idle", "120", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  s->to = in[1];
  s->from = out[0];
}

static json_t *recv_frame(struct server *s, uint32_t want) {
  struct kv_frame_header h;
  char *json = NULL;
  uint8_t *blob = NULL;
  assert_int_equal(kv_wire_read(s->from, 0, &h, &json, &blob), 0);
  assert_int_equal(h.type, want);
  json_t *j = json_loads(json, 0, NULL);
  free(json);
  free(blob);
  assert_non_null(j);
  return j;
}

static json_t *ask(struct server *s, const char *json, const uint8_t *blob, size_t len) {
  assert_int_equal(kv_wire_write(s->to, KV_GATE_EVAL, 1, json, blob, len), 0);
  return recv_frame(s, KV_GATE_VERDICT);
}

static void test_serve(void **state) {
  (void)state;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/examples/tasks/rowsum", src_dir());
  struct bundle b = {0};
  read_task(&b, dir);
  char p[4200], err[256], *good, *wrong;
  size_t glen, wlen;
  snprintf(p, sizeof p, "%s/good.c", dir);
  assert_int_equal(kv_read_file(p, 1 << 20, &good, &glen, err, sizeof err), 0);
  wrong = strdup("void rowsum(const float *x, float *y, int rows, int cols) {\n"
                 "  for (int r = 0; r < rows; r++) y[r] = (float)cols; (void)x; }\n");
  wlen = strlen(wrong);

  struct server s;
  start(&s);
  json_t *hello = recv_frame(&s, KV_GATE_HELLO);
  assert_int_equal(json_integer_value(json_object_get(hello, "protocol")), KV_GATE_PROTOCOL);
  assert_non_null(json_string_value(json_object_get(hello, "kevo")));
  json_decref(hello);

  /* 1. The task's files and a good candidate: ok. */
  uint8_t *blob = malloc(b.len + glen + wlen);
  memcpy(blob, b.blob, b.len);
  memcpy(blob + b.len, good, glen);
  char *j = job_json(&b, 1, "first", "good.c", glen, 1);
  json_t *v = ask(&s, j, blob, b.len + glen);
  free(j);
  assert_string_equal(json_string_value(json_object_get(v, "id")), "first");
  json_t *res = json_object_get(v, "result");
  if (!res)
    print_error("error: %s\n", json_string_value(json_object_get(v, "error")));
  assert_non_null(res);
  assert_string_equal(json_string_value(json_object_get(res, "verdict")), "ok");
  json_decref(v);

  /* 2. The task by hash only, a wrong candidate: wrong_output. */
  j = job_json(&b, 0, "second", "wrong.c", wlen, 1);
  v = ask(&s, j, (const uint8_t *)wrong, wlen);
  free(j);
  res = json_object_get(v, "result");
  assert_non_null(res);
  assert_string_equal(json_string_value(json_object_get(res, "verdict")), "wrong_output");
  json_decref(v);

  /* 2b. The bundle on disk altered into a reference the wrong candidate
   * matches, then an extra file in it, then its file list removed: each time
   * the bundle is no longer trusted but treated as missing (the server asks
   * for the files, never judges against what it holds); sent again, the
   * files make it whole and the wrong candidate is wrong_output again. */
  char bdir[4200], bp[4300];
  const char *cache = getenv("KEVO_CACHE_DIR");
  assert_non_null(cache);
  snprintf(bdir, sizeof bdir, "%s/serve/%s", cache, b.hash);
  const char *planted = "void rowsum(const float *x, float *y, int rows, int cols) {\n"
                        "  for (int r = 0; r < rows; r++) y[r] = (float)cols; (void)x; }\n";
  const char *tamper[][2] = {{"reference.c", planted}, {"extra.h", "#define X 1\n"}, {NULL, NULL}};
  for (int k = 0; k < 3; k++) {
    if (tamper[k][0]) {
      snprintf(bp, sizeof bp, "%s/%s", bdir, tamper[k][0]);
      unlink(bp);
      assert_int_equal(kv_write_file(bp, tamper[k][1], strlen(tamper[k][1]), err, sizeof err), 0);
    } else {
      snprintf(bp, sizeof bp, "%s/.kevo-files", bdir);
      assert_int_equal(unlink(bp), 0);
    }
    j = job_json(&b, 0, "tampered", "wrong.c", wlen, 1);
    v = ask(&s, j, (const uint8_t *)wrong, wlen);
    free(j);
    assert_null(json_object_get(v, "result"));
    assert_true(json_is_true(json_object_get(v, "need_task")));
    json_decref(v);
    memcpy(blob + b.len, wrong, wlen);
    j = job_json(&b, 1, "resent", "wrong.c", wlen, 1);
    v = ask(&s, j, blob, b.len + wlen);
    free(j);
    res = json_object_get(v, "result");
    assert_non_null(res);
    assert_string_equal(json_string_value(json_object_get(res, "verdict")), "wrong_output");
    json_decref(v);
  }
  snprintf(bp, sizeof bp, "%s/extra.h", bdir);
  assert_false(kv_path_exists(bp));

  /* 3. A task the server lacks, by hash only: it asks for the files. */
  struct bundle other = b;
  other.hash[0] = other.hash[0] == 'a' ? 'b' : 'a';
  j = job_json(&other, 0, "third", "good.c", glen, 1);
  v = ask(&s, j, (const uint8_t *)good, glen);
  free(j);
  assert_null(json_object_get(v, "result"));
  assert_true(json_is_true(json_object_get(v, "need_task")));
  assert_non_null(strstr(json_string_value(json_object_get(v, "error")), "send its files"));
  json_decref(v);

  /* 4. Another protocol: refused, saying which. */
  j = job_json(&b, 0, "fourth", "good.c", glen, 99);
  v = ask(&s, j, (const uint8_t *)good, glen);
  free(j);
  assert_non_null(strstr(json_string_value(json_object_get(v, "error")), "protocol 99"));
  json_decref(v);

  /* QUIT: the server ends with status 0. */
  assert_int_equal(kv_wire_write(s.to, KV_GATE_QUIT, 0, "{}", NULL, 0), 0);
  int st = 0;
  assert_int_equal(waitpid(s.pid, &st, 0), s.pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(s.to);
  close(s.from);

  /* A server whose client sends garbage ends with an error, not a hang. */
  start(&s);
  json_decref(recv_frame(&s, KV_GATE_HELLO));
  assert_int_equal(write(s.to, "GARBAGE GARBAGE GARBAGE GARBAGE", 31), 31);
  assert_int_equal(waitpid(s.pid, &st, 0), s.pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  close(s.to);
  close(s.from);
  free(blob);
  free(good);
  free(wrong);
  free(b.blob);
}

/* A serve/ directory another local user could write (mode 0777), or a link
 * in its place: the server refuses to start, naming it and the fix. */
static void test_serve_root_trusted(void **state) {
  (void)state;
  char base[] = "/tmp/kevo-serve-root-XXXXXX", root[256], err[1024];
  assert_non_null(mkdtemp(base));
  snprintf(root, sizeof root, "%s/serve", base);
  assert_int_equal(mkdir(root, 0700), 0);
  assert_int_equal(chmod(root, 0777), 0);
  struct kv_serve_opts so = {0};
  so.cache_dir = base;
  int fd = open("/dev/null", O_RDWR);
  assert_int_equal(kv_gate_serve(fd, fd, &so, err, sizeof err), -1);
  assert_non_null(strstr(err, root));
  assert_non_null(strstr(err, "mode 777"));
  assert_int_equal(rmdir(root), 0);
  assert_int_equal(symlink("/tmp", root), 0);
  assert_int_equal(kv_gate_serve(fd, fd, &so, err, sizeof err), -1);
  assert_non_null(strstr(err, "a link"));
  close(fd);
  unlink(root);
  rmdir(base);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_serve),
      cmocka_unit_test(test_serve_root_trusted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
