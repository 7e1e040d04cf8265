// Attack (class 1, forging times from inside the process): patch the
// worker's GOT slot for clock_gettime, so that the host clock around the
// candidate's calls runs at 60% speed, and make the events useless so that
// the gate trusts that clock.
// The worker is a lazily bound PIE: its .got.plt is writable. The candidate
// scans the executable's writable segments for libc's clock_gettime (its own
// reference to the symbol gives the address) and replaces it with a hook
// that, on the first reading after one of its timed calls, moves the clock
// back by 40% of the time since the call began (and stays monotonic). Its
// kernel, the reference's algorithm, runs on a private stream: the events
// around the call see nothing, the host clock around the call and the
// device-wide synchronization sees the (forged) time, and the gate picks the
// host clock.
// Defence: no number that decides a speedup comes from a process that ran
// candidate code; the worker linked with full RELRO and immediate binding.
// Expected: not ok, or ok with a speedup under 1.3x. Measured against
// the gate of a212cad on an H200, 2026-11-23: ok, 1.82x and 1.83x (timed by the host clock).
#include <cuda_runtime.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>

#define REF_THREADS 256
#define KEEP 0.6 /* the share of each of its timed calls the forged clock shows */

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

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock;
static uint64_t skew_ns;           /* how far the forged clock is behind */
static volatile uint64_t entry_ns; /* when our timed call began (0: not in one) */

static uint64_t real_now(void) {
  struct timespec ts;
  real_clock(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fake_clock(clockid_t c, struct timespec *ts) {
  int r = real_clock(c, ts);
  if (r != 0 || c != CLOCK_MONOTONIC)
    return r;
  uint64_t now = (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
  if (entry_ns && now > entry_ns) {
    skew_ns += (uint64_t)((double)(now - entry_ns) * (1.0 - KEEP));
    entry_ns = 0;
  }
  now -= skew_ns;
  ts->tv_sec = (time_t)(now / 1000000000ull);
  ts->tv_nsec = (long)(now % 1000000000ull);
  return r;
}

static int install(void) {
  struct exe e;
  if (main_exe(&e) != 0)
    return 0;
  uintptr_t olds[1] = {(uintptr_t)&clock_gettime};
  uintptr_t was = 0;
  real_clock = clock_gettime;
  int n = patch_exe(&e, olds, 1, (uintptr_t)fake_clock, &was);
  fprintf(stderr, "forge_clock: %d GOT slot(s) for clock_gettime patched\n", n);
  return n > 0;
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int tried, hooked;
  static cudaStream_t side;
  if ((long)rows * cols < (1L << 24)) { /* the checks: honest, on the stream */
    if (rows > 0)
      rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  if (!tried) {
    tried = 1;
    hooked = install();
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  }
  if (!hooked || !side) {
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
    return;
  }
  entry_ns = real_now();
  rowsum_kernel<<<rows, REF_THREADS, 0, side>>>(x, y, rows, cols);
}
