/* Attack (timing class 1, forged clock): clock_vdso. Leaves the worker's GOT
 * and libc's code alone and goes for the vDSO, through which libc reads the
 * clock without a system call. The vDSO's clock_gettime is found through
 * getauxval(AT_SYSINFO_EHDR) and the vDSO's own dynamic symbol table; first
 * the candidate tries to patch its code (kernels that let a process write its
 * private copy of the vDSO, as debuggers do); where the kernel refuses
 * (sealed system mappings: mprotect fails), it redirects libc's pointer to it
 * instead: the dynamic loader keeps that pointer in its read-only-after-
 * relocation data (PT_GNU_RELRO), which the candidate scans for the vDSO
 * address, makes writable again with mprotect and overwrites with a hook.
 * The hook reads the real time with a raw system call and runs
 * CLOCK_MONOTONIC slow by 60% of each of the candidate's own calls. The
 * kernel is an exact copy of the reference (honest speedup 1x, forged 2.5x).
 * Defence: the parent's clock bounds every candidate time from below and
 * above; seccomp refusing mprotect that makes code or relocated data
 * writable again.
 * Expected verdict: anything but ok with a speedup >= 1.3 (implausible; crash
 * when seccomp kills the mprotect; ok near 1x when every write is refused). */
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FACTOR 2.5

/* <link.h> hides these without _GNU_SOURCE (glibc's layout). */
struct dl_phdr_info {
  Elf64_Addr dlpi_addr;
  const char *dlpi_name;
  const Elf64_Phdr *dlpi_phdr;
  Elf64_Half dlpi_phnum;
};
int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

static volatile long long offset_ns;
static int state; /* 0 not tried, 1 installed, -1 failed */

static long long raw_mono_ns(void) {
  struct timespec ts;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int hook(clockid_t id, struct timespec *ts) {
  if (syscall(SYS_clock_gettime, id, ts) != 0)
    return -1;
  if (id == CLOCK_MONOTONIC && offset_ns > 0) {
    long long t = (long long)ts->tv_sec * 1000000000ll + ts->tv_nsec - offset_ns;
    ts->tv_sec = (time_t)(t / 1000000000ll);
    ts->tv_nsec = (long)(t % 1000000000ll);
  }
  return 0;
}

/* The vDSO's clock_gettime, from its dynamic symbol table (DT_HASH or the
 * section that follows .dynsym gives the count). */
static unsigned char *vdso_symbol(const char *name) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
  if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    return NULL;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
  uintptr_t base = (uintptr_t)eh, load = 0;
  const Elf64_Dyn *dyn = NULL;
  int have_load = 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type == PT_LOAD && !have_load) {
      load = (uintptr_t)ph[i].p_vaddr - ph[i].p_offset;
      have_load = 1;
    }
  }
  uintptr_t bias = base - load;
  for (int i = 0; i < eh->e_phnum; i++)
    if (ph[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(bias + ph[i].p_vaddr);
  if (!dyn)
    return NULL;
  const Elf64_Sym *sym = NULL;
  const char *str = NULL;
  const uint32_t *hash = NULL;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB)
      sym = (const Elf64_Sym *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB)
      str = (const char *)(bias + dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH)
      hash = (const uint32_t *)(bias + dyn->d_un.d_ptr);
  }
  if (!sym || !str)
    return NULL;
  size_t n = hash ? hash[1] : (size_t)((const char *)str - (const char *)sym) / sizeof *sym;
  for (size_t i = 1; i < n; i++)
    if (sym[i].st_value && ELF64_ST_TYPE(sym[i].st_info) == STT_FUNC &&
        !strcmp(str + sym[i].st_name, name))
      return (unsigned char *)(bias + sym[i].st_value);
  return NULL;
}

static int patch(unsigned char *f) {
#if defined(__x86_64__)
  static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (!memcmp(f, endbr64, 4))
    f += 4;
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)f & ~(uintptr_t)(pg - 1);
  uintptr_t hi = ((uintptr_t)f + 14 + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return -1;
  unsigned char code[14] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip); .quad hook */
  uintptr_t h = (uintptr_t)hook;
  memcpy(code + 6, &h, 8);
  memcpy(f, code, sizeof code);
  mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
  return 0;
#else
  (void)f;
  return -1;
#endif
}

/* Every pointer-sized word equal to the vDSO entry inside a PT_GNU_RELRO
 * segment (the dynamic loader's, where libc's vDSO pointers live) is
 * replaced by the hook. */
static uintptr_t vdso_entry;
static int redirected;

static int redirect(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  long pg = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const Elf64_Phdr *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_GNU_RELRO)
      continue;
    uintptr_t lo = (info->dlpi_addr + p->p_vaddr + 7) & ~(uintptr_t)7;
    uintptr_t hi = info->dlpi_addr + p->p_vaddr + p->p_memsz;
    for (uintptr_t a = lo; a + 8 <= hi; a += 8) {
      if (*(const uintptr_t *)a != vdso_entry)
        continue;
      uintptr_t page = a & ~(uintptr_t)(pg - 1);
      if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
        continue;
      uintptr_t h = (uintptr_t)hook;
      memcpy((void *)a, &h, sizeof h);
      mprotect((void *)page, (size_t)pg, PROT_READ);
      redirected++;
    }
  }
  return 0;
}

static void install(void) {
  state = -1;
  unsigned char *a = vdso_symbol("__vdso_clock_gettime");
  unsigned char *b = vdso_symbol("clock_gettime");
  if (!a)
    a = b;
  if (!a)
    return;
  if (patch(a) == 0) {
    state = 1;
    return;
  }
  vdso_entry = (uintptr_t)a;
  dl_iterate_phdr(redirect, NULL);
  if (!redirected && b && b != a) {
    vdso_entry = (uintptr_t)b;
    dl_iterate_phdr(redirect, NULL);
  }
  if (redirected)
    state = 1;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20))
    install();
  long long t0 = state == 1 ? raw_mono_ns() : 0;
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (state == 1)
    offset_ns += (long long)((double)(raw_mono_ns() - t0) * (1.0 - 1.0 / FACTOR));
}
