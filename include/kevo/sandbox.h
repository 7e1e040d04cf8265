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

struct kv_sandbox_opts {
  const char *scratch_dir;                       /* the one writable directory */
  const char *read_paths[KV_SANDBOX_MAX_PATHS];  /* extra readable (files or dirs) */
  int nread_paths;
  const char *dev_paths[KV_SANDBOX_MAX_PATHS];   /* device nodes readable+writable (e.g. /dev/nvidia*) */
  int ndev_paths;
  int netns;      /* unshare a new, empty network namespace */
  int landlock;   /* filesystem: write only under scratch_dir, read only the system
                     library directories, /etc/ld.so.*, /proc/self (write: its task/, for
                     thread names), /sys/devices/system/cpu, /sys/fs/cgroup,
                     /dev/null|zero|urandom and read_paths; no TCP bind/connect (ABI >= 4);
                     no signals or abstract sockets outside the sandbox (ABI >= 6) */
  int seccomp;    /* deny: execve, execveat, fork, vfork, clone without CLONE_THREAD,
                     clone3 (ENOSYS so libc falls back to clone), ptrace,
                     process_vm_readv/writev, socket (but AF_UNIX stream/seqpacket,
                     which cuInit needs), socketpair, connect, bind/listen/accept
                     (allowed in a private netns: cuInit serves an abstract socket),
                     kill/tgkill of other processes, pidfd_*, setsid/setpgid, mount,
                     chroot, bpf, perf_event_open, keyctl, chmod/chown/xattr, setuid...,
                     setrlimit, real-time scheduling; unknown newer syscalls: ENOSYS */
  int rlimits;    /* RLIMIT_CORE 0, RLIMIT_NPROC, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CPU,
                     RLIMIT_AS (skipped in sanitizer builds) */
  uint64_t mem_limit_bytes;  /* RLIMIT_AS when > 0 */
  uint64_t data_limit_bytes; /* RLIMIT_DATA when > 0 (for CUDA, whose address space
                                reservations rule out RLIMIT_AS) */
  uint64_t file_limit_bytes; /* RLIMIT_FSIZE */
  uint32_t cpu_seconds;      /* RLIMIT_CPU when > 0 (a backstop; the parent's deadline rules) */
};

struct kv_sandbox_status {
  enum kv_layer_state no_new_privs, netns, landlock, seccomp, rlimits;
  int landlock_abi; /* 0 when unavailable */
  char note[512];   /* why layers are unavailable or failed, "; "-separated */
};

/* Fills opts with the defaults (all layers on, limits sized for kernels). */
void kv_sandbox_defaults(struct kv_sandbox_opts *o, const char *scratch_dir);
/* Applies the layers in order: rlimits, netns, no_new_privs (which also drops
 * every capability), landlock, seccomp. Call it before creating threads:
 * Landlock applies to the calling thread only. For CUDA, pass the
 * /dev/nvidia* nodes as dev_paths (cuInit then works with every layer on). */
void kv_sandbox_enter(const struct kv_sandbox_opts *o, struct kv_sandbox_status *st);
const char *kv_layer_state_name(enum kv_layer_state s); /* "active", "unavailable", ... */

#endif
