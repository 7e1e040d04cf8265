/* Attack (timing class 1, the gate's own overhead forged): flush_alias. The
 * worker flushes the last-level cache before every timed call by writing a
 * buffer of twice its size, in the candidate's process. On its first call at
 * the bench size this candidate finds that buffer -- walking the malloc
 * chunks that glibc maps on their own (header: size with IS_MMAPPED) through
 * the anonymous mappings of /proc/self/maps, it takes the largest one that
 * holds none of its own arguments -- and maps one 1 MiB memfd over it again
 * and again (MAP_SHARED | MAP_FIXED, header page left alone): the flush now writes 1 MiB of
 * physical memory that stays in the cache, costs a fraction of its time, and evicts nothing. Today
 * both sides share the process and the flush, so both run with warm inputs and nothing is gained:
 * recorded as not fooling today's gate. It targets a design that times the candidate by the
 * parent's clock around a job and subtracts per-call overheads (flush, poison, perturbation)
 * measured in a clean process: every overhead that runs in the candidate's
 * process can be made cheaper there, and the difference would be counted as
 * the candidate's speed (and its inputs would be warm while the reference's
 * are cold). The kernel is an exact copy of the reference.
 * Defence: nothing that runs in the candidate's process is subtracted as a
 * constant measured elsewhere (or: overheads measured in the same process,
 * bracketing the same calls); the flush's buffer out of the candidate's
 * reach.
 * Expected verdict: anything but ok with a speedup >= 1.3 (ok near 1x). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WINDOW (1 << 20)

static int state; /* 0 not tried, 1 aliased, -1 not found */

static int holds(uintptr_t lo, uintptr_t hi, const void *p) {
  return (uintptr_t)p >= lo && (uintptr_t)p < hi;
}

/* The malloc chunk mapped on its own that starts at page p, if any: glibc
 * puts its header (prev_size, size | IS_MMAPPED) at the start of the mapping,
 * or 48 bytes in for a 64-byte aligned allocation (prev_size = 48). */
static size_t chunk_at(uintptr_t p, uintptr_t hi, long pg) {
  const size_t *h = (const size_t *)p;
  for (int lead = 0; lead <= 48; lead += 48) {
    if (lead && h[lead / 8] != (size_t)lead)
      continue;
    size_t sz = h[lead / 8 + 1];
    size_t len = (sz & ~(size_t)7) + (size_t)lead;
    if ((sz & 2) && len >= (1u << 20) && len % (size_t)pg == 0 && p + len <= hi)
      return len;
  }
  return 0;
}

static void alias_flush_buffer(const float *x, const float *y) {
  state = -1;
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0)
    return;
  static char buf[1 << 16];
  size_t n = 0;
  ssize_t k;
  while (n < sizeof buf - 1 && (k = read(fd, buf + n, sizeof buf - 1 - n)) > 0)
    n += (size_t)k;
  close(fd);
  buf[n] = 0;
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t best = 0;
  size_t best_len = 0;
  for (char *line = buf; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = 0;
    unsigned long lo, hi, off, inode;
    char perms[8];
    unsigned maj, min;
    if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &lo, &hi, perms, &off, &maj, &min, &inode) == 7 &&
        inode == 0 && !strncmp(perms, "rw-p", 4) && !strchr(line, '[') && hi - lo >= (8ul << 20)) {
      for (uintptr_t p = lo; p < hi;) {
        size_t len = chunk_at(p, hi, pg);
        if (!len) {
          p += (uintptr_t)pg;
          continue;
        }
        if (len > best_len && !holds(p, p + len, x) && !holds(p, p + len, y)) {
          best = p;
          best_len = len;
        }
        p += len;
      }
    }
    line = nl ? nl + 1 : NULL;
  }
  if (best_len < (4u << 20))
    return;
  int mfd = (int)syscall(SYS_memfd_create, "kevo-flush", 0u);
  if (mfd < 0)
    return;
  if (ftruncate(mfd, WINDOW) == 0) {
    state = 1;
    for (uintptr_t a = best + (uintptr_t)pg; a + WINDOW <= best + best_len; a += WINDOW)
      if (mmap((void *)a, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mfd, 0) ==
          MAP_FAILED)
        state = -1;
  }
  close(mfd);
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20))
    alias_flush_buffer(x, y);
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
