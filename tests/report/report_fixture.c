/* A stand-in store for the report's tests and benchmark, written through the
 * store's API: an ada-like run of N nodes (every verdict the gate has, the
 * agent's no_code and one verdict kevo does not know; small and large steps;
 * LLM calls, some failed; rules with their evaluations; a candidate whose
 * source, plan, params, detail and compile log are hostile markup), and a
 * tune-like run of six nodes. Times are set afterwards with SQL (the API
 * stamps "now"), so reports of it are the same every time.
 *
 * usage: report_fixture --db PATH [--nodes N] [--seed S]
 * prints one line of JSON: the runs' ids, the best speedup as the report
 * prints it, the hostile node's id and counts the tests assert. */
#include <jansson.h>
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kevo/store.h"
#include "kevo/util.h"

#define T0 1795424400 /* 2026-11-23 09:00 UTC */
#define BIG_STEP 9    /* its source is 100 KiB */

/* What must not run: each would mark the page if it ever executed. */
#define HOSTILE_SCRIPT "</script><script>alert(1)</script>"
#define HOSTILE_MARK                                                                               \
  "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"                \
  "</script><script>document.documentElement.setAttribute('data-pwned','2')</script>"

static const char *const VERDICTS[] = {
    "ok",          "policy_violation", "compile_error", "load_error",    "crash",
    "timeout",     "unwritten_output", "wrong_output",  "input_mutated", "stale_output",
    "implausible", "interference",     "no_code",       "exotic_verdict"};
enum { NV = sizeof VERDICTS / sizeof VERDICTS[0] };

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static double unit(void) {
  return (double)(next() >> 11) / 9007199254740992.0;
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "report_fixture: %s: %s\n", what, err);
  exit(2);
}

/* A kernel's source from its knobs: a child changes a knob or two, so its
 * diff to its parent is a few lines, as in a real search. */
struct genome {
  int lanes, unroll, sched, prefetch, block;
};

static void source_of(const struct genome *g, int step, int hostile, struct kv_buf *b) {
  kv_buf_reset(b);
  if (step == BIG_STEP) /* past the page's 64 KiB cap: shown cut, with a note */
    for (int i = 0; i < 1600; i++)
      kv_buf_appendf(b, "/* a long generated table, row %4d: 0x%08x 0x%08x 0x%08x */\n", i,
                     i * 2654435761u, i * 40503u, i * 2246822519u);
  kv_buf_appendf(
      b, "/* candidate written at step %d */\n#include <stddef.h>\n#include <string.h>\n\n", step);
  if (hostile)
    kv_buf_appendf(b, "/* %s */\n/* %s */\n", HOSTILE_SCRIPT, HOSTILE_MARK);
  kv_buf_appendf(b, "#define LANES %d\n#define UNROLL %d\n#define BLOCK %d\n\n", g->lanes,
                 g->unroll, g->block);
  kv_buf_appendf(b, "static float row_sum(const float *xr, int cols) {\n"
                    "  float acc[LANES] = {0};\n  int c = 0;\n");
  if (g->prefetch)
    kv_buf_appendf(b, "  __builtin_prefetch(xr + BLOCK);\n");
  kv_buf_appendf(b, "  for (; c + LANES * UNROLL <= cols; c += LANES * UNROLL)\n"
                    "    for (int u = 0; u < UNROLL; u++)\n"
                    "      for (int l = 0; l < LANES; l++)\n"
                    "        acc[l] += xr[c + u * LANES + l];\n"
                    "  float t = 0;\n  for (; c < cols; c++)\n    t += xr[c];\n"
                    "  for (int l = 0; l < LANES; l++)\n    t += acc[l];\n  return t;\n}\n\n");
  kv_buf_appendf(b, "void rowsum(const float *x, float *y, int rows, int cols) {\n");
  static const char *const sched[] = {"static", "dynamic", "guided"};
  kv_buf_appendf(b, "#pragma omp parallel for schedule(%s)\n", sched[g->sched % 3]);
  kv_buf_appendf(b, "  for (int r = 0; r < rows; r++)\n"
                    "    y[r] = row_sum(x + (size_t)r * (size_t)cols, cols);\n}\n");
}

static void mutate(struct genome *g) {
  int k = (int)(next() % 5);
  switch (k) {
  case 0:
    g->lanes = 1 << (next() % 5);
    break;
  case 1:
    g->unroll = 1 + (int)(next() % 4);
    break;
  case 2:
    g->sched = (int)(next() % 3);
    break;
  case 3:
    g->prefetch = !g->prefetch;
    break;
  default:
    g->block = 64 << (next() % 4);
  }
}

/* The gate's verdict as JSON, shaped like kv_gate_result_json's. */
static char *result_json(const char *verdict, const char *detail, double speedup, const char *log) {
  int ok = !strcmp(verdict, "ok");
  double med = ok ? 40000.0 / speedup : 0;
  char checks[4096] = "";
  size_t l = 0;
  for (int i = 0; i < 6; i++) {
    int fail = !ok && i == 2 && strcmp(verdict, "compile_error");
    l += (size_t)snprintf(checks + l, sizeof checks - l,
                          "%s{\"sizes\":\"rows=%d cols=%d\",\"seed\":%d,\"verdict\":\"%s\","
                          "\"detail\":\"%s\",\"max_abs_err\":0.0,\"max_rel_err\":0.0}",
                          i ? "," : "", 1 + i * 40, 1 + i * 800, 1000 + i, fail ? verdict : "ok",
                          fail ? "y[3]: expected 1.25, got 0" : "max |diff| 1e-06");
    if (!ok && fail)
      break;
  }
  /* the log and the detail as JSON strings, quotes and all */
  json_t *jl = json_string(log), *jd = json_string(detail);
  char *jlog = json_dumps(jl, JSON_ENCODE_ANY), *jdet = json_dumps(jd, JSON_ENCODE_ANY);
  json_decref(jl);
  json_decref(jd);
  if (!jlog || !jdet)
    die("result_json", "a log or detail that is not UTF-8");
  char timing[1024] = "";
  if (ok)
    snprintf(timing, sizeof timing,
             ",\"timing\":{\"sizes\":\"rows=8192 cols=8192\",\"median_us\":%.3f,"
             "\"reference_median_us\":40000.0,\"speedup\":%.6f,"
             "\"candidate\":{\"n\":23,\"median_us\":%.3f,\"iqr_us\":%.3f,\"cv\":0.031,"
             "\"min_us\":%.3f,\"mean_us\":%.3f},"
             "\"reference\":{\"n\":23,\"median_us\":40000.0,\"iqr_us\":900.0,\"cv\":0.02,"
             "\"min_us\":39000.0,\"mean_us\":40100.0},\"bytes\":268468224.0,\"flops\":67108864.0,"
             "\"gbs\":%.3f,\"gflops\":%.3f,\"roofline_fraction\":%.4f,\"wall_s\":1.2,"
             "\"covered_s\":1.1,\"reference_alone\":{\"n\":6,\"median_us\":39800.0,"
             "\"iqr_us\":400.0,\"cv\":0.01,\"min_us\":39500.0,\"mean_us\":39900.0},"
             "\"clock\":{\"phases\":4,\"calls_per_phase\":6,\"validated_calls\":8,"
             "\"parent_us_per_call\":%.3f,\"reported_over_parent\":0.99,"
             "\"slack_us_per_call\":20.0,\"median_raised\":false}}",
             med, speedup, med, med * 0.03, med * 0.97, med * 1.01, 268.468224 / med * 1e3,
             67.108864 / med * 1e3, 0.2 * speedup / 4, med);
  size_t cap = 8192 + strlen(jlog) + strlen(jdet);
  char *out = malloc(cap);
  snprintf(out, cap,
           "{\"verdict\":\"%s\",\"accepted\":%s,\"detail\":%s,\"surface\":\"cpu\","
           "\"device\":\"cpu:Stand-in CPU x2\",\"source_sha256\":\"-\","
           "\"compile\":{\"seconds\":0.21,\"cached\":false,\"log\":%s},\"checks\":[%s],"
           "\"seconds\":{\"compile\":0.21,\"check\":0.05,\"timing\":%.2f}%s,"
           "\"stdout\":\"\",\"stderr\":\"\",\"stdout_truncated\":false,"
           "\"stderr_truncated\":false,\"sandbox\":{\"no_new_privs\":\"active\","
           "\"netns\":\"active\",\"landlock\":\"active\",\"seccomp\":\"active\","
           "\"rlimits\":\"active\",\"landlock_abi\":7}}",
           verdict, ok ? "true" : "false", jdet, jlog, checks, ok ? 1.4 : 0.0, timing);
  free(jlog);
  free(jdet);
  return out;
}

static void set_times(const char *db, int64_t ada, int64_t tune, int n) {
  sqlite3 *h;
  if (sqlite3_open(db, &h) != SQLITE_OK)
    die(db, sqlite3_errmsg(h));
  char sql[2048];
  snprintf(sql, sizeof sql,
           "BEGIN;"
           "UPDATE runs SET created = %d, updated = %d, status = 'done' WHERE id = %lld;"
           "UPDATE nodes SET created = %d + step * 6 + 4 WHERE run_id = %lld;"
           "UPDATE llm_calls SET created = %d + coalesce((SELECT step FROM nodes WHERE "
           "nodes.id = llm_calls.node_id), 0) * 6 + 2 WHERE run_id = %lld;"
           "UPDATE runs SET created = %d, updated = %d, status = 'done' WHERE id = %lld;"
           "UPDATE nodes SET created = %d + step * 5 + 5 WHERE run_id = %lld;"
           "UPDATE analyses SET created = %d + 3600, updated = %d + 3900;"
           "COMMIT;",
           T0, T0 + n * 6 + 5, (long long)ada, T0, (long long)ada, T0, (long long)ada,
           T0 + n * 6 + 60, T0 + n * 6 + 95, (long long)tune, T0 + n * 6 + 60, (long long)tune,
           T0 + n * 6, T0 + n * 6);
  char *e = NULL;
  if (sqlite3_exec(h, sql, NULL, NULL, &e) != SQLITE_OK)
    die("set times", e ? e : "?");
  sqlite3_close(h);
}

int main(int argc, char **argv) {
  const char *db = NULL;
  int n = 40;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
      n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      rng = 88172645463325252ull ^ (uint64_t)strtoull(argv[++i], NULL, 10) * 0x9E3779B97F4A7C15ull;
    else {
      fprintf(stderr, "usage: report_fixture --db PATH [--nodes N] [--seed S]\n");
      return 2;
    }
  }
  if (!db || n < NV + 2 || n > 200000) {
    fprintf(stderr, "report_fixture: --db PATH is needed and --nodes between %d and 200000\n",
            NV + 2);
    return 2;
  }
  char err[2048];
  struct kv_store *s;
  if (kv_store_open(db, &s, err, sizeof err) != 0)
    die("open", err);
  const char *spec = "{\"name\":\"rowsum\",\"entry\":\"rowsum\",\"summary\":\"row sums\"}";
  int64_t task;
  if (kv_store_put_task(s, "rowsum", "examples/tasks/rowsum", "fixture-spec-hash", spec, &task, err,
                        sizeof err) != 0)
    die("task", err);
  int64_t ada;
  const char *cfg =
      "{\"llm\":{\"concurrency\":4,\"plan_mode\":\"explicit\",\"p_large\":0.3},"
      "\"model\":{\"api_key_env\":\"\",\"base_url\":\"http://127.0.0.1:8000/v1\","
      "\"model\":\"stand-in-coder\",\"name\":\"local\",\"provider\":\"openai\"},\"seed\":1,"
      "\"steps\":%d,\"strategy\":\"ada\",\"surface\":\"cpu\",\"task_dir\":\"examples/tasks/"
      "rowsum\"}";
  char cbuf[1024];
  snprintf(cbuf, sizeof cbuf, cfg, n);
  if (kv_store_run_create(s, task, "ada", cbuf, &ada, err, sizeof err) != 0)
    die("run", err);

  int64_t *ids = calloc((size_t)n, sizeof *ids), *evals = calloc((size_t)n, sizeof *evals);
  struct genome *gs = calloc((size_t)n, sizeof *gs);
  double *sp = calloc((size_t)n, sizeof *sp);
  int *vk = calloc((size_t)n, sizeof *vk);
  struct kv_buf src;
  kv_buf_init(&src, 1 << 20);
  double best = 0;
  int hostile_step = 5, ok_count = 0, failed_calls = 0, next_v = 1;
  int64_t hostile_id = 0;
  for (int i = 0; i < n; i++) {
    /* the parent: none for step 0 and about 30% large steps, else a recent node */
    int parent = -1;
    if (i > 0 && (unit() >= 0.3 || i == hostile_step)) {
      int back = 1 + (int)(next() % (i < 40 ? (unsigned)i : 40u));
      parent = i - back;
    }
    int v;
    if (i == 0 || i == hostile_step)
      v = 0;
    else if (next_v < NV)
      v = next_v++; /* every verdict once, in order, first */
    else {
      double u = unit();
      v = u < 0.45   ? 0
          : u < 0.60 ? 2
          : u < 0.72 ? 7
          : u < 0.78 ? 4
          : u < 0.83 ? 3
          : u < 0.87 ? 5
          : u < 0.92 ? 12
                     : 1 + (int)(next() % (NV - 1));
    }
    if (v >= NV)
      v = 0;
    vk[i] = v;
    struct genome g = {8, 1, 0, 0, 128};
    if (parent >= 0) {
      g = gs[parent];
      mutate(&g);
      if (unit() < 0.4)
        mutate(&g);
    } else if (i > 0) {
      g.lanes = 1 << (next() % 5);
      g.unroll = 1 + (int)(next() % 4);
      g.sched = (int)(next() % 3);
    }
    gs[i] = g;
    const char *verdict = VERDICTS[v];
    int ok = v == 0, hostile = i == hostile_step;
    if (ok) {
      double base = parent >= 0 && sp[parent] > 0 ? sp[parent] : 0.6 + 2.2 * unit();
      sp[i] = base * exp(0.35 * (unit() - 0.42));
      if (sp[i] > 40)
        sp[i] = 40;
      ok_count++;
    } else {
      sp[i] = -1;
    }
    /* the candidate: a kernel, or (no_code) the model's reply without one */
    if (!strcmp(verdict, "no_code")) {
      kv_buf_reset(&src);
      kv_buf_appendf(&src, "I would rather explain the idea (step %d): sum each row.\n", i);
    } else {
      source_of(&g, i, hostile, &src);
    }
    char hash[65];
    kv_sha256_hex(src.data, src.len, hash);
    if (kv_store_put_source(s, hash, src.data, src.len, err, sizeof err) != 0)
      die("source", err);
    char detail[1024], log[2048] = "";
    if (ok)
      snprintf(detail, sizeof detail,
               "passed 6 checks; %.2fx the reference at rows=8192 cols=8192%s", sp[i],
               hostile ? " " HOSTILE_MARK : "");
    else
      snprintf(detail, sizeof detail, "%s at rows=81 cols=1601: y[3]: expected 1.25, got 0",
               verdict);
    if (v == 2 || hostile)
      snprintf(log, sizeof log,
               "candidate.c:12:5: error: 'fast_sum' undeclared (first use in this function)\n"
               "   12 |     fast_sum(xr, cols);\n      |     ^~~~~~~~%s\n",
               hostile ? "\ncandidate.c:1:1: note: " HOSTILE_SCRIPT " " HOSTILE_MARK : "");
    int64_t eval = 0;
    if (strcmp(verdict, "no_code")) {
      char *rj = result_json(verdict, detail, sp[i], log);
      struct kv_eval_record er = {task,
                                  hash,
                                  NULL,
                                  "cpu",
                                  "cpu:Stand-in CPU x2",
                                  verdict,
                                  detail,
                                  ok ? 40000.0 / sp[i] : -1,
                                  ok ? sp[i] : -1,
                                  rj};
      if (kv_store_add_eval(s, &er, &eval, err, sizeof err) != 0)
        die("eval", err);
      free(rj);
    }
    evals[i] = eval;
    char params[256] = "", plan[1024];
    const char *action;
    if (parent < 0) {
      action = i == 0 ? "sample" : "large";
      if (i > 0)
        snprintf(params, sizeof params, "pool=%d,%d", (int)(next() % (unsigned)i),
                 (int)(next() % (unsigned)i));
    } else {
      action = vk[parent] == 0 ? "refine" : "debug";
      snprintf(params, sizeof params, "parent=%d%s", parent, hostile ? " " HOSTILE_MARK : "");
    }
    snprintf(plan, sizeof plan,
             "1. Keep %d float lanes per row and unroll %d times.\n2. Schedule rows %s.%s", g.lanes,
             g.unroll, g.sched == 0 ? "statically" : "dynamically",
             hostile ? "\n3. " HOSTILE_SCRIPT " " HOSTILE_MARK : "");
    struct kv_node_record nr = {0};
    nr.run_id = ada;
    nr.parent_id = parent >= 0 ? ids[parent] : 0;
    nr.step = i;
    nr.source_hash = hash;
    nr.eval_id = eval;
    nr.action = action;
    nr.params = params[0] ? params : NULL;
    nr.verdict = verdict;
    nr.speedup = ok ? sp[i] : -1;
    nr.reward = ok ? 1.0 + 0.3 * log2(sp[i]) : (v == 2 || v == 12) ? 0 : 0.05;
    nr.plan = plan;
    if (kv_store_node_add(s, &nr, &ids[i], err, sizeof err) != 0)
      die("node", err);
    if (hostile)
      hostile_id = ids[i];
    if (ok && sp[i] > best)
      best = sp[i];
    /* its LLM calls: a planner and a coder; one in 25 coders fails */
    for (int c = 0; c < 2; c++) {
      int fail = c == 1 && i % 25 == 7;
      failed_calls += fail;
      struct kv_llm_call_record lc = {0};
      lc.role = c ? "coder" : "planner";
      lc.provider = "openai";
      lc.model = "stand-in-coder";
      lc.base_url = "http://127.0.0.1:8000/v1";
      lc.cache_key = hash;
      lc.sample = c;
      lc.request_json = "{\"messages\":[]}";
      lc.reply_text = fail ? NULL : "ok";
      lc.status = fail ? "timeout" : "ok";
      lc.error = fail ? "openai: no reply within 300 s" : NULL;
      lc.attempts = fail ? 3 : 1;
      lc.latency_s = 2.0 + 6 * unit();
      lc.input_tokens = fail ? -1 : 1200 + (int64_t)(next() % 900);
      lc.output_tokens = fail ? -1 : (c ? 500 : 120) + (int64_t)(next() % 400);
      lc.cost_usd = fail ? 0 : (lc.input_tokens * 0.15 + lc.output_tokens * 0.6) / 1e6;
      lc.run_id = ada;
      lc.node_id = ids[i];
      if (kv_store_add_llm_call(s, &lc, NULL, err, sizeof err) != 0)
        die("llm call", err);
    }
  }
  /* rules from this run's failures, one of them hostile */
  const char *rules[][2] = {
      {"You cannot call fast_sum: no library the kernel is linked with defines it.", "compiler"},
      {"You cannot write to y before reading every element of its row.", "llm"},
      {"You cannot " HOSTILE_SCRIPT " " HOSTILE_MARK, "llm"},
  };
  int nrules = 0;
  for (int r = 0; r < 3; r++) {
    int64_t rid = 0;
    int seen = 0;
    for (int i = 1; i < n; i++) {
      if (!evals[i] || vk[i] == 0 || (i + r) % 3)
        continue;
      if (!seen++) {
        if (kv_store_rule_add(s, rules[r][0], rules[r][1], 1, evals[i], &rid, err, sizeof err))
          die("rule", err);
      } else if (seen <= 200 && kv_store_rule_seen(s, rid, 1, evals[i], err, sizeof err)) {
        die("rule seen", err);
      }
    }
    nrules += seen > 0;
  }

  /* a tune-like run: the starter's knobs, every node a root */
  struct genome g0 = {1, 1, 0, 0, 128};
  source_of(&g0, 0, 0, &src);
  char starter[65];
  kv_sha256_hex(src.data, src.len, starter);
  if (kv_store_put_source(s, starter, src.data, src.len, err, sizeof err) != 0)
    die("starter", err);
  snprintf(cbuf, sizeof cbuf,
           "{\"seed\":0,\"starter\":\"%s\",\"steps\":6,\"strategy\":\"tune\",\"surface\":\"cpu\","
           "\"task_dir\":\"examples/tasks/rowsum\"}",
           starter);
  int64_t tune;
  if (kv_store_run_create(s, task, "tune", cbuf, &tune, err, sizeof err) != 0)
    die("tune run", err);
  for (int i = 0; i < 6; i++) {
    struct genome g = g0;
    g.lanes = 1 << i;
    source_of(&g, 0, 0, &src);
    char hash[65], params[32], detail[128];
    kv_sha256_hex(src.data, src.len, hash);
    kv_store_put_source(s, hash, src.data, src.len, err, sizeof err);
    int ok = i != 5;
    double speed = ok ? 1.1 + 0.6 * i : -1;
    snprintf(params, sizeof params, "NACC=%d", 1 << i);
    snprintf(detail, sizeof detail, ok ? "passed 6 checks; %.2fx" : "does not compile", speed);
    char *rj = result_json(ok ? "ok" : "compile_error", detail, speed, ok ? "" : "error: x");
    struct kv_eval_record er = {task,
                                hash,
                                NULL,
                                "cpu",
                                "cpu:Stand-in CPU x2",
                                ok ? "ok" : "compile_error",
                                detail,
                                ok ? 40000 / speed : -1,
                                speed,
                                rj};
    int64_t eval;
    if (kv_store_add_eval(s, &er, &eval, err, sizeof err) != 0)
      die("tune eval", err);
    free(rj);
    struct kv_node_record nr = {0};
    nr.run_id = tune;
    nr.step = i;
    nr.source_hash = hash;
    nr.eval_id = eval;
    nr.action = "exhaustive";
    nr.params = params;
    nr.verdict = ok ? "ok" : "compile_error";
    nr.speedup = speed;
    nr.reward = -1;
    if (kv_store_node_add(s, &nr, NULL, err, sizeof err) != 0)
      die("tune node", err);
  }
  /* A bench of five tasks on two levels: the two runs' tasks done, one task
   * that failed with a hostile error, one skipped, one never run. */
  {
    const char *dirs[] = {"/suite/level1/rowsum", "/suite/level1/tuned", "/suite/level2/bad",
                          "/suite/level2/nostarter", "/suite/level2/later"};
    const char *names[] = {"level1/rowsum", "level1/tuned", "level2/bad", "level2/nostarter",
                           "level2/later"};
    int levels[] = {1, 1, 2, 2, 2};
    int64_t bench;
    if (kv_store_bench_create(s, "/suite", "{\"steps\":4,\"strategy\":\"ada\"}", dirs, names,
                              levels, 5, &bench, err, sizeof err) != 0)
      die("bench", err);
    struct kv_bench_task_row *rows;
    int nb;
    if (kv_store_bench_tasks(s, bench, &rows, &nb, err, sizeof err) != 0 || nb != 5)
      die("bench tasks", err);
    static char done[] = "done", failed[] = "failed", skipped[] = "skipped";
    static char hostile[] = "task.json: " HOSTILE_MARK;
    char *st[] = {done, done, failed, skipped, NULL};
    double spd[] = {best, 1.25, 0, 0, 0};
    int64_t runs[] = {ada, tune, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
      free(rows[i].status);
      rows[i].status = st[i];
      rows[i].run_id = runs[i];
      rows[i].correct = spd[i] > 0;
      rows[i].speedup = spd[i];
      rows[i].detail = i == 2 ? hostile : NULL;
      if (kv_store_bench_task_update(s, &rows[i], err, sizeof err) != 0)
        die("bench task", err);
      rows[i].status = NULL;
      rows[i].detail = NULL;
    }
    kv_bench_task_rows_free(rows, nb);
  }
  /* Three analyses of the ada run over six of its nodes (kevo analyze's
   * samples, as it records them): a Shapley analysis of four players whose
   * outcomes are closed forms (it compiles with probability 0.5 + 0.4 [history]
   * - 0.2 [profile]; it passes iff performance and history are both on: phi
   * 1/2 each, I = 1; it is fast iff rules is on as well: phi 1/3 each),
   * the planning x alignment experiment (it passes iff plan and aligned) and
   * plan transfer (no plan 1/4, own plan 1/2, transferred 3/4). */
  int64_t an_ids[3] = {0, 0, 0};
  {
    static const char *const exps[3] = {"shapley", "planning", "transfer"};
    static const char *const cfgs[3] = {
        "{\"fast_threshold\":1.0,\"gen_lo\":0,\"gen_hi\":-1,\"label\":\"local\","
        "\"model\":\"stand-in-coder\",\"players\":[\"performance\",\"profile\","
        "\"history:summary\",\"rules\"],\"provider\":\"openai\",\"samples\":4,"
        "\"timing\":true}",
        "{\"fast_threshold\":1.0,\"gen_lo\":0,\"gen_hi\":-1,\"label\":\"local\","
        "\"model\":\"stand-in-coder\",\"players\":[],\"provider\":\"openai\",\"samples\":4,"
        "\"timing\":true}",
        "{\"fast_threshold\":1.0,\"gen_lo\":0,\"gen_hi\":-1,\"label\":\"local\","
        "\"model\":\"stand-in-coder\",\"players\":[],\"provider\":\"openai\",\"samples\":4,"
        "\"target\":{\"model\":\"stand-in-small\",\"provider\":\"openai\"},\"timing\":true}"};
    static const int nconds[3] = {16, 4, 3};
    for (int e = 0; e < 3; e++) {
      int created;
      if (kv_store_analysis_open(s, ada, exps[e], cfgs[e], 1, &an_ids[e], &created, err,
                                 sizeof err) != 0)
        die("analysis", err);
      for (int node = 2; node < 8; node++)
        for (int c = 0; c < nconds[e]; c++)
          for (int j = 0; j < 4; j++) {
            int perf = c & 1, prof = (c >> 1) & 1, hist = (c >> 2) & 1, rules = (c >> 3) & 1;
            int compiles, pass, fast;
            if (e == 0) {
              compiles = unit() < 0.5 + 0.4 * hist - 0.2 * prof;
              pass = perf && hist;
              fast = pass && rules;
            } else if (e == 1) {
              pass = (c & 1) && (c & 2);
              compiles = pass || unit() < 0.5;
              fast = pass;
            } else {
              pass = unit() < 0.25 * (c + 1);
              compiles = pass || unit() < 0.5;
              fast = pass && j % 2;
            }
            struct kv_analysis_sample a = {0};
            a.analysis_id = an_ids[e];
            a.node_id = ids[node];
            a.cond = c;
            a.sample = j;
            a.verdict = pass ? "ok" : compiles || fast ? "wrong_output" : "compile_error";
            a.speedup = pass ? (fast ? 1.5 + 0.25 * j : 0.8) : -1;
            a.plan_tags = (unsigned)((hist && j % 2 ? 1u : 0u) | (rules ? 4u : 0u));
            if (kv_store_analysis_sample_put(s, &a, err, sizeof err) != 0)
              die("analysis sample", err);
          }
      if (kv_store_analysis_set_status(s, an_ids[e], "done", err, sizeof err) != 0)
        die("analysis status", err);
    }
  }
  kv_store_close(s);
  set_times(db, ada, tune, n);
  printf("{\"run\":%lld,\"tune_run\":%lld,\"nodes\":%d,\"best\":\"%.2f\",\"hostile_node\":%lld,"
         "\"accepted\":%d,\"verdicts\":%d,\"rules\":%d,\"failed_calls\":%d,"
         "\"analysis\":%lld,\"planning_analysis\":%lld,\"transfer_analysis\":%lld}\n",
         (long long)ada, (long long)tune, n, best, (long long)hostile_id, ok_count, NV, nrules,
         failed_calls, (long long)an_ids[0], (long long)an_ids[1], (long long)an_ids[2]);
  kv_buf_release(&src);
  free(ids);
  free(evals);
  free(gs);
  free(sp);
  free(vk);
  return 0;
}
