/* Internal to the gate: worker processes, compilation, surfaces. */
#ifndef KEVO_GATE_INTERNAL_H
#define KEVO_GATE_INTERNAL_H

#include <jansson.h>
#include <sys/types.h>

#include "cudakit.h"
#include "devlock.h"
#include "kevo/gate.h"
#include "lend.h"
#include "kevo/surface.h"
#include "kevo/util.h"
#include "torchbuild.h"

/* ---- worker client (client.c) ---- */
enum kv_call_status {
  KV_CALL_OK = 0,   /* a REPLY frame with the right token */
  KV_CALL_ERROR,    /* an ERROR frame: reply json has "error" */
  KV_CALL_DIED,     /* the worker died or closed its channel mid-job */
  KV_CALL_TIMEOUT,  /* past the deadline: killed */
  KV_CALL_PROTOCOL, /* malformed frame, wrong token, wrong sizes: killed */
};

struct kv_worker {
  pid_t pid;
  int req_fd, resp_fd, out_fd, err_fd;
  char scratch[4096];
  struct kv_buf out, err; /* the candidate's stdout / stderr, capped */
  int alive;
  json_t *hello;   /* the worker's HELLO (sandbox status) */
  char death[256]; /* how it died, once it did */
  int paused;      /* stopped by kv_worker_pause (SIGSTOP) */
  int shm_fd;      /* the memfd the worker has as KV_WIRE_SHM_FD */
  uint8_t *shm;    /* the parent's mapping of it (kv_worker_shm) */
  size_t shm_len;
  int chk_fd;   /* the memfd the worker has as KV_WIRE_CHECK_FD */
  uint8_t *chk; /* the parent's mapping of it (kv_worker_chk) */
  size_t chk_len;
  double start_deadline; /* kv_worker_spawn -> kv_worker_hello: by when it must say HELLO */
  char name[256];        /* what was started, for messages */
};

struct kv_worker_spec {
  const char *worker_path;
  const char *scratch_base;
  const char *read_paths[8];
  int nread;
  int sandbox;
  double start_deadline_s;
  const char *surface; /* NULL or "cpu": the CPU runtime; "cuda": the driver, device buffers */
  /* The torch reference worker (torchref.c): when python is set, the worker
   * started is `python -B script --rt rtlib ...` instead of worker_path. */
  const char *python, *script, *rtlib;
  /* The torch worker: kevo's cache directory, where torch.compile keeps what
   * it compiled (TORCHINDUCTOR_CACHE_DIR) from one evaluation to the next. */
  const char *torch_cache;
  /* A tool that runs the worker (lib/gate/toolrun.h): its argv before the
   * worker's (NULL-terminated; NULL: none), the sandbox layers the worker
   * leaves off for it (kevo-worker --without NAME; NULL-terminated), and
   * variables added to the worker's environment (NULL-terminated). */
  const char *const *wrap;
  const char *const *without;
  const char *const *extra_env;
};

int kv_worker_start(struct kv_worker *w, const struct kv_worker_spec *spec, char *err,
                    size_t errlen);
/* kv_worker_start in two halves: spawn forks and execs it, hello waits for
 * its HELLO. A worker dies with the thread that spawned it (SIGKILL on the
 * parent's death, so a stopped or spinning worker does not outlive a killed
 * kevo): spawn it on a thread that outlives it, and wait for its hello on
 * any (gate.c starts workers while the compile pool runs that way). */
int kv_worker_spawn(struct kv_worker *w, const struct kv_worker_spec *spec, char *err,
                    size_t errlen);
int kv_worker_hello(struct kv_worker *w, char *err, size_t errlen);
/* One request/reply. *reply is the reply JSON (caller decrefs) for OK and
 * ERROR; *blob (caller frees) must be exactly want_blob bytes (or any size up to
 * want_blob when want_exact is 0). On DIED/TIMEOUT/PROTOCOL the worker is dead
 * and `detail` says what happened. */
enum kv_call_status kv_worker_call(struct kv_worker *w, uint32_t type, json_t *req,
                                   double deadline_s, json_t **reply, uint8_t **blob,
                                   uint64_t want_blob, char *detail, size_t detlen);
void kv_worker_stop(struct kv_worker *w);
/* Stops the worker process (SIGSTOP; returns once it is stopped, so none of
 * its threads runs) and lets it go on; a call resumes a paused worker. */
int kv_worker_pause(struct kv_worker *w);
/* Sends the worker SIGKILL and returns at once: its exit (on a GPU, its
 * context's teardown) overlaps what the caller does next. No call may follow;
 * kv_worker_stop reaps it. */
void kv_worker_kill(struct kv_worker *w);
/* kv_worker_stop without waiting for the process's exit: it is killed, this
 * side's descriptors, mapping and scratch are released now, and a detached
 * thread reaps it (a GPU context's teardown takes 65 ms and more). */
void kv_worker_stop_nowait(struct kv_worker *w);
/* kv_worker_stop that leaves w->out and w->err for the caller to release. */
void kv_worker_stop_keep_output(struct kv_worker *w);
int kv_worker_resume(struct kv_worker *w);
/* Sizes the shared memfd to len bytes and seals its size (the worker must be
 * paused or trusted), mapping it here; the worker maps the same bytes. */
uint8_t *kv_worker_shm(struct kv_worker *w, size_t len, char *err, size_t errlen);
/* The check memory (KV_WIRE_CHECK_FD), sized once like kv_worker_shm's; a
 * later call asking for no more than its size gets the same mapping. */
uint8_t *kv_worker_chk(struct kv_worker *w, size_t len, char *err, size_t errlen);
void kv_sandbox_status_from_hello(json_t *hello, struct kv_sandbox_status *st);

/* ---- the torch reference worker (torchref.c) ---- */
struct kv_torch_paths {
  char python[4096], script[4096], rtlib[4096];
  /* the torch surface's candidate worker (python/kevo_torch_cand.py); ""
   * when not found (torchcand.c says so where it is needed) */
  char cand[4096];
};
/* 1 when the task's reference is reference.py (and no reference.c): its
 * absolute path in `path`; else 0. */
int kv_torch_reference(const struct kv_task *t, char *path, size_t cap);
/* The Python ($KEVO_PYTHON, else python3 on PATH), kevo_torch_worker.py and
 * libkevo_pyrt.so (beside worker_path or this executable; the script also in
 * the source tree). 0, or -1 with the reason in err. */
int kv_torch_worker_paths(const char *worker_path, struct kv_torch_paths *tp, char *err,
                          size_t errlen);
/* torch's code caches under kevo's cache directory (TORCHINDUCTOR_CACHE_DIR,
 * TRITON_CACHE_DIR: code the torch worker loads and runs): made 0700, else
 * they must be directories of this user, mode 0700, not links. 0, or -1 with
 * the directory and the fix in err. */
int kv_torch_cache_check(const char *cache, char *err, size_t errlen);

/* ---- the torch surface (torchcand.c, docs/torch-surface.md) ---- */
/* Its table entries, its device and the task's reference.py: torchbuild.h. */
struct kv_session;
/* LOAD of a torch candidate (cw) or of kevo's empty ModelNew (ew) in a
 * kevo_torch_cand.py worker: 0, 1 with the worker's message in detail (a
 * candidate that does not load), -1 with err. The candidate's LOAD wall on
 * kevo's clock is added to s->torch_jit_s. */
int kv_torch_load_candidate(struct kv_session *s, struct kv_worker *w, const char *path,
                            char *detail, size_t detlen);
int kv_torch_load_empty(struct kv_session *s, struct kv_worker *w, char *err, size_t errlen);

/* ---- compilation (compile.c, nvcc.c) ---- */
struct kv_build {
  char so_path[4096];
  char obj_path[4096]; /* cuda: the candidate's own object (what the policy reads) */
  char key[65];
  int ok; /* 1 built; 0 compile error (log says why) */
  int cached;
  double seconds;
  char *log;    /* capped, NUL-terminated */
  int nkernels; /* cuda: resources of each kernel, from the ptxas report in the log */
  struct kv_kernel_res kernels[KV_MAX_KERNELS];
  /* cuda: static analysis of obj_path (kevo/sass.h); the mixes are in kernels[]. */
  int static_done;
  double static_s;
  char static_note[512];
  char *sass; /* stripped listing, capped at KV_SASS_RAW_CAP */
  /* cuda: a kernel-only candidate (nvrtc.h): so_path is its bundle (.kvk),
   * obj_path its cubin. */
  int kernel_only;
};
/* Compiles source file `src` (a candidate or a reference) for the task with
 * the surface's compiler; the generated prototype is force-included and the
 * call shim linked in. Returns -1 when the compiler cannot be run at all. */
int kv_build_c(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
               const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
               size_t errlen);
void kv_build_release(struct kv_build *b);
/* cuda: the static analysis of a built object (kevo/sass.h) into b: each
 * kernel's instruction mix, the stripped listing, its cost; a missing or
 * failing cuobjdump leaves "not available: why" in static_note. */
void kv_sass_analyze_build(struct kv_build *b, const struct kv_gate_opts *o, const char *tmp_parent,
                           double deadline_s);
/* Undefined dynamic symbols of a built object that the policy forbids;
 * returns the count and a "fork, system" list in `out`. -1 if nm fails. */
int kv_policy_check(const char *so_path, const struct kv_task *t, char *out, size_t cap, char *err,
                    size_t errlen);
/* A compiler's or tool's sandbox (kevo-sandbox, worker/sandbox_exec.c): a
 * network namespace, no_new_privs, Landlock (writes only `dir`; reads the
 * system directories, /usr/local and `reads`), RLIMIT_CPU and RLIMIT_FSIZE;
 * no seccomp (the compiler drivers start their own children). */
struct kv_jail {
  const char *dir;
  const char *reads[4];
  int nreads;
  int cpu_s;
  unsigned long long fsize; /* bytes; 0: the sandbox's default */
  const char *worker_path;  /* kevo-sandbox is looked for beside it (kv_helper_path) */
};
/* The compilers' caps (caps.c): address space KEVO_COMPILE_MEM_MB MiB
 * (default KV_COMPILE_MEM_MB_DEFAULT: nvcc, cicc, ptxas and cc1 need well
 * under 1 GiB for real kernels; a macro-doubling initializer took cc1 to
 * 5.5 GB) and KEVO_COMPILE_CPU_S seconds of CPU per process. Set by
 * kv_compile_caps_apply in the forked child, before the exec of kevo-sandbox
 * or kevo-nvrtc, which never raise a limit. */
#define KV_COMPILE_MEM_MB_DEFAULT 4096ULL
#define KV_COMPILE_CPU_S_DEFAULT 120ULL
struct kv_compile_caps {
  unsigned long long mem_mb;
  int cpu_s;
};
void kv_compile_caps_get(struct kv_compile_caps *c);
int kv_compile_caps_apply(void *caps); /* a kv_run setup: lowers RLIMIT_AS and RLIMIT_CPU */
/* After a capped compiler failed: 1 when a cap explains it, with a line
 * "kevo: error: TOOL hit the compilers' memory cap (...)" (or its CPU
 * cap) put first in log, so that the verdict's detail names the cap. */
int kv_compile_caps_explain(const struct kv_compile_caps *c, const char *tool,
                            const struct kv_proc_result *pr, struct kv_buf *log);
/* The same for the wall-clock deadline. */
void kv_compile_deadline_explain(const char *tool, double deadline_s, struct kv_buf *log);
/* 1 when the source names a file no candidate may read (#include, #embed
 * or #import of an absolute path, of a path climbing out with "..", or of a
 * computed name; .incbin of such a path), with why in out; else 0. */
int kv_source_files_check(const char *text, size_t len, char *out, size_t cap);
/* The compile log of such a refusal (malloc'd into *log). */
void kv_source_files_refusal(const char *why, char **log);

/* The object cache (objcache.c). kv_dir_trusted: 0 when dir is a directory
 * of this user's, not a link, not writable by group or others; else -1 with
 * err naming dir (`what` says which) and the fix. kv_obj_dir: <cache>/obj,
 * made 0700, both checked so, marked KV_UNLISTED_MARK (workers read it by
 * name only). */
int kv_dir_trusted(const char *dir, const char *what, char *err, size_t errlen);
int kv_obj_dir(const char *cache_dir, char *objdir, size_t cap, char *err, size_t errlen);
enum { KV_OBJ_MISS = 0, KV_OBJ_OK = 1, KV_OBJ_FAIL = 2 };
#define KV_OBJ_CAP_MB_DEFAULT 2048ULL
#define KV_OBJ_GRACE_S 600
/* The entry <key> of objdir, verified against its record (<key>.sum): each
 * recorded file re-hashed (SHA-256, a regular file of ours, the recorded
 * size). KV_OBJ_OK or KV_OBJ_FAIL (a cached compile error) when it matches,
 * and the entry counts as used now; else KV_OBJ_MISS, and whatever was there
 * under that key (files named <key>.SUFFIX for each of the NULL-ended
 * suffixes, or any record) is removed: the caller rebuilds. */
int kv_obj_lookup(const char *objdir, const char *key, const char *const *suffixes);
/* One builder of a content at a time on this host (several kevo processes:
 * two benches, an executor's servers): an flock on objdir/.lock/<key>,
 * taken before the lookup, so that no lookup sees another builder's files
 * half stored (files without a record are removed as untrusted) and the
 * second builder finds the first's build. The descriptor (kv_obj_unlock it
 * once the entry is recorded), or -1 where it cannot be had in wait_s or
 * .lock is not a directory of ours: the caller builds anyway (two builds of
 * one content cost only time). */
int kv_obj_lock(const char *objdir, const char *key, double wait_s);
void kv_obj_unlock(int fd);
/* Records the entry once its files (<key>.SUFFIX, NULL-ended) are in place,
 * then evicts down to the cap. 0, or -1 with err (the entry removed). */
int kv_obj_record(const char *objdir, const char *key, int ok, const char *const *suffixes,
                  char *err, size_t errlen);
/* The cap on obj/: KEVO_CACHE_MAX_MB MiB (default KV_OBJ_CAP_MB_DEFAULT). */
unsigned long long kv_obj_cap_bytes(void);
/* Removes the least recently used entries of objdir while it holds more than
 * cap_bytes (down to 90% of it), sparing those used in the last grace_s
 * seconds. Returns the bytes left. */
unsigned long long kv_obj_evict(const char *objdir, unsigned long long cap_bytes, int grace_s);

/* kv_run of argv inside the jail: the sandbox is entered by kevo-sandbox
 * after exec (a child forked from a threaded process may only make
 * async-signal-safe calls before exec), which then executes argv[0] (found
 * on PATH as kv_run finds it). A sandbox that cannot be set up is kevo's
 * failure (-1, err says why), never the tool's. */
int kv_run_jailed(const struct kv_jail *j, char *const argv[], char *const envp[], const char *cwd,
                  double deadline_s, struct kv_buf *out, struct kv_proc_result *res, char *err,
                  size_t errlen);
/* A helper executable of kevo's (kevo-sandbox, kevo-nvrtc): $ENV, else beside
 * worker_path (kv_gate_opts.worker_path; NULL: none), else beside this
 * executable. 0 when it is executable. */
int kv_helper_path(const char *name, const char *env, const char *worker_path, char *out,
                   size_t cap);
/* "gcc (Debian 12.2.0-14) 12.2.0" */
const char *kv_cc_version(void);

/* The CUDA compiler: `nvcc -c` of the candidate (with -Xptxas -v), then a
 * shared object linking it with the call shim and the error guard, for the
 * device's own architecture; same caching and sandbox as kv_build_c. */
int kv_build_cuda(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                  const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                  size_t errlen);
/* The same without the static analysis, which the gate runs beside the
 * checks and timing instead (cuobjdump alone takes 0.6 s). */
int kv_build_cuda_code(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
                       const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
                       size_t errlen);
/* nvcc's "release 13.0, V13.0.88" line, "" when nvcc cannot be run (its
 * path: kv_nvcc_path, cudakit.h). o may be NULL (the defaults). */
const char *kv_nvcc_version(const struct kv_gate_opts *o);
/* Linked into every cuda object (kevo_cuda_last_error). */
extern const char kv_cuda_guard_cu[];
/* A policy's findings: a comma-separated list in out[cap], n of them (the
 * list is cut at cap, the count is not). */
struct kv_policy_list {
  char *out;
  size_t cap, used;
  int n;
};
void kv_policy_add(struct kv_policy_list *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Each undefined symbol `nm [nm_flag] --undefined-only path` lists (the
 * version suffix cut; unnamed ones skipped), to each. 0, or -1 with err. */
int kv_undefined_symbols(const char *path, const char *nm_flag,
                         void (*each)(void *ud, const char *name), void *ud, char *err,
                         size_t errlen);
/* The cuda policy: the candidate's own object may not call what kv_policy_check
 * forbids, nor a vendor library (cublas..., cudnn...) that the task's `allow`
 * list does not name. Same return as kv_policy_check. */
int kv_policy_check_cuda(const char *obj_path, const struct kv_task *t, char *out, size_t cap,
                         char *err, size_t errlen);

/* Builds several sources at once (the compile pool: one thread each, at most
 * as many running as there are cores). */
struct kv_build_job {
  const struct kv_task *t;
  const struct kv_gate_opts *o; /* the compilers and helpers (NULL: the defaults) */
  const char *src;
  const char *cache_dir;
  double deadline_s;
  struct kv_build b;
  int rc;
  char err[2048];
  /* When set (kv_gate_prebuild): a built candidate's static analysis too,
   * whose listing the cache keeps beside the object for its evaluation. */
  void (*analyze)(struct kv_build *b, const struct kv_gate_opts *o, const char *cache_dir,
                  double deadline_s);
};
void kv_build_pool(int (*build)(const struct kv_task *, const struct kv_gate_opts *, const char *,
                                const char *, double, struct kv_build *, char *, size_t),
                   struct kv_build_job *jobs, int n);

/* ---- surfaces (surface.c) ---- */
/* What differs between the cpu and cuda surfaces; everything else (checks,
 * verdicts, sandbox, worker protocol) is shared. */
struct kv_surface {
  const char *name;      /* "cpu", "cuda" */
  enum kv_lang lang;     /* of the candidate, reference and prototype */
  const char *ext;       /* of its sources, without the dot: "c", "cu" */
  const char *reference; /* the task's ground truth for this surface */
  const char *baseline;  /* also timed when the task has it; NULL: none */
  /* Before anything is compiled: the toolchain (and, for cuda, the
   * architecture) is there; fills a one-line description. */
  int (*prepare)(const struct kv_gate_opts *o, char *desc, size_t cap, char *err, size_t errlen);
  int (*build)(const struct kv_task *t, const struct kv_gate_opts *o, const char *src,
               const char *cache_dir, double deadline_s, struct kv_build *b, char *err,
               size_t errlen);
  int (*policy)(const struct kv_build *b, const struct kv_task *t, char *out, size_t cap, char *err,
                size_t errlen);
  const char *worker_runtime; /* kevo-worker --surface NAME */
  double worker_start_s;      /* a worker's start (cuInit and a context take a while) */
  int device_in_worker;       /* the worker names the device and measures its ceilings */
  /* Static analysis of a build (cuda: kv_sass_analyze_build), which the
   * gate runs beside the checks and timing, off the verdict's path; NULL:
   * none. */
  void (*analyze)(struct kv_build *b, const struct kv_gate_opts *o, const char *cache_dir,
                  double deadline_s);
};
/* kv_surface_find, kv_surface_names and the rest: kevo/surface.h */

/* ---- comparison (compare.c) ---- */
struct kv_cmp {
  enum kv_verdict verdict; /* OK, UNWRITTEN_OUTPUT, WRONG_OUTPUT */
  char detail[512];
  double max_abs, max_rel;
  int64_t first_bad;
};
/* Compares `got` against `exp` for param p (out or inout) of the task under
 * tolerance; `poison` is the pattern the output held before the call (-1 for
 * inout: never poisoned). */
void kv_compare(const struct kv_task *t, const struct kv_sizeset *s, int p, const void *exp,
                const void *got, int64_t n, int poison, struct kv_cmp *c);
/* The same over a sample: element i of exp and got is element idx[i] of
 * the param's `whole` (first_bad and the detail name that one). */
void kv_compare_at(const struct kv_task *t, const struct kv_sizeset *s, int p, const void *exp,
                   const void *got, int64_t n, int poison, const int64_t *idx, int64_t whole,
                   struct kv_cmp *c);
/* Formats a flat index as name[i,j,...] using the param's shape. */
void kv_format_index(const struct kv_task *t, const struct kv_sizeset *s, int p, int64_t i,
                     char *out, size_t cap);
/* Tolerance rule: exact for integers; for floats NaN matches NaN, inf must be
 * equal, otherwise |got-exp| <= atol + rtol*|exp|. */
int kv_close(const struct kv_task *t, enum kv_dtype d, double exp, double got);

/* ---- one evaluation (gate.c) and its timing (timing.c) ---- */
#define KV_SLOT_KEY 4200 /* a slot's path and mode */
struct kv_session {
  const struct kv_task *t;
  const struct kv_gate_opts *o;
  const struct kv_surface *sf;
  char cache[4096];
  char objdir[4096 + 8];
  char scratch[4096 + 16];
  char worker_path[4096];
  struct kv_worker rw, cw; /* reference worker (never runs candidate code), candidate worker */
  int rw_up, cw_up;
  /* A reference.py task: rw is the torch worker, and kevo's empty entry runs
   * in ew, a clean kevo-worker, so that the overhead it prices is that of a
   * process like the candidate's. */
  int torch;
  struct kv_torch_paths tp;
  struct kv_worker ew;
  int ew_up;
  /* cuda, a reference.py task: the clean kevo-worker that lends (lend.h),
   * apart from ew, so that the empty entry's phases pay the same switch
   * between processes' GPU contexts as the candidate's */
  struct kv_worker lw;
  int lw_up;
  double torch_jit_s; /* the torch surface: the candidate's LOADs (kv_torch_load_candidate) */
  /* o->warm: cw was spawned by an earlier evaluation (its HELLO not yet
   * read, never given a candidate); what rw's slots 0 and 2 hold ("" none),
   * so that a reference worker handed on is not loaded again. */
  int cw_fresh;
  char rw_slot0[KV_SLOT_KEY], rw_slot2[KV_SLOT_KEY];
  /* cuda: the buffers rw lends to cw (lend.h) */
  struct kv_lend lend;
};
/* Workers kept warm across evaluations (warm.c, kevo/gate.h kv_gate_warm):
 * take moves what the warm holds for `key` into the session (1) or drops it
 * (0); put moves the session's live workers into it (the session no longer
 * owns them). */
int kv_warm_take_ref(struct kv_gate_warm *w, const char *key, struct kv_session *s);
void kv_warm_put_ref(struct kv_gate_warm *w, const char *key, struct kv_session *s);
int kv_warm_take_cand(struct kv_gate_warm *w, const char *key, struct kv_worker *cw);
void kv_warm_put_cand(struct kv_gate_warm *w, const char *key, struct kv_worker *cw);
/* The session's surface, cache and scratch directories and worker path from
 * the options (the workers are started apart); release stops every worker
 * still held, without waiting for their exits (kv_worker_stop_nowait). Used
 * by kv_gate_eval, kv_gate_prebuild and kv_task_check. */
int kv_session_init(struct kv_session *s, const struct kv_task *t, const struct kv_gate_opts *o,
                    char *err, size_t errlen);
void kv_session_release(struct kv_session *s);
/* Starts a worker, sends it the task and loads `so` into slot 0 (the
 * candidate's worker, s->cw, locks itself first): 0, 1 with the loader's
 * message in detail, or -1 with err. */
int kv_session_start_worker(struct kv_session *s, struct kv_worker *w, int *up, const char *so,
                            char *detail, size_t detlen, char *err, size_t errlen);
/* Correctness (checks.c): every check size x seeds against the reference in
 * s->rw, the candidate in s->cw (replaced when it died). Each check goes into
 * r, the worst verdict into *worst and r's verdict. 0, or -1 with err when
 * kevo cannot judge (the reference fails, a worker cannot start). */
int kv_gate_checks(struct kv_session *s, const char *refsrc, const char *cand_so,
                   struct kv_gate_result *r, enum kv_verdict *worst, char *err, size_t errlen);
/* Starts a worker of the session's surface and sends it the task (rw: the
 * torch worker when s->torch). */
/* session.c's steps of kv_session_worker_up, for the orchestrator's threads
 * (gate.c): spawn, then ready (HELLO and the task); what a cuda worker said
 * of the device in its HELLO (NULL for cpu); a LOAD into a slot (candidate:
 * the worker locks itself first), 1 with the loader's message in detail. */
int kv_session_worker_spawn(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                            size_t errlen);
int kv_session_worker_ready(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                            size_t errlen);
json_t *kv_session_hello_cuda(struct kv_worker *w);
int kv_session_load_slot(struct kv_worker *w, int slot, const char *so, int candidate, char *detail,
                         size_t detlen);
int kv_session_worker_up(struct kv_session *s, struct kv_worker *w, int *up, char *err,
                         size_t errlen);
/* Loads `so` into a slot of w: 0, or 1 with the loader's message in detail. */
int kv_session_load(struct kv_worker *w, int slot, const char *so, char *detail, size_t detlen);
/* The torch worker: loads reference.py into a slot under torch.compile(mode),
 * compiled there at the bench size before it returns (deadline_s: the
 * longest it may take); *compile_s is how long compiling took. 0, or 1 with
 * the worker's message in detail. */
int kv_session_load_compiled(struct kv_worker *w, int slot, const char *path, const char *mode,
                             double deadline_s, double *compile_s, char *detail, size_t detlen);
/* The calls of one CHECK job; on success *blob holds ncalls x call_bytes. */
enum kv_call_status kv_run_check(struct kv_worker *w, int slot, const char *set, int index,
                                 const uint64_t *seeds, const int *poisons, int ncalls,
                                 int ret_inputs, size_t want, double deadline, uint8_t **blob,
                                 json_t **reply, char *detail, size_t detlen);
/* The same at a check size set kevo drew (drawn, of task t; NULL: index's):
 * the request carries every param's value ("sizes"). */
enum kv_call_status kv_run_check_at(struct kv_worker *w, int slot, const char *set, int index,
                                    const struct kv_task *t, const struct kv_sizeset *drawn,
                                    const uint64_t *seeds, const int *poisons, int ncalls,
                                    int ret_inputs, size_t want, double deadline, uint8_t **blob,
                                    json_t **reply, char *detail, size_t detlen);
void kv_request_sizes(const struct kv_task *t, const struct kv_sizeset *drawn, json_t *req);
/* A sampled call (kevo/runtime.h): the whole call's counts and the
 * sample's seed. */
struct kv_sample_of {
  const int64_t *whole;
  uint64_t seed;
};
/* Judges one call's outputs against the reference's and, with got_in, its
 * inputs after the call against want_in (NULL: regenerated from seed). With
 * smp, the buffers hold sample smp->seed (nelem its counts; want_in must be
 * given). */
void kv_judge_call(const struct kv_task *t, const struct kv_sizeset *ss, const uint8_t *exp,
                   const uint8_t *got, const uint8_t *got_in, const uint8_t *want_in,
                   const int64_t *nelem, uint64_t seed, int poison, const struct kv_sample_of *smp,
                   struct kv_cmp *res);
/* Whether in param p (n elements) got differs from want; detail names the
 * first changed element (idx[i] when idx is given: a sample's) and both
 * values. */
int kv_input_changed(const struct kv_task *t, const struct kv_sizeset *ss, int p,
                     const uint8_t *want, const uint8_t *got, int64_t n, const int64_t *idx,
                     char *detail, size_t cap);
void kv_set_verdict(struct kv_gate_result *r, enum kv_verdict v, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Notes in r's timeline that `what` ended now (kv_gate_mark) or at kv_now_s()
 * time `at` (kv_gate_mark_at). */
void kv_gate_mark(struct kv_gate_result *r, const char *what);
void kv_gate_mark_at(struct kv_gate_result *r, const char *what, double at);
/* "; its last output: ..." from the candidate's captured stream. */
void kv_tail_of(const struct kv_buf *b, char *out, size_t cap);
/* Keeps what the candidate printed in r and stops its worker. */
void kv_session_stop_candidate(struct kv_session *s, struct kv_gate_result *r);
/* Takes the timing lock of the device that surface sf times on (cuda: the GPU
 * that a worker's HELLO names by UUID; cpu: the cores this thread may run
 * on, which the workers it starts inherit), waiting at most o->lock_wait_s
 * (0: KV_DEVLOCK_WAIT_S). `what` is recorded for whoever waits ("timing
 * rowsum"). Only timing loops and device calibrations take it: compiles and
 * checks overlap. */
int kv_gate_lock_device(const struct kv_surface *sf, const struct kv_gate_opts *o, json_t *hello,
                        const char *what, struct kv_devlock *l, char *err, size_t errlen);
/* Times the candidate (cw, slot 0; cand_so, loaded again into a fresh cw for
 * each bench size after the first) against the reference (rw, slot 0, loaded
 * for the checks) and the baseline (base_so: loaded into rw slot 2; NULL:
 * none) at every bench size (kv_timing.size); may change r's verdict. -1 when
 * kevo itself failed (err says why). */
int kv_time_candidate(struct kv_session *s, const char *base_so, const char *cand_so,
                      const struct kv_calib *cal, struct kv_gate_result *r, char *err,
                      size_t errlen);
/* cuda, a torch reference timed by kevo's method: its eager and compiled
 * sides timed again by triton's do_bench into r->timing (dobench.c); a side
 * it could not time stays 0, do_bench_why saying why. KEVO_NO_DO_BENCH=1
 * skips it. */
#define KV_DO_BENCH_DEADLINE_S 120
void kv_torch_do_bench(struct kv_session *s, struct kv_gate_result *r);

#endif
