/* Attack (timing class 1, forged clock): clock_skew_median. Hooks the
 * worker's clock_gettime exactly as clock_got does (its GOT slot, found
 * through dl_iterate_phdr and the executable's relocations), but forges the
 * distribution rather than the total: on three calls out of four the worker's
 * clock is held back by 60% of the call's duration, and on the fourth all
 * the time held back is given back at once. Every reading is monotonic, the
 * sum of the candidate's reported times equals the real sum (so any check of
 * the total against the parent's clock passes), and the time claimed never
 * exceeds the wall time -- but three quarters of the calls look 2.5x faster,
 * so the median does too. The kernel is an exact copy of the reference
 * (honest speedup 1x).
 * Defence: per-call (or per-window) candidate times from a clock outside the
 * candidate, not just a bound on the sum; a median of worker-reported times
 * is never trusted because their total is right.
 * Expected verdict: anything but ok with a speedup >= 1.3 (implausible, or ok
 * near 1x). */
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define FACTOR 2.5
#define PERIOD 4

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
static long calls;
static int state; /* 0 not tried, 1 installed, -1 failed */

static long long mono_ns(void) {
  struct timespec ts;
  real_clock(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

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

static void install(void) {
  real_clock = clock_gettime; /* libc's, through this object's own GOT */
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

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20))
    install();
  long long t0 = state == 1 ? mono_ns() : 0;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (state == 1) {
    if (++calls % PERIOD)
      offset_ns += (long long)((double)(mono_ns() - t0) * (1.0 - 1.0 / FACTOR));
    else
      offset_ns = 0; /* everything held back is given back on this call */
  }
}
