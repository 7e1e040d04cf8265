/* kevo eval: judge one candidate and record the verdict in the store. */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "kevo/run.h"
#include "kevo/store.h"
#include "kevo/util.h"
#include "kevo/surface.h"

/* kevo could not judge: the message on stderr, and with --json an object
 * on stdout too ({"verdict": null, "error": ...}), so that a script reading
 * stdout learns why. Exit 2. */
static int eval_fail(int json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int eval_fail(int json, const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (json) {
    json_t *o = json_pack("{s:n,s:b,s:s?}", "verdict", "accepted", 0, "error", msg);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    printf("%s\n", s ? s : "{\"verdict\": null}");
    free(s);
    json_decref(o);
  }
  return cli_fail("%s", msg);
}

/* "-": the candidate from stdin (at most 1 MiB), into DIR/stdin.c or .cu
 * under a fresh directory of the cache. 0, or -1 with err. */
static int stdin_candidate(const char *ext, char *path, size_t cap, char *dir, size_t dircap,
                           char *err, size_t errlen) {
  char base[PATH_MAX];
  if (cli_cache_dir(base, sizeof base) < 0)
    return kv_error(err, errlen, "cannot find a cache directory; set KEVO_CACHE_DIR");
  if (kv_mkdtemp(base, "stdin", dir, dircap, err, errlen) < 0)
    return -1;
  struct kv_buf b;
  kv_buf_init(&b, KV_SOURCE_MAX);
  char chunk[65536];
  size_t n;
  int over = 0;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
    if (kv_buf_append(&b, chunk, n) < 0) {
      over = 1;
      break;
    }
  snprintf(path, cap, "%s/stdin.%s", dir, ext);
  int rc = over     ? kv_error(err, errlen, "-: the candidate on stdin is over 1 MiB")
           : !b.len ? kv_error(err, errlen, "-: nothing on stdin; pipe the candidate's source in")
                    : kv_write_file(path, b.data ? b.data : "", b.len, err, errlen);
  kv_buf_release(&b);
  if (rc < 0)
    kv_rmtree(dir);
  return rc;
}

static void record(const struct kv_task *t, const char *cand, const char *db,
                   const struct kv_gate_result *r, const char *json) {
  char path[PATH_MAX], err[1024];
  if (db)
    snprintf(path, sizeof path, "%s", db);
  else if (cli_store_path(path, sizeof path) < 0) {
    fprintf(stderr, "kevo: warning: no store location; set KEVO_DB or pass --db\n");
    return;
  }
  struct kv_store *s;
  if (kv_store_open(path, &s, err, sizeof err) < 0) {
    fprintf(stderr, "kevo: warning: the verdict was not recorded: %s\n", err);
    return;
  }
  char spec_hash[65];
  kv_sha256_hex(t->json, strlen(t->json), spec_hash);
  int64_t task_id;
  char *text = NULL;
  size_t len = 0;
  int rc = kv_store_put_task(s, t->name, t->dir, spec_hash, t->json, &task_id, err, sizeof err);
  if (rc == 0 && kv_read_file(cand, KV_SOURCE_MAX, &text, &len, err, sizeof err) == 0) {
    char h[65];
    kv_sha256_hex(text, len, h);
    rc = strcmp(h, r->source_hash)
             ? kv_error(err, sizeof err, "%s changed during the evaluation", cand)
             : kv_run_record_eval(s, task_id, cand, text, len, r, json, NULL, err, sizeof err);
  } else {
    rc = -1;
  }
  free(text);
  if (rc < 0)
    fprintf(stderr, "kevo: warning: the verdict was not recorded in %s: %s\n", path, err);
  kv_store_close(s);
}

/* The phases as they end (kv_gate_opts.on_phase): what kevo eval prints. */
struct shown {
  const char *cand;
  int compile, checks, timing, verdict, stat; /* printed already */
};

/* The do_bench cross-check of the torch sides (cuda, issue 27 item 4): each
 * side's do_bench time and kevo's time over it. */
static void print_do_bench(const struct kv_timing *t) {
  if (t->ref_do_bench_us > 0) {
    printf("           do_bench  eager %.1f us (kevo/do_bench %.3f)", t->ref_do_bench_us,
           t->ref.median_us / t->ref_do_bench_us);
    if (t->has_baseline && t->base_do_bench_us > 0)
      printf(", compile %.1f us (kevo/do_bench %.3f)", t->base_do_bench_us,
             t->base.median_us / t->base_do_bench_us);
    printf(": a speedup is comparable against a side within %.0f%%\n", 100 * KV_DO_BENCH_TOL);
  }
  if (t->do_bench_why[0] && strstr(t->do_bench_why, "stand-in"))
    printf("           note: do_bench: %s\n", t->do_bench_why);
  else if (t->do_bench_why[0])
    printf("           note: no do_bench cross-check of %s: %s\n",
           t->ref_do_bench_us > 0 ? "the baseline" : "the torch sides", t->do_bench_why);
}

static void print_compile(const struct kv_gate_result *r) {
  printf("  compile  %6.2f s%s\n", r->compile_s, r->compile_cached ? " (cached)" : "");
  for (int i = 0; i < r->nkernels && i < 8; i++) {
    const struct kv_kernel_res *k = &r->kernels[i];
    printf("           %-40.40s %3d regs %6ld B smem %4ld B stack%s\n", k->name, k->registers,
           k->smem_bytes, k->stack_bytes,
           k->spill_store_bytes || k->spill_load_bytes ? "  SPILLS" : "");
  }
}

/* The static analysis ends beside the checks and timing (kv_gate_eval). */
static void print_static(const struct kv_gate_result *r) {
  if (r->static_done) {
    printf("  static   %6.2f s  cuobjdump -sass, beside the checks: each kernel's mix\n",
           r->static_s);
    for (int i = 0; i < r->nkernels && i < 8; i++)
      if (r->kernels[i].has_sass) {
        char mix[512];
        kv_sass_mix_line(&r->kernels[i].sass, mix, sizeof mix);
        printf("           %-40.40s\n             %s\n", r->kernels[i].name, mix);
      }
  } else if (r->static_note[0]) {
    printf("  static   %s\n", r->static_note);
  }
}

static void print_checks(const struct kv_gate_result *r) {
  if (r->nchecks) {
    int pass = 0;
    for (int i = 0; i < r->nchecks; i++)
      pass += r->checks[i].verdict == KV_V_OK;
    if (r->jit_s > 0) /* the torch surface: import, Triton's JIT, load_inline (never timed) */
      printf("  load     %6.2f s  ModelNew imported, built and run once at each listed size "
             "(JIT and builds; not timed)\n",
             r->jit_s);
    printf("  checks   %6.2f s  %d/%d passed\n", r->check_s, pass, r->nchecks);
  }
}

/* The timing and the verdict (what the phases before them did not print).
 * The static analysis may come after it (on_phase "verdict"). */
static void print_verdict(const struct kv_gate_result *r, struct shown *sh) {
  if (!sh->compile) {
    printf("%s\n", sh->cand);
    print_compile(r);
    sh->compile = 1;
  }
  if (!sh->checks)
    print_checks(r);
  sh->checks = 1;
  if (r->timed) {
    const struct kv_timing *t = &r->timing;
    printf("  timing   %6.2f s  at %s\n", r->time_s, t->sizes);
    printf("           candidate %10.1f us  (IQR %.1f us, CV %.1f%%, n=%d)\n", t->cand.median_us,
           t->cand.iqr_us, 100 * t->cand.cv, t->cand.n);
    printf("           reference %10.1f us  (IQR %.1f us, CV %.1f%%, n=%d)\n", t->ref.median_us,
           t->ref.iqr_us, 100 * t->ref.cv, t->ref.n);
    if (t->ref_from_alone)
      printf("           beside    %10.1f us  (the reference beside the candidate's process; "
             "slower than alone, so the speedup is taken against alone)\n",
             t->ref_beside_us);
    else if (t->ref_alone.n)
      printf("           alone     %10.1f us  (the reference with no candidate process, n=%d)\n",
             t->ref_alone.median_us, t->ref_alone.n);
    if (t->phases)
      printf("           clock     %10.1f us  per call by kevo's clock (reported/kevo %.2f; %d "
             "phases of %d calls, %d checked)\n",
             t->parent_us, t->clock_ratio, t->phases, t->calls_per_phase, t->validated_calls);
    char bnote[160], rnote[160];
    kv_side_note(t, 1, bnote, sizeof bnote);
    kv_side_note(t, 0, rnote, sizeof rnote);
    if (t->has_baseline) {
      printf("           baseline  %10.1f us  (IQR %.1f us, CV %.1f%%, n=%d): %.2fx of it%s, %s",
             t->base.median_us, t->base.iqr_us, 100 * t->base.cv, t->base.n, t->speedup_vs_baseline,
             bnote, t->baseline_kind);
      if (t->baseline_compile_s > 0)
        printf(" (compiled in %.1f s, not timed)", t->baseline_compile_s);
      putchar('\n');
    }
    print_do_bench(t);
    if (t->cand_host_timer)
      printf("           note: the candidate's work ran outside the stream's events; timed by "
             "the host clock\n");
    if (t->torch_lead_us > 0)
      printf("           lead      %10.1f us  before each torch forward, so that Python's "
             "dispatch stays out of its events%s\n",
             t->torch_lead_us, t->torch_uncovered ? "" : " (every timed call covered)");
    if (t->torch_uncovered)
      printf("           note: %d torch call(s) outlasted their lead: launch latency may be in "
             "the reference's or baseline's times, so the speedup against them may be "
             "overstated\n",
             t->torch_uncovered);
    printf("           stages    warm-up %.2f s, loop %.2f s, validations %.2f s, alone %.2f s\n",
           t->stage_warmup_s, t->stage_loop_s, t->stage_validate_s, t->stage_alone_s);
    for (int i = 0; t->nsizes > 1 && i < t->nsizes; i++)
      printf("           at %-40s %10.1f us against %.1f us: %.2fx (%.2f-%.2fx), %.2f s\n",
             t->size[i].sizes, t->size[i].cand_us, t->size[i].ref_us, t->size[i].speedup,
             t->size[i].lo, t->size[i].hi, t->size[i].stages_s);
    if (!strcmp(t->method, "kernelbench"))
      printf("           method    KernelBench's: the mean of %d trials after %d warm-ups, "
             "same inputs, no flush between trials%s (candidate mean %.1f us, reference %.1f "
             "us)\n",
             KV_KB_TRIALS, KV_KB_WARMUP,
             t->kb_kept ? "" : "; the worker regenerated and flushed before each trial",
             t->cand.mean_us, t->ref.mean_us);
    printf("           speedup   %10.2fx%s%s", t->speedup,
           t->nsizes > 1 ? " (geometric mean over the sizes)" : "",
           !strcmp(t->method, "kernelbench") ? " (KernelBench's timing)"
           : !strcmp(t->method, "do_bench")  ? " (kevo's timing, do_bench's flush before each call)"
                                             : " (kevo's timing)");
    printf("%s", rnote);
    if (t->roofline > 0)
      printf("   %.0f%% of roofline (%.1f GB/s, %.1f GFLOP/s)", 100 * t->roofline, t->gbs,
             t->gflops);
    printf("\n");
    if (t->ci_level > 0) {
      printf("           interval  %5.2f-%.2fx  (%.1f%%: +-%.1f%%, kevo's clock ", t->speedup_lo,
             t->speedup_hi, 100 * t->ci_level, 100 * t->ci_half_width);
      if (t->ci_clock_half_width >= 0)
        printf("+-%.1f%%", 100 * t->ci_clock_half_width);
      else
        printf("too coarse");
      if (t->ci_target > 0 && !strcmp(t->stop, "ci"))
        printf("; stopped at %d phases of %d-%d: within the +-%.1f%% target)\n", t->phases,
               t->min_phases, t->max_phases, 100 * t->ci_target);
      else if (t->ci_target > 0)
        printf("; %s %d phases of %d-%d: not within the +-%.1f%% target)\n",
               !strcmp(t->stop, "deadline") ? "out of time at" : "ran all", t->phases,
               t->min_phases, t->max_phases, 100 * t->ci_target);
      else
        printf("; a fixed budget of %d phases)\n", t->phases);
    }
  }
  if (r->verdict == KV_V_COMPILE_ERROR && r->compile_log) {
    size_t n = strlen(r->compile_log);
    printf("%.*s%s", (int)(n > 4000 ? 4000 : n), r->compile_log, n > 4000 ? "\n[...]\n" : "");
  }
  if (r->stdout_truncated || r->stderr_truncated)
    printf("  note: the candidate's output was cut at %d KiB\n", KV_OUTPUT_CAP / 1024);
  if (r->device[0])
    printf("  device   %s\n", r->device);
  printf("verdict: %s%s%s\n", kv_verdict_name(r->verdict), r->detail[0] ? ": " : "", r->detail);
  fflush(stdout);
}

static void on_phase(void *ud, const char *phase, const struct kv_gate_result *r) {
  struct shown *sh = ud;
  if (!strcmp(phase, "compile") && !sh->compile) {
    printf("%s\n", sh->cand);
    print_compile(r);
    sh->compile = 1;
  } else if (!strcmp(phase, "checks") && !sh->checks) {
    print_checks(r);
    sh->checks = 1;
  } else if (!strcmp(phase, "static") && !sh->stat) {
    print_static(r);
    sh->stat = 1;
  } else if (!strcmp(phase, "verdict") && !sh->verdict) {
    print_verdict(r, sh);
    sh->verdict = 1;
  } else if (!strcmp(phase, "timing") && !sh->timing && isatty(STDOUT_FILENO)) {
    printf("  timing   ...\r"); /* overwritten by the timing's line */
    sh->timing = 1;
  }
  fflush(stdout);
}

/* What the phases did not print: the analysis (after the verdict when the
 * "verdict" phase printed it) and, without that phase, the verdict. */
static void print_human(const struct kv_gate_result *r, struct shown *sh) {
  if (!sh->stat)
    print_static(r);
  if (!sh->verdict)
    print_verdict(r, sh);
}

/* The result JSON on one line (JSON Lines, for several candidates). */
static void print_line(const char *js) {
  json_t *j = json_loads(js, 0, NULL);
  char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
  printf("%s\n", s ? s : js);
  free(s);
  json_decref(j);
}

/* Judges one candidate ("-": read from stdin), records and prints its
 * verdict (json: the result; lines: on one line). 0 accepted, 1 rejected, 2
 * kevo could not judge. */
static int eval_one(const struct kv_task *t, const char *cand, struct kv_gate_opts *o, int json,
                    int lines, const char *db) {
  const struct kv_surface *sf = kv_surface_find(o->surface);
  char err[4096], spath[PATH_MAX], sdir[PATH_MAX] = "";
  if (!strcmp(cand, "-")) {
    if (stdin_candidate(kv_surface_ext(sf), spath, sizeof spath, sdir, sizeof sdir, err,
                        sizeof err) < 0)
      return eval_fail(json, "%s", err);
    cand = spath;
  }
  if (access(cand, R_OK) != 0)
    return eval_fail(json, "%s: cannot read the candidate; give the path of a %s file", cand,
                     kv_surface_gpu(sf)                      ? "CUDA (.cu)"
                     : kv_surface_lang(sf) == KV_LANG_PYTHON ? "Python (.py) ModelNew"
                                                             : "C");
  struct kv_gate_result *r = calloc(1, sizeof *r);
  if (!r)
    return cli_fail("out of memory");
  struct shown shown = {.cand = cand};
  if (!json) { /* each phase as it ends */
    o->on_phase = on_phase;
    o->phase_ud = &shown;
  }
  int code;
  if (kv_gate_eval(t, cand, o, r, err, sizeof err) < 0) {
    code = eval_fail(json, "%s", err);
  } else {
    char *js = kv_gate_result_json(r);
    record(t, cand, db, r, js ? js : "{}");
    if (json && lines)
      print_line(js ? js : "{}");
    else if (json)
      printf("%s\n", js ? js : "{}");
    else
      print_human(r, &shown);
    fflush(stdout);
    code = r->verdict == KV_V_OK ? 0 : 1;
    free(js);
  }
  kv_gate_result_release(r);
  free(r);
  if (sdir[0])
    kv_rmtree(sdir);
  return code;
}

/* The next candidate, compiled into the cache while this one is judged
 * (kv_gate_prebuild; its evaluation then finds it built). */
struct ahead {
  const struct kv_task *t;
  struct kv_gate_opts o;
  const char *path;
  pthread_t th;
  int started;
};

static void *ahead_main(void *arg) {
  struct ahead *a = arg;
  kv_gate_prebuild(a->t, &a->path, 1, &a->o, NULL, 0); /* errors: its evaluation says */
  return NULL;
}

int cmd_eval(int argc, char **argv) {
  struct kv_gate_opts o;
  cli_gate_opts_default(&o);
  int json = 0;
  const char *db = NULL, *task_dir = NULL, *allow = NULL;
  const char **cands = calloc((size_t)argc, sizeof *cands);
  int ncand = 0, nstdin = 0;
  if (!cands)
    return cli_fail("out of memory");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    double v = 0;
    int bad = 0;
    if (!strcmp(a, "--json"))
      json = 1;
    else if (!strcmp(a, "--torch-compile") && i + 1 < argc) {
      o.torch_compile = argv[++i];
      bad = cli_torch_compile_mode(o.torch_compile);
    } else if (!strcmp(a, "--no-timing"))
      o.timing = 0;
    else if (!strcmp(a, "--surface") && i + 1 < argc)
      o.surface = argv[++i];
    else if (!strcmp(a, "--allow") && i + 1 < argc)
      allow = argv[++i]; /* vendor libraries beyond the task's "allow", this run only */
    else if (!strcmp(a, "--db") && i + 1 < argc)
      db = argv[++i];
    else if (!strcmp(a, "--seed") && i + 1 < argc) {
      bad = cli_number("--seed", argv[++i], &v);
      o.seed = (uint64_t)v;
    } else if (!strcmp(a, "--budget") && i + 1 < argc)
      bad = cli_number("--budget", argv[++i], &o.time_budget_s);
    else if (!strcmp(a, "--timing-ci") && i + 1 < argc)
      bad = cli_timing_ci(argv[++i], &o.timing_ci);
    else if (!strcmp(a, "--timing") && i + 1 < argc)
      bad = cli_timing_method(argv[++i], &o.timing_method);
    else if (!strcmp(a, "--deadline") && i + 1 < argc)
      bad = cli_number("--deadline", argv[++i], &o.job_deadline_s);
    else if (a[0] == '-' && a[1]) {
      eval_fail(json, "eval: unknown or incomplete option '%s'", a);
      free(cands);
      return cli_usage("eval");
    } else if (!task_dir)
      task_dir = a;
    else {
      nstdin += !strcmp(a, "-");
      cands[ncand++] = a;
    }
    if (bad) {
      free(cands);
      return 2;
    }
  }
  if (!task_dir || ncand == 0 || nstdin > 1) {
    eval_fail(json, nstdin > 1 ? "eval: stdin (-) can give one candidate only"
                               : "eval: needs a task directory and a candidate file (- reads "
                                 "it from stdin)");
    free(cands);
    return cli_usage("eval");
  }
  const struct kv_surface *sf = kv_surface_find(o.surface);
  if (!sf) {
    free(cands);
    return eval_fail(json, "--surface %s: not a surface; use one of %s", o.surface,
                     kv_surface_names());
  }
  char err[4096];
  struct kv_task *t;
  if (kv_task_load(task_dir, &t, err, sizeof err) < 0) {
    free(cands);
    return eval_fail(json, "%s", err);
  }
  if (allow && kv_task_allow_add(t, allow, "--allow", err, sizeof err) < 0) {
    kv_task_free(t);
    free(cands);
    return eval_fail(json, "%s", err);
  }
  struct kv_calib cal;
  /* cuda: the gate measures (once) and caches the GPU's ceilings itself. */
  if (o.timing && !kv_surface_gpu(sf)) {
    if (cli_calib(&cal, 0, json) != 0) {
      kv_task_free(t);
      free(cands);
      return 2;
    }
    o.calib = &cal;
  }
  /* Several candidates: judged in turn, the reference's workers kept warm
   * and each next candidate's process started as the last one's verdict is
   * out (kv_gate_warm), as in a run. */
  if (ncand > 1)
    o.warm = kv_gate_warm_new();
  int code = 0, nok = 0, nrej = 0;
  for (int i = 0; i < ncand && code != 2; i++) {
    if (ncand > 1 && !json)
      printf("[%d/%d] ", i + 1, ncand);
    /* cuda: the next candidate compiles while this one is judged (the CPU
     * is not what is timed there). */
    struct ahead ah = {.t = t, .o = o, .path = i + 1 < ncand ? cands[i + 1] : NULL};
    ah.o.on_phase = NULL;
    /* The compile only: the next evaluation waits for this thread, and its
     * analysis (0.45 s of CPU) runs beside that evaluation's checks
     * instead of lengthening the wait (nvcc's 1.5-2 s already exceeds a
     * verdict). */
    ah.o.prebuild_compile_only = 1;
    if (ah.path && strcmp(ah.path, "-") && kv_surface_gpu(sf))
      ah.started = pthread_create(&ah.th, NULL, ahead_main, &ah) == 0;
    int c = eval_one(t, cands[i], &o, json, ncand > 1, db);
    if (ah.started)
      pthread_join(ah.th, NULL);
    nok += c == 0;
    nrej += c == 1;
    code = c > code ? c : code;
  }
  if (ncand > 1 && !json) {
    int rw = 0, cw = 0;
    kv_gate_warm_stats(o.warm, &rw, &cw);
    printf("%d candidates: %d accepted, %d rejected%s; warm workers taken: reference %d, "
           "candidate %d\n",
           ncand, nok, nrej, code == 2 ? ", then kevo could not judge one (above)" : "", rw, cw);
  }
  kv_gate_warm_free(o.warm);
  kv_task_free(t);
  free(cands);
  return code;
}
