/* The presets (kevo/preset.h): each seed system's released constants, the
 * kevo option that sets each, kevo's default and why it differs. The
 * sources read: AdaExplore's agent/mcts.py and config/KB-l2/
 * config_KB-l2_AdaExplore_50.yaml (StigLidu/AdaExplore); CUDAnalyst's
 * src/cudanalyst/pipeline/{intervene,config}.py, helper/stat.py, result.py,
 * demo.py and src/cugedit/pipeline/analysis.py (yuxuan-z19/cudanalyst). */
#include <string.h>

#include "kevo/preset.h"
#include "kevo/util.h"

#define MCTS "agent/mcts.py"
#define CFG "config_KB-l2_AdaExplore_50.yaml"

static const struct kv_preset_row adaexplore_rows[] = {
    {"run", "--strategy", "ada", "search", "MCTS over kernels (" MCTS ")", "ada", ""},
    {"run", "--tree", "adaexplore", "descend or expand",
     "at each node, expand when max child Q + c sqrt(ln N / n_children^2) beats every child's "
     "UCB1, else descend to the best child; Q = the average reward (reward_alpha 0.0, " CFG
     "); the root always takes a large step; a large step when the node has small_step_limit "
     "small-step children",
     "kevo: a node is kept when its own reward + c sqrt(ln N / (1 + n_children)) beats every "
     "child; small_limit counts small steps along a chain",
     "kevo's rule scores a node by its own kernel, which a refinement search wants; AdaExplore "
     "scores the expand action by the best child"},
    {"run", "--reward", "adaexplore", "reward of a correct kernel",
     "0.4 + 1.2 (s - 0.1) / 9.9, speedup s clipped to [0.1, 10] (" MCTS
     "); 0 compile failure, 0.05 wrong",
     "0.4 + 1.2 (log2 s + 2) / 4, s clipped to [1/4, 4]",
     "linear in the speedup, 1x earns 0.51 and 2x 0.63: the scale hardly separates the speedups "
     "a search meets (0.5x-4x); log2 makes 2x and 1/2x symmetric about 1x"},
    {"run", "--explore", "0.3", "UCB exploration weight c", "exploration_weight 0.3 (" CFG ")", "1",
     "kevo's rewards span 0..1.6 like theirs, but its default is UCB1's textbook weight; "
     "0.3 was tuned for AdaExplore's linear reward"},
    {"run", "--p-large", "0.2", "chance of a large step", "p_large 0.2 (" CFG ")", "0.3",
     "kevo's small steps are whole rewrites, which diversify less: it takes large steps more"},
    {"run", "--small-limit", "2", "small steps before a large one",
     "small_step_limit 2: small-step children of the selected node (" CFG ")",
     "4 small steps along a chain", "see --tree: kevo counts along a chain"},
    {"run", "--pool-max", "5", "large step's pool",
     "pool_size 5, pool_size_extra_max 0 (" CFG
     "): the best correct kernel of each small-step component on the path to the root",
     "3, one per chain sampled by reward", "shorter prompts; kevo samples chains off the path too"},
    {"run", "--concurrency", "1", "requests in flight", "one MCTS step at a time per problem", "2",
     "kevo keeps the model busy while the gate judges; with 1 the expand/descend sequence "
     "follows from the rule alone"},
    {"run", "--steps", "50", "steps per problem", "total_steps 50 (" CFG ")", "16",
     "kevo's default is a quick look"},
    {"run", "--rules-llm", NULL, "who words the rules",
     "the model writes knowledge items from failures", "off: only the compiler's evidence",
     "kevo's deterministic rules cost nothing; the model's need calls"},
    {"run", "--rule-sources", "compile,runtime", "failures rules come from",
     "compile and runtime failures, not wrong outputs", "every failure",
     "kevo also learns from wrong outputs (a race, a missed tail), which often name a construct"},
    {"run", "--rule-threshold", "3", "count for a rule to enter prompts",
     "knowledge_1_threshold 3 (" CFG ")", "2",
     "kevo's rules are checked by the audit, so a "
     "rule may enter earlier"},
    {"run", NULL, NULL, "small step",
     "a Reviser call (1-3 items of guidance on the last kernel) then a Tuner call writing exact "
     "string edits to it, context cut at the nearest large-step ancestor, at most "
     "max_memory_round 5 nodes",
     "one call: refine or debug the parent, the whole kernel rewritten, the run's last 8 nodes as "
     "history",
     "not in kevo yet (issue 32): no preset option sets it"},
    {"run", NULL, NULL, "temperature", "0.6 (agent_entry.py)", "the model's configuration",
     "set it in the model's configuration (kevo llm's temperature)"},
    {"adapt", NULL, NULL, "duplicate rules",
     "one LLM call judges a new item against every stored one; a duplicate adds 1 to its count",
     "word overlap >= 75% merges; pairs >= 20% alike go to the judge one pair a call",
     "not in kevo yet (issue 32): kevo's pairwise judge asks at most --judge-max calls"},
    {"synthesize", "--style", "adaexplore", "practice tasks",
     "3 KernelBench level-1 problems (ids <= 50) combined with 3 torch.nn layers",
     "composite: 3 to 6 operators from kevo's list",
     "kevo's list needs no KernelBench copy; "
     "name it with --from KB/level1"},
};

static const struct kv_preset_row cudanalyst_rows[] = {
    {"analyze", "--players", "debugger,analyzer,profiler", "players",
     "Debugger (clang-tidy + compute-sanitizer, failing parents), Analyzer (loop nests, passing "
     "parents), Profiler (Nsight Compute rules, passing parents) (pipeline/analysis.py)",
     "every feedback block the run had (performance, profile, rules, history, static)",
     "kevo attributes its own prompt blocks; kevo's Debugger is the compiler's diagnostics "
     "(kevo has no clang-tidy) plus compute-sanitizer"},
    {"analyze", "--planner", "on", "planner", "on: mask p7 (plan FULL) in helper/stat.py",
     "the run's plan mode", "kevo freezes the run as it was"},
    {"analyze", "--frozen", "recorded", "frozen unit",
     "(parent code, the child's recorded prompt), the tools' reports injected before the "
     "evolution history (intervene.py)",
     "rebuilt: the prompt made again from the parent's recorded judgement",
     "a rebuilt prompt can switch kevo's own blocks on and off"},
    {"analyze", "--samples", "5", "samples per rollout k", "num_trials 5 (demo.py)", "5", ""},
    {"analyze", "--rollouts", "3", "rollouts", "num_run 3 (demo.py)", "1",
     "kevo's bootstrap intervals come from the samples"},
    {"analyze", "--score", "best-of-k", "score of a coalition",
     "the best status of k samples (fail < compile < pass < fast), rates over parents, averaged "
     "over rollouts",
     "mean: every sample counts",
     "the mean uses every sample; best-of-k asks whether any of k gets there"},
    {"analyze", "--fast-threshold", "1.12", "fast", "speedup > 1 + tol, tol 0.12 (result.py)",
     "1.0", "kevo's clock gives an interval; its default counts any measured gain"},
    {"analyze", NULL, NULL, "rates",
     "helper/stat.py reads exclusive categories: compile = best "
     "status exactly compile",
     "cumulative: compile = compiled at least",
     "the exclusive rate is the difference of two "
     "cumulative ones, and so are its Shapley values"},
    {"analyze", NULL, NULL, "pairwise synergy",
     "v(ij) - v(i) - v(j) + v(0) - d(N)/3 (helper/stat.py)",
     "Harsanyi dividends d(S) and Grabisch's interaction index I(S)",
     "theirs is d(ij) - d(N)/3; kevo prints it as 'released synergy' beside d and I"},
};

/* KLineage (ict-agent/klineage): its rows document the constants for kevo
 * presets; kevo lineage reads its own --preset (cli/cmd_skills.c), so
 * cli/preset.c expands no option for it. Filled in by issue 32's KLineage
 * work. */
static const struct kv_preset_row klineage_rows[] = {
    {"lineage", NULL, NULL, "(to come)", "ict-agent/klineage", "", "not in kevo yet (issue 32)"},
};

#define ENTRY(n, src, rows)                                                                        \
  { n, src, rows, (int)KV_ARRAY_LEN(rows) }
static const struct kv_preset presets[] = {
    ENTRY("adaexplore", "StigLidu/AdaExplore", adaexplore_rows),
    ENTRY("cudanalyst", "yuxuan-z19/cudanalyst", cudanalyst_rows),
    ENTRY("klineage", "ict-agent/klineage", klineage_rows),
};

const struct kv_preset *kv_presets(int *n) {
  *n = (int)KV_ARRAY_LEN(presets);
  return presets;
}

const struct kv_preset *kv_preset_find(const char *name) {
  for (size_t i = 0; name && i < KV_ARRAY_LEN(presets); i++)
    if (!strcmp(presets[i].name, name))
      return &presets[i];
  return NULL;
}

const char *kv_preset_names(void) {
  return "adaexplore, cudanalyst, klineage";
}

int kv_preset_row_applies(const struct kv_preset_row *r, const char *cmd) {
  return !strcmp(r->cmd, cmd) ||
         ((!strcmp(cmd, "adapt") || !strcmp(cmd, "bench")) && !strcmp(r->cmd, "run"));
}

int kv_preset_args(const struct kv_preset *p, const char *cmd, const char **out, int cap) {
  int n = 0;
  for (int i = 0; i < p->nrows; i++) {
    const struct kv_preset_row *r = &p->rows[i];
    if (!r->flag || !kv_preset_row_applies(r, cmd))
      continue;
    if (n + 2 > cap)
      return -1;
    out[n++] = r->flag;
    if (r->value)
      out[n++] = r->value;
  }
  return n;
}
