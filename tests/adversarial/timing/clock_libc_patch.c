/* Attack (timing class 1, forged clock): clock_libc_patch. Patches the code of
 * libc's clock_gettime in this process: its first instructions become an
 * absolute jump into this candidate, which reads the real time with a raw
 * clock_gettime system call and subtracts a running offset from
 * CLOCK_MONOTONIC. After each of its own calls the offset grows by 40% of the
 * call's duration, so the worker (whichever way it reaches clock_gettime: GOT,
 * direct call, immediate binding, full RELRO) times the candidate at 0.6 of
 * its real length and the reference at its true length. A subtle factor
 * (1.67x) that a loose lower bound would let through. The kernel is an exact
 * copy of the reference (honest speedup 1x).
 * Defence: the parent's clock bounds every candidate time from below, tightly
 * enough for a 1.25x forgery; seccomp refusing writable+executable mappings
 * (mprotect/mmap with PROT_WRITE|PROT_EXEC) stops the patch itself.
 * Expected verdict: anything but ok with a speedup >= 1.3 (implausible; crash
 * when seccomp kills the mprotect; ok near 1x when the patch is refused). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FACTOR 1.67

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

static void install(void) {
  state = -1;
#if defined(__x86_64__)
  unsigned char *f = (unsigned char *)(uintptr_t)clock_gettime; /* libc's entry */
  static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (!memcmp(f, endbr64, 4))
    f += 4; /* keep the landing pad for indirect branches */
  long pg = sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)f & ~(uintptr_t)(pg - 1);
  uintptr_t hi = ((uintptr_t)f + 14 + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
  if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
    return;
  /* jmp *0(%rip); .quad hook */
  unsigned char code[14] = {0xff, 0x25, 0, 0, 0, 0};
  uintptr_t h = (uintptr_t)hook;
  memcpy(code + 6, &h, 8);
  memcpy(f, code, sizeof code);
  mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC);
  state = 1;
#endif
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
