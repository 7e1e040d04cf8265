/* kevo profile / kevo sanitize: the gate's profiler (Nsight Compute) and
 * debugger (compute-sanitizer) on one CUDA candidate, from the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/util.h"
#include "kevo/surface.h"

/* Which of the worker's sandbox layers were off under the tool: said where
 * the findings are, not only in kevo doctor. */
static void sandbox_said(const char *off) {
  if (off[0])
    printf("  sandbox  the candidate ran under the tool without: %s (the tool cannot work under "
           "them; 'kevo doctor', docs/sandbox.md)\n",
           off);
}

static int devtool(int argc, char **argv, int profile) {
  const char *cmd = profile ? "profile" : "sanitize";
  struct kv_gate_opts o;
  cli_gate_opts_default(&o);
  o.surface = "cuda";
  o.timing = 0;
  if (profile)
    o.profile = 2;
  else
    o.debug = 2;
  int json = 0, npos = 0;
  const char *pos[2] = {NULL, NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    double v;
    if (!strcmp(a, "--json"))
      json = 1;
    else if (!profile && !strcmp(a, "--surface") && i + 1 < argc) {
      o.surface = argv[++i];
      if (!kv_surface_find(o.surface))
        return cli_fail("--surface %s: not a surface; use cpu (AddressSanitizer and "
                        "UndefinedBehaviorSanitizer) or cuda (compute-sanitizer)",
                        o.surface);
    } else if (!strcmp(a, "--deadline") && i + 1 < argc) {
      if (cli_number("--deadline", argv[++i], &v))
        return 2;
      if (profile)
        o.profile_deadline_s = v;
      else
        o.debug_deadline_s = v;
    } else if (!strcmp(a, "--seed") && i + 1 < argc) {
      if (cli_number("--seed", argv[++i], &v))
        return 2;
      o.seed = (uint64_t)v;
    } else if (a[0] == '-' && a[1]) {
      cli_fail("%s: unknown or incomplete option '%s'", cmd, a);
      return cli_usage(cmd);
    } else if (npos < 2)
      pos[npos++] = a;
    else {
      cli_fail("%s: unexpected argument '%s'", cmd, a);
      return cli_usage(cmd);
    }
  }
  if (npos != 2) {
    cli_fail("%s: needs a task directory and a candidate", cmd);
    return cli_usage(cmd);
  }
  int gpu = kv_surface_gpu(kv_surface_find(o.surface));
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(pos[0], &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  if (access(pos[1], R_OK) != 0) {
    kv_task_free(t);
    return cli_fail("%s: cannot read the candidate; give the path of a %s file", pos[1],
                    gpu ? "CUDA (.cu)" : "C");
  }
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r) {
    kv_task_free(t);
    return cli_fail("out of memory");
  }
  if (!json)
    fprintf(stderr, "kevo %s: checking %s, then running it under %s (this takes a while)\n", cmd,
            pos[1],
            profile ? "Nsight Compute"
            : gpu   ? "compute-sanitizer"
                    : "AddressSanitizer and UndefinedBehaviorSanitizer");
  if (kv_gate_eval(t, pos[1], &o, r, err, sizeof err) < 0) {
    kv_gate_result_release(r);
    free(r);
    kv_task_free(t);
    return cli_fail("%s", err);
  }
  /* profile: 1 when no kernel was profiled; sanitize: 1 with findings. */
  int code =
      profile ? !(r->profile && r->profile->nkernels > 0) : (r->debug && r->debug->nfindings > 0);
  if (json) {
    char *js = kv_gate_result_json(r);
    printf("%s\n", js ? js : "{}");
    free(js);
  } else {
    printf("%s\n  verdict  %s: %s\n", pos[1], kv_verdict_name(r->verdict), r->detail);
    char *line = malloc(65536);
    if (line && profile) {
      const struct kv_ncu_report *p = r->profile;
      if (!p) {
        printf("  profile  not run (the candidate did not load)\n");
      } else {
        printf("  profile  %.2f s (ncu %s, --clock-control none; timing is kevo's, not this)\n",
               p->seconds, kv_ncu_version(&o));
        kv_ncu_summary(p, line, 65536);
        if (p->nkernels)
          printf("%s\n", line);
        if (p->note[0])
          printf("  note     %s\n", p->note);
        sandbox_said(p->sandbox_off);
        if (r->profile_ref && r->profile_ref->nkernels) {
          kv_ncu_summary(r->profile_ref, line, 65536);
          printf("  reference (%.2f s)\n%s\n", r->profile_ref->seconds, line);
        }
      }
    } else if (line) {
      const struct kv_san_report *d = r->debug;
      if (!d) {
        printf("  sanitize not run (the candidate did not load)\n");
      } else {
        printf("  sanitize %.2f s (%s%s: %s; %d error%s)\n", d->seconds,
               gpu ? "compute-sanitizer " : "the C compiler's", gpu ? kv_san_version(&o) : "",
               d->tools[0] ? d->tools : "none ran", d->errors, d->errors == 1 ? "" : "s");
        kv_san_summary(d, line, 65536);
        printf("%s\n", line);
        if (d->note[0])
          printf("  note     %s\n", d->note);
        sandbox_said(d->sandbox_off);
      }
    }
    free(line);
  }
  kv_gate_result_release(r);
  free(r);
  kv_task_free(t);
  return code;
}

int cmd_profile(int argc, char **argv) {
  return devtool(argc, argv, 1);
}

int cmd_sanitize(int argc, char **argv) {
  return devtool(argc, argv, 0);
}
