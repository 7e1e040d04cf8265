/* The worker's sandbox: rlimits, an empty network namespace, no_new_privs,
 * Landlock and a seccomp filter, each applied best effort and reported.
 *
 * The seccomp filter is a deny list (default allow) so that candidates can
 * use whatever the C runtime, OpenMP and the CUDA driver need; what it denies
 * fails with EPERM, so a candidate that tries sees a visible failure rather
 * than a kill. clone3 fails with ENOSYS so that libc falls back to clone,
 * whose flags the filter can inspect. A second, raw filter answers ENOSYS to
 * syscall numbers newer than this file knows: what later kernels add stays
 * refused until someone decides whether the deny list must cover it.
 *
 * The scratch directory can be a private, size-capped tmpfs (in a mount
 * namespace of the worker's own), and kv_sandbox_lock_exec adds, once the
 * candidate is loaded, a lockdown: no more writes under /proc, the loaded
 * objects sealed, and no new executable memory. */
#include "kevo/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <limits.h>
#include <linux/seccomp.h>
#include <link.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock constants newer than the installed uapi header may know. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_TSYNC
#define LANDLOCK_RESTRICT_SELF_TSYNC (1U << 3) /* ABI 8: every thread */
#endif
#if defined(__x86_64__) && !defined(__NR_mseal)
#define __NR_mseal 462
#endif

/* The ruleset attribute as of ABI 6; older kernels get a prefix of it. */
struct kv_ll_ruleset {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

#define LL_FS_ABI1                                                                                 \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |     \
   LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |  \
   LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |      \
   LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |   \
   LANDLOCK_ACCESS_FS_MAKE_SYM)
/* Rights that apply to a file (the rest apply to directories only). */
#define LL_FILE_RIGHTS                                                                             \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |     \
   LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define LL_READ                                                                                    \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_WRITE (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)
#define LL_CREATE                                                                                  \
  (LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_SYM |       \
   LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | \
   LANDLOCK_ACCESS_FS_REFER)

/* ---- status notes ---- */

static void note(struct kv_sandbox_status *st, const char *fmt, ...) {
  size_t len = strlen(st->note);
  if (len + 3 >= sizeof st->note)
    return;
  if (len > 0) {
    memcpy(st->note + len, "; ", 3);
    len += 2;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->note + len, sizeof st->note - len, fmt, ap);
  va_end(ap);
}

const char *kv_layer_state_name(enum kv_layer_state s) {
  switch (s) {
  case KV_LAYER_OFF:
    return "off";
  case KV_LAYER_ACTIVE:
    return "active";
  case KV_LAYER_UNAVAILABLE:
    return "unavailable";
  case KV_LAYER_FAILED:
    return "failed";
  }
  return "unknown";
}

void kv_sandbox_defaults(struct kv_sandbox_opts *o, const char *scratch_dir) {
  memset(o, 0, sizeof *o);
  o->scratch_dir = scratch_dir;
  o->netns = 1;
  o->landlock = 1;
  o->seccomp = 1;
  o->rlimits = 1;
  o->mem_limit_bytes = 16ULL << 30;
  o->file_limit_bytes = 64ULL << 20;
  o->cpu_seconds = 600;
}

/* The directories of $LD_LIBRARY_PATH (absolute, existing, not "/"), at most
 * KV_SANDBOX_LD_DIRS, resolved: kevo passes the variable to cuda workers, and
 * the loader reads the libraries it names (a vendor library a task allows
 * may live there: lib/gate/vendor.h). */
#define KV_SANDBOX_LD_DIRS 8
static char ld_dirs[KV_SANDBOX_LD_DIRS][PATH_MAX];

static int ld_path_dirs(char dirs[KV_SANDBOX_LD_DIRS][PATH_MAX]) {
  const char *l = getenv("LD_LIBRARY_PATH");
  char buf[8192];
  int n = 0;
  if (!l || strlen(l) >= sizeof buf)
    return 0;
  snprintf(buf, sizeof buf, "%s", l);
  char *save = NULL;
  for (char *d = strtok_r(buf, ":", &save); d && n < KV_SANDBOX_LD_DIRS;
       d = strtok_r(NULL, ":", &save)) {
    struct stat sb;
    if (d[0] == '/' && realpath(d, dirs[n]) && strcmp(dirs[n], "/") != 0 &&
        stat(dirs[n], &sb) == 0 && S_ISDIR(sb.st_mode))
      n++;
  }
  return n;
}

void kv_sandbox_worker_defaults(struct kv_sandbox_opts *o, const char *scratch_dir) {
  kv_sandbox_defaults(o, scratch_dir);
  o->scratch_bytes = KV_SCRATCH_BYTES;
  o->scratch_inodes = KV_SCRATCH_INODES;
  for (int i = 0, n = ld_path_dirs(ld_dirs); i < n; i++)
    o->read_paths[o->nread_paths++] = ld_dirs[i];
}

/* ---- rlimits ---- */

/* Threads of processes owned by our uid: RLIMIT_NPROC counts them all, so the
 * limit is set that far above what already runs, not to a fixed number. */
static long count_user_threads(void) {
  DIR *d = opendir("/proc");
  if (!d)
    return -1;
  uid_t uid = getuid();
  long total = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9')
      continue;
    char path[300];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/%s", e->d_name);
    if (stat(path, &sb) != 0 || sb.st_uid != uid)
      continue;
    snprintf(path, sizeof path, "/proc/%s/task", e->d_name);
    if (stat(path, &sb) != 0)
      continue;
    total += sb.st_nlink > 2 ? (long)sb.st_nlink - 2 : 1;
  }
  closedir(d);
  return total;
}

static int set_limit(int res, rlim_t want, const char *name, struct kv_sandbox_status *st) {
  struct rlimit cur;
  if (getrlimit(res, &cur) != 0) {
    note(st, "rlimit %s: get: %s", name, strerror(errno));
    return -1;
  }
  /* Never raise: an inherited limit that is already lower stays. */
  rlim_t hard = want;
  if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
    hard = cur.rlim_max;
  rlim_t soft = cur.rlim_cur != RLIM_INFINITY && cur.rlim_cur < hard ? cur.rlim_cur : hard;
  struct rlimit nl = {soft, hard};
  if (setrlimit(res, &nl) != 0) {
    note(st, "rlimit %s: %s", name, strerror(errno));
    return -1;
  }
  return 0;
}

#define KV_NPROC_HEADROOM 2048
#define KV_NOFILE_LIMIT 4096

static enum kv_layer_state apply_rlimits(const struct kv_sandbox_opts *o,
                                         struct kv_sandbox_status *st) {
  int bad = 0;
  bad |= set_limit(RLIMIT_CORE, 0, "core", st);
  long threads = count_user_threads();
  if (threads < 0)
    threads = 0;
  bad |= set_limit(RLIMIT_NPROC, (rlim_t)threads + KV_NPROC_HEADROOM, "nproc", st);
  bad |= set_limit(RLIMIT_NOFILE, KV_NOFILE_LIMIT, "nofile", st);
  if (o->file_limit_bytes > 0)
    bad |= set_limit(RLIMIT_FSIZE, (rlim_t)o->file_limit_bytes, "fsize", st);
  struct rlimit fs;
  if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY)
    st->file_limit_bytes = (uint64_t)fs.rlim_cur;
  if (o->cpu_seconds > 0) {
    /* The soft limit raises SIGXCPU, the hard one (a little later) SIGKILL. */
    struct rlimit cur;
    if (getrlimit(RLIMIT_CPU, &cur) == 0) {
      rlim_t soft = o->cpu_seconds, hard = (rlim_t)o->cpu_seconds + 5;
      if (cur.rlim_max != RLIM_INFINITY && hard > cur.rlim_max)
        hard = cur.rlim_max;
      if (cur.rlim_cur != RLIM_INFINITY && soft > cur.rlim_cur)
        soft = cur.rlim_cur;
      if (soft > hard)
        soft = hard;
      struct rlimit nl = {soft, hard};
      if (setrlimit(RLIMIT_CPU, &nl) != 0) {
        note(st, "rlimit cpu: %s", strerror(errno));
        bad = -1;
      }
    } else {
      note(st, "rlimit cpu: get: %s", strerror(errno));
      bad = -1;
    }
  }
#if defined(KEVO_SANITIZED) && KEVO_SANITIZED
  if (o->mem_limit_bytes > 0)
    note(st, "rlimit as: skipped in sanitizer build");
#else
  if (o->mem_limit_bytes > 0)
    bad |= set_limit(RLIMIT_AS, (rlim_t)o->mem_limit_bytes, "as", st);
#endif
#if !(defined(KEVO_SANITIZED) && KEVO_SANITIZED)
  if (o->data_limit_bytes > 0)
    bad |= set_limit(RLIMIT_DATA, (rlim_t)o->data_limit_bytes, "data", st);
#endif
  return bad ? KV_LAYER_FAILED : KV_LAYER_ACTIVE;
}

/* ---- network namespace ---- */

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t n = strlen(text);
  ssize_t w = write(fd, text, n);
  int saved = errno;
  close(fd);
  errno = saved;
  return w == (ssize_t)n ? 0 : -1;
}

/* Unshares a user namespace (mapping our own ids onto themselves) together
 * with `flags`: it grants the rights to make the other namespaces inside it.
 * 0, or -1 with errno. Incomplete id maps are noted, not fatal. */
static int enter_userns(int flags, const char *who, struct kv_sandbox_status *st) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER | flags) != 0)
    return -1;
  char map[64];
  int bad = 0;
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  bad |= write_file("/proc/self/uid_map", map);
  if (write_file("/proc/self/setgroups", "deny\n") != 0 && errno != ENOENT)
    bad = -1;
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  bad |= write_file("/proc/self/gid_map", map);
  if (bad)
    note(st, "%s: via user namespace, id maps incomplete: %s", who, strerror(errno));
  else
    note(st, "%s: via user namespace", who);
  return 0;
}

/* A new network namespace and a new IPC namespace: System V shared memory,
 * message queues and semaphores (allowed by the filter: libraries use them)
 * made here are invisible to every other evaluation and die with the
 * process, so nothing one candidate leaves can be read by the next. */
static enum kv_layer_state apply_netns(struct kv_sandbox_status *st) {
  if (unshare(CLONE_NEWNET | CLONE_NEWIPC) == 0)
    return KV_LAYER_ACTIVE;
  int err = errno;
  if (err != EPERM && err != EINVAL && err != ENOSPC && err != EUSERS) {
    note(st, "netns: unshare: %s", strerror(err));
    return KV_LAYER_FAILED;
  }
  /* Unprivileged: a user namespace grants the right to make a network
   * namespace inside it. */
  if (enter_userns(CLONE_NEWNET | CLONE_NEWIPC, "netns", st) != 0) {
    note(st, "netns: unshare: %s", strerror(err));
    return KV_LAYER_UNAVAILABLE;
  }
  return KV_LAYER_ACTIVE;
}

/* ---- scratch: a private, size-capped tmpfs ---- */

/* The scratch directory, for kv_sandbox_close_proc's rules. */
static char sbx_scratch[PATH_MAX];

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* A tmpfs of its own on the scratch directory, in a mount namespace of its
 * own: everything written there (by write, mmap, fallocate, in as many files
 * and directories as it likes) counts against size= and nr_inodes=, nobody
 * outside sees it, and it is freed with the namespace when the process exits.
 * Without a mount namespace only RLIMIT_FSIZE caps each file. */
static enum kv_layer_state apply_scratch(const struct kv_sandbox_opts *o,
                                         struct kv_sandbox_status *st) {
  const char *fallback =
      st->file_limit_bytes ? "only each file is capped (RLIMIT_FSIZE)" : "scratch is uncapped";
  if (!o->scratch_dir) {
    note(st, "scratch: no scratch directory to cap");
    return KV_LAYER_FAILED;
  }
  struct stat cwd, dir;
  if (stat(o->scratch_dir, &dir) != 0) {
    note(st, "scratch: %s: %s", o->scratch_dir, strerror(errno));
    return KV_LAYER_FAILED;
  }
  if (!S_ISDIR(dir.st_mode)) {
    note(st, "scratch: %s: not a directory", o->scratch_dir);
    return KV_LAYER_FAILED;
  }
  int inside = stat(".", &cwd) == 0 && same_file(&cwd, &dir);
  if (unshare(CLONE_NEWNS) != 0) {
    int err = errno;
    if (err != EPERM || enter_userns(CLONE_NEWNS, "scratch", st) != 0) {
      note(st, "scratch: no mount namespace (%s): %s", strerror(err == EPERM ? errno : err),
           fallback);
      return KV_LAYER_UNAVAILABLE;
    }
  }
  /* Nothing mounted here may propagate back to the host's namespace. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
    note(st, "scratch: private mounts: %s: %s", strerror(errno), fallback);
    return KV_LAYER_FAILED;
  }
  char data[128];
  snprintf(data, sizeof data, "size=%llu,nr_inodes=%llu,mode=0700",
           (unsigned long long)o->scratch_bytes,
           (unsigned long long)(o->scratch_inodes ? o->scratch_inodes : KV_SCRATCH_INODES));
  if (mount("kevo-scratch", o->scratch_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, data) != 0) {
    int err = errno;
    note(st, "scratch: mount tmpfs: %s: %s", strerror(err), fallback);
    return err == EPERM ? KV_LAYER_UNAVAILABLE : KV_LAYER_FAILED;
  }
  if (inside && chdir(o->scratch_dir) != 0)
    note(st, "scratch: chdir onto the tmpfs: %s", strerror(errno));
  /* What the kernel enforces (size is rounded to pages). */
  struct statvfs vfs;
  if (statvfs(o->scratch_dir, &vfs) != 0) {
    note(st, "scratch: statvfs: %s", strerror(errno));
    return KV_LAYER_FAILED;
  }
  st->scratch_bytes = (uint64_t)vfs.f_blocks * vfs.f_frsize;
  st->scratch_inodes = (uint64_t)vfs.f_files;
  return KV_LAYER_ACTIVE;
}

/* ---- no_new_privs and capabilities ---- */

/* No privilege gain from here on, and none kept: a worker that runs as root
 * (or holds every capability in the user namespace it made for netns) drops
 * all its capabilities, so it cannot raise limits, take real-time priority,
 * shield itself from the OOM killer or override file permissions. uid 0
 * still owns root's files: Landlock and seccomp cover those. */
static enum kv_layer_state apply_no_new_privs(struct kv_sandbox_status *st) {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    int err = errno;
    note(st, "no_new_privs: %s", strerror(err));
    return err == EINVAL ? KV_LAYER_UNAVAILABLE : KV_LAYER_FAILED;
  }
  /* The bounding set only matters for execve, which seccomp denies; dropping
   * it needs CAP_SETPCAP, so EPERM is expected from unprivileged workers. */
  for (int cap = 0; cap <= 63; cap++)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
      break;
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &hdr, data) != 0) {
    note(st, "no_new_privs: dropping capabilities: %s", strerror(errno));
    return KV_LAYER_FAILED;
  }
  return KV_LAYER_ACTIVE;
}

/* ---- landlock ---- */

static long ll_create_ruleset(const void *attr, size_t size, uint32_t flags) {
  return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int fd, const struct landlock_path_beneath_attr *a) {
  return syscall(__NR_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, a, 0);
}

static long ll_restrict_self(int fd) {
  return syscall(__NR_landlock_restrict_self, fd, 0);
}

/* Allows `access` beneath `path`. A missing path is skipped, noted only when
 * `must_exist` (the caller named it); a rule that cannot be added only makes
 * the sandbox stricter, so it is noted and not fatal. */
static void ll_allow(int rfd, uint64_t handled, const char *path, uint64_t access, int must_exist,
                     struct kv_sandbox_status *st) {
  int fd = open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) {
    if (must_exist)
      note(st, "landlock: %s: %s", path, strerror(errno));
    return;
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    note(st, "landlock: %s: %s", path, strerror(errno));
    close(fd);
    return;
  }
  if (!S_ISDIR(sb.st_mode))
    access &= LL_FILE_RIGHTS;
  struct landlock_path_beneath_attr a = {.allowed_access = access & handled, .parent_fd = fd};
  if (a.allowed_access != 0 && ll_add_rule(rfd, &a) != 0)
    note(st, "landlock: rule %s: %s", path, strerror(errno));
  close(fd);
}

/* A directory kevo marks unlisted (KV_UNLISTED_MARK in it, not a link: the
 * object cache, whose entries are named by the hash of their source) is
 * read by name only: a worker opens the object it was told to load, but
 * cannot list the directory to find other candidates' objects and logs. */
#define LL_READ_UNLISTED (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE)

static int unlisted(const char *dir) {
  int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  struct stat sb;
  int r = fstatat(fd, KV_UNLISTED_MARK, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode);
  close(fd);
  return r;
}

static const char *const ll_system_read[] = {
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/opt",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/sys/devices/system/cpu",
    "/sys/devices/system/node",
    "/sys/fs/cgroup",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/dev/zero",
    "/dev/urandom",
    "/dev/random",
};

static int under(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0);
}

int kv_sandbox_worker_reads(const char *path) {
  char real[PATH_MAX];
  if (!path || !realpath(path, real))
    return 0;
  for (size_t i = 0; i < sizeof ll_system_read / sizeof ll_system_read[0]; i++)
    if (under(real, ll_system_read[i]))
      return 1;
  char(*dirs)[PATH_MAX] = malloc(KV_SANDBOX_LD_DIRS * sizeof *dirs);
  int found = 0;
  for (int i = 0, n = dirs ? ld_path_dirs(dirs) : 0; i < n && !found; i++)
    found = under(real, dirs[i]);
  free(dirs);
  return found;
}

static enum kv_layer_state apply_landlock(const struct kv_sandbox_opts *o,
                                          struct kv_sandbox_status *st) {
  long abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    if (errno == ENOSYS || errno == EOPNOTSUPP) {
      note(st, "landlock: not supported by this kernel");
      return KV_LAYER_UNAVAILABLE;
    }
    note(st, "landlock: version: %s", strerror(errno));
    return KV_LAYER_FAILED;
  }
  st->landlock_abi = (int)abi;

  struct kv_ll_ruleset attr = {0};
  size_t attr_size = sizeof attr.handled_access_fs;
  attr.handled_access_fs = LL_FS_ABI1;
  if (abi >= 2)
    attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3)
    attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5)
    attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  if (abi >= 4) {
    /* Handled with no rule: no TCP bind or connect at all. */
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attr_size = offsetof(struct kv_ll_ruleset, scoped);
  }
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
    attr_size = sizeof attr;
  }
  uint64_t h = attr.handled_access_fs;

  int rfd = (int)ll_create_ruleset(&attr, attr_size, 0);
  if (rfd < 0) {
    note(st, "landlock: create ruleset: %s", strerror(errno));
    return KV_LAYER_FAILED;
  }

  for (size_t i = 0; i < sizeof ll_system_read / sizeof ll_system_read[0]; i++)
    ll_allow(rfd, h, ll_system_read[i], LL_READ, 0, st);
  ll_allow(rfd, h, "/dev/null", LL_READ | LL_WRITE, 0, st);

  /* /proc/self, resolved now: /proc/<pid> and what lies under it (task/,
   * maps, status, cgroup), and no other process's directory. */
  char self[64];
  snprintf(self, sizeof self, "/proc/%ld", (long)getpid());
  ll_allow(rfd, h, self, LL_READ, 1, st);
  /* Threads' names: pthread_setname_np on another thread writes
   * /proc/self/task/<tid>/comm, and libcuda's cuInit fails without it. That
   * also opens task/<tid>/mem for writing, whose writes go through any page
   * protection (code, the GOT, sealed mappings): granted only when asked for
   * or for the GPU's runtime, until kv_sandbox_close_proc. */
  if (o->thread_names || o->ndev_paths > 0) {
    char task[80];
    snprintf(task, sizeof task, "%s/task", self);
    ll_allow(rfd, h, task, LL_READ | LL_WRITE, 1, st); /* fopen "w" truncates */
    note(st, "landlock: /proc/self/task writable (thread names) until kv_sandbox_close_proc");
  }

  for (int i = 0; i < o->nread_paths && i < KV_SANDBOX_MAX_PATHS; i++)
    if (o->read_paths[i])
      ll_allow(rfd, h, o->read_paths[i], unlisted(o->read_paths[i]) ? LL_READ_UNLISTED : LL_READ, 1,
               st);
  for (int i = 0; i < o->ndev_paths && i < KV_SANDBOX_MAX_PATHS; i++)
    if (o->dev_paths[i])
      ll_allow(rfd, h, o->dev_paths[i], LL_READ | LL_WRITE | LANDLOCK_ACCESS_FS_IOCTL_DEV, 1, st);
  if (o->scratch_dir)
    ll_allow(rfd, h, o->scratch_dir, LL_READ | LL_WRITE | LL_CREATE, 1, st);

  long rc = ll_restrict_self(rfd);
  int err = errno;
  close(rfd);
  if (rc != 0) {
    note(st, "landlock: restrict_self: %s", strerror(err));
    return KV_LAYER_FAILED;
  }
  struct stat sb;
  if (stat("/proc/self/task", &sb) == 0 && sb.st_nlink > 3)
    note(st, "landlock: applied to the calling thread only; %ld threads exist",
         (long)sb.st_nlink - 2);
  return KV_LAYER_ACTIVE;
}

/* ---- seccomp ---- */

/* Denied outright with EPERM. Names unknown to this libseccomp (or absent on
 * this architecture) are skipped; see raw_denied[] for the newest ones. */
static const char *const sc_denied[] = {
    /* process creation and program execution */
    "execve", "execveat", "fork", "vfork",
    /* other processes' memory, descriptors and identity */
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "process_madvise",
    "process_mrelease", "pidfd_open", "pidfd_send_signal", "pidfd_getfd",
    /* network (socket, bind, listen, accept: see below) */
    "socketpair", "connect",
    /* sessions, namespaces, mounts */
    "setsid", "setpgid", "mount", "umount2", "pivot_root", "chroot", "unshare", "setns",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    /* kernel attack surface and administration */
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "personality", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "create_module",
    "get_kernel_syms", "query_module", "iopl", "ioperm", "modify_ldt", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "name_to_handle_at",
    "open_by_handle_at", "fanotify_init", "reboot", "swapon", "swapoff", "sethostname",
    "setdomainname", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "acct", "syslog",
    "vhangup", "quotactl", "quotactl_fd", "lookup_dcookie", "nfsservctl", "uselib", "_sysctl",
    "sysfs", "ustat", "lsm_set_self_attr",
    /* file metadata Landlock does not cover (a root worker could chmod anything) */
    "mknod", "mknodat", "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown",
    "fchownat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "setxattrat", "removexattrat", "utime", "utimes", "futimesat", "utimensat",
    /* System V IPC: objects that would outlive the evaluation (the private
     * IPC namespace given with the network's is the second layer) */
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
    "semtimedop", "semctl",
    /* credentials and limits */
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
    "setgroups", "capset", "setrlimit", "sched_setattr"};

/* x86-64 numbers of syscalls an older libseccomp may not know by name,
 * denied by the raw filter with EPERM; it answers any number at or above
 * KV_SC_FIRST_UNKNOWN (past Linux 6.18) with ENOSYS. */
#if defined(__x86_64__)
#define KV_SC_FIRST_UNKNOWN 470
static const unsigned raw_denied[] = {
    452, /* fchmodat2 */
    460, /* lsm_set_self_attr */
    463, /* setxattrat */
    466, /* removexattrat */
    467, /* open_tree_attr */
    469, /* file_setattr */
};
#endif

static int sc_rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
                   const struct scmp_arg_cmp *cmp, struct kv_sandbox_status *st) {
  int nr = seccomp_syscall_resolve_name(name);
  if (nr < 0)
    return 0; /* unknown here: nothing to deny */
  int rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
  if (rc != 0) {
    note(st, "seccomp: rule %s: %s", name, strerror(-rc));
    return -1;
  }
  return 0;
}

#define RULE0(name) sc_rule(ctx, eperm, name, 0, NULL, st)
/* One comparison: for SCMP_CMP_MASKED_EQ, a is the mask and b the value. */
#define RULE1(name, arg, op, a, b)                                                                 \
  do {                                                                                             \
    struct scmp_arg_cmp c_[1] = {{(arg), (op), (scmp_datum_t)(a), (scmp_datum_t)(b)}};             \
    bad |= sc_rule(ctx, eperm, name, 1, c_, st);                                                   \
  } while (0)

#if defined(__x86_64__)
static int install_raw_filter(struct kv_sandbox_status *st) {
  struct sock_filter prog[64];
  unsigned n = 0, nd = sizeof raw_denied / sizeof raw_denied[0];
  /* The arch check leaves foreign-arch calls to the libseccomp filter, which
   * kills them; x32 numbers (bit 30) are likewise left to it. */
  prog[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  prog[n++] =
      (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  for (unsigned i = 0; i < nd; i++) {
    prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, raw_denied[i], 0, 1);
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  }
  prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, KV_SC_FIRST_UNKNOWN, 0, 1);
  prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
  prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
  if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0) {
    note(st, "seccomp: raw filter: %s", strerror(errno));
    return -1;
  }
  return 0;
}
#endif

static int exec_call(const char *name) {
  return !strcmp(name, "execve") || !strcmp(name, "execveat") || !strcmp(name, "fork") ||
         !strcmp(name, "vfork");
}

static enum kv_layer_state apply_seccomp(struct kv_sandbox_status *st, int private_net,
                                         int allow_exec) {
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
    note(st, "seccomp: not supported by this kernel");
    return KV_LAYER_UNAVAILABLE;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    note(st, "seccomp: init failed");
    return KV_LAYER_FAILED;
  }
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  int bad = 0;
  int rc;
  if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) != 0 ||
      (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) != 0) {
    note(st, "seccomp: attributes: %s", strerror(-rc));
    bad = -1;
  }

  for (size_t i = 0; i < sizeof sc_denied / sizeof sc_denied[0]; i++)
    if (!allow_exec || !exec_call(sc_denied[i]))
      bad |= RULE0(sc_denied[i]);

  /* Sockets: only AF_UNIX stream and seqpacket ones, which libcuda's cuInit
   * insists on creating; with connect, bind, listen and accept denied they
   * cannot reach anything (they send nothing unconnected). Datagram sockets
   * could send to a named socket unconnected, so they stay denied. */
  RULE1("socket", 0, SCMP_CMP_NE, AF_UNIX, 0);
  RULE1("socket", 1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM);
  RULE1("socket", 1, SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW); /* AF_UNIX makes it a datagram one */
  /* bind, listen, accept: cuInit also serves its UVM descriptor on an
   * abstract AF_UNIX name. Abstract names belong to the network namespace,
   * so in a private one nobody else can see or reach them; pathname binds
   * need Landlock's MAKE_SOCK, granted nowhere. Without a private namespace
   * an abstract bind could squat a name host processes connect to: denied. */
  if (!private_net) {
    note(st, "seccomp: bind denied without a private netns (CUDA's cuInit needs it)");
    bad |= RULE0("bind");
    bad |= RULE0("listen");
    bad |= RULE0("accept");
    bad |= RULE0("accept4");
  }

  /* clone: threads only (processes too with allow_exec), and no namespaces. */
  if (!allow_exec)
    RULE1("clone", 0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
  else
    note(st, "seccomp: execve and fork allowed (the process runs programs)");
  static const unsigned long ns_flags[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                           CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                           CLONE_NEWNET};
  for (size_t i = 0; i < sizeof ns_flags / sizeof ns_flags[0]; i++)
    RULE1("clone", 0, SCMP_CMP_MASKED_EQ, ns_flags[i], ns_flags[i]);
  bad |= sc_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, st);

  /* Signals: only to this process. pid 0 (our process group), -1 (everyone)
   * and negative (a group) all differ from our pid. */
  const scmp_datum_t self = (scmp_datum_t)getpid();
  RULE1("kill", 0, SCMP_CMP_NE, self, 0);
  RULE1("tkill", 0, SCMP_CMP_NE, self, 0);
  RULE1("tgkill", 0, SCMP_CMP_NE, self, 0);
  RULE1("rt_sigqueueinfo", 0, SCMP_CMP_NE, self, 0);
  RULE1("rt_tgsigqueueinfo", 0, SCMP_CMP_NE, self, 0);

  /* Limits: read our own only (libc passes pid 0), never set. */
  RULE1("prlimit64", 0, SCMP_CMP_NE, 0, 0);
  RULE1("prlimit64", 2, SCMP_CMP_NE, 0, 0);

  /* No real-time scheduling (it could starve the parent that times us). */
  static const scmp_datum_t rt_policies[] = {SCHED_FIFO, SCHED_RR, 6 /* SCHED_DEADLINE */};
  for (size_t i = 0; i < sizeof rt_policies / sizeof rt_policies[0]; i++)
    RULE1("sched_setscheduler", 1, SCMP_CMP_MASKED_EQ,
          0xffffffffu & ~(scmp_datum_t)SCHED_RESET_ON_FORK, rt_policies[i]);

  /* Other processes' scheduling: the CPUs a process may run on, its nice
   * value, policy and I/O priority outlive this process's SIGSTOP, so set on
   * the reference's worker or kevo itself (all one user) they would slow the
   * reference while the candidate's process is stopped, or in another
   * evaluation. Only the calling thread's own (pid 0) may change; pthread's
   * *_np calls, which name a thread by id, fail with EPERM. */
  RULE1("sched_setaffinity", 0, SCMP_CMP_NE, 0, 0);
  RULE1("sched_setscheduler", 0, SCMP_CMP_NE, 0, 0);
  RULE1("sched_setparam", 0, SCMP_CMP_NE, 0, 0);
  RULE1("setpriority", 0, SCMP_CMP_NE, PRIO_PROCESS, 0);
  RULE1("setpriority", 1, SCMP_CMP_NE, 0, 0);
  RULE1("ioprio_set", 0, SCMP_CMP_NE, 1 /* IOPRIO_WHO_PROCESS */, 0);
  RULE1("ioprio_set", 1, SCMP_CMP_NE, 0, 0);

  /* Memory placement of other processes. */
  RULE1("migrate_pages", 0, SCMP_CMP_NE, 0, 0);
  RULE1("move_pages", 0, SCMP_CMP_NE, 0, 0);

  /* Terminal injection through an inherited tty. */
  RULE1("ioctl", 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
  RULE1("ioctl", 1, SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);

  if (bad) {
    seccomp_release(ctx);
    return KV_LAYER_FAILED;
  }
#if defined(__x86_64__)
  if (install_raw_filter(st) != 0) {
    seccomp_release(ctx);
    return KV_LAYER_FAILED;
  }
#endif
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    note(st, "seccomp: load: %s", strerror(-rc));
    return KV_LAYER_FAILED;
  }
  return KV_LAYER_ACTIVE;
}

/* ---- the lockdown, once the candidate is loaded ---- */

/* Set once kv_sandbox_close_proc's layer is in force (one is enough). */
static int proc_closed;

int kv_sandbox_close_proc(struct kv_sandbox_status *st) {
  if (proc_closed)
    return 0;
  int saved_errno = errno;
  long abi = ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 0) {
    errno = saved_errno;
    return 0; /* no Landlock: it granted nothing either */
  }
  /* A layer of its own that handles writing files, allowed under /dev (the
   * earlier layer keeps that to /dev/null and the device nodes) and in the
   * scratch directory: nothing under /proc any more. */
  struct kv_ll_ruleset attr = {0};
  attr.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE;
  if (abi >= 3)
    attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
  uint64_t h = attr.handled_access_fs;
  int rfd = (int)ll_create_ruleset(&attr, sizeof attr.handled_access_fs, 0);
  if (rfd < 0) {
    note(st, "close_proc: create ruleset: %s", strerror(errno));
    errno = saved_errno;
    return -1;
  }
  ll_allow(rfd, h, "/dev", LL_WRITE, 0, st);
  if (sbx_scratch[0])
    ll_allow(rfd, h, sbx_scratch, LL_WRITE, 1, st);
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  long rc = -1;
  int every_thread = 0;
  if (abi >= 8) {
    rc = syscall(__NR_landlock_restrict_self, rfd, LANDLOCK_RESTRICT_SELF_TSYNC);
    every_thread = rc == 0;
  }
  if (rc != 0)
    rc = ll_restrict_self(rfd);
  int err = errno;
  close(rfd);
  if (rc != 0) {
    note(st, "close_proc: restrict_self: %s", strerror(err));
    errno = saved_errno;
    return -1;
  }
  proc_closed = 1;
  struct stat sb;
  if (!every_thread && stat("/proc/self/task", &sb) == 0 && sb.st_nlink > 3)
    note(st, "close_proc: applied to the calling thread (and its new threads) only; %ld exist",
         (long)sb.st_nlink - 2);
  errno = saved_errno;
  return 0;
}

struct seal_ctx {
  uintptr_t page;
  int sealed, failed, err;
};

/* Seals every PT_LOAD segment of one loaded object (code, read-only data,
 * RELRO, data and bss): no protection change, unmapping or remapping. */
static int seal_object(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct seal_ctx *c = arg;
#if defined(__NR_mseal)
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || ph->p_memsz == 0)
      continue;
    uintptr_t lo = (uintptr_t)(info->dlpi_addr + ph->p_vaddr) & ~(c->page - 1);
    uintptr_t hi =
        (uintptr_t)(info->dlpi_addr + ph->p_vaddr + ph->p_memsz + c->page - 1) & ~(c->page - 1);
    if (syscall(__NR_mseal, lo, hi - lo, 0UL) == 0) {
      c->sealed++;
      continue;
    }
    if (!c->failed)
      c->err = errno;
    c->failed++;
    if (errno == ENOSYS)
      return 1; /* stop: this kernel has no mseal */
  }
#else
  (void)info;
  c->failed++;
  c->err = ENOSYS;
  return 1;
#endif
  return 0;
}

#define LOCK_RULE(name, arg, bit)                                                                  \
  do {                                                                                             \
    struct scmp_arg_cmp c_[1] = {                                                                  \
        {(arg), SCMP_CMP_MASKED_EQ, (scmp_datum_t)(bit), (scmp_datum_t)(bit)}};                    \
    bad |= sc_rule(ctx, eperm, name, 1, c_, st);                                                   \
  } while (0)

static enum kv_layer_state lock_seccomp(struct kv_sandbox_status *st) {
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0 && errno == EINVAL) {
    note(st, "exec_lock: seccomp not supported by this kernel");
    return KV_LAYER_UNAVAILABLE;
  }
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    note(st, "exec_lock: seccomp init failed");
    return KV_LAYER_FAILED;
  }
  const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
  int bad = 0, rc;
  if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) != 0 ||
      (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) != 0) {
    note(st, "exec_lock: seccomp attributes: %s", strerror(-rc));
    bad = -1;
  }
  /* No new executable memory: neither mapped nor made so. */
  LOCK_RULE("mmap", 2, PROT_EXEC);
  LOCK_RULE("mprotect", 2, PROT_EXEC);
  LOCK_RULE("pkey_mprotect", 2, PROT_EXEC);
  LOCK_RULE("shmat", 2, SHM_EXEC);
  bad |= sc_rule(ctx, eperm, "remap_file_pages", 0, NULL, st);
  /* READ_IMPLIES_EXEC would add PROT_EXEC behind the filter's back (the
   * first filter denies personality too; this one may stand alone). */
  bad |= sc_rule(ctx, eperm, "personality", 0, NULL, st);
  /* No file opened for writing any more, on any thread: what a kernel never
   * needs, and the other way to write through page protections (a thread's
   * /proc/<pid>/task/<tid>/mem; Landlock can take that away only from the
   * calling thread before ABI 8, and libcuda's threads exist already).
   * Descriptors opened before stay usable. openat2's flags are out of
   * reach: ENOSYS (libc falls back to openat). */
  static const scmp_datum_t modes[] = {O_WRONLY, O_RDWR, O_ACCMODE};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    struct scmp_arg_cmp c1[1] = {{1, SCMP_CMP_MASKED_EQ, O_ACCMODE, modes[i]}};
    struct scmp_arg_cmp c2[1] = {{2, SCMP_CMP_MASKED_EQ, O_ACCMODE, modes[i]}};
    bad |= sc_rule(ctx, eperm, "open", 1, c1, st);
    bad |= sc_rule(ctx, eperm, "openat", 1, c2, st);
  }
  bad |= sc_rule(ctx, eperm, "creat", 0, NULL, st);
  bad |= sc_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", 0, NULL, st);
  if (bad) {
    seccomp_release(ctx);
    return KV_LAYER_FAILED;
  }
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  if (rc != 0) {
    note(st, "exec_lock: seccomp load: %s", strerror(-rc));
    return KV_LAYER_FAILED;
  }
  return KV_LAYER_ACTIVE;
}

int kv_sandbox_lock_exec(struct kv_sandbox_status *st) {
  int saved_errno = errno;
  kv_sandbox_close_proc(st);
  struct seal_ctx c = {.page = (uintptr_t)sysconf(_SC_PAGESIZE)};
  if (c.page == 0 || (c.page & (c.page - 1)))
    c.page = 4096;
  dl_iterate_phdr(seal_object, &c);
  st->sealed = c.sealed;
  if (c.failed && c.err == ENOSYS && c.sealed == 0)
    note(st, "exec_lock: no mseal in this kernel (Linux >= 6.10): loaded objects not sealed");
  else if (c.failed)
    note(st, "exec_lock: %d of %d segments not sealed: %s", c.failed, c.failed + c.sealed,
         strerror(c.err));
  st->exec_lock = lock_seccomp(st);
  errno = saved_errno;
  return st->exec_lock == KV_LAYER_ACTIVE ? 0 : -1;
}

/* ---- entry ---- */

void kv_sandbox_enter(const struct kv_sandbox_opts *o, struct kv_sandbox_status *st) {
  memset(st, 0, sizeof *st);
  int saved_errno = errno;
  if (o->scratch_dir && strlen(o->scratch_dir) < sizeof sbx_scratch)
    snprintf(sbx_scratch, sizeof sbx_scratch, "%s", o->scratch_dir);

  if (o->rlimits)
    st->rlimits = apply_rlimits(o, st);
  if (o->netns)
    st->netns = apply_netns(st);
  if (o->scratch_bytes > 0)
    st->scratch = apply_scratch(o, st);
  if (o->landlock || o->seccomp)
    st->no_new_privs = apply_no_new_privs(st);
  if (o->landlock)
    st->landlock = apply_landlock(o, st);
  if (o->seccomp)
    st->seccomp = apply_seccomp(st, st->netns == KV_LAYER_ACTIVE, o->allow_exec);
  errno = saved_errno;
}
