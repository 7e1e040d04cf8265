/* The torch surface's entries in the table of surfaces (surface.c,
 * docs/torch-surface.md): its device, its check that it can run, its
 * "build" (the candidate's text into the object cache) and its policy; and
 * the task's reference.py. Below surface.c and torchcand.c (the workers'
 * LOADs), using neither (issue 33: no circle among lib/gate's files). */
#include "torchbuild.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

int kv_torch_surface_reference(const struct kv_task *t, char *path, size_t cap) {
  char p[PATH_MAX + 32], abs[PATH_MAX];
  snprintf(p, sizeof p, "%s/reference.py", t->dir && *t->dir ? t->dir : ".");
  if (!kv_path_exists(p) || !realpath(p, abs))
    return 0;
  snprintf(path, cap, "%s", abs);
  return 1;
}

const char *kv_torch_device(void) {
  const char *d = getenv("KEVO_TORCH_DEVICE");
  return d && !strcmp(d, "cuda") ? "cuda" : "cpu";
}

int kv_torch_prepare(const struct kv_gate_opts *o, char *desc, size_t cap, char *err,
                     size_t errlen) {
  const char *d = getenv("KEVO_TORCH_DEVICE");
  if (d && *d && strcmp(d, "cpu") && strcmp(d, "cuda"))
    return kv_error(err, errlen, "KEVO_TORCH_DEVICE=%s: use cpu (the default) or cuda", d);
  /* The GPU: checks only, until its timed calls run on device buffers a
   * clean worker owns (CUDA IPC, issue 28; kevo_torch_cand.py's
   * gpu_time_hook). */
  if (!strcmp(kv_torch_device(), "cuda") && o && o->timing)
    return kv_error(err, errlen,
                    "KEVO_TORCH_DEVICE=cuda: the torch surface checks on the GPU but does not "
                    "time there yet (its timed calls need device buffers a clean worker owns, "
                    "issue 28); pass --no-timing, or time on the CPU");
  /* Python, the workers and the generator are found with the task
   * (kv_torch_worker_paths), which names what is missing. */
  snprintf(desc, cap, "%s with torch on the %s", kv_python(), kv_torch_device());
  return 0;
}

/* The candidate's text in the object cache as <key>.py (recorded and
 * re-hashed when used, as every object is): the worker is granted that one
 * file, never the cache's directory. Nothing is compiled here: Python
 * compiles it in the worker, whose LOAD is timed apart (jit_s). */
int kv_build_torch(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                   const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                   size_t errlen) {
  (void)t;
  (void)o;
  (void)deadline_s;
  double t0 = kv_now_s();
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(src, KV_SOURCE_MAX, &text, &len, err, errlen) < 0)
    return -1;
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, "kevo-torch-v1", 14);
  kv_sha256_update(h, text, len);
  kv_sha256_final(h, b->key);
  char objdir[3100], tmp[PATH_MAX];
  if (kv_obj_dir(cache_dir, objdir, sizeof objdir, err, errlen) < 0) {
    free(text);
    return -1;
  }
  snprintf(b->so_path, sizeof b->so_path, "%s/%s.py", objdir, b->key);
  static const char *const sfx[] = {".py", NULL};
  int rc = 0;
  if (kv_obj_lookup(objdir, b->key, sfx) == KV_OBJ_OK) {
    b->cached = 1;
  } else {
    snprintf(tmp, sizeof tmp, "%s/%s.py.tmp%d", objdir, b->key, (int)getpid());
    if (kv_write_file(tmp, text, len, err, errlen) < 0)
      rc = -1;
    else if (rename(tmp, b->so_path) < 0)
      rc = kv_error(err, errlen, "%s: cannot store the candidate: %s", b->so_path, strerror(errno));
    else
      rc = kv_obj_record(objdir, b->key, 1, sfx, err, errlen);
    if (rc < 0)
      unlink(tmp);
  }
  free(text);
  b->ok = rc == 0;
  b->log = strdup("");
  b->seconds = kv_now_s() - t0;
  return rc;
}

int kv_torch_policy(const struct kv_build *b, const struct kv_task *t, char *out, size_t cap,
                    char *err, size_t errlen) {
  /* strict/fusion (issue 29 item 3) are to come: every ModelNew passes. */
  (void)b;
  (void)t;
  (void)err;
  (void)errlen;
  if (cap)
    out[0] = 0;
  return 0;
}
