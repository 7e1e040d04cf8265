/* Tests of CPU calibration: a real measurement within sane bounds, and the
 * JSON cache (roundtrip, another device, absent file, corrupt file). */
#include "kevo/calib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

static char dir[64];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/kevo-calib-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/calib.json", dir);
  unlink(path);
  rmdir(dir);
  return 0;
}

static void test_device_string(void **state) {
  (void)state;
  char dev[256];
  kv_calib_cpu_device(dev, sizeof dev);
  assert_true(strncmp(dev, "cpu:", 4) == 0);
  assert_non_null(strstr(dev, " x"));
  char small[8];
  kv_calib_cpu_device(small, sizeof small);
  assert_int_equal(strlen(small), 7);
}

static void test_llc(void **state) {
  (void)state;
  size_t llc = kv_llc_bytes();
  print_message("llc: %zu KiB\n", llc >> 10);
  assert_true(llc >= ((size_t)256 << 10));
  assert_true(llc <= ((size_t)16 << 30));
}

static void test_measure(void **state) {
  (void)state;
  struct kv_calib c;
  char err[256] = "";
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int rc = kv_calib_cpu_measure(&c, err, sizeof err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  if (rc != 0)
    fail_msg("measure: %s", err);
  print_message("calib: device='%s' bandwidth=%.2f GB/s fma=%.1f GFLOP/s llc=%.0f KiB "
                "threads=%d (%.2f s)\n",
                c.device, c.bandwidth_gbs, c.fma_gflops, c.llc_bytes / 1024, c.threads, secs);
  char dev[256];
  kv_calib_cpu_device(dev, sizeof dev);
  assert_string_equal(c.device, dev);
  assert_true(c.bandwidth_gbs >= 1 && c.bandwidth_gbs <= 2000);
  assert_true(c.fma_gflops >= 1 && c.fma_gflops <= 100000);
  assert_true(c.threads >= 1);
  assert_true(c.llc_bytes > 0);
  assert_true(c.measured_unix > 1600000000LL);
}

static void fake(struct kv_calib *c, const char *device) {
  memset(c, 0, sizeof *c);
  snprintf(c->device, sizeof c->device, "%s", device);
  c->bandwidth_gbs = 123.456;
  c->fma_gflops = 7890.125;
  c->llc_bytes = 32.0 * 1024 * 1024;
  c->threads = 48;
  c->measured_unix = 1700000000LL;
}

static void test_cache_roundtrip(void **state) {
  (void)state;
  char path[128], err[256] = "";
  snprintf(path, sizeof path, "%s/calib.json", dir);
  struct kv_calib c, back;
  fake(&c, "cpu:Test CPU \"quoted\" x48");
  assert_int_equal(kv_calib_save(path, &c, err, sizeof err), 0);
  memset(&back, 0, sizeof back);
  assert_int_equal(kv_calib_load(path, c.device, &back, err, sizeof err), 0);
  assert_string_equal(back.device, c.device);
  assert_true(back.bandwidth_gbs == c.bandwidth_gbs);
  assert_true(back.fma_gflops == c.fma_gflops);
  assert_true(back.llc_bytes == c.llc_bytes);
  assert_int_equal(back.threads, 48);
  assert_true(back.measured_unix == c.measured_unix);

  /* Another device: -1, no message, output untouched. */
  err[0] = 0;
  memset(&back, 0x5a, sizeof back);
  assert_int_equal(kv_calib_load(path, "cpu:Other CPU x48", &back, err, sizeof err), -1);
  assert_string_equal(err, "");
  assert_int_equal((unsigned char)back.device[0], 0x5a);
  /* The same model with another thread count is another device too. */
  assert_int_equal(kv_calib_load(path, "cpu:Test CPU \"quoted\" x2", &back, err, sizeof err), -1);

  /* Overwrite: the newest save wins. */
  c.bandwidth_gbs = 99;
  assert_int_equal(kv_calib_save(path, &c, err, sizeof err), 0);
  assert_int_equal(kv_calib_load(path, c.device, &back, err, sizeof err), 0);
  assert_true(back.bandwidth_gbs == 99);
}

static void test_cache_absent_and_corrupt(void **state) {
  (void)state;
  char path[128], err[256] = "";
  snprintf(path, sizeof path, "%s/calib.json", dir);
  struct kv_calib back;
  assert_int_equal(kv_calib_load(path, "cpu:x x1", &back, err, sizeof err), -1);
  assert_string_equal(err, "");

  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"device\": \"cpu:x x1\", \"bandwidth_gbs\": ", f);
  fclose(f);
  assert_int_equal(kv_calib_load(path, "cpu:x x1", &back, err, sizeof err), -2);
  assert_true(strlen(err) > 0);

  f = fopen(path, "w");
  fputs("{\"device\": \"cpu:x x1\", \"bandwidth_gbs\": -5, \"fma_gflops\": 1, "
        "\"llc_bytes\": 1, \"threads\": 1, \"measured_unix\": 1}",
        f);
  fclose(f);
  err[0] = 0;
  assert_int_equal(kv_calib_load(path, "cpu:x x1", &back, err, sizeof err), -2);
  assert_non_null(strstr(err, "range"));

  /* Saving into a directory that does not exist fails with a message. */
  struct kv_calib c;
  fake(&c, "cpu:x x1");
  err[0] = 0;
  assert_true(kv_calib_save("/nonexistent-kevo-dir/calib.json", &c, err, sizeof err) < 0);
  assert_true(strlen(err) > 0);
}

/* A sysfs-like tree under `dir`: one cache entry per call. */
static void cache_entry(const char *root, int cpu, int idx, const char *level, const char *type,
                        const char *shared, const char *size) {
  char path[512];
  snprintf(path, sizeof path, "mkdir -p %s/cpu%d/cache/index%d", root, cpu, idx);
  assert_int_equal(system(path), 0);
  const char *names[] = {"level", "type", "shared_cpu_list", "size"};
  const char *vals[] = {level, type, shared, size};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s/cpu%d/cache/index%d/%s", root, cpu, idx, names[i]);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", vals[i]);
    fclose(f);
  }
}

/* Two CPUs sharing one 8 MiB L3, each with its own L1 and L2; then one field
 * at a time made malformed: the entry is skipped, never read as a prefix
 * (issue 17: atoi("4x") was level 4 and "16MB" was 16 MiB). */
static void test_llc_from_sysfs_fields(void **state) {
  (void)state;
  char root[64], cmd[128];
  snprintf(root, sizeof root, "/tmp/kevo-sysfs-XXXXXX");
  assert_non_null(mkdtemp(root));
  for (int cpu = 0; cpu < 2; cpu++) {
    char own[8];
    snprintf(own, sizeof own, "%d", cpu);
    cache_entry(root, cpu, 0, "1", "Data", own, "32K");
    cache_entry(root, cpu, 1, "1", "Instruction", own, "32K");
    cache_entry(root, cpu, 2, "2", "Unified", own, "1024K");
    cache_entry(root, cpu, 3, "3", "Unified", "0-1", "8M");
  }
  assert_int_equal(kv_llc_bytes_from(root, 2), (size_t)8 << 20);
  /* A level that is not a number: "4x" is no level 4 of 64 MiB. */
  cache_entry(root, 0, 4, "4x", "Unified", "0", "64M");
  assert_int_equal(kv_llc_bytes_from(root, 2), (size_t)8 << 20);
  /* A size with junk after its suffix: the L3 is unknown, the L2s count. */
  cache_entry(root, 0, 3, "3", "Unified", "0-1", "16MB");
  cache_entry(root, 1, 3, "3", "Unified", "0-1", "16MB");
  assert_int_equal(kv_llc_bytes_from(root, 2), (size_t)2 << 20);
  /* A sharing list that is not one: that entry is skipped too. */
  cache_entry(root, 0, 3, "3", "Unified", "x", "8M");
  cache_entry(root, 1, 3, "3", "Unified", "x", "8M");
  assert_int_equal(kv_llc_bytes_from(root, 2), (size_t)2 << 20);
  /* A size that overflows, a negative one. */
  cache_entry(root, 0, 2, "2", "Unified", "0", "99999999999999999999K");
  cache_entry(root, 1, 2, "2", "Unified", "1", "-1K");
  assert_int_equal(kv_llc_bytes_from(root, 2), (size_t)64 << 10); /* the L1s */
  assert_int_equal(kv_llc_bytes_from("/nonexistent", 2), (size_t)0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", root);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_device_string),
      cmocka_unit_test(test_llc),
      cmocka_unit_test(test_llc_from_sysfs_fields),
      cmocka_unit_test(test_measure),
      cmocka_unit_test_setup_teardown(test_cache_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cache_absent_and_corrupt, setup, teardown),
  };
  return cmocka_run_group_tests_name("calib", tests, NULL, NULL);
}
