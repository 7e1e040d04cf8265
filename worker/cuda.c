/* kevo-worker's CUDA runtime.
 *
 * The worker reaches CUDA only through libcuda.so.1, loaded with dlopen after
 * the sandbox is up, so kevo builds and runs where no driver exists. It works
 * in the device's primary context, which the candidate's statically linked
 * CUDA runtime shares: device pointers and the stream pass between the two.
 *
 * Every job allocates fresh device buffers; inputs are generated on the host
 * (the same bytes the parent regenerates) and copied; outputs are poisoned on
 * the device before every call; each call gets the worker's stream and is
 * followed by a device-wide synchronization (cuCtxSynchronize, which also
 * waits for work the candidate put on other streams) and a look at the
 * runtime's last error (the guard linked into every object). Any CUDA error
 * then is fatal: the reply says so and the worker exits, since a sticky error
 * (illegal address, trap) leaves the context unusable; the parent replaces
 * it. A kernel that never ends is the parent's business: it kills the worker
 * at the job's deadline, and the driver reclaims the GPU with the process.
 *
 * Timing: events on the stream around each call, plus the host clock around
 * the call and cuCtxSynchronize; the parent compares the two (work that ran
 * outside the events, e.g. on a side stream, shows up only on the host
 * clock). An L2 flush (a memset of 2x the L2 size) precedes every call. */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_gen.h"
#include "kevo/launch.h"
#include "kevo/runtime.h"
#include "kevo/util.h"
#include "kevo/wire.h"
#include "worker.h"

typedef void (*cuda_shim_fn)(void *const *args, CUstream stream);
typedef int (*guard_fn)(char *buf, int cap);

/* The driver's entry points, alone in their own pages: read-only once looked
 * up (setup), and sealed so by kv_sandbox_lock_exec. */
struct kv_cu_all {
  struct kv_cu t;
  kv_cu_func_get_param_info param_info; /* optional: NULL on older drivers */
  struct kv_cu_ipc ipc;                 /* optional: all NULL without CUDA IPC */
};
#define KV_CU_PAGES ((sizeof(struct kv_cu_all) + 4095) / 4096 * 4096)
static union {
  struct kv_cu_all a;
  char pad[KV_CU_PAGES];
} cu_page __attribute__((aligned(4096)));
#define cu (cu_page.a.t)
static int ready;         /* the context, stream, events and flush buffer exist */
static char problem[600]; /* why not */
static CUdevice dev;
static CUcontext ctx;
static CUstream stream;
static CUevent ev0, ev1, evf; /* evf: before a do_bench flush */
static int nsm, l2;
static CUdeviceptr flushbuf;
static size_t flush_bytes;
static char devname[256];
static int gen_state; /* the device's input generator: 0 not tried, 1 loaded, -1 unavailable */

static const char *cu_msg(CUresult r) {
  static char buf[300];
  const char *name = NULL, *str = NULL;
  if (cu.GetErrorName)
    cu.GetErrorName(r, &name);
  if (cu.GetErrorString)
    cu.GetErrorString(r, &str);
  snprintf(buf, sizeof buf, "%s (%d): %s", name ? name : "CUDA error", r, str ? str : "unknown");
  return buf;
}

/* Any failing CUDA call in a job is fatal: the worker reports it and exits. */
#define CK(call, ...)                                                                              \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != KV_CU_SUCCESS) {                                                                     \
      char what_[256];                                                                             \
      snprintf(what_, sizeof what_, __VA_ARGS__);                                                  \
      reply_fatal("%s: %s", what_, cu_msg(r_));                                                    \
    }                                                                                              \
  } while (0)

/* ---- before the sandbox: what the driver needs to reach ---- */

static void cuda_sandbox(struct kv_sandbox_opts *o) {
  /* The driver reserves address space far beyond any RLIMIT_AS worth setting
   * (and cuInit fails under one); host memory is bounded by RLIMIT_DATA. */
  o->mem_limit_bytes = 0;
  o->data_limit_bytes = 32ULL << 30;
  DIR *d = opendir("/dev");
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL && o->ndev_paths < KV_SANDBOX_MAX_PATHS) {
      if (strncmp(e->d_name, "nvidia", 6) != 0)
        continue;
      char *p = malloc(strlen(e->d_name) + 6);
      if (!p)
        break;
      sprintf(p, "/dev/%s", e->d_name);
      o->dev_paths[o->ndev_paths++] = p; /* lives as long as the process */
    }
    closedir(d);
  }
  /* What cuInit reads, found on an H200 (driver 580) by logging what the
   * sandbox denied: without these and the device nodes it reports no device
   * (and then looks for /proc/modules and modprobe, which stay closed). */
  static const char *const reads[] = {
      "/proc/driver/nvidia", "/sys/bus/pci",  "/proc/sys/vm/mmap_min_addr",
      "/sys/devices",        "/proc/devices", "/sys/module/nvidia"};
  for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
    if (access(reads[i], F_OK) == 0 && o->nread_paths < KV_SANDBOX_MAX_PATHS)
      o->read_paths[o->nread_paths++] = reads[i];
}

/* ---- after the sandbox: the driver, the device, the context ---- */

static void *open_driver(void) {
  static const char *const names[] = {"libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                      "/usr/local/nvidia/lib64/libcuda.so.1",
                                      "/usr/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"};
  char first[300] = "";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h)
      return h;
    if (!first[0]) {
      const char *e = dlerror();
      snprintf(first, sizeof first, "%s", e ? e : "not found");
    }
  }
  snprintf(problem, sizeof problem,
           "no CUDA driver: %s (the cuda surface needs an NVIDIA GPU and its driver)", first);
  return NULL;
}

static int setup(json_t *j) {
  void *h = open_driver();
  if (!h)
    return -1;
#define KV_CU_LOAD(m, sym, alt, ret, params)                                                       \
  {                                                                                                \
    void *f_ = dlsym(h, sym);                                                                      \
    if (!f_ && alt[0])                                                                             \
      f_ = dlsym(h, alt);                                                                          \
    if (!f_) {                                                                                     \
      snprintf(problem, sizeof problem, "libcuda.so.1 lacks %s: the driver is too old", sym);      \
      return -1;                                                                                   \
    }                                                                                              \
    memcpy(&cu.m, &f_, sizeof f_);                                                                 \
  }
  KV_CU_FUNCS(KV_CU_LOAD)
#undef KV_CU_LOAD
  {
    void *f_ = dlsym(h, "cuFuncGetParamInfo");
    memcpy(&cu_page.a.param_info, &f_, sizeof f_);
    void *g_ = dlsym(h, "cuIpcGetMemHandle"), *o_ = dlsym(h, "cuIpcOpenMemHandle_v2"),
         *c_ = dlsym(h, "cuIpcCloseMemHandle");
    if (!o_)
      o_ = dlsym(h, "cuIpcOpenMemHandle");
    if (g_ && o_ && c_) {
      memcpy(&cu_page.a.ipc.get, &g_, sizeof g_);
      memcpy(&cu_page.a.ipc.open, &o_, sizeof o_);
      memcpy(&cu_page.a.ipc.close, &c_, sizeof c_);
      void *r_ = dlsym(h, "cuMemGetAddressRange_v2");
      memcpy(&cu_page.a.ipc.range, &r_, sizeof r_);
    }
  }
  CUresult r;
  int n = 0, drv = 0;
#define STEP(call, what)                                                                           \
  if ((r = (call)) != KV_CU_SUCCESS) {                                                             \
    snprintf(problem, sizeof problem, "%s: %s", what, cu_msg(r));                                  \
    return -1;                                                                                     \
  }
  STEP(cu.Init(0), "cuInit");
  STEP(cu.DriverGetVersion(&drv), "cuDriverGetVersion");
  STEP(cu.DeviceGetCount(&n), "cuDeviceGetCount");
  if (n < 1) {
    snprintf(problem, sizeof problem, "the driver sees no CUDA device");
    return -1;
  }
  STEP(cu.DeviceGet(&dev, 0), "cuDeviceGet");
  int major = 0, minor = 0, clock = 0, optin = 0;
  size_t mem = 0;
  CUuuid uuid;
  STEP(cu.DeviceGetName(devname, sizeof devname - 1, dev), "cuDeviceGetName");
  STEP(cu.DeviceGetAttribute(&major, KV_CU_ATTR_CC_MAJOR, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceGetAttribute(&minor, KV_CU_ATTR_CC_MINOR, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceGetAttribute(&nsm, KV_CU_ATTR_MULTIPROCESSOR_COUNT, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceGetAttribute(&l2, KV_CU_ATTR_L2_CACHE_SIZE, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceGetAttribute(&clock, KV_CU_ATTR_CLOCK_RATE, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceGetAttribute(&optin, KV_CU_ATTR_SMEM_PER_BLOCK_OPTIN, dev), "cuDeviceGetAttribute");
  STEP(cu.DeviceTotalMem(&mem, dev), "cuDeviceTotalMem");
  STEP(cu.DeviceGetUuid(&uuid, dev), "cuDeviceGetUuid");
  STEP(cu.DevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  STEP(cu.CtxSetCurrent(ctx), "cuCtxSetCurrent");
  /* A blocking stream: work a candidate puts on the legacy default stream is
   * ordered with it (and so inside the events); other streams are not. */
  STEP(cu.StreamCreate(&stream, 0), "cuStreamCreate");
  STEP(cu.EventCreate(&ev0, KV_CU_EVENT_DEFAULT), "cuEventCreate");
  STEP(cu.EventCreate(&ev1, KV_CU_EVENT_DEFAULT), "cuEventCreate");
  STEP(cu.EventCreate(&evf, KV_CU_EVENT_DEFAULT), "cuEventCreate");
  flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
  STEP(cu.MemAlloc(&flushbuf, flush_bytes), "cuMemAlloc (the L2 flush buffer)");
#undef STEP
  char arch[16], id[40], device[400];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  const unsigned char *u = (const unsigned char *)uuid.bytes;
  snprintf(id, sizeof id,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
           u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
           u[15]);
  snprintf(device, sizeof device, "cuda:%s %s x%d", devname, arch, nsm);
  json_object_set_new(j, "device", json_string(device));
  json_object_set_new(j, "name", json_string(devname));
  json_object_set_new(j, "arch", json_string(arch));
  json_object_set_new(j, "sms", json_integer(nsm));
  json_object_set_new(j, "l2_bytes", json_integer(l2));
  json_object_set_new(j, "mem_bytes", json_integer((json_int_t)mem));
  json_object_set_new(j, "smem_optin_bytes", json_integer(optin));
  json_object_set_new(j, "clock_khz", json_integer(clock));
  json_object_set_new(j, "driver", json_integer(drv));
  json_object_set_new(j, "uuid", json_string(id));
  json_object_set_new(j, "ipc", json_boolean(cu_page.a.ipc.open != NULL));
  return 0;
}

static void cuda_init(json_t *hello) {
  json_t *j = json_object();
  ready = setup(j) == 0;
  /* The input generator's PTX is JIT-compiled now: once the worker is locked
   * (kv_sandbox_lock_exec) the driver can no longer load its JIT compiler. */
  if (ready)
    mprotect(&cu_page, sizeof cu_page, PROT_READ);
  if (ready && gen_state == 0) {
    char gerr[600];
    gen_state = kv_cugen_init(&cu, gerr, sizeof gerr) == 0 ? 1 : -1;
  }
  json_object_set_new(j, "ok", json_boolean(ready));
  if (!ready)
    json_object_set_new(j, "error", json_string(problem));
  json_object_set_new(hello, "cuda", j);
}

/* ---- calls ---- */

static void check_guard(int slot, const char *when) {
  guard_fn g;
  if (!slot_guard[slot])
    return;
  memcpy(&g, &slot_guard[slot], sizeof g);
  char msg[300] = "";
  int e = g(msg, sizeof msg);
  if (e != 0)
    reply_fatal("%s: the CUDA runtime reported %s", when, msg[0] ? msg : "an error");
}

static int cuda_loaded(int slot) {
  if (!ready)
    return reply_error("the CUDA device is not usable: %s", problem), 1;
  check_guard(slot, "after loading"); /* its constructors ran: anything amiss? */
  return 0;
}

/* Runs the entry of `slot` on the stream and waits for the whole device. */
static uint64_t call_and_sync(int slot, void *const *args, const char *when) {
  cuda_shim_fn f;
  memcpy(&f, &slot_entry[slot], sizeof f);
  uint64_t t0 = kv_now_ns();
  f(args, stream);
  CUresult r = cu.CtxSynchronize();
  uint64_t t1 = kv_now_ns();
  fflush(stdout);
  fflush(stderr);
  if (r != KV_CU_SUCCESS)
    reply_fatal("%s: the device reported %s", when, cu_msg(r));
  check_guard(slot, when);
  return t1 - t0;
}

static CUresult poison_dev(CUdeviceptr p, enum kv_dtype d, size_t n, int which) {
  if (n == 0)
    return KV_CU_SUCCESS;
  uint64_t w = kv_poison_word(d, which);
  switch (kv_dtype_size(d)) {
  case 4:
    return cu.MemsetD32Async(p, (unsigned)w, n, stream);
  case 2:
    return cu.MemsetD16Async(p, (unsigned short)w, n, stream);
  case 8: {
    CUresult r = cu.MemsetD2D32Async(p, 8, (unsigned)w, 1, n, stream);
    return r ? r : cu.MemsetD2D32Async(p + 4, 8, (unsigned)(w >> 32), 1, n, stream);
  }
  default:
    return cu.MemsetD8Async(p, (unsigned char)w, n, stream);
  }
}

static int is_buffer(enum kv_role r) {
  return r == KV_ROLE_IN || r == KV_ROLE_OUT || r == KV_ROLE_INOUT;
}

/* Bytes dev_alloc gives a buffer of `bytes`: rounded up, plus 256 spare. */
static size_t dev_size(size_t bytes) {
  return (bytes + 255) / 256 * 256 + 256; /* even empty buffers get an address */
}

static CUresult dev_alloc(CUdeviceptr *p, size_t bytes) {
  return cu.MemAlloc(p, dev_size(bytes));
}

/* CHECK calls: the spare bytes after a buffer's last element (256 to 511)
 * are its guard zone, the pattern of kv_guard_fill for (seed, param). The
 * device's allocations start aligned, so there is no zone before them. */
#define DEV_GUARD_MAX 512
static void dev_guard_fill(CUdeviceptr d, size_t b, uint64_t seed, int p) {
  uint8_t g[DEV_GUARD_MAX];
  size_t n = dev_size(b) - b;
  kv_guard_fill(g, n, kv_guard_key(seed, p), 0);
  CK(cu.MemcpyHtoD(d + b, g, n), "filling the guard zone after %s", task->params[p].name);
}

/* The first changed byte of that zone, or -1. */
static long dev_guard_changed(CUdeviceptr d, size_t b, uint64_t seed, int p) {
  uint8_t g[DEV_GUARD_MAX];
  size_t n = dev_size(b) - b;
  CK(cu.MemcpyDtoH(g, d + b, n), "copying the guard zone after %s back", task->params[p].name);
  return kv_guard_changed(g, n, kv_guard_key(seed, p), 0);
}

/* Param p's n elements at d into dst: all of them, or with `sampled` those
 * of sample `seed` (kv_sample_indices), gathered on the device when kevo's
 * kernels are loaded, else picked from a whole copy. */
static CUresult copy_back(CUdeviceptr d, int p, int64_t n, int sampled, uint64_t seed,
                          uint8_t *dst) {
  static CUdeviceptr dout; /* the gathered elements, KV_SAMPLE_ELEMS of 8 bytes */
  size_t sz = kv_dtype_size(task->params[p].dtype);
  int64_t k = sampled ? kv_sample_count(n) : n;
  if (k == n)
    return n ? cu.MemcpyDtoH(dst, d, (size_t)n * sz) : KV_CU_SUCCESS;
  CUresult r;
  if (gen_state > 0) {
    if (!dout && (r = cu.MemAlloc(&dout, KV_SAMPLE_ELEMS * 8)) != KV_CU_SUCCESS)
      return dout = 0, r;
    if ((r = kv_cugen_gather(&cu, stream, d, seed, p, (uint64_t)n, (unsigned)sz, dout)) !=
            KV_CU_SUCCESS ||
        (r = cu.StreamSynchronize(stream)) != KV_CU_SUCCESS)
      return r;
    return cu.MemcpyDtoH(dst, dout, (size_t)k * sz);
  }
  int64_t *idx = malloc((size_t)k * sizeof *idx);
  uint8_t *whole = idx ? malloc((size_t)n * sz) : NULL;
  if (!whole) {
    free(idx);
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  }
  kv_sample_indices(seed, p, n, idx);
  if ((r = cu.MemcpyDtoH(whole, d, (size_t)n * sz)) == KV_CU_SUCCESS)
    for (int64_t i = 0; i < k; i++)
      memcpy(dst + (size_t)i * sz, whole + (size_t)idx[i] * sz, sz);
  free(whole);
  free(idx);
  return r;
}

static void free_all(CUdeviceptr *d, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (d[i])
      cu.MemFree(d[i]);
}

/* ---- kernel-only candidates: a cubin and launch lines (kevo/launch.h) ----
 *
 * The gate compiled the candidate's kernels with NVRTC into a bundle
 * (lib/gate/nvrtc.c): "KEVOKRN1\n", one line of JSON (each launch: line,
 * kernel, lowered name, grid, block, smem, args) and the cubin. The cubin is
 * loaded with cuModuleLoadData (machine code: no JIT, no host code at all),
 * and the slot's entry is a launcher of kevo's own: per call it evaluates the
 * launch lines at the call's sizes and launches each kernel, in order, on the
 * worker's stream. A launch the driver refuses is kept for the slot's guard,
 * which check_guard reads after the call, as the CUDA runtime's last error is
 * read for a host-entry candidate. */

#define KBUNDLE_MAX ((size_t)66 << 20)

struct kslot {
  int n;
  struct kv_launch l[KV_LAUNCH_MAX];
  CUfunction f[KV_LAUNCH_MAX];
  int smem_set[KV_LAUNCH_MAX]; /* dynamic shared memory the function was opted in for */
  /* Dimensions at the last sizes seen (a phase's calls share them). */
  int have;
  struct kv_sizeset ss;
  unsigned grid[KV_LAUNCH_MAX][3], block[KV_LAUNCH_MAX][3], smem[KV_LAUNCH_MAX];
  char err[400]; /* the first launch error since the guard last looked */
};
static struct kslot kslots[KV_SLOTS];

static void kernels_call(int slot, void *const *args, CUstream st) {
  struct kslot *k = &kslots[slot];
  struct kv_sizeset ss;
  memset(&ss, 0, sizeof ss);
  for (int p = 0; p < task->nparams; p++)
    if (task->params[p].role == KV_ROLE_SIZE) {
      int v;
      memcpy(&v, args[p], sizeof v);
      ss.values[p] = v;
    }
  if (!k->have || memcmp(&ss, &k->ss, sizeof ss) != 0) {
    k->have = 0;
    for (int i = 0; i < k->n; i++) {
      char e[600];
      if (kv_launch_dims(task, &k->l[i], &ss, k->grid[i], k->block[i], &k->smem[i], e, sizeof e) <
          0) {
        if (!k->err[0])
          snprintf(k->err, sizeof k->err, "%.390s", e);
        return;
      }
    }
    k->ss = ss;
    k->have = 1;
  }
  /* Each argument in a zeroed slot of its own, and zeroed slots beyond: a
   * kernel whose parameters differ from its launch line reads zeros, never
   * kevo's memory. */
  uint64_t vals[KV_LAUNCH_ARGS_MAX + 8][4];
  void *kp[KV_LAUNCH_ARGS_MAX + 8];
  for (int i = 0; i < k->n; i++) {
    const struct kv_launch *l = &k->l[i];
    memset(vals, 0, sizeof vals);
    for (int a = 0; a < KV_LAUNCH_ARGS_MAX + 8; a++) {
      if (a < l->nargs) {
        int p = l->args[a];
        if (is_buffer(task->params[p].role))
          memcpy(vals[a], &args[p], sizeof(void *));
        else
          memcpy(vals[a], args[p], kv_launch_arg_bytes(task, p));
      }
      kp[a] = vals[a];
    }
    CUresult r = KV_CU_SUCCESS;
    if (k->smem[i] > 48 * 1024 && (int)k->smem[i] > k->smem_set[i]) {
      r = cu.FuncSetAttribute(k->f[i], KV_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              (int)k->smem[i]);
      if (r == KV_CU_SUCCESS)
        k->smem_set[i] = (int)k->smem[i];
    }
    if (r == KV_CU_SUCCESS)
      r = cu.LaunchKernel(k->f[i], k->grid[i][0], k->grid[i][1], k->grid[i][2], k->block[i][0],
                          k->block[i][1], k->block[i][2], k->smem[i], st, kp, NULL);
    if (r != KV_CU_SUCCESS) {
      char what[400];
      snprintf(what, sizeof what,
               "launching %.100s (line %d: grid=(%u,%u,%u) block=(%u,%u,%u) smem=%u): %.150s",
               l->kernel, l->line, k->grid[i][0], k->grid[i][1], k->grid[i][2], k->block[i][0],
               k->block[i][1], k->block[i][2], k->smem[i], cu_msg(r));
      if (!k->err[0])
        memcpy(k->err, what, sizeof k->err);
      return; /* the launches after it would see what it did not do */
    }
  }
}

static int kernels_guard(int slot, char *buf, int cap) {
  struct kslot *k = &kslots[slot];
  if (!k->err[0])
    return 0;
  if (buf && cap > 0)
    snprintf(buf, (size_t)cap, "%s", k->err);
  k->err[0] = 0;
  return 1;
}

#define KSLOT_FNS(N)                                                                               \
  static void kernels_call_##N(void *const *args, CUstream st) {                                   \
    kernels_call(N, args, st);                                                                     \
  }                                                                                                \
  static int kernels_guard_##N(char *buf, int cap) {                                               \
    return kernels_guard(N, buf, cap);                                                             \
  }
KSLOT_FNS(0)
KSLOT_FNS(1)
KSLOT_FNS(2)
static const cuda_shim_fn kcall[KV_SLOTS] = {kernels_call_0, kernels_call_1, kernels_call_2};
static const guard_fn kguard[KV_SLOTS] = {kernels_guard_0, kernels_guard_1, kernels_guard_2};

static int jstr(json_t *o, const char *key, char *out, size_t cap) {
  const char *v = json_string_value(json_object_get(o, key));
  if (!v || strlen(v) >= cap)
    return -1;
  snprintf(out, cap, "%s", v);
  return 0;
}

static int jexprs(json_t *o, const char *key, char out[][KV_LAUNCH_EXPR_MAX], int *n) {
  json_t *a = json_object_get(o, key);
  if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
    return -1;
  *n = (int)json_array_size(a);
  for (int i = 0; i < *n; i++) {
    const char *v = json_string_value(json_array_get(a, (size_t)i));
    if (!v || strlen(v) >= KV_LAUNCH_EXPR_MAX)
      return -1;
    snprintf(out[i], KV_LAUNCH_EXPR_MAX, "%s", v);
  }
  return 0;
}

/* Loads a bundle into slot: 0, or -1 with the reason in msg. */
static int cuda_load_kernels(int slot, const char *path, char *msg, size_t cap) {
  if (!ready)
    return snprintf(msg, cap, "the CUDA device is not usable: %s", problem), -1;
  if (slot < 0 || slot >= KV_SLOTS || !task)
    return snprintf(msg, cap, "bad LOAD request"), -1;
  char *data = NULL;
  size_t len = 0;
  char e[512];
  if (kv_read_file(path, KBUNDLE_MAX, &data, &len, e, sizeof e) < 0)
    return snprintf(msg, cap, "%s", e), -1;
  char *nl1 = len > 9 ? memchr(data, '\n', len) : NULL;
  char *nl2 = nl1 ? memchr(nl1 + 1, '\n', len - (size_t)(nl1 + 1 - data)) : NULL;
  if (!nl2 || nl1 - data != 8 || memcmp(data, "KEVOKRN1", 8) != 0) {
    free(data);
    return snprintf(msg, cap, "%s: not a kevo kernel bundle", path), -1;
  }
  json_error_t je;
  json_t *j = json_loadb(nl1 + 1, (size_t)(nl2 - nl1 - 1), 0, &je);
  const uint8_t *cubin = (const uint8_t *)nl2 + 1;
  size_t cubin_len = len - (size_t)(nl2 + 1 - data);
  json_t *ls = json_object_get(j, "launch");
  struct kslot *k = &kslots[slot];
  memset(k, 0, sizeof *k);
  int bad = !json_is_array(ls) || json_array_size(ls) < 1 || json_array_size(ls) > KV_LAUNCH_MAX ||
            (size_t)json_integer_value(json_object_get(j, "cubin_bytes")) != cubin_len;
  char lowered[KV_LAUNCH_MAX][1024];
  for (size_t i = 0; !bad && i < json_array_size(ls); i++) {
    json_t *o = json_array_get(ls, i);
    struct kv_launch *l = &k->l[i];
    l->line = (int)json_integer_value(json_object_get(o, "line"));
    json_t *args = json_object_get(o, "args");
    bad = jstr(o, "kernel", l->kernel, sizeof l->kernel) < 0 ||
          jstr(o, "name", lowered[i], sizeof lowered[i]) < 0 ||
          jstr(o, "smem", l->smem, sizeof l->smem) < 0 ||
          jexprs(o, "grid", l->grid, &l->ngrid) < 0 ||
          jexprs(o, "block", l->block, &l->nblock) < 0 || !json_is_array(args) ||
          json_array_size(args) > KV_LAUNCH_ARGS_MAX;
    for (size_t a = 0; !bad && a < json_array_size(args); a++) {
      json_int_t p = json_integer_value(json_array_get(args, a));
      bad = p < 0 || p >= task->nparams;
      l->args[a] = (int)p;
      l->nargs = (int)a + 1;
    }
    k->n = (int)i + 1;
  }
  json_decref(j);
  if (bad) {
    free(data);
    memset(k, 0, sizeof *k);
    return snprintf(msg, cap, "%s: a malformed kevo kernel bundle", path), -1;
  }
  /* The cubin's own bytes, 8-aligned for the driver. */
  void *img = malloc(cubin_len + 8);
  if (!img) {
    free(data);
    return snprintf(msg, cap, "out of memory"), -1;
  }
  memcpy(img, cubin, cubin_len);
  free(data);
  CUmodule mod;
  CUresult r = cu.ModuleLoadData(&mod, img);
  free(img);
  if (r != KV_CU_SUCCESS) {
    memset(k, 0, sizeof *k);
    return snprintf(msg, cap, "cuModuleLoadData (the candidate's cubin): %s", cu_msg(r)), -1;
  }
  for (int i = 0; i < k->n; i++) {
    struct kv_launch *l = &k->l[i];
    if ((r = cu.ModuleGetFunction(&k->f[i], mod, lowered[i])) != KV_CU_SUCCESS) {
      snprintf(msg, cap, "candidate.cu:%d: kevo:launch %s: the cubin has no kernel %s: %s", l->line,
               l->kernel, lowered[i], cu_msg(r));
      memset(k, 0, sizeof *k);
      return -1;
    }
    /* The kernel's parameters against the launch line (where the driver
     * tells them): their number and each one's size. */
    if (cu_page.a.param_info) {
      int np = 0;
      size_t off, sz;
      while (np <= KV_LAUNCH_ARGS_MAX + 1 &&
             cu_page.a.param_info(k->f[i], (size_t)np, &off, &sz) == KV_CU_SUCCESS) {
        if (np < l->nargs && sz != kv_launch_arg_bytes(task, l->args[np])) {
          snprintf(msg, cap,
                   "candidate.cu:%d: kevo:launch %s: args[%d] (%s) is passed as %zu bytes but the "
                   "kernel's parameter %d takes %zu; declare it as %s",
                   l->line, l->kernel, np, task->params[l->args[np]].name,
                   kv_launch_arg_bytes(task, l->args[np]), np, sz,
                   is_buffer(task->params[l->args[np]].role) ? "a pointer"
                   : task->params[l->args[np]].role == KV_ROLE_SIZE
                       ? "int"
                       : kv_dtype_ctype(task->params[l->args[np]].dtype, KV_LANG_CUDA));
          memset(k, 0, sizeof *k);
          return -1;
        }
        np++;
      }
      if (np != l->nargs) {
        snprintf(msg, cap,
                 "candidate.cu:%d: kevo:launch %s: the kernel takes %d parameters but args names "
                 "%d; make args=(...) list the kernel's parameters in order",
                 l->line, l->kernel, np, l->nargs);
        memset(k, 0, sizeof *k);
        return -1;
      }
    }
  }
  memcpy(&slot_entry[slot], &kcall[slot], sizeof(void *));
  memcpy(&slot_guard[slot], &kguard[slot], sizeof(void *));
  return 0;
}

/* ---- lent buffers: the clean worker owns them, the candidate's maps them ----
 *
 * The buffers of the candidate's checked calls and of its timed calls (any
 * of which may be validated) belong to the clean reference worker, which
 * never loads candidate code: it allocates each buffer apart (a guard zone
 * of LEND_PRE bytes before it, the spare bytes of dev_size after it),
 * exports a CUDA IPC handle to each allocation and, asked by kevo, fills
 * inputs, poisoned outputs and guard zones (keyed by a secret of kevo's).
 * The candidate's worker maps the handles and runs the candidate into them;
 * once it has answered, kevo stops it and the clean worker, after the GPU
 * has settled (its own probe kernel runs promptly: no work of another
 * context is left), copies outputs, inputs and guard zones back in its own
 * context. Nothing the candidate's process says or does after answering
 * reaches a number the verdict rests on.
 *
 * One LEND frame, op: "lend" (a lease of `calls` calls at a size set; a
 * lease of the same id and sizes grows, of other sizes is replaced: kevo
 * lends again only once no process maps the old one), "fill", "read" (after
 * settling), "return" (kevo's candidate process is gone). */

#define LEND_PRE 256 /* keeps every lent buffer 256-aligned, as cuMemAlloc's */
/* Every size set of a task (KV_MAX_SIZESETS + KV_MAX_BENCH) and more. */
#define LEASES 96
#define SETTLE_IDLE_MIN_NS 50000 /* a probe this much over its alone time is delayed */

struct lease {
  char id[32];
  struct kv_sizeset ss;
  int64_t nelem[KV_MAX_PARAMS];
  int calls;
  CUdeviceptr (*base)[KV_MAX_PARAMS]; /* calls x params: each buffer's allocation, or 0 */
  json_t *handles;                    /* per call, per param: hex or null */
};
static struct lease leases[LEASES];
static CUfunction probe_fn;
static int64_t probe_alone_ns;

static void hex_of(const unsigned char *b, size_t n, char *out) {
  static const char dig[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = dig[b[i] >> 4];
    out[2 * i + 1] = dig[b[i] & 15];
  }
  out[2 * n] = 0;
}

static int unhex(const char *s, unsigned char *b, size_t n) {
  if (!s || strlen(s) != 2 * n)
    return -1;
  for (size_t i = 0; i < 2 * n; i++) {
    char c = s[i];
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (v < 0)
      return -1;
    b[i / 2] = (unsigned char)(i % 2 ? b[i / 2] | v : v << 4);
  }
  return 0;
}

static void lease_free(struct lease *l) {
  for (int c = 0; c < l->calls && l->base; c++)
    free_all(l->base[c], KV_MAX_PARAMS);
  free(l->base);
  json_decref(l->handles);
  memset(l, 0, sizeof *l);
}

/* The probe: an empty kernel of kevo's own, launched and waited for. Alone
 * it takes a few microseconds; while another context's kernel holds the
 * GPU, until that one's time slice ends or it finishes. */
static const char probe_ptx[] = ".version 7.0\n.target sm_70\n.address_size 64\n"
                                ".visible .entry kv_probe()\n{\n ret;\n}\n";

static int64_t probe_once(void) {
  uint64_t t0 = kv_now_ns();
  CK(cu.LaunchKernel(probe_fn, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL), "launching the probe");
  CK(cu.StreamSynchronize(stream), "the probe");
  return (int64_t)(kv_now_ns() - t0);
}

static void probe_init(void) {
  if (probe_fn)
    return;
  CUmodule mod;
  CK(cu.ModuleLoadData(&mod, probe_ptx), "loading the probe kernel");
  CK(cu.ModuleGetFunction(&probe_fn, mod, "kv_probe"), "cuModuleGetFunction(kv_probe)");
  probe_alone_ns = probe_once(); /* the first one pays for the module */
  for (int i = 0; i < 8; i++) {
    int64_t t = probe_once();
    probe_alone_ns = t < probe_alone_ns ? t : probe_alone_ns;
  }
}

/* Waits until the GPU runs a probe promptly (no other context's work left),
 * at most until `limit_ns`. Into j: settle_ns (from now to the end of the
 * prompt probe), first_ns (the first probe), probes, alone_ns, busy. */
static void settle(uint64_t limit_ns, json_t *j) {
  probe_init();
  int64_t idle = probe_alone_ns * 3;
  if (idle < probe_alone_ns + SETTLE_IDLE_MIN_NS)
    idle = probe_alone_ns + SETTLE_IDLE_MIN_NS;
  uint64_t t0 = kv_now_ns();
  int64_t first = -1, t;
  int n = 0, busy = 0;
  do {
    t = probe_once();
    first = first < 0 ? t : first;
    n++;
    busy = t > idle;
  } while (busy && kv_now_ns() - t0 < limit_ns);
  json_object_update_new(j, json_pack("{s:I,s:I,s:i,s:I,s:b}", "settle_ns",
                                      (json_int_t)(kv_now_ns() - t0), "first_ns", (json_int_t)first,
                                      "probes", n, "alone_ns", (json_int_t)probe_alone_ns, "busy",
                                      busy));
}

static struct lease *lease_find(const char *id) {
  for (int i = 0; id && i < LEASES; i++)
    if (leases[i].id[0] && !strcmp(leases[i].id, id))
      return &leases[i];
  return NULL;
}

/* Grows lease l to m calls: each buffer its own allocation, and its handle. */
static const char *lease_grow(struct lease *l, int m, CUresult *cr) {
  CUdeviceptr(*nb)[KV_MAX_PARAMS] = realloc(l->base, (size_t)m * sizeof *nb);
  if (!nb)
    return "host memory";
  l->base = nb;
  memset(nb + l->calls, 0, (size_t)(m - l->calls) * sizeof *nb);
  for (int c = l->calls; c < m; c++) {
    json_t *row = json_array();
    l->calls = c + 1; /* freed with the lease from here on */
    json_array_append_new(l->handles, row);
    for (int p = 0; p < task->nparams; p++) {
      if (!is_buffer(task->params[p].role)) {
        json_array_append_new(row, json_null());
        continue;
      }
      CUipcMemHandle h;
      char hex[2 * KV_CU_IPC_HANDLE_BYTES + 1];
      size_t b = kv_param_bytes(task, p, l->nelem);
      if ((*cr = cu.MemAlloc(&nb[c][p], LEND_PRE + dev_size(b))) != KV_CU_SUCCESS)
        return nb[c][p] = 0, "cuMemAlloc";
      if ((*cr = cu_page.a.ipc.get(&h, nb[c][p])) != KV_CU_SUCCESS)
        return "cuIpcGetMemHandle";
      hex_of((const unsigned char *)h.reserved, sizeof h.reserved, hex);
      json_array_append_new(row, json_string(hex));
    }
  }
  return NULL;
}

static int lend_lend(json_t *req) {
  const char *id = json_string_value(json_object_get(req, "lease"));
  const struct kv_sizeset *s = pick_set(req);
  int m = (int)json_integer_value(json_object_get(req, "calls"));
  int64_t nelem[KV_MAX_PARAMS];
  char err[512];
  if (!id || strlen(id) >= sizeof leases[0].id || !s || m < 1 || m > 4096)
    return reply_error("bad LEND request");
  if (!cu_page.a.ipc.get)
    return reply_error("this driver offers no CUDA IPC (cuIpcGetMemHandle)");
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  struct lease *l = lease_find(id);
  if (l && memcmp(l->nelem, nelem, sizeof nelem) != 0)
    lease_free(l), l = NULL;
  for (int i = 0; !l && i < LEASES; i++)
    if (!leases[i].id[0]) {
      l = &leases[i];
      snprintf(l->id, sizeof l->id, "%s", id);
      l->ss = *s;
      memcpy(l->nelem, nelem, sizeof nelem);
      l->handles = json_array();
    }
  if (!l)
    return reply_error("more than %d leases at once", LEASES);
  CUresult cr = KV_CU_SUCCESS;
  const char *bad = m > l->calls ? lease_grow(l, m, &cr) : NULL;
  if (bad) {
    char msg[600];
    snprintf(msg, sizeof msg, "lending %d calls' buffers: %s%s%s", m, bad, cr ? ": " : "",
             cr ? cu_msg(cr) : "");
    lease_free(l);
    return reply_error("%s", msg);
  }
  probe_init();
  json_t *hs = json_array();
  for (int c = 0; c < m; c++)
    json_array_append(hs, json_array_get(l->handles, (size_t)c));
  return reply(KV_MSG_REPLY,
               json_pack("{s:o,s:i,s:I}", "handles", hs, "offset", LEND_PRE, "alone_ns",
                         (json_int_t)probe_alone_ns),
               NULL, 0);
}

/* Call c's buffer of param p in the lease (0 for non-buffers). */
static CUdeviceptr lent_buf(const struct lease *l, int c, int p) {
  return l->base[c][p] ? l->base[c][p] + LEND_PRE : 0;
}

static void lent_guard_fill(const struct lease *l, int c, int p, uint64_t key) {
  uint8_t g[DEV_GUARD_MAX];
  size_t b = kv_param_bytes(task, p, l->nelem), n = dev_size(b) - b;
  kv_guard_fill(g, LEND_PRE, kv_guard_key(key, p), 1);
  CK(cu.MemcpyHtoD(l->base[c][p], g, LEND_PRE), "filling the guard zone before %s",
     task->params[p].name);
  kv_guard_fill(g, n, kv_guard_key(key, p), 0);
  CK(cu.MemcpyHtoD(lent_buf(l, c, p) + b, g, n), "filling the guard zone after %s",
     task->params[p].name);
}

/* The first changed byte of either zone of call c's param p, or -1. */
static long lent_guard_changed(const struct lease *l, int c, int p, uint64_t key, int *before) {
  uint8_t g[DEV_GUARD_MAX];
  size_t b = kv_param_bytes(task, p, l->nelem), n = dev_size(b) - b;
  CK(cu.MemcpyDtoH(g, l->base[c][p], LEND_PRE), "reading the guard zone before %s",
     task->params[p].name);
  long k = kv_guard_changed(g, LEND_PRE, kv_guard_key(key, p), 1);
  *before = k >= 0;
  if (k >= 0)
    return k;
  CK(cu.MemcpyDtoH(g, lent_buf(l, c, p) + b, n), "reading the guard zone after %s",
     task->params[p].name);
  return kv_guard_changed(g, n, kv_guard_key(key, p), 0);
}

static int lend_fill(json_t *req) {
  struct lease *l = lease_find(json_string_value(json_object_get(req, "lease")));
  int c = (int)json_integer_value(json_object_get(req, "call"));
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
  uint64_t key = (uint64_t)json_integer_value(json_object_get(req, "key"));
  int poison = (int)json_integer_value(json_object_get(req, "poison"));
  if (!l || c < 0 || c >= l->calls)
    return reply_error("bad LEND fill request");
  void *hin[KV_MAX_PARAMS] = {0};
  int on_dev = gen_state > 0;
  for (int p = 0; p < task->nparams && !on_dev; p++)
    if (kv_is_input(task->params[p].role) &&
        !(hin[p] = malloc(kv_param_bytes(task, p, l->nelem) + 1))) {
      for (int q = 0; q < KV_MAX_PARAMS; q++)
        free(hin[q]);
      return reply_error("out of memory for the inputs");
    }
  if (!on_dev)
    kv_fill_inputs_mt(task, l->nelem, hin, seed, kv_fill_threads());
  for (int p = 0; p < task->nparams; p++) {
    enum kv_role r = task->params[p].role;
    size_t b = kv_param_bytes(task, p, l->nelem);
    if (!is_buffer(r))
      continue;
    if (kv_is_input(r) && b)
      CK(on_dev ? kv_cugen_fill_param(&cu, stream, task, p, l->nelem[p], lent_buf(l, c, p), seed)
                : cu.MemcpyHtoD(lent_buf(l, c, p), hin[p], b),
         "making input %s", task->params[p].name);
    if (r == KV_ROLE_OUT)
      CK(poison_dev(lent_buf(l, c, p), task->params[p].dtype, (size_t)l->nelem[p], poison),
         "poisoning %s", task->params[p].name);
    CK(cu.StreamSynchronize(stream), "filling %s", task->params[p].name);
    lent_guard_fill(l, c, p, seed ^ key);
  }
  for (int q = 0; q < KV_MAX_PARAMS; q++)
    free(hin[q]);
  return reply(KV_MSG_REPLY, json_object(), NULL, 0);
}

/* Settles, then per call: its guard zones (with "guard": the key they were
 * filled with) and its outputs, then with "inputs" its in buffers, whole or
 * sample "sample" (kv_pack_call's layout, calls in order). No calls: only
 * settles (no lease needed). */
static int lend_read(json_t *req) {
  struct lease *l = lease_find(json_string_value(json_object_get(req, "lease")));
  json_t *calls = json_object_get(req, "calls");
  int inputs = json_is_true(json_object_get(req, "inputs"));
  double limit = json_number_value(json_object_get(req, "settle_s"));
  if (!json_is_array(calls) || json_array_size(calls) > 4096 || (!l && json_array_size(calls)))
    return reply_error("bad LEND read request");
  int64_t snelem[KV_MAX_PARAMS];
  if (l)
    kv_sample_layout(task, l->nelem, snelem);
  size_t total = 0, off = 0, i;
  json_t *call;
  json_array_foreach(calls, i, call) {
    int c = (int)json_integer_value(json_object_get(call, "call"));
    if (c < 0 || c >= l->calls)
      return reply_error("bad LEND read request (call %d of %d)", c, l->calls);
    total += kv_call_bytes(
        task, json_is_integer(json_object_get(call, "sample")) ? snelem : l->nelem, inputs);
  }
  uint8_t *blob = total ? malloc(total) : NULL;
  if (total && !blob)
    return reply_error("out of memory for %zu bytes", total);
  json_t *rep = json_object(), *guard = json_array();
  settle((uint64_t)((limit > 0 ? limit : 3.0) * 1e9), rep);
  json_array_foreach(calls, i, call) {
    int c = (int)json_integer_value(json_object_get(call, "call"));
    json_t *js = json_object_get(call, "sample"), *jg = json_object_get(call, "guard");
    int sampled = json_is_integer(js);
    for (int p = 0; p < task->nparams && json_is_integer(jg); p++) {
      int before;
      long k = is_buffer(task->params[p].role)
                   ? lent_guard_changed(l, c, p, (uint64_t)json_integer_value(jg), &before)
                   : -1;
      if (k >= 0) {
        json_array_append_new(guard, json_pack("{s:I,s:i,s:b,s:I}", "call", (json_int_t)i, "param",
                                               p, "before", before, "byte", (json_int_t)k));
        break;
      }
    }
    for (int pass = 0; pass < 2; pass++)
      for (int p = 0; p < task->nparams; p++) {
        enum kv_role r = task->params[p].role;
        if (pass == 0 ? kv_is_output(r) : inputs && r == KV_ROLE_IN) {
          CK(copy_back(lent_buf(l, c, p), p, l->nelem[p], sampled, (uint64_t)json_integer_value(js),
                       blob + off),
             "copying %s back", task->params[p].name);
          off += kv_param_bytes(task, p, sampled ? snelem : l->nelem);
        }
      }
  }
  json_object_set_new(rep, "guard", guard);
  int rc = reply(KV_MSG_REPLY, rep, blob, off);
  free(blob);
  return rc;
}

/* ---- the lender reads the borrower's own buffers (its timed calls) ---- */

/* Maps a buffer another process exported (hex), of at least `need` bytes
 * where the driver says sizes: 0 (*d mapped; unmap with ipc.close), or what
 * was wrong in why. */
static int peek_open(const char *hex, size_t need, CUdeviceptr *d, char *why, size_t cap) {
  CUipcMemHandle h;
  CUdeviceptr base = 0;
  size_t size = 0;
  *d = 0;
  if (unhex(hex, (unsigned char *)h.reserved, sizeof h.reserved) < 0)
    return snprintf(why, cap, "not a handle"), -1;
  CUresult r = cu_page.a.ipc.open(d, h, KV_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  if (r != KV_CU_SUCCESS)
    return snprintf(why, cap, "cuIpcOpenMemHandle: %s", cu_msg(r)), *d = 0, -1;
  if (cu_page.a.ipc.range &&
      (cu_page.a.ipc.range(&base, &size, *d) != KV_CU_SUCCESS || base != *d || size < need)) {
    cu_page.a.ipc.close(*d);
    *d = 0;
    return snprintf(why, cap, "%zu bytes where the call needs %zu", size, need), -1;
  }
  return 0;
}

/* Opens row's buffers that a read needs (outputs; inputs too with `inputs`)
 * into d: 0, or -1 with why (the others closed). */
static int peek_row(json_t *row, const int64_t nelem[KV_MAX_PARAMS], int inputs,
                    CUdeviceptr d[KV_MAX_PARAMS], char *why, size_t cap) {
  for (int p = 0; p < task->nparams; p++) {
    enum kv_role r = task->params[p].role;
    char w[300];
    d[p] = 0;
    if (!(kv_is_output(r) || (inputs && r == KV_ROLE_IN)))
      continue;
    if (peek_open(json_string_value(json_array_get(row, (size_t)p)), kv_param_bytes(task, p, nelem),
                  &d[p], w, sizeof w) < 0) {
      for (int q = 0; q < p; q++)
        if (d[q])
          cu_page.a.ipc.close(d[q]);
      return snprintf(why, cap, "%s: %s", task->params[p].name, w), -1;
    }
  }
  return 0;
}

/* One validated timed call of the candidate's, read from its own buffers
 * ("row": the handles its worker exported once it had allocated them), the
 * candidate's process stopped, the GPU settled: the outputs' sample
 * "sample", then with "inputs" the inputs' (kv_pack_call's layout). Mapped
 * here for the read only. A handle that does not map, or names less than
 * the call's bytes, is the candidate's doing: a reply_error saying so. */
static int lend_peek(json_t *req) {
  const struct kv_sizeset *s = pick_set(req);
  json_t *row = json_object_get(req, "row"), *js = json_object_get(req, "sample");
  int inputs = json_is_true(json_object_get(req, "inputs"));
  double limit = json_number_value(json_object_get(req, "settle_s"));
  int64_t nelem[KV_MAX_PARAMS], snelem[KV_MAX_PARAMS];
  CUdeviceptr d[KV_MAX_PARAMS];
  char why[600];
  if (!s || !json_is_integer(js) || !json_is_array(row) ||
      json_array_size(row) != (size_t)task->nparams)
    return reply_error("bad LEND peek request");
  if (!cu_page.a.ipc.open)
    return reply_error("this driver offers no CUDA IPC (cuIpcOpenMemHandle)");
  if (kv_layout(task, s, nelem, why, sizeof why) < 0)
    return reply_error("%s", why);
  kv_sample_layout(task, nelem, snelem);
  size_t total = kv_call_bytes(task, snelem, inputs), off = 0;
  uint8_t *blob = total ? malloc(total) : NULL;
  if (total && !blob)
    return reply_error("out of memory for %zu bytes", total);
  json_t *rep = json_object();
  settle((uint64_t)((limit > 0 ? limit : 3.0) * 1e9), rep);
  if (peek_row(row, nelem, inputs, d, why, sizeof why) < 0) {
    free(blob);
    json_decref(rep);
    return reply_error("the buffers the candidate's worker named: %s", why);
  }
  uint64_t sseed = (uint64_t)json_integer_value(js);
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < task->nparams; p++) {
      enum kv_role r = task->params[p].role;
      if (pass == 0 ? kv_is_output(r) : inputs && r == KV_ROLE_IN) {
        CK(copy_back(d[p], p, nelem[p], 1, sseed, blob + off), "copying %s back",
           task->params[p].name);
        off += kv_param_bytes(task, p, snelem);
      }
    }
  for (int p = 0; p < task->nparams; p++)
    if (d[p])
      cu_page.a.ipc.close(d[p]);
  int rc = reply(KV_MSG_REPLY, rep, blob, off);
  free(blob);
  return rc;
}

/* The probe's two halves, before a candidate is loaded: "export" (the
 * candidate's worker, still clean: one small buffer of its own, its handle)
 * and "open" (the lender: that handle maps here). */
#define PEEK_PROBE_BYTES 4096
static int lend_probe_export(void) {
  static CUdeviceptr b;
  CUipcMemHandle h;
  char hex[2 * KV_CU_IPC_HANDLE_BYTES + 1];
  if (!cu_page.a.ipc.get)
    return reply_error("this driver offers no CUDA IPC (cuIpcGetMemHandle)");
  CUresult r = b ? KV_CU_SUCCESS : cu.MemAlloc(&b, PEEK_PROBE_BYTES);
  if (r == KV_CU_SUCCESS)
    r = cu_page.a.ipc.get(&h, b);
  if (r != KV_CU_SUCCESS)
    return reply_error("exporting a buffer: %s", cu_msg(r));
  hex_of((const unsigned char *)h.reserved, sizeof h.reserved, hex);
  return reply(KV_MSG_REPLY, json_pack("{s:s}", "handle", hex), NULL, 0);
}

static int lend_probe_open(json_t *req) {
  CUdeviceptr d;
  char why[300];
  if (!cu_page.a.ipc.open)
    return reply_error("this driver offers no CUDA IPC (cuIpcOpenMemHandle)");
  if (peek_open(json_string_value(json_object_get(req, "handle")), PEEK_PROBE_BYTES, &d, why,
                sizeof why) < 0)
    return reply_error("mapping the candidate's worker's buffer: %s", why);
  cu_page.a.ipc.close(d);
  return reply(KV_MSG_REPLY, json_object(), NULL, 0);
}

static int lent_row(json_t *row, size_t off, CUdeviceptr d[KV_MAX_PARAMS], char *err, size_t cap);

static int cuda_lend(json_t *req) {
  const char *op = json_string_value(json_object_get(req, "op"));
  if (!ready)
    return reply_error("the CUDA device is not usable: %s", problem);
  if (!op)
    return reply_error("bad LEND request (no op)");
  if (!strcmp(op, "lend"))
    return lend_lend(req);
  if (!strcmp(op, "fill"))
    return lend_fill(req);
  if (!strcmp(op, "read"))
    return lend_read(req);
  if (!strcmp(op, "peek"))
    return lend_peek(req);
  if (!strcmp(op, "export"))
    return lend_probe_export();
  if (!strcmp(op, "open"))
    return lend_probe_open(req);
  if (!strcmp(op, "map")) { /* a clean borrower's test: these handles map here */
    json_t *row;
    size_t i, off = (size_t)json_integer_value(json_object_get(req, "offset"));
    char err[600];
    json_array_foreach(json_object_get(req, "lent"), i, row) {
      CUdeviceptr d[KV_MAX_PARAMS];
      if (lent_row(row, off, d, err, sizeof err) < 0)
        return reply_error("%s", err);
    }
    return reply(KV_MSG_REPLY, json_object(), NULL, 0);
  }
  if (!strcmp(op, "return")) {
    const char *id = json_string_value(json_object_get(req, "lease"));
    for (int i = 0; i < LEASES; i++)
      if (leases[i].id[0] && id && (!strcmp(id, "*") || !strcmp(id, leases[i].id)))
        lease_free(&leases[i]);
    return reply(KV_MSG_REPLY, json_object(), NULL, 0);
  }
  return reply_error("bad LEND request (op %s)", op);
}

/* ---- the borrower's side: handles mapped once, by their text ---- */

#define OPENED_MAX 8192
static struct opened {
  char hex[2 * KV_CU_IPC_HANDLE_BYTES + 1];
  CUdeviceptr base;
} * opened;
static int nopened;

/* The buffer a lent handle (hex, its buffer `off` bytes in) names here. */
static CUresult lent_ptr(const char *hex, size_t off, CUdeviceptr *d) {
  CUipcMemHandle h;
  if (!cu_page.a.ipc.open)
    return KV_CU_ERROR_NOT_INITIALIZED;
  if (unhex(hex, (unsigned char *)h.reserved, sizeof h.reserved) < 0)
    return KV_CU_ERROR_INVALID_VALUE;
  for (int i = 0; i < nopened; i++)
    if (!strcmp(opened[i].hex, hex))
      return *d = opened[i].base + off, KV_CU_SUCCESS;
  if (!opened && !(opened = calloc(OPENED_MAX, sizeof *opened)))
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  if (nopened == OPENED_MAX)
    return KV_CU_ERROR_INVALID_VALUE;
  CUdeviceptr b = 0;
  CUresult r = cu_page.a.ipc.open(&b, h, KV_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  if (r != KV_CU_SUCCESS)
    return r;
  memcpy(opened[nopened].hex, hex, sizeof opened[nopened].hex);
  opened[nopened++].base = b;
  *d = b + off;
  return KV_CU_SUCCESS;
}

/* One call's lent buffers (a row of handles, null for non-buffers) into d. */
static int lent_row(json_t *row, size_t off, CUdeviceptr d[KV_MAX_PARAMS], char *err, size_t cap) {
  if (!json_is_array(row) || json_array_size(row) != (size_t)task->nparams)
    return snprintf(err, cap, "a lent call names %zu buffers for %d params", json_array_size(row),
                    task->nparams),
           -1;
  for (int p = 0; p < task->nparams; p++) {
    d[p] = 0;
    if (!is_buffer(task->params[p].role))
      continue;
    CUresult r = lent_ptr(json_string_value(json_array_get(row, (size_t)p)), off, &d[p]);
    if (r != KV_CU_SUCCESS)
      return snprintf(err, cap, "mapping %s's lent buffer (cuIpcOpenMemHandle): %s",
                      task->params[p].name, cu_msg(r)),
             -1;
  }
  return 0;
}

/* A CHECK job on lent buffers: one call, nothing filled or read here (the
 * clean worker did and does); the reply says only that it returned. */
static int check_lent(json_t *req, const struct kv_sizeset *s, int slot) {
  json_t *call = json_array_get(json_object_get(req, "calls"), 0);
  size_t off = (size_t)json_integer_value(json_object_get(req, "offset"));
  CUdeviceptr d[KV_MAX_PARAMS];
  uint64_t scal[KV_MAX_PARAMS];
  void *args[KV_MAX_PARAMS];
  char err[600];
  if (!call || json_array_size(json_object_get(req, "calls")) != 1)
    return reply_error("bad CHECK request (one call on lent buffers)");
  if (lent_row(json_object_get(req, "lent"), off, d, err, sizeof err) < 0)
    return reply_error("%s", err);
  kv_fill_scalars(task, s, (uint64_t)json_integer_value(json_object_get(call, "seed")), scal);
  for (int p = 0; p < task->nparams; p++)
    args[p] = is_buffer(task->params[p].role) ? (void *)(uintptr_t)d[p] : (void *)&scal[p];
  uint64_t t = call_and_sync(slot, args, "the call");
  return reply(KV_MSG_REPLY, json_pack("{s:[I]}", "call_ns", (json_int_t)t), NULL, 0);
}

/* ---- CHECK: correctness calls at fresh device addresses ---- */

static int cuda_check(json_t *req) {
  if (!ready)
    return reply_error("the CUDA device is not usable: %s", problem);
  const struct kv_sizeset *s = pick_set(req);
  int slot = (int)json_integer_value(json_object_get(req, "slot"));
  json_t *calls = json_object_get(req, "calls");
  int ret_inputs = json_is_true(json_object_get(req, "return_inputs"));
  if (!s || slot < 0 || slot >= KV_SLOTS || !slot_entry[slot] || !json_is_array(calls))
    return reply_error("bad CHECK request");
  if (json_object_get(req, "lent"))
    return check_lent(req, s, slot);
  char err[512];
  int64_t nelem[KV_MAX_PARAMS], snelem[KV_MAX_PARAMS];
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  kv_sample_layout(task, nelem, snelem);
  /* A call with "sample": only that sample's elements of it come back (a
   * timed call's validation). */
  size_t ncalls = json_array_size(calls), total = 0;
  for (size_t c = 0; c < ncalls; c++)
    total += kv_call_bytes(
        task, json_is_integer(json_object_get(json_array_get(calls, c), "sample")) ? snelem : nelem,
        ret_inputs);
  uint8_t *blob = total > 0 ? malloc(total) : NULL;
  void *hin[KV_MAX_PARAMS] = {0};
  CUdeviceptr d[KV_MAX_PARAMS] = {0};
  int oom = total > 0 && !blob;
  for (int p = 0; p < task->nparams && !oom; p++) {
    enum kv_role r = task->params[p].role;
    size_t b = kv_param_bytes(task, p, nelem);
    if (!is_buffer(r))
      continue;
    CUresult cr = dev_alloc(&d[p], b);
    if (cr != KV_CU_SUCCESS) {
      free_all(d, KV_MAX_PARAMS);
      for (int q = 0; q < KV_MAX_PARAMS; q++)
        free(hin[q]);
      free(blob);
      return reply_error("cuMemAlloc(%zu bytes for %s): %s", b, task->params[p].name, cu_msg(cr));
    }
    if (kv_is_input(r) && !(hin[p] = malloc(b ? b : 1)))
      oom = 1;
  }
  if (oom) {
    free_all(d, KV_MAX_PARAMS);
    for (int q = 0; q < KV_MAX_PARAMS; q++)
      free(hin[q]);
    free(blob);
    return reply_error("out of memory for the buffers");
  }
  uint64_t scal[KV_MAX_PARAMS];
  void *args[KV_MAX_PARAMS];
  json_t *ns = json_array(), *guard = json_array();
  size_t off = 0;
  for (size_t c = 0; c < ncalls; c++) {
    json_t *call = json_array_get(calls, c);
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(call, "seed"));
    int poison = (int)json_integer_value(json_object_get(call, "poison"));
    json_t *js = json_object_get(call, "sample");
    int sampled = json_is_integer(js);
    uint64_t sseed = (uint64_t)json_integer_value(js);
    /* The same device addresses for every call of the job: new contents only. */
    /* On the device when kevo's generator is there (the same bytes), else
     * on the host and copied. */
    int on_dev = gen_state > 0; /* loaded at start (cuda_init) */
    if (!on_dev)
      kv_fill_inputs_mt(task, nelem, hin, seed, kv_fill_threads());
    kv_fill_scalars(task, s, seed, scal);
    for (int p = 0; p < task->nparams; p++) {
      enum kv_role r = task->params[p].role;
      size_t b = kv_param_bytes(task, p, nelem);
      if (kv_is_input(r) && b)
        CK(on_dev ? kv_cugen_fill_param(&cu, stream, task, p, nelem[p], d[p], seed)
                  : cu.MemcpyHtoD(d[p], hin[p], b),
           "making input %s on the device", task->params[p].name);
      if (r == KV_ROLE_OUT)
        CK(poison_dev(d[p], task->params[p].dtype, (size_t)nelem[p], poison), "poisoning %s",
           task->params[p].name);
      if (is_buffer(r))
        dev_guard_fill(d[p], b, seed, p);
      args[p] = is_buffer(r) ? (void *)(uintptr_t)d[p] : (void *)&scal[p];
    }
    CK(cu.StreamSynchronize(stream), "preparing call %zu", c + 1);
    char when[64];
    snprintf(when, sizeof when, "call %zu of the job", c + 1);
    uint64_t t = call_and_sync(slot, args, when);
    json_array_append_new(ns, json_integer((json_int_t)t));
    /* Writes past a buffer's end: reported as the cpu worker does. */
    for (int p = 0; p < task->nparams; p++) {
      if (!is_buffer(task->params[p].role))
        continue;
      long k = dev_guard_changed(d[p], kv_param_bytes(task, p, nelem), seed, p);
      if (k >= 0)
        json_array_append_new(guard, json_pack("{s:I,s:i,s:b,s:I}", "call", (json_int_t)c, "param",
                                               p, "before", 0, "byte", (json_int_t)k));
    }
    /* Outputs first (param order), then the inputs as they are now. */
    for (int pass = 0; pass < 2; pass++) {
      for (int p = 0; p < task->nparams; p++) {
        enum kv_role r = task->params[p].role;
        if (pass == 0 ? kv_is_output(r) : (ret_inputs && r == KV_ROLE_IN)) {
          CK(copy_back(d[p], p, nelem[p], sampled, sseed, blob + off), "copying %s back",
             task->params[p].name);
          off += kv_param_bytes(task, p, sampled ? snelem : nelem);
        }
      }
    }
  }
  free_all(d, KV_MAX_PARAMS);
  for (int q = 0; q < KV_MAX_PARAMS; q++)
    free(hin[q]);
  int rc = reply(KV_MSG_REPLY, json_pack("{s:o,s:o}", "call_ns", ns, "guard", guard), blob, off);
  free(blob);
  return rc;
}

/* ---- TIME: one phase of calls on fresh inputs; FETCH: one call's buffers ----
 *
 * A phase runs `calls` calls of one slot (or of kevo's own empty entry, slot
 * -1, whose cost is the phase's overhead), each on completely fresh inputs
 * (seed + c) in its own device buffers, back to back after one L2 flush;
 * each call is timed by events on the stream and by the host clock around it
 * and a device-wide synchronization (so no work launched earlier, on any
 * stream, runs into the next call).
 * The buffers of every call stay until the next phase, for FETCH. The parent
 * clocks each job itself and bounds what is reported here. */

static void cuda_empty(void *const *args, CUstream s) {
  (void)args;
  (void)s;
}

static struct {
  const struct kv_sizeset *s;
  int64_t nelem[KV_MAX_PARAMS];
  int cap, m;
  CUdeviceptr (*d)[KV_MAX_PARAMS]; /* cap x params: every call's buffers */
  uint64_t (*scal)[KV_MAX_PARAMS];
  void *hin[KV_MAX_PARAMS]; /* host staging for generated inputs */
} cph;

static void phase_free(void) {
  for (int c = 0; c < cph.cap && cph.d; c++)
    free_all(cph.d[c], KV_MAX_PARAMS);
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    free(cph.hin[p]);
  free(cph.d);
  free(cph.scal);
  memset(&cph, 0, sizeof cph);
}

/* Device buffers for m calls of size set s; NULL or what ran out. */
static const char *phase_alloc(const struct kv_sizeset *s, const int64_t nelem[KV_MAX_PARAMS],
                               int m, CUresult *cr) {
  *cr = KV_CU_SUCCESS;
  if (cph.s == s && cph.cap >= m)
    return NULL;
  phase_free();
  cph.d = calloc((size_t)m, sizeof *cph.d);
  cph.scal = calloc((size_t)m, sizeof *cph.scal);
  if (!cph.d || !cph.scal)
    return phase_free(), "host memory";
  cph.cap = m;
  cph.s = s;
  memcpy(cph.nelem, nelem, sizeof cph.nelem);
  for (int p = 0; p < task->nparams; p++) {
    enum kv_role r = task->params[p].role;
    size_t b = kv_param_bytes(task, p, nelem);
    if (kv_is_input(r) && gen_state < 0 && !(cph.hin[p] = malloc(b ? b : 1)))
      return phase_free(), "host memory";
    for (int c = 0; c < m && is_buffer(r); c++)
      if ((*cr = dev_alloc(&cph.d[c][p], b)) != KV_CU_SUCCESS)
        return phase_free(), "cuMemAlloc";
  }
  return NULL;
}

/* Call c's exported buffers (kevo validates timed calls from them): a row
 * of handle texts, null for non-buffers; NULL when the driver cannot. */
static json_t *phase_export_row(int c) {
  json_t *row = json_array();
  for (int p = 0; p < task->nparams; p++) {
    CUipcMemHandle h;
    char hex[2 * KV_CU_IPC_HANDLE_BYTES + 1];
    if (!is_buffer(task->params[p].role) || !cph.d[c][p]) {
      json_array_append_new(row, json_null());
      continue;
    }
    if (cu_page.a.ipc.get(&h, cph.d[c][p]) != KV_CU_SUCCESS) {
      json_decref(row);
      return NULL;
    }
    hex_of((const unsigned char *)h.reserved, sizeof h.reserved, hex);
    json_array_append_new(row, json_string(hex));
  }
  return row;
}

/* The handles of the first m calls' buffers, or a reply_error. */
static int phase_export(int m) {
  json_t *rows = json_array();
  for (int c = 0; c < m; c++) {
    json_t *row = cu_page.a.ipc.get ? phase_export_row(c) : NULL;
    if (!row) {
      json_decref(rows);
      return reply_error("exporting call %d's buffers (cuIpcGetMemHandle) failed", c);
    }
    json_array_append_new(rows, row);
  }
  return reply(KV_MSG_REPLY, json_pack("{s:o}", "export", rows), NULL, 0);
}

static int cuda_time(json_t *req) {
  if (!ready)
    return reply_error("the CUDA device is not usable: %s", problem);
  const struct kv_sizeset *s = pick_set(req);
  int slot = (int)json_integer_value(json_object_get(req, "slot"));
  int m = (int)json_integer_value(json_object_get(req, "calls"));
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
  int alloc_only = json_is_true(json_object_get(req, "alloc_only"));
  cuda_shim_fn f = NULL;
  if (slot == -1)
    f = cuda_empty;
  else if (slot >= 0 && slot < KV_SLOTS && slot_entry[slot])
    memcpy(&f, &slot_entry[slot], sizeof f);
  int64_t nelem[KV_MAX_PARAMS];
  char err[512];
  if (!s || !f || m < 1 || m > 4096)
    return reply_error("bad TIME request");
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  CUresult cr = KV_CU_SUCCESS;
  const char *oom = phase_alloc(s, nelem, m, &cr);
  if (oom)
    return reply_error("out of memory for %d calls' buffers (%s%s%s)", m, oom, cr ? ": " : "",
                       cr ? cu_msg(cr) : "");
  /* --timing kernelbench: the same inputs every trial (keep_inputs, one call
   * a phase, the seed of the last) and no L2 flush between trials (flush
   * false), as KernelBench's harness; the outputs are poisoned anyway. */
  static uint64_t last_seed;
  static const struct kv_sizeset *last_set;
  int kept = json_is_true(json_object_get(req, "keep_inputs")) && m == 1 && last_set == s &&
             cph.m == 1 && last_seed == seed;
  int flush = !json_is_false(json_object_get(req, "flush"));
  /* --timing do_bench: a flush before every call instead (below). */
  int each = flush && json_is_true(json_object_get(req, "flush_each"));
  cph.m = 0;
  last_set = NULL;
  /* With "export": the buffers' handles, for kevo's clean worker to read
   * validated calls from once this process is stopped (lend_peek). */
  if (alloc_only)
    return json_is_true(json_object_get(req, "export"))
               ? phase_export(m)
               : reply(KV_MSG_REPLY, json_object(), NULL, 0);
  /* Fresh inputs for every call (generated on the device, the same bytes as
   * the host's generator, else on the host and copied), poisoned outputs. */
  for (int c = 0; c < m; c++) {
    uint64_t sd = seed + (uint64_t)c;
    if (kept) {
      for (int p = 0; p < task->nparams; p++)
        if (task->params[p].role == KV_ROLE_OUT)
          CK(poison_dev(cph.d[c][p], task->params[p].dtype, (size_t)nelem[p], c & 1),
             "poisoning %s", task->params[p].name);
      continue;
    }
    if (gen_state < 0)
      kv_fill_inputs_mt(task, nelem, cph.hin, sd, kv_fill_threads());
    kv_fill_scalars(task, s, sd, cph.scal[c]);
    for (int p = 0; p < task->nparams; p++) {
      enum kv_role r = task->params[p].role;
      size_t b = kv_param_bytes(task, p, nelem);
      if (kv_is_input(r) && b && gen_state > 0)
        CK(kv_cugen_fill_param(&cu, stream, task, p, nelem[p], cph.d[c][p], sd),
           "generating input %s", task->params[p].name);
      else if (kv_is_input(r) && b)
        CK(cu.MemcpyHtoD(cph.d[c][p], cph.hin[p], b), "copying input %s", task->params[p].name);
      if (r == KV_ROLE_OUT)
        CK(poison_dev(cph.d[c][p], task->params[p].dtype, (size_t)nelem[p], c & 1), "poisoning %s",
           task->params[p].name);
    }
  }
  size_t mm = (size_t)(unsigned)m;
  uint64_t *ev = calloc(mm, sizeof *ev), *host = calloc(mm, sizeof *host);
  if (!ev || !host) {
    free(ev);
    free(host);
    return reply_error("out of memory for the timing loop");
  }
  /* One L2 flush after the inputs are made: every call's buffers are then
   * untouched since, so each call starts cold without a flush of its own
   * (kevo's work between timed calls is two event records and a device-wide
   * synchronization). Device-wide: whatever ran before (on any stream) ends
   * here. */
  if (flush && !each)
    CK(cu.MemsetD32Async(flushbuf, (unsigned)(seed * 2654435761u), flush_bytes / 4, stream),
       "flushing the L2");
  CK(cu.CtxSynchronize(), "preparing the timed calls");
  for (int c = 0; c < m; c++) {
    void *args[KV_MAX_PARAMS];
    for (int p = 0; p < task->nparams; p++)
      args[p] = is_buffer(task->params[p].role) ? (void *)(uintptr_t)cph.d[c][p]
                                                : (void *)&cph.scal[c][p];
    uint64_t h0 = kv_now_ns();
    if (each) { /* as do_bench: a fill of twice the L2 right before the start event */
      CK(cu.EventRecord(evf, stream), "cuEventRecord");
      CK(cu.MemsetD32Async(flushbuf, (unsigned)((seed + (uint64_t)c) * 2654435761u),
                           flush_bytes / 4, stream),
         "flushing the L2");
    }
    CK(cu.EventRecord(ev0, stream), "cuEventRecord");
    f(args, stream);
    CUresult er = cu.EventRecord(ev1, stream);
    CUresult r = cu.CtxSynchronize();
    uint64_t h1 = kv_now_ns();
    fflush(stdout);
    if (r != KV_CU_SUCCESS)
      reply_fatal("timed call %d of slot %d: the device reported %s", c, slot, cu_msg(r));
    CK(er, "cuEventRecord after the call");
    if (slot >= 0)
      check_guard(slot, "a timed call");
    float ms = 0, fl = 0;
    CK(cu.EventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
    if (each) /* the host clock leaves the fill out */
      CK(cu.EventElapsedTime(&fl, evf, ev0), "cuEventElapsedTime");
    ev[c] = (uint64_t)((double)ms * 1e6);
    uint64_t fl_ns = (uint64_t)((double)fl * 1e6);
    host[c] = h1 - h0 > fl_ns ? h1 - h0 - fl_ns : 0;
  }
  fflush(stdout);
  fflush(stderr);
  cph.m = m;
  last_set = s;
  last_seed = seed;
  json_t *je = json_array(), *jh = json_array();
  for (int c = 0; c < m; c++) {
    json_array_append_new(je, json_integer((json_int_t)ev[c]));
    json_array_append_new(jh, json_integer((json_int_t)host[c]));
  }
  free(ev);
  free(host);
  return reply(KV_MSG_REPLY,
               json_pack("{s:o,s:o,s:b}", "ns", je, "host_ns", jh, "kept_inputs", kept), NULL, 0);
}

static int cuda_fetch(json_t *req) {
  int c = (int)json_integer_value(json_object_get(req, "call"));
  int inputs = json_is_true(json_object_get(req, "inputs"));
  json_t *js = json_object_get(req, "sample"); /* as in CHECK */
  int sampled = json_is_integer(js);
  uint64_t sseed = (uint64_t)json_integer_value(js);
  if (!ready || c < 0 || c >= cph.m)
    return reply_error("bad FETCH request (call %d of a phase of %d)", c, cph.m);
  int64_t snelem[KV_MAX_PARAMS];
  kv_sample_layout(task, cph.nelem, snelem);
  size_t total = kv_call_bytes(task, sampled ? snelem : cph.nelem, inputs), off = 0;
  uint8_t *blob = total ? malloc(total) : NULL;
  if (total && !blob)
    return reply_error("out of memory for %zu bytes", total);
  for (int pass = 0; pass < 2; pass++)
    for (int p = 0; p < task->nparams; p++) {
      enum kv_role r = task->params[p].role;
      if (pass == 0 ? kv_is_output(r) : inputs && r == KV_ROLE_IN) {
        CK(copy_back(cph.d[c][p], p, cph.nelem[p], sampled, sseed, blob + off), "copying %s back",
           task->params[p].name);
        off += kv_param_bytes(task, p, sampled ? snelem : cph.nelem);
      }
    }
  int rc = reply(KV_MSG_REPLY, json_object(), blob, off);
  free(blob);
  return rc;
}

/* ---- CALIB: copy bandwidth and FP32 FMA rate ---- */

#define FMA_UNROLL 4
#define FMA_CHAINS 8

/* A kernel of FMA_CHAINS independent FMA chains, unrolled FMA_UNROLL times,
 * as PTX the driver compiles for whatever GPU this is. */
static void fma_ptx(char *out, size_t cap) {
  size_t u = 0;
#define PUT(...) u += (size_t)snprintf(out + u, u < cap ? cap - u : 0, __VA_ARGS__)
  PUT(".version 7.0\n.target sm_70\n.address_size 64\n"
      ".visible .entry kv_fma(.param .u64 p_out, .param .u32 p_iters, .param .f32 p_m,"
      " .param .f32 p_c)\n{\n .reg .pred %%p;\n .reg .b32 %%r<5>;\n .reg .f32 %%f<10>;\n"
      " .reg .b64 %%rd<4>;\n ld.param.u64 %%rd0, [p_out];\n ld.param.u32 %%r0, [p_iters];\n"
      " ld.param.f32 %%f8, [p_m];\n ld.param.f32 %%f9, [p_c];\n mov.u32 %%r1, %%tid.x;\n"
      " mov.u32 %%r2, %%ctaid.x;\n mov.u32 %%r3, %%ntid.x;\n mad.lo.u32 %%r1, %%r2, %%r3, %%r1;\n"
      " cvt.rn.f32.u32 %%f0, %%r1;\n");
  for (int i = 1; i < FMA_CHAINS; i++)
    PUT(" add.f32 %%f%d, %%f%d, 0f3F800000;\n", i, i - 1);
  PUT(" mov.u32 %%r4, 0;\n$Lloop:\n");
  for (int r = 0; r < FMA_UNROLL; r++)
    for (int i = 0; i < FMA_CHAINS; i++)
      PUT(" fma.rn.f32 %%f%d, %%f%d, %%f8, %%f9;\n", i, i);
  PUT(" add.u32 %%r4, %%r4, 1;\n setp.lt.u32 %%p, %%r4, %%r0;\n @%%p bra $Lloop;\n");
  for (int i = 1; i < FMA_CHAINS; i++)
    PUT(" add.f32 %%f0, %%f0, %%f%d;\n", i);
  PUT(" cvta.to.global.u64 %%rd1, %%rd0;\n mul.wide.u32 %%rd2, %%r1, 4;\n"
      " add.u64 %%rd3, %%rd1, %%rd2;\n st.global.f32 [%%rd3], %%f0;\n ret;\n}\n");
#undef PUT
}

static double elapsed_s(void) {
  float ms = 0;
  CK(cu.EventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
  return ms * 1e-3;
}

static int cuda_calib(json_t *req) {
  (void)req;
  if (!ready)
    return reply_error("the CUDA device is not usable: %s", problem);
  /* Bandwidth: device-to-device copies of a large buffer, bytes read plus
   * written, best of several. */
  size_t freeb = 0, totalb = 0;
  CK(cu.MemGetInfo(&freeb, &totalb), "cuMemGetInfo");
  size_t bytes = (size_t)1 << 30;
  while (bytes > ((size_t)64 << 20) && bytes * 3 > freeb)
    bytes /= 2;
  CUdeviceptr a = 0, b = 0;
  CK(cu.MemAlloc(&a, bytes), "cuMemAlloc(%zu)", bytes);
  CK(cu.MemAlloc(&b, bytes), "cuMemAlloc(%zu)", bytes);
  CK(cu.MemsetD32Async(a, 0x3f800000u, bytes / 4, stream), "cuMemsetD32");
  CK(cu.MemcpyDtoDAsync(b, a, bytes, stream), "cuMemcpyDtoD");
  CK(cu.StreamSynchronize(stream), "cuStreamSynchronize");
  double best = 1e30;
  for (int r = 0; r < 10; r++) {
    CK(cu.EventRecord(ev0, stream), "cuEventRecord");
    CK(cu.MemcpyDtoDAsync(b, a, bytes, stream), "cuMemcpyDtoD");
    CK(cu.EventRecord(ev1, stream), "cuEventRecord");
    CK(cu.StreamSynchronize(stream), "cuStreamSynchronize");
    double t = elapsed_s();
    if (t > 0 && t < best)
      best = t;
  }
  double gbs = 2.0 * (double)bytes / best / 1e9;
  cu.MemFree(a);
  cu.MemFree(b);
  /* FP32 FMA rate: the PTX kernel over every multiprocessor. */
  char *ptx = malloc(16384);
  if (!ptx)
    return reply_error("out of memory");
  fma_ptx(ptx, 16384);
  CUmodule mod;
  CUfunction fn;
  CK(cu.ModuleLoadData(&mod, ptx), "loading the FMA kernel");
  free(ptx);
  CK(cu.ModuleGetFunction(&fn, mod, "kv_fma"), "cuModuleGetFunction");
  unsigned threads = 256, blocks = (unsigned)(nsm > 0 ? nsm : 1) * 8, iters = 4096;
  CUdeviceptr out = 0;
  CK(cu.MemAlloc(&out, (size_t)threads * blocks * 4), "cuMemAlloc");
  float m = 0.9999f, c = 1e-4f;
  void *params[] = {&out, &iters, &m, &c};
  CK(cu.LaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, NULL), "cuLaunchKernel");
  CK(cu.StreamSynchronize(stream), "the FMA kernel");
  double fbest = 1e30;
  for (int r = 0; r < 5; r++) {
    CK(cu.EventRecord(ev0, stream), "cuEventRecord");
    CK(cu.LaunchKernel(fn, blocks, 1, 1, threads, 1, 1, 0, stream, params, NULL), "cuLaunchKernel");
    CK(cu.EventRecord(ev1, stream), "cuEventRecord");
    CK(cu.StreamSynchronize(stream), "the FMA kernel");
    double t = elapsed_s();
    if (t > 0 && t < fbest)
      fbest = t;
  }
  cu.MemFree(out);
  double flops = 2.0 * FMA_CHAINS * FMA_UNROLL * (double)iters * threads * blocks;
  double gflops = flops / fbest / 1e9;
  json_t *rep = json_pack("{s:f,s:f,s:i,s:i,s:I,s:f,s:f}", "bandwidth_gbs", gbs, "fma_gflops",
                          gflops, "l2_bytes", l2, "sms", nsm, "copy_bytes", (json_int_t)bytes,
                          "copy_s", best, "fma_s", fbest);
  return reply(KV_MSG_REPLY, rep, NULL, 0);
}

const struct worker_runtime wcuda_runtime = {
    "cuda",     cuda_sandbox, cuda_init,  cuda_check,        cuda_time,
    cuda_calib, cuda_loaded,  cuda_fetch, cuda_load_kernels, cuda_lend};
