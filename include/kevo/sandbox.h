/* The worker's sandbox. Applied by kevo-worker to itself, once, before it
 * loads any candidate. Every layer is best effort: what could not be applied
 * is reported, never fatal, so `kevo doctor` can say what protects a run.
 * Never prints, never exits. */
#ifndef KEVO_SANDBOX_H
#define KEVO_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

enum kv_layer_state {
  KV_LAYER_OFF = 0,         /* not requested */
  KV_LAYER_ACTIVE = 1,      /* applied */
  KV_LAYER_UNAVAILABLE = 2, /* the kernel or permissions do not allow it */
  KV_LAYER_FAILED = 3,      /* tried and failed unexpectedly */
};

#define KV_SANDBOX_MAX_PATHS 32
/* A read path that holds a regular file of this name is readable by name
 * only (no listing): kevo's object cache (kv_obj_dir). */
#define KV_UNLISTED_MARK ".kevo-unlisted"

struct kv_sandbox_opts {
  const char *scratch_dir;                      /* the one writable directory */
  const char *read_paths[KV_SANDBOX_MAX_PATHS]; /* extra readable (files or dirs) */
  int nread_paths;
  const char
      *dev_paths[KV_SANDBOX_MAX_PATHS]; /* device nodes readable+writable (e.g. /dev/nvidia*) */
  int ndev_paths;
  int netns;    /* unshare a new, empty network namespace, and a new IPC
                   namespace with it (System V objects and POSIX message
                   queues: private to the process, gone when it ends) */
  int landlock; /* filesystem: write only under scratch_dir, read only the system
                   library directories, /etc/ld.so.*, /proc/self (write: its task/, for
                   thread names), /sys/devices/system/cpu, /sys/fs/cgroup,
                   /dev/null|zero|urandom and read_paths; no TCP bind/connect (ABI >= 4);
                   no signals or abstract sockets outside the sandbox (ABI >= 6) */
  int seccomp;  /* deny: execve, execveat, fork, vfork, clone without CLONE_THREAD,
                   clone3 (ENOSYS so libc falls back to clone), ptrace,
                   process_vm_readv/writev, socket (but AF_UNIX stream/seqpacket,
                   which cuInit needs), socketpair, connect, bind/listen/accept
                   (allowed in a private netns: cuInit serves an abstract socket),
                   kill/tgkill of other processes, pidfd_*, setsid/setpgid, mount,
                   chroot, bpf, perf_event_open, keyctl, chmod/chown/xattr, setuid...,
                   setrlimit, real-time scheduling, other processes' (and threads')
                   CPUs, nice, policy and I/O priority; unknown newer syscalls: ENOSYS */
  int rlimits;  /* RLIMIT_CORE 0, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU,
                   RLIMIT_AS (skipped in sanitizer builds) */
  /* landlock: writable /proc/self/task (naming another thread writes its comm there;
   * libcuda's cuInit does). That also opens the threads' mem files, whose writes go
   * through any page protection: granted only when asked for or when dev_paths are
   * given, and withdrawn by kv_sandbox_close_proc. */
  int thread_names;
  /* seccomp for a process that runs programs (kevo-sandbox -s: the import
   * helper's Python): execve, execveat, fork, vfork and clone of processes
   * stay allowed (clone still without namespaces); what they run inherits
   * every layer. Everything else the filter denies stays denied. */
  int allow_exec;
  uint64_t mem_limit_bytes;  /* RLIMIT_AS when > 0 */
  uint64_t data_limit_bytes; /* RLIMIT_DATA when > 0 (for CUDA, whose address space
                                reservations rule out RLIMIT_AS) */
  uint64_t file_limit_bytes; /* RLIMIT_FSIZE */
  uint32_t cpu_seconds;      /* RLIMIT_CPU when > 0 (a backstop; the parent's deadline rules) */
  /* When > 0: a private tmpfs of scratch_bytes and scratch_inodes (nr_inodes) is mounted
   * on scratch_dir (nosuid, nodev, noexec) in a mount namespace of the process's own, so
   * what it writes there counts against the cap whatever the way (write, mmap, fallocate,
   * many files, deep trees), nobody else sees it, and it is freed when the process exits.
   * What the directory held is hidden from the process. Needs a mount namespace (root, or
   * an unprivileged user namespace); elsewhere only RLIMIT_FSIZE caps each file. 0 (what
   * kv_sandbox_defaults sets; the compiler's sandbox writes its outputs there): none. */
  uint64_t scratch_bytes;
  uint64_t scratch_inodes;
};

/* The worker's scratch caps (kv_sandbox_worker_defaults). */
#define KV_SCRATCH_BYTES (256ULL << 20)
#define KV_SCRATCH_INODES 4096ULL

struct kv_sandbox_status {
  enum kv_layer_state no_new_privs, netns, landlock, seccomp, rlimits;
  enum kv_layer_state scratch;            /* the size-capped private tmpfs on scratch_dir */
  enum kv_layer_state exec_lock;          /* kv_sandbox_lock_exec (never set by kv_sandbox_enter) */
  int landlock_abi;                       /* 0 when unavailable */
  uint64_t scratch_bytes, scratch_inodes; /* the tmpfs's caps, when scratch is active */
  uint64_t file_limit_bytes;              /* RLIMIT_FSIZE in force (0: none set) */
  int sealed;     /* mappings of loaded objects sealed by kv_sandbox_lock_exec (mseal) */
  char note[512]; /* why layers are unavailable or failed, "; "-separated */
};

/* Fills opts with the defaults (all layers on, limits sized for kernels; no
 * scratch tmpfs, see scratch_bytes). */
void kv_sandbox_defaults(struct kv_sandbox_opts *o, const char *scratch_dir);
/* The defaults plus the size-capped scratch: KV_SCRATCH_BYTES, KV_SCRATCH_INODES.
 * For kevo-worker, whose scratch directory is fresh and read by nobody else. */
void kv_sandbox_worker_defaults(struct kv_sandbox_opts *o, const char *scratch_dir);
/* 1 when a worker's sandbox (kv_sandbox_worker_defaults) lets it read path:
 * under the system directories, or under a directory of $LD_LIBRARY_PATH
 * (which the worker defaults add, for the loader). */
int kv_sandbox_worker_reads(const char *path);
/* Applies the layers in order: rlimits, netns, scratch (the tmpfs), no_new_privs
 * (which also drops every capability), landlock, seccomp. Call it before
 * creating threads: Landlock applies to the calling thread only. For CUDA,
 * pass the /dev/nvidia* nodes as dev_paths (cuInit then works with every layer
 * on). If the process's working directory is scratch_dir, it is moved onto the
 * tmpfs. */
void kv_sandbox_enter(const struct kv_sandbox_opts *o, struct kv_sandbox_status *st);

/* Withdraws what thread_names granted: no file under /proc may be opened for
 * writing from now on (a Landlock layer of its own: with Landlock ABI 8, on
 * every thread; before, on the calling thread and the threads it creates from
 * now). Call it once the runtime has named its threads (after cuInit), before
 * loading any candidate: a candidate's constructors run inside dlopen. Returns
 * 0, or -1 with the reason in st->note. A no-op (0) where Landlock is absent. */
int kv_sandbox_close_proc(struct kv_sandbox_status *st);

/* The lockdown, once every object the process will ever run is loaded (the
 * candidate's included) and before any of its functions is called:
 *  - kv_sandbox_close_proc;
 *  - every loaded object's segments are sealed (mseal, Linux >= 6.10): their
 *    protections can no longer change and they cannot be unmapped, remapped
 *    or mapped over, so read-only data (the GOT under full RELRO, anything the
 *    caller made read-only before) stays read-only and code stays unwritable;
 *  - a seccomp filter (on every thread) refuses with EPERM: mmap, mprotect and
 *    pkey_mprotect asking for PROT_EXEC, shmat with SHM_EXEC, remap_file_pages,
 *    and opening any file for writing (open/openat with O_WRONLY or O_RDWR,
 *    creat; openat2 gets ENOSYS): the other way through page protections is a
 *    thread's /proc/<pid>/task/<tid>/mem. Plain mprotect (PROT_READ|PROT_WRITE,
 *    as malloc's arenas need), mmap without PROT_EXEC, reading files and
 *    descriptors opened before stay allowed.
 * Afterwards the process can load no more code (dlopen fails; a CUDA driver
 * can no longer load its PTX JIT compiler, so JIT-compile any PTX module
 * before), must not dlclose what is loaded (its segments stay mapped), and
 * opens files for reading only; a table the caller wants read-only must be
 * mprotected before this call. Sets st->exec_lock and
 * st->sealed, appends to st->note; returns 0 when the seccomp filter is in
 * force (sealing is best effort: st->sealed is 0 where mseal is absent), -1
 * when it is not. Irreversible. */
int kv_sandbox_lock_exec(struct kv_sandbox_status *st);
const char *kv_layer_state_name(enum kv_layer_state s); /* "active", "unavailable", ... */

#endif
