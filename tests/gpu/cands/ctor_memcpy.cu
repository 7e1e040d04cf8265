// Attack (issue 28, a constructor): the worker's cuMemcpyDtoH entry
// rewritten before the worker is sealed.
// A constructor (it runs when the worker loads the object, before the
// worker seals itself against changes to its code and tables) finds the
// genuine cuMemcpyDtoH_v2 (the loader's link map, from the executable's
// DT_DEBUG entry, to libcuda.so.1 and its GNU hash table; and the CUDA
// runtime's cudaGetDriverEntryPointByVersion), finds the slots of the
// worker's driver table that hold it (the executable's writable segments,
// read-only at run time: made writable again) and puts a hook there. Every
// call computes only the first third of the rows (the reference's algorithm)
// and remembers the rest as owed; the hook computes everything owed, waits
// for the GPU, and only then copies: whatever the worker copies back (a
// check's outputs, a validated timed call's) is complete, while the timed
// calls do a third of the work.
// Defence: the candidate's process copies nothing a verdict rests on: the
// clean worker owns the buffers and reads them in its own context.
// Expected: unwritten_output (the checks: two thirds of y still poisoned),
// or anything but ok at 1.3x or more. With KEVO_NO_LEND=1 (the old path):
// ok, about 3x.
#include <cuda_runtime.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define REF_THREADS 256
#define SHARE 3 /* a call computes 1/SHARE of the rows */

/* Rows r0 + blockIdx.x, the reference's algorithm. */
static __global__ void rows_kernel(const float *x, float *y, int r0, int cols) {
  __shared__ double part[REF_THREADS];
  int r = r0 + blockIdx.x;
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

/* ---- what is owed ---- */

static struct owed {
  const float *x;
  float *y;
  int r0, rows, cols;
} owed[4096];
static int nowed;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void owe(const float *x, float *y, int r0, int rows, int cols) {
  pthread_mutex_lock(&mu);
  int i = 0;
  while (i < nowed && owed[i].y != y)
    i++;
  if (i < 4096) {
    owed[i] = (struct owed){x, y, r0, rows, cols};
    nowed += i == nowed;
  }
  pthread_mutex_unlock(&mu);
}

static void pay_all(void) {
  pthread_mutex_lock(&mu);
  int n = nowed;
  for (int i = 0; i < nowed; i++)
    rows_kernel<<<owed[i].rows - owed[i].r0, REF_THREADS>>>(owed[i].x, owed[i].y, owed[i].r0,
                                                           owed[i].cols);
  nowed = 0;
  pthread_mutex_unlock(&mu);
  if (n)
    cudaDeviceSynchronize();
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
  const uint32_t *gnu = NULL;
  for (const Elf64_Dyn *d = l->l_ld; d && d->d_tag != DT_NULL; d++) {
    if (d->d_tag == DT_SYMTAB)
      sym = (const Elf64_Sym *)dynptr(l, d->d_un.d_ptr);
    else if (d->d_tag == DT_STRTAB)
      str = (const char *)dynptr(l, d->d_un.d_ptr);
    else if (d->d_tag == DT_GNU_HASH)
      gnu = (const uint32_t *)dynptr(l, d->d_un.d_ptr);
  }
  if (!sym || !str || !gnu)
    return NULL;
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
    if ((h | 1) == (h2 | 1) && sym[i].st_shndx != SHN_UNDEF && !strcmp(str + sym[i].st_name, name))
      return (void *)(l->l_addr + sym[i].st_value);
    if (h2 & 1)
      return NULL;
  }
}

/* Every 8-byte slot of the executable's writable segments that holds one
 * of olds[] gets neu (its page made writable first); *was the old value. */
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

typedef int (*dtoh_fn)(void *, unsigned long long, size_t);
static dtoh_fn real_dtoh;

static int hook_dtoh(void *dst, unsigned long long src, size_t n) {
  pay_all();
  return real_dtoh(dst, src, n);
}

__attribute__((constructor)) static void install(void) {
  struct exe e;
  if (main_exe(&e) != 0)
    return;
  uintptr_t olds[3] = {0, 0, 0};
  for (struct link_map *l = link_maps(&e); l; l = l->l_next)
    if (l->l_name && strstr(l->l_name, "libcuda.so")) {
      olds[0] = (uintptr_t)elf_lookup(l, "cuMemcpyDtoH_v2");
      break;
    }
  void *p = NULL;
  cudaDriverEntryPointQueryResult q;
  if (cudaGetDriverEntryPointByVersion("cuMemcpyDtoH", &p, 13000, cudaEnableDefault, &q) ==
      cudaSuccess)
    olds[1] = (uintptr_t)p;
  if (cudaGetDriverEntryPointByVersion("cuMemcpyDtoH", &p, 12000, cudaEnableDefault, &q) ==
      cudaSuccess)
    olds[2] = (uintptr_t)p;
  for (int j = 0; j < 3 && !real_dtoh; j++)
    if (olds[j])
      real_dtoh = (dtoh_fn)olds[j];
  uintptr_t was = 0;
  int n = real_dtoh ? patch_exe(&e, olds, 3, (uintptr_t)hook_dtoh, &was) : 0;
  if (n > 0 && was)
    real_dtoh = (dtoh_fn)was;
  fprintf(stderr, "ctor_memcpy: %d slot(s) of the worker's driver table patched\n", n);
  cudaGetLastError();
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  int now = rows / SHARE;
  if (now > 0)
    rows_kernel<<<now, REF_THREADS, 0, stream>>>(x, y, 0, cols);
  if (now < rows)
    owe(x, y, now, rows, cols);
}
