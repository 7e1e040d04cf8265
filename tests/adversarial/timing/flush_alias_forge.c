/* Attack (timing class 1, the gate's own overhead forged): flush_alias_forge.
 * A gate that bounds the candidate's reported call times by its own clock
 * around a batch of calls, less a per-call overhead (the cache flush, ...)
 * measured in a clean process, trusts that the overhead costs the same in
 * the candidate's process. This candidate makes it cheaper there and banks
 * the difference. It times the gap between its first two calls at the bench
 * size (the worker's flush between them), then maps a 1 MiB memfd over and
 * over the worker's flush buffer (the largest malloc chunk mapped on its own
 * that holds none of its arguments: see flush_alias), measures the gaps again
 * (the flush now costs a fraction), and hooks the worker's clock_gettime
 * through its GOT slot (as clock_got does) so that each of its calls is
 * reported shorter by 90% of the flush time saved, at most 60% of the call.
 * The parent's clock sees phases exactly as much shorter as the reports say,
 * so every bound it derives from a clean overhead holds. Today's gate, which
 * only checks that reported times fit in its clock, is fooled by the forgery
 * alone. The kernel is an exact copy of the reference (honest speedup 1x).
 * Defence: no time that decides a verdict comes from the candidate's process
 * (per-call times too); nothing that runs in the candidate's process is
 * subtracted as a constant measured elsewhere; the flush buffer (and the
 * worker's GOT) out of the candidate's reach.
 * Expected verdict: anything but ok with a speedup >= 1.3 (implausible, or ok
 * near 1x). */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WINDOW (1 << 20)

/* <link.h> hides these without _GNU_SOURCE, which the prototype's own
 * includes have already decided against: declared here (glibc's layout). */
struct dl_phdr_info {
  Elf64_Addr dlpi_addr;
  const char *dlpi_name;
  const Elf64_Phdr *dlpi_phdr;
  Elf64_Half dlpi_phnum;
};
int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock;
static volatile long long offset_ns; /* subtracted from every monotonic reading */
static int state;                    /* 0 not tried, 1 installed, -1 failed */

static int fake_clock(clockid_t id, struct timespec *ts) {
  int rc = real_clock(id, ts);
  if (rc == 0 && id == CLOCK_MONOTONIC && offset_ns > 0) {
    long long t = (long long)ts->tv_sec * 1000000000ll + ts->tv_nsec - offset_ns;
    ts->tv_sec = (time_t)(t / 1000000000ll);
    ts->tv_nsec = (long)(t % 1000000000ll);
  }
  return rc;
}

static Elf64_Addr at(Elf64_Addr base, Elf64_Addr p) {
  return p < base ? p + base : p; /* the loader may or may not have relocated d_ptr */
}

/* The slot of relocation table [rel, rel + size) that names `name`. */
static void **slot_in(Elf64_Addr base, const Elf64_Rela *rel, size_t size, const Elf64_Sym *sym,
                      const char *str, const char *name) {
  for (size_t i = 0; rel && i < size / sizeof *rel; i++) {
    size_t s = ELF64_R_SYM(rel[i].r_info);
    if (s && !strcmp(str + sym[s].st_name, name))
      return (void **)(base + rel[i].r_offset);
  }
  return NULL;
}

static int find_exe_slot(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  void ***out = data;
  if (*out)
    return 1;
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn)
    return 0;
  Elf64_Addr b = info->dlpi_addr, symtab = 0, strtab = 0, jmprel = 0, rela = 0;
  size_t pltsz = 0, relasz = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB)
      symtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB)
      strtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_JMPREL)
      jmprel = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_PLTRELSZ)
      pltsz = dyn->d_un.d_val;
    else if (dyn->d_tag == DT_RELA)
      rela = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_RELASZ)
      relasz = dyn->d_un.d_val;
  }
  if (!symtab || !strtab)
    return 1; /* the executable comes first: nothing further to look at */
  const Elf64_Sym *sym = (const Elf64_Sym *)symtab;
  const char *str = (const char *)strtab;
  void **s = slot_in(b, (const Elf64_Rela *)jmprel, pltsz, sym, str, "clock_gettime");
  if (!s)
    s = slot_in(b, (const Elf64_Rela *)rela, relasz, sym, str, "clock_gettime");
  *out = s;
  return 1;
}

static void install_hook(void) {
  void **slot = NULL;
  dl_iterate_phdr(find_exe_slot, &slot);
  if (!slot) {
    state = -1;
    return;
  }
  long pg = sysconf(_SC_PAGESIZE);
  void *page = (void *)((uintptr_t)slot & ~(uintptr_t)(pg - 1));
  if (mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) != 0) {
    state = -1;
    return;
  }
  clock_fn f = fake_clock;
  memcpy(slot, &f, sizeof f);
  state = 1;
}

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

static int alias_flush_buffer(const float *x, const float *y) {
  int aliased = 0;
  int fd = open("/proc/self/maps", O_RDONLY);
  if (fd < 0)
    return 0;
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
    return 0;
  int mfd = (int)syscall(SYS_memfd_create, "kevo-flush", 0u);
  if (mfd < 0)
    return 0;
  if (ftruncate(mfd, WINDOW) == 0) {
    aliased = 1;
    for (uintptr_t a = best + (uintptr_t)pg; a + WINDOW <= best + best_len; a += WINDOW)
      if (mmap((void *)a, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, mfd, 0) ==
          MAP_FAILED)
        aliased = 0;
  }
  close(mfd);
  return aliased;
}

/* Real time (the hook is bypassed: libc's clock through this object's GOT). */
static long long real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int bench_calls, aliased;
static long long last_exit, gap_before, gap_after;

void rowsum(const float *x, float *y, int rows, int cols) {
  int bench = (long)rows * cols >= (1l << 20);
  long long t0 = real_ns();
  if (bench) {
    long long gap = last_exit ? t0 - last_exit : 0;
    /* Gaps between calls of one batch: the flush, and a little bookkeeping.
     * Across batches the gap is long (other phases): ignored. */
    if (gap > 0 && gap < 200000000ll) {
      if (!aliased && (!gap_before || gap < gap_before))
        gap_before = gap;
      else if (aliased && (!gap_after || gap < gap_after))
        gap_after = gap;
    }
    if (bench_calls++ == 1) {
      aliased = alias_flush_buffer(x, y);
      real_clock = clock_gettime;
      install_hook();
    }
  }
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  long long t1 = real_ns();
  if (bench && state == 1 && gap_before && gap_after) {
    double saved = 0.9 * (double)(gap_before - gap_after), cap = 0.6 * (double)(t1 - t0);
    if (saved > 0)
      offset_ns += (long long)(saved < cap ? saved : cap);
  }
  last_exit = bench ? real_ns() : last_exit;
}
