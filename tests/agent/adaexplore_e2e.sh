#!/bin/sh
# kevo run --preset adaexplore end to end against the loopback stand-in:
# the recorded search follows AdaExplore's released rule (agent/mcts.py),
# re-derived here independently, step by step, from the recorded verdicts:
#   select: from the task down, at each node expand when
#     max_child avg + c sqrt(ln N / n_children^2) > max_child UCB1
#     (UCB1 = avg + c sqrt(ln N_parent / n), unvisited: +inf), else descend
#     to the child of best UCB1; c = 0.3; the task's N: every evaluation;
#   expand: the task, or a node with >= small_step_limit (2) small-step
#     children, takes a large step (its node a child of the one selected);
#     else a small step (p_large is made 1e-9 here so chance plays no part);
#   reward: 0 compile failure, 0.05 wrong, a correct untimed kernel 1x:
#     0.4 + 1.2 (1 - 0.1) / 9.9.
# The stand-in's kernels come in turn (correct, syntax error, wrong, correct,
# syntax error, ...), so the tree has failures, expansions and descents.
# Also: the rules come only from compile failures (--rule-sources
# compile,runtime): one rule_extractor call per compile failure, none for
# the wrong outputs; the run's settings are kept (kevo resume reads them).
# usage: adaexplore_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC="$3"
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-ada-e2e-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/ada.db"
export XDG_CONFIG_HOME="$T/config"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
cd "$T" || exit 1
rm -f "$T/port"
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/agent/ada_replies.txt" --max-requests 200 \
  --lifetime 120 &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"

"$K" run --preset adaexplore --small-step kevo --p-large 1e-9 --steps 24 --no-timing --seed 3 --base-url "$URL" \
  --model m --api-key-env "" "$EX/rowsum" >"$T/run.out" 2>"$T/run.err"
check "run exits 0" $? 0
grep -q -- "--preset adaexplore (StigLidu/AdaExplore as released): --strategy ada --tree adaexplore" \
  "$T/run.err" && ok "the preset's options are said" || bad "preset line: $(head -3 "$T/run.err")"
check "24 nodes" "$(q "select count(*) from nodes where run_id = 1")" 24
check "the settings are kept for kevo resume" \
  "$(q "select json_extract(config_json, '$.llm.tree') || ' ' || json_extract(config_json, '$.llm.reward') || ' ' || json_extract(config_json, '$.llm.c_explore') || ' ' || json_extract(config_json, '$.llm.small_limit') || ' ' || json_extract(config_json, '$.llm.rule_threshold') || ' ' || json_extract(config_json, '$.llm.pool_max') from runs where id = 1")" \
  "adaexplore adaexplore 0.3 2 3 5"
q "select n.step, coalesce(p.step, -1), n.action, n.verdict, n.reward from nodes n left join nodes p on p.id = n.parent_id where n.run_id = 1 order by n.step" >"$T/nodes.txt"
cat >"$T/derive.py" <<'EOF'
import math, sys
rows = [l.strip().split("|") for l in open(sys.argv[1]) if l.strip()]
C, LIMIT = 0.3, 2
def reward(v):
    if v in ("compile_error", "policy_violation", "no_code"): return 0.0
    if v != "ok": return 0.05
    return 0.4 + 1.2 * (1.0 - 0.1) / 9.9
nodes = []  # dicts: parent (index or None), large, visits, total
def kids(p): return [i for i, n in enumerate(nodes) if n["parent"] == p]
def visits(p): return sum(n["visits"] for n in nodes if n["parent"] is None) if p is None else nodes[p]["visits"]
def ucb(i, pv):
    n = nodes[i]
    if n["visits"] == 0: return math.inf
    q = n["total"] / n["visits"]
    return q if pv == 0 else q + C * math.sqrt(math.log(pv) / n["visits"])
def select():
    at = None
    while True:
        ks = kids(at)
        if not ks: return at
        pv = visits(at)
        best = max(ks, key=lambda i: ucb(i, pv))  # first of the best, as kevo's strict >
        bq = max(nodes[i]["total"] / nodes[i]["visits"] for i in ks)
        ex = bq + (C * math.sqrt(math.log(pv) / len(ks) ** 2) if pv > 0 else 0)
        if ex > ucb(best, pv): return at
        at = best
bad = 0
for step, prow in enumerate(rows):
    s, parent, action, verdict, rec_reward = int(prow[0]), int(prow[1]), prow[2], prow[3], prow[4]
    at = select()
    large = at is None or sum(1 for i in kids(at) if not nodes[i]["large"]) >= LIMIT
    want_parent = -1 if at is None else at
    want_action = "large" if large else ("refine" if nodes[at]["verdict"] == "ok" else "debug")
    got = (parent, action)
    print(f"step {s}: select {want_parent} -> {want_action}; recorded {got}")
    if (want_parent, want_action) != got or abs(float(rec_reward) - reward(verdict)) > 1e-9:
        bad += 1
    nodes.append({"parent": None if parent < 0 else parent, "large": action == "large",
                  "visits": 0, "total": 0.0, "verdict": verdict})
    r, i = reward(verdict), len(nodes) - 1
    while i is not None:
        nodes[i]["visits"] += 1; nodes[i]["total"] += r; i = nodes[i]["parent"]
print("mismatches", bad)
sys.exit(1 if bad else 0)
EOF
python3 "$T/derive.py" "$T/nodes.txt" >"$T/derive.out" 2>&1
check "every step's descend/expand follows AdaExplore's rule" $? 0 || cat "$T/derive.out"
grep -q "refine\|debug" "$T/nodes.txt" && grep -q "|large|" "$T/nodes.txt" &&
  ok "the search took both small and large steps" || bad "steps: $(cat "$T/nodes.txt")"
check "large steps below the task (AdaExplore's tree, not new chains only)" \
  "$(q "select count(*) > 0 from nodes where run_id = 1 and action = 'large' and parent_id is not null")" 1
check "rules only from compile failures: extractor calls, none about a wrong output" \
  "$(q "select count(*) > 0 from llm_calls where role = 'rule_extractor'") $(q "select count(*) from llm_calls c join nodes n on n.id = c.node_id where c.role = 'rule_extractor' and n.verdict != 'compile_error'")" \
  "1 0"
check "there were wrong outputs to leave out" \
  "$(q "select count(*) > 0 from nodes where run_id = 1 and verdict = 'wrong_output'")" 1
# The check can fail: kevo's own rule (--tree kevo) makes another sequence.
"$K" run --preset adaexplore --small-step kevo --tree kevo --p-large 1e-9 --steps 24 --no-timing --seed 3 \
  --base-url "$URL" --model m --api-key-env "" "$EX/rowsum" >/dev/null 2>&1
q "select n.step, coalesce(p.step, -1), n.action, n.verdict, n.reward from nodes n left join nodes p on p.id = n.parent_id where n.run_id = 2 order by n.step" >"$T/nodes2.txt"
python3 "$T/derive.py" "$T/nodes2.txt" >"$T/derive2.out" 2>&1
check "kevo's own rule does not pass for AdaExplore's" "$? $(grep -c '^step' "$T/derive2.out")" "1 24"
# The Reviser and the Tuner (the preset's small step): guidance, then exact
# string edits applied to the parent (tests/agent/rt_replies.txt).
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
rm -f "$T/port"
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/agent/rt_replies.txt" --max-requests 200 \
  --lifetime 120 &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"
"$K" run --preset adaexplore --p-large 1e-9 --steps 4 --no-timing --seed 3 --base-url "$URL" \
  --model m --api-key-env "" "$EX/rowsum" >/dev/null 2>"$T/rt.err"
check "reviser-tuner run exits 0" $? 0 || tail -3 "$T/rt.err"
check "a reviser and a tuner call per small step" \
  "$(q "select (select count(*) from llm_calls where role = 'reviser') = (select count(*) from llm_calls where role = 'tuner')") $(q "select count(*) >= 2 from llm_calls where role = 'tuner'")" "1 1"
check "the guidance is the small step's plan" \
  "$(q "select count(*) > 0 from nodes where run_id = 3 and params like '%edits=1%' and plan like '%Hoist the row pointer%'")" 1
q "select s.text from nodes n join sources s on s.hash = n.source_hash where n.run_id = 3 and n.params like '%edits=1%' limit 1" >"$T/edited.c"
q "select s.text from nodes n join nodes c on c.parent_id = n.id join sources s on s.hash = n.source_hash where c.run_id = 3 and c.params like '%edits=1%' limit 1" >"$T/parent.c"
sed 's|// v1|// v2, the row pointer hoisted|' "$T/parent.c" >"$T/want.c"
cmp -s "$T/edited.c" "$T/want.c" && grep -q '// v1' "$T/parent.c" &&
  ok "the tuner's node is its parent with the edit applied" ||
  bad "edited: $(diff "$T/want.c" "$T/edited.c" | head -5)"
check "an edited kernel is judged (accepted)" \
  "$(q "select count(*) > 0 from nodes where run_id = 3 and params like '%edits=1%' and verdict = 'ok'")" 1
q "select request_json from llm_calls where role = 'tuner' limit 1" | grep -q "Earlier kernels on this path" &&
  ok "the tuner sees the path" || bad "no path in the tuner's prompt"
"$K" run --tree frob "$EX/rowsum" >/dev/null 2>"$T/e.err"
check "--tree frob: refused" "$? $(grep -c 'use kevo (the default) or adaexplore' "$T/e.err")" "2 1"
"$K" run --rule-sources compile,frob "$EX/rowsum" >/dev/null 2>"$T/e.err"
check "--rule-sources frob: refused" "$? $(grep -c "'frob' is not a source of rules" "$T/e.err")" "2 1"

echo "adaexplore_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
