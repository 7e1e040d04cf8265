/* kevo-worker: loads candidate shared objects and runs them, sandboxed.
 *
 * Spoken to over fd 3 (requests) and fd 4 (replies) with kevo/wire.h frames.
 * It trusts the parent and nothing it loads: whatever it reports, the parent
 * checks. It sandboxes itself before reading its first request. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kevo/runtime.h"
#include "kevo/sandbox.h"
#include "kevo/task.h"
#include "kevo/util.h"
#include "kevo/wire.h"
#include "worker.h"

typedef void (*shim_fn)(void *const *args);

struct kv_task *task;
void *slot_entry[KV_SLOTS];
void *slot_guard[KV_SLOTS];
static shim_fn slots[KV_SLOTS]; /* slot_entry, typed for the cpu runtime */
static void *handles[KV_SLOTS];
static uint64_t cur_token;
static const char *scratch = ".";
/* The sandbox's layers, and whether the lockdown is in force: once the
 * worker has run loaded code, it loads no more (kv_sandbox_lock_exec). */
static struct kv_sandbox_status sandbox_st;
static int sandboxed, locked, has_candidate;

/* A candidate is loaded (LOAD said "candidate"): lock right then, inside the
 * untimed LOAD job and before any call into it; no more loads after. A lock
 * that cannot be applied is reported by doctor's probe and is not fatal (like
 * every layer). Workers that only run the task's own objects (reference,
 * baseline) are not locked. */
static void lock_exec(void) {
  if (locked || !sandboxed || !has_candidate)
    return;
  locked = 1;
  kv_sandbox_lock_exec(&sandbox_st);
}

int reply(uint32_t type, json_t *j, const void *blob, uint64_t n) {
  char *s = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  int rc = kv_wire_write(KV_WIRE_RESP_FD, type, cur_token, s, blob, n);
  free(s);
  return rc;
}

int reply_error(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return reply(KV_MSG_ERROR, json_pack("{s:s}", "error", msg), NULL, 0);
}

void reply_fatal(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  fflush(stderr);
  reply(KV_MSG_ERROR, json_pack("{s:s,s:b}", "error", msg, "fatal", 1), NULL, 0);
  _exit(4);
}

/* A check size set kevo drew for this evaluation (the request's "sizes":
 * the set's value for every param); kv_layout judges it. */
static struct kv_sizeset drawn;

const struct kv_sizeset *pick_set(json_t *req) {
  const char *set = json_string_value(json_object_get(req, "set"));
  int idx = (int)json_integer_value(json_object_get(req, "index"));
  json_t *sz = json_object_get(req, "sizes");
  if (!set || !task)
    return NULL;
  if (json_is_array(sz) && !strcmp(set, "check")) {
    if (json_array_size(sz) != (size_t)task->nparams)
      return NULL;
    memset(&drawn, 0, sizeof drawn);
    for (int p = 0; p < task->nparams; p++)
      drawn.values[p] = json_integer_value(json_array_get(sz, (size_t)p));
    return &drawn;
  }
  if (!strcmp(set, "check") && idx >= 0 && idx < task->ncheck)
    return &task->check[idx];
  if (!strcmp(set, "bench") && idx >= 0 && idx < task->nbench)
    return &task->bench[idx];
  return NULL;
}

/* Buffers of one call site: one allocation per buffer param. */
struct site {
  void *bufs[KV_MAX_PARAMS];
  uint64_t scal[KV_MAX_PARAMS];
  void *args[KV_MAX_PARAMS];
  void *mem[KV_MAX_PARAMS]; /* check sites: the allocation, guard zones included */
};

static int site_alloc(struct site *st, const int64_t nelem[KV_MAX_PARAMS]) {
  memset(st, 0, sizeof(*st));
  for (int p = 0; p < task->nparams; p++) {
    size_t b = kv_param_bytes(task, p, nelem);
    if (task->params[p].role == KV_ROLE_SIZE || task->params[p].role == KV_ROLE_SCALAR)
      continue;
    /* A guard zone on each side (kv_guard_after rounds up, so that even
     * empty buffers get a distinct, aligned address). */
    size_t sz = KV_GUARD_BYTES + b + kv_guard_after(b);
    st->mem[p] = aligned_alloc(64, sz);
    if (!st->mem[p])
      return -1;
    st->bufs[p] = (uint8_t *)st->mem[p] + KV_GUARD_BYTES;
  }
  return 0;
}

static void site_free(struct site *st) {
  for (int p = 0; p < KV_MAX_PARAMS; p++)
    free(st->mem[p]);
  memset(st, 0, sizeof(*st));
}

static void site_args(struct site *st) {
  for (int p = 0; p < task->nparams; p++)
    st->args[p] = st->bufs[p] ? st->bufs[p] : (void *)&st->scal[p];
}

static void poison_outputs(struct site *st, const int64_t nelem[KV_MAX_PARAMS], int which) {
  for (int p = 0; p < task->nparams; p++)
    if (task->params[p].role == KV_ROLE_OUT)
      kv_poison_fill(task->params[p].dtype, st->bufs[p], (size_t)nelem[p], which);
}

/* The check memory (KV_WIRE_CHECK_FD): mapped once at the size the parent
 * gave it. */
static struct {
  uint8_t *map;
  size_t len;
} chk;

/* A CHECK job on the check memory ("shm"): one call on the buffers the
 * parent filled there (inputs, poisoned outputs, guard zones keyed by a
 * secret of its own). The parent stops this process once it replies and
 * reads outputs, inputs and guard zones itself: the reply says only that the
 * call returned, and anything else in it is ignored. */
static int check_shm(json_t *req, const struct kv_sizeset *s, int slot) {
  json_t *call = json_array_get(json_object_get(req, "calls"), 0);
  size_t len = (size_t)json_integer_value(json_object_get(req, "shm_bytes"));
  char err[512];
  int64_t nelem[KV_MAX_PARAMS];
  size_t off[KV_MAX_PARAMS], per_call;
  if (!call || json_array_size(json_object_get(req, "calls")) != 1)
    return reply_error("bad CHECK request (one call on the check memory)");
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  kv_check_layout(task, nelem, off, &per_call);
  if (per_call > len)
    return reply_error("bad CHECK request (%zu bytes in %zu)", per_call, len);
  if (chk.len != len) {
    if (chk.map)
      munmap(chk.map, chk.len);
    chk.map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, KV_WIRE_CHECK_FD, 0);
    chk.len = chk.map == MAP_FAILED ? 0 : len;
    if (chk.map == MAP_FAILED) {
      chk.map = NULL;
      return reply_error("mapping the check buffers: %s", strerror(errno));
    }
  }
  struct site st;
  memset(&st, 0, sizeof st);
  kv_shm_call_bufs(task, chk.map, per_call, off, 0, st.bufs);
  kv_fill_scalars(task, s, (uint64_t)json_integer_value(json_object_get(call, "seed")), st.scal);
  site_args(&st);
  uint64_t t0 = kv_now_ns();
  slots[slot](st.args);
  uint64_t t1 = kv_now_ns();
  fflush(stdout);
  fflush(stderr);
  return reply(KV_MSG_REPLY, json_pack("{s:[I]}", "call_ns", (json_int_t)(t1 - t0)), NULL, 0);
}

static int handle_check(json_t *req) {
  const struct kv_sizeset *s = pick_set(req);
  int slot = (int)json_integer_value(json_object_get(req, "slot"));
  json_t *calls = json_object_get(req, "calls");
  int ret_inputs = json_is_true(json_object_get(req, "return_inputs"));
  if (!s || slot < 0 || slot >= KV_SLOTS || !slots[slot] || !json_is_array(calls))
    return reply_error("bad CHECK request");
  if (json_is_true(json_object_get(req, "shm")))
    return check_shm(req, s, slot);
  char err[512];
  int64_t nelem[KV_MAX_PARAMS];
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  size_t per_call = kv_call_bytes(task, nelem, ret_inputs);
  size_t ncalls = json_array_size(calls);
  size_t total = per_call * ncalls;
  uint8_t *blob = total > 0 ? malloc(total) : NULL;
  if (total > 0 && !blob)
    return reply_error("out of memory for %zu bytes of results", total);
  struct site st;
  if (site_alloc(&st, nelem) < 0) {
    free(blob);
    site_free(&st);
    return reply_error("out of memory for the buffers");
  }
  json_t *ns = json_array(), *guard = json_array();
  size_t off = 0;
  for (size_t c = 0; c < ncalls; c++) {
    json_t *call = json_array_get(calls, c);
    uint64_t seed = (uint64_t)json_integer_value(json_object_get(call, "seed"));
    int poison = (int)json_integer_value(json_object_get(call, "poison"));
    /* The same addresses for every call of the job: new contents only. */
    kv_fill_inputs_mt(task, nelem, st.bufs, seed, kv_fill_threads());
    kv_fill_scalars(task, s, seed, st.scal);
    poison_outputs(&st, nelem, poison);
    kv_guard_fill_call(task, nelem, st.bufs, seed, 1);
    site_args(&st);
    uint64_t t0 = kv_now_ns();
    slots[slot](st.args);
    uint64_t t1 = kv_now_ns();
    fflush(stdout);
    fflush(stderr);
    json_array_append_new(ns, json_integer((json_int_t)(t1 - t0)));
    /* A write just outside a buffer: its first changed guard byte, for the
     * parent to judge. */
    int gp, gb;
    long gk;
    if (kv_guard_find(task, nelem, st.bufs, seed, 1, &gp, &gb, &gk))
      json_array_append_new(guard, json_pack("{s:I,s:i,s:b,s:I}", "call", (json_int_t)c, "param",
                                             gp, "before", gb, "byte", (json_int_t)gk));
    /* Outputs first (param order), then the inputs as they are now. */
    off += kv_pack_call(task, nelem, st.bufs, ret_inputs, blob + off);
  }
  site_free(&st);
  int rc = reply(KV_MSG_REPLY, json_pack("{s:o,s:o}", "call_ns", ns, "guard", guard), blob, off);
  free(blob);
  return rc;
}

/* ---- timing phases ----
 *
 * A TIME job is one phase: `calls` calls of one slot (or of kevo's own empty
 * entry, slot -1, whose cost is the phase's overhead), back to back. Every
 * call's buffers live in memory shared with the parent (KV_WIRE_SHM_FD),
 * which wrote fresh inputs and poisoned outputs there and flushed the caches
 * while this process was stopped, and reads everything back once it has
 * stopped it again: nothing here decides what the parent compares, and no
 * work of kevo's runs here between the timed calls (each call's buffers are
 * untouched since the flush, so each starts cold). The reply holds only the
 * per-call times, which the parent bounds with its own clock. */

static void empty_entry(void *const *args) {
  (void)args;
}

static struct {
  uint8_t *map;
  size_t len;
} ph;

static int handle_time(json_t *req) {
  const struct kv_sizeset *s = pick_set(req);
  int slot = (int)json_integer_value(json_object_get(req, "slot"));
  int m = (int)json_integer_value(json_object_get(req, "calls"));
  uint64_t seed = (uint64_t)json_integer_value(json_object_get(req, "seed"));
  size_t shm_bytes = (size_t)json_integer_value(json_object_get(req, "shm_bytes"));
  shim_fn fn = slot == -1 ? empty_entry : slot >= 0 && slot < KV_SLOTS ? slots[slot] : NULL;
  if (!s || !fn || m < 1 || m > 4096)
    return reply_error("bad TIME request");
  char err[512];
  int64_t nelem[KV_MAX_PARAMS];
  size_t off[KV_MAX_PARAMS], per_call;
  if (kv_layout(task, s, nelem, err, sizeof err) < 0)
    return reply_error("%s", err);
  kv_shm_layout(task, nelem, off, &per_call);
  if (per_call * (size_t)m > shm_bytes)
    return reply_error("bad TIME request (%d calls of %zu bytes in %zu)", m, per_call, shm_bytes);
  if (ph.len != shm_bytes) {
    if (ph.map)
      munmap(ph.map, ph.len);
    ph.map = mmap(NULL, shm_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, KV_WIRE_SHM_FD, 0);
    if (ph.map == MAP_FAILED) {
      ph.map = NULL;
      ph.len = 0;
      return reply_error("mapping the shared buffers: %s", strerror(errno));
    }
    ph.len = shm_bytes;
  }
  struct site *sites = calloc((size_t)(unsigned)m, sizeof *sites);
  uint64_t *ns = calloc((size_t)(unsigned)m + 1, sizeof *ns);
  if (!sites || !ns) {
    free(sites);
    free(ns);
    return reply_error("out of memory for the timing loop");
  }
  for (int c = 0; c < m; c++) {
    kv_shm_call_bufs(task, ph.map, per_call, off, c, sites[c].bufs);
    kv_fill_scalars(task, s, seed + (uint64_t)c, sites[c].scal);
    site_args(&sites[c]);
  }
  /* Back to back: one clock reading between two calls. */
  ns[0] = kv_now_ns();
  for (int c = 0; c < m; c++) {
    fn(sites[c].args);
    ns[c + 1] = kv_now_ns();
  }
  fflush(stdout);
  fflush(stderr);
  json_t *jn = json_array();
  for (int c = 0; c < m; c++)
    json_array_append_new(jn, json_integer((json_int_t)(ns[c + 1] - ns[c])));
  free(ns);
  free(sites);
  return reply(KV_MSG_REPLY, json_pack("{s:o}", "ns", jn), NULL, 0);
}

static const struct worker_runtime *rt;

static int handle_load(json_t *req) {
  int slot = (int)json_integer_value(json_object_get(req, "slot"));
  const char *path = json_string_value(json_object_get(req, "path"));
  if (slot < 0 || slot >= KV_SLOTS || !path)
    return reply_error("bad LOAD request");
  if (handles[slot])
    return reply_error("slot %d already loaded", slot);
  if (locked)
    return reply_error("this worker has run a candidate and loads no more; use a new worker");
  size_t plen = strlen(path);
  if (plen > 4 && !strcmp(path + plen - 4, ".kvk")) {
    /* A kernel-only candidate (kevo/launch.h): a cubin, no host code. */
    char msg[1024];
    if (!rt->load_kernels)
      return reply_error("%s: kernel-only candidates run on the cuda surface", path);
    if (rt->load_kernels(slot, path, msg, sizeof msg) != 0)
      return reply_error("%s", msg);
    handles[slot] = (void *)&handles[slot]; /* loaded; nothing to dlclose */
    if (json_is_true(json_object_get(req, "candidate"))) {
      has_candidate = 1;
      lock_exec();
    }
    if (rt->loaded && rt->loaded(slot) != 0)
      return 0;
    return reply(KV_MSG_REPLY, json_object(), NULL, 0);
  }
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return reply_error("%s", e ? e : "dlopen failed");
  }
  void *f = dlsym(h, "kevo_shim_call");
  if (!f)
    return reply_error("%s: kevo_shim_call not found", path);
  handles[slot] = h;
  memcpy(&slots[slot], &f, sizeof f);
  slot_entry[slot] = f;
  slot_guard[slot] = dlsym(h, "kevo_cuda_last_error");
  if (json_is_true(json_object_get(req, "candidate"))) {
    has_candidate = 1;
    lock_exec();
  }
  if (rt->loaded && rt->loaded(slot) != 0)
    return 0; /* it replied */
  return reply(KV_MSG_REPLY, json_object(), NULL, 0);
}

static int handle_init(json_t *req) {
  const char *spec = json_string_value(json_object_get(req, "task"));
  char err[1024];
  if (!spec)
    return reply_error("bad INIT request");
  kv_task_free(task);
  task = NULL;
  if (kv_task_parse(spec, strlen(spec), "task.json", &task, err, sizeof err) < 0)
    return reply_error("%s", err);
  return reply(KV_MSG_REPLY, json_object(), NULL, 0);
}

/* Tries each escape the sandbox should stop; "blocked" means it failed. */
static int handle_probe(void) {
  json_t *r = json_object();
  long pid = syscall(SYS_fork);
  if (pid == 0)
    _exit(0);
  if (pid > 0)
    waitpid((pid_t)pid, NULL, 0);
  json_object_set_new(r, "fork", json_string(pid < 0 ? "blocked" : "allowed"));
  long fd = syscall(SYS_socket, 2 /* AF_INET */, 1 /* SOCK_STREAM */, 0);
  if (fd >= 0)
    close((int)fd);
  json_object_set_new(r, "socket", json_string(fd < 0 ? "blocked" : "allowed"));
  char path[256];
  snprintf(path, sizeof path, "/tmp/kevo-probe-%d", (int)getpid());
  int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (wfd >= 0) {
    close(wfd);
    unlink(path);
  }
  json_object_set_new(r, "write_outside_scratch", json_string(wfd < 0 ? "blocked" : "allowed"));
  /* /dev/shm: shared by every user of the host (POSIX shared memory). */
  snprintf(path, sizeof path, "/dev/shm/kevo-probe-%d", (int)getpid());
  wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (wfd >= 0) {
    close(wfd);
    unlink(path);
  }
  json_object_set_new(r, "write_dev_shm", json_string(wfd < 0 ? "blocked" : "allowed"));
  snprintf(path, sizeof path, "%s/probe", scratch);
  wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (wfd >= 0) {
    close(wfd);
    unlink(path);
  }
  json_object_set_new(r, "write_scratch", json_string(wfd < 0 ? "blocked" : "allowed"));
  snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
  int rfd = open(path, O_RDONLY);
  if (rfd >= 0)
    close(rfd);
  json_object_set_new(r, "read_parent_environ", json_string(rfd < 0 ? "blocked" : "allowed"));
  long k = syscall(SYS_kill, (long)getppid(), 0L);
  json_object_set_new(r, "signal_parent", json_string(k < 0 ? "blocked" : "allowed"));
  /* Filling scratch past its cap (only tried where it is a private tmpfs:
   * elsewhere it would fill the disk, and is reported as allowed). */
  int filled = sandbox_st.scratch != KV_LAYER_ACTIVE;
  if (!filled) {
    static char chunk[1 << 20];
    uint64_t total = 0;
    int i = 0;
    for (; total <= KV_SCRATCH_BYTES; i++) {
      snprintf(path, sizeof path, "%s/fill-%d", scratch, i);
      int ffd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (ffd < 0)
        break;
      ssize_t n = 0;
      for (int c = 0; c < 16 && (n = write(ffd, chunk, sizeof chunk)) > 0; c++)
        total += (uint64_t)n;
      close(ffd);
      if (n <= 0)
        break;
    }
    filled = total > KV_SCRATCH_BYTES;
    for (int f = 0; f <= i; f++) {
      snprintf(path, sizeof path, "%s/fill-%d", scratch, f);
      unlink(path);
    }
  }
  json_object_set_new(r, "fill_scratch", json_string(filled ? "allowed" : "blocked"));
  /* The lockdown, as before a candidate's first call. */
  has_candidate = 1;
  lock_exec();
  uintptr_t code = (uintptr_t)&handle_probe & ~(uintptr_t)4095;
  int mp = mprotect((void *)code, 4096, PROT_READ | PROT_WRITE | PROT_EXEC);
  json_object_set_new(r, "make_code_writable", json_string(mp < 0 ? "blocked" : "allowed"));
  void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (x != MAP_FAILED)
    munmap(x, 4096);
  json_object_set_new(r, "map_executable", json_string(x == MAP_FAILED ? "blocked" : "allowed"));
  snprintf(path, sizeof path, "/proc/self/task/%ld/mem", (long)syscall(SYS_gettid));
  int mfd = open(path, O_RDWR);
  if (mfd >= 0)
    close(mfd);
  json_object_set_new(r, "write_own_memory", json_string(mfd < 0 ? "blocked" : "allowed"));
  json_object_set_new(r, "exec_lock",
                      json_pack("{s:s,s:i}", "state", kv_layer_state_name(sandbox_st.exec_lock),
                                "sealed", sandbox_st.sealed));
  char *argv[] = {"/bin/true", NULL};
  char *envp[] = {NULL};
  long e = syscall(SYS_execve, "/bin/true", argv, envp); /* returns only on failure */
  (void)e;
  json_object_set_new(r, "execve", json_string("blocked"));
  extern char **environ;
  int nenv = 0;
  for (char **v = environ; v && *v; v++)
    nenv++;
  json_object_set_new(r, "env_vars", json_integer(nenv));
  return reply(KV_MSG_REPLY, r, NULL, 0);
}

static int cpu_check(json_t *req) {
  return handle_check(req);
}
static int cpu_time(json_t *req) {
  return handle_time(req);
}

/* The runtimes, by the surface the parent names: cpu first, cuda second. */
static const struct worker_runtime cpu_runtime = {"cpu", NULL, NULL, cpu_check, cpu_time,
                                                  NULL,  NULL, NULL, NULL,      NULL};
static const struct worker_runtime *const runtimes[] = {&cpu_runtime, &wcuda_runtime};

int main(int argc, char **argv) {
  int sandbox = 1;
  const char *surface = "cpu";
  struct kv_sandbox_opts so;
  const char *reads[KV_SANDBOX_MAX_PATHS];
  int nreads = 0;
  /* Layers left off for a tool that runs the worker (ncu, compute-sanitizer:
   * lib/gate/toolrun.h says which each needs); the HELLO reports what is on. */
  int no_netns = 0, no_landlock = 0, no_seccomp = 0, no_lock = 0, no_scratch = 0, no_as = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--scratch") && i + 1 < argc)
      scratch = argv[++i];
    else if (!strcmp(argv[i], "--read") && i + 1 < argc && nreads < KV_SANDBOX_MAX_PATHS)
      reads[nreads++] = argv[++i];
    else if (!strcmp(argv[i], "--no-sandbox"))
      sandbox = 0;
    else if (!strcmp(argv[i], "--without") && i + 1 < argc) {
      const char *l = argv[++i];
      if (!strcmp(l, "netns"))
        no_netns = 1;
      else if (!strcmp(l, "landlock"))
        no_landlock = 1;
      else if (!strcmp(l, "seccomp"))
        no_seccomp = 1;
      else if (!strcmp(l, "lock"))
        no_lock = 1;
      else if (!strcmp(l, "scratch"))
        no_scratch = 1;
      else if (!strcmp(l, "as")) /* RLIMIT_AS: AddressSanitizer reserves terabytes */
        no_as = 1;
      else {
        fprintf(stderr,
                "kevo-worker: --without %s: use netns, landlock, seccomp, lock, scratch or as\n",
                l);
        return 2;
      }
    } else if (!strcmp(argv[i], "--surface") && i + 1 < argc)
      surface = argv[++i];
    else {
      fprintf(stderr, "kevo-worker: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (fcntl(KV_WIRE_REQ_FD, F_GETFD) < 0 || fcntl(KV_WIRE_RESP_FD, F_GETFD) < 0) {
    fprintf(stderr, "kevo-worker: is started by kevo (it talks over descriptors 3 and 4); "
                    "run 'kevo eval' instead\n");
    return 2;
  }
  for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
    if (!strcmp(runtimes[i]->name, surface))
      rt = runtimes[i];
  if (!rt) {
    fprintf(stderr, "kevo-worker: unknown surface '%s'; use cpu or cuda\n", surface);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct kv_sandbox_status st;
  memset(&st, 0, sizeof st);
  if (sandbox) {
    kv_sandbox_worker_defaults(&so, scratch);
    for (int i = 0; i < nreads; i++)
      so.read_paths[so.nread_paths++] = reads[i];
    if (rt->sandbox)
      rt->sandbox(&so);
    so.netns = so.netns && !no_netns;
    so.landlock = so.landlock && !no_landlock;
    so.seccomp = so.seccomp && !no_seccomp;
    if (no_scratch)
      so.scratch_bytes = 0;
    if (no_as)
      so.mem_limit_bytes = 0;
    kv_sandbox_enter(&so, &st);
  }
  json_t *hello = json_pack(
      "{s:i,s:s,s:s,s:s,s:s,s:s,s:i,s:s}", "pid", (int)getpid(), "no_new_privs",
      kv_layer_state_name(st.no_new_privs), "netns", kv_layer_state_name(st.netns), "landlock",
      kv_layer_state_name(st.landlock), "seccomp", kv_layer_state_name(st.seccomp), "rlimits",
      kv_layer_state_name(st.rlimits), "landlock_abi", st.landlock_abi, "note", st.note);
  json_object_set_new(hello, "surface", json_string(rt->name));
  json_object_set_new(hello, "scratch", json_string(kv_layer_state_name(st.scratch)));
  json_object_set_new(hello, "scratch_bytes", json_integer((json_int_t)st.scratch_bytes));
  json_object_set_new(hello, "scratch_inodes", json_integer((json_int_t)st.scratch_inodes));
  json_object_set_new(hello, "file_limit_bytes", json_integer((json_int_t)st.file_limit_bytes));
  if (rt->init)
    rt->init(hello);
  /* The runtime has named its threads (cuInit): no more writes under /proc
   * before any candidate's constructor runs. */
  if (sandbox)
    kv_sandbox_close_proc(&st);
  sandbox_st = st;
  sandboxed = sandbox && !no_lock;
  if (reply(KV_MSG_HELLO, hello, NULL, 0) < 0)
    _exit(3);
  for (;;) {
    struct kv_frame_header h;
    char *js;
    uint8_t *blob;
    if (kv_wire_read(KV_WIRE_REQ_FD, 0, &h, &js, &blob) < 0)
      _exit(0); /* the parent went away */
    cur_token = h.token;
    json_t *req = json_loads(js, 0, NULL);
    free(js);
    free(blob);
    int rc;
    if (!req)
      rc = reply_error("request is not JSON");
    else if (h.type == KV_MSG_INIT)
      rc = handle_init(req);
    else if (h.type == KV_MSG_LOAD)
      rc = handle_load(req);
    else if (h.type == KV_MSG_CHECK)
      rc = rt->check(req);
    else if (h.type == KV_MSG_TIME)
      rc = rt->time(req);
    else if (h.type == KV_MSG_CALIB)
      rc = rt->calib ? rt->calib(req) : reply_error("the %s runtime measures nothing", rt->name);
    else if (h.type == KV_MSG_FETCH)
      rc = rt->fetch
               ? rt->fetch(req)
               : reply_error("the %s runtime shares its timed calls' buffers: nothing to fetch",
                             rt->name);
    else if (h.type == KV_MSG_LEND)
      rc = rt->lend && !has_candidate
               ? rt->lend(req)
               : reply_error("the %s runtime lends no buffers%s", rt->name,
                             has_candidate ? " from a worker that loaded a candidate" : "");
    else if (h.type == KV_MSG_PROBE)
      rc = handle_probe();
    else if (h.type == KV_MSG_QUIT)
      _exit(0);
    else
      rc = reply_error("unknown request type %u", h.type);
    json_decref(req);
    if (rc < 0)
      _exit(3);
  }
}
