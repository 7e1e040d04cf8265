#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kevo/util.h"

void kv_proc_describe(const struct kv_proc_result *r, char *out, size_t cap) {
  if (r->timed_out)
    snprintf(out, cap, "timed out after %.1f s and was killed", r->wall_s);
  else if (r->signaled)
    snprintf(out, cap, "killed by %s (signal %d)",
             sigabbrev_np(r->sig) ? sigabbrev_np(r->sig) : "?", r->sig);
  else
    snprintf(out, cap, "exited with status %d", r->status);
}

int kv_run(char *const argv[], char *const envp[], const char *cwd, double deadline_s,
           int (*setup)(void *), void *setup_arg, struct kv_buf *out, struct kv_proc_result *res,
           char *err, size_t errlen) {
  memset(res, 0, sizeof(*res));
  char exe[4096];
  if (kv_which(argv[0], exe, sizeof exe) < 0)
    return kv_error(err, errlen, "%s: not found in PATH; install it or put it on PATH", argv[0]);
  int pfd[2];
  if (pipe2(pfd, O_CLOEXEC) < 0)
    return kv_error(err, errlen, "pipe: %s", strerror(errno));
  double t0 = kv_now_s();
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    return kv_error(err, errlen, "fork: %s", strerror(errno));
  }
  if (pid == 0) {
    /* In a process group of its own (the deadline kills the group), so a
     * Ctrl-C at the terminal does not reach it: it dies with kevo instead,
     * however kevo dies (an interrupted kevo import left its Python helper
     * running). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
      _exit(125);
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
      dup2(devnull, 0);
    dup2(pfd[1], 1);
    dup2(pfd[1], 2);
    close_range(3, ~0U, 0);
    if (cwd && chdir(cwd) < 0)
      _exit(126);
    if (setup && setup(setup_arg) != 0)
      _exit(126);
    if (envp)
      execve(exe, argv, envp);
    else
      execv(exe, argv);
    _exit(127);
  }
  setpgid(pid, pid);
  close(pfd[1]);
  int fd = pfd[0];
  fcntl(fd, F_SETFL, O_NONBLOCK);
  char chunk[16384];
  int open_fd = 1;
  for (;;) {
    double left = deadline_s - (kv_now_s() - t0);
    if (left <= 0) {
      res->timed_out = 1;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    if (!open_fd) {
      /* Output closed: wait for the exit, still under the deadline. */
      int st;
      pid_t w = waitpid(pid, &st, WNOHANG);
      if (w == pid) {
        res->exited = WIFEXITED(st);
        res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
        res->signaled = WIFSIGNALED(st);
        res->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
        res->wall_s = kv_now_s() - t0;
        kill(-pid, SIGKILL); /* leftovers of its group */
        return 0;
      }
      usleep(2000);
      continue;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ms = left > 0.2 ? 200 : (int)(left * 1000) + 1;
    int rc = poll(&p, 1, ms);
    if (rc < 0 && errno != EINTR)
      break;
    if (rc > 0) {
      ssize_t n = read(fd, chunk, sizeof chunk);
      if (n > 0) {
        if (out)
          kv_buf_append(out, chunk, (size_t)n);
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        open_fd = 0;
        close(fd);
        fd = -1;
      }
    }
  }
  if (fd >= 0)
    close(fd);
  int st;
  waitpid(pid, &st, 0);
  res->wall_s = kv_now_s() - t0;
  if (!res->timed_out) {
    res->exited = WIFEXITED(st);
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    res->signaled = WIFSIGNALED(st);
    res->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  }
  return 0;
}
