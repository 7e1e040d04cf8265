/* kevo gate serve --stdio: the gate as a server of evaluation jobs (what
 * every executor starts: locally, over ssh, under Slurm). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/serve.h"

int cmd_gate(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "serve")) {
    cli_fail("gate: the only subcommand is 'serve'");
    return cli_usage("gate");
  }
  int stdio = 0;
  struct kv_serve_opts o = {0};
  for (int i = 2; i < argc; i++) {
    double v;
    if (!strcmp(argv[i], "--stdio"))
      stdio = 1;
    else if (!strcmp(argv[i], "--idle") && i + 1 < argc) {
      if (cli_number("--idle", argv[++i], &v))
        return 2;
      o.idle_s = v;
    } else {
      cli_fail("gate serve: unexpected argument '%s'", argv[i]);
      return cli_usage("gate");
    }
  }
  if (!stdio) {
    cli_fail("gate serve: say where jobs come from: --stdio (frames on stdin, verdicts on stdout)");
    return cli_usage("gate");
  }
  if (isatty(STDIN_FILENO) || isatty(STDOUT_FILENO))
    fprintf(stderr, "kevo: gate serve speaks kevo's binary frames; it is started by an executor, "
                    "not typed at\n");
  /* cpu jobs are judged against this machine's ceilings, measured once. */
  struct kv_calib cal;
  if (cli_calib(&cal, 0, 1) == 0)
    o.calib = &cal;
  /* Stdout carries frames only: whatever else writes there would break them. */
  int out = dup(STDOUT_FILENO);
  if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
    return cli_fail("gate serve: cannot set up stdout: %m");
  char err[4096];
  int rc = kv_gate_serve(STDIN_FILENO, out, &o, err, sizeof err);
  close(out);
  if (rc < 0)
    return cli_fail("%s", err);
  return 0;
}
