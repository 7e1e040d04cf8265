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
    {"run", "--small-step", "reviser-tuner", "small step",
     "a Reviser call (1-3 items of guidance on the last kernel) then a Tuner call writing exact "
     "string edits to it, given the path back to the nearest large-step ancestor, at most "
     "max_memory_round 5 nodes (agent/small_loop.py, mcts.py)",
     "kevo: one call refines or debugs the parent, the whole kernel rewritten, the run's last 8 "
     "attempts as history",
     "a rewrite can change the kernel's structure in one step; edits keep a small step small"},
    {"run", NULL, NULL, "temperature", "0.6 (agent_entry.py)", "the model's configuration",
     "set it in the model's configuration (kevo llm's temperature)"},
    {"adapt", "--judge", "all", "duplicate rules",
     "one LLM call judges a new item against every stored one; a duplicate adds 1 to its count "
     "(skill_memory/deduplicate_knowledge.py)",
     "pairs: word overlap >= 75% merges; pairs >= 20% alike go to the judge, one pair a call",
     "pairs keep each call short and ask only where words overlap; both keep the verdicts"},
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
     "theirs is d(ij) - d(N)/3, read off kevo's dividends; Grabisch's I(ij) is d(ij) + d(N)/2 "
     "with 3 players"},
};

/* KLineage (ict-agent/klineage) as released: src/klineage/action/decompose.py
 * (decompose(max_steps=16, max_rejections=4), _audit_transition,
 * _lift_transitions), action/_state.py (_observe), harness/fidelity.py
 * (verify_performance, check_evidence), prompts/decompose*.j4,
 * observe_features.j4, memory/paths.py (retrieve_paths). kevo lineage
 * extract reads --preset itself (cli/cmd_skills.c expands these rows). */
static const struct kv_preset_row klineage_rows[] = {
    {"lineage", NULL, NULL, "backward step",
     "the model undoes one semantic transformation, dependents before prerequisites, tuning not "
     "a step (decompose.j4)",
     "the same when a model is given (role lineage:deopt); without one, an annotated expert's "
     "#if blocks",
     ""},
    {"lineage", "--max-steps", "16", "walk length",
     "max_steps=16 proposals, refused ones included (decompose.py)",
     "12 steps taken (refused proposals not counted)",
     "kevo bounds what the walk produces; refusals have their own bounds"},
    {"lineage", "--max-rejections", "4", "refusals in a walk",
     "max_rejections=4: gate, audit and round-trip failures together, then rejection_limit",
     "0 (no bound on the total)", "kevo ends a walk on refusals in a row (--retries) instead"},
    {"lineage", "--retries", "20", "refusals in a row",
     "none (only the walk's total, max_rejections)", "2 (3 proposals in a row)",
     "one mechanism the model cannot remove should end the walk, not spend it"},
    {"lineage", "--audit", "on", "audit of a step",
     "an independent call (observe_features.j4) reports each {locus, name} feature of both "
     "kernels present, absent or unknown, 1-4 citations of at most 12 lines each; the verifier "
     "re-reads the ranges (check_evidence); unknown or an ungrounded finding fails",
     "on: role lineage:audit, Verdict removed, kept or unknown, 1-4 Present and Absent citations "
     "of at most 12 lines with a quote kevo finds in the lines it re-reads (in code, not a "
     "comment); a Present quote must be gone from the simpler kernel",
     "kevo audits the claimed mechanism and checks the feature set itself (a lexical scan) "
     "rather than asking the model for every feature"},
    {"lineage", NULL, NULL, "one mechanism per step",
     "the claimed features: before < after, exactly one removed, at the declared locus; the "
     "audit confirms them (_audit_transition)",
     "kevo's scan: at most one strategy feature removed, none added", ""},
    {"lineage", "--roundtrip", "on", "round trip refuses the step",
     "a failed re-derivation is a rejection (counts toward max_rejections)",
     "on (off: a risk on the card, the step kept)", ""},
    {"lineage", "--roundtrip-ratio", "0.99", "round trip speed",
     "expert_ms / candidate_ms >= 0.99 overall and in every trial, CUPTI timing "
     "(fidelity.py verify_performance)",
     "0.99, over --pairs interleaved trials (at least 3), kevo's gate timing; a re-derivation "
     "identical to the richer kernel passes without timing",
     ""},
    {"lineage", "--roundtrip-rule", "every", "round trip rule",
     "the ratio in every trial and overall (verify_performance: min(ratio, *ratios))",
     "interval: the 95% bootstrap interval of the geometric mean ratio reaches the ratio",
     "on a loaded 2-core host the every rule refused a re-derivation that differed by a comment "
     "only, 4 times of 4 (worst trials 0.72x-0.86x): one slow trial is the clock, not the code"},
    {"lineage", NULL, NULL, "round trip features",
     "the re-derived kernel's audited features equal the richer kernel's",
     "kevo's scan: the same strategy features", "no model call for it"},
    {"lineage", NULL, NULL, "re-derivation's input",
     "the simpler kernel, category, locus, backward edit, features, the target latency "
     "(decompose_rederive.j4)",
     "the simpler kernel and the card (name, intent, anchor), never the diff, no timings",
     "kevo's prompts carry no timings so that a walk replays from the store"},
    {"lineage", "--require-preconditions", "on", "preconditions",
     "free text, at least one, written by the lifting call (decompose_lift.j4)",
     "off: Dtypes, Layout, Storage, Pipeline, Hardware, Scope lines, each checked (dtype names "
     "covering the task's, row-major, the measured architecture, this task in scope); missing "
     "ones take the task's",
     "kevo's lines are typed so that they can be checked and matched"},
    {"lineage", NULL, NULL, "feature contract",
     "requires / provides / conflicts as {locus, name}: provides = the features added, requires "
     "within and conflicts outside the simpler kernel's (_lift_transitions)",
     "provides = the strategy features the step removes; requires = the model's Requires "
     "(observed in the simpler kernel) and what both kernels compute (reduction); conflicts = "
     "the model's, absent from the simpler kernel",
     ""},
    {"lineage", NULL, NULL, "retrieval",
     "scope (case, language, platform), requires within and conflicts outside the target's "
     "verified features, present features skipped; ranked by operator words, shapes, measured "
     "gain (memory/paths.py)",
     "the contract against the candidate's scanned features, the scope's cases, then surface, "
     "architecture, status, dtypes, layout, sizes, shared memory; ranked by FTS5 bm25, shapes, "
     "measured effect",
     ""},
    {"lineage", NULL, NULL, "admission",
     "SkillAdmission.OFF by default (cards are hypotheses); ON: a held-out trial whose "
     "effect_verifier confirms the effect",
     "a paired test at extraction: 95% interval's lower end >= 1.03 and Wilcoxon p < 0.05 "
     "(6 pairs at least)",
     "kevo measures each card's effect where it was found; held-out uses are the search's "
     "verification log"},
    {"lineage", NULL, NULL, "resumable walk",
     "checkpoints preserve evidence; no cross-process resume (README)",
     "a checkpoint after every proposal; a lost call exits 3 and --resume continues", ""},
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
