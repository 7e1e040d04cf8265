#include "kevo/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int kv_error(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

void kv_buf_init(struct kv_buf *b, size_t max) {
  memset(b, 0, sizeof(*b));
  b->max = max;
}

int kv_buf_append(struct kv_buf *b, const void *p, size_t n) {
  if (b->len >= b->max) {
    if (n)
      b->truncated = 1;
    return 0;
  }
  if (n > b->max - b->len) {
    n = b->max - b->len;
    b->truncated = 1;
  }
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    if (cap > b->max + 1)
      cap = b->max + 1;
    char *d = realloc(b->data, cap);
    if (!d)
      return -1;
    b->data = d;
    b->cap = cap;
  }
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

int kv_buf_appendf(struct kv_buf *b, const char *fmt, ...) {
  char small[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0)
    return -1;
  if ((size_t)n < sizeof small)
    return kv_buf_append(b, small, (size_t)n);
  char *big = malloc((size_t)n + 1);
  if (!big)
    return -1;
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  int rc = kv_buf_append(b, big, (size_t)n);
  free(big);
  return rc;
}

void kv_buf_reset(struct kv_buf *b) {
  b->len = 0;
  b->truncated = 0;
  if (b->data)
    b->data[0] = 0;
}

void kv_buf_release(struct kv_buf *b) {
  free(b->data);
  size_t max = b->max;
  memset(b, 0, sizeof(*b));
  b->max = max;
}

char *kv_buf_detach(struct kv_buf *b) {
  char *d = b->data ? b->data : strdup("");
  size_t max = b->max;
  memset(b, 0, sizeof(*b));
  b->max = max;
  return d;
}

int kv_read_file(const char *path, size_t max, char **out, size_t *len, char *err, size_t errlen) {
  *out = NULL;
  if (len)
    *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return kv_error(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return kv_error(err, errlen, "%s: is a directory, expected a file", path);
  }
  struct kv_buf b;
  kv_buf_init(&b, max);
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      close(fd);
      kv_buf_release(&b);
      return kv_error(err, errlen, "%s: cannot read: %s", path, strerror(e));
    }
    if (n == 0)
      break;
    if (kv_buf_append(&b, chunk, (size_t)n) < 0) {
      close(fd);
      kv_buf_release(&b);
      return kv_error(err, errlen, "%s: out of memory", path);
    }
    if (b.truncated) {
      close(fd);
      kv_buf_release(&b);
      return kv_error(err, errlen, "%s: larger than the limit of %zu bytes", path, max);
    }
  }
  close(fd);
  if (len)
    *len = b.len;
  *out = kv_buf_detach(&b);
  return 0;
}

int kv_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
  /* A temporary name of its own per call: two threads writing the same path
   * (two equal candidates built and analysed at once) never share one. */
  /* Created, never opened: a name planted beforehand (a symbolic link to
   * another file, in a directory others can write) is passed over. */
  static _Atomic unsigned long seq;
  char tmp[PATH_MAX];
  int fd = -1;
  for (int tries = 0; fd < 0 && tries < 64; tries++) {
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d.%lu", path, (int)getpid(),
                 atomic_fetch_add(&seq, 1)) >= (int)sizeof tmp)
      return kv_error(err, errlen, "%s: path too long", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST)
      break;
  }
  if (fd < 0) /* the file asked for, not the temporary (report -o missing/x.html) */
    return kv_error(err, errlen, "%s: cannot create: %s", path, strerror(errno));
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t n = write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int e = errno;
      close(fd);
      unlink(tmp);
      return kv_error(err, errlen, "%s: cannot write: %s", path, strerror(e));
    }
    p += n;
    left -= (size_t)n;
  }
  if (close(fd) < 0 || rename(tmp, path) < 0) {
    int e = errno;
    unlink(tmp);
    return kv_error(err, errlen, "%s: cannot write: %s", path, strerror(e));
  }
  return 0;
}

int kv_mkdirs(const char *path, mode_t mode, char *err, size_t errlen) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return kv_error(err, errlen, "%s: path too long", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/')
      continue;
    *p = 0;
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
      return kv_error(err, errlen, "%s: cannot create directory: %s", buf, strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, mode) < 0 && errno != EEXIST)
    return kv_error(err, errlen, "%s: cannot create directory: %s", buf, strerror(errno));
  return 0;
}

/* ---- rm -rf with a bounded number of descriptors ----
 *
 * The tree may have been built by a hostile candidate: a chain of directories
 * deeper than the descriptor limit, directories of a hundred thousand
 * entries, symlinks pointing out of the tree. So the walk is iterative and
 * holds at most three descriptors whatever the depth: it goes down with
 * openat(O_NOFOLLOW) one level at a time, closing the parent, and back up
 * with "..", checking that the directory reached is the one it came from
 * (device and inode, remembered per level: 32 bytes a level, no names). It
 * never follows a symlink (it unlinks the link), never crosses into another
 * file system, and resumes a directory where it left it (the entry's offset)
 * so that a wide directory costs one pass, then checks it once from the start
 * before removing it. */

struct rm_level {
  ino_t ino;  /* of this directory */
  off_t at;   /* where the entry we went down into starts */
  off_t next; /* where the entry after it starts */
  int failed; /* something below could not be removed */
};

struct rm_walk {
  struct rm_level *lv;
  size_t cap;
  dev_t dev;
  int failed, err; /* the first errno that made something stay */
};

static void rm_fail(struct rm_walk *w, int err) {
  if (!w->failed)
    w->err = err;
  w->failed = 1;
}

/* Removes a non-directory, or an empty directory; 1 when `name` is a
 * directory with something in it, 0 when removed or gone, -1 on failure. */
static int rm_entry(int dfd, const char *name, unsigned char type) {
  if (type != DT_DIR && type != DT_UNKNOWN) {
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
      return 0;
    if (errno != EISDIR)
      return -1;
  }
  if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
    return 0;
  if (errno == ENOTEMPTY || errno == EEXIST)
    return 1;
  if (errno == ENOTDIR) /* not (or no longer) a directory */
    return unlinkat(dfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
  return -1;
}

/* Empties the directory open as `root` (which it closes). */
static void rm_contents(int root, struct rm_walk *w) {
  enum { BUF = 64 * 1024 };
  char *buf = malloc(BUF);
  struct stat sb;
  if (!buf || fstat(root, &sb) != 0) {
    rm_fail(w, buf ? errno : ENOMEM);
    free(buf);
    close(root);
    return;
  }
  w->dev = sb.st_dev;
  size_t depth = 0;
  w->lv[0] = (struct rm_level){.ino = sb.st_ino};
  int cur = root;
  for (;;) {
    struct rm_level *l = &w->lv[depth];
    off_t start = l->at;
    int down = -1; /* descriptor of the directory to go down into */
    ino_t down_ino = 0;
    if (lseek(cur, start, SEEK_SET) < 0) {
      start = 0;
      lseek(cur, 0, SEEK_SET);
    }
    off_t pos = start;
    ssize_t n = 0;
    /* A pass stops at the first directory with something in it and goes
     * down into it; coming back, it resumes there with a small read (the
     * next such directory may be near), doubling while it meets none. */
    size_t want = start == 0 ? BUF : 2048;
    while (down < 0 && (n = getdents64(cur, buf, want)) > 0) {
      if (want < BUF)
        want *= 2;
      for (ssize_t i = 0; i < n;) {
        struct dirent64 *e = (struct dirent64 *)(buf + i);
        i += e->d_reclen;
        off_t here = pos;
        pos = e->d_off;
        const char *name = e->d_name;
        if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
          continue;
        int r = rm_entry(cur, name, e->d_type);
        if (r < 0) {
          rm_fail(w, errno);
          l->failed = 1;
        }
        if (r <= 0)
          continue;
        int fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
          /* Replaced by a symlink or a file since: unlink that instead. */
          if ((errno == ELOOP || errno == ENOTDIR) && unlinkat(cur, name, 0) == 0)
            continue;
          rm_fail(w, errno);
          l->failed = 1;
          continue;
        }
        if (fstat(fd, &sb) != 0 || sb.st_dev != w->dev) {
          rm_fail(w, EXDEV); /* a mount point: never cross it */
          l->failed = 1;
          close(fd);
          continue;
        }
        if (depth + 1 >= w->cap) {
          size_t cap = w->cap * 2;
          struct rm_level *lv = realloc(w->lv, cap * sizeof *lv);
          if (!lv) {
            rm_fail(w, ENOMEM);
            l->failed = 1;
            close(fd);
            continue;
          }
          w->lv = lv;
          w->cap = cap;
          l = &w->lv[depth];
        }
        l->at = here;
        l->next = e->d_off;
        down = fd;
        down_ino = sb.st_ino;
        break;
      }
    }
    if (down >= 0) {
      close(cur);
      cur = down;
      depth++;
      w->lv[depth] = (struct rm_level){.ino = down_ino};
      continue;
    }
    if (n < 0) {
      rm_fail(w, errno);
      l->failed = 1;
    }
    /* A pass that began mid-directory: once more from the start, unless
     * something here stays anyway (which also rules out looping on it). */
    if (start != 0 && !l->failed) {
      l->at = 0;
      continue;
    }
    if (depth == 0)
      break;
    /* Up: ".." must be the directory we came down from. */
    int up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct rm_level *p = &w->lv[depth - 1];
    if (up < 0 || fstat(up, &sb) != 0 || sb.st_dev != w->dev || sb.st_ino != p->ino) {
      rm_fail(w, up < 0 ? errno : ESTALE); /* moved away under us: stop */
      if (up >= 0)
        close(up);
      break;
    }
    close(cur);
    cur = up;
    /* The directory we left is empty now (it is removed when the pass meets
     * it again), unless something in it stayed: then skip it. */
    if (l->failed) {
      p->failed = 1;
      p->at = p->next;
    }
    depth--;
  }
  close(cur);
  free(buf);
}

int kv_rmtree(const char *path) {
  char dir[PATH_MAX];
  size_t len = strlen(path);
  while (len > 1 && path[len - 1] == '/')
    len--;
  if (len == 0 || len >= sizeof dir) {
    errno = len ? ENAMETOOLONG : ENOENT;
    return -1;
  }
  memcpy(dir, path, len);
  dir[len] = 0;
  /* An empty directory goes without a descriptor: cleaning up after running
   * out of them (a failed worker start) still works. rmdir refuses ".", ".."
   * and "/" by itself. */
  if (rmdir(dir) == 0)
    return 0;
  char *slash = strrchr(dir, '/');
  const char *name = dir;
  int base = AT_FDCWD;
  if (slash && slash[1]) {
    name = slash + 1;
    if (slash == dir)
      base = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    else {
      *slash = 0;
      base = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (base < 0)
      return -1;
  } else if (slash) {
    errno = EBUSY; /* "/" itself */
    return -1;
  }
  if (!strcmp(name, ".") || !strcmp(name, "..")) {
    if (base != AT_FDCWD)
      close(base);
    errno = EINVAL;
    return -1;
  }
  int rc = -1, saved = 0;
  int root = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) {
    /* A file or a symlink (never followed): unlink it. */
    if (errno == ENOTDIR || errno == ELOOP)
      rc = unlinkat(base, name, 0);
    saved = errno;
  } else {
    struct rm_walk w = {.cap = 64};
    w.lv = malloc(w.cap * sizeof *w.lv);
    if (!w.lv) {
      close(root);
      saved = ENOMEM;
    } else {
      rm_contents(root, &w);
      free(w.lv);
      rc = unlinkat(base, name, AT_REMOVEDIR);
      saved = w.failed ? w.err : errno;
      if (w.failed)
        rc = -1;
    }
  }
  if (base != AT_FDCWD)
    close(base);
  errno = saved;
  return rc;
}

int kv_path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int kv_exe_dir(char *out, size_t cap) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0)
    return -1;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash)
    return -1;
  *slash = 0;
  if (snprintf(out, cap, "%s", buf) >= (int)cap)
    return -1;
  return 0;
}

int kv_cache_dir(char *out, size_t cap) {
  const char *e;
  int n;
  if ((e = getenv("XDG_CACHE_HOME")) && *e)
    n = snprintf(out, cap, "%s/kevo", e);
  else if ((e = getenv("HOME")) && *e)
    n = snprintf(out, cap, "%s/.cache/kevo", e);
  else {
    e = getenv("TMPDIR");
    n = snprintf(out, cap, "%s/kevo-cache-%d", e && *e ? e : "/tmp", (int)geteuid());
    struct stat st;
    if (n < 0 || (size_t)n >= cap || (mkdir(out, 0700) != 0 && errno != EEXIST) ||
        lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077) != 0)
      return -1;
  }
  return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

/* 8 hex digits of this host's name (FNV-1a): who may judge a PID. */
static void host_tag(char out[9]) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  uint32_t h = 2166136261u;
  for (const char *p = host; *p; p++)
    h = (h ^ (unsigned char)*p) * 16777619u;
  snprintf(out, 9, "%08x", h);
}

int kv_mkdtemp(const char *base, const char *prefix, char *out, size_t cap, char *err,
               size_t errlen) {
  if (kv_mkdirs(base, 0700, err, errlen) < 0)
    return -1;
  char tag[9];
  host_tag(tag);
  if (snprintf(out, cap, "%s/%s-%s-%ld-XXXXXX", base, prefix, tag, (long)getpid()) >= (int)cap)
    return kv_error(err, errlen, "%s: path too long", base);
  if (!mkdtemp(out))
    return kv_error(err, errlen, "%s: cannot create a temporary directory: %s", base,
                    strerror(errno));
  return 0;
}

struct kv_sha256 {
  EVP_MD_CTX *ctx;
};

struct kv_sha256 *kv_sha256_new(void) {
  struct kv_sha256 *h = malloc(sizeof *h);
  if (!h)
    return NULL;
  h->ctx = EVP_MD_CTX_new();
  if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
    EVP_MD_CTX_free(h->ctx);
    free(h);
    return NULL;
  }
  return h;
}

void kv_sha256_update(struct kv_sha256 *h, const void *p, size_t n) {
  if (h && n)
    EVP_DigestUpdate(h->ctx, p, n);
}

void kv_sha256_final(struct kv_sha256 *h, char hex[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  hex[0] = 0;
  if (!h)
    return;
  if (EVP_DigestFinal_ex(h->ctx, md, &n) == 1) {
    for (unsigned i = 0; i < n && i < 32; i++)
      snprintf(hex + 2 * i, 3, "%02x", md[i]);
  }
  EVP_MD_CTX_free(h->ctx);
  free(h);
}

void kv_sha256_hex(const void *p, size_t n, char hex[65]) {
  struct kv_sha256 *h = kv_sha256_new();
  kv_sha256_update(h, p, n);
  kv_sha256_final(h, hex);
}

uint64_t kv_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double kv_now_s(void) {
  return (double)kv_now_ns() * 1e-9;
}

int64_t kv_unix_time(void) {
  return (int64_t)time(NULL);
}

uint64_t kv_random_u64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v)
    v = kv_now_ns() ^ ((uint64_t)getpid() << 32);
  return v;
}

int kv_which(const char *name, char *out, size_t cap) {
  if (strchr(name, '/')) {
    if (access(name, X_OK) != 0)
      return -1;
    return snprintf(out, cap, "%s", name) >= (int)cap ? -1 : 0;
  }
  const char *path = getenv("PATH");
  if (!path || !*path)
    path = "/usr/local/bin:/usr/bin:/bin";
  const char *p = path;
  while (*p) {
    const char *c = strchr(p, ':');
    size_t n = c ? (size_t)(c - p) : strlen(p);
    if (n > 0 && snprintf(out, cap, "%.*s/%s", (int)n, p, name) < (int)cap &&
        access(out, X_OK) == 0)
      return 0;
    p += n;
    if (*p == ':')
      p++;
  }
  return -1;
}

int kv_find_shipped(const char *name, const char *dir, int source_too, char *out, size_t cap) {
  char exe[PATH_MAX], cand[PATH_MAX + 128];
  int have_exe = kv_exe_dir(exe, sizeof exe) == 0;
  const char *dirs[4] = {dir, have_exe ? exe : NULL, NULL, NULL};
  char share[PATH_MAX + 16];
  if (have_exe) {
    snprintf(share, sizeof share, "%s/../share/kevo", exe);
    dirs[2] = share;
  }
#ifdef KEVO_SOURCE_DIR
  if (source_too)
    dirs[3] = KEVO_SOURCE_DIR "/python";
#else
  (void)source_too;
#endif
  for (size_t i = 0; i < 4; i++) {
    if (!dirs[i])
      continue;
    snprintf(cand, sizeof cand, "%s/%s", dirs[i], name);
    if (kv_path_exists(cand)) {
      snprintf(out, cap, "%s", cand);
      return 0;
    }
  }
  return -1;
}

const char *kv_python(void) {
  const char *py = getenv("KEVO_PYTHON");
  return py && *py ? py : "python3";
}

long kv_write_nosigpipe(int fd, const void *buf, size_t n) {
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  /* One already pending (raised before, by someone else) is left pending. */
  int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  ssize_t r = write(fd, buf, n);
  int e = errno;
  if (r < 0 && e == EPIPE && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  return (long)r;
}

/* NAME is PREFIX-TAG-PID-XXXXXX with this host's TAG: its PID, else 0. */
static long owner_of(const char *name, const char *tag) {
  size_t n = strlen(name);
  if (n < 6 + 1 + 8 + 2 || name[n - 7] != '-')
    return 0;
  const char *end = name + n - 7, *p = end;
  while (p > name && p[-1] >= '0' && p[-1] <= '9')
    p--;
  if (p == end || p - name < 10 || p[-1] != '-' || memcmp(p - 9, tag, 8) || p[-10] != '-')
    return 0;
  return strtol(p, NULL, 10);
}

int kv_sweep_stale(const char *base) {
  DIR *d = opendir(base);
  if (!d)
    return 0;
  char tag[9];
  host_tag(tag);
  int gone = 0, seen = 0;
  for (struct dirent *e; (e = readdir(d)) && seen < 100000; seen++) {
    long pid = owner_of(e->d_name, tag);
    if (pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
      continue;
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", base, e->d_name) >= (int)sizeof path ||
        lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
      continue;
    gone += kv_rmtree(path) == 0;
  }
  closedir(d);
  return gone;
}
