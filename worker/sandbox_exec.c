/* kevo-sandbox: the tools' sandbox, entered in a process of its own (the
 * gate runs the C compiler, nvcc, cuobjdump and addr2line through it):
 *
 *   kevo-sandbox DIR CPU_S FSIZE [-r PATH]... [-s] [-d BYTES] [-R] [-n] -- PROGRAM ARG...
 *
 * It enters kevo's sandbox (kevo/sandbox.h) with every layer but seccomp
 * (whose filter refuses the execve of PROGRAM and the compiler driver's own
 * children): a new network namespace, no_new_privs, Landlock (writes only
 * under DIR; reads the system directories, /usr/local and each PATH),
 * resource limits (RLIMIT_CPU CPU_S seconds, RLIMIT_FSIZE FSIZE bytes), then
 * executes PROGRAM (an absolute path) with its arguments and the environment
 * it was given.
 *
 * For code kevo did not write (the import helper's Python, which runs the
 * module it imports): -s adds the seccomp filter with program execution
 * allowed (kevo/sandbox.h's allow_exec: what PROGRAM runs inherits every
 * layer), -d BYTES caps its data (RLIMIT_DATA; the filter denies setrlimit,
 * so the cap is set here), and -R requires every layer: one the kernel lacks
 * (no user namespaces for netns, no Landlock) stops it with status 125 too,
 * naming the layer, instead of running with less.
 *
 * For a developer tool (ncu, compute-sanitizer) that starts kevo-worker and
 * talks to its own library inside it: -n gives only a new network namespace
 * (and IPC namespace) with its loopback up, and nothing else. The tool and the
 * worker it starts share that namespace (their sockets meet on its loopback)
 * and nothing outside it is reachable; the worker keeps its own layers.
 *
 * Why a process of its own: the gate forks these tools from its compile
 * pool's threads, and between fork and exec a child of a threaded process
 * may only make async-signal-safe calls; entering the sandbox opens
 * directories and formats messages. Here, a fresh single-threaded process,
 * it may. A layer that fails (not merely one the kernel lacks) stops it with
 * exit status 125 and the reason on stderr: the tool never runs with less
 * sandbox than kevo asked for without kevo knowing. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kevo/sandbox.h"

#define KV_SANDBOX_FAILED_EXIT 125

static int fail(const char *what, const char *why) {
  fprintf(stderr, "kevo-sandbox: %s%s%s\n", what, why && *why ? ": " : "", why ? why : "");
  return KV_SANDBOX_FAILED_EXIT;
}

/* The new network namespace's loopback, up: 0, or -1 with errno. */
static int loopback_up(void) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -1;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  int rc = ioctl(fd, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = ioctl(fd, SIOCSIFFLAGS, &ifr);
  }
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

static int number(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == 0 && s[0] != '-' ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 6)
    return fail("usage: kevo-sandbox DIR CPU_S FSIZE [-r PATH]... [-s] [-d BYTES] [-R] [-n] -- "
                "PROGRAM ARG...",
                NULL);
  unsigned long long cpu, fsize;
  if (number(argv[2], &cpu) < 0 || number(argv[3], &fsize) < 0)
    return fail("CPU_S and FSIZE must be whole numbers", argv[2]);
  struct kv_sandbox_opts o;
  kv_sandbox_defaults(&o, argv[1]);
  o.seccomp = 0;
  o.cpu_seconds = (int)(cpu > 86400 ? 86400 : cpu);
  if (fsize)
    o.file_limit_bytes = fsize;
  o.read_paths[o.nread_paths++] = "/usr/local";
  int i = 4, require = 0, net_only = 0;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    unsigned long long v;
    if (!strcmp(argv[i], "-s")) {
      o.seccomp = 1;
      o.allow_exec = 1;
    } else if (!strcmp(argv[i], "-R")) {
      require = 1;
    } else if (!strcmp(argv[i], "-n")) {
      net_only = 1;
    } else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      if (number(argv[++i], &v) < 0 || v == 0)
        return fail("-d BYTES must be a whole number above 0, got", argv[i]);
      o.data_limit_bytes = v;
    } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
      if (o.nread_paths >= KV_SANDBOX_MAX_PATHS)
        return fail("too many -r paths", NULL);
      o.read_paths[o.nread_paths++] = argv[++i];
    } else {
      return fail("expected -r PATH, -s, -d BYTES, -R, -n or --, got", argv[i]);
    }
  }
  if (i + 1 >= argc || argv[i + 1][0] != '/')
    return fail("no PROGRAM (an absolute path) after --", NULL);
  if (net_only) { /* the network namespace alone, then the tool */
    o.landlock = o.seccomp = o.rlimits = 0;
    o.scratch_bytes = 0;
  }
  struct kv_sandbox_status st;
  kv_sandbox_enter(&o, &st);
  if (net_only) {
    if (st.netns != KV_LAYER_ACTIVE)
      return fail("no network namespace for the tool", st.note);
    if (loopback_up() != 0)
      return fail("the tool's network namespace: loopback", strerror(errno));
    execv(argv[i + 1], argv + i + 1);
    return fail("cannot execute the tool", strerror(errno));
  }
  const struct {
    const char *name;
    enum kv_layer_state s;
    int wanted;
  } layers[] = {{"no_new_privs", st.no_new_privs, 1},
                {"netns", st.netns, 1},
                {"landlock", st.landlock, 1},
                {"seccomp", st.seccomp, o.seccomp},
                {"rlimits", st.rlimits, 1}};
  for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
    if (layers[l].wanted &&
        (layers[l].s == KV_LAYER_FAILED || (require && layers[l].s != KV_LAYER_ACTIVE))) {
      char what[96];
      snprintf(what, sizeof what, "the %s layer %s", layers[l].name,
               layers[l].s == KV_LAYER_FAILED ? "failed" : "is unavailable here");
      return fail(what, st.note);
    }
  execv(argv[i + 1], argv + i + 1);
  return fail("cannot execute the tool", strerror(errno));
}
