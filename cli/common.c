#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "kevo/store.h"
#include "kevo/util.h"

int cli_calib(struct kv_calib *c, int force, int quiet) {
  char cache[PATH_MAX], path[PATH_MAX + 32], err[512], dev[256];
  if (kv_cache_dir(cache, sizeof cache) < 0)
    return cli_fail("cannot find a cache directory; set KEVO_CACHE_DIR");
  if (kv_mkdirs(cache, 0700, err, sizeof err) < 0)
    return cli_fail("%s", err);
  snprintf(path, sizeof path, "%s/calib-cpu.json", cache);
  kv_calib_cpu_device(dev, sizeof dev);
  if (!force && kv_calib_load(path, dev, c, err, sizeof err) == 0)
    return 0;
  if (!quiet)
    fprintf(stderr, "kevo: measuring this CPU's memory bandwidth and FMA peak (once, ~2 s)...\n");
  if (kv_calib_cpu_measure(c, err, sizeof err) < 0)
    return cli_fail("calibration failed: %s", err);
  if (kv_calib_save(path, c, err, sizeof err) < 0)
    fprintf(stderr, "kevo: warning: %s (the calibration will be measured again next time)\n", err);
  return 0;
}

int cli_open_store(const char *db, struct kv_store **s) {
  char path[PATH_MAX], err[2048];
  if (!db) {
    if (kv_store_default_path(path, sizeof path) != 0)
      return cli_fail("cannot find the store: set KEVO_DB or HOME, or pass --db PATH");
    db = path;
  }
  if (kv_store_open(db, s, err, sizeof err) != 0)
    return cli_fail("%s", err);
  return 0;
}

int cli_open_store_readonly(const char *db, struct kv_store **s) {
  char path[PATH_MAX], err[2048];
  if (!db) {
    if (kv_store_default_path(path, sizeof path) != 0)
      return cli_fail("cannot find the store: set KEVO_DB or HOME, or pass --db PATH");
    db = path;
  }
  if (kv_store_open_readonly(db, s, err, sizeof err) != 0)
    return cli_fail("%s", err);
  return 0;
}
