#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kevo/store.h"
#include "kevo/util.h"

struct cli_env cli_env;

static const char *setting(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

void cli_env_read(void) {
  /* Absolute: workers and compilers start in directories of their own. */
  static char worker[PATH_MAX];
  cli_env.worker = setting("KEVO_WORKER");
  if (cli_env.worker && realpath(cli_env.worker, worker))
    cli_env.worker = worker;
  cli_env.nvcc = setting("KEVO_NVCC");
  cli_env.cuda_arch = setting("KEVO_CUDA_ARCH");
  cli_env.db = setting("KEVO_DB");
  cli_env.cache_dir = setting("KEVO_CACHE_DIR");
}

void cli_gate_opts_default(struct kv_gate_opts *o) {
  kv_gate_opts_default(o);
  o->worker_path = cli_env.worker;
  o->nvcc_path = cli_env.nvcc;
  o->cuda_arch = cli_env.cuda_arch;
  o->cache_dir = cli_env.cache_dir;
}

int cli_cache_dir(char *out, size_t cap) {
  if (!cli_env.cache_dir)
    return kv_cache_dir(out, cap);
  int n = snprintf(out, cap, "%s", cli_env.cache_dir);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int cli_store_path(char *out, size_t cap) {
  if (!cli_env.db)
    return kv_store_default_path(out, cap);
  int n = snprintf(out, cap, "%s", cli_env.db);
  return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int cli_calib(struct kv_calib *c, int force, int quiet) {
  char cache[PATH_MAX], path[PATH_MAX + 32], err[512], dev[256];
  if (cli_cache_dir(cache, sizeof cache) < 0)
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
    if (cli_store_path(path, sizeof path) != 0)
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
    if (cli_store_path(path, sizeof path) != 0)
      return cli_fail("cannot find the store: set KEVO_DB or HOME, or pass --db PATH");
    db = path;
  }
  if (kv_store_open_readonly(db, s, err, sizeof err) != 0)
    return cli_fail("%s", err);
  return 0;
}
