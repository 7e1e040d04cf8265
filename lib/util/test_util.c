#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kevo/util.h"

static void test_buf_cap(void **state) {
  (void)state;
  struct kv_buf b;
  kv_buf_init(&b, 10);
  assert_int_equal(kv_buf_append(&b, "hello", 5), 0);
  assert_int_equal(b.truncated, 0);
  assert_int_equal(kv_buf_appendf(&b, "%s-%d", "world", 42), 0);
  assert_int_equal(b.len, 10);
  assert_int_equal(b.truncated, 1);
  assert_string_equal(b.data, "helloworld");
  char *d = kv_buf_detach(&b);
  assert_string_equal(d, "helloworld");
  free(d);
  assert_null(b.data);
}

static void test_sha256(void **state) {
  (void)state;
  char hex[65];
  kv_sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, "a", 1);
  kv_sha256_update(h, "bc", 2);
  char hex2[65];
  kv_sha256_final(h, hex2);
  assert_string_equal(hex, hex2);
}

static void test_files(void **state) {
  (void)state;
  char dir[4096], err[256];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-util-test", dir, sizeof dir, err, sizeof err), 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/a/b/c", dir);
  assert_int_equal(kv_mkdirs(path, 0700, err, sizeof err), 0);
  snprintf(path, sizeof path, "%s/a/b/c/f.txt", dir);
  assert_int_equal(kv_write_file(path, "12345", 5, err, sizeof err), 0);
  char *txt;
  size_t len;
  assert_int_equal(kv_read_file(path, 100, &txt, &len, err, sizeof err), 0);
  assert_int_equal(len, 5);
  assert_string_equal(txt, "12345");
  free(txt);
  /* Over the cap: refused with a message naming the file. */
  assert_int_equal(kv_read_file(path, 3, &txt, &len, err, sizeof err), -1);
  assert_non_null(strstr(err, "f.txt"));
  assert_null(txt);
  assert_int_equal(kv_read_file("/nonexistent/x", 3, &txt, &len, err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/x"));
  assert_int_equal(kv_rmtree(dir), 0);
  assert_false(kv_path_exists(dir));
}

static void test_run_capture(void **state) {
  (void)state;
  struct kv_buf out;
  kv_buf_init(&out, 1 << 16);
  struct kv_proc_result r;
  char err[256];
  char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
  assert_int_equal(kv_run(argv, NULL, NULL, 10, NULL, NULL, &out, &r, err, sizeof err), 0);
  assert_int_equal(r.exited, 1);
  assert_int_equal(r.status, 3);
  assert_non_null(strstr(out.data, "out"));
  assert_non_null(strstr(out.data, "err"));
  kv_buf_release(&out);
}

static void test_run_deadline_kills_group(void **state) {
  (void)state;
  struct kv_buf out;
  kv_buf_init(&out, 1 << 16);
  struct kv_proc_result r;
  char err[256];
  /* A child that forks a grandchild holding the pipe open, both sleeping. */
  char *argv[] = {"sh", "-c", "sleep 30 & sleep 30", NULL};
  double t0 = kv_now_s();
  assert_int_equal(kv_run(argv, NULL, NULL, 0.5, NULL, NULL, &out, &r, err, sizeof err), 0);
  double dt = kv_now_s() - t0;
  assert_int_equal(r.timed_out, 1);
  assert_true(dt < 5.0);
  char desc[128];
  kv_proc_describe(&r, desc, sizeof desc);
  assert_non_null(strstr(desc, "timed out"));
  kv_buf_release(&out);
}

static void test_run_flood_capped(void **state) {
  (void)state;
  struct kv_buf out;
  kv_buf_init(&out, 1000);
  struct kv_proc_result r;
  char err[256];
  char *argv[] = {"sh", "-c", "head -c 5000000 /dev/zero", NULL};
  assert_int_equal(kv_run(argv, NULL, NULL, 10, NULL, NULL, &out, &r, err, sizeof err), 0);
  assert_int_equal(r.status, 0);
  assert_int_equal(out.len, 1000);
  assert_int_equal(out.truncated, 1);
  kv_buf_release(&out);
}

static void test_run_missing(void **state) {
  (void)state;
  struct kv_proc_result r;
  char err[256];
  char *argv[] = {"kevo-no-such-program", NULL};
  assert_int_equal(kv_run(argv, NULL, NULL, 1, NULL, NULL, NULL, &r, err, sizeof err), -1);
  assert_non_null(strstr(err, "kevo-no-such-program"));
}

/* ---- kv_rmtree against trees a hostile candidate can build ---- */

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* The descriptor limit of a worker that gives up, and lower: 64. */
static struct rlimit saved_nofile;

static void lower_nofile(void) {
  assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved_nofile), 0);
  struct rlimit rl = {64, saved_nofile.rlim_max};
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

static void restore_nofile(void) {
  assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved_nofile), 0);
}

static void touch_at(int dfd, const char *name) {
  int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "x", 1), 1);
  close(fd);
}

/* dir/d/d/d/... `depth` levels, built with two descriptors; a file every 997
 * levels, and `outside` linked in at a few levels when given. */
static void build_chain(const char *dir, int depth, const char *outside) {
  int cur = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_true(cur >= 0);
  for (int i = 0; i < depth; i++) {
    if (mkdirat(cur, "d", 0700) != 0)
      fail_msg("mkdir at depth %d: %s", i, strerror(errno));
    if (i % 997 == 0)
      touch_at(cur, "f");
    if (outside && i % 9973 == 0)
      assert_int_equal(symlinkat(outside, cur, "out"), 0);
    int next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(next >= 0);
    close(cur);
    cur = next;
  }
  touch_at(cur, "bottom");
  close(cur);
}

static void test_rmtree_deep(void **state) {
  (void)state;
  char dir[4096], err[256];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-rmtree-deep", dir, sizeof dir, err, sizeof err), 0);
  build_chain(dir, 30000, NULL);
  int before = open_fds();
  lower_nofile();
  double t0 = kv_now_s();
  int rc = kv_rmtree(dir);
  int e = errno;
  double dt = kv_now_s() - t0;
  restore_nofile();
  if (rc != 0)
    fail_msg("kv_rmtree of a 30000-deep chain: %s", strerror(e));
  assert_false(kv_path_exists(dir));
  assert_int_equal(open_fds(), before);
  print_message("30000-deep chain removed in %.2f s with RLIMIT_NOFILE 64\n", dt);
}

static void test_rmtree_wide(void **state) {
  (void)state;
  char dir[4096], err[256];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-rmtree-wide", dir, sizeof dir, err, sizeof err), 0);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  assert_true(dfd >= 0);
  /* 100000 entries: 90000 files and 10000 directories, each holding a file
   * and a short chain (the walk leaves the wide directory 10000 times). */
  char name[64];
  for (int i = 0; i < 100000; i++) {
    snprintf(name, sizeof name, "entry-%06d", i);
    if (i % 10) {
      touch_at(dfd, name);
      continue;
    }
    assert_int_equal(mkdirat(dfd, name, 0700), 0);
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(sub >= 0);
    touch_at(sub, "f");
    assert_int_equal(mkdirat(sub, "g", 0700), 0);
    assert_int_equal(mkdirat(sub, "g/h", 0700), 0);
    touch_at(sub, "g/h/f");
    close(sub);
  }
  close(dfd);
  int before = open_fds();
  lower_nofile();
  double t0 = kv_now_s();
  int rc = kv_rmtree(dir);
  int e = errno;
  double dt = kv_now_s() - t0;
  restore_nofile();
  if (rc != 0)
    fail_msg("kv_rmtree of a directory of 100000 entries: %s", strerror(e));
  assert_false(kv_path_exists(dir));
  assert_int_equal(open_fds(), before);
  print_message("100000 entries (10000 of them directories) removed in %.2f s\n", dt);
}

static void test_rmtree_symlinks_not_followed(void **state) {
  (void)state;
  char tree[4096], outside[4096], err[256], path[4300];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-rmtree-tree", tree, sizeof tree, err, sizeof err), 0);
  assert_int_equal(
      kv_mkdtemp("/tmp", "kevo-rmtree-outside", outside, sizeof outside, err, sizeof err), 0);
  snprintf(path, sizeof path, "%s/keep", outside);
  assert_int_equal(kv_write_file(path, "keep", 4, err, sizeof err), 0);
  snprintf(path, sizeof path, "%s/sub", outside);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/sub/keep", outside);
  assert_int_equal(kv_write_file(path, "keep", 4, err, sizeof err), 0);

  /* Links to the outside directory, to a file in it, and dangling, at the
   * top and deep down a chain. */
  snprintf(path, sizeof path, "%s/to-dir", tree);
  assert_int_equal(symlink(outside, path), 0);
  snprintf(path, sizeof path, "%s/to-file", tree);
  char target[4300];
  snprintf(target, sizeof target, "%s/keep", outside);
  assert_int_equal(symlink(target, path), 0);
  snprintf(path, sizeof path, "%s/dangling", tree);
  assert_int_equal(symlink("/nonexistent/kevo", path), 0);
  build_chain(tree, 20000, outside);

  lower_nofile();
  int rc = kv_rmtree(tree);
  int e = errno;
  restore_nofile();
  if (rc != 0)
    fail_msg("kv_rmtree: %s", strerror(e));
  assert_false(kv_path_exists(tree));
  snprintf(path, sizeof path, "%s/keep", outside);
  assert_true(kv_path_exists(path));
  snprintf(path, sizeof path, "%s/sub/keep", outside);
  assert_true(kv_path_exists(path));

  /* A symlink given as the tree itself: the link goes, not its target. */
  snprintf(path, sizeof path, "%s-link", outside);
  assert_int_equal(symlink(outside, path), 0);
  assert_int_equal(kv_rmtree(path), 0);
  struct stat sb;
  assert_int_equal(lstat(path, &sb), -1);
  snprintf(path, sizeof path, "%s/sub/keep", outside);
  assert_true(kv_path_exists(path));

  /* A plain file, a trailing slash, a missing path. */
  snprintf(path, sizeof path, "%s/keep", outside);
  assert_int_equal(kv_rmtree(path), 0);
  assert_false(kv_path_exists(path));
  snprintf(path, sizeof path, "%s/", outside);
  assert_int_equal(kv_rmtree(path), 0);
  assert_false(kv_path_exists(outside));
  assert_int_equal(kv_rmtree(outside), -1);
  assert_int_equal(errno, ENOENT);
}

/* A mount inside the tree is not crossed (where this test may mount: in a
 * child, in its own mount namespace). */
static void test_rmtree_stops_at_mounts(void **state) {
  (void)state;
  char dir[4096], err[256], path[4300];
  assert_int_equal(kv_mkdtemp("/tmp", "kevo-rmtree-mnt", dir, sizeof dir, err, sizeof err), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
      _exit(77);
    snprintf(path, sizeof path, "%s/a", dir);
    if (mkdir(path, 0700) != 0)
      _exit(1);
    snprintf(path, sizeof path, "%s/a/m", dir);
    if (mkdir(path, 0700) != 0 || mount("kevo-test", path, "tmpfs", 0, "size=1m") != 0)
      _exit(77);
    snprintf(path, sizeof path, "%s/a/m/other-fs", dir);
    if (kv_write_file(path, "x", 1, err, sizeof err) != 0)
      _exit(2);
    int rc = kv_rmtree(dir);
    int e = errno;
    if (rc != -1 || (e != EXDEV && e != EBUSY))
      _exit(3);
    if (!kv_path_exists(path))
      _exit(4); /* it went into the other file system */
    umount(path);
    snprintf(path, sizeof path, "%s/a/m", dir);
    umount(path);
    _exit(kv_rmtree(dir) == 0 && !kv_path_exists(dir) ? 0 : 5);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) {
    kv_rmtree(dir);
    skip();
  }
  if (WEXITSTATUS(status) != 0)
    fail_msg("mount test: step %d failed", WEXITSTATUS(status));
  assert_false(kv_path_exists(dir));
}

/* The library sets no signal dispositions: with SIGPIPE at its default
 * (which kills the process), a write to a pipe nobody reads fails with EPIPE
 * and the process goes on; nothing is left pending, and a SIGPIPE pending
 * from before stays pending. */
static void test_write_nosigpipe(void **state) {
  (void)state;
  signal(SIGPIPE, SIG_DFL);
  int p[2];
  assert_int_equal(pipe(p), 0);
  close(p[0]);
  errno = 0;
  assert_int_equal(kv_write_nosigpipe(p[1], "x", 1), -1);
  assert_int_equal(errno, EPIPE);
  sigset_t pending, pipe_set, old;
  assert_int_equal(sigpending(&pending), 0);
  assert_false(sigismember(&pending, SIGPIPE));
  /* One pending from before (blocked here) is not taken. */
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  raise(SIGPIPE);
  assert_int_equal(kv_write_nosigpipe(p[1], "x", 1), -1);
  assert_int_equal(sigpending(&pending), 0);
  assert_true(sigismember(&pending, SIGPIPE));
  struct timespec zero = {0, 0};
  assert_int_equal(sigtimedwait(&pipe_set, NULL, &zero), SIGPIPE);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  /* A pipe that is read: the bytes arrive. */
  int q[2];
  char b[4] = {0};
  assert_int_equal(pipe(q), 0);
  assert_int_equal(kv_write_nosigpipe(q[1], "abc", 3), 3);
  assert_int_equal(read(q[0], b, 3), 3);
  assert_string_equal(b, "abc");
  close(q[0]);
  close(q[1]);
  close(p[1]);
}

/* kv_write_file from several threads to one path (two equal candidates
 * built and analysed at once): every write succeeds and the file is always
 * one writer's whole content, never a mix, with no temporary left over. */
struct writer {
  const char *path;
  char fill;
  int failed;
};

static void *writer_main(void *arg) {
  struct writer *w = arg;
  char data[64 * 1024], err[256];
  memset(data, w->fill, sizeof data);
  for (int i = 0; i < 200; i++)
    w->failed += kv_write_file(w->path, data, sizeof data, err, sizeof err) != 0;
  return NULL;
}

static void test_write_file_threads(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-wf-XXXXXX", path[64], err[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/f", dir);
  struct writer w[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (struct writer){path, (char)('a' + i), 0};
    assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(w[i].failed, 0);
  }
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(kv_read_file(path, 1 << 20, &text, &len, err, sizeof err), 0);
  assert_int_equal(len, 64 * 1024);
  for (size_t i = 1; i < len; i++)
    assert_int_equal(text[i], text[0]);
  free(text);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));)
    entries += e->d_name[0] != '.';
  closedir(d);
  assert_int_equal(entries, 1);
  kv_rmtree(dir);
}

/* A symbolic link planted at kv_write_file's temporary names (their pid and
 * counter are predictable) must not redirect the write onto its target. */
static void test_write_file_planted_link(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-wfl-XXXXXX", path[64], victim[64], link[128], err[512];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/out", dir);
  snprintf(victim, sizeof victim, "%s/victim", dir);
  assert_int_equal(kv_write_file(victim, "precious", 8, err, sizeof err), 0);
  for (int i = 0; i < 5000; i++) { /* past every name this process used yet */
    snprintf(link, sizeof link, "%s.tmp.%d.%d", path, (int)getpid(), i);
    assert_int_equal(symlink(victim, link), 0);
  }
  int rc = kv_write_file(path, "new", 3, err, sizeof err);
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(kv_read_file(victim, 64, &text, &len, err, sizeof err), 0);
  assert_string_equal(text, "precious"); /* before O_EXCL | O_NOFOLLOW: "new" */
  free(text);
  struct stat st;
  if (rc == 0) { /* past the planted names: written where asked, a file */
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
  } else
    assert_non_null(strstr(err, "cannot create"));
  kv_rmtree(dir);
}

/* A child of kv_run dies with the process that ran it (kevo killed by a
 * Ctrl-C or kill -9), though it sits in a process group of its own. */
static void test_run_child_dies_with_caller(void **state) {
  (void)state;
  char dir[] = "/tmp/kevo-pd-XXXXXX", pidf[64], cmd[160];
  assert_non_null(mkdtemp(dir));
  snprintf(pidf, sizeof pidf, "%s/pid", dir);
  snprintf(cmd, sizeof cmd, "echo $$ > %s.t && mv %s.t %s && exec sleep 30", pidf, pidf, pidf);
  pid_t caller = fork();
  assert_true(caller >= 0);
  if (caller == 0) {
    char *argv[] = {"sh", "-c", cmd, NULL};
    struct kv_buf b;
    kv_buf_init(&b, 1 << 12);
    struct kv_proc_result r;
    char err[256];
    kv_run(argv, NULL, NULL, 60, NULL, NULL, &b, &r, err, sizeof err);
    _exit(0);
  }
  char *text = NULL;
  size_t len = 0;
  char err[256];
  for (int i = 0; i < 500 && kv_read_file(pidf, 64, &text, &len, err, sizeof err) != 0; i++)
    usleep(20000);
  assert_non_null(text);
  pid_t child = (pid_t)atoi(text);
  free(text);
  assert_true(child > 0);
  kill(caller, SIGKILL);
  waitpid(caller, NULL, 0);
  int alive = 1;
  for (int i = 0; i < 250 && alive; i++) { /* at most 5 s */
    alive = kill(child, 0) == 0;
    if (alive)
      usleep(20000);
  }
  if (alive)
    kill(child, SIGKILL);
  kv_rmtree(dir);
  assert_false(alive);
}

/* With no HOME or XDG_CACHE_HOME the cache is under TMPDIR, where another
 * local user may have made the directory first: kevo never uses one that
 * is a link, someone else's, or writable by others. */
static void test_cache_dir_not_squatted(void **state) {
  (void)state;
  char tmp[] = "/tmp/kevo-cd-XXXXXX", want[128], got[256], link[160];
  assert_non_null(mkdtemp(tmp));
  char *home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  char *xdg = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
  char *td = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
  unsetenv("HOME");
  unsetenv("XDG_CACHE_HOME");
  setenv("TMPDIR", tmp, 1);
  snprintf(want, sizeof want, "%s/kevo-cache-%d", tmp, (int)geteuid());
  assert_int_equal(kv_cache_dir(got, sizeof got), 0); /* made, 0700 */
  assert_string_equal(got, want);
  struct stat st;
  assert_int_equal(lstat(want, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0700);
  assert_int_equal(chmod(want, 0777), 0); /* squatted: writable by all */
  assert_int_equal(kv_cache_dir(got, sizeof got), -1);
  assert_int_equal(rmdir(want), 0);
  snprintf(link, sizeof link, "%s/elsewhere", tmp); /* squatted: a link */
  assert_int_equal(mkdir(link, 0700), 0);
  assert_int_equal(symlink(link, want), 0);
  assert_int_equal(kv_cache_dir(got, sizeof got), -1);
  if (home)
    setenv("HOME", home, 1);
  if (xdg)
    setenv("XDG_CACHE_HOME", xdg, 1);
  if (td)
    setenv("TMPDIR", td, 1);
  else
    unsetenv("TMPDIR");
  free(home);
  free(xdg);
  free(td);
  kv_rmtree(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buf_cap),
      cmocka_unit_test(test_sha256),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_run_capture),
      cmocka_unit_test(test_run_deadline_kills_group),
      cmocka_unit_test(test_run_flood_capped),
      cmocka_unit_test(test_run_missing),
      cmocka_unit_test(test_run_child_dies_with_caller),
      cmocka_unit_test(test_cache_dir_not_squatted),
      cmocka_unit_test(test_rmtree_deep),
      cmocka_unit_test(test_rmtree_wide),
      cmocka_unit_test(test_rmtree_symlinks_not_followed),
      cmocka_unit_test(test_rmtree_stops_at_mounts),
      cmocka_unit_test(test_write_nosigpipe),
      cmocka_unit_test(test_write_file_threads),
      cmocka_unit_test(test_write_file_planted_link),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
