/* The kernel-only contract's compiler (nvrtc.h): the launch lines are parsed
 * and checked against the task here (a bad line is a compile error naming
 * the line and the field), the kernels compiled by NVRTC in kevo-nvrtc (a
 * child that sandboxes itself: reads only system directories and the
 * toolkit's, writes only its build directory, no exec, no network) under the
 * compile deadline with a capped log, and the result stored as a bundle the
 * worker loads: "KEVOKRN1\n", one line of JSON (each launch with its kernel's
 * lowered name) and the cubin. */
#include "nvrtc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cudakit.h"
#include "kevo/launch.h"

#define KV_CUBIN_MAX ((size_t)64 << 20)

static int find_in(const char *dir, char *out, size_t cap) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/libnvrtc.so", dir);
  if (access(p, R_OK) == 0 && realpath(p, out))
    return 0;
  /* A versioned name only (libnvrtc.so.13), not the builtins. */
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  struct dirent *e;
  int found = -1;
  while ((e = readdir(d)) != NULL && found < 0)
    if (!strncmp(e->d_name, "libnvrtc.so.", 12)) {
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      if (realpath(p, out))
        found = 0;
    }
  closedir(d);
  (void)cap;
  return found;
}

int kv_nvrtc_lib(const struct kv_gate_opts *o, char *path, size_t cap) {
  const char *e = getenv("KEVO_NVRTC");
  path[0] = 0;
  if (e && *e) {
    char real[PATH_MAX];
    if (access(e, R_OK) != 0 || !realpath(e, real))
      return -1;
    snprintf(path, cap, "%s", real);
    return 0;
  }
  char dir[PATH_MAX];
  const char *nv = kv_nvcc_path(o);
  if (nv[0]) {
    snprintf(dir, sizeof dir, "%s", nv);
    char *sl = strrchr(dir, '/');
    if (sl) {
      *sl = 0;
      char d2[PATH_MAX + 16];
      snprintf(d2, sizeof d2, "%s/../lib64", dir);
      if (find_in(d2, path, cap) == 0)
        return 0;
      snprintf(d2, sizeof d2, "%s/../lib", dir);
      if (find_in(d2, path, cap) == 0)
        return 0;
    }
  }
  if (find_in("/usr/local/cuda/lib64", path, cap) == 0)
    return 0;
  path[0] = 0;
  return -1;
}

int kv_nvrtc_helper(const struct kv_gate_opts *o, char *out, size_t cap) {
  return kv_helper_path("kevo-nvrtc", "KEVO_NVRTC_HELPER", o ? o->worker_path : NULL, out, cap);
}

int kv_cuda_is_kernel_only(const struct kv_task *t, const char *text, size_t len) {
  if (!memmem(text, len, "kevo:launch", 11))
    return 0;
  return !kv_launch_has_entry(t, text, len);
}

/* The bundle's JSON line: each launch with its lowered name. */
static char *plan_json(const struct kv_task *t, const struct kv_launch_plan *p, char **lowered,
                       size_t cubin_len) {
  json_t *ls = json_array();
  for (int i = 0; i < p->n; i++) {
    const struct kv_launch *l = &p->l[i];
    json_t *g = json_array(), *b = json_array(), *a = json_array();
    for (int k = 0; k < l->ngrid; k++)
      json_array_append_new(g, json_string(l->grid[k]));
    for (int k = 0; k < l->nblock; k++)
      json_array_append_new(b, json_string(l->block[k]));
    for (int k = 0; k < l->nargs; k++)
      json_array_append_new(a, json_integer(l->args[k]));
    json_array_append_new(ls, json_pack("{s:i,s:s,s:s,s:o,s:o,s:s,s:o}", "line", l->line, "kernel",
                                        l->kernel, "name", lowered[i], "grid", g, "block", b,
                                        "smem", l->smem, "args", a));
  }
  json_t *j = json_pack("{s:i,s:s,s:I,s:o}", "v", 1, "task", t->name ? t->name : "", "cubin_bytes",
                        (json_int_t)cubin_len, "launch", ls);
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  return s;
}

static void lib_identity(const char *lib, char *out, size_t cap) {
  struct stat st;
  if (stat(lib, &st) == 0)
    snprintf(out, cap, "%s %lld %lld", lib, (long long)st.st_size, (long long)st.st_mtime);
  else
    snprintf(out, cap, "%s", lib);
}

/* The object cache's files of a kernel-only build: accepted, or refused. */
static const char *const sfx_ok[] = {".kvk", ".cubin", ".log", NULL};
static const char *const sfx_fail[] = {".log", NULL};

/* One NVRTC build: what kv_build_cuda_kernels's stages share. */
struct nvrtc_job {
  const struct kv_task *t;
  const struct kv_launch_plan *plan;
  int n; /* launch lines */
  char lib[PATH_MAX], helper[PATH_MAX], arch[32], aopt[64], inc[PATH_MAX + 8];
  const char *opts[5];
  char objdir[3100], logp[PATH_MAX], dir[PATH_MAX];
};

/* NVRTC, kevo-nvrtc, the architecture and the options, the build's key and
 * where it is cached. 0, or -1 with err. */
static int nvrtc_setup(struct nvrtc_job *j, const struct kv_gate_opts *o, const char *src,
                       const char *cache_dir, const char *text, size_t len, struct kv_build *b,
                       char *err, size_t errlen) {
  if (kv_nvrtc_lib(o, j->lib, sizeof j->lib) < 0)
    return kv_error(err, errlen,
                    "%s: a kernel-only candidate needs NVRTC (libnvrtc.so from the CUDA toolkit); "
                    "install the toolkit or set KEVO_NVRTC to libnvrtc.so's path",
                    src);
  if (kv_nvrtc_helper(o, j->helper, sizeof j->helper) != 0)
    return kv_error(err, errlen,
                    "%s: kevo-nvrtc not found; build it beside kevo-worker or set "
                    "KEVO_NVRTC_HELPER",
                    j->helper);
  if (kv_cuda_arch(o, j->arch, sizeof j->arch, err, errlen) < 0)
    return -1;
  snprintf(j->aopt, sizeof j->aopt, "--gpu-architecture=%s", j->arch);
  char d[PATH_MAX], libid[PATH_MAX + 64];
  snprintf(d, sizeof d, "%s", j->lib);
  char *sl = strrchr(d, '/');
  if (sl)
    *sl = 0;
  snprintf(j->inc, sizeof j->inc, "-I%s/../include", d);
  lib_identity(j->lib, libid, sizeof libid);
  const char *opts[] = {j->aopt, "-std=c++17", "--ptxas-options=-v", "-DKEVO_KERNEL_ONLY=1",
                        j->inc};
  memcpy(j->opts, opts, sizeof j->opts);
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, "kevo-nvrtc-v1", 14);
  kv_sha256_update(h, libid, strlen(libid) + 1);
  for (size_t i = 0; i < KV_ARRAY_LEN(j->opts); i++)
    kv_sha256_update(h, j->opts[i], strlen(j->opts[i]) + 1);
  kv_sha256_update(h, j->t->json ? j->t->json : "", j->t->json ? strlen(j->t->json) + 1 : 1);
  kv_sha256_update(h, text, len);
  kv_sha256_final(h, b->key);
  if (kv_obj_dir(cache_dir, j->objdir, sizeof j->objdir, err, errlen) < 0)
    return -1;
  snprintf(b->so_path, sizeof b->so_path, "%s/%s.kvk", j->objdir, b->key);
  snprintf(b->obj_path, sizeof b->obj_path, "%s/%s.cubin", j->objdir, b->key);
  snprintf(j->logp, sizeof j->logp, "%s/%s.log", j->objdir, b->key);
  return 0;
}

/* The name expressions, one a line, each distinct one once (malloc'd). */
static char *distinct_names(const struct kv_launch_plan *plan, int n) {
  struct kv_buf nb;
  kv_buf_init(&nb, 64 * 1024);
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int k = 0; k < i; k++)
      dup |= !strcmp(plan->l[k].kernel, plan->l[i].kernel);
    if (!dup)
      kv_buf_appendf(&nb, "%s\n", plan->l[i].kernel);
  }
  return kv_buf_detach(&nb);
}

/* kevo-nvrtc on the build directory (it sandboxes itself first thing,
 * seccomp included, which a setup here could not apply before its exec),
 * under the compile caps and deadline; its output appended to log. 0, or
 * -1 with err. */
static int nvrtc_run(const struct nvrtc_job *j, const char *f_names, double deadline_s,
                     struct kv_compile_caps *caps, struct kv_buf *log, struct kv_proc_result *pr,
                     char *err, size_t errlen) {
  char *argv[16];
  int a = 0;
  argv[a++] = (char *)j->helper;
  argv[a++] = (char *)j->lib;
  argv[a++] = (char *)j->dir;
  argv[a++] = (char *)f_names;
  for (size_t i = 0; i < KV_ARRAY_LEN(j->opts); i++)
    argv[a++] = (char *)j->opts[i];
  argv[a] = NULL;
  char env_tmp[PATH_MAX + 16], env_home[PATH_MAX + 16];
  snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", j->dir);
  snprintf(env_home, sizeof env_home, "HOME=%s", j->dir);
  char *envp[] = {"PATH=/usr/bin:/bin", "LANG=C", env_tmp, env_home,
#ifdef KEVO_SANITIZED
                  /* LeakSanitizer cannot stop the world under seccomp */
                  "ASAN_OPTIONS=detect_leaks=0",
#endif
                  NULL};
  kv_buf_appendf(log, "kevo: kernel-only candidate (%d launch line%s, no %s entry): NVRTC for %s\n",
                 j->n, j->n == 1 ? "" : "s", j->t->entry, j->arch);
  kv_compile_caps_get(caps);
  return kv_run(argv, envp, j->dir, deadline_s, kv_compile_caps_apply, caps, log, pr, err, errlen);
}

/* Each launch's lowered name (pointers into lowered_txt, which is cut into
 * lines), by its name expression's position. 0, or -1 when kevo-nvrtc gave
 * fewer names than kernels. */
static int lower_names(const struct kv_launch_plan *plan, int n, char *lowered_txt,
                       char **lowered) {
  char *lines[KV_LAUNCH_MAX];
  int nl = 0, u = 0;
  for (char *p = lowered_txt, *e; p && *p && nl < KV_LAUNCH_MAX; p = e) {
    e = strchr(p, '\n');
    if (e)
      *e++ = 0;
    lines[nl++] = p;
  }
  for (int i = 0; i < n; i++) {
    int first = i;
    for (int k = 0; k < i; k++)
      if (!strcmp(plan->l[k].kernel, plan->l[i].kernel)) {
        first = k;
        break;
      }
    if (first != i)
      lowered[i] = lowered[first];
    else if (u < nl)
      lowered[i] = lines[u++];
    else
      return -1;
  }
  return 0;
}

/* The bundle ("KEVOKRN1\n", the plan's JSON line, the cubin) and the cubin
 * renamed into the cache and recorded. 0, or -1 with err. */
static int nvrtc_store(const struct nvrtc_job *j, const char *json, const char *cubin, size_t clen,
                       const char *f_cubin, struct kv_build *b, char *err, size_t errlen) {
  struct kv_buf bundle;
  size_t jl = strlen(json);
  kv_buf_init(&bundle, clen + jl + 64);
  kv_buf_appendf(&bundle, "KEVOKRN1\n%s\n", json);
  kv_buf_append(&bundle, cubin, clen);
  char tmpb[PATH_MAX + 16];
  snprintf(tmpb, sizeof tmpb, "%s/out.kvk", j->dir);
  int rc;
  if (bundle.truncated || kv_write_file(tmpb, bundle.data, bundle.len, err, errlen) < 0 ||
      rename(f_cubin, b->obj_path) < 0 || rename(tmpb, b->so_path) < 0) {
    if (!err[0] || bundle.truncated)
      kv_error(err, errlen, "%s: cannot store the build: %s", b->so_path, strerror(errno));
    rc = -1;
  } else {
    b->ok = 1;
    rc = kv_obj_record(j->objdir, b->key, 1, sfx_ok, err, errlen);
  }
  kv_buf_release(&bundle);
  return rc;
}

/* A cache miss: NVRTC in a fresh build directory, its log into b->log and
 * the cache, the bundle stored when it compiled; a compile error (not a
 * cap or the deadline, which are not the source's) recorded as one. 0, or
 * -1 with err. */
static int nvrtc_compile(struct nvrtc_job *j, const char *cache_dir, const char *text, size_t len,
                         double deadline_s, struct kv_build *b, char *err, size_t errlen) {
  if (kv_mkdtemp(cache_dir, "nvrtc", j->dir, sizeof j->dir, err, errlen) < 0)
    return -1;
  char *names = distinct_names(j->plan, j->n), *cubin = NULL, *lowered_txt = NULL, *json = NULL;
  char *lowered[KV_LAUNCH_MAX] = {0};
  char f_src[PATH_MAX + 32], f_names[PATH_MAX + 32], f_cubin[PATH_MAX + 32], f_low[PATH_MAX + 32];
  snprintf(f_src, sizeof f_src, "%s/candidate.cu", j->dir);
  snprintf(f_names, sizeof f_names, "%s/names.txt", j->dir);
  snprintf(f_cubin, sizeof f_cubin, "%s/out.cubin", j->dir);
  snprintf(f_low, sizeof f_low, "%s/lowered.txt", j->dir);
  struct kv_buf log;
  kv_buf_init(&log, KV_LOG_CAP);
  struct kv_proc_result pr;
  struct kv_compile_caps caps;
  size_t clen = 0, llen = 0;
  int rc = -1;
  if (kv_write_file(f_src, text, len, err, errlen) < 0 ||
      kv_write_file(f_names, names ? names : "", names ? strlen(names) : 0, err, errlen) < 0 ||
      nvrtc_run(j, f_names, deadline_s, &caps, &log, &pr, err, errlen) < 0)
    goto out;
  int capped = !pr.timed_out && kv_compile_caps_explain(&caps, "NVRTC", &pr, &log);
  if (!capped && pr.exited && pr.status != 0 && pr.status != 1) {
    kv_error(err, errlen, "%s could not run NVRTC (exit status %d): %.1500s", j->helper, pr.status,
             log.data ? log.data : "");
    goto out;
  }
  /* A cap or the deadline is not a property of the source alone: not cached. */
  int killed = pr.timed_out || pr.signaled || capped;
  if (pr.timed_out)
    kv_compile_deadline_explain("NVRTC", deadline_s, &log);
  else if (!capped && pr.signaled)
    kv_buf_appendf(&log, "\nkevo: NVRTC was killed by signal %d\n", pr.sig);
  int ok = pr.exited && pr.status == 0;
  if (ok && (kv_read_file(f_cubin, KV_CUBIN_MAX, &cubin, &clen, err, errlen) < 0 ||
             kv_read_file(f_low, KV_SOURCE_MAX, &lowered_txt, &llen, err, errlen) < 0))
    goto out;
  if (ok && lower_names(j->plan, j->n, lowered_txt, lowered) < 0) {
    kv_error(err, errlen, "kevo-nvrtc gave fewer lowered names than kernels");
    goto out;
  }
  if (ok)
    json = plan_json(j->t, j->plan, lowered, clen);
  if (log.truncated)
    kv_buf_appendf(&log, "\n[log truncated]\n");
  b->log = kv_buf_detach(&log);
  kv_write_file(j->logp, b->log, strlen(b->log), NULL, 0);
  rc = 0;
  if (ok && json)
    rc = nvrtc_store(j, json, cubin, clen, f_cubin, b, err, errlen);
  else if (!killed) /* a compile error is a property of the source */
    kv_obj_record(j->objdir, b->key, 0, sfx_fail, NULL, 0);
out:
  kv_buf_release(&log);
  kv_rmtree(j->dir);
  free(names);
  free(cubin);
  free(lowered_txt);
  free(json);
  return rc;
}

int kv_build_cuda_kernels(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                          const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                          size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(src, KV_SOURCE_MAX, &text, &len, err, errlen) < 0)
    return -1;
  if (!kv_cuda_is_kernel_only(t, text, len)) {
    free(text);
    return 1;
  }
  memset(b, 0, sizeof(*b));
  b->kernel_only = 1;
  double t0 = kv_now_s();
  char why[512];
  if (kv_source_files_check(text, len, why, sizeof why)) {
    free(text);
    kv_source_files_refusal(why, &b->log);
    b->seconds = kv_now_s() - t0;
    return 0;
  }
  int rc = 0;
  struct kv_launch_plan *plan = calloc(1, sizeof *plan);
  struct nvrtc_job *j = calloc(1, sizeof *j);
  if (!plan || !j) {
    free(text);
    free(plan);
    free(j);
    return kv_error(err, errlen, "out of memory");
  }
  /* The launch lines: a bad one is the candidate's compile error. */
  char perr[1024];
  int n = kv_launch_parse(t, text, len, "candidate.cu", plan, perr, sizeof perr);
  j->t = t;
  j->plan = plan;
  j->n = n;
  if (n <= 0) {
    b->ok = 0;
    if (asprintf(&b->log,
                 "%s\nkevo: a kernel-only candidate (launch lines, no %s entry) is compiled by "
                 "NVRTC; see `// kevo:launch KERNEL grid=(...) block=(...) smem=EXPR args=(...)` "
                 "in docs/cuda.md\n",
                 n < 0 ? perr : "candidate.cu: no launch line", t->entry) < 0)
      b->log = NULL;
  } else if (nvrtc_setup(j, o, src, cache_dir, text, len, b, err, errlen) < 0) {
    rc = -1;
  } else {
    int lock = kv_obj_lock(j->objdir, b->key, deadline_s); /* kv_obj_lock: why */
    int hit = kv_obj_lookup(j->objdir, b->key, sfx_ok);
    if (hit != KV_OBJ_MISS) {
      b->ok = hit == KV_OBJ_OK;
      b->cached = 1;
      size_t ll;
      if (kv_read_file(j->logp, KV_LOG_CAP + 1, &b->log, &ll, NULL, 0) < 0)
        b->log = strdup("");
    } else {
      rc = nvrtc_compile(j, cache_dir, text, len, deadline_s, b, err, errlen);
    }
    kv_obj_unlock(lock);
  }
  if (b->log)
    b->nkernels = kv_parse_ptxas(b->log, b->kernels, KV_MAX_KERNELS);
  free(text);
  free(plan);
  free(j);
  b->seconds = kv_now_s() - t0;
  return rc;
}

/* What device code of a kernel-only candidate may call: the device
 * runtime's printf, heap and assert (as a host-entry candidate's kernels
 * may; their output is captured and capped the same way). */
static const char *const device_ok[] = {"vprintf", "malloc", "free", "__assertfail"};

static void kscan_one(void *ud, const char *name) {
  for (size_t i = 0; i < KV_ARRAY_LEN(device_ok); i++)
    if (!strcmp(name, device_ok[i]))
      return;
  const char *why = !strncmp(name, "cuda", 4) || !strncmp(name, "__cuda", 6)
                        ? "the device runtime (dynamic parallelism): a kernel-only candidate "
                          "launches nothing itself; add a launch line"
                        : "not defined in the candidate: kernel-only candidates are linked with "
                          "nothing (device code may call printf, malloc, free and assert)";
  kv_policy_add(ud, "%.120s (%s)", name, why);
}

int kv_policy_check_nvrtc(const char *cubin_path, char *out, size_t cap, char *err, size_t errlen) {
  out[0] = 0;
  struct kv_policy_list l = {out, cap, 0, 0};
  if (kv_undefined_symbols(cubin_path, NULL, kscan_one, &l, err, errlen) < 0)
    return -1;
  return l.n;
}
