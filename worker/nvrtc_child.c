/* kevo-nvrtc: the kernel-only contract's compiler child (lib/gate/nvrtc.c
 * runs it). It compiles one CUDA source to a cubin with NVRTC, in process,
 * after sandboxing itself:
 *
 *   kevo-nvrtc LIBNVRTC DIR NAMES OPTION...
 *
 * DIR is the build directory (the only writable one); it holds candidate.cu
 * and NAMES (one kernel name expression a line). Writes DIR/out.cubin and
 * DIR/lowered.txt (each name's lowered, i.e. mangled, name, same order), and
 * the compile log on stdout. Exit 0: compiled; 1: the source does not
 * compile (the log says why); 2: kevo could not run NVRTC (stderr says why).
 *
 * The sandbox (kevo/sandbox.h): every layer the worker has (network
 * namespace, no_new_privs, landlock, seccomp: no exec, fork, sockets, ...),
 * with reads limited to the system directories, libnvrtc's own directory
 * (libnvrtc-builtins.so) and the toolkit's include directory, so that an
 * `#include "/home/..."` or `</proc/self/environ>` fails; NVRTC needs no
 * process of its own. libnvrtc is loaded with dlopen, so kevo builds without
 * a CUDA toolkit. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/sandbox.h"

#define SRC_MAX (1 << 20)
#define NAMES_MAX 64
#define CUBIN_MAX (64 << 20)
#define LOG_MAX (1 << 20)

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

static struct {
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                               const char *const *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
  nvrtcResult (*AddNameExpression)(nvrtcProgram, const char *);
  nvrtcResult (*GetLoweredName)(nvrtcProgram, const char *, const char **);
} nv;

static int die(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "kevo-nvrtc: ");
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\n");
  return 2;
}

static char *slurp(const char *path, size_t cap, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  char *b = malloc(cap + 1);
  size_t n = 0;
  while (b && n <= cap) {
    ssize_t r = read(fd, b + n, cap + 1 - n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  close(fd);
  if (!b || n > cap) {
    free(b);
    return NULL;
  }
  b[n] = 0;
  *len = n;
  return b;
}

static int spill(const char *path, const void *data, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      close(fd);
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return close(fd);
}

int main(int argc, char **argv) {
  if (argc < 4 || argc > 64)
    return die("usage: kevo-nvrtc LIBNVRTC DIR NAMES OPTION...%s%s", "", "");
  const char *lib = argv[1], *dir = argv[2], *names_file = argv[3];
  if (lib[0] != '/' || strlen(lib) >= PATH_MAX || strlen(dir) >= PATH_MAX - 32)
    return die("%s: give libnvrtc's absolute path%s", lib, "");
  /* The sandbox first: read the toolkit's library and include directories. */
  char libdir[PATH_MAX], incdir[PATH_MAX + 16], incdir2[PATH_MAX + 32];
  snprintf(libdir, sizeof libdir, "%s", lib);
  char *sl = strrchr(libdir, '/');
  if (sl)
    *sl = 0;
  snprintf(incdir, sizeof incdir, "%s/../include", libdir);
  snprintf(incdir2, sizeof incdir2, "%s/../../include", libdir); /* targets/x86_64-linux/lib */
  struct kv_sandbox_opts o;
  kv_sandbox_defaults(&o, dir);
  o.cpu_seconds = 300;
  o.file_limit_bytes = (uint64_t)CUBIN_MAX * 2;
  o.mem_limit_bytes = 0; /* NVRTC reserves address space; bound data instead */
  o.data_limit_bytes = 8ULL << 30;
  o.read_paths[o.nread_paths++] = libdir;
  if (access(incdir, F_OK) == 0)
    o.read_paths[o.nread_paths++] = incdir;
  if (access(incdir2, F_OK) == 0)
    o.read_paths[o.nread_paths++] = incdir2;
  struct kv_sandbox_status st;
  kv_sandbox_enter(&o, &st);

  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return die("cannot load %s: %s", lib, dlerror());
#define SYM(m, s)                                                                                  \
  do {                                                                                             \
    void *f_ = dlsym(h, s);                                                                        \
    if (!f_)                                                                                       \
      return die("%s lacks %s: the CUDA toolkit is too old (NVRTC 11.1 or newer)", lib, s);        \
    memcpy(&nv.m, &f_, sizeof f_);                                                                 \
  } while (0)
  SYM(GetErrorString, "nvrtcGetErrorString");
  SYM(CreateProgram, "nvrtcCreateProgram");
  SYM(DestroyProgram, "nvrtcDestroyProgram");
  SYM(CompileProgram, "nvrtcCompileProgram");
  SYM(GetCUBINSize, "nvrtcGetCUBINSize");
  SYM(GetCUBIN, "nvrtcGetCUBIN");
  SYM(GetProgramLogSize, "nvrtcGetProgramLogSize");
  SYM(GetProgramLog, "nvrtcGetProgramLog");
  SYM(AddNameExpression, "nvrtcAddNameExpression");
  SYM(GetLoweredName, "nvrtcGetLoweredName");
#undef SYM

  char path[PATH_MAX + 64];
  size_t slen = 0, nlen = 0;
  snprintf(path, sizeof path, "%s/candidate.cu", dir);
  char *src = slurp(path, SRC_MAX, &slen);
  if (!src)
    return die("%s: cannot read the source (or it is over 1 MiB)%s", path, "");
  if (memchr(src, 0, slen)) {
    printf("candidate.cu: the source holds a NUL byte; remove it\n");
    return 1;
  }
  char *names = slurp(names_file, 64 * 1024, &nlen);
  if (!names)
    return die("%s: cannot read the kernel names%s", names_file, "");
  char *name[NAMES_MAX];
  int nn = 0;
  for (char *p = names, *e; *p && nn < NAMES_MAX; p = e) {
    e = strchr(p, '\n');
    if (e)
      *e++ = 0;
    else
      e = p + strlen(p);
    if (*p)
      name[nn++] = p;
  }
  nvrtcProgram prog;
  nvrtcResult r = nv.CreateProgram(&prog, src, "candidate.cu", 0, NULL, NULL);
  if (r != 0)
    return die("nvrtcCreateProgram: %s%s", nv.GetErrorString(r), "");
  for (int i = 0; i < nn; i++)
    if ((r = nv.AddNameExpression(prog, name[i])) != 0)
      return die("nvrtcAddNameExpression(%s): %s", name[i], nv.GetErrorString(r));
  r = nv.CompileProgram(prog, argc - 4, (const char *const *)(argv + 4));
  size_t ls = 0;
  if (nv.GetProgramLogSize(prog, &ls) == 0 && ls > 1) {
    char *log = malloc(ls);
    if (log && nv.GetProgramLog(prog, log) == 0)
      fwrite(log, 1, strnlen(log, ls < LOG_MAX ? ls : LOG_MAX), stdout);
    free(log);
  }
  fflush(stdout);
  if (r != 0) {
    printf("\nnvrtc: %s\n", nv.GetErrorString(r));
    return 1;
  }
  size_t cs = 0;
  if ((r = nv.GetCUBINSize(prog, &cs)) != 0 || cs == 0 || cs > CUBIN_MAX)
    return die("nvrtcGetCUBINSize: %s%s", r ? nv.GetErrorString(r) : "no cubin or over 64 MiB", "");
  char *cubin = malloc(cs);
  if (!cubin || (r = nv.GetCUBIN(prog, cubin)) != 0)
    return die("nvrtcGetCUBIN: %s%s", cubin ? nv.GetErrorString(r) : "out of memory", "");
  snprintf(path, sizeof path, "%s/out.cubin", dir);
  if (spill(path, cubin, cs) < 0)
    return die("%s: %s", path, strerror(errno));
  char *low = malloc((size_t)NAMES_MAX * 1024);
  size_t lu = 0;
  for (int i = 0; low && i < nn; i++) {
    const char *ln = NULL;
    if ((r = nv.GetLoweredName(prog, name[i], &ln)) != 0 || !ln)
      return die("nvrtcGetLoweredName(%s): %s", name[i], r ? nv.GetErrorString(r) : "none");
    lu += (size_t)snprintf(low + lu, (size_t)NAMES_MAX * 1024 - lu, "%.900s\n", ln);
  }
  snprintf(path, sizeof path, "%s/lowered.txt", dir);
  if (!low || spill(path, low, lu) < 0)
    return die("%s: %s", path, strerror(errno));
  nv.DestroyProgram(&prog);
  return 0;
}
