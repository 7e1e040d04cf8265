/* llm_standin: the stand-in server as a process, for end-to-end tests of the
 * kevo binary.
 *   llm_standin --port-file F [--key K] [--script S] [--usage IN,OUT]
 *               [--max-requests N] [--lifetime S] [--log F] [--replies FILE]
 * Writes the port to F once listening; serves until the lifetime passes, N
 * requests were served, or SIGTERM; then writes one line per request to the
 * log ("PATH STATUS AUTH-OK") and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kevo/util.h"
#include "standin.h"

static volatile sig_atomic_t stop;
static void on_term(int sig) {
  (void)sig;
  stop = 1;
}

int main(int argc, char **argv) {
  struct standin_opts o = {0};
  const char *port_file = NULL, *log = NULL;
  char *replies = NULL;
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "llm_standin: %s needs a value\n", a);
      return 2;
    }
    if (!strcmp(a, "--port-file"))
      port_file = v;
    else if (!strcmp(a, "--key"))
      o.key = v;
    else if (!strcmp(a, "--script"))
      o.script = v;
    else if (!strcmp(a, "--usage")) {
      long long in = 0, out = 0;
      sscanf(v, "%lld,%lld", &in, &out);
      o.input_tokens = in;
      o.output_tokens = out;
    } else if (!strcmp(a, "--max-requests"))
      o.max_requests = atoi(v);
    else if (!strcmp(a, "--lifetime"))
      o.lifetime_s = atof(v);
    else if (!strcmp(a, "--log"))
      log = v;
    else if (!strcmp(a, "--replies")) {
      char rerr[512];
      size_t len;
      if (kv_read_file(v, 4u << 20, &replies, &len, rerr, sizeof rerr) < 0) {
        fprintf(stderr, "llm_standin: %s\n", rerr);
        return 2;
      }
      o.replies = replies;
    } else {
      fprintf(stderr, "llm_standin: unknown option %s\n", a);
      return 2;
    }
  }
  if (!port_file) {
    fprintf(stderr, "llm_standin: --port-file is required\n");
    return 2;
  }
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  char err[512];
  struct standin *s = standin_start(&o, err, sizeof err);
  if (!s) {
    fprintf(stderr, "llm_standin: %s\n", err);
    return 1;
  }
  char port[32];
  snprintf(port, sizeof port, "%d\n", standin_port(s));
  if (kv_write_file(port_file, port, strlen(port), err, sizeof err) < 0) {
    fprintf(stderr, "llm_standin: %s\n", err);
    standin_stop(s);
    return 1;
  }
  while (!stop && !standin_finished(s))
    usleep(20000);
  int n = standin_count(s);
  FILE *f = log ? fopen(log, "w") : NULL;
  for (int i = 0; f && i < n; i++) {
    struct standin_request r;
    if (standin_get(s, i, &r) == 0)
      fprintf(f, "%s %d %s\n", r.path, r.status,
              o.key && (strstr(r.auth, o.key) || strstr(r.api_key, o.key)) ? "key-ok" : "no-key");
  }
  if (f)
    fclose(f);
  standin_stop(s);
  free(replies);
  return 0;
}
