/* Attack (timing class 2, sabotaged reference): ref_sigalrm. On its first
 * call at the bench size it installs a SIGALRM handler (SA_RESTART, so the
 * worker's pipe reads and writes never see EINTR) and arms a 200 us interval
 * timer. The handler returns at once while the candidate runs and otherwise
 * burns 150 us of CPU on the interrupted thread: during the cache flush and
 * the reference's call, which therefore takes about four times as long. The
 * candidate itself is an exact copy of the reference (its own times honest).
 * sigaction and setitimer are not on the policy's list, and a signal to
 * oneself passes the seccomp filter.
 * Defence: the reference is never timed in the candidate's process, nor while
 * candidate code can run (stopped process group: no timer handler runs);
 * reference times are compared with a clean baseline (interference).
 * Expected verdict: anything but ok with a speedup >= 1.3 (interference, or ok
 * near 1x). */
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define PERIOD_US 200
#define BURN_NS 150000

static volatile sig_atomic_t inside;
static int armed;

static long long mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void on_alarm(int sig) {
  (void)sig;
  if (inside)
    return;
  long long end = mono_ns() + BURN_NS;
  while (mono_ns() < end) {
  }
}

static void arm(void) {
  armed = 1;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, NULL) != 0)
    return;
  struct itimerval it = {{0, PERIOD_US}, {0, PERIOD_US}};
  setitimer(ITIMER_REAL, &it, NULL);
}

void rowsum(const float *x, float *y, int rows, int cols) {
  inside = 1;
  if (!armed && (long)rows * cols >= (1l << 20))
    arm();
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  inside = 0;
}
