// Attack (class 1, forging times from inside the process): rewrite the
// worker's driver function table so that cuEventElapsedTime reports 65% of
// the candidate's real event time.
// The worker keeps the driver entry points it looked up in libcuda.so.1 in a
// table in its own writable data. The candidate finds the genuine address of
// cuEventElapsedTime(_v2) without dlsym (by walking the loader's link map
// from the executable's DT_DEBUG entry to libcuda.so.1 and looking the name
// up in its GNU hash table, and through the CUDA runtime's
// cudaGetDriverEntryPointByVersion), scans the executable's writable
// segments for that value and overwrites it with a hook. Its kernel is the
// reference's algorithm, so an honest measurement gives about 1x; the hook
// shrinks only the elapsed times read right after one of its own calls.
// Defence: no number that decides a speedup comes from a process that ran
// candidate code (the parent's clock bounds every candidate time from below).
// Expected: not ok, or ok with a speedup under 1.3x. Measured against
// the gate of a212cad on an H200, 2026-11-23: ok, 1.54x twice.
#include <cuda_runtime.h>
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define REF_THREADS 256
#define SCALE 0.65f

static __global__ void rowsum_kernel(const float *x, float *y, int rows, int cols) {
  __shared__ double part[REF_THREADS];
  int r = blockIdx.x;
  const float *xr = x + (size_t)r * (size_t)cols;
  double s = 0.0;
  for (int c = threadIdx.x; c < cols; c += REF_THREADS)
    s += (double)xr[c];
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = REF_THREADS / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    y[r] = (float)part[0];
}

/* ---- the process's own ELF images, read in memory (no dlsym) ---- */

static long raw3(long n, long a, long b, long c) {
  long r;
  asm volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return r;
}

struct exe {
  uintptr_t base;
  const Elf64_Phdr *ph;
  int nph;
};

static int main_exe(struct exe *e) {
  e->ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
  e->nph = (int)getauxval(AT_PHNUM);
  if (!e->ph || e->nph <= 0)
    return -1;
  for (int i = 0; i < e->nph; i++)
    if (e->ph[i].p_type == PT_PHDR) {
      e->base = (uintptr_t)e->ph - e->ph[i].p_vaddr;
      return 0;
    }
  return -1;
}

static struct link_map *link_maps(const struct exe *e) {
  for (int i = 0; i < e->nph; i++) {
    if (e->ph[i].p_type != PT_DYNAMIC)
      continue;
    for (const Elf64_Dyn *d = (const Elf64_Dyn *)(e->base + e->ph[i].p_vaddr); d->d_tag != DT_NULL;
         d++)
      if (d->d_tag == DT_DEBUG && d->d_un.d_ptr)
        return ((struct r_debug *)d->d_un.d_ptr)->r_map;
  }
  return NULL;
}

static uintptr_t dynptr(const struct link_map *l, uintptr_t v) {
  return v < l->l_addr ? v + l->l_addr : v;
}

static void *elf_lookup(const struct link_map *l, const char *name) {
  const Elf64_Sym *sym = NULL;
  const char *str = NULL;
  const uint32_t *gnu = NULL, *sysv = NULL;
  for (const Elf64_Dyn *d = l->l_ld; d && d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SYMTAB)
      sym = (const Elf64_Sym *)dynptr(l, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRTAB)
      str = (const char *)dynptr(l, d->d_un.d_ptr);
    else if (d->d_tag == DT_GNU_HASH)
      gnu = (const uint32_t *)dynptr(l, d->d_un.d_ptr);
    else if (d->d_tag == DT_HASH)
      sysv = (const uint32_t *)dynptr(l, d->d_un.d_ptr);
  }
  if (!sym || !str)
    return NULL;
  if (gnu) {
    uint32_t nb = gnu[0], off = gnu[1], nbloom = gnu[2];
    const uint32_t *buckets = gnu + 4 + 2 * nbloom, *chain = buckets + nb;
    uint32_t h = 5381;
    for (const char *s = name; *s; s++)
      h = h * 33 + (uint8_t)*s;
    uint32_t i = nb ? buckets[h % nb] : 0;
    if (i < off)
      return NULL;
    for (;; i++) {
      uint32_t h2 = chain[i - off];
      if ((h | 1) == (h2 | 1) && sym[i].st_shndx != SHN_UNDEF &&
          !strcmp(str + sym[i].st_name, name))
        return (void *)(l->l_addr + sym[i].st_value);
      if (h2 & 1)
        return NULL;
    }
  }
  if (sysv)
    for (uint32_t i = 0; i < sysv[1]; i++)
      if (sym[i].st_name && sym[i].st_shndx != SHN_UNDEF && !strcmp(str + sym[i].st_name, name))
        return (void *)(l->l_addr + sym[i].st_value);
  return NULL;
}

/* Overwrites every 8-byte slot of the executable's writable segments that
 * holds one of olds[] with neu; *was gets the old value. */
static int patch_exe(const struct exe *e, const uintptr_t *olds, int nold, uintptr_t neu,
                     uintptr_t *was) {
  int n = 0;
  for (int i = 0; i < e->nph; i++) {
    const Elf64_Phdr *p = &e->ph[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_W))
      continue;
    uintptr_t a = (e->base + p->p_vaddr + 7) & ~(uintptr_t)7,
              end = e->base + p->p_vaddr + p->p_memsz;
    for (; a + 8 <= end; a += 8) {
      uintptr_t v = *(volatile uintptr_t *)a;
      for (int j = 0; j < nold; j++) {
        if (!olds[j] || v != olds[j])
          continue;
        *was = v;
        raw3(SYS_mprotect, (long)(a & ~(uintptr_t)4095), 4096, PROT_READ | PROT_WRITE);
        *(volatile uintptr_t *)a = neu;
        n++;
        break;
      }
    }
  }
  return n;
}

/* ---- the hook ---- */

typedef int (*elapsed_fn)(float *, void *, void *);
static elapsed_fn real_elapsed;
static volatile int mine; /* the last call the worker made was ours */

static int fake_elapsed(float *ms, void *a, void *b) {
  int r = real_elapsed(ms, a, b);
  if (r == 0 && mine && ms)
    *ms *= SCALE;
  mine = 0;
  return r;
}

static void install(void) {
  struct exe e;
  if (main_exe(&e) != 0)
    return;
  uintptr_t olds[4] = {0, 0, 0, 0};
  for (struct link_map *l = link_maps(&e); l; l = l->l_next)
    if (l->l_name && strstr(l->l_name, "libcuda.so")) {
      olds[0] = (uintptr_t)elf_lookup(l, "cuEventElapsedTime_v2");
      olds[1] = (uintptr_t)elf_lookup(l, "cuEventElapsedTime");
      break;
    }
  void *p = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuEventElapsedTime", &p, 13000, cudaEnableDefault, &q) ==
      cudaSuccess)
    olds[2] = (uintptr_t)p;
  if (cudaGetDriverEntryPointByVersion("cuEventElapsedTime", &p, 12000, cudaEnableDefault, &q) ==
      cudaSuccess)
    olds[3] = (uintptr_t)p;
  uintptr_t was = 0;
  /* The hook must be able to call the original before it is reachable. */
  for (int j = 0; j < 4 && !real_elapsed; j++)
    if (olds[j])
      real_elapsed = (elapsed_fn)olds[j];
  int n = patch_exe(&e, olds, 4, (uintptr_t)fake_elapsed, &was);
  if (n > 0 && was)
    real_elapsed = (elapsed_fn)was;
  fprintf(stderr, "forge_elapsed: %d slot(s) of the worker's driver table patched\n", n);
  cudaGetLastError();
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int tried;
  if (!tried) {
    tried = 1;
    install();
  }
  mine = 1;
  if (rows > 0)
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
