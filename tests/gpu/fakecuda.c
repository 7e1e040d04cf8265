/* A stand-in libcuda.so.1 for test_kernels_fakedrv: the driver API entry
 * points kevo-worker looks up, over host memory, so that the kernel-only
 * path (the gate's NVRTC build, the bundle, the worker's cubin load, launch
 * lines evaluated per call, arguments marshalled, launch errors reported
 * after the call) runs end to end on a machine without a GPU. Device
 * pointers are host pointers. cuModuleLoadData takes only ELF images (real
 * cubins from NVRTC; the worker's generator fatbin and calibration PTX are
 * refused, so the worker falls back to host inputs); each kernel runs as a
 * host function chosen by a fragment of its lowered name:
 *   kfake_rowsum(const float *x, float *y, int rows, int cols)  row sums
 *   kfake_nothing(float *y)                                     writes nothing
 *   kfake_three(const float *x, float *y, int rows)             3 parameters
 *   kfake_scribble(const float *x, float *y, int rows, int cols) sums, then x[0] = 0
 *   kfake_overrun(const float *x, float *y, int rows, int cols)  sums, then y[rows] = y[rows-1]
 * cuFuncGetParamInfo tells their parameters; cuFuncSetAttribute refuses
 * more than 227 KiB of dynamic shared memory, and cuLaunchKernel a launch
 * beyond what the function was opted in for. Not a GPU model: a test of
 * kevo's plumbing.
 *
 * CUDA IPC across processes: every allocation is a memfd mapped shared;
 * cuIpcGetMemHandle names it (the owner's pid and descriptor), and
 * cuIpcOpenMemHandle in another process maps /proc/PID/fd/FD. The device is
 * one per build tree, its "busy" state a lock on device.lock beside this
 * library: work an attack leaves running after its call holds it, and the
 * clean worker's probe kernel (kv_probe, from PTX) waits for it at most
 * 20 ms a launch, so a busy device shows as a slow probe.
 *
 * Attacks (tests/gpu/fakedrv/cands/): code a candidate's host side would run
 * in its worker's process, run here from its kernel (rows, cols as rowsum's):
 *   kfake_relay_reply  a relay thread on the reply descriptor rewrites CHECK
 *                      replies (outputs recomputed from the returned inputs,
 *                      the guard report emptied); at check sizes the kernel
 *                      sums half of each row and writes y[rows]
 *   kfake_defer        at the bench size (64 x 64) only remembers its calls;
 *                      a relay on the request descriptor does their work
 *                      before passing a FETCH on, and a thread does it as
 *                      "GPU work" (holding the device for 50 ms) once a TIME
 *                      reply has gone out
 *   kfake_hook         writes nothing; rewrites the worker's cuMemcpyDtoH
 *                      entry (found in its own data, made writable) with a
 *                      hook that returns the row sums for any output it
 *                      copies back
 *   kfake_decoy        at the bench size works only into call 0's output
 *                      buffer (the first after its handles went out); a relay on the reply
 * descriptor rewrites the worker's list of its buffers' handles (the answer kevo reads validated
 * calls by) so that every call names that first call's buffers */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
#define OK 0
#define INVALID_VALUE 1
#define INVALID_IMAGE 200
#define NOT_FOUND 500

#define EXPORT __attribute__((visibility("default")))

struct fn {
  const char *frag;
  int nparams;
  size_t sizes[4];
  int smem_optin;
};
static struct fn fns[] = {
    {"kfake_rowsum", 4, {8, 8, 4, 4}, 0},  {"kfake_nothing", 1, {8}, 0},
    {"kfake_three", 3, {8, 8, 4}, 0},      {"kfake_scribble", 4, {8, 8, 4, 4}, 0},
    {"kfake_overrun", 4, {8, 8, 4, 4}, 0}, {"kfake_relay_reply", 4, {8, 8, 4, 4}, 0},
    {"kfake_defer", 4, {8, 8, 4, 4}, 0},   {"kfake_hook", 4, {8, 8, 4, 4}, 0},
    {"kfake_decoy", 4, {8, 8, 4, 4}, 0},   {"kv_probe", 0, {0}, 0},
};
static int mod_token;

EXPORT CUresult cuInit(unsigned f) {
  (void)f;
  return OK;
}
EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = 13000;
  return OK;
}
EXPORT CUresult cuDeviceGet(int *d, int i) {
  *d = i;
  return OK;
}
EXPORT CUresult cuDeviceGetCount(int *n) {
  *n = 1;
  return OK;
}
EXPORT CUresult cuDeviceGetName(char *s, int len, int d) {
  (void)d;
  strncpy(s, "kevo fake GPU", (size_t)len);
  return OK;
}
EXPORT CUresult cuDeviceGetAttribute(int *v, int a, int d) {
  (void)d;
  switch (a) {
  case 75: /* cc major */
    *v = 9;
    break;
  case 76:
    *v = 0;
    break;
  case 16: /* SMs */
    *v = 4;
    break;
  case 38: /* L2 */
    *v = 1 << 20;
    break;
  case 97:
    *v = 232448;
    break;
  default:
    *v = 1000000;
  }
  return OK;
}
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, int d) {
  (void)d;
  *b = (size_t)1 << 30;
  return OK;
}
EXPORT CUresult cuDeviceGetUuid_v2(char *u, int d) {
  (void)d;
  memset(u, 0x5a, 16);
  return OK;
}
EXPORT CUresult cuDevicePrimaryCtxRetain(void **c, int d) {
  (void)d;
  *c = &mod_token;
  return OK;
}
EXPORT CUresult cuCtxSetCurrent(void *c) {
  (void)c;
  return OK;
}
EXPORT CUresult cuCtxSynchronize(void) {
  return OK;
}
EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) {
  *f = *t = (size_t)1 << 30;
  return OK;
}
EXPORT CUresult cuStreamCreate(void **s, unsigned f) {
  (void)f;
  *s = &mod_token;
  return OK;
}
EXPORT CUresult cuStreamSynchronize(void *s) {
  (void)s;
  return OK;
}
static double ev_t[2];
EXPORT CUresult cuEventCreate(void **e, unsigned f) {
  (void)f;
  static int n;
  *e = &ev_t[n++ & 1];
  return OK;
}
EXPORT CUresult cuEventRecord(void *e, void *s) {
  (void)s;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *(double *)e = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return OK;
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  *ms = (float)((*(double *)b - *(double *)a) * 1e3);
  return OK;
}
/* ---- memory: memfds, so that another process can map them ---- */

#define ALLOCS 16384
static struct alloc {
  void *p;
  size_t n;
  int fd; /* ours (cuMemAlloc), or -1: mapped from another process */
} allocs[ALLOCS];
static pthread_mutex_t alloc_mu = PTHREAD_MUTEX_INITIALIZER;

static int alloc_put(void *p, size_t n, int fd) {
  pthread_mutex_lock(&alloc_mu);
  for (int i = 0; i < ALLOCS; i++)
    if (!allocs[i].p) {
      allocs[i] = (struct alloc){p, n, fd};
      pthread_mutex_unlock(&alloc_mu);
      return 0;
    }
  pthread_mutex_unlock(&alloc_mu);
  return -1;
}

static struct alloc *alloc_at(void *p) {
  for (int i = 0; i < ALLOCS; i++)
    if (allocs[i].p == p)
      return &allocs[i];
  return NULL;
}

EXPORT CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
  n = n ? n : 1;
  int fd = memfd_create("fakecuda", MFD_CLOEXEC);
  void *m = fd < 0 || ftruncate(fd, (off_t)n) < 0
                ? MAP_FAILED
                : mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED || alloc_put(m, n, fd) < 0) {
    if (m != MAP_FAILED)
      munmap(m, n);
    if (fd >= 0)
      close(fd);
    return 2;
  }
  *p = (unsigned long long)(uintptr_t)m;
  return OK;
}
EXPORT CUresult cuMemFree_v2(unsigned long long p) {
  pthread_mutex_lock(&alloc_mu);
  struct alloc *a = alloc_at((void *)(uintptr_t)p);
  if (a && a->fd >= 0) {
    munmap(a->p, a->n);
    close(a->fd);
    memset(a, 0, sizeof *a);
  }
  pthread_mutex_unlock(&alloc_mu);
  return a ? OK : INVALID_VALUE;
}

/* The allocation holding p (its start and size), as the driver's. */
EXPORT CUresult cuMemGetAddressRange_v2(unsigned long long *base, size_t *size,
                                        unsigned long long p) {
  pthread_mutex_lock(&alloc_mu);
  struct alloc *a = NULL;
  for (int i = 0; i < ALLOCS && !a; i++)
    if (allocs[i].p && (uintptr_t)p >= (uintptr_t)allocs[i].p &&
        (uintptr_t)p < (uintptr_t)allocs[i].p + allocs[i].n)
      a = &allocs[i];
  if (a) {
    *base = (unsigned long long)(uintptr_t)a->p;
    *size = a->n;
  }
  pthread_mutex_unlock(&alloc_mu);
  return a ? OK : INVALID_VALUE;
}

typedef struct {
  char reserved[64];
} ipc_handle;

EXPORT CUresult cuIpcGetMemHandle(ipc_handle *h, unsigned long long p) {
  struct alloc *a = alloc_at((void *)(uintptr_t)p);
  if (!a || a->fd < 0)
    return INVALID_VALUE;
  memset(h, 0, sizeof *h);
  snprintf(h->reserved, sizeof h->reserved, "kvfake %d %d %zu", (int)getpid(), a->fd, a->n);
  return OK;
}
EXPORT CUresult cuIpcOpenMemHandle_v2(unsigned long long *p, ipc_handle h, unsigned flags) {
  (void)flags;
  int pid, fd;
  size_t n;
  char path[64];
  if (sscanf(h.reserved, "kvfake %d %d %zu", &pid, &fd, &n) != 3 || pid == (int)getpid())
    return INVALID_VALUE;
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  int f = open(path, O_RDWR | O_CLOEXEC);
  void *m = f < 0 ? MAP_FAILED : mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  if (f >= 0)
    close(f);
  if (m == MAP_FAILED || alloc_put(m, n, -1) < 0)
    return INVALID_VALUE;
  *p = (unsigned long long)(uintptr_t)m;
  return OK;
}
EXPORT CUresult cuIpcCloseMemHandle(unsigned long long p) {
  pthread_mutex_lock(&alloc_mu);
  struct alloc *a = alloc_at((void *)(uintptr_t)p);
  if (a && a->fd < 0) {
    munmap(a->p, a->n);
    memset(a, 0, sizeof *a);
  }
  pthread_mutex_unlock(&alloc_mu);
  return a ? OK : INVALID_VALUE;
}

/* ---- the device's busy state, across processes ---- */

static int device_fd(void) {
  static int fd = -2;
  if (fd == -2) {
    Dl_info di;
    char path[4096];
    const char *slash =
        dladdr((void *)&device_fd, &di) && di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
    snprintf(path, sizeof path, "%.*s/device.lock", slash ? (int)(slash - di.dli_fname) : 1,
             slash ? di.dli_fname : ".");
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  }
  return fd;
}

/* The probe: runs once the device is free, or after 20 ms. */
static void probe_run(void) {
  int fd = device_fd();
  for (int i = 0; fd >= 0 && i < 200; i++) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      flock(fd, LOCK_UN);
      return;
    }
    usleep(100);
  }
}

EXPORT CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *h, size_t n) {
  memcpy((void *)(uintptr_t)d, h, n);
  return OK;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *h, unsigned long long d, size_t n) {
  memcpy(h, (void *)(uintptr_t)d, n);
  return OK;
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *h, size_t n, void *s) {
  (void)s;
  return cuMemcpyHtoD_v2(d, h, n);
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long a, size_t n,
                                     void *s) {
  (void)s;
  memmove((void *)(uintptr_t)d, (void *)(uintptr_t)a, n);
  return OK;
}
EXPORT CUresult cuMemsetD8Async(unsigned long long d, unsigned char v, size_t n, void *s) {
  (void)s;
  memset((void *)(uintptr_t)d, v, n);
  return OK;
}
EXPORT CUresult cuMemsetD16Async(unsigned long long d, unsigned short v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; i++)
    memcpy((char *)(uintptr_t)d + 2 * i, &v, 2);
  return OK;
}
EXPORT CUresult cuMemsetD32Async(unsigned long long d, unsigned v, size_t n, void *s) {
  (void)s;
  for (size_t i = 0; i < n; i++)
    memcpy((char *)(uintptr_t)d + 4 * i, &v, 4);
  return OK;
}
EXPORT CUresult cuMemsetD2D32Async(unsigned long long d, size_t pitch, unsigned v, size_t w,
                                   size_t h, void *s) {
  (void)s;
  for (size_t r = 0; r < h; r++)
    for (size_t i = 0; i < w; i++)
      memcpy((char *)(uintptr_t)d + r * pitch + 4 * i, &v, 4);
  return OK;
}
EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == INVALID_VALUE   ? "CUDA_ERROR_INVALID_VALUE"
       : r == INVALID_IMAGE ? "CUDA_ERROR_INVALID_IMAGE"
       : r == NOT_FOUND     ? "CUDA_ERROR_NOT_FOUND"
                            : "CUDA_ERROR_UNKNOWN";
  return OK;
}
EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
  return cuGetErrorName(r, s);
}
EXPORT CUresult cuModuleLoadData(void **m, const void *img) {
  /* PTX: only the clean worker's probe. */
  int probe = !memcmp(img, ".version", 8) && strstr(img, ".entry kv_probe");
  if (memcmp(img, "\177ELF", 4) != 0 && !probe)
    return INVALID_IMAGE;
  *m = &mod_token;
  return OK;
}
EXPORT CUresult cuModuleLoadDataEx(void **m, const void *img, unsigned n, int *o, void **v) {
  (void)n;
  (void)o;
  (void)v;
  return cuModuleLoadData(m, img);
}
EXPORT CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
  (void)m;
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (strstr(name, fns[i].frag)) {
      *f = &fns[i];
      return OK;
    }
  return NOT_FOUND;
}
EXPORT CUresult cuFuncGetParamInfo(void *f, size_t i, size_t *off, size_t *size) {
  struct fn *k = f;
  if (i >= (size_t)k->nparams)
    return INVALID_VALUE;
  *off = 8 * i;
  *size = k->sizes[i];
  return OK;
}
EXPORT CUresult cuFuncSetAttribute(void *f, int a, int v) {
  struct fn *k = f;
  if (a == 8) {
    if (v > 232448)
      return INVALID_VALUE;
    k->smem_optin = v;
  }
  return OK;
}
EXPORT CUresult cuFuncGetAttribute(int *v, int a, void *f) {
  (void)a;
  (void)f;
  *v = 0;
  return OK;
}
/* ---- attacks: what a candidate's host code could do in its worker ---- */

static int rd_all(int fd, void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = read(fd, (char *)p + k, n - k);
    if (r <= 0)
      return -1;
    k += (size_t)r;
  }
  return 0;
}

static void wr_all(int fd, const void *p, size_t n) {
  for (size_t k = 0; k < n;) {
    ssize_t r = write(fd, (const char *)p + k, n - k);
    if (r <= 0)
      return;
    k += (size_t)r;
  }
}

/* One frame from fd: its header, JSON (NUL-terminated) and blob (malloc'd). */
struct frame {
  unsigned char h[28];
  uint32_t type, jl;
  uint64_t bl;
  char *js;
  uint8_t *blob;
};

static int frame_read(int fd, struct frame *f) {
  if (rd_all(fd, f->h, sizeof f->h) < 0)
    return -1;
  memcpy(&f->type, f->h + 4, 4);
  memcpy(&f->jl, f->h + 16, 4);
  memcpy(&f->bl, f->h + 20, 8);
  f->js = malloc(f->jl + 1);
  f->blob = malloc(f->bl + 1);
  if (!f->js || !f->blob || rd_all(fd, f->js, f->jl) < 0 || rd_all(fd, f->blob, f->bl) < 0)
    return -1;
  f->js[f->jl] = 0;
  return 0;
}

static void frame_write(int fd, struct frame *f) {
  wr_all(fd, f->h, sizeof f->h);
  wr_all(fd, f->js, f->jl);
  wr_all(fd, f->blob, f->bl);
  free(f->js);
  free(f->blob);
}

/* Moves descriptor fd onto a pipe: the relay's end in *mine, the real
 * channel in *real. to_worker: requests (the worker reads the pipe). */
static int hijack(int fd, int to_worker, int *mine, int *real) {
  int p[2];
  if (pipe(p) < 0 || (*real = dup(fd)) < 0 || dup2(to_worker ? p[0] : p[1], fd) != fd)
    return -1;
  *mine = to_worker ? p[1] : p[0];
  return 0;
}

static void row_sums(const float *x, float *y, int rows, int cols, int upto) {
  for (int r = 0; r < rows; r++) {
    float acc = 0;
    for (int c = 0; c < upto; c++)
      acc += x[(size_t)r * (size_t)cols + c];
    y[r] = acc;
  }
}

/* relay_reply: each CHECK reply's outputs recomputed from the inputs the blob
 * carries after them (per call: y, then x), the guard report emptied. */
static volatile int rr_rows, rr_cols;
static int rr_in, rr_out;

static void *relay_reply_main(void *arg) {
  (void)arg;
  struct frame f;
  while (frame_read(rr_in, &f) == 0) {
    char *g = strstr(f.js, "\"guard\":[");
    char *e = g ? strchr(g, ']') : NULL;
    for (char *q = g ? g + 9 : NULL; e && q < e; q++)
      *q = ' ';
    long rows = rr_rows, cols = rr_cols, per = rows + rows * cols;
    float *b = (float *)f.blob;
    for (long c = 0; per > 0 && (uint64_t)((c + 1) * per * 4) <= f.bl; c++)
      row_sums(b + c * per + rows, b + c * per, (int)rows, (int)cols, (int)cols);
    frame_write(rr_out, &f);
  }
  return NULL;
}

static void attack_relay_reply(const float *x, float *y, int rows, int cols) {
  static int started;
  if (!started++ && hijack(4, 0, &rr_in, &rr_out) == 0) {
    pthread_t t;
    pthread_create(&t, NULL, relay_reply_main, NULL);
  }
  rr_rows = rows;
  rr_cols = cols;
  int bench = rows == 64 && cols == 64;
  row_sums(x, y, rows, cols, bench ? cols : (cols + 1) / 2);
  if (!bench)
    y[rows] = 0.0f;
}

/* defer and hook: the calls whose work is owed, by output. */
static struct owed {
  const float *x;
  float *y;
  int rows, cols;
} owed[4096];
static int nowed;
static pthread_mutex_t owed_mu = PTHREAD_MUTEX_INITIALIZER;

static void owe(const float *x, float *y, int rows, int cols) {
  pthread_mutex_lock(&owed_mu);
  int i = 0;
  while (i < nowed && owed[i].y != y)
    i++;
  if (i < 4096) {
    owed[i] = (struct owed){x, y, rows, cols};
    nowed += i == nowed;
  }
  pthread_mutex_unlock(&owed_mu);
}

static void pay_all(void) {
  pthread_mutex_lock(&owed_mu);
  for (int i = 0; i < nowed; i++)
    row_sums(owed[i].x, owed[i].y, owed[i].rows, owed[i].cols, owed[i].cols);
  nowed = 0;
  pthread_mutex_unlock(&owed_mu);
}

/* defer: requests pass through one relay (the work is done before a FETCH
 * goes on), replies through another (after a TIME reply has gone out, the
 * work runs as GPU work would: holding the device, for 5 ms). */
static int dq_in, dq_out, dr_in, dr_out;

static void *defer_requests(void *arg) {
  (void)arg;
  struct frame f;
  while (frame_read(dq_in, &f) == 0) {
    if (f.type == 9) /* KV_MSG_FETCH */
      pay_all();
    frame_write(dq_out, &f);
  }
  return NULL;
}

static void *defer_replies(void *arg) {
  (void)arg;
  struct frame f;
  while (frame_read(dr_in, &f) == 0) {
    int timed = strstr(f.js, "\"ns\":[") != NULL;
    frame_write(dr_out, &f);
    if (timed && nowed > 0 && device_fd() >= 0 && flock(device_fd(), LOCK_EX) == 0) {
      pay_all();
      usleep(50000);
      flock(device_fd(), LOCK_UN);
    }
  }
  return NULL;
}

static void attack_defer(const float *x, float *y, int rows, int cols) {
  static int started;
  if (!started++ && hijack(3, 1, &dq_out, &dq_in) == 0 && hijack(4, 0, &dr_in, &dr_out) == 0) {
    pthread_t t;
    pthread_create(&t, NULL, defer_requests, NULL);
    pthread_create(&t, NULL, defer_replies, NULL);
  }
  if (rows == 64 && cols == 64)
    owe(x, y, rows, cols);
  else
    row_sums(x, y, rows, cols, cols);
}

/* hook: the worker's table entry for cuMemcpyDtoH, found by its value in the
 * worker's own memory and made writable, now returns the row sums of any
 * output it copies back. */
static CUresult hook_dtoh(void *h, unsigned long long d, size_t n) {
  memcpy(h, (void *)(uintptr_t)d, n);
  pthread_mutex_lock(&owed_mu);
  for (int i = 0; i < nowed; i++)
    if ((uintptr_t)owed[i].y == d && n >= (size_t)owed[i].rows * 4)
      row_sums(owed[i].x, h, owed[i].rows, owed[i].cols, owed[i].cols);
  pthread_mutex_unlock(&owed_mu);
  return OK;
}

/* It reads every word of the process's readable mappings: under
 * AddressSanitizer (make test-asan) not instrumented, or the scan of a
 * redzone aborts the worker before the attack is made. */
__attribute__((no_sanitize_address)) static int install_hook(void) {
  void *want = (void *)&cuMemcpyDtoH_v2, *hook = (void *)&hook_dtoh;
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    char perm[8], path[4096] = "";
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s", &lo, &hi, perm, path) < 3 ||
        perm[0] != 'r' || (path[0] && path[0] != '/') || strstr(path, "memfd") ||
        strstr(path, "libcuda") || hi - lo > (64ul << 20))
      continue;
    for (unsigned long a = lo; a < hi; a += 8)
      if (*(void **)a == want) {
        mprotect((void *)(a & ~4095ul), 4096, PROT_READ | PROT_WRITE);
        memcpy((void *)a, &hook, sizeof hook);
        n++;
      }
  }
  if (f)
    fclose(f);
  return n;
}

static void attack_hook(const float *x, float *y, int rows, int cols) {
  static int installed;
  if (!installed++)
    install_hook();
  owe(x, y, rows, cols); /* owed, never paid: the hook answers for it */
}

/* decoy: every row of an "export" list made the first row (handles are
 * hex or null: no brackets inside a row). */
static int dc_in, dc_out;
static volatile int dc_named; /* an export list went out: call 0 comes next */

static void decoy_rewrite(struct frame *f) {
  char *ex = strstr(f->js, "\"export\":[[");
  char *r0 = ex ? ex + 10 : NULL, *r0e = r0 ? strchr(r0, ']') : NULL;
  char *end = r0e ? strstr(r0e, "]]") : NULL;
  if (!end)
    return;
  size_t rl = (size_t)(r0e - r0) + 1, rows = 1;
  for (char *q = r0e; q < end + 1; q++)
    rows += *q == ']' && q != r0e;
  size_t head = (size_t)(r0 - f->js), tail = strlen(end + 2), n = head + rows * (rl + 1) + tail;
  char *js = malloc(n + 1), *w = js;
  if (!js)
    return;
  memcpy(w, f->js, head);
  w += head;
  for (size_t i = 0; i < rows; i++) {
    memcpy(w, r0, rl);
    w += rl;
    *w++ = i + 1 < rows ? ',' : ']';
  }
  memcpy(w, end + 2, tail + 1);
  dc_named = 1;
  free(f->js);
  f->js = js;
  f->jl = (uint32_t)strlen(js);
  memcpy(f->h + 16, &f->jl, 4);
}

static void *decoy_replies(void *arg) {
  (void)arg;
  struct frame f;
  while (frame_read(dc_in, &f) == 0) {
    decoy_rewrite(&f);
    frame_write(dc_out, &f);
  }
  return NULL;
}

static void attack_decoy(const float *x, float *y, int rows, int cols) {
  static int started;
  static float *first;
  if (!started++ && hijack(4, 0, &dc_in, &dc_out) == 0) {
    pthread_t t;
    pthread_create(&t, NULL, decoy_replies, NULL);
  }
  int bench = rows == 64 && cols == 64;
  if (bench && dc_named) { /* call 0 of the first phase on the named buffers */
    first = y;
    dc_named = 0;
  }
  if (!bench || y == first)
    row_sums(x, y, rows, cols, cols);
}

EXPORT CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned smem, void *s, void **p,
                               void **extra) {
  (void)gy;
  (void)gz;
  (void)by;
  (void)bz;
  (void)s;
  (void)extra;
  struct fn *k = f;
  if (!gx || !bx || (smem > 48 * 1024 && (int)smem > k->smem_optin))
    return INVALID_VALUE;
  if (!strcmp(k->frag, "kv_probe"))
    return probe_run(), OK;
  if (!strcmp(k->frag, "kfake_nothing"))
    return OK;
  const float *x = *(const float **)p[0];
  float *y = *(float **)p[1];
  int rows = *(int *)p[2], cols = k->nparams > 3 ? *(int *)p[3] : 0;
  if (!strcmp(k->frag, "kfake_relay_reply"))
    return attack_relay_reply(x, y, rows, cols), OK;
  if (!strcmp(k->frag, "kfake_defer"))
    return attack_defer(x, y, rows, cols), OK;
  if (!strcmp(k->frag, "kfake_hook"))
    return attack_hook(x, y, rows, cols), OK;
  if (!strcmp(k->frag, "kfake_decoy"))
    return attack_decoy(x, y, rows, cols), OK;
  row_sums(x, y, rows, cols, cols);
  if (!strcmp(k->frag, "kfake_scribble") && rows > 0 && cols > 0)
    ((float *)x)[0] = 0;
  if (!strcmp(k->frag, "kfake_overrun") && rows > 0)
    y[rows] = y[rows - 1];
  return OK;
}
