/* The cuda surface's compiler. A candidate is one CUDA C++ translation unit:
 *   nvcc -c -O3 -arch=sm_XY -Xcompiler -fPIC -Xptxas -v -include proto.h candidate.cu
 * for the device's own architecture (never an unnamed default), then
 *   nvcc -shared candidate.o kevo_shim.o [-lLIB for each allowed library]
 * where kevo_shim.o (the generated call shim plus an error guard that reads
 * the CUDA runtime's last error) is built once per task and cached. The
 * candidate's own object is kept for the policy check (the shared object
 * holds the CUDA runtime, which legitimately loads libraries and opens
 * sockets). Same sandbox, deadline, capped log and cache as kv_build_c. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudakit.h"
#include "internal.h"
#include "nvrtc.h"
#include "vendor.h"

/* Linked into every cuda object: the worker calls it after each call, so a
 * launch the runtime refused (too much shared memory, no kernel image for
 * this device, a bad configuration) is reported instead of guessed. */
const char kv_cuda_guard_cu[] =
    "\n/* kevo: the CUDA runtime's last error, read by kevo-worker after each call */\n"
    "#include <stdio.h>\n"
    "extern \"C\" __attribute__((visibility(\"default\"))) int kevo_cuda_last_error(char *buf,\n"
    "                                                                         int cap) {\n"
    "  cudaError_t e = cudaGetLastError();\n"
    "  if (e != cudaSuccess && buf && cap > 0)\n"
    "    snprintf(buf, (size_t)cap, \"%s: %s\", cudaGetErrorName(e), cudaGetErrorString(e));\n"
    "  return (int)e;\n"
    "}\n";

/* What `nvcc --version` says, per compiler asked about (one in practice):
 * entries are filled once, under the lock, and never changed after. */
struct nvcc_info {
  char path[PATH_MAX];
  char ver[256];   /* the "release" line */
  char full[1024]; /* the whole output: part of the cache key */
};
static struct nvcc_info nvcc_infos[8];
static int n_nvcc_infos;
static pthread_mutex_t nvcc_lock = PTHREAD_MUTEX_INITIALIZER;

static const struct nvcc_info *nvcc_info(const struct kv_gate_opts *o) {
  static const struct nvcc_info none;
  const char *nv = kv_nvcc_path(o);
  if (!nv[0])
    return &none;
  pthread_mutex_lock(&nvcc_lock);
  struct nvcc_info *in = NULL;
  for (int i = 0; i < n_nvcc_infos && !in; i++)
    if (!strcmp(nvcc_infos[i].path, nv))
      in = &nvcc_infos[i];
  if (!in) {
    /* A ninth compiler in one process takes the last entry's place. */
    in = &nvcc_infos[n_nvcc_infos < 8 ? n_nvcc_infos++ : 7];
    memset(in, 0, sizeof *in);
    snprintf(in->path, sizeof in->path, "%s", nv);
    struct kv_buf out;
    kv_buf_init(&out, 4096);
    struct kv_proc_result r;
    char *argv[] = {in->path, "--version", NULL};
    char err[256];
    if (kv_run(argv, NULL, NULL, 30, NULL, NULL, &out, &r, err, sizeof err) == 0 && r.exited &&
        r.status == 0 && out.data) {
      snprintf(in->full, sizeof in->full, "%s", out.data);
      const char *rel = strstr(out.data, "release ");
      if (rel)
        snprintf(in->ver, sizeof in->ver, "%.*s", (int)strcspn(rel, "\n"), rel);
      else
        snprintf(in->ver, sizeof in->ver, "%.*s", (int)strcspn(out.data, "\n"), out.data);
    }
    kv_buf_release(&out);
  }
  pthread_mutex_unlock(&nvcc_lock);
  return in;
}

const char *kv_nvcc_version(const struct kv_gate_opts *o) {
  return nvcc_info(o)->ver;
}

/* ---- vendor libraries (vendor.h) ---- */

struct vlib {
  const char *allow, *header, *hglob, *env, *install;
  const char *libs[9]; /* the first is required; the others are linked where present */
  const char *wheels[3];
};

static const struct vlib vlibs[] = {
    {"cublas",
     "cublas_v2.h",
     "cublas*.h",
     "KEVO_CUBLAS_DIR",
     "cuBLAS comes with the CUDA toolkit: install its libcublas-dev package (apt-get install "
     "libcublas-dev-13-0) or the nvidia-cublas wheel, or set KEVO_CUBLAS_DIR",
     {"cublas", "cublasLt", NULL},
     {"cu13", "cublas", NULL}},
    {"cublaslt",
     "cublasLt.h",
     "cublas*.h",
     "KEVO_CUBLAS_DIR",
     "cuBLASLt comes with the CUDA toolkit: install its libcublas-dev package (apt-get install "
     "libcublas-dev-13-0) or the nvidia-cublas wheel, or set KEVO_CUBLAS_DIR",
     {"cublasLt", NULL},
     {"cu13", "cublas", NULL}},
    {"cudnn",
     "cudnn.h",
     "cudnn*.h",
     "KEVO_CUDNN_DIR",
     "install cuDNN: pip install nvidia-cudnn-cu13 (nvidia-cudnn-cu12 for CUDA 12), or apt-get "
     "install cudnn9-cuda-13, or set KEVO_CUDNN_DIR to a directory with include/cudnn.h and "
     "lib/libcudnn.so*",
     /* cuDNN 9 loads its sub-libraries on first use: after the worker's
      * lockdown it could not, so they are loaded with the candidate. */
     {"cudnn", "cudnn_graph", "cudnn_ops", "cudnn_cnn", "cudnn_adv", "cudnn_heuristic",
      "cudnn_engines_precompiled", "cudnn_engines_runtime_compiled", NULL},
     {"cudnn", NULL}},
};

#define VROOTS 32

/* Where to look, in order (see vendor.h); a set env variable is the only place. */
static int vendor_roots(const struct vlib *l, const struct kv_gate_opts *o,
                        char roots[VROOTS][PATH_MAX]) {
  int n = 0;
  const char *e = getenv(l->env);
  if (e && *e) {
    snprintf(roots[n++], PATH_MAX, "%s", e);
    return n;
  }
  char nv[PATH_MAX];
  snprintf(nv, sizeof nv, "%s", kv_nvcc_path(o));
  char *sl = strrchr(nv, '/');
  if (sl) {
    *sl = 0;
    snprintf(roots[n++], PATH_MAX, "%s/..", nv);
    snprintf(roots[n++], PATH_MAX, "%s/../targets/x86_64-linux", nv);
    snprintf(roots[n++], PATH_MAX, "%s/../targets/sbsa-linux", nv);
  }
  /* Python's site-packages: beside the interpreter (a venv's or the system's). */
  char pats[4][PATH_MAX + 64];
  int np = 0;
  char py[PATH_MAX];
  const char *pyname = kv_python();
  if (kv_which(pyname, py, sizeof py) == 0 && (sl = strrchr(py, '/')) != NULL) {
    *sl = 0;
    snprintf(pats[np++], sizeof pats[0], "%s/../lib/python3*/*-packages", py);
  }
  snprintf(pats[np++], sizeof pats[0], "/usr/local/lib/python3*/dist-packages");
  snprintf(pats[np++], sizeof pats[0], "/usr/lib/python3/dist-packages");
  const char *home = getenv("HOME");
  if (home && *home)
    snprintf(pats[np++], sizeof pats[0], "%s/.local/lib/python3*/site-packages", home);
  for (int p = 0; p < np; p++) {
    glob_t g;
    if (glob(pats[p], 0, NULL, &g) != 0)
      continue;
    for (size_t i = 0; i < g.gl_pathc; i++)
      for (int w = 0; l->wheels[w] && n < VROOTS - 2; w++)
        snprintf(roots[n++], PATH_MAX, "%s/nvidia/%s", g.gl_pathv[i], l->wheels[w]);
    globfree(&g);
  }
  snprintf(roots[n++], PATH_MAX, "/usr/local");
  snprintf(roots[n++], PATH_MAX, "/usr");
  return n;
}

/* dir/lib<name>.so, else the shortest dir/lib<name>.so.<version> (a wheel
 * ships only those); its file name into file. 0 when found. */
static int find_lib(const char *dir, const char *name, char *file, size_t cap) {
  char p[PATH_MAX + 300];
  snprintf(p, sizeof p, "%s/lib%s.so", dir, name);
  if (access(p, R_OK) == 0) {
    snprintf(file, cap, "lib%s.so", name);
    return 0;
  }
  DIR *d = opendir(dir);
  if (!d)
    return -1;
  char want[128], best[256] = "";
  snprintf(want, sizeof want, "lib%s.so.", name);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t wl = strlen(want), el = strlen(e->d_name);
    if (strncmp(e->d_name, want, wl) != 0 || el <= wl || el >= sizeof best ||
        strspn(e->d_name + wl, "0123456789.") != el - wl)
      continue;
    if (!best[0] || el < strlen(best) || (el == strlen(best) && strcmp(e->d_name, best) < 0))
      snprintf(best, sizeof best, "%s", e->d_name);
  }
  closedir(d);
  if (!best[0])
    return -1;
  snprintf(file, cap, "%s", best);
  return 0;
}

/* The header's directory and the first library's under one root. */
static int find_in_root(const struct vlib *l, const char *root, char *inc, char *libdir,
                        char *file) {
  static const char *const incs[] = {"include", "include/x86_64-linux-gnu"};
  static const char *const libs[] = {"lib64", "lib", "lib/x86_64-linux-gnu"};
  char p[PATH_MAX * 2];
  int hi = -1;
  for (int i = 0; i < 2 && hi < 0; i++) {
    snprintf(p, sizeof p, "%s/%s/%s", root, incs[i], l->header);
    if (access(p, R_OK) == 0)
      hi = i;
  }
  if (hi < 0)
    return -1;
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", root, libs[i]);
    if (find_lib(p, l->libs[0], file, 256) == 0) {
      snprintf(p, sizeof p, "%s/%s", root, incs[hi]);
      if (!realpath(p, inc))
        return -1;
      snprintf(p, sizeof p, "%s/%s", root, libs[i]);
      return realpath(p, libdir) ? 0 : -1;
    }
  }
  return -1;
}

static void vadd(char (*list)[KV_VENDOR_ARG_MAX], int *n, int max, const char *fmt, const char *a,
                 const char *b) {
  if (*n < max)
    snprintf(list[(*n)++], KV_VENDOR_ARG_MAX, fmt, a, b);
}

/* Under one of the directories the compiler's sandbox reads anyway. */
static int system_dir(const char *dir) {
  static const char *const sys[] = {"/usr/", "/opt/", "/lib/", "/lib64/"};
  for (size_t i = 0; i < KV_ARRAY_LEN(sys); i++)
    if (!strncmp(dir, sys[i], strlen(sys[i])))
      return 1;
  return 0;
}

static void vendor_read(struct kv_vendor *v, const char *dir) {
  if (system_dir(dir))
    return;
  for (int i = 0; i < v->nreads; i++)
    if (!strcmp(v->reads[i], dir))
      return;
  if (v->nreads < KV_VENDOR_MAX_DIRS)
    snprintf(v->reads[v->nreads++], PATH_MAX, "%s", dir);
}

/* One allowed library into v: -I, -L, -l:FILE..., -rpath. */
static int vendor_add(const struct vlib *l, const struct kv_gate_opts *o, struct kv_vendor *v,
                      char *err, size_t errlen) {
  char(*roots)[PATH_MAX] = malloc(VROOTS * sizeof *roots);
  if (!roots)
    return kv_error(err, errlen, "%s: out of memory", l->allow);
  int nr = vendor_roots(l, o, roots), found = -1;
  char inc[PATH_MAX], libdir[PATH_MAX], file[256], tried[1024] = "";
  for (int r = 0; r < nr && found < 0; r++)
    if (find_in_root(l, roots[r], inc, libdir, file) == 0)
      found = r;
  const char *env = getenv(l->env);
  if (found < 0 && env && *env)
    snprintf(tried, sizeof tried, "%s=%.900s, the only place looked while it is set", l->env, env);
  for (int r = 0; r < nr && found < 0 && !(env && *env) && strlen(tried) < 700; r++)
    if (kv_path_exists(roots[r]))
      snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", tried[0] ? ", " : "",
               roots[r]);
  free(roots);
  if (found < 0)
    return kv_error(err, errlen,
                    "task.json: allow: %s: %s and lib%s.so* not found (looked in %s); %s", l->allow,
                    l->header, l->libs[0], tried[0] ? tried : "nothing that exists", l->install);
  if (!kv_sandbox_worker_reads(libdir))
    return kv_error(err, errlen,
                    "task.json: allow: %s: %s lies where the worker's sandbox cannot read it "
                    "(it reads /usr, /opt, /lib and $LD_LIBRARY_PATH); add %s to LD_LIBRARY_PATH "
                    "or install %s under /usr or /opt",
                    l->allow, libdir, libdir, l->allow);
  char nvinc[PATH_MAX + 32], nvreal[PATH_MAX] = "";
  snprintf(nvinc, sizeof nvinc, "%s", kv_nvcc_path(o));
  char *sl = strrchr(nvinc, '/');
  if (sl) {
    snprintf(sl, sizeof nvinc - (size_t)(sl - nvinc), "/../include");
    if (!realpath(nvinc, nvreal))
      nvreal[0] = 0;
  }
  if (strcmp(inc, nvreal) != 0 && strcmp(inc, "/usr/include") != 0) {
    int dup = 0;
    for (int i = 0; i < v->nstage; i++)
      dup |= !strcmp(v->stage_dir[i], inc) && !strcmp(v->stage_glob[i], l->hglob);
    if (!dup && v->nstage < KV_VENDOR_MAX_DIRS) {
      snprintf(v->stage_dir[v->nstage], PATH_MAX, "%s", inc);
      snprintf(v->stage_glob[v->nstage++], sizeof v->stage_glob[0], "%s", l->hglob);
    }
    if (v->ncargs == 0) {
      vadd(v->cargs, &v->ncargs, 2, "%s%s", "-I", "");
      vadd(v->cargs, &v->ncargs, 2, "%s%s", "kevo-vendor-include", "");
    }
  }
  vendor_read(v, inc);
  vendor_read(v, libdir);
  /* By path, not -L: a wheel's lib/ may hold a libcudart_static.a of its own. */
  for (int i = 0; l->libs[i]; i++) {
    char f[256];
    if (i == 0)
      snprintf(f, sizeof f, "%s", file);
    else if (find_lib(libdir, l->libs[i], f, sizeof f) != 0)
      continue;
    vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "%s%s", "-Xlinker", "");
    vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "%s/%s", libdir, f);
  }
  vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "%s%s", "-Xlinker", "");
  vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "-rpath=%s%s", libdir, "");
  size_t u = strlen(v->summary);
  snprintf(v->summary + u, sizeof v->summary - u, "%s%s: %s/%s, %s/%s", u ? "; " : "", l->allow,
           inc, l->header, libdir, file);
  return 0;
}

int kv_vendor_find(const struct kv_task *t, const struct kv_gate_opts *o, struct kv_vendor *v,
                   char *err, size_t errlen) {
  memset(v, 0, sizeof *v);
  if (!t || t->nallow == 0)
    return 0;
  vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "%s%s", "-Xlinker", "");
  vadd(v->largs, &v->nlargs, KV_VENDOR_MAX_ARGS, "%s%s", "--no-as-needed", "");
  for (int i = 0; i < t->nallow; i++) {
    const struct vlib *l = NULL;
    for (size_t k = 0; k < KV_ARRAY_LEN(vlibs) && !l; k++)
      if (!strcmp(t->allow[i], vlibs[k].allow))
        l = &vlibs[k];
    if (!l)
      return kv_error(err, errlen,
                      "task.json: allow[%d]: '%s' is not a library kevo can link; use one of "
                      "cublas cublaslt cudnn",
                      i, t->allow[i]);
    if (vendor_add(l, o, v, err, errlen) < 0)
      return -1;
  }
  return 0;
}

int kv_vendor_stage(const struct kv_vendor *v, const char *build_dir, char *err, size_t errlen) {
  if (v->nstage == 0)
    return 0;
  char to[PATH_MAX + 64], pat[PATH_MAX + 64];
  snprintf(to, sizeof to, "%s/kevo-vendor-include", build_dir);
  if (kv_mkdirs(to, 0700, err, errlen) < 0)
    return -1;
  for (int i = 0; i < v->nstage; i++) {
    snprintf(pat, sizeof pat, "%s/%s", v->stage_dir[i], v->stage_glob[i]);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0)
      continue;
    for (size_t k = 0; k < g.gl_pathc; k++) {
      char ln[PATH_MAX * 2];
      snprintf(ln, sizeof ln, "%s/%s", to, strrchr(g.gl_pathv[k], '/') + 1);
      if (symlink(g.gl_pathv[k], ln) < 0 && errno != EEXIST) {
        int e = errno;
        globfree(&g);
        return kv_error(err, errlen, "%s: cannot link the header %s there: %s", to, pat,
                        strerror(e));
      }
    }
    globfree(&g);
  }
  return 0;
}

void kv_vendor_log_hint(const struct kv_task *t, const char *log, char *out, size_t cap) {
  static const struct {
    const char *header, *lib;
  } heads[] = {{"cublas_v2.h", "cublas"},  {"cublas_api.h", "cublas"}, {"cublas.h", "cublas"},
               {"cublasLt.h", "cublaslt"}, {"cudnn.h", "cudnn"},       {"cudnn_v9.h", "cudnn"}};
  if (cap)
    out[0] = 0;
  for (size_t i = 0; log && i < KV_ARRAY_LEN(heads); i++) {
    char pat[64];
    snprintf(pat, sizeof pat, "%s: No such file", heads[i].header);
    if (!strstr(log, pat))
      continue;
    int ok = 0;
    for (int k = 0; k < t->nallow; k++)
      ok |= !strcmp(t->allow[k], heads[i].lib);
    if (ok)
      continue;
    snprintf(out, cap,
             "error: %s: %s is not allowed by this task; add \"allow\": [\"%s\"] to task.json or "
             "import with --allow %s\n",
             heads[i].header, heads[i].lib, heads[i].lib, heads[i].lib);
    return;
  }
}

/* The log with line in front (same cap). */
static void prepend(struct kv_buf *log, const char *line) {
  struct kv_buf nb;
  kv_buf_init(&nb, log->max);
  kv_buf_append(&nb, line, strlen(line));
  if (log->data)
    kv_buf_append(&nb, log->data, log->len);
  nb.truncated |= log->truncated;
  kv_buf_release(log);
  *log = nb;
}

/* Runs nvcc in dir under what is left of the deadline; appends to log.
 * Returns 1 when it succeeded, 0 when it failed, -1 when it could not run. */
static int run_nvcc(const struct kv_gate_opts *o, char **argv, const char *dir, double t_end,
                    const struct kv_vendor *v, struct kv_buf *log, int *killed, char *err,
                    size_t errlen) {
  char path_env[PATH_MAX + 64], tmp_env[PATH_MAX + 16], home_env[PATH_MAX + 16];
  char nvdir[PATH_MAX];
  snprintf(nvdir, sizeof nvdir, "%s", kv_nvcc_path(o));
  char *slash = strrchr(nvdir, '/');
  if (slash)
    *slash = 0;
  snprintf(path_env, sizeof path_env, "PATH=%s:/usr/local/bin:/usr/bin:/bin", nvdir);
  snprintf(tmp_env, sizeof tmp_env, "TMPDIR=%s", dir);
  snprintf(home_env, sizeof home_env, "HOME=%s", dir);
  char *envp[] = {path_env, "LANG=C", tmp_env, home_env, NULL};
  double left = t_end - kv_now_s();
  if (left < 1)
    left = 1;
  struct kv_proc_result pr;
  struct kv_jail jail = {
      .dir = dir, .cpu_s = 300, .fsize = 256u << 20, .worker_path = o ? o->worker_path : NULL};
  for (int i = 0; v && i < v->nreads && jail.nreads < 4; i++)
    jail.reads[jail.nreads++] = v->reads[i]; /* vendor libraries outside /usr and /opt */
  if (kv_run_jailed(&jail, argv, envp, dir, left, log, &pr, err, errlen) < 0)
    return -1;
  struct kv_compile_caps caps;
  kv_compile_caps_get(&caps);
  if (pr.timed_out) {
    kv_compile_deadline_explain("nvcc", left, log);
    *killed = 1;
  } else if (kv_compile_caps_explain(&caps, "nvcc", &pr, log)) {
    *killed = 1; /* not a property of the source alone: not cached */
  } else if (pr.signaled) {
    kv_buf_appendf(log, "\nkevo: nvcc was killed by signal %d\n", pr.sig);
    *killed = 1;
  }
  return pr.exited && pr.status == 0;
}

int kv_build_cuda(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                  const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                  size_t errlen) {
  int rc = kv_build_cuda_code(t, o, src, cache_dir, deadline_s, b, err, errlen);
  if (rc == 0 && b->ok) /* static analysis: always on; timed apart (kevo/sass.h) */
    kv_sass_analyze_build(b, o, cache_dir, 30);
  return rc;
}

/* The object cache's files of a host-entry build, a refused one, a shim. */
static const char *const cu_sfx_ok[] = {".so", ".o", ".log", NULL};
static const char *const cu_sfx_fail[] = {".log", NULL};
static const char *const cu_sfx_shim[] = {".o", NULL};

/* One nvcc build: what kv_build_cuda_code's stages share. */
struct nvcc_job {
  const struct kv_task *t;
  const struct kv_gate_opts *o;
  char *nv; /* nvcc */
  char aflag[96];
  char *proto, *shim; /* the prototype header, the call shim and its guard */
  struct kv_vendor *ven;
  char shim_key[65];
  double t_end;
  char objdir[3100], logp[PATH_MAX], shim_o[PATH_MAX], shim_entry[80], dir[PATH_MAX];
};

/* The shim's key (per task, toolkit and architecture) and the candidate's
 * (everything that goes into its build) into b->key. */
static void nvcc_keys(struct nvcc_job *j, const struct nvcc_info *nvi, const char *text, size_t len,
                      struct kv_build *b) {
  const char *flags[] = {"-O3", j->aflag, "-Xcompiler", "-fPIC"};
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, "kevo-cuda-shim-v1", 18);
  kv_sha256_update(h, nvi->full, strlen(nvi->full) + 1);
  for (size_t i = 0; i < KV_ARRAY_LEN(flags); i++)
    kv_sha256_update(h, flags[i], strlen(flags[i]) + 1);
  kv_sha256_update(h, j->shim, strlen(j->shim) + 1);
  kv_sha256_final(h, j->shim_key);
  struct kv_vendor *ven = j->ven;
  h = kv_sha256_new();
  kv_sha256_update(h, "kevo-cuda-v1", 13);
  kv_sha256_update(h, nvi->full, strlen(nvi->full) + 1);
  for (size_t i = 0; i < KV_ARRAY_LEN(flags); i++)
    kv_sha256_update(h, flags[i], strlen(flags[i]) + 1);
  kv_sha256_update(h, "-Xptxas -v", 11);
  kv_sha256_update(h, ven->summary, strlen(ven->summary) + 1); /* where each library is */
  for (int i = 0; i < ven->ncargs; i++)
    kv_sha256_update(h, ven->cargs[i], strlen(ven->cargs[i]) + 1);
  for (int i = 0; i < ven->nlargs; i++)
    kv_sha256_update(h, ven->largs[i], strlen(ven->largs[i]) + 1);
  kv_sha256_update(h, j->proto, strlen(j->proto) + 1);
  kv_sha256_update(h, j->shim_key, strlen(j->shim_key) + 1);
  kv_sha256_update(h, text, len);
  kv_sha256_final(h, b->key);
}

/* The shim object, built and cached once per key, then put in the build
 * directory: the link runs sandboxed (reads only system directories and the
 * build directory), so it goes in as a hard link (or a copy). 0, or -1 with
 * err. */
static int nvcc_shim(struct nvcc_job *j, int *killed, char *err, size_t errlen) {
  int rc = 0;
  if (kv_obj_lookup(j->objdir, j->shim_entry, cu_sfx_shim) != KV_OBJ_OK) {
    char *argv[] = {j->nv,   "-c",           "-O3", j->aflag, "-Xcompiler",
                    "-fPIC", "kevo_shim.cu", "-o",  "shim.o", NULL};
    struct kv_buf slog;
    kv_buf_init(&slog, KV_LOG_CAP);
    int ok = run_nvcc(j->o, argv, j->dir, j->t_end, NULL, &slog, killed, err, errlen);
    char built[PATH_MAX + 16];
    snprintf(built, sizeof built, "%s/shim.o", j->dir);
    if (ok < 0)
      rc = -1;
    else if (!ok)
      rc = kv_error(err, errlen, "%s: kevo's generated call shim does not compile with %s: %.1500s",
                    j->t->name, j->nv, slog.data ? slog.data : "");
    else if (rename(built, j->shim_o) < 0)
      rc = kv_error(err, errlen, "%s: cannot store the shim: %s", j->shim_o, strerror(errno));
    else
      rc = kv_obj_record(j->objdir, j->shim_entry, 1, cu_sfx_shim, err, errlen);
    kv_buf_release(&slog);
    if (rc < 0)
      return -1;
  }
  char local_shim[PATH_MAX + 32];
  snprintf(local_shim, sizeof local_shim, "%s/kevo_shim.o", j->dir);
  if (link(j->shim_o, local_shim) == 0)
    return 0;
  char *bytes = NULL;
  size_t blen = 0;
  if (kv_read_file(j->shim_o, 64 << 20, &bytes, &blen, err, errlen) < 0 ||
      kv_write_file(local_shim, bytes, blen, err, errlen) < 0)
    rc = -1;
  free(bytes);
  return rc;
}

/* The candidate compiled (-Xptxas -v: its kernels' resources in the log)
 * and linked with the shim and the allowed vendor libraries into out.so.
 * 1 built, 0 refused by nvcc (*compiled: whether the compile step passed),
 * -1 with err. */
static int nvcc_candidate(struct nvcc_job *j, struct kv_buf *log, int *killed, int *compiled,
                          char *err, size_t errlen) {
  struct kv_vendor *ven = j->ven;
  char *cargv[16 + 2] = {j->nv,          "-c",      "-O3",        j->aflag,   "-Xcompiler",
                         "-fPIC",        "-Xptxas", "-v",         "-include", "proto.h",
                         "candidate.cu", "-o",      "candidate.o"};
  for (int i = 0, c = 13; i < ven->ncargs; i++)
    cargv[c++] = ven->cargs[i];
  int ok = run_nvcc(j->o, cargv, j->dir, j->t_end, ven, log, killed, err, errlen);
  *compiled = ok > 0;
  if (ok == 0) { /* a vendor header the task does not allow: say so first */
    char hint[512];
    kv_vendor_log_hint(j->t, log->data, hint, sizeof hint);
    if (hint[0])
      prepend(log, hint);
  }
  if (ok <= 0)
    return ok;
  char *largv[16 + KV_VENDOR_MAX_ARGS];
  int a = 0;
  largv[a++] = j->nv;
  largv[a++] = "-shared";
  largv[a++] = j->aflag;
  largv[a++] = "-Xcompiler";
  largv[a++] = "-fPIC";
  largv[a++] = "candidate.o";
  largv[a++] = "kevo_shim.o";
  largv[a++] = "-o";
  largv[a++] = "out.so";
  for (int i = 0; i < ven->nlargs && a < (int)KV_ARRAY_LEN(largv) - 1; i++)
    largv[a++] = ven->largs[i];
  largv[a] = NULL;
  return run_nvcc(j->o, largv, j->dir, j->t_end, ven, log, killed, err, errlen);
}

/* A cache miss: the sources staged in a fresh build directory, the shim,
 * the candidate; its log into b->log and the cache, the build stored when
 * it built; a compile error (not a cap, a signal or the deadline, which are
 * not the source's) recorded as one. 0, or -1 with err. */
static int nvcc_compile(struct nvcc_job *j, const char *cache_dir, const char *text, size_t len,
                        struct kv_build *b, char *err, size_t errlen) {
  if (kv_mkdtemp(cache_dir, "build", j->dir, sizeof j->dir, err, errlen) < 0)
    return -1;
  char f_src[PATH_MAX + 32], f_proto[PATH_MAX + 32], f_shim[PATH_MAX + 32];
  snprintf(f_src, sizeof f_src, "%s/candidate.cu", j->dir);
  snprintf(f_proto, sizeof f_proto, "%s/proto.h", j->dir);
  snprintf(f_shim, sizeof f_shim, "%s/kevo_shim.cu", j->dir);
  int rc = -1, killed = 0, compiled = 0, ok = 0;
  struct kv_buf log;
  kv_buf_init(&log, KV_LOG_CAP);
  if (kv_write_file(f_src, text, len, err, errlen) < 0 ||
      kv_write_file(f_proto, j->proto, strlen(j->proto), err, errlen) < 0 ||
      kv_write_file(f_shim, j->shim, strlen(j->shim), err, errlen) < 0 ||
      kv_vendor_stage(j->ven, j->dir, err, errlen) < 0 || nvcc_shim(j, &killed, err, errlen) < 0 ||
      (ok = nvcc_candidate(j, &log, &killed, &compiled, err, errlen)) < 0)
    goto out;
  char out_so[PATH_MAX + 16], cand_o[PATH_MAX + 16];
  snprintf(out_so, sizeof out_so, "%s/out.so", j->dir);
  snprintf(cand_o, sizeof cand_o, "%s/candidate.o", j->dir);
  b->ok = ok > 0 && kv_path_exists(out_so) && kv_path_exists(cand_o);
  if (log.truncated)
    kv_buf_appendf(&log, "\n[log truncated]\n");
  b->log = kv_buf_detach(&log);
  kv_write_file(j->logp, b->log, strlen(b->log), NULL, 0);
  rc = 0;
  if (b->ok) {
    if (rename(cand_o, b->obj_path) < 0 || rename(out_so, b->so_path) < 0)
      rc = kv_error(err, errlen, "%s: cannot store the build: %s", b->so_path, strerror(errno));
    else
      rc = kv_obj_record(j->objdir, b->key, 1, cu_sfx_ok, err, errlen);
  } else if (!killed && !compiled) {
    /* a compile error is a property of the source */
    kv_obj_record(j->objdir, b->key, 0, cu_sfx_fail, NULL, 0);
  }
out:
  kv_buf_release(&log);
  kv_rmtree(j->dir);
  return rc;
}

/* The prototype, the call shim with its guard and the vendor libraries
 * into j. 0, or -1 with err. */
static int nvcc_setup(struct nvcc_job *j, char *err, size_t errlen) {
  j->nv = (char *)kv_nvcc_path(j->o);
  j->proto = kv_task_prototype_alloc(j->t, KV_LANG_CUDA);
  j->shim = kv_task_shim_alloc(j->t, KV_LANG_CUDA);
  char *grown = j->shim ? realloc(j->shim, strlen(j->shim) + sizeof kv_cuda_guard_cu) : NULL;
  if (grown)
    j->shim = grown;
  if (!j->proto || !grown)
    return kv_error(err, errlen,
                    "%s: the task's prototype is over kevo's %u-byte cap (KV_TASK_PROTO_MAX), or "
                    "memory ran out",
                    j->t->name, KV_TASK_PROTO_MAX);
  strcat(j->shim, kv_cuda_guard_cu);
  j->ven = malloc(sizeof *j->ven);
  if (!j->ven)
    return kv_error(err, errlen, "%s: out of memory", j->t->name);
  return kv_vendor_find(j->t, j->o, j->ven, err, errlen);
}

/* Before any build: nvcc and the architecture, the source read (*text,
 * malloc'd) and checked for files it may not include, the prototype, the
 * shim and the libraries, the cache directory. 1 go on, 0 refused (why in
 * b->log), -1 with err. */
static int nvcc_prepare(struct nvcc_job *j, const struct nvcc_info *nvi, const char *src,
                        const char *cache_dir, char **text, size_t *len, struct kv_build *b,
                        char *err, size_t errlen) {
  if (!nvi->ver[0])
    return kv_error(err, errlen,
                    "--surface cuda: nvcc not found; install the CUDA toolkit, put nvcc on PATH "
                    "or set KEVO_NVCC to its path");
  char arch[32], why[512];
  if (kv_cuda_arch(j->o, arch, sizeof arch, err, errlen) < 0)
    return -1;
  kv_cuda_arch_flag(arch, j->aflag, sizeof j->aflag);
  if (kv_read_file(src, KV_SOURCE_MAX, text, len, err, errlen) < 0)
    return -1;
  if (kv_source_files_check(*text, *len, why, sizeof why)) {
    kv_source_files_refusal(why, &b->log);
    return 0;
  }
  if (nvcc_setup(j, err, errlen) < 0 ||
      kv_obj_dir(cache_dir, j->objdir, sizeof j->objdir, err, errlen) < 0)
    return -1;
  return 1;
}

int kv_build_cuda_code(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                       const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                       size_t errlen) {
  /* A kernel-only candidate (launch lines, no entry) goes to NVRTC. */
  int ko = kv_build_cuda_kernels(t, o, src, cache_dir, deadline_s, b, err, errlen);
  if (ko <= 0)
    return ko;
  memset(b, 0, sizeof(*b));
  double t0 = kv_now_s();
  const struct nvcc_info *nvi = nvcc_info(o);
  struct nvcc_job *j = calloc(1, sizeof *j);
  if (!j)
    return kv_error(err, errlen, "%s: out of memory", t->name);
  j->t = t;
  j->o = o;
  j->t_end = t0 + deadline_s;
  char *text = NULL;
  size_t len = 0;
  int rc = nvcc_prepare(j, nvi, src, cache_dir, &text, &len, b, err, errlen);
  if (rc > 0) {
    rc = 0;
    nvcc_keys(j, nvi, text, len, b);
    snprintf(b->so_path, sizeof b->so_path, "%s/%s.so", j->objdir, b->key);
    snprintf(b->obj_path, sizeof b->obj_path, "%s/%s.o", j->objdir, b->key);
    snprintf(j->logp, sizeof j->logp, "%s/%s.log", j->objdir, b->key);
    snprintf(j->shim_entry, sizeof j->shim_entry, "shim-%s", j->shim_key);
    snprintf(j->shim_o, sizeof j->shim_o, "%s/%s.o", j->objdir, j->shim_entry);
    int lock = kv_obj_lock(j->objdir, b->key, deadline_s); /* kv_obj_lock: why */
    int hit = kv_obj_lookup(j->objdir, b->key, cu_sfx_ok);
    if (hit != KV_OBJ_MISS) {
      b->ok = hit == KV_OBJ_OK;
      b->cached = 1;
      size_t ll;
      if (kv_read_file(j->logp, KV_LOG_CAP + 1, &b->log, &ll, NULL, 0) < 0)
        b->log = strdup("");
    } else {
      rc = nvcc_compile(j, cache_dir, text, len, b, err, errlen);
    }
    kv_obj_unlock(lock);
  }
  if (b->log)
    b->nkernels = kv_parse_ptxas(b->log, b->kernels, KV_MAX_KERNELS);
  free(text);
  free(j->proto);
  free(j->shim);
  free(j->ven);
  free(j);
  b->seconds = kv_now_s() - t0;
  return rc;
}
