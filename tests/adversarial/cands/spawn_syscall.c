/* Attack: spawn_syscall (process creation the symbol policy cannot see).
 * Uses raw system calls only -- syscall(SYS_clone, SIGCHLD, 0, ...),
 * syscall(SYS_fork) where the architecture has it, and syscall(SYS_clone3)
 * without CLONE_THREAD -- so no policy symbol appears in the object. Any child
 * it gets creates the marker file @MARKER@ (a path chosen by the test,
 * outside the scratch directory) and exits at once; the parent reaps it and
 * then computes the correct output.
 * Defence: seccomp denies clone without CLONE_THREAD, fork and clone3 (and
 * landlock would stop the marker write even from a child).
 * Expected verdict: ok (calls fail with an errno) or crash (a seccomp policy
 * that kills); either way the marker must not exist afterwards. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char marker[] = "@MARKER@";

static void after(long pid) {
  if (pid == 0) {
    int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      (void)!write(fd, "child\n", 6);
      close(fd);
    }
    syscall(SYS_exit_group, 0);
    for (;;) {
    }
  }
  if (pid > 0)
    syscall(SYS_wait4, pid, (void *)0, 0, (void *)0);
}

struct clone_args_v0 {
  uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

void rowsum(const float *x, float *y, int rows, int cols) {
  after(syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L));
#ifdef SYS_fork
  after(syscall(SYS_fork));
#endif
#ifdef SYS_clone3
  struct clone_args_v0 ca = {0};
  ca.exit_signal = SIGCHLD;
  after(syscall(SYS_clone3, &ca, sizeof ca));
#endif
  for (int r = 0; r < rows; r++) {
    const float *row = x + (long)r * cols;
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += row[c];
    y[r] = (float)s;
  }
}
