#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kevo/util.h"

static const struct kv_command commands[] = {
    {"eval", cmd_eval,
     "kevo eval [--surface cpu|cuda|torch] [--json] [--db PATH] [--seed N] [--no-timing] "
     "[--budget SECONDS] [--timing-ci X|off] [--timing kevo|kernelbench|do_bench] [--deadline "
     "SECONDS] "
     "[--torch-compile MODE] "
     "[--allow cublas,cublaslt,cudnn] TASK_DIR CANDIDATE [CANDIDATE...]",
     "judge candidate kernels (several: in turn, workers kept warm): exit 0 all accepted, 1 "
     "one rejected, 2 could not judge"},
    {"task", cmd_task,
     "kevo task check [--surface cpu|cuda|torch] [--deadline SECONDS] [--json] TASK_DIR | kevo "
     "task "
     "starter [-o FILE] [--surface cpu|cuda|torch] [--python PATH] [--deadline SECONDS] TASK_DIR",
     "validate a task: the reference runs and no trivial output passes; or write a minimal "
     "correct candidate of an imported task"},
    {"doctor", cmd_doctor, "kevo doctor",
     "check compilers, tools, the worker and every sandbox layer"},
    {"profile", cmd_profile,
     "kevo profile [--json] [--deadline SECONDS] [--seed N] TASK_DIR CANDIDATE",
     "cuda: Nsight Compute on one bench-size call of a candidate (and the reference), summarised"},
    {"sanitize", cmd_sanitize,
     "kevo sanitize [--surface cuda|cpu] [--json] [--deadline SECONDS] [--seed N] TASK_DIR "
     "CANDIDATE",
     "one check-size call under compute-sanitizer (cuda: memcheck, racecheck, synccheck, "
     "initcheck) or AddressSanitizer+UBSan (cpu): exit 1 with findings"},
    {"device", cmd_device, "kevo device [--surface cpu|cuda] [--recalibrate] [--json]",
     "measure (once) and show this device's bandwidth and FMA peak"},
    {"llm", cmd_llm,
     "kevo llm ask [--provider openai|anthropic|replay] [--base-url URL] [--model ID] "
     "[--api-key-env NAME] [--timeout S] [--db PATH] [--config FILE] [--max-tokens N] "
     "[--temperature T] [--system TEXT] [--max-usd USD] [--sample N] PROMPT | kevo llm calls "
     "[--run RUN] [--limit N] [--json] [--db PATH]",
     "talk to a model (reply on stdout, usage and cost on stderr); list the recorded calls"},
    {"run", cmd_run,
     "kevo run [--strategy ada|greedy|best-of-n|tune] [--provider P] [--base-url URL] "
     "[--model ID] [--api-key-env NAME] [--config FILE] [--steps N] [--budget-usd X] "
     "[--concurrency K] "
     "[--plan-mode explicit|implicit] [--prompt-blocks LIST] [--prompts DIR] [--p-large P] "
     "[--small-limit N] [--explore C] [--rule-threshold N] [--rules-llm] [--online-attribution "
     "SHARE] "
     "[--attr-price R] [--skills on|off] [--seed S] "
     "[--budget SECONDS] [--timing-ci X|off] [--timing kevo|kernelbench|do_bench] [--no-timing] "
     "[--surface cpu|cuda|torch] [--starter FILE] "
     "[--db PATH] "
     "[--executor local|gpus|ssh|slurm] [--gpus LIST] [--executor-config FILE] [-o FILE] TASK_DIR",
     "search for the fastest accepted kernel; with no LLM, tune the starter's kevo:tune knobs"},
    {"runs", cmd_runs, "kevo runs [--json] [--db PATH] | kevo runs show [RUN] [--db PATH]",
     "list runs, newest first; show one as an indented tree of its candidates"},
    {"resume", cmd_resume,
     "kevo resume [--db PATH] [--provider P] [--base-url URL] [--model ID] [--budget-usd X] "
     "[--executor local|gpus|ssh|slurm] [--gpus LIST] [--executor-config FILE] [--concurrency K] "
     "[--budget SECONDS] [--no-timing] [--steps N] [-o FILE] RUN",
     "continue a stopped or killed run (--steps N: N more steps, also of a finished one); write "
     "its best kernel"},
    {"rules", cmd_rules,
     "kevo rules list [--all] | show ID | export [--min-count N] FILE | import FILE | audit "
     "[--apply] | unflag ID  [--db PATH]",
     "the validity rules learnt from failures (list shows those seen at least twice); export and "
     "import them with their provenance; audit flags and lists the untrustworthy"},
    {"synthesize", cmd_synthesize,
     "kevo synthesize --n N [--style composite|mutation|self-instruct] [--from SUITE_DIR] "
     "[-o DIR] [--ops FILE] [--seed S] [--jobs N] [--concurrency K] [--deadline S] [--max-gib G] "
     "[--python PATH] [--fresh] [--provider P] [--base-url URL] [--model ID] [--api-key-env NAME] "
     "[--config FILE] [--budget-usd X] [--db PATH]",
     "an LLM writes practice tasks (KernelBench-format PyTorch modules), each run, checked and "
     "refused when broken or a duplicate (resumable)"},
    {"adapt", cmd_adapt,
     "kevo adapt [--steps N] [--jobs N] [--judge-max N] [--no-rules-llm] [--fresh] [the options of "
     "kevo "
     "run] SUITE_DIR",
     "run the agent over a practice suite to grow the memory of rules, then merge, audit and "
     "report them (resumable)"},
    {"import", cmd_import,
     "kevo import [-o OUTDIR] [--jobs N] [--deadline S] [--max-gib G] [--device-memory GIB] "
     "[--allow cublas,cudnn,cublaslt] [--python PATH] [--force] "
     "FILE.py|DIR...",
     "write a task for each KernelBench-style PyTorch module (a DIR: every *.py in it)"},
    {"bench", cmd_bench,
     "kevo bench [--strategy S] [--steps N] [--budget-usd X] [--surface cpu|cuda|torch] [--json] "
     "[--fresh] [--wait SECONDS] [--db PATH] [the options of kevo run] SUITE_DIR | kevo bench "
     "--show [ID] [--json]",
     "run a strategy over every task of a suite (resumable: run it again after a kill) and score "
     "it the way KernelBench does"},
    {"gate", cmd_gate, "kevo gate serve --stdio [--idle SECONDS] [--surface cpu|cuda]",
     "judge evaluation jobs arriving as frames on stdin, verdicts on stdout (what executors "
     "start)"},
    {"best", cmd_best, "kevo best [--db PATH] [-o FILE] [RUN]",
     "the fastest accepted kernel of a run (the most recent by default)"},
    {"analyze", cmd_analyze,
     "kevo analyze [--generations A..B] [--players LIST] [--samples K] [--fast-threshold X] "
     "[--experiment planning | --transfer-to MODEL] [--model M] [--budget-usd X] [--no-timing] "
     "[--json] [--fresh] [--db PATH] RUN",
     "which feedback helps: freeze a recorded run, resample with feedback blocks switched, "
     "exact Shapley values and interactions (resumable, replayable)"},
    {"lineage", cmd_lineage,
     "kevo lineage extract [--surface cpu|cuda] [--pairs N] [--budget SECONDS] [--seed N] "
     "[--no-timing] [--json] [-o SKILLS.json] [--db PATH] [--provider P --model M ... "
     "--budget-usd X --retries N --max-steps N --prompts DIR --preset kevo|klineage --audit on|off "
     "--roundtrip on|off --max-rejections N] TASK_DIR EXPERT | kevo lineage extract --resume "
     "[FILE.json] --provider P --model M ... | kevo lineage show "
     "[ID] [--markdown] [--db PATH] | kevo lineage resolve [--order] [--off A,B] EXPERT",
     "walk an annotated expert kernel backward through the gate into skills (paired test per "
     "step)"},
    {"skills", cmd_skills,
     "kevo skills list [--all] | show ID | export [--all] FILE | import [--task DIR] FILE | "
     "retire ID [--reason TEXT] | match [--surface S] [--arch A] [--smem BYTES] [--json] TASK_DIR "
     "[CANDIDATE]  [--db PATH]",
     "the skill cards: list, show as Markdown, export and import as JSON, retire; which fit a "
     "task and why"},
    {"presets", cmd_presets, "kevo presets [--markdown] [NAME]",
     "the seed systems as released (--preset NAME on run, analyze, adapt, synthesize): each "
     "constant beside kevo's default and why it differs"},
    {"report", cmd_report,
     "kevo report [--db PATH] [-o FILE.html] [RUN...] [--bench [ID]]... [--analysis [ID]]...",
     "one self-contained HTML page of runs (the most recent by default): curve, tree, verdicts, "
     "rules, LLM calls"},
};

int cli_fail(const char *fmt, ...) {
  char msg[1 << 15];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  cli_tidy(msg);
  char *named = cli_own_names(msg);
  fprintf(stderr, "kevo: %s\n", named ? named : msg);
  free(named);
  return 2;
}

void cli_tidy(char *msg) {
  while (!strncmp(msg, "kevo: ", 6))
    memmove(msg, msg + 6, strlen(msg + 6) + 1);
  static const char *const seps[] = {": kevo: ", "; kevo: ", "(kevo: "};
  for (size_t k = 0; k < KV_ARRAY_LEN(seps); k++)
    for (char *p; (p = strstr(msg, seps[k]));) {
      size_t keep = strlen(seps[k]) - 6;
      memmove(p + keep, p + keep + 6, strlen(p + keep + 6) + 1);
    }
}

char *cli_own_names(const char *msg) {
  static const char *const marks[] = {": the reference does not compile",
                                      ": the baseline does not compile",
                                      " does not compile (see the log)"};
  for (size_t k = 0; k < KV_ARRAY_LEN(marks); k++) {
    const char *m = strstr(msg, marks[k]);
    if (!m)
      continue;
    const char *start = m;
    while (start > msg && start[-1] != '\n' && start[-1] != ' ')
      start--;
    char path[1024];
    snprintf(path, sizeof path, "%.*s", (int)(m - start), start);
    return kv_gate_log_own_names(msg, path);
  }
  return NULL;
}

int cli_usage(const char *cmd) {
  for (size_t i = 0; i < KV_ARRAY_LEN(commands); i++)
    if (!strcmp(commands[i].name, cmd))
      fprintf(stderr, "usage: %s\n", commands[i].usage);
  return 2;
}

int cli_number(const char *flag, const char *text, double *out) {
  char *end;
  double v = text ? strtod(text, &end) : 0;
  if (!text || end == text || *end || !(v > 0) || v > 1e9)
    return cli_fail("%s: '%s' is not a positive number", flag, text ? text : "");
  *out = v;
  return 0;
}

int cli_timing_ci(const char *text, double *out) {
  char *end;
  double v = text ? strtod(text, &end) : -1;
  if (text && !strcmp(text, "off"))
    v = 0, end = "";
  if (!text || end == text || *end || !(v >= 0) || v > 0.5)
    return cli_fail("--timing-ci: '%s' is not a target from 0 (a fixed budget; or 'off') to 0.5; "
                    "0.01 stops timing once the speedup's 95%% interval is within +-1%%",
                    text ? text : "");
  *out = v;
  return 0;
}

int cli_integer(const char *flag, const char *text, long long lo, long long hi, long long *out) {
  char *end;
  errno = 0;
  long long v = text ? strtoll(text, &end, 10) : 0;
  if (!text || end == text || *end || errno || v < lo || v > hi)
    return cli_fail("%s: '%s' is not a whole number from %lld to %lld", flag, text ? text : "", lo,
                    hi);
  *out = v;
  return 0;
}

int cli_torch_compile_mode(const char *mode) {
  static const char *const modes[] = {"default", "reduce-overhead", "max-autotune",
                                      "max-autotune-no-cudagraphs"};
  for (size_t i = 0; i < KV_ARRAY_LEN(modes); i++)
    if (!strcmp(mode, modes[i]))
      return 0;
  return cli_fail("--torch-compile %s: use default, reduce-overhead, max-autotune or "
                  "max-autotune-no-cudagraphs",
                  mode);
}

int cli_writable(const char *path) {
  if (access(path, F_OK) == 0)
    return access(path, W_OK) == 0;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash)
    return access(".", W_OK) == 0;
  if (slash == dir)
    slash[1] = 0;
  else
    *slash = 0;
  return access(dir, W_OK) == 0;
}

static void help(FILE *f) {
  fprintf(f,
          "kevo %s: turn slow-but-correct operators into fast, verified kernels\n\n"
          "commands:\n",
          KEVO_VERSION);
  for (size_t i = 0; i < KV_ARRAY_LEN(commands); i++)
    fprintf(f, "  %-8s %s\n           %s\n", commands[i].name, commands[i].summary,
            commands[i].usage);
  fprintf(f, "\nenvironment: KEVO_DB (store), KEVO_CACHE_DIR (builds, calibration), "
             "KEVO_WORKER (worker executable),\n             KEVO_CUDA_ARCH (build for this GPU "
             "architecture, e.g. sm_90, instead of asking nvidia-smi), KEVO_NVCC (nvcc's path)\n");
}

/* Every command's arguments as its parser expects them: "--name=value" is
 * "--name" "value"; after "--" nothing is an option, so an argument that
 * starts with '-' (a file so named; "-" itself still means stdin) becomes
 * "./-name", and "--" goes. What it allocates is in own[] (freed by main). */
struct args {
  int argc;
  char **argv, **own;
  int nown;
};

static int normal_args(int argc, char **argv, struct args *o) {
  memset(o, 0, sizeof *o);
  o->argv = calloc((size_t)argc * 2 + 1, sizeof *o->argv);
  o->own = calloc((size_t)argc + 1, sizeof *o->own);
  if (!o->argv || !o->own)
    return -1;
  int opts = 1;
  for (int i = 0; i < argc; i++) {
    char *a = argv[i];
    if (i >= 2 && opts && !strcmp(a, "--")) {
      opts = 0;
      continue;
    }
    char *eq = i >= 2 && opts && !strncmp(a, "--", 2) && a[2] ? strchr(a, '=') : NULL;
    if (eq) {
      char *name = strndup(a, (size_t)(eq - a));
      if (!name)
        return -1;
      o->own[o->nown++] = name;
      o->argv[o->argc++] = name;
      o->argv[o->argc++] = eq + 1;
    } else if (!opts && a[0] == '-' && a[1]) {
      char *p = malloc(strlen(a) + 3);
      if (!p)
        return -1;
      sprintf(p, "./%s", a);
      o->own[o->nown++] = p;
      o->argv[o->argc++] = p;
    } else {
      o->argv[o->argc++] = a;
    }
  }
  return 0;
}

static void free_args(struct args *o) {
  for (int i = 0; i < o->nown; i++)
    free(o->own[i]);
  free(o->own);
  free(o->argv);
}

static int dispatch(int argc, char **argv);

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  cli_env_read();
  struct args a;
  int rc;
  if (normal_args(argc, argv, &a) < 0) {
    fprintf(stderr, "kevo: out of memory\n");
    rc = 2;
  } else {
    rc = dispatch(a.argc, a.argv);
  }
  free_args(&a);
  return rc;
}

/* Scratch directories whose kevo was killed (kv_sweep_stale), before any command. */
static void sweep_cache(void) {
  char cache[4096], scratch[4200];
  if (cli_cache_dir(cache, sizeof cache) < 0)
    return;
  snprintf(scratch, sizeof scratch, "%s/scratch", cache);
  kv_sweep_stale(scratch);
  kv_sweep_stale(cache);
}

static int dispatch(int argc, char **argv) {
  if (argc < 2) {
    help(stderr);
    return 2;
  }
  /* kevo help CMD and kevo CMD --help (or -h anywhere before --): that
   * command's usage on stdout, exit 0. */
  const char *about = NULL;
  if (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    if (argc < 3 || strcmp(argv[1], "help") != 0) {
      help(stdout);
      return 0;
    }
    about = argv[2];
  } else {
    for (int a = 2; a < argc && strcmp(argv[a], "--") != 0; a++)
      if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h"))
        about = argv[1];
  }
  if (about) {
    for (size_t i = 0; i < KV_ARRAY_LEN(commands); i++)
      if (!strcmp(about, commands[i].name)) {
        printf("%s: %s\nusage: %s\n", commands[i].name, commands[i].summary, commands[i].usage);
        cli_help_options(stdout, commands[i].name);
        return 0;
      }
    fprintf(stderr, "kevo: '%s' is not a command; run 'kevo help' for the list\n", about);
    return 2;
  }
  if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
    printf("kevo %s\n", KEVO_VERSION);
    return 0;
  }
  sweep_cache();
  for (size_t i = 0; i < KV_ARRAY_LEN(commands); i++)
    if (!strcmp(argv[1], commands[i].name)) {
      int n = argc - 1, rc;
      char **v = argv + 1, **own = NULL;
      rc = cli_preset_expand(&n, &v, &own);
      if (rc == 0)
        rc = commands[i].run(n, v);
      free(own);
      return rc;
    }
  fprintf(stderr, "kevo: '%s' is not a command; run 'kevo help' for the list\n", argv[1]);
  return 2;
}
