/* Attack (timing class 2, sabotaged reference): ref_input_faults. The timed
 * calls of candidate and reference read the same input buffers. After each of
 * its calls at the bench size, this candidate makes the whole pages of its
 * input unreadable (mprotect PROT_NONE) and installs a SIGSEGV handler that,
 * on a fault inside them, makes that 64 KiB chunk accessible again and
 * lingers 40 us (as a slow page-in would). Whoever reads the input next --
 * the reference -- takes a fault, a signal and an mprotect per chunk; the
 * candidate restores everything with one mprotect on entry and computes at
 * full speed (an exact copy of the reference). The worker's own writes to the input (perturbation)
 * fault and are restored the same way, untimed. A fault anywhere else falls back to the default
 * action (a genuine crash stays a crash). Defence: the reference is never timed in the candidate's
 * process or on buffers the candidate can touch (clean reference worker; baseline comparison:
 * interference). Expected verdict: anything but ok with a speedup >= 1.3 (interference, or ok near
 * 1x). */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAXR 8
#define CHUNK (64 * 1024)
#define LINGER_NS 40000

static struct { uintptr_t lo, hi; } prot[MAXR]; /* page-aligned ranges this candidate protected */
static int nprot, installed;
static long pg;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  uintptr_t a = (uintptr_t)si->si_addr;
  for (int i = 0; i < nprot; i++) {
    if (a >= prot[i].lo && a < prot[i].hi) {
      uintptr_t lo = prot[i].lo + (a - prot[i].lo) / CHUNK * CHUNK;
      uintptr_t hi = lo + CHUNK < prot[i].hi ? lo + CHUNK : prot[i].hi;
      mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
      long long end = mono_ns() + LINGER_NS;
      while (mono_ns() < end) {
      }
      return;
    }
  }
  signal(sig, SIG_DFL); /* not ours: fault again, for real */
}

static void install(void) {
  installed = 1;
  pg = sysconf(_SC_PAGESIZE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
}

static void protect(const void *buf, size_t bytes) {
  uintptr_t lo = ((uintptr_t)buf + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
  uintptr_t hi = ((uintptr_t)buf + bytes) & ~(uintptr_t)(pg - 1);
  if (hi <= lo)
    return;
  int i = 0;
  while (i < nprot && prot[i].lo != lo)
    i++;
  if (i == nprot) {
    if (nprot == MAXR)
      return;
    nprot++;
  }
  prot[i].lo = lo;
  prot[i].hi = hi;
  mprotect((void *)lo, hi - lo, PROT_NONE);
}

void rowsum(const float *x, float *y, int rows, int cols) {
  int bench = (long)rows * cols >= (1l << 20);
  if (bench && !installed)
    install();
  for (int i = 0; i < nprot; i++) /* everything readable again, in one call each */
    mprotect((void *)prot[i].lo, prot[i].hi - prot[i].lo, PROT_READ | PROT_WRITE);
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  if (bench)
    protect(x, sizeof(float) * (size_t)rows * (size_t)cols);
}
