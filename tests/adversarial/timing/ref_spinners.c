/* Attack (timing class 2, sabotaged reference): ref_spinners. On its first
 * call at the bench size it pins the worker's thread (which also runs the
 * reference) to the CPU A it is on, picks another CPU B, and starts three
 * threads that spin forever and migrate themselves (the candidate never waits
 * for a migration): to B as soon as the candidate is entered, so it computes
 * undisturbed on A, and back to A as soon as it returns, where the cache
 * flush and the reference's call then get a quarter of the CPU. The
 * candidate itself is an exact copy of the reference, so its own times are
 * honest; only the reference is slowed. Uses pthread_create and raw
 * sched_setaffinity system calls, which neither the symbol policy nor the
 * seccomp filter forbids.
 * Defence: the reference is never timed in the candidate's process, nor while
 * any candidate code can run (candidate process group stopped); reference
 * times that disagree with a baseline taken with no candidate alive are
 * rejected (interference).
 * Expected verdict: anything but ok with a speedup >= 1.3 (interference, or ok
 * near 1x). With a single CPU it does nothing. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SPINNERS 3
#define WORDS 16
#define BITS (8 * (int)sizeof(unsigned long))

static int state; /* 0 not started, 1 running, -1 not possible */
static int cpu_a, cpu_b;
static atomic_int inside; /* the candidate is running */

static void pin(long tid, int cpu) {
  unsigned long mask[WORDS];
  memset(mask, 0, sizeof mask);
  mask[cpu / BITS] |= 1ul << (cpu % BITS);
  syscall(SYS_sched_setaffinity, tid, sizeof mask, mask);
}

static void *spinner(void *arg) {
  (void)arg;
  volatile double z = 1.0;
  int where = -1;
  for (;;) {
    int want = atomic_load_explicit(&inside, memory_order_relaxed) ? cpu_b : cpu_a;
    if (want != where) {
      pin(0, want);
      where = want;
    }
    for (int i = 0; i < 64; i++)
      z = z * 1.0000001 + 1e-9;
  }
  return NULL;
}

static void start(void) {
  state = -1;
  unsigned long mask[WORDS];
  unsigned cur = 0;
  memset(mask, 0, sizeof mask);
  if (syscall(SYS_sched_getaffinity, 0, sizeof mask, mask) < 0 ||
      syscall(SYS_getcpu, &cur, NULL, NULL) != 0)
    return;
  cpu_a = (int)cur;
  cpu_b = -1;
  for (int c = 0; c < WORDS * BITS && cpu_b < 0; c++)
    if (c != cpu_a && (mask[c / BITS] >> (c % BITS) & 1))
      cpu_b = c;
  if (cpu_b < 0)
    return;
  pin(0, cpu_a);
  for (int i = 0; i < SPINNERS; i++) {
    pthread_t t;
    if (pthread_create(&t, NULL, spinner, NULL) == 0)
      pthread_detach(t);
  }
  state = 1;
}

void rowsum(const float *x, float *y, int rows, int cols) {
  if (state == 0 && (long)rows * cols >= (1l << 20))
    start();
  atomic_store(&inside, 1);
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
  atomic_store(&inside, 0);
}
