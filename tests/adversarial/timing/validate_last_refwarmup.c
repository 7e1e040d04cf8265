/* Attack (timing class 3, what is validated): validate_last_refwarmup. Like
 * validate_last_sleep, but the candidate's own calls never look slow: it
 * inflates the *reference's* second warm-up call instead, from which (with
 * its own) the worker sizes the timed loop. After its second warm-up call at
 * the bench size it makes the input pages unreadable (mprotect PROT_NONE)
 * with a one-shot SIGSEGV handler; the next reader, the reference's warm-up
 * call on the same inputs, faults, and the handler sleeps 0.5 s, restores the
 * pages and removes itself. The loop shrinks to the minimum (n = 5), only
 * the fifth timed call is validated, and the candidate does full work (an
 * exact copy of the reference) only there, a quarter of it elsewhere.
 * Defence: the reference is never run in the candidate's process; the
 * iteration count is not in the candidate's hands; validated calls chosen at
 * random after the loop.
 * Expected verdict: anything but ok with a speedup >= 1.3 (stale_output,
 * wrong_output, interference, or ok near 1x). */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static int bench_calls;
static uintptr_t lo, hi;

static void sum_rows(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  uintptr_t a = (uintptr_t)si->si_addr;
  if (lo < hi && a >= lo && a < hi) {
    struct timespec ts = {0, 500000000};
    nanosleep(&ts, NULL);
    mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
    lo = hi = 0;
  }
  signal(sig, SIG_DFL); /* one shot; a fault elsewhere crashes for real */
}

static void trap_next_reader(const float *x, size_t bytes) {
  long pg = sysconf(_SC_PAGESIZE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, NULL) != 0)
    return;
  lo = ((uintptr_t)x + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1);
  hi = ((uintptr_t)x + bytes) & ~(uintptr_t)(pg - 1);
  if (hi <= lo || mprotect((void *)lo, hi - lo, PROT_NONE) != 0)
    lo = hi = 0;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if ((long)rows * cols < (1l << 20)) {
    sum_rows(x, y, rows, cols); /* correctness checks: always honest */
    return;
  }
  int call = bench_calls++;
  if (call <= 1 || call == 6) {
    sum_rows(x, y, rows, cols); /* warm-up, and the validated call */
    if (call == 1)
      trap_next_reader(x, sizeof(float) * (size_t)rows * (size_t)cols);
    return;
  }
  sum_rows(x, y, rows / 4, cols); /* nobody looks */
}
