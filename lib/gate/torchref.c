/* Tasks whose reference is reference.py (kevo import): the reference worker
 * is python/kevo_torch_worker.py, run by $KEVO_PYTHON (else python3), with
 * kevo's generator from libkevo_pyrt.so. Nothing is compiled for it: LOAD
 * names reference.py itself. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int kv_torch_reference(const struct kv_task *t, char *path, size_t cap) {
  const char *dir = t->dir && *t->dir ? t->dir : ".";
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/reference.c", dir);
  if (kv_path_exists(p))
    return 0;
  snprintf(p, sizeof p, "%s/reference.py", dir);
  if (!kv_path_exists(p))
    return 0;
  /* Absolute: the worker runs in its own scratch directory. */
  char abs[PATH_MAX];
  if (!realpath(p, abs))
    return 0;
  snprintf(path, cap, "%s", abs);
  return 1;
}

/* python3 on $PATH, as an absolute path (the worker's own PATH is minimal). */
static int which(const char *name, char *out, size_t cap) {
  if (strchr(name, '/')) {
    snprintf(out, cap, "%s", name);
    return access(name, X_OK) == 0;
  }
  const char *path = getenv("PATH");
  char buf[8192];
  snprintf(buf, sizeof buf, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  char *save = NULL;
  for (char *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s", *d ? d : ".", name);
    if (access(p, X_OK) == 0) {
      snprintf(out, cap, "%s", p);
      return 1;
    }
  }
  return 0;
}

int kv_torch_worker_paths(const char *worker_path, struct kv_torch_paths *tp, char *err,
                          size_t errlen) {
  memset(tp, 0, sizeof *tp);
  const char *py = kv_python();
  if (!which(py, tp->python, sizeof tp->python))
    return kv_error(err, errlen,
                    "%s: cannot run it; the torch reference worker needs Python 3 with torch "
                    "(set KEVO_PYTHON)",
                    py);
  /* Beside kevo-worker (the build directory, or where kevo is installed),
   * beside this executable, else the source tree. */
  char wdir[PATH_MAX];
  snprintf(wdir, sizeof wdir, "%s", worker_path);
  char *slash = strrchr(wdir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(wdir, sizeof wdir, ".");
  const char *e = getenv("KEVO_TORCH_WORKER");
  if (e && *e)
    snprintf(tp->script, sizeof tp->script, "%s", e);
  else if (kv_find_shipped("kevo_torch_worker.py", wdir, 1, tp->script, sizeof tp->script) < 0)
    return kv_error(err, errlen,
                    "kevo_torch_worker.py: not found beside %s nor in the source tree; rebuild "
                    "kevo or set KEVO_TORCH_WORKER",
                    worker_path);
  /* The torch surface's candidate worker, beside it (torchcand.c needs it). */
  const char *c = getenv("KEVO_TORCH_CAND");
  if (c && *c)
    snprintf(tp->cand, sizeof tp->cand, "%s", c);
  else if (kv_find_shipped("kevo_torch_cand.py", wdir, 1, tp->cand, sizeof tp->cand) < 0)
    tp->cand[0] = 0;
  if (kv_find_shipped("libkevo_pyrt.so", wdir, 0, tp->rtlib, sizeof tp->rtlib) < 0)
    return kv_error(err, errlen,
                    "libkevo_pyrt.so: not found beside %s; rebuild kevo (it is built beside "
                    "kevo-worker)",
                    worker_path);
  return 0;
}

/* One of torch's code caches under kevo's cache (torchinductor/, triton/):
 * made 0700 when absent, then it must be a directory (not a link) of this
 * user that no one else can write: torch loads and runs what it finds there. */
static int trusted_dir(const char *cache, const char *name, char *err, size_t errlen) {
  char d[PATH_MAX];
  if (snprintf(d, sizeof d, "%s/%s", cache, name) >= (int)sizeof d)
    return kv_error(err, errlen, "%s: the cache directory's path is too long", cache);
  if (mkdir(d, 0700) != 0 && errno != EEXIST)
    return kv_error(err, errlen, "%s: cannot create it: %s (check KEVO_CACHE_DIR)", d,
                    strerror(errno));
  struct stat st;
  if (lstat(d, &st) != 0)
    return kv_error(err, errlen, "%s: %s", d, strerror(errno));
  /* One of ours that only we could ever write (an earlier kevo's, made
   * 0755 by torch): closed to others, not refused. */
  if (S_ISDIR(st.st_mode) && st.st_uid == geteuid() && !(st.st_mode & 022) && (st.st_mode & 077) &&
      chmod(d, 0700) == 0)
    st.st_mode &= ~(mode_t)077;
  const char *why = S_ISLNK(st.st_mode)      ? "a symbolic link"
                    : !S_ISDIR(st.st_mode)   ? "not a directory"
                    : st.st_uid != geteuid() ? "owned by another user"
                    : (st.st_mode & 077)     ? "writable by others (mode not 0700)"
                                             : NULL;
  if (why)
    return kv_error(err, errlen,
                    "%s: %s; torch runs the code it finds there, so kevo uses it only when it "
                    "is a directory of yours with mode 0700: remove it (rm -rf %s) and kevo "
                    "makes a fresh one",
                    d, why, d);
  return 0;
}

int kv_torch_cache_check(const char *cache, char *err, size_t errlen) {
  if (!cache || !*cache)
    return 0;
  if (trusted_dir(cache, "torchinductor", err, errlen) < 0)
    return -1;
  return trusted_dir(cache, "triton", err, errlen);
}
