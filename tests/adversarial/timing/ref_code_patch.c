/* Attack (timing class 2, sabotaged reference): ref_code_patch. On its first
 * call at the bench size it walks the loaded objects with dl_iterate_phdr,
 * finds every other kevo object (one that exports kevo_shim_call: the
 * reference, loaded into the same worker for timing), looks the entry up in
 * that object's dynamic symbol table (through its GNU or SysV hash table),
 * makes the page writable with mprotect and overwrites the first bytes of the
 * reference's kevo_shim_call with an absolute jump into slow_shim here, which
 * computes the right answer (the reference's own algorithm) and then spins
 * for twice as long. Patching the shim (what the worker calls) rather than
 * rowsum defeats inlining and immediate binding alike. The candidate itself
 * is an exact copy of the reference, so its own times are honest; the
 * reference's triple.
 * Defence: the reference is never timed in a process where candidate code has
 * run (clean reference worker; baseline comparison: interference); seccomp
 * refusing to make code writable (mprotect with PROT_WRITE|PROT_EXEC).
 * Expected verdict: anything but ok with a speedup >= 1.3 (interference;
 * crash when seccomp kills the mprotect; ok near 1x). */
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

static int state; /* 0 not tried, 1 patched, -1 nothing found */

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

/* The reference's shim, as the task's prototype generates it. */
static void slow_shim(void *const *args) {
  long long t0 = mono_ns();
  honest((const float *)args[0], (float *)args[1], *(const int *)args[2], *(const int *)args[3]);
  long long end = mono_ns() + 2 * (mono_ns() - t0);
  while (mono_ns() < end) {
  }
}

static Elf64_Addr at(Elf64_Addr base, Elf64_Addr p) {
  return p < base ? p + base : p;
}

/* Number of dynamic symbols, from DT_HASH or DT_GNU_HASH. */
static size_t symbol_count(const uint32_t *hash, const uint32_t *gnu) {
  if (hash)
    return hash[1];
  if (!gnu)
    return 0;
  uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom = gnu[2];
  const uint32_t *buckets = gnu + 4 + 2 * bloom; /* 64-bit bloom words */
  const uint32_t *chain = buckets + nbuckets;
  uint32_t last = 0;
  for (uint32_t i = 0; i < nbuckets; i++)
    if (buckets[i] > last)
      last = buckets[i];
  if (last < symoffset)
    return symoffset;
  while (!(chain[last - symoffset] & 1))
    last++;
  return (size_t)last + 1;
}

static int patch_code(unsigned char *f) {
#if defined(__x86_64__)
  static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (!memcmp(f, endbr64, 4))
    f += 4;
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)f & ~(uintptr_t)(pg - 1);
  uintptr_t hi = ((uintptr_t)f + 14 + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return -1;
  unsigned char code[14] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip); .quad slow_shim */
  uintptr_t h = (uintptr_t)slow_shim;
  memcpy(code + 6, &h, 8);
  memcpy(f, code, sizeof code);
  mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
  return 0;
#else
  (void)f;
  return -1;
#endif
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

static int patch_other(struct dl_phdr_info *info, size_t size, void *data) {
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
  Elf64_Addr b = info->dlpi_addr, symtab = 0, strtab = 0, hash = 0, gnu = 0;
  for (; dyn->d_tag != DT_NULL; dyn++) {
    if (dyn->d_tag == DT_SYMTAB)
      symtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_STRTAB)
      strtab = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_HASH)
      hash = at(b, dyn->d_un.d_ptr);
    else if (dyn->d_tag == DT_GNU_HASH)
      gnu = at(b, dyn->d_un.d_ptr);
  }
  if (!symtab || !strtab)
    return 0;
  const Elf64_Sym *sym = (const Elf64_Sym *)symtab;
  size_t n = symbol_count((const uint32_t *)hash, (const uint32_t *)gnu);
  for (size_t i = 1; i < n; i++) {
    if (sym[i].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC ||
        strcmp((const char *)strtab + sym[i].st_name, "kevo_shim_call") != 0)
      continue;
    if (patch_code((unsigned char *)(b + sym[i].st_value)) == 0)
      state = 1;
  }
  return 0;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20)) {
    state = -1;
    dl_iterate_phdr(patch_other, NULL);
  }
  honest(x, y, rows, cols);
}
