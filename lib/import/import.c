/* One module in, one task directory out: find the helper, run it as a child
 * with a deadline and a scrubbed environment, turn its reply into task.json,
 * write everything into a temporary directory and rename it into place. */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/import.h"
#include "kevo/task.h"
#include "kevo/util.h"

void kv_import_opts_default(struct kv_import_opts *o) {
  memset(o, 0, sizeof *o);
  o->deadline_s = 120;
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  int64_t host = pages > 0 && psz > 0 ? (int64_t)pages * psz : 0;
  o->max_bytes = host / 8;
  if (o->max_bytes < (int64_t)2 << 30)
    o->max_bytes = (int64_t)2 << 30;
  if (o->max_bytes > (int64_t)16 << 30)
    o->max_bytes = (int64_t)16 << 30;
  o->check_bytes = (int64_t)64 << 20;
  o->threads = 1;
  const char *u = getenv("KEVO_IMPORT_ALLOW_UNSANDBOXED");
  o->allow_unsandboxed = u && !strcmp(u, "1");
}

int kv_import_parse_allow(struct kv_import_opts *o, const char *list, const char *flag, char *err,
                          size_t errlen) {
  static const char *const names[] = {"cublas", "cudnn", "cublaslt"};
  o->nallow = 0;
  for (const char *p = list;;) {
    size_t l = strcspn(p, ",");
    int k = -1;
    for (int i = 0; i < (int)KV_ARRAY_LEN(names); i++)
      if (l == strlen(names[i]) && !strncmp(p, names[i], l))
        k = i;
    if (k < 0)
      return kv_error(err, errlen,
                      "%s: '%.*s' is not a library kevo can allow; give a comma-separated list "
                      "of %s (e.g. %s cublas,cudnn)",
                      flag, (int)(l < 40 ? l : 40), p, KV_IMPORT_ALLOW_NAMES, flag);
    for (int j = 0; j < o->nallow; j++)
      if (!strcmp(o->allow[j], names[k]))
        return kv_error(err, errlen, "%s: '%s' is given twice; name each library once", flag,
                        names[k]);
    o->allow[o->nallow++] = names[k];
    if (!p[l])
      return 0;
    p += l + 1;
  }
}

int kv_import_gpu_memory(int64_t *bytes) {
  char smi[PATH_MAX], err[256];
  if (kv_which("nvidia-smi", smi, sizeof smi) < 0)
    return -1;
  char *argv[] = {smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits", NULL};
  char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", NULL};
  struct kv_buf out;
  kv_buf_init(&out, 4096);
  struct kv_proc_result pr;
  int64_t least = -1;
  if (kv_run(argv, envp, NULL, 10, NULL, NULL, &out, &pr, err, sizeof err) == 0 && pr.exited &&
      pr.status == 0 && out.data)
    for (char *line = out.data; *line;) {
      char *end;
      long long mib = strtoll(line, &end, 10);
      if (end != line && mib > 0 && (least < 0 || mib * (1 << 20) < least))
        least = mib * (int64_t)(1 << 20);
      line += strcspn(line, "\n");
      line += *line == '\n';
    }
  kv_buf_release(&out);
  if (least <= 0)
    return -1;
  *bytes = least;
  return 0;
}

/* task.json with "allow" added, and the caps it was sized by, for the README. */
static char *with_allow(const struct kv_import_opts *o, char *json) {
  if (!o->nallow)
    return json;
  json_t *root = json_loads(json, 0, NULL), *a = json_array();
  for (int i = 0; i < o->nallow; i++)
    json_array_append_new(a, json_string(o->allow[i]));
  char *out = NULL;
  if (root && json_object_set_new(root, "allow", a) == 0)
    out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
  else
    json_decref(a);
  json_decref(root);
  if (!out)
    return NULL;
  free(json);
  size_t n = strlen(out);
  char *grown = realloc(out, n + 2);
  if (grown) {
    memcpy(grown + n, "\n", 2);
    out = grown;
  }
  return out;
}

/* kevo-sandbox, which every module runs in (kevo/import.h). */
static int find_sandbox(const struct kv_import_opts *o, char *out, size_t cap, char *err,
                        size_t errlen) {
  const char *e = o->sandbox && *o->sandbox ? o->sandbox : getenv("KEVO_SANDBOX");
  if (e && *e) {
    if (access(e, X_OK) != 0)
      return kv_error(err, errlen, "%s: kevo-sandbox is not there; rebuild kevo", e);
    snprintf(out, cap, "%s", e);
    return 0;
  }
  if (kv_find_shipped("kevo-sandbox", NULL, 0, out, cap) == 0)
    return 0;
  return kv_error(err, errlen,
                  "kevo-sandbox: not found beside the kevo executable; kevo runs a module only "
                  "inside it (rebuild kevo, or set KEVO_SANDBOX to build/kevo-sandbox)");
}

/* What the sandboxed helper may read besides the system directories: the
 * Python installation (the interpreter's prefix, and a virtual
 * environment's), PYTHONPATH, the user's site-packages, the helper's and
 * the module's directories. Paths are kept in `store`; returns the count. */
#define MAX_READS KV_IMPORT_MAX_READS
static int helper_reads(const char *py, const char *helper, const char *module,
                        char store[MAX_READS][PATH_MAX], const char *reads[MAX_READS]) {
  int n = 0;
  char exe[PATH_MAX], real[PATH_MAX];
  if (kv_which(py, exe, sizeof exe) == 0) {
    snprintf(store[n], PATH_MAX, "%s", exe); /* a venv: VENV/bin/python */
    for (int up = 0; up < 2 && strrchr(store[n], '/'); up++)
      *strrchr(store[n], '/') = 0;
    if (store[n][0])
      n++;
    if (realpath(exe, real)) { /* the interpreter's own prefix */
      snprintf(store[n], PATH_MAX, "%s", real);
      for (int up = 0; up < 2 && strrchr(store[n], '/'); up++)
        *strrchr(store[n], '/') = 0;
      if (store[n][0] && (n == 0 || strcmp(store[n], store[n - 1])))
        n++;
    }
  }
  const char *pp = getenv("PYTHONPATH");
  for (const char *p = pp; p && *p && n < MAX_READS - 4;) {
    size_t l = strcspn(p, ":");
    char one[PATH_MAX];
    snprintf(one, sizeof one, "%.*s", (int)(l < PATH_MAX ? l : 0), p);
    /* Landlock refuses a rule on a path that is not there: such an entry is
     * left out (Python skips it too). */
    if (one[0] && realpath(one, store[n]))
      n++;
    p += l + (p[l] == ':');
  }
  const char *home = getenv("HOME");
  if (home && *home) {
    snprintf(store[n], PATH_MAX, "%s/.local/lib", home);
    if (kv_path_exists(store[n]))
      n++;
  }
  for (int k = 0; k < 2; k++) { /* the helper's and the module's directories */
    if (!realpath(k ? module : helper, real))
      continue;
    char *slash = strrchr(real, '/');
    if (slash && slash != real)
      *slash = 0;
    snprintf(store[n++], PATH_MAX, "%s", real);
  }
  for (int i = 0; i < n; i++)
    reads[i] = store[i];
  return n;
}

int kv_import_sandbox_path(const struct kv_import_opts *o, char *out, size_t cap, char *err,
                           size_t errlen) {
  return find_sandbox(o, out, cap, err, errlen);
}

int kv_import_helper_reads(const char *py, const char *helper, const char *module,
                           char store[KV_IMPORT_MAX_READS][PATH_MAX],
                           const char *reads[KV_IMPORT_MAX_READS]) {
  return helper_reads(py, helper, module, store, reads);
}

int kv_import_sandbox_argv(char **argv, const struct kv_import_opts *o, char *sbx, char *scratch,
                           char *cpu, const char *const *reads, int nr, char datab[32]) {
  int a = 0;
  argv[a++] = sbx;
  argv[a++] = scratch;
  argv[a++] = cpu;
  argv[a++] = "0";
  for (int i = 0; i < nr; i++) {
    argv[a++] = "-r";
    argv[a++] = (char *)reads[i];
  }
  /* seccomp (programs may still run), the data cap, and every layer
   * required unless the user accepted less (kevo/import.h). */
  snprintf(datab, 32, "%lld", (long long)kv_import_data_cap(o));
  argv[a++] = "-s";
  argv[a++] = "-d";
  argv[a++] = datab;
  if (!o->allow_unsandboxed)
    argv[a++] = "-R";
  argv[a++] = "--";
  return a;
}

int kv_import_find_helper(char *out, size_t cap, char *err, size_t errlen) {
  const char *e = getenv("KEVO_IMPORT_HELPER");
  if (e && *e) {
    if (!kv_path_exists(e))
      return kv_error(err, errlen,
                      "KEVO_IMPORT_HELPER=%s: not found; point it at python/kevo_import.py", e);
    snprintf(out, cap, "%s", e);
    return 0;
  }
  if (kv_find_shipped("kevo_import.py", NULL, 1, out, cap) == 0)
    return 0;
  return kv_error(err, errlen,
                  "kevo_import.py: not found beside the kevo executable nor in the source tree; "
                  "rebuild kevo or set KEVO_IMPORT_HELPER to python/kevo_import.py");
}

void kv_import_task_name(const char *path, char *out, size_t cap) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t n = strlen(b);
  if (n > 3 && !strcmp(b + n - 3, ".py"))
    n -= 3;
  size_t k = 0;
  for (size_t i = 0; i < n && k + 1 < cap && k < 63; i++) {
    char c = b[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '_' || c == '-' || c == '.';
    out[k++] = ok ? c : '_';
  }
  if (k == 0 && cap > 1)
    out[k++] = '_';
  if (cap)
    out[k < cap ? k : cap - 1] = 0;
}

static int skip(struct kv_import_result *r, const char *cause, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int skip(struct kv_import_result *r, const char *cause, const char *fmt, ...) {
  r->ok = 0;
  snprintf(r->cause, sizeof r->cause, "%s", cause);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
  return 0;
}

/* The last few lines of the child's output, on one line. */
static void tail_of(const char *s, size_t n, char *out, size_t cap) {
  size_t start = n > 400 ? n - 400 : 0;
  size_t k = 0;
  for (size_t i = start; i < n && k + 1 < cap; i++)
    out[k++] = (s[i] == '\n' || s[i] == '\r' || s[i] == '\t') ? ' ' : s[i];
  while (k > 0 && out[k - 1] == ' ')
    k--;
  out[k] = 0;
}

/* The entries a candidate defines, for the task's README: what the model or
 * the user writes (kevo task check prints it too), appended to b (nothing
 * when the task does not load). The headers are sized from the task. */
static void readme_entries(const char *dir, struct kv_buf *b) {
  struct kv_task *t;
  char err[512];
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    return;
  char *c = kv_task_prototype_alloc(t, KV_LANG_C), *cu = kv_task_prototype_alloc(t, KV_LANG_CUDA);
  if (c && cu)
    kv_buf_appendf(b,
                   "\n## What a candidate defines\n\n"
                   "kevo includes this header before the candidate (C, `--surface cpu`, "
                   "candidate.c):\n\n```c\n%s```\n\n"
                   "and this one on the cuda surface (candidate.cu, its work launched on "
                   "`stream`):\n\n```cuda\n%s```\n\n"
                   "`kevo task check` prints the declaration too.\n",
                   c, cu);
  free(c);
  free(cu);
  kv_task_free(t);
}

static int write_task(const char *dir, const char *name, const char *json, const char *src,
                      size_t srclen, const char *py_path, const char *readme_extra, char *err,
                      size_t errlen) {
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/task.json", dir);
  if (kv_write_file(p, json, strlen(json), err, errlen) < 0)
    return -1;
  snprintf(p, sizeof p, "%s/reference.py", dir);
  if (kv_write_file(p, src, srclen, err, errlen) < 0)
    return -1;
  char abs[PATH_MAX], hex[65], when[32];
  if (!realpath(py_path, abs))
    snprintf(abs, sizeof abs, "%s", py_path);
  kv_sha256_hex(src, srclen, hex);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%d", &tm);
  struct kv_buf b;
  kv_buf_init(&b, 3 * (size_t)KV_TASK_PROTO_MAX);
  kv_buf_appendf(&b,
                 "%s: imported by `kevo import` on %s from %s (sha256 %.16s); reference.py "
                 "is that file verbatim%s.\n",
                 name, when, abs, hex, readme_extra);
  readme_entries(dir, &b);
  snprintf(p, sizeof p, "%s/README.md", dir);
  int rc = b.data && !b.truncated ? kv_write_file(p, b.data, b.len, err, errlen)
                                  : kv_error(err, errlen, "%s: the README is over its cap", p);
  kv_buf_release(&b);
  return rc;
}

/* README lines after the first: the byte caps the task was sized by, the
 * libraries it allows. Starts with the first line's closing words. */
static void readme_caps(const struct kv_import_opts *o, char *out, size_t cap) {
  const char *from;
  int64_t mem = kv_task_device_memory(&from);
  struct kv_buf b;
  kv_buf_init(&b, cap);
  kv_buf_appendf(&b,
                 ".\n\nByte caps: each size set's buffers at most %.1f GiB, half the %.1f GiB of "
                 "device memory kevo assumed (%s; the reference's and the candidate's buffers "
                 "are on the device at once; kevo import --device-memory GIB or "
                 "KEVO_DEVICE_MEMORY_GIB changes it)",
                 (double)mem / 2 / (1 << 30), (double)mem / (1 << 30), from);
  if (mem > KV_DEFAULT_DEVICE_MEMORY)
    kv_buf_appendf(&b,
                   ". Other kevo commands assume %.0f GiB: where this task's bench size needs "
                   "more than half of that, run them with KEVO_DEVICE_MEMORY_GIB=%.0f",
                   (double)KV_DEFAULT_DEVICE_MEMORY / (1 << 30), (double)mem / (1 << 30));
  if (o->nallow) {
    kv_buf_appendf(&b, ".\n\nA candidate may call ");
    for (int i = 0; i < o->nallow; i++)
      kv_buf_appendf(&b, "%s%s", i ? (i + 1 == o->nallow ? " and " : ", ") : "", o->allow[i]);
    kv_buf_appendf(&b, " (task.json's allow, from kevo import --allow)");
  }
  snprintf(out, cap, "%s", b.data ? b.data : "");
  kv_buf_release(&b);
}

int64_t kv_import_data_cap(const struct kv_import_opts *o) {
  int64_t m = o->max_bytes > 0 ? o->max_bytes : (int64_t)2 << 30;
  return 2 * m + KV_IMPORT_DATA_BASE;
}

int kv_import_module(const struct kv_import_opts *o, const char *py_path, const char *outdir,
                     struct kv_import_result *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  double t0 = kv_now_s();
  kv_import_task_name(py_path, r->name, sizeof r->name);
  char helper[PATH_MAX];
  if (o->helper)
    snprintf(helper, sizeof helper, "%s", o->helper);
  else if (kv_import_find_helper(helper, sizeof helper, err, errlen) < 0)
    return -1;
  const char *py = o->python && *o->python ? o->python : kv_python();

  char *src = NULL;
  size_t srclen = 0;
  char rerr[512];
  struct stat st;
  if (stat(py_path, &st) != 0)
    return skip(r, "read", "%s: cannot read it (%s); check the path", py_path, strerror(errno));
  if (!S_ISREG(st.st_mode))
    return skip(r, "read", "%s: not a regular file; pass a .py module or a directory of them",
                py_path);
  if (st.st_size > KV_IMPORT_MAX_SOURCE)
    return skip(r, "read",
                "%s: %lld bytes, over the %d-byte limit for a module; a KernelBench "
                "module is small",
                py_path, (long long)st.st_size, KV_IMPORT_MAX_SOURCE);
  if (kv_read_file(py_path, KV_IMPORT_MAX_SOURCE, &src, &srclen, rerr, sizeof rerr) < 0)
    return skip(r, "read", "%s: %s", py_path, rerr);

  /* Run the helper in a scratch directory with only the environment it needs. */
  char scratch[PATH_MAX];
  const char *tmp = getenv("TMPDIR");
  if (kv_mkdtemp(tmp && *tmp ? tmp : "/tmp", "kevo-import-", scratch, sizeof scratch, err, errlen) <
      0) {
    free(src);
    return -1;
  }
  char e_path[4200], e_home[4200], e_tmp[4200], e_pp[4200], e_thr[64], e_omp[64], e_mkl[64];
  const char *v = getenv("PATH");
  snprintf(e_path, sizeof e_path, "PATH=%s", v && *v ? v : "/usr/local/bin:/usr/bin:/bin");
  snprintf(e_home, sizeof e_home, "HOME=%s", scratch);
  snprintf(e_tmp, sizeof e_tmp, "TMPDIR=%s", scratch);
  v = getenv("PYTHONPATH");
  snprintf(e_pp, sizeof e_pp, "PYTHONPATH=%s", v ? v : "");
  int thr = o->threads > 0 ? o->threads : 1;
  snprintf(e_thr, sizeof e_thr, "%d", thr);
  snprintf(e_omp, sizeof e_omp, "OMP_NUM_THREADS=%d", thr);
  snprintf(e_mkl, sizeof e_mkl, "MKL_NUM_THREADS=%d", thr);
  char *envp[] = {e_path, e_home, e_tmp, e_pp, e_omp, e_mkl, "LANG=C.UTF-8",
                  "CUDA_VISIBLE_DEVICES=", "PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1",
                  "PYTHONWARNINGS=ignore",
#ifdef KEVO_SANITIZED
                  /* kevo-sandbox's LeakSanitizer needs ptrace, which a host
                   * without namespaces takes away: its refusal then ends in
                   * LSan's fatal error instead of its exit status */
                  "ASAN_OPTIONS=detect_leaks=0",
#endif
                  NULL};
  char maxb[32], chkb[32];
  snprintf(maxb, sizeof maxb, "%lld", (long long)o->max_bytes);
  snprintf(chkb, sizeof chkb, "%lld", (long long)o->check_bytes);
  char abs[PATH_MAX];
  if (!realpath(py_path, abs))
    snprintf(abs, sizeof abs, "%s", py_path);
  /* kevo-sandbox SCRATCH CPU_S FSIZE -r PATH... -- PYTHON -B HELPER MODULE ... */
  char sbx[PATH_MAX], pyexe[PATH_MAX], cpu[32], rstore[MAX_READS][PATH_MAX];
  const char *reads[MAX_READS];
  if (find_sandbox(o, sbx, sizeof sbx, err, errlen) < 0) {
    kv_rmtree(scratch);
    free(src);
    return -1;
  }
  if (kv_which(py, pyexe, sizeof pyexe) < 0) {
    kv_rmtree(scratch);
    free(src);
    return kv_error(err, errlen,
                    "%s: cannot run %s (not found); install Python 3 with torch or set "
                    "KEVO_PYTHON",
                    py_path, py);
  }
  double dl = o->deadline_s > 0 ? o->deadline_s : 120;
  snprintf(cpu, sizeof cpu, "%d", (int)(dl * (thr > 0 ? thr : 1)) + 10);
  int nr = helper_reads(py, helper, abs, rstore, reads);
  char *argv[24 + 2 * MAX_READS], datab[32];
  int a = kv_import_sandbox_argv(argv, o, sbx, scratch, cpu, reads, nr, datab);
  char *tail_args[] = {pyexe,           "-B", helper,      abs,   "--max-bytes", maxb,
                       "--check-bytes", chkb, "--threads", e_thr, NULL};
  for (size_t i = 0; i < sizeof tail_args / sizeof tail_args[0]; i++)
    argv[a++] = tail_args[i];
  struct kv_buf out;
  kv_buf_init(&out, KV_IMPORT_MAX_OUTPUT);
  struct kv_proc_result pr;
  if (kv_run(argv, envp, scratch, o->deadline_s > 0 ? o->deadline_s : 120, NULL, NULL, &out, &pr,
             err, errlen) < 0) {
    kv_rmtree(scratch);
    kv_buf_release(&out);
    free(src);
    return -1;
  }
  kv_rmtree(scratch);
  /* A sandbox layer that failed is kevo's failure, never the module's. */
  if (pr.exited && pr.status == 125 && out.data && strstr(out.data, "kevo-sandbox: ")) {
    const char *why = strstr(out.data, "kevo-sandbox: ") + 14;
    kv_error(err, errlen, "%s: the module's sandbox could not be set up: %.*s%s", py_path,
             (int)strcspn(why, "\n"), why,
             strstr(why, "unavailable here")
                 ? "; kevo runs no module with a layer missing: allow unprivileged user "
                   "namespaces (netns) or use a kernel with Landlock and seccomp, or accept the "
                   "risk with KEVO_IMPORT_ALLOW_UNSANDBOXED=1"
                 : "");
    kv_buf_release(&out);
    free(src);
    return -1;
  }
  r->seconds = kv_now_s() - t0;
  char tail[512], how[128];
  tail_of(out.data ? out.data : "", out.len, tail, sizeof tail);
  kv_proc_describe(&pr, how, sizeof how);
  int rc = 0;
  char *json = NULL;
  if (pr.timed_out) {
    rc = skip(r, "timeout",
              "%s: did not finish in %.0f s and was killed (a module that hangs, "
              "or one too slow on this CPU); --deadline S gives it longer",
              py_path, o->deadline_s);
    goto done;
  }
  if (!out.data || !strstr(out.data, "KEVO_IMPORT_JSON ")) {
    if (pr.signaled)
      rc = skip(r, "crash", "%s: the Python process running it was %s; its last output: %s",
                py_path, how, tail[0] ? tail : "(none)");
    else if (out.truncated)
      rc = skip(r, "helper",
                "%s: it printed over %d bytes and the helper's reply was lost; keep "
                "the module quiet",
                py_path, KV_IMPORT_MAX_OUTPUT);
    else
      rc = skip(r, "crash",
                "%s: the Python helper %s without a reply (is %s a working Python "
                "3?); its last output: %s",
                py_path, how, py, tail[0] ? tail : "(none)");
    goto done;
  }
  char cause[32], jerr[1200];
  if (kv_import_task_json(out.data, out.len, r->name, r->name, &json, cause, sizeof cause, jerr,
                          sizeof jerr) < 0) {
    rc = skip(r, cause[0] ? cause : "helper", "%s: %s", py_path, jerr);
    goto done;
  }

  char *allowed = with_allow(o, json);
  if (!allowed) {
    rc = kv_error(err, errlen, "%s: cannot add allow to task.json (out of memory)", py_path);
    goto done;
  }
  json = allowed;

  /* Write into a temporary directory beside the target, then rename. */
  char final[PATH_MAX + 80], tdir[PATH_MAX];
  if (kv_mkdirs(outdir, 0755, err, errlen) < 0) {
    rc = -1;
    goto done;
  }
  snprintf(final, sizeof final, "%s/%s", outdir, r->name);
  if (kv_path_exists(final) && !o->force) {
    rc = skip(r, "exists", "%s: %s already exists; remove it or pass --force to replace it",
              py_path, final);
    goto done;
  }
  if (kv_mkdtemp(outdir, ".kevo-import-", tdir, sizeof tdir, err, errlen) < 0) {
    rc = -1;
    goto done;
  }
  char werr[512];
  char extra[1024];
  readme_caps(o, extra, sizeof extra);
  if (write_task(tdir, r->name, json, src, srclen, py_path, extra, werr, sizeof werr) < 0 ||
      kv_import_readme_starter(o, tdir, werr, sizeof werr) < 0 || chmod(tdir, 0755) < 0) {
    kv_rmtree(tdir);
    rc = kv_error(err, errlen, "%s: cannot write the task: %s", py_path, werr);
    goto done;
  }
  if (kv_path_exists(final)) {
    char old[PATH_MAX];
    if (kv_mkdtemp(outdir, ".kevo-import-old-", old, sizeof old, err, errlen) < 0 ||
        rename(final, old) < 0) {
      kv_rmtree(tdir);
      rc = kv_error(err, errlen, "%s: cannot move the old task aside (%s)", final, strerror(errno));
      goto done;
    }
    if (rename(tdir, final) < 0) {
      int e = errno;
      rename(old, final);
      kv_rmtree(tdir);
      rc = kv_error(err, errlen, "%s: cannot rename into place (%s)", final, strerror(e));
      goto done;
    }
    kv_rmtree(old);
  } else if (rename(tdir, final) < 0) {
    int e = errno;
    kv_rmtree(tdir);
    if (e == EEXIST || e == ENOTEMPTY)
      rc = skip(r, "exists", "%s: %s already exists; remove it or pass --force to replace it",
                py_path, final);
    else
      rc = kv_error(err, errlen, "%s: cannot rename into place (%s)", final, strerror(e));
    goto done;
  }
  r->ok = 1;
  snprintf(r->task_dir, sizeof r->task_dir, "%s", final);
done:
  r->seconds = kv_now_s() - t0;
  free(json);
  free(src);
  kv_buf_release(&out);
  return rc;
}
