/* Small shared utilities: capped buffers, errors, files, hashing, clocks,
 * child processes with deadlines. Never prints, never exits. */
#ifndef KEVO_UTIL_H
#define KEVO_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Writes a formatted message into err (if non-NULL) and returns -1, so that
 * callers can `return kv_error(err, errlen, "...")`. */
int kv_error(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A growable byte buffer with a hard cap: appends beyond `max` are dropped
 * and `truncated` is set. data is always NUL-terminated when non-NULL. */
struct kv_buf {
  char *data;
  size_t len, cap, max;
  int truncated;
};
void kv_buf_init(struct kv_buf *b, size_t max);
/* Returns -1 only when memory runs out; dropping at the cap is not an error. */
int kv_buf_append(struct kv_buf *b, const void *p, size_t n);
int kv_buf_appendf(struct kv_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void kv_buf_reset(struct kv_buf *b);
void kv_buf_release(struct kv_buf *b);
/* Takes ownership of the data (never NULL: "" when empty); the buffer is reset. */
char *kv_buf_detach(struct kv_buf *b);

/* Reads a whole file of at most max bytes (NUL-terminated). */
int kv_read_file(const char *path, size_t max, char **out, size_t *len, char *err, size_t errlen);
/* Writes atomically (a temporary file of its own in the same directory, then
 * rename): safe from several threads and processes at once. */
int kv_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* write(2) that never raises SIGPIPE in the process (a worker that died
 * makes it fail with EPIPE instead): SIGPIPE is blocked in the calling
 * thread around the write and one it raised is taken back. The library sets
 * no signal dispositions. */
long kv_write_nosigpipe(int fd, const void *buf, size_t n);
/* mkdir -p with the given mode for created directories. */
int kv_mkdirs(const char *path, mode_t mode, char *err, size_t errlen);
/* rm -rf of a directory tree (or a file, or a symlink: never followed), with at
 * most three descriptors open whatever its depth or width, never crossing into
 * another file system. 0 when it is all gone, else -1 with errno from the
 * first thing that stayed (ESTALE: a directory moved away during the walk,
 * which then stops rather than follow it). */
int kv_rmtree(const char *path);
/* Removes the directories kv_mkdtemp made under base whose owner, a process
 * of this host, is gone (a killed kevo leaves its workers' scratch behind);
 * others' and live owners' stay. Returns how many went. */
int kv_sweep_stale(const char *base);
int kv_path_exists(const char *path);
/* Directory holding the running executable. */
int kv_exe_dir(char *out, size_t cap);
/* A file kevo ships beside its binaries (a Python helper, a library): the
 * first of `dir` (NULL: none), this executable's directory, its
 * ../share/kevo, then the source tree's python/ (when `source_too`) that
 * holds `name`. 0 and the path in out, or -1. */
int kv_find_shipped(const char *name, const char *dir, int source_too, char *out, size_t cap);
/* The Python kevo runs its helpers with: $KEVO_PYTHON, else python3. */
const char *kv_python(void);
/* kevo's default cache directory: $XDG_CACHE_HOME/kevo, else
 * $HOME/.cache/kevo, else ${TMPDIR:-/tmp}/kevo-cache-UID, which is made 0700
 * and must then be a directory of this user that no one else can write (a
 * directory another local user made there first could feed kevo planted
 * objects): -1 otherwise. (KEVO_CACHE_DIR is the command line's: it passes it
 * down as kv_gate_opts.cache_dir and the like.) */
int kv_cache_dir(char *out, size_t cap);
/* A fresh private directory (mode 0700) under base, named for its owner:
 * base/PREFIX-HOST-PID-XXXXXX (HOST: 8 hex digits of this host's name, PID:
 * the calling process), so that kv_sweep_stale can tell a dead owner's. */
int kv_mkdtemp(const char *base, const char *prefix, char *out, size_t cap, char *err,
               size_t errlen);

/* SHA-256 (OpenSSL libcrypto) as 64 lowercase hex digits + NUL. */
struct kv_sha256;
struct kv_sha256 *kv_sha256_new(void);
void kv_sha256_update(struct kv_sha256 *h, const void *p, size_t n);
void kv_sha256_final(struct kv_sha256 *h, char hex[65]); /* frees h */
void kv_sha256_hex(const void *p, size_t n, char hex[65]);

/* Monotonic clock (CLOCK_MONOTONIC, comparable across processes). */
uint64_t kv_now_ns(void);
double kv_now_s(void);
/* Wall clock seconds since the epoch. */
int64_t kv_unix_time(void);
/* 64 random bits from the kernel. */
uint64_t kv_random_u64(void);
/* splitmix64: the next number of the stream *state (advanced), and the same
 * as a double in [0, 1). Fast, reproducible from a seed; not for secrets.
 * Inline: the worker's runtime and the torch worker's library use it too. */
static inline uint64_t kv_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static inline double kv_unit01(uint64_t *state) {
  return (double)(kv_splitmix64(state) >> 11) / 9007199254740992.0;
}

/* Runs argv[0] (a path or a name searched in PATH) with envp (NULL: inherit),
 * in cwd (NULL: inherit), in its own process group, stdin from /dev/null,
 * stdout and stderr merged into `out` (capped by its max). At the deadline the
 * whole process group is killed with SIGKILL. `setup`, when non-NULL, runs in
 * the child just before exec (for sandboxing); it must only call
 * async-signal-safe functions and return 0 to proceed. Returns 0 when the
 * command ran (whatever its status), -1 when it could not be started. */
struct kv_proc_result {
  int exited;   /* 1 if it exited normally: see status */
  int status;   /* exit status */
  int signaled; /* 1 if killed by a signal: see sig */
  int sig;
  int timed_out; /* 1 if killed at the deadline */
  double wall_s;
};
int kv_run(char *const argv[], char *const envp[], const char *cwd, double deadline_s,
           int (*setup)(void *), void *setup_arg, struct kv_buf *out, struct kv_proc_result *res,
           char *err, size_t errlen);
/* "exited with status 3", "killed by SIGSEGV (signal 11)", "timed out after 10.0 s" */
void kv_proc_describe(const struct kv_proc_result *r, char *out, size_t cap);

/* Finds an executable by name in PATH; 0 and the full path when found. */
int kv_which(const char *name, char *out, size_t cap);

#endif
