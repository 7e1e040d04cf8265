/* The object cache (issue 28 item 6, issue 30): <cache>/obj holds each
 * build's files under the hash of everything that determines them. Nothing
 * there is trusted by name:
 *  - the cache directory and obj/ must be this user's, not links, not
 *    writable by group or others (else refused, with the fix);
 *  - each entry has a record, <key>.sum, written when it is stored: its
 *    status (ok or fail) and each file's size and SHA-256; on lookup every
 *    file is re-hashed (a regular file of ours, not a link, the recorded
 *    bytes), and an entry that does not match is removed and rebuilt;
 *  - obj/ is capped (KEVO_CACHE_MAX_MB, default 2 GiB): storing an entry
 *    evicts the least recently used ones (a hit touches its record), sparing
 *    those used in the last KV_OBJ_GRACE_S seconds (an evaluation may be
 *    about to load them);
 *  - obj/ holds KV_UNLISTED_MARK: a worker reads there by name only, so a
 *    candidate cannot list other candidates' objects and logs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kevo/sandbox.h"

#define SUM_MAX 4096

int kv_dir_trusted(const char *dir, const char *what, char *err, size_t errlen) {
  struct stat st;
  if (lstat(dir, &st) != 0)
    return kv_error(err, errlen, "%s: %s: %s", dir, what, strerror(errno));
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
    return kv_error(err, errlen,
                    "%s: %s is a symbolic link or not a directory, which another user may have "
                    "planted; remove it, or set KEVO_CACHE_DIR to a directory of your own",
                    dir, what);
  if (st.st_uid != geteuid())
    return kv_error(err, errlen,
                    "%s: %s belongs to uid %u, not to you (uid %u), who could plant objects in it; "
                    "remove it, or set KEVO_CACHE_DIR to a directory of your own",
                    dir, what, (unsigned)st.st_uid, (unsigned)geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return kv_error(err, errlen,
                    "%s: %s is writable by group or others (mode %04o), who could plant objects "
                    "in it; run 'chmod go-w %s', or set KEVO_CACHE_DIR to a directory of your own",
                    dir, what, (unsigned)(st.st_mode & 07777), dir);
  return 0;
}

int kv_obj_dir(const char *cache_dir, char *objdir, size_t cap, char *err, size_t errlen) {
  if (strlen(cache_dir) > 3000)
    return kv_error(err, errlen, "%s: cache directory path too long; set KEVO_CACHE_DIR",
                    cache_dir);
  if (snprintf(objdir, cap, "%s/obj", cache_dir) >= (int)cap)
    return kv_error(err, errlen, "%s: cache directory path too long", cache_dir);
  if (kv_mkdirs(objdir, 0700, err, errlen) < 0 ||
      kv_dir_trusted(cache_dir, "the cache directory", err, errlen) < 0 ||
      kv_dir_trusted(objdir, "the object cache", err, errlen) < 0)
    return -1;
  char mark[3200];
  snprintf(mark, sizeof mark, "%s/%s", objdir, KV_UNLISTED_MARK);
  int fd = open(mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    return kv_error(err, errlen, "%s: cannot mark the object cache unlisted: %s", mark,
                    strerror(errno));
  close(fd);
  return 0;
}

/* SHA-256 of a regular file of ours (not a link, not writable by others),
 * and its size. 0, or -1. */
static int hash_file(const char *path, char hex[65], long long *size) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH))) {
    close(fd);
    return -1;
  }
  struct kv_sha256 *h = kv_sha256_new();
  char *buf = malloc(1 << 20);
  long long n = 0;
  ssize_t r = 0;
  while (h && buf && (r = read(fd, buf, 1 << 20)) > 0) {
    kv_sha256_update(h, buf, (size_t)r);
    n += r;
  }
  kv_sha256_final(h, hex);
  free(buf);
  close(fd);
  *size = n;
  return r == 0 && h && buf && n == (long long)st.st_size ? 0 : -1;
}

static void entry_path(const char *objdir, const char *key, const char *suffix, char *out,
                       size_t cap) {
  snprintf(out, cap, "%s/%s%s", objdir, key, suffix);
}

/* Removes every file of the entry (those named <key>.* and <key>-*). */
static void entry_remove(const char *objdir, const char *key) {
  DIR *d = opendir(objdir);
  if (!d)
    return;
  size_t kl = strlen(key);
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (!strncmp(e->d_name, key, kl) && (e->d_name[kl] == '.' || e->d_name[kl] == '-'))
      unlinkat(dirfd(d), e->d_name, 0);
  closedir(d);
}

int kv_obj_lock(const char *objdir, const char *key, double wait_s) {
  char dir[PATH_MAX], p[PATH_MAX];
  struct stat st;
  snprintf(dir, sizeof dir, "%s/.lock", objdir);
  if ((mkdir(dir, 0700) < 0 && errno != EEXIST) || lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != geteuid() || (st.st_mode & 022))
    return -1;
  snprintf(p, sizeof p, "%s/%s", dir, key);
  int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  double until = kv_now_s() + (wait_s > 0 ? wait_s : 0);
  while (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || kv_now_s() >= until) {
      close(fd);
      return -1;
    }
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
  }
  return fd;
}

void kv_obj_unlock(int fd) {
  if (fd >= 0)
    close(fd);
}

int kv_obj_lookup(const char *objdir, const char *key, const char *const *suffixes) {
  char sum[PATH_MAX], *text = NULL;
  size_t len = 0;
  entry_path(objdir, key, ".sum", sum, sizeof sum);
  char hex[65];
  long long size;
  if (hash_file(sum, hex, &size) < 0) { /* absent, or not ours */
    for (int i = 0; suffixes[i]; i++) {
      char p[PATH_MAX];
      entry_path(objdir, key, suffixes[i], p, sizeof p);
      if (kv_path_exists(p)) { /* files without a record: never trusted */
        entry_remove(objdir, key);
        break;
      }
    }
    return KV_OBJ_MISS;
  }
  int state = KV_OBJ_MISS;
  if (kv_read_file(sum, SUM_MAX, &text, &len, NULL, 0) == 0) {
    char status[8] = "";
    int off = 0;
    if (sscanf(text, "kevo-obj 1 %7s%n", status, &off) == 1)
      state = !strcmp(status, "ok") ? KV_OBJ_OK : !strcmp(status, "fail") ? KV_OBJ_FAIL : -1;
    int nfiles = 0;
    for (char *p = text + off; state != KV_OBJ_MISS && state >= 0 && *p;) {
      char name[80], want[65], got[65], path[PATH_MAX];
      long long wsize, gsize;
      int used = 0;
      if (sscanf(p, " %79s %lld %64s%n", name, &wsize, want, &used) != 3 || strchr(name, '/')) {
        if (sscanf(p, " %n", &used) == 0 && p[used] == 0)
          break;
        state = -1;
        break;
      }
      p += used;
      snprintf(path, sizeof path, "%s/%s", objdir, name);
      if (strncmp(name, key, strlen(key)) || hash_file(path, got, &gsize) < 0 || gsize != wsize ||
          strcmp(got, want))
        state = -1;
      nfiles++;
    }
    if (state == KV_OBJ_OK && nfiles == 0)
      state = -1;
  }
  free(text);
  if (state < 0 || state == KV_OBJ_MISS) {
    entry_remove(objdir, key);
    return KV_OBJ_MISS;
  }
  utimensat(AT_FDCWD, sum, NULL, AT_SYMLINK_NOFOLLOW); /* used now: last to go */
  return state;
}

int kv_obj_record(const char *objdir, const char *key, int ok, const char *const *suffixes,
                  char *err, size_t errlen) {
  struct kv_buf b;
  kv_buf_init(&b, SUM_MAX);
  kv_buf_appendf(&b, "kevo-obj 1 %s\n", ok ? "ok" : "fail");
  for (int i = 0; suffixes[i]; i++) {
    char p[PATH_MAX], hex[65];
    long long size;
    entry_path(objdir, key, suffixes[i], p, sizeof p);
    if (hash_file(p, hex, &size) < 0) {
      kv_buf_release(&b);
      entry_remove(objdir, key);
      return kv_error(err, errlen, "%s: cannot record the build (not a file of ours)", p);
    }
    kv_buf_appendf(&b, "%s%s %lld %s\n", key, suffixes[i], size, hex);
  }
  char sum[PATH_MAX], tmp[PATH_MAX + 32];
  entry_path(objdir, key, ".sum", sum, sizeof sum);
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", sum, (int)getpid());
  int rc = b.truncated ? kv_error(err, errlen, "%s: the record is too long", sum)
                       : kv_write_file(tmp, b.data, b.len, err, errlen);
  if (rc == 0 && rename(tmp, sum) != 0)
    rc = kv_error(err, errlen, "%s: cannot store the record: %s", sum, strerror(errno));
  unlink(tmp);
  kv_buf_release(&b);
  if (rc == 0)
    kv_obj_evict(objdir, kv_obj_cap_bytes(), KV_OBJ_GRACE_S);
  return rc;
}

unsigned long long kv_obj_cap_bytes(void) {
  const char *e = getenv("KEVO_CACHE_MAX_MB");
  char *end;
  unsigned long long mb = e && *e ? strtoull(e, &end, 10) : 0;
  if (!e || !*e || *end || mb < 16 || mb > (1ULL << 30))
    mb = KV_OBJ_CAP_MB_DEFAULT;
  return mb << 20;
}

/* ---- eviction ---- */

struct group {
  char name[80]; /* the key (64 hex digits) or, for another file, its name */
  unsigned long long bytes;
  time_t used;
};

/* The group a file belongs to: its name up to the first dot (an entry's
 * files, <key>.so, <key>.log, <key>.sum, go together). */
static void group_of(const char *file, char *out, size_t cap) {
  snprintf(out, cap, "%.*s", (int)strcspn(file, "."), file);
}

static int by_use(const void *a, const void *b) {
  const struct group *x = a, *y = b;
  return x->used < y->used ? -1 : x->used > y->used;
}

static struct group *find_or_add(struct group **gs, int *n, int *cap, const char *name) {
  for (int i = *n - 1; i >= 0; i--)
    if (!strcmp((*gs)[i].name, name))
      return &(*gs)[i];
  if (*n == *cap) {
    int nc = *cap ? *cap * 2 : 256;
    struct group *ng = realloc(*gs, (size_t)nc * sizeof *ng);
    if (!ng)
      return NULL;
    *gs = ng;
    *cap = nc;
  }
  struct group *g = &(*gs)[(*n)++];
  memset(g, 0, sizeof *g);
  snprintf(g->name, sizeof g->name, "%s", name);
  return g;
}

/* Entries of obj/ with their sizes and last use (the newest time of their
 * files: the record is touched on each hit). NULL when it cannot be read. */
static struct group *scan_groups(const char *objdir, int *n, unsigned long long *total) {
  DIR *d = opendir(objdir);
  if (!d)
    return NULL;
  struct group *gs = NULL;
  int cap = 0;
  *n = 0;
  *total = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    char name[80];
    group_of(e->d_name, name, sizeof name);
    struct group *g = find_or_add(&gs, n, &cap, name);
    if (!g)
      break;
    g->bytes += (unsigned long long)st.st_blocks * 512;
    *total += (unsigned long long)st.st_blocks * 512;
    if (st.st_mtime > g->used)
      g->used = st.st_mtime;
  }
  closedir(d);
  return gs;
}

unsigned long long kv_obj_evict(const char *objdir, unsigned long long cap_bytes, int grace_s) {
  int n;
  unsigned long long total;
  struct group *gs = scan_groups(objdir, &n, &total);
  if (!gs)
    return 0;
  qsort(gs, (size_t)n, sizeof *gs, by_use);
  time_t now = time(NULL);
  /* Down to 90% of the cap, so that the next store does not evict again. */
  unsigned long long goal = cap_bytes / 10 * 9;
  for (int i = 0; i < n && total > cap_bytes; i++) {
    if (now - gs[i].used < grace_s)
      break; /* this and every later one was used just now */
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", objdir, gs[i].name);
    unlink(p);
    entry_remove(objdir, gs[i].name);
    snprintf(p, sizeof p, "%s/.lock/%s", objdir, gs[i].name);
    unlink(p); /* unused for the grace time: no builder holds it */
    total -= gs[i].bytes < total ? gs[i].bytes : total;
    if (total <= goal)
      break;
  }
  free(gs);
  return total;
}
