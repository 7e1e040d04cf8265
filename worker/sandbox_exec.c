/* kevo-sandbox: the tools' sandbox, entered in a process of its own (the
 * gate runs the C compiler, nvcc, cuobjdump and addr2line through it):
 *
 *   kevo-sandbox DIR CPU_S FSIZE [-r PATH]... -- PROGRAM ARG...
 *
 * It enters kevo's sandbox (kevo/sandbox.h) with every layer but seccomp
 * (whose filter refuses the execve of PROGRAM and the compiler driver's own
 * children): a new network namespace, no_new_privs, Landlock (writes only
 * under DIR; reads the system directories, /usr/local and each PATH),
 * resource limits (RLIMIT_CPU CPU_S seconds, RLIMIT_FSIZE FSIZE bytes), then
 * executes PROGRAM (an absolute path) with its arguments and the environment
 * it was given.
 *
 * Why a process of its own: the gate forks these tools from its compile
 * pool's threads, and between fork and exec a child of a threaded process
 * may only make async-signal-safe calls; entering the sandbox opens
 * directories and formats messages. Here, a fresh single-threaded process,
 * it may. A layer that fails (not merely one the kernel lacks) stops it with
 * exit status 125 and the reason on stderr: the tool never runs with less
 * sandbox than kevo asked for without kevo knowing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/sandbox.h"

#define KV_SANDBOX_FAILED_EXIT 125

static int fail(const char *what, const char *why) {
  fprintf(stderr, "kevo-sandbox: %s%s%s\n", what, why && *why ? ": " : "", why ? why : "");
  return KV_SANDBOX_FAILED_EXIT;
}

static int number(const char *s, unsigned long long *v) {
  char *end;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == 0 && s[0] != '-' ? 0 : -1;
}

int main(int argc, char **argv) {
  if (argc < 6)
    return fail("usage: kevo-sandbox DIR CPU_S FSIZE [-r PATH]... -- PROGRAM ARG...", NULL);
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
  int i = 4;
  for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
    if (strcmp(argv[i], "-r") != 0 || i + 1 >= argc)
      return fail("expected -r PATH or --, got", argv[i]);
    if (o.nread_paths >= KV_SANDBOX_MAX_PATHS)
      return fail("too many -r paths", NULL);
    o.read_paths[o.nread_paths++] = argv[i + 1];
  }
  if (i + 1 >= argc || argv[i + 1][0] != '/')
    return fail("no PROGRAM (an absolute path) after --", NULL);
  struct kv_sandbox_status st;
  kv_sandbox_enter(&o, &st);
  const struct {
    const char *name;
    enum kv_layer_state s;
  } layers[] = {{"no_new_privs", st.no_new_privs},
                {"netns", st.netns},
                {"landlock", st.landlock},
                {"rlimits", st.rlimits}};
  for (size_t l = 0; l < sizeof layers / sizeof layers[0]; l++)
    if (layers[l].s == KV_LAYER_FAILED) {
      char what[64];
      snprintf(what, sizeof what, "the %s layer failed", layers[l].name);
      return fail(what, st.note);
    }
  execv(argv[i + 1], argv + i + 1);
  return fail("cannot execute the tool", strerror(errno));
}
