/* Attack: kill_parent (taking the judge down with you).
 * Sends SIGKILL to its parent process with raw system calls only: kill,
 * tgkill and, where available, pidfd_open + pidfd_send_signal. If the parent
 * is kevo, the evaluation (and the whole search) dies. Then computes the
 * correct output.
 * Defence: seccomp denies signals to other processes and pidfd_*; landlock
 * ABI >= 6 scopes signals.
 * Expected verdict: ok (calls fail) or crash (a seccomp policy that kills);
 * kevo must stay alive and reach a verdict. */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

void rowsum(const float *x, float *y, int rows, int cols) {
  long pp = (long)getppid();
  if (pp > 1) {
    syscall(SYS_kill, pp, (long)SIGKILL);
    syscall(SYS_tgkill, pp, pp, (long)SIGKILL);
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
    long pfd = syscall(SYS_pidfd_open, pp, 0L);
    if (pfd >= 0) {
      syscall(SYS_pidfd_send_signal, pfd, (long)SIGKILL, 0L, 0L);
      close((int)pfd);
    }
#endif
  }
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
