/* kevo help CMD: every option of a command, one line each with its default.
 * The usage lines in main.c name the options; tests/cli/e2e.sh checks that
 * each one named there is described here. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct opt {
  const char *flag, *text;
};

#define END                                                                                        \
  { NULL, NULL }

static const struct opt gate_opts[] = {
    {"--surface cpu|cuda|torch",
     "where candidates run (default cpu); torch: a Python ModelNew against reference.py"},
    {"--budget SECONDS", "timing budget per candidate (default 1)"},
    {"--timing-ci X|off",
     "stop timing once the speedup's 95% interval is within +-X (default 0.01); off: the whole "
     "budget"},
    {"--timing kevo|kernelbench|do_bench",
     "how to time: kevo (fresh inputs, a cold cache, medians; the default), KernelBench's "
     "protocol, or do_bench (cuda: kevo's with triton's do_bench flush before every call)"},
    {"--no-timing", "check correctness only; no speedups"},
    {"--torch-compile MODE", "also time torch.compile(MODE) of the reference as a baseline"},
    {"--seed N", "the inputs' seed, to replay an evaluation (default a fresh one each time)"},
    {"--db PATH", "the store (default $KEVO_DB, else ~/.local/share/kevo/kevo.db)"},
    END};

static const struct opt llm_opts[] = {
    {"--provider openai|anthropic|replay",
     "the API the model speaks (default: the configuration file's, else openai); replay: "
     "recorded replies only"},
    {"--base-url URL",
     "the server (default the provider's; a local server: http://127.0.0.1:PORT/v1)"},
    {"--model ID", "the model to ask (no default: set it here or in the configuration file)"},
    {"--api-key-env NAME",
     "the environment variable holding the key (default OPENAI_API_KEY or ANTHROPIC_API_KEY); "
     "\"\" for a local server that needs none"},
    {"--config FILE",
     "a model configuration read last (after ~/.config/kevo/config.json and ./kevo.json)"},
    {"--budget-usd X", "a hard cap on what the model calls may cost (needs a priced model)"},
    END};

static const struct opt run_opts[] = {
    {"--strategy ada|greedy|best-of-n|tune",
     "the search (default ada with a model; tune, the starter's kevo:tune knobs, without one)"},
    {"--steps N", "candidates to judge (default 16)"},
    {"--concurrency K", "model requests in flight at once (default 2)"},
    {"--plan-mode explicit|implicit",
     "a planner writes a plan before each kernel (explicit) or not"},
    {"--prompt-blocks LIST",
     "the prompt's blocks on or off (all,-history; profile and sanitize run tools)"},
    {"--prompts DIR", "DIR's templates replace the default prompts"},
    {"--p-large P", "ada: the chance of a large step (default 0.3)"},
    {"--small-limit N", "ada: small steps in a chain before a large one (default 4)"},
    {"--explore C", "ada: the UCB exploration weight (default 1)"},
    {"--preset adaexplore|kevo",
     "AdaExplore as released: its constants as options, before yours (kevo presets adaexplore)"},
    {"--tree adaexplore|kevo", "ada: AdaExplore's expand/descend rule (default kevo's)"},
    {"--reward adaexplore|kevo", "ada: AdaExplore's linear reward of a speedup (default log2)"},
    {"--pool-max N", "ada: kernels in a large step's pool (default 3)"},
    {"--small-step kevo|reviser-tuner",
     "a small step rewrites the kernel (default) or is AdaExplore's guidance, then string edits"},
    {"--rule-sources LIST", "failures rules are learnt from: compile,runtime,wrong (default all)"},
    {"--rule-threshold N", "a validity rule enters prompts once seen N times (default 2)"},
    {"--rules-llm", "the model words the rules learnt from failures"},
    {"--online-attribution SHARE", "spend SHARE of the steps measuring which feedback helps"},
    {"--attr-price R", "online attribution: the reward price of a measurement"},
    {"--skills on|off", "ada, greedy: offer matching skill cards to small steps (default off)"},
    {"--starter FILE", "the kernel to start from (default the task's starter)"},
    {"--executor local|gpus|ssh|slurm",
     "judge candidates on gate servers (default in this process)"},
    {"--gpus LIST", "--executor gpus: the GPUs to use (0,1)"},
    {"--executor-config FILE", "the hosts or cluster (default $KEVO_EXEC_CONFIG)"},
    {"-o FILE", "write the best accepted kernel there"},
    END};

static const struct opt eval_opts[] = {
    {"--json", "the verdict as JSON on stdout"},
    {"--deadline SECONDS", "per job of the worker (default 10)"},
    {"--allow LIBS", "vendor libraries a candidate may link (cublas,cudnn,cublaslt)"},
    END};

static const struct opt task_opts[] = {
    {"--surface cpu|cuda|torch", "check the reference on this surface, or write the starter for it "
                                 "(default cpu)"},
    {"--deadline SECONDS", "check: per job of the worker (default 10); starter: for the helper "
                           "(default 120)"},
    {"--json", "check: the report as JSON"},
    {"-o FILE", "starter: write the candidate to FILE (default stdout)"},
    {"--python PATH", "starter: the Python with torch (default $KEVO_PYTHON, else python3)"},
    END};

static const struct opt bench_opts[] = {
    {"--json", "the score as JSON"},
    {"--fresh", "a new bench even where an unfinished one of this suite and configuration is"},
    {"--wait SECONDS",
     "another kevo runs this bench: wait this long for it, then refuse (default 0)"},
    {"--show [ID]", "the score of a bench in the store (default the latest)"},
    {"--jobs N", "tasks at once (default 1; with --executor 2, sharing its servers)"},
    END};

static const struct opt resume_opts[] = {
    {"--steps N", "N more steps (also of a finished run)"},
    {"--concurrency K", "candidates in flight at once (default the run's)"},
    {"--executor local|gpus|ssh|slurm",
     "judge candidates on gate servers (default in this process)"},
    {"--gpus LIST", "--executor gpus: the GPUs to use (0,1)"},
    {"--executor-config FILE", "the hosts or cluster (default $KEVO_EXEC_CONFIG)"},
    {"-o FILE", "write the best accepted kernel there"},
    END};

static const struct opt llm_cmd_opts[] = {
    {"--timeout S", "per request (default the model's, 300)"},
    {"--max-tokens N", "the reply's cap (default the configuration's)"},
    {"--temperature T", "0 to 2 (default the model's)"},
    {"--system TEXT", "a system prompt"},
    {"--max-usd USD", "refuse a request that could cost more"},
    {"--sample N", "the sampling seed sent to the model"},
    {"--db PATH", "the store the call is recorded in (default $KEVO_DB)"},
    {"--run RUN", "llm calls: only this run's"},
    {"--limit N", "llm calls: at most N (the latest)"},
    {"--json", "llm calls: as JSON"},
    END};

static const struct opt import_opts[] = {
    {"-o OUTDIR", "where the task directories go (default .)"},
    {"--jobs N", "modules at once (default the cores, at most 8)"},
    {"--deadline S", "per module (default 120)"},
    {"--max-gib G", "memory cap per module on the CPU (default 2)"},
    {"--device-memory GIB", "the GPU memory a task may need (default $KEVO_DEVICE_MEMORY_GIB)"},
    {"--allow LIBS", "task.json's allow: vendor libraries a candidate may link"},
    {"--python PATH", "the Python with torch (default $KEVO_PYTHON, else python3)"},
    {"--force", "replace a task directory that exists"},
    END};

static const struct opt lineage_opts[] = {
    {"--surface cpu|cuda", "where the kernels run (default cpu)"},
    {"--pairs N", "interleaved pairs per step's paired test (default 6; fewer than 6 can admit no "
                  "skill; 0: none)"},
    {"--budget SECONDS", "timing budget per kernel (default 1)"},
    {"--seed N", "the inputs' seed (default 1)"},
    {"--no-timing", "gate only; no paired test"},
    {"--json", "the cards as JSON"},
    {"-o SKILLS.json", "also write the cards there"},
    {"--db PATH", "the store (default $KEVO_DB)"},
    {"--retries N", "LLM mode: retries of a rejected step (default 2)"},
    {"--max-steps N", "LLM mode: steps at most (default 12)"},
    {"--prompts DIR", "LLM mode: DIR's templates replace the default prompts"},
    {"--preset kevo|klineage", "LLM mode: every setting below as kevo's or KLineage's release"},
    {"--audit on|off", "LLM mode: each step's independent, cited audit (default on)"},
    {"--roundtrip on|off", "LLM mode: a failed round trip refuses the step (default on)"},
    {"--roundtrip-ratio R", "LLM mode: the speed the round trip must restore (0.99)"},
    {"--roundtrip-rule every|interval",
     "LLM mode: in every trial (KLineage) or the mean's 95% interval (default interval)"},
    {"--max-rejections N", "LLM mode: refused proposals in the whole walk (default 0: no limit)"},
    {"--require-preconditions on|off", "LLM mode: refuse a proposal without them (default off)"},
    {"--resume [FILE.json]", "LLM mode: continue an interrupted walk (default the latest)"},
    {"--markdown", "lineage show: a Markdown table"},
    {"--order", "lineage resolve: print the removal order"},
    {"--off A,B", "lineage resolve: these mechanisms off"},
    END};

static const struct opt tool_opts[] = {{"--json", "the findings as JSON"},
                                       {"--deadline SECONDS", "the tool's run (default 120)"},
                                       {"--seed N", "the inputs' seed (default a fresh one)"},
                                       END};

static const struct opt sanitize_opts[] = {
    {"--surface cuda|cpu",
     "compute-sanitizer on the GPU (default cuda) or ASan + UBSan on the CPU"},
    END};

static const struct opt device_opts[] = {
    {"--surface cpu|cuda", "which device (default cpu)"},
    {"--recalibrate", "measure again instead of reading the cached figures"},
    {"--json", "the figures as JSON"},
    END};

static const struct opt db_opts[] = {
    {"--db PATH", "the store (default $KEVO_DB, else ~/.local/share/kevo/kevo.db)"}, END};

static const struct opt runs_opts[] = {{"--json", "kevo runs: the runs as JSON"}, END};

static const struct opt best_opts[] = {{"-o FILE", "write the kernel there (default: print it)"},
                                       END};

static const struct opt rules_opts[] = {
    {"--all", "list: every rule (default those seen at least twice)"},
    {"--min-count N", "export: only rules seen at least N times (default 1)"},
    {"--apply", "audit: also flag the noisy rules, so that prompts leave them out"},
    END};

static const struct opt synth_opts[] = {
    {"--n N", "practice tasks to ask for (default 10)"},
    {"--style composite|mutation|self-instruct|adaexplore",
     "what to ask: a mix of operators (default), a variant of --from's tasks, a new pattern, "
     "3 of --from's KernelBench level-1 problems (ids <= 50) with 3 torch.nn layers"},
    {"--preset adaexplore|kevo", "AdaExplore as released: --style adaexplore"},
    {"--from SUITE_DIR", "the tasks mutation and self-instruct start from; also refused as "
                         "duplicates"},
    {"-o DIR", "where the tasks go (default practice)"},
    {"--ops FILE", "composite: the operators to draw from, one a line (default kevo's list)"},
    {"--seed S", "what each attempt asks follows from it (default 0)"},
    {"--jobs N", "replies judged at once (default 2, at most 16)"},
    {"--concurrency K", "model requests in flight at once (default 2)"},
    {"--deadline S", "per module run (default 120)"},
    {"--max-gib G", "memory cap per module on the CPU (default 2)"},
    {"--python PATH", "the Python with torch (default $KEVO_PYTHON, else python3)"},
    {"--fresh", "make N more attempts even where an earlier synthesis finished"},
    {"--db PATH", "the store (default $KEVO_DB)"},
    END};

static const struct opt adapt_opts[] = {
    {"--steps N", "steps per practice task (default 8)"},
    {"--jobs N", "practice tasks at once (default 1, at most 16)"},
    {"--judge-max N", "the model as a judge of rule pairs: at most N calls (default 40)"},
    {"--preset adaexplore|kevo", "AdaExplore as released: kevo run's options it sets"},
    {"--judge pairs|all", "rule pairs alike in words, a call each (default), or each rule "
                          "against every earlier one in one call"},
    {"--no-rules-llm", "learn rules from compiler evidence only (default: the model words them "
                       "too)"},
    {"--fresh", "adapt again where an earlier adapt of this suite finished"},
    END};

static const struct opt gate_cmd_opts[] = {
    {"--stdio", "jobs as frames on stdin, verdicts on stdout (the only transport)"},
    {"--idle SECONDS", "end after this long without a job (default 3600)"},
    {"--surface cpu|cuda", "cuda: check at start that this host can judge cuda kernels"},
    END};

static const struct opt analyze_opts[] = {
    {"--generations A..B", "the run's steps to freeze (default all that refine or debug)"},
    {"--players LIST", "the feedback blocks to switch, NAME or NAME:summary (default every one "
                       "the run had); compile, correctness; debugger, analyzer, profiler"},
    {"--samples K", "replies per node and coalition, or per rollout (default 5)"},
    {"--preset cudanalyst|kevo",
     "CUDAnalyst as released: its constants as options, before yours (kevo presets cudanalyst)"},
    {"--rollouts N", "sample K replies N times (default 1)"},
    {"--score mean|best-of-k", "a rollout's outcome: every sample (default) or its best"},
    {"--planner on|off", "the reports go to a planner once per node, coalition and rollout"},
    {"--frozen rebuilt|recorded", "the prompt made again (default) or the child's as sent"},
    {"--fast-threshold X", "a sample is fast above X times the reference (default 1.0)"},
    {"--experiment planning", "instead: a plan step crossed with aligned or misaligned feedback"},
    {"--transfer-to MODEL", "instead: the run's plans given to MODEL's coder"},
    {"--bootstrap N", "resamples for each interval (default 1000)"},
    {"--budget SECONDS", "timing budget per sample (default 1)"},
    {"--no-timing", "judge correctness only (no fast rate or speedup)"},
    {"--json", "every value, interval and p as JSON"},
    {"--fresh", "start anew where an earlier analysis of these settings is"},
    {"--db PATH", "the store (default $KEVO_DB)"},
    END};

static const struct opt presets_opts[] = {
    {"--markdown", "the table as Markdown (docs/presets.md's)"}, END};

static const struct opt skills_opts[] = {
    {"--all", "list, export: every card (default the admitted ones)"},
    {"--reason TEXT", "retire: why, kept in the card's log"},
    {"--task DIR", "import: each admitted card of that task judged here first"},
    {"--surface S", "match: the surface (default cpu)"},
    {"--arch A", "match: the architecture (default this machine's)"},
    {"--smem BYTES", "match: the shared memory a skill may add (default 49152)"},
    {"--json", "match: the matches and refusals as JSON"},
    {"--db PATH", "the store (default $KEVO_DB)"},
    END};

static const struct opt report_opts[] = {
    {"-o FILE.html", "where the page goes (default report.html)"},
    {"--bench [ID]", "a section for a kevo bench (default the latest)"},
    {"--analysis [ID]", "a section for a kevo analyze (default the latest)"},
    {"--db PATH", "the store (default $KEVO_DB)"},
    END};

struct cmd_help {
  const char *cmd;
  const struct opt *groups[4];
  const char *heads[4];
};

static const struct cmd_help helps[] = {
    {"eval", {eval_opts, gate_opts}, {NULL, NULL}},
    {"task", {task_opts}, {NULL}},
    {"run", {run_opts, llm_opts, gate_opts}, {NULL, "the model:", "judging:"}},
    {"resume", {resume_opts, llm_opts, gate_opts}, {NULL, "the model:", "judging:"}},
    {"bench",
     {bench_opts, run_opts, llm_opts, gate_opts},
     {NULL, "the options of kevo run:", "the model:", "judging:"}},
    {"llm", {llm_opts, llm_cmd_opts}, {NULL, NULL}},
    {"import", {import_opts}, {NULL}},
    {"lineage", {lineage_opts, llm_opts}, {NULL, "LLM mode:"}},
    {"profile", {tool_opts}, {NULL}},
    {"sanitize", {sanitize_opts, tool_opts}, {NULL, NULL}},
    {"device", {device_opts}, {NULL}},
    {"runs", {runs_opts, db_opts}, {NULL, NULL}},
    {"best", {best_opts, db_opts}, {NULL, NULL}},
    {"rules", {rules_opts, db_opts}, {NULL, NULL}},
    {"synthesize", {synth_opts, llm_opts}, {NULL, "the model:"}},
    {"adapt",
     {adapt_opts, llm_opts, gate_opts},
     {NULL, "the model (every option of kevo run applies too):", "judging:"}},
    {"gate", {gate_cmd_opts}, {NULL}},
    {"analyze", {analyze_opts, llm_opts}, {NULL, "the model (default the run's):"}},
    {"skills", {skills_opts}, {NULL}},
    {"presets", {presets_opts}, {NULL}},
    {"report", {report_opts}, {NULL}},
};

int cli_help_options(FILE *f, const char *cmd) {
  for (size_t i = 0; i < sizeof helps / sizeof helps[0]; i++) {
    if (strcmp(helps[i].cmd, cmd))
      continue;
    fprintf(f, "\noptions:\n");
    for (int g = 0; g < 4 && helps[i].groups[g]; g++) {
      if (helps[i].heads[g])
        fprintf(f, " %s\n", helps[i].heads[g]);
      for (const struct opt *o = helps[i].groups[g]; o->flag; o++)
        fprintf(f, "  %-36s %s\n", o->flag, o->text);
    }
    return 1;
  }
  return 0;
}
