#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_buf_cap),
      cmocka_unit_test(test_sha256),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_run_capture),
      cmocka_unit_test(test_run_deadline_kills_group),
      cmocka_unit_test(test_run_flood_capped),
      cmocka_unit_test(test_run_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
