/* kevo task check: validate a task directory. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kevo/import.h"
#include "kevo/surface.h"
#include "kevo/util.h"

/* kv_task_check's remarks that do not reject the task start "warning: ". */
static int is_warning(const char *finding) {
  return !strncmp(finding, "warning: ", 9);
}

/* The entry a candidate on `surface` defines: the generated prototype's
 * declaration, without its guard, includes and comments (a packed task's
 * table of offsets is in its README and in --json's prototype), each line
 * indented. malloc'd, sized from the prototype; "" when there is none. */
char *cli_entry_declaration(const struct kv_task *t, const char *surface) {
  char *full = kv_task_prototype_alloc(t, kv_surface_lang(kv_surface_find(surface)));
  size_t cap = (full ? strlen(full) : 0) * 2 + 64, at = 0;
  char *out = malloc(cap);
  if (!out) {
    free(full);
    return NULL;
  }
  out[0] = 0;
  for (char *line = full ? strtok(full, "\n") : NULL; line; line = strtok(NULL, "\n")) {
    if (line[0] == '#' || !strncmp(line, "/*", 2))
      continue;
    int w = snprintf(out + at, cap - at, "    %s\n", line);
    if (w < 0 || (size_t)w >= cap - at)
      break;
    at += (size_t)w;
  }
  free(full);
  return out;
}

/* The reference's compiler log names kevo's copy (candidate.c): the
 * reference's own name instead (malloc'd), or NULL to keep it as it is. */
static char *own_log(const struct kv_task_report *r) {
  for (int i = 0; r->compile_log && i < r->nfindings; i++) {
    const char *m = strstr(r->findings[i], " does not compile (see the log)");
    if (m) {
      char path[1024];
      snprintf(path, sizeof path, "%.*s", (int)(m - r->findings[i]), r->findings[i]);
      return kv_gate_log_own_names(r->compile_log, path);
    }
  }
  return NULL;
}

/* kevo task starter DIR [-o FILE] [--surface S] [--python PY] [--deadline S]:
 * a minimal correct candidate of an imported task, on stdout or in FILE. */
static int cmd_task_starter(int argc, char **argv) {
  struct kv_import_opts o;
  kv_import_opts_default(&o);
  o.deadline_s = 120;
  const char *dir = NULL, *out = NULL, *surface = "cpu";
  for (int i = 2; i < argc; i++) {
    int more = i + 1 < argc;
    if (!strcmp(argv[i], "-o") && more)
      out = argv[++i];
    else if (!strcmp(argv[i], "--surface") && more)
      surface = argv[++i];
    else if (!strcmp(argv[i], "--python") && more)
      o.python = argv[++i];
    else if (!strcmp(argv[i], "--deadline") && more) {
      if (cli_number("--deadline", argv[++i], &o.deadline_s))
        return 2;
    } else if (argv[i][0] == '-' || dir) {
      cli_fail("task starter: unexpected argument '%s'", argv[i]);
      return cli_usage("task");
    } else
      dir = argv[i];
  }
  if (!dir) {
    cli_fail("task starter: needs a task directory");
    return cli_usage("task");
  }
  const struct kv_surface *sf = kv_surface_find(surface);
  if (!sf)
    return cli_fail("--surface %s: not a surface; use one of %s", surface, kv_surface_names());
  char err[2048];
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  const char *name = t->name;
  struct kv_starter st;
  int rc = kv_import_starter(&o, dir, surface, &st, err, sizeof err);
  if (rc < 0) {
    kv_task_free(t);
    return cli_fail("%s", err);
  }
  if (!st.ok) {
    cli_fail("%s: no starter for %s (%s): %s; write the candidate by hand (kevo task check %s "
             "prints the entry it defines) or use an LLM strategy (kevo run --strategy greedy)",
             dir, name, st.cause, st.detail, dir);
    kv_task_free(t);
    return 1;
  }
  if (out) {
    if (kv_write_file(out, st.source, strlen(st.source), err, sizeof err) < 0)
      rc = cli_fail("%s", err);
    else
      fprintf(stderr, "kevo: %s: a starter of %s (%s surface): it %s\n", out, name, surface,
              st.what);
  } else
    fputs(st.source, stdout);
  kv_starter_release(&st);
  kv_task_free(t);
  return rc < 0 ? 2 : 0;
}

int cmd_task(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "starter"))
    return cmd_task_starter(argc, argv);
  if (argc < 2 || strcmp(argv[1], "check") != 0) {
    cli_fail("task: the subcommand is 'check' or 'starter'");
    return cli_usage("task");
  }
  struct kv_gate_opts o;
  cli_gate_opts_default(&o);
  int json = 0;
  const char *dir = NULL;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--json"))
      json = 1;
    else if (!strcmp(argv[i], "--surface") && i + 1 < argc)
      o.surface = argv[++i];
    else if (!strcmp(argv[i], "--deadline") && i + 1 < argc) {
      double v;
      if (cli_number("--deadline", argv[++i], &v))
        return 2;
      o.job_deadline_s = v;
    } else if (argv[i][0] == '-') {
      cli_fail("task check: unknown or incomplete option '%s'", argv[i]);
      return cli_usage("task");
    } else if (!dir)
      dir = argv[i];
    else {
      cli_fail("task check: unexpected argument '%s'", argv[i]);
      return cli_usage("task");
    }
  }
  if (!dir) {
    cli_fail("task check: needs a task directory");
    return cli_usage("task");
  }
  if (!kv_surface_find(o.surface))
    return cli_fail("--surface %s: not a surface; use one of %s", o.surface, kv_surface_names());
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(dir, &t, err, sizeof err) < 0)
    return cli_fail("%s", err);
  char *proto = cli_entry_declaration(t, o.surface);
  char *header = kv_task_prototype_alloc(t, kv_surface_lang(kv_surface_find(o.surface)));
  if (!proto || !header) {
    free(proto);
    free(header);
    kv_task_free(t);
    return cli_fail("%s: the task's prototype is over %u bytes (or memory ran out)", dir,
                    KV_TASK_PROTO_MAX);
  }
  struct kv_task_report r;
  if (kv_task_check(t, &o, &r, err, sizeof err) < 0) {
    if (!json && proto[0])
      printf("a candidate for %s defines:\n%s", t->name, proto);
    free(proto);
    free(header);
    kv_task_free(t);
    return cli_fail("%s", err);
  }
  char *named = own_log(&r);
  if (json) {
    json_t *j = json_pack("{s:s,s:b,s:i,s:f,s:f}", "task", t->name, "ok", r.ok, "reference_calls",
                          r.ncalls, "compile_s", r.compile_s, "bench_reference_ms", r.bench_ref_ms);
    json_t *f = json_array(), *w = json_array();
    for (int i = 0; i < r.nfindings; i++)
      json_array_append_new(is_warning(r.findings[i]) ? w : f, json_string(r.findings[i]));
    json_object_set_new(j, "findings", f);
    json_object_set_new(j, "warnings", w);
    if (!r.ok && r.compile_log)
      json_object_set_new(j, "compile_log", json_string(named ? named : r.compile_log));
    json_object_set_new(j, "prototype", json_string(proto));
    json_object_set_new(j, "header", json_string(header));
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    free(s);
    json_decref(j);
  } else {
    printf("%s (%s, %s surface): %d check sizes, %d reference calls\n", t->name, dir, o.surface,
           t->ncheck, r.ncalls);
    for (int i = 0; i < r.nfindings; i++)
      printf(is_warning(r.findings[i]) ? "  %s\n" : "  problem: %s\n", r.findings[i]);
    if (r.bench_ref_ms >= 0)
      printf("  reference at the bench size: %.2f ms per call\n", r.bench_ref_ms);
    if (!r.ok && r.compile_log && r.compile_log[0])
      printf("%s", named ? named : r.compile_log);
    if (proto[0])
      printf("  a candidate defines:\n%s", proto);
    for (int i = 0; i < t->nparams; i++)
      if (t->params[i].npack) {
        printf("  (the offset and shape of every packed tensor: the task's README.md, or "
               "--json's header)\n");
        break;
      }
    printf("%s\n", r.ok ? "task ok" : "task rejected");
  }
  int code = r.ok ? 0 : 1;
  free(named);
  free(proto);
  free(header);
  kv_task_report_release(&r);
  kv_task_free(t);
  return code;
}
