/* The CPU surface's compiler: cc with OpenMP, the generated prototype
 * force-included, the call shim linked in, sandboxed, under a deadline,
 * cached by a hash of everything that determines the output. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static const char *cc_flags[] = {"-std=gnu11", "-O3",   "-march=native",
                                 "-fopenmp",   "-fPIC", "-shared"};

const char *kv_cc_version(void) {
  static char ver[256];
  if (ver[0])
    return ver;
  struct kv_buf out;
  kv_buf_init(&out, 4096);
  struct kv_proc_result r;
  char *argv[] = {"cc", "--version", NULL};
  char err[256];
  if (kv_run(argv, NULL, NULL, 10, NULL, NULL, &out, &r, err, sizeof err) == 0 && r.exited &&
      r.status == 0 && out.data) {
    char *nl = strchr(out.data, '\n');
    if (nl)
      *nl = 0;
    snprintf(ver, sizeof ver, "%s", out.data);
  }
  kv_buf_release(&out);
  return ver;
}

static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "model name", 10)) {
      char *c = strchr(line, ':');
      if (c) {
        c++;
        while (*c == ' ')
          c++;
        c[strcspn(c, "\n")] = 0;
        snprintf(out, cap, "%s", c);
      }
      break;
    }
  }
  fclose(f);
}

int kv_helper_path(const char *name, const char *env, const char *worker_path, char *out,
                   size_t cap) {
  const char *e = getenv(env);
  if (e && *e) {
    snprintf(out, cap, "%s", e);
    return access(out, X_OK);
  }
  const char *w = worker_path;
  if (w && *w && strrchr(w, '/')) {
    char found[PATH_MAX];
    snprintf(out, cap, "%.*s/%s", (int)(strrchr(w, '/') - w), w, name);
    /* Absolute: the helper runs in a directory of its own, where a path
     * relative to ours (KEVO_WORKER=build/kevo-worker) names nothing. */
    if (access(out, X_OK) == 0 && realpath(out, found))
      snprintf(out, cap, "%s", found);
    if (access(out, X_OK) == 0)
      return 0;
  }
  char dir[PATH_MAX - 32];
  if (kv_exe_dir(dir, sizeof dir) < 0)
    return -1;
  snprintf(out, cap, "%s/%s", dir, name);
  return access(out, X_OK);
}

/* kevo-sandbox's exit status when a layer failed (worker/sandbox_exec.c). */
#define KV_SANDBOX_FAILED_EXIT 125

int kv_run_jailed(const struct kv_jail *j, char *const argv[], char *const envp[], const char *cwd,
                  double deadline_s, struct kv_buf *out, struct kv_proc_result *res, char *err,
                  size_t errlen) {
  char helper[PATH_MAX], exe[PATH_MAX], cpu[32], fsize[32];
  if (kv_helper_path("kevo-sandbox", "KEVO_SANDBOX_HELPER", j->worker_path, helper,
                     sizeof helper) != 0)
    return kv_error(err, errlen,
                    "%s: kevo-sandbox not found; build it beside kevo-worker or set "
                    "KEVO_SANDBOX_HELPER",
                    helper);
  if (kv_which(argv[0], exe, sizeof exe) < 0)
    return kv_error(err, errlen, "%s: not found in PATH; install it or put it on PATH", argv[0]);
  struct kv_compile_caps caps;
  kv_compile_caps_get(&caps);
  if (j->cpu_s > 0 && j->cpu_s < caps.cpu_s)
    caps.cpu_s = j->cpu_s;
  snprintf(cpu, sizeof cpu, "%d", caps.cpu_s);
  snprintf(fsize, sizeof fsize, "%llu", j->fsize);
  enum { MAXARGS = 96 };
  char *av[MAXARGS];
  int a = 0;
  av[a++] = helper;
  av[a++] = (char *)j->dir;
  av[a++] = cpu;
  av[a++] = fsize;
  for (int i = 0; i < j->nreads && i < 4; i++)
    if (j->reads[i] && *j->reads[i]) {
      av[a++] = "-r";
      av[a++] = (char *)j->reads[i];
    }
  av[a++] = "--";
  av[a++] = exe;
  for (int i = 1; argv[i]; i++) {
    if (a >= MAXARGS - 1)
      return kv_error(err, errlen, "%s: too many arguments for the sandbox (at most %d)", argv[0],
                      MAXARGS - 12);
    av[a++] = argv[i];
  }
  av[a] = NULL;
  if (kv_run(av, envp, cwd, deadline_s, kv_compile_caps_apply, &caps, out, res, err, errlen) < 0)
    return -1;
  if (res->exited && res->status == KV_SANDBOX_FAILED_EXIT && out && out->data &&
      strstr(out->data, "kevo-sandbox: "))
    return kv_error(err, errlen, "%s could not be sandboxed: %.400s", argv[0],
                    strstr(out->data, "kevo-sandbox: ") + 14);
  return 0;
}

static int build_c(const struct kv_gate_opts *o, const char *src, const char *cache_dir,
                   double deadline_s, struct kv_build *b, const char *proto, const char *shim,
                   char *err, size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  if (kv_read_file(src, KV_SOURCE_MAX, &text, &len, err, errlen) < 0)
    return -1;
  const char *ver = kv_cc_version();
  if (!ver[0]) {
    free(text);
    return kv_error(err, errlen,
                    "cc: no C compiler found; install one (apt-get install gcc) or put cc on PATH");
  }
  char why[512];
  if (kv_source_files_check(text, len, why, sizeof why)) {
    free(text);
    kv_source_files_refusal(why, &b->log);
    return 0;
  }
  char model[256];
  cpu_model(model, sizeof model);
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, "kevo-c-v1", 10);
  kv_sha256_update(h, ver, strlen(ver) + 1);
  kv_sha256_update(h, model, strlen(model) + 1);
  for (size_t i = 0; i < KV_ARRAY_LEN(cc_flags); i++)
    kv_sha256_update(h, cc_flags[i], strlen(cc_flags[i]) + 1);
  kv_sha256_update(h, proto, strlen(proto) + 1);
  kv_sha256_update(h, shim, strlen(shim) + 1);
  kv_sha256_update(h, text, len);
  kv_sha256_final(h, b->key);

  char objdir[3100], logp[PATH_MAX];
  if (kv_obj_dir(cache_dir, objdir, sizeof objdir, err, errlen) < 0) {
    free(text);
    return -1;
  }
  snprintf(b->so_path, sizeof b->so_path, "%s/%s.so", objdir, b->key);
  snprintf(logp, sizeof logp, "%s/%s.log", objdir, b->key);
  static const char *const sfx_ok[] = {".so", ".log", NULL}, *const sfx_fail[] = {".log", NULL};
  double t0 = kv_now_s();
  int lock = kv_obj_lock(objdir, b->key, deadline_s);
  int hit = kv_obj_lookup(objdir, b->key, sfx_ok);
  if (hit != KV_OBJ_MISS) {
    kv_obj_unlock(lock);
    b->ok = hit == KV_OBJ_OK;
    b->cached = 1;
    size_t ll;
    if (kv_read_file(logp, KV_LOG_CAP + 1, &b->log, &ll, NULL, 0) < 0)
      b->log = strdup("");
    free(text);
    b->seconds = kv_now_s() - t0;
    return 0;
  }

  /* Build in a private directory: candidate.c, proto.h, shim.c. */
  char dir[PATH_MAX], p_src[PATH_MAX + 32], p_proto[PATH_MAX + 32], p_shim[PATH_MAX + 32],
      p_out[PATH_MAX + 32];
  if (kv_mkdtemp(cache_dir, "build", dir, sizeof dir, err, errlen) < 0) {
    kv_obj_unlock(lock);
    free(text);
    return -1;
  }
  snprintf(p_src, sizeof p_src, "%s/candidate.c", dir);
  snprintf(p_proto, sizeof p_proto, "%s/proto.h", dir);
  snprintf(p_shim, sizeof p_shim, "%s/kevo_shim.c", dir);
  snprintf(p_out, sizeof p_out, "%s/out.so", dir);
  int rc = 0;
  if (kv_write_file(p_src, text, len, err, errlen) < 0 ||
      kv_write_file(p_proto, proto, strlen(proto), err, errlen) < 0 ||
      kv_write_file(p_shim, shim, strlen(shim), err, errlen) < 0)
    rc = -1;
  free(text);
  if (rc == 0) {
    char *argv[32];
    int a = 0;
    argv[a++] = "cc";
    for (size_t i = 0; i < KV_ARRAY_LEN(cc_flags); i++)
      argv[a++] = (char *)cc_flags[i];
    argv[a++] = "-include";
    argv[a++] = "proto.h";
    argv[a++] = "candidate.c";
    argv[a++] = "kevo_shim.c";
    argv[a++] = "-o";
    argv[a++] = "out.so";
    argv[a++] = "-lm";
    argv[a] = NULL;
    char env_tmp[PATH_MAX + 16];
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", dir);
    char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", env_tmp, NULL};
    struct kv_buf log;
    kv_buf_init(&log, KV_LOG_CAP);
    struct kv_proc_result pr;
    int capped = 0;
    struct kv_jail jail = {
        .dir = dir, .cpu_s = 300, .fsize = 256u << 20, .worker_path = o ? o->worker_path : NULL};
    if (kv_run_jailed(&jail, argv, envp, dir, deadline_s, &log, &pr, err, errlen) < 0) {
      rc = -1;
    } else {
      b->ok = pr.exited && pr.status == 0 && kv_path_exists(p_out);
      struct kv_compile_caps caps;
      kv_compile_caps_get(&caps);
      if (pr.timed_out)
        kv_compile_deadline_explain("the compiler", deadline_s, &log);
      else if (!b->ok && kv_compile_caps_explain(&caps, "the compiler", &pr, &log))
        capped = 1;
      else if (!b->ok && pr.signaled)
        kv_buf_appendf(&log, "\nkevo: the compiler was killed by signal %d\n", pr.sig);
      if (log.truncated)
        kv_buf_appendf(&log, "\n[log truncated]\n");
      b->log = kv_buf_detach(&log);
      kv_write_file(logp, b->log, strlen(b->log), NULL, 0);
      if (b->ok) {
        if (rename(p_out, b->so_path) < 0)
          rc = kv_error(err, errlen, "%s: cannot store the build: %s", b->so_path, strerror(errno));
        else
          rc = kv_obj_record(objdir, b->key, 1, sfx_ok, err, errlen);
      } else if (!pr.timed_out && !pr.signaled && !capped) {
        /* A compile error is a property of the source: cache it too. */
        kv_obj_record(objdir, b->key, 0, sfx_fail, NULL, 0);
      }
    }
    kv_buf_release(&log);
  }
  kv_obj_unlock(lock);
  kv_rmtree(dir);
  b->seconds = kv_now_s() - t0;
  return rc;
}

/* The prototype and the shim sized from the task (a network's table of
 * packed weights runs to tens of KiB), then the build. */
int kv_build_c(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
               const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
               size_t errlen) {
  memset(b, 0, sizeof(*b));
  char *proto = kv_task_prototype_alloc(t, KV_LANG_C), *shim = kv_task_shim_alloc(t, KV_LANG_C);
  int rc = proto && shim ? build_c(o, src, cache_dir, deadline_s, b, proto, shim, err, errlen)
                         : kv_error(err, errlen,
                                    "%s: the task's prototype is over kevo's %u-byte cap "
                                    "(KV_TASK_PROTO_MAX), or memory ran out",
                                    t->name, KV_TASK_PROTO_MAX);
  free(proto);
  free(shim);
  return rc;
}

void kv_build_release(struct kv_build *b) {
  free(b->log);
  free(b->sass);
  b->log = NULL;
  b->sass = NULL;
}

static const char *forbidden[] = {
    "fork",
    "vfork",
    "clone",
    "clone3",
    "execve",
    "execv",
    "execvp",
    "execvpe",
    "execl",
    "execlp",
    "execle",
    "fexecve",
    "system",
    "popen",
    "posix_spawn",
    "posix_spawnp",
    "daemon",
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "getaddrinfo",
    "gethostbyname",
    "dlopen",
    "dlmopen",
    /* dlopen's address by name, and glibc's inner loaders: dlopen by hand */
    "dlsym",
    "dlvsym",
    "__libc_dlopen_mode",
    "__libc_dlsym",
    "_dl_open",
    "ptrace",
    "kill",
    "killpg",
    "tgkill",
    "setsid",
    "unshare",
    "setns",
    "mount",
    "chroot",
    "pidfd_open",
    "process_vm_readv",
    "process_vm_writev",
    "prctl",
};

/* Vendor libraries a cuda candidate may call only when the task allows them:
 * symbol prefix, the name in `allow` that permits it (NULL: none can, kevo
 * does not link it) and another name that permits it too. */
static const struct {
  const char *prefix, *lib, *lib2;
} vendor[] = {
    {"cublasLt", "cublaslt", "cublas"},
    {"cublas", "cublas", NULL},
    {"cudnn", "cudnn", NULL},
    {"cufft", NULL, NULL},
    {"curand", NULL, NULL},
    {"cusparse", NULL, NULL},
    {"cusolver", NULL, NULL},
    {"nccl", NULL, NULL},
    {"nvrtc", NULL, NULL},
    {"nvJitLink", NULL, NULL},
};

static int allowed_lib(const struct kv_task *t, const char *lib) {
  for (int i = 0; lib && i < t->nallow; i++)
    if (!strcmp(t->allow[i], lib))
      return 1;
  return 0;
}

void kv_policy_add(struct kv_policy_list *l, const char *fmt, ...) {
  int w = snprintf(l->out + l->used, l->cap - l->used, "%s", l->n ? ", " : "");
  if (w > 0 && (size_t)w < l->cap - l->used)
    l->used += (size_t)w;
  va_list ap;
  va_start(ap, fmt);
  w = vsnprintf(l->out + l->used, l->cap - l->used, fmt, ap);
  va_end(ap);
  if (w > 0 && (size_t)w < l->cap - l->used)
    l->used += (size_t)w;
  l->n++;
}

int kv_undefined_symbols(const char *path, const char *nm_flag,
                         void (*each)(void *ud, const char *name), void *ud, char *err,
                         size_t errlen) {
  struct kv_buf o;
  kv_buf_init(&o, 1 << 20);
  struct kv_proc_result pr;
  char *argv[5] = {"nm", "--undefined-only", (char *)path, NULL, NULL};
  if (nm_flag) { /* nm FLAG --undefined-only path */
    argv[1] = (char *)nm_flag;
    argv[2] = "--undefined-only";
    argv[3] = (char *)path;
  }
  if (kv_run(argv, NULL, NULL, 20, NULL, NULL, &o, &pr, err, errlen) < 0) {
    kv_buf_release(&o);
    return -1;
  }
  if (!pr.exited || pr.status != 0) {
    kv_error(err, errlen, "nm %s failed: %.500s", path, o.data ? o.data : "");
    kv_buf_release(&o);
    return -1;
  }
  for (char *line = o.data, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = 0;
    char *u = strstr(line, " U ");
    if (!u)
      continue;
    char *name = u + 3;
    name[strcspn(name, "@ \t\r")] = 0;
    if (*name) /* unnamed: extern __shared__ arrays and section symbols */
      each(ud, name);
  }
  kv_buf_release(&o);
  return 0;
}

/* The policy's scan: each undefined symbol it forbids, into out; a vendor
 * library the task does not allow once, with its first symbol. */
struct scan {
  const struct kv_task *t;
  int vendors;
  struct kv_policy_list l;
  const char *first[KV_ARRAY_LEN(vendor)];
  char names[KV_ARRAY_LEN(vendor)][96];
};

static void scan_one(void *ud, const char *name) {
  struct scan *sc = ud;
  for (size_t i = 0; i < KV_ARRAY_LEN(forbidden); i++)
    if (!strcmp(name, forbidden[i]))
      kv_policy_add(&sc->l, "%s", name);
  for (size_t i = 0; sc->vendors && i < KV_ARRAY_LEN(vendor); i++) {
    if (strncmp(name, vendor[i].prefix, strlen(vendor[i].prefix)) != 0)
      continue;
    if (!allowed_lib(sc->t, vendor[i].lib) && !allowed_lib(sc->t, vendor[i].lib2) &&
        !sc->first[i]) {
      snprintf(sc->names[i], sizeof sc->names[i], "%s", name);
      sc->first[i] = sc->names[i];
    }
    break;
  }
}

/* "cublasSgemm_v2 (cublas is not allowed by this task; add ...)", once per library. */
static void scan_vendors(struct scan *sc) {
  for (size_t i = 0; i < KV_ARRAY_LEN(vendor); i++) {
    if (!sc->first[i])
      continue;
    if (vendor[i].lib)
      kv_policy_add(&sc->l,
                    "%s (%s is not allowed by this task; add \"allow\": [\"%s\"] to task.json "
                    "or import with --allow %s)",
                    sc->first[i], vendor[i].lib, vendor[i].lib, vendor[i].lib);
    else
      kv_policy_add(&sc->l, "%s (lib%s: kevo links only cublas, cublaslt and cudnn)", sc->first[i],
                    vendor[i].prefix);
  }
}

/* Undefined symbols listed by `nm ARGS path` that the policy forbids. */
static int policy_scan(const char *nm_flag, const char *path, const struct kv_task *t, int vendors,
                       char *out, size_t cap, char *err, size_t errlen) {
  out[0] = 0;
  struct scan *sc = calloc(1, sizeof *sc);
  if (!sc)
    return kv_error(err, errlen, "%s: out of memory for the policy check", path);
  sc->t = t;
  sc->vendors = vendors;
  sc->l = (struct kv_policy_list){out, cap, 0, 0};
  int rc = kv_undefined_symbols(path, nm_flag, scan_one, sc, err, errlen);
  if (rc == 0) {
    scan_vendors(sc);
    rc = sc->l.n;
  }
  free(sc);
  return rc;
}

int kv_policy_check(const char *so_path, const struct kv_task *t, char *out, size_t cap, char *err,
                    size_t errlen) {
  return policy_scan("-D", so_path, t, 0, out, cap, err, errlen);
}

/* The shared object carries the CUDA runtime, which itself loads libcuda and
 * talks to the driver over sockets: the candidate's own object is checked. */
int kv_policy_check_cuda(const char *obj_path, const struct kv_task *t, char *out, size_t cap,
                         char *err, size_t errlen) {
  return policy_scan("-g", obj_path, t, 1, out, cap, err, errlen);
}

struct pool {
  int (*build)(const struct kv_task *, const struct kv_gate_opts *, const char *, const char *,
               double, struct kv_build *, char *, size_t);
  struct kv_build_job *jobs;
  int n, next;
  pthread_mutex_t mu;
};

static void *pool_main(void *arg) {
  struct pool *p = arg;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int i = p->next < p->n ? p->next++ : -1;
    pthread_mutex_unlock(&p->mu);
    if (i < 0)
      return NULL;
    struct kv_build_job *j = &p->jobs[i];
    j->rc = p->build(j->t, j->o, j->src, j->cache_dir, j->deadline_s, &j->b, j->err, sizeof j->err);
    if (j->rc == 0 && j->b.ok && j->analyze)
      j->analyze(&j->b, j->o, j->cache_dir, 30);
  }
}

void kv_build_pool(int (*build)(const struct kv_task *, const struct kv_gate_opts *, const char *,
                                const char *, double, struct kv_build *, char *, size_t),
                   struct kv_build_job *jobs, int n) {
  struct pool p = {build, jobs, n, 0, PTHREAD_MUTEX_INITIALIZER};
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = n < (cores > 0 ? cores : 1) ? n : (int)(cores > 0 ? cores : 1);
  if (nt > 16)
    nt = 16;
  pthread_t th[16];
  int started = 0;
  for (int i = 1; i < nt; i++)
    if (pthread_create(&th[started], NULL, pool_main, &p) == 0)
      started++;
  pool_main(&p); /* this thread works too; with no helper thread it does everything */
  for (int i = 0; i < started; i++)
    pthread_join(th[i], NULL);
  pthread_mutex_destroy(&p.mu);
}
