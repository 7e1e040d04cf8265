/* Device locks for timing: see devlock.h.
 *
 * Why open-file-description locks (F_OFD_SETLK) and not flock(): on the cpu
 * surface the device is a set of cores, and two timing loops whose sets
 * overlap must not run at once. One lock per CPU does that, taken in
 * ascending order so that no two holders can deadlock; OFD locks give that
 * with byte ranges of one file (a record per CPU, a run of consecutive CPUs in
 * one call), so a lock costs one descriptor whatever the number of cores,
 * where a file per CPU would cost one descriptor per core per evaluation (256
 * cores x 8 concurrent evaluations is past the usual limit of 1024). Like
 * flock, an OFD lock belongs to the open file description, so each
 * acquisition (its own open()) excludes the other threads of its process
 * too, it is not dropped when another descriptor of the file is closed
 * (POSIX F_SETLK locks are), and the kernel drops it when the last
 * descriptor goes, at the holder's death included.
 *
 * Why cores and not the whole host: a user who pins two runs to disjoint
 * cores (taskset, Slurm's cgroups) asked for them to run side by side, and
 * each keeps its own cores; they still share the memory bus and the
 * last-level cache, which is theirs to weigh. Runs that share any core
 * (every unpinned run shares all of them) time one at a time. */
#include "devlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kevo/util.h"

/* Each slot is a record of this many bytes: the lock covers it, and its
 * holder writes there who it is. */
#define REC 256
#define WHAT_CAP 160

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The lock directory out, opened, if it is this user's alone (not a link,
 * owned by us, not writable by group or others). Its descriptor, or -1. */
static int open_checked(const char *out, char *err, size_t errlen) {
  int dfd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) {
    int e = errno;
    if (e == ELOOP || e == ENOTDIR)
      return kv_error(err, errlen,
                      "%s: kevo's lock directory is a symbolic link or not a directory; remove "
                      "it, or set KEVO_LOCK_DIR to a directory of your own (not a link)",
                      out);
    return kv_error(err, errlen, "%s: cannot open kevo's lock directory: %s", out, strerror(e));
  }
  struct stat st;
  if (fstat(dfd, &st) < 0) {
    int e = errno;
    close(dfd);
    return kv_error(err, errlen, "%s: %s", out, strerror(e));
  }
  if (st.st_uid != geteuid()) {
    close(dfd);
    return kv_error(err, errlen,
                    "%s: kevo's lock directory belongs to uid %u, not to you (uid %u), so its "
                    "locks are not yours to trust; remove it, or set KEVO_LOCK_DIR to a directory "
                    "of your own",
                    out, (unsigned)st.st_uid, (unsigned)geteuid());
  }
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    close(dfd);
    return kv_error(err, errlen,
                    "%s: kevo's lock directory is writable by group or others (mode %04o), who "
                    "could replace its locks; run 'chmod 700 %s', or set KEVO_LOCK_DIR to a "
                    "directory of your own",
                    out, (unsigned)(st.st_mode & 07777), out);
  }
  return dfd;
}

static char squat_note[1024];

const char *kv_devlock_note(void) {
  return squat_note;
}

/* Opens the lock directory (created when missing) and checks that it is
 * this user's alone. Returns its descriptor, or -1. The default one
 * (def_dir) may have been made first by another local user: then a private
 * one under kevo's cache directory is used, and kv_devlock_note says so. */
static int open_dir(const char *def_dir, char *out, size_t cap, char *err, size_t errlen) {
  const char *env = getenv("KEVO_LOCK_DIR");
  if (env && *env) {
    if (snprintf(out, cap, "%s", env) >= (int)cap)
      return kv_error(err, errlen, "KEVO_LOCK_DIR: longer than %zu bytes; name a shorter directory",
                      cap - 1);
    if (kv_mkdirs(out, 0700, err, errlen) < 0)
      return -1;
    return open_checked(out, err, errlen);
  }
  snprintf(out, cap, "%s", def_dir);
  char why[1024] = "";
  if (mkdir(out, 0700) < 0 && errno != EEXIST)
    snprintf(why, sizeof why, "%s: cannot create kevo's lock directory: %s", out, strerror(errno));
  int dfd = why[0] ? -1 : open_checked(out, why, sizeof why);
  if (dfd >= 0)
    return dfd;
  /* Squatted: a directory of our own instead, the same for every kevo
   * process of this user (kv_cache_dir does not depend on KEVO_CACHE_DIR). */
  char cache[3800];
  if (kv_cache_dir(cache, sizeof cache) < 0)
    return kv_error(err, errlen,
                    "%s; and no private cache directory to fall back on: set "
                    "KEVO_LOCK_DIR to a directory of your own",
                    why);
  snprintf(out, cap, "%s/locks", cache);
  if (kv_mkdirs(out, 0700, err, errlen) < 0 || (dfd = open_checked(out, err, errlen)) < 0)
    return -1;
  snprintf(squat_note, sizeof squat_note, "%.700s; using %.250s instead", why, out);
  return dfd;
}

static void default_dir(char *out, size_t cap) {
  snprintf(out, cap, "/tmp/kevo-locks-%u", (unsigned)geteuid());
}

int kv_devlock_dir_at(const char *def_dir, char *out, size_t cap, char *err, size_t errlen) {
  int dfd = open_dir(def_dir, out, cap, err, errlen);
  if (dfd < 0)
    return -1;
  close(dfd);
  return 0;
}

int kv_devlock_dir(char *out, size_t cap, char *err, size_t errlen) {
  char def[64];
  default_dir(def, sizeof def);
  int dfd = open_dir(def, out, cap, err, errlen);
  if (dfd < 0)
    return -1;
  close(dfd);
  return 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : x > y;
}

static int valid_file(const char *f) {
  size_t n = strlen(f);
  if (n == 0 || n > 200 || f[0] == '.')
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = f[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '_' || c == '.'))
      return 0;
  }
  return 1;
}

/* Who holds the lock that stops `fl`, from the record of the first slot it
 * covers: "another kevo process (pid 4242: timing rowsum) has held" ... */
static void describe_holder(int fd, const struct flock *want, char *out, size_t cap,
                            double *held_s) {
  *held_s = -1;
  struct flock fl = *want;
  if (fcntl(fd, F_OFD_GETLK, &fl) < 0 || fl.l_type == F_UNLCK) {
    snprintf(out, cap, "another process (it has just let go)");
    return;
  }
  off_t at = fl.l_start > want->l_start ? fl.l_start : want->l_start;
  at -= at % REC;
  char rec[REC + 1];
  ssize_t got = pread(fd, rec, REC, at);
  rec[got > 0 ? got : 0] = 0;
  int pid = 0;
  double since = 0;
  char what[WHAT_CAP + 1] = "";
  int k = sscanf(rec, "kevo-lock pid=%d since=%lf what=%160[^\n]", &pid, &since, what);
  /* A record names its holder only while that process lives (a holder that
   * was killed left its record behind; the new one may not have written its
   * own yet). */
  if (k < 2 || pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH)) {
    snprintf(out, cap, "a process that has not said which (it has just taken it, or is not kevo)");
    return;
  }
  *held_s = unix_now() - since;
  if (*held_s < 0)
    *held_s = 0;
  snprintf(out, cap, "%s (pid %d%s%s)",
           pid == getpid() ? "another evaluation in this process" : "another kevo process", pid,
           what[0] ? ": " : "", what);
}

/* Writes who holds the slots into their records. */
static void write_records(int fd, const int *s, int ns, const char *what) {
  char rec[REC];
  memset(rec, 0, sizeof rec);
  char w[WHAT_CAP + 1];
  size_t n = 0;
  for (const char *p = what ? what : ""; *p && n < WHAT_CAP; p++)
    w[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : ' ';
  w[n] = 0;
  snprintf(rec, sizeof rec, "kevo-lock pid=%d since=%.3f what=%s\n", (int)getpid(), unix_now(), w);
  for (int i = 0; i < ns; i++)
    if (pwrite(fd, rec, REC, (off_t)s[i] * REC) != REC)
      break; /* only the message of a later waiter is poorer for it */
}

int kv_devlock_acquire(struct kv_devlock *l, const char *file, const int *slots, int n,
                       const char *key, const char *what, double wait_s, char *err, size_t errlen) {
  memset(l, 0, sizeof *l);
  l->fd = -1;
  snprintf(l->key, sizeof l->key, "%s", key && *key ? key : file);
  if (!file || !valid_file(file))
    return kv_error(err, errlen,
                    "device lock: '%s' is not a lock file name (letters, digits, "
                    "'-', '_' and '.', not first)",
                    file ? file : "(null)");
  if (n < 1 || n > KV_DEVLOCK_MAX_SLOTS || !slots)
    return kv_error(err, errlen, "device lock %s: %d slots; a lock takes 1 to %d", file, n,
                    KV_DEVLOCK_MAX_SLOTS);
  int *s = malloc(sizeof(int) * (size_t)n);
  if (!s)
    return kv_error(err, errlen, "out of memory");
  memcpy(s, slots, sizeof(int) * (size_t)n);
  qsort(s, (size_t)n, sizeof(int), cmp_int);
  int ns = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < 0 || s[i] >= KV_DEVLOCK_MAX_SLOTS) {
      free(s);
      return kv_error(err, errlen, "device lock %s: slot %d is outside 0..%d", file, slots[i],
                      KV_DEVLOCK_MAX_SLOTS - 1);
    }
    if (ns == 0 || s[ns - 1] != s[i])
      s[ns++] = s[i];
  }
  char dir[4000];
  char def[64];
  default_dir(def, sizeof def);
  int dfd = open_dir(def, dir, sizeof dir, err, errlen);
  if (dfd < 0) {
    free(s);
    return -1;
  }
  snprintf(l->path, sizeof l->path, "%s/%s", dir, file);
  double t0 = kv_now_s(), deadline = t0 + (wait_s > 0 ? wait_s : 0);
  double nap = 0.001;
  int fd = -1, rc = -1;
  for (;;) {
    fd = openat(dfd, file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat a;
    if (fd < 0 || fstat(fd, &a) < 0) {
      kv_error(err, errlen, "%s: cannot open the %s timing lock: %s", l->path, l->key,
               strerror(errno));
      goto out;
    }
    if (!S_ISREG(a.st_mode) || a.st_uid != geteuid()) {
      kv_error(err, errlen, "%s: the %s timing lock is not a regular file of yours; remove it",
               l->path, l->key);
      goto out;
    }
    /* Consecutive slots are one range, ranges in ascending order: a holder
     * waits only for slots above every slot it holds, so no cycle of
     * waiters can form. */
    int i = 0;
    while (i < ns) {
      int j = i;
      while (j + 1 < ns && s[j + 1] == s[j] + 1)
        j++;
      struct flock fl;
      memset(&fl, 0, sizeof fl);
      fl.l_type = F_WRLCK;
      fl.l_whence = SEEK_SET;
      fl.l_start = (off_t)s[i] * REC;
      fl.l_len = (off_t)(j - i + 1) * REC;
      if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
        i = j + 1;
        continue;
      }
      if (errno != EAGAIN && errno != EACCES) {
        kv_error(err, errlen, "%s: cannot take the %s timing lock: %s%s", l->path, l->key,
                 strerror(errno),
                 errno == EINVAL ? " (open file description locks need Linux 3.15 or later)"
                 : errno == ENOLCK
                     ? "; the file system does not lock: set KEVO_LOCK_DIR to a local directory"
                     : "");
        goto out;
      }
      double now = kv_now_s();
      if (now >= deadline) {
        char who[400];
        double held;
        describe_holder(fd, &fl, who, sizeof who, &held);
        char hs[64] = "";
        if (held >= 0)
          snprintf(hs, sizeof hs, " for %.0f s", held);
        kv_error(err, errlen,
                 "%s has held the %s timing lock%s (%s); gave up after waiting %.1f s. kevo "
                 "times one evaluation per device at a time: if that process is stopped "
                 "(Ctrl-Z) or stuck, resume or end it",
                 who, l->key, hs, l->path, now - t0);
        goto out;
      }
      /* 1 ms doubling to 25 ms, with jitter so that waiters do not march
       * in step; never past the deadline. */
      double d = nap * (0.5 + (double)(kv_random_u64() >> 11) * 0x1p-53);
      if (d > deadline - now)
        d = deadline - now;
      struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
      nanosleep(&ts, NULL);
      nap = nap * 2 > 0.025 ? 0.025 : nap * 2;
    }
    /* Held: but is it still the file at that name? One removed (a /tmp
     * cleaner, rm -rf) or replaced meanwhile locks nothing that the next
     * process will open: start again on the file there now. */
    struct stat b;
    if (fstatat(dfd, file, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
      break;
    close(fd);
    fd = -1;
    if (kv_now_s() >= deadline) {
      kv_error(err, errlen,
               "%s: the %s timing lock file kept being removed or replaced while "
               "kevo took it; is something cleaning that directory?",
               l->path, l->key);
      goto out;
    }
  }
  write_records(fd, s, ns, what);
  l->fd = fd;
  l->held = 1;
  l->waited_s = kv_now_s() - t0;
  fd = -1;
  rc = 0;
out:
  if (fd >= 0)
    close(fd); /* drops whatever ranges it had taken */
  close(dfd);
  free(s);
  return rc;
}

void kv_devlock_release(struct kv_devlock *l) {
  if (!l->held)
    return;
  close(l->fd); /* the kernel drops the lock with the description */
  l->fd = -1;
  l->held = 0;
}

int kv_devlock_cpu_slots(int *slots, int cap, char *text, size_t textcap, char *err,
                         size_t errlen) {
  for (int ncpu = 1024; ncpu <= KV_DEVLOCK_MAX_SLOTS; ncpu *= 2) {
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set)
      return kv_error(err, errlen, "out of memory");
    size_t sz = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(sz, set);
    if (sched_getaffinity(0, sz, set) < 0) {
      int e = errno;
      CPU_FREE(set);
      if (e == EINVAL)
        continue; /* more CPUs than the set holds: a bigger one */
      return kv_error(err, errlen, "sched_getaffinity: %s", strerror(e));
    }
    int n = 0;
    size_t tl = 0;
    if (textcap)
      text[0] = 0;
    for (int c = 0; c < ncpu; c++) {
      if (!CPU_ISSET_S(c, sz, set))
        continue;
      if (n >= cap) {
        CPU_FREE(set);
        return kv_error(err, errlen, "this thread may run on more than %d CPUs", cap);
      }
      slots[n++] = c;
      /* "0-3,8": the start of a run, and its end when it ends. */
      int prev = c > 0 && CPU_ISSET_S(c - 1, sz, set);
      int next = c + 1 < ncpu && CPU_ISSET_S(c + 1, sz, set);
      if (tl < textcap) {
        int w = 0;
        if (!prev)
          w = snprintf(text + tl, textcap - tl, "%s%d", n > 1 ? "," : "", c);
        else if (!next)
          w = snprintf(text + tl, textcap - tl, "-%d", c);
        tl += w > 0 ? (size_t)w : 0;
      }
    }
    CPU_FREE(set);
    if (n == 0)
      return kv_error(err, errlen, "sched_getaffinity: this thread may run on no CPU");
    return n;
  }
  return kv_error(err, errlen, "this thread may run on more than %d CPUs", KV_DEVLOCK_MAX_SLOTS);
}

int kv_devlock_cpus(struct kv_devlock *l, const char *what, double wait_s, char *err,
                    size_t errlen) {
  memset(l, 0, sizeof *l);
  l->fd = -1;
  int *slots = malloc(sizeof(int) * KV_DEVLOCK_MAX_SLOTS);
  if (!slots)
    return kv_error(err, errlen, "out of memory");
  char text[120], key[160];
  int n = kv_devlock_cpu_slots(slots, KV_DEVLOCK_MAX_SLOTS, text, sizeof text, err, errlen);
  int rc = -1;
  if (n > 0) {
    snprintf(key, sizeof key, "%s %s", n == 1 ? "cpu" : "cpus", text);
    rc = kv_devlock_acquire(l, "cpus.lock", slots, n, key, what, wait_s, err, errlen);
  }
  free(slots);
  return rc;
}

int kv_devlock_gpu(struct kv_devlock *l, const char *uuid, const char *what, double wait_s,
                   char *err, size_t errlen) {
  char file[128], key[160];
  int slot = 0;
  if (!uuid || !*uuid) {
    snprintf(file, sizeof file, "gpu-unnamed.lock");
    snprintf(key, sizeof key, "GPU (its worker named no UUID)");
  } else {
    /* "GPU-8f6e...": the file name keeps letters, digits and '-'. */
    size_t n = 0;
    char id[81];
    for (const char *p = uuid; *p && n < sizeof id - 1; p++) {
      char c = *p;
      int ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      id[n++] = ok ? c : '_';
    }
    id[n] = 0;
    snprintf(file, sizeof file, "gpu-%s.lock", id);
    snprintf(key, sizeof key, "GPU %s", id);
  }
  return kv_devlock_acquire(l, file, &slot, 1, key, what, wait_s, err, errlen);
}
