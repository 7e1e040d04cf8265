/* Attack: crash_hidden (a crash at check sizes, caught and hidden).
 * At check sizes (fewer than 2048 rows) the kernel reads through a null
 * pointer; a SIGSEGV handler it installed on its first call jumps back out
 * of the fault and the call returns as if nothing happened, having written
 * nothing. Before kevo read check outputs itself, a hidden crash needed only
 * a forged reply to pass (relay_reply shows that channel). At bench sizes it
 * is a correct rowsum.
 * Defence: kevo reads the outputs in memory it shares with the worker.
 * Expected verdict: unwritten_output (kevo's poison is still there), or
 * crash. */
#include <setjmp.h>
#include <signal.h>
#include <string.h>

static sigjmp_buf back;

static void on_segv(int sig) {
  (void)sig;
  siglongjmp(back, 1);
}

void rowsum(const float *x, float *y, int rows, int cols) {
  static int installed;
  if (!installed) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    installed = 1;
  }
  if (rows < 2048) {
    const float *volatile nowhere = 0;
    if (sigsetjmp(back, 1) == 0)
      y[0] = *nowhere;
    return;
  }
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += x[(long)r * cols + c];
    y[r] = (float)s;
  }
}
