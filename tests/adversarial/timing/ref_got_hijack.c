/* Attack (timing class 2, sabotaged reference): ref_got_hijack. On its first
 * call at the bench size it walks the loaded objects with dl_iterate_phdr and
 * finds every other kevo object (one whose PLT relocations name the task's
 * entry, rowsum) -- the reference, loaded into the same worker for timing.
 * The reference's call shim reaches rowsum through its own GOT, which the
 * loader left writable (partial RELRO): the candidate points that slot at
 * its own slow_rowsum, which computes the right answer (the reference's own
 * algorithm) and then spins for twice as long as that took. No mprotect, no
 * code written. The candidate itself is an exact copy of the reference, so its
 * own times are honest; the reference's triple.
 * Defence: the reference is never timed in a process where candidate code has
 * run (its times come from the clean reference worker, compared with a
 * baseline: interference); objects linked with full RELRO and immediate
 * binding.
 * Expected verdict: anything but ok with a speedup >= 1.3 (interference, or ok
 * near 1x). */
#include <elf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* <link.h> hides these without _GNU_SOURCE (glibc's layout). */
struct dl_phdr_info {
  Elf64_Addr dlpi_addr;
  const char *dlpi_name;
  const Elf64_Phdr *dlpi_phdr;
  Elf64_Half dlpi_phnum;
};
int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data);

static int state; /* 0 not tried, 1 hijacked, -1 nothing found */

static void honest(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void slow_rowsum(const float *x, float *y, int rows, int cols) {
  long long t0 = mono_ns();
  honest(x, y, rows, cols);
  long long end = mono_ns() + 2 * (mono_ns() - t0);
  while (mono_ns() < end) {
  }
}

static Elf64_Addr at(Elf64_Addr base, Elf64_Addr p) {
  return p < base ? p + base : p;
}

static int is_mine(struct dl_phdr_info *info) {
  uintptr_t me = (uintptr_t)honest;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const Elf64_Phdr *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && me >= lo && me < lo + p->p_memsz)
      return 1;
  }
  return 0;
}

static int hijack(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  (void)data;
  if (!info->dlpi_name || !info->dlpi_name[0] || is_mine(info))
    return 0;
  const Elf64_Dyn *dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const Elf64_Dyn *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn)
    return 0;
  Elf64_Addr b = info->dlpi_addr, symtab = 0, strtab = 0, jmprel = 0;
  size_t pltsz = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB)
      symtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB)
      strtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_JMPREL)
      jmprel = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_PLTRELSZ)
      pltsz = dyn->d_un.d_val;
  }
  if (!symtab || !strtab || !jmprel)
    return 0;
  const Elf64_Sym *sym = (const Elf64_Sym *)symtab;
  const Elf64_Rela *rel = (const Elf64_Rela *)jmprel;
  long pg = sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < pltsz / sizeof *rel; i++) {
    size_t s = ELF64_R_SYM(rel[i].r_info);
    if (!s || strcmp((const char *)strtab + sym[s].st_name, "rowsum") != 0)
      continue;
    void **slot = (void **)(b + rel[i].r_offset);
    uintptr_t page = (uintptr_t)slot & ~(uintptr_t)(pg - 1);
    /* Writable already under partial RELRO; full RELRO needs the mprotect. */
    if (mprotect((void *)page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
      continue;
    void (*f)(const float *, float *, int, int) = slow_rowsum;
    memcpy(slot, &f, sizeof f);
    state = 1;
  }
  return 0;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20)) {
    state = -1;
    dl_iterate_phdr(hijack, NULL);
  }
  honest(x, y, rows, cols);
}
