/* kevo gate serve --stdio: the gate as a server of evaluation jobs (what
 * every executor starts: locally, over ssh, under Slurm). */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/serve.h"
#include "kevo/surface.h"

/* Ends the server's children (workers, compilers: each leads a process group
 * of its own, and a worker stopped while its evaluation waits for the device
 * would outlive the server). */
static void end_children(void) {
  DIR *d = opendir("/proc/self/task");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char p[96], buf[4096];
    snprintf(p, sizeof p, "/proc/self/task/%s/children", e->d_name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
      close(fd);
    buf[n > 0 ? n : 0] = 0;
    for (char *c = buf, *end; *c; c = end) {
      long pid = strtol(c, &end, 10);
      if (end == c)
        break;
      if (pid > 1) {
        kill((pid_t)-pid, SIGKILL);
        kill((pid_t)pid, SIGKILL);
      }
    }
  }
  if (d)
    closedir(d);
}

/* SIGTERM (srun cancelling its step, ssh's session ending) and a client that
 * hangs up mid-job end the server at once, children included, instead of
 * after the job: the GPU is freed for the job's retry elsewhere. */
static int term_pipe[2] = {-1, -1};
static void on_term(int sig) {
  (void)sig;
  char c = 1;
  if (write(term_pipe[1], &c, 1) < 0)
    _exit(143);
}

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    struct pollfd p[2] = {{STDIN_FILENO, POLLRDHUP, 0}, {term_pipe[0], POLLIN, 0}};
    if (poll(p, 2, 1000) <= 0)
      continue;
    int term = p[1].revents != 0;
    if (term || (p[0].revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL))) {
      static const char m1[] = "kevo: gate serve: terminated; ending its workers\n";
      static const char m2[] = "kevo: gate serve: the client is gone; ending\n";
      if (write(STDERR_FILENO, term ? m1 : m2, term ? sizeof m1 - 1 : sizeof m2 - 1) < 0) {
      }
      end_children();
      _exit(term ? 143 : 0);
    }
    if (p[0].revents & POLLIN) /* a frame waiting for the main thread */
      usleep(200000);
  }
  return NULL;
}

int cmd_gate(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "serve")) {
    cli_fail("gate: the only subcommand is 'serve'");
    return cli_usage("gate");
  }
  int stdio = 0;
  const char *surface = "cpu";
  struct kv_serve_opts o = {0};
  struct kv_gate_opts base;
  cli_gate_opts_default(&base);
  o.gate = &base;
  for (int i = 2; i < argc; i++) {
    double v;
    if (!strcmp(argv[i], "--stdio"))
      stdio = 1;
    else if (!strcmp(argv[i], "--idle") && i + 1 < argc) {
      if (cli_number("--idle", argv[++i], &v))
        return 2;
      o.idle_s = v;
    } else if (!strcmp(argv[i], "--surface") && i + 1 < argc) {
      surface = argv[++i];
      if (!kv_surface_find(surface)) {
        cli_fail("gate serve: --surface %s: use one of %s", surface, kv_surface_names());
        return 2;
      }
    } else {
      cli_fail("gate serve: unexpected argument '%s'", argv[i]);
      return cli_usage("gate");
    }
  }
  if (!stdio) {
    cli_fail("gate serve: say where jobs come from: --stdio (frames on stdin, verdicts on stdout)");
    return cli_usage("gate");
  }
  if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))
    fprintf(stderr, "kevo: gate serve speaks kevo's binary frames; it is started by an executor, "
                    "not typed at\n");
  else {
    /* `srun --unbuffered` hands the task a pseudo-terminal: raw, so that
     * frames pass byte for byte (no CR added, no control characters read). */
    for (int fd = 0; fd <= 1; fd++) {
      struct termios tio;
      if (isatty(fd) && tcgetattr(fd, &tio) == 0) {
        cfmakeraw(&tio);
        tcsetattr(fd, TCSANOW, &tio);
      }
    }
  }
  /* --surface cuda: an executor asks whether this host can judge cuda jobs
   * at all before it sends any; a host without a usable GPU refuses for good
   * (KV_EXEC_REFUSED), and the executor drops it at once. */
  char device[512] = "";
  if (kv_surface_gpu(kv_surface_find(surface))) {
    struct kv_gate_opts g;
    cli_gate_opts_default(&g);
    g.surface = surface;
    char host[256] = "?", e[1024];
    gethostname(host, sizeof host - 1);
    if (kv_gate_cuda_device(&g, device, sizeof device, e, sizeof e) < 0) {
      cli_fail("gate serve: host %s cannot judge cuda kernels: %s; send cuda jobs to a host with "
               "a GPU, or use --surface cpu",
               host, e);
      return KV_EXEC_REFUSED;
    }
    o.device = device;
  }
  /* cpu jobs are judged against this machine's ceilings, measured once. */
  struct kv_calib cal;
  if (cli_calib(&cal, 0, 1) == 0)
    o.calib = &cal;
  /* Stdout carries frames only: whatever else writes there would break them. */
  int out = dup(STDOUT_FILENO);
  if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return cli_fail("gate serve: cannot set up stdout: %m");
  pthread_t wd;
  if (pipe2(term_pipe, O_CLOEXEC) == 0 && pthread_create(&wd, NULL, watchdog, NULL) == 0) {
    pthread_detach(wd);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
  }
  char err[4096];
  int rc = kv_gate_serve(STDIN_FILENO, out, &o, err, sizeof err);
  close(out);
  if (rc < 0)
    return cli_fail("%s", err);
  return 0;
}
