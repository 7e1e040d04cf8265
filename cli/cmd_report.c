/* kevo report: one self-contained HTML page of one or more runs; and
 * kevo runs show: a run's summary and tree in the terminal. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "kevo/report.h"
#include "kevo/store.h"
#include "kevo/util.h"

enum { REPORT_RUNS_MAX = 64 };

/* A run id as typed: a positive integer, nothing else. */
static int parse_run(const char *cmd, const char *text, int64_t *id) {
  char *end;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end || v <= 0)
    return cli_fail("%s: '%s' is not a run id (a positive number; see 'kevo runs')", cmd, text);
  *id = (int64_t)v;
  return 0;
}

int cmd_report(int argc, char **argv) {
  const char *db = NULL, *out = "report.html";
  struct kv_report_item items[REPORT_RUNS_MAX];
  int n = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db = argv[++i];
    } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "--bench")) {
      if (n == REPORT_RUNS_MAX)
        return cli_fail("report: at most %d sections in one page; make several reports",
                        REPORT_RUNS_MAX);
      items[n].kind = KV_REPORT_BENCH;
      items[n].id = 0; /* the latest bench, unless a number follows */
      if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
          parse_run("report --bench", argv[++i], &items[n].id))
        return cli_usage("report");
      n++;
    } else if (!strcmp(argv[i], "--analysis")) {
      if (n == REPORT_RUNS_MAX)
        return cli_fail("report: at most %d sections in one page; make several reports",
                        REPORT_RUNS_MAX);
      items[n].kind = KV_REPORT_ANALYSIS;
      items[n].id = 0; /* the latest analysis, unless a number follows */
      if (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9' &&
          parse_run("report --analysis", argv[++i], &items[n].id))
        return cli_usage("report");
      n++;
    } else if (argv[i][0] != '-') {
      if (n == REPORT_RUNS_MAX)
        return cli_fail("report: at most %d runs in one page; make several reports",
                        REPORT_RUNS_MAX);
      items[n].kind = KV_REPORT_RUN;
      if (parse_run("report", argv[i], &items[n].id))
        return cli_usage("report");
      n++;
    } else {
      cli_fail("report: unexpected argument '%s'", argv[i]);
      return cli_usage("report");
    }
  }
  char path[PATH_MAX];
  if (!db) {
    if (cli_store_path(path, sizeof path) != 0)
      return cli_fail("cannot find the store: set KEVO_DB or HOME, or pass --db PATH");
    db = path;
  }
  struct kv_store *s;
  if (cli_open_store(db, &s))
    return 2;
  struct kv_report_opts o = {0};
  o.store_path = db;
  struct kv_report_stats st;
  char *html = NULL, err[2048];
  size_t len = 0;
  int code = 0;
  double t0 = kv_now_s();
  if (kv_report_html(s, items, n, &o, &html, &len, &st, err, sizeof err) != 0)
    code = cli_fail("%s", err);
  else if (kv_write_file(out, html, len, err, sizeof err) != 0)
    code = cli_fail("report: %s; pass another -o FILE", err);
  kv_store_close(s);
  free(html);
  if (code)
    return code;
  char what[96] = "the latest run";
  if (n == 1 && items[0].kind == KV_REPORT_BENCH)
    snprintf(what, sizeof what, items[0].id ? "bench %lld" : "the latest bench",
             (long long)items[0].id);
  else if (n == 1 && items[0].kind == KV_REPORT_ANALYSIS)
    snprintf(what, sizeof what, items[0].id ? "analysis %lld" : "the latest analysis",
             (long long)items[0].id);
  else if (n == 1 && items[0].id)
    snprintf(what, sizeof what, "run %lld", (long long)items[0].id);
  else if (n > 1)
    snprintf(what, sizeof what, "%d sections", n);
  char tasks[96] = "";
  if (st.tasks)
    snprintf(tasks, sizeof tasks, ", %d bench tasks", st.tasks);
  if (st.bars || st.cells)
    snprintf(tasks + strlen(tasks), sizeof tasks - strlen(tasks), ", %d bars, %d cells", st.bars,
             st.cells);
  printf("report of %s (%d node%s%s, %.1f MiB, %.2f s): %s\n", what, st.nodes,
         st.nodes == 1 ? "" : "s", tasks, (double)len / (1 << 20), kv_now_s() - t0, out);
  if (st.elided)
    fprintf(stderr,
            "kevo: %d long texts were cut or left out of the page to keep it small; each says "
            "where the whole text is in the store\n",
            st.elided);
  return 0;
}

int cmd_runs_show(int argc, char **argv) {
  const char *db = NULL;
  int64_t id = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc) {
      db = argv[++i];
    } else if (argv[i][0] != '-' && !id) {
      if (parse_run("runs show", argv[i], &id))
        return 2;
    } else {
      return cli_fail("runs show: unexpected argument '%s'; usage: kevo runs show [--db PATH] "
                      "[RUN]",
                      argv[i]);
    }
  }
  struct kv_store *s;
  if (cli_open_store_readonly(db, &s))
    return 2;
  char *text = NULL, err[2048];
  size_t len = 0;
  int code = 0;
  if (kv_report_run_text(s, id, &text, &len, err, sizeof err) != 0)
    code = cli_fail("%s", err);
  else
    fwrite(text, 1, len, stdout);
  free(text);
  kv_store_close(s);
  return code;
}
