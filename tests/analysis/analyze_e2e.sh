#!/bin/sh
# kevo analyze end to end against the loopback stand-in: a recorded greedy
# run is frozen and its feedback blocks switched; the stand-in answers by
# rules on which blocks a prompt holds (tests/analysis/rules.txt):
#   a correct kernel iff the performance block (raw) AND the history block
#   are present; a wrong one (it compiles) iff only history is; else a
#   compile error. So, exactly: pass rate = unanimity of {performance,
#   history}: phi = 0.5 each, I = d = 1; compile rate = history alone:
#   phi_history = 1, phi_performance = 0, I = 0.
# Also: the cost line, --budget-usd refusal, kill -9 and resume, replay with
# the network off (identical tables), the planning x alignment and transfer
# experiments, and bad input.
# usage: analyze_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC="$3"
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-analyze-e2e-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/an.db"
export XDG_CONFIG_HOME="$T/config"
RS="$EX/rowsum"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
# start_standin REPLIES [extra args]
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  r=$1
  shift
  "$STANDIN" --port-file "$T/port" --replies "$r" --max-requests 400 --lifetime 280 "$@" &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
# field METRIC PLAYER-or-COALITION KIND (shapley|interactions|dividends) from --json output
jf() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); m=d["metrics"][sys.argv[2]]; k=sys.argv[4]
if k=="shapley": r=[x for x in m["shapley"] if x["player"]==sys.argv[3]][0]
elif k=="v": print("%.6f" % m["v"][sys.argv[3]]); sys.exit(0)
else: r=[x for x in m[k] if x["players"]==sys.argv[3]][0]
print("%.6f" % r["value"])' "$@"
}
cd "$T" || exit 1

# ---- a recorded run: greedy from a correct starter, timed -------------------
start_standin "$SRC/tests/analysis/record.txt"
"$K" run --strategy greedy --base-url "$URL" --model m --api-key-env "" --steps 4 --budget 0.1 \
  --concurrency 1 --seed 1 --starter "$RS/good.c" "$RS" >"$T/run.out" 2>&1
check "recorded run exits 0" $? 0
check "recorded run: 4 nodes, a wrong one among them" \
  "$(q "select count(*) || ' ' || sum(verdict = 'wrong_output') from nodes where run_id = 1")" "4 2"

# ---- the Shapley analysis, killed mid-way and resumed ------------------------
SLOW=$(python3 -c 'print(",".join(["slow=0.3"] * 40))')
start_standin "$SRC/tests/analysis/rules.txt" --script "$SLOW"
ARGS="--players performance,history --samples 2 --no-timing --bootstrap 200"
"$K" analyze $ARGS --base-url "$URL" --model m --api-key-env "" 1 >"$T/a1.out" 2>"$T/a1.err" &
APID=$!
i=0
while [ "$(q "select count(*) from analysis_samples")" -lt 4 ] 2>/dev/null && [ $i -lt 200 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 $APID 2>/dev/null
wait $APID 2>/dev/null
n1=$(q "select count(*) from analysis_samples")
[ "$n1" -ge 4 ] && [ "$n1" -lt 24 ] && ok "killed with $n1 of 24 samples recorded" ||
  bad "kill -9 mid-way: $n1 samples recorded"
# An unfinished analysis reads back from the store alone (no model): the
# report says it is unfinished and how to continue it.
"$K" report --analysis 1 -o "$T/part.html" >/dev/null 2>"$T/part.err"
check "report of an unfinished analysis exits 0" $? 0
grep -q "This analysis is not finished" "$T/part.html" && ok "the report says it is unfinished" ||
  bad "unfinished analysis report: $(head -c 300 "$T/part.err")"
grep -q "to do: 24 LLM calls, at most 24 gate evaluations" "$T/a1.err" &&
  ok "the cost is printed before starting" || bad "no cost line: $(head -2 "$T/a1.err")"
"$K" analyze $ARGS --base-url "$URL" --model m --api-key-env "" 1 >"$T/a2.out" 2>"$T/a2.err"
check "resumed analysis exits 0" $? 0
grep -q "$n1 recorded already" "$T/a2.err" && ok "resume skips what was recorded" ||
  bad "resume: $(head -1 "$T/a2.err")"
check "one analysis, every sample once" \
  "$(q "select count(distinct analysis_id) || ' ' || count(*) from analysis_samples")" "1 24"
check "analysis calls are recorded, apart from the run's" \
  "$(q "select count(*) >= 24 from llm_calls where role = 'analyze:coder' and run_id is null")" 1
"$K" analyze $ARGS --base-url "$URL" --model m --api-key-env "" --json 1 >"$T/a.json" 2>/dev/null
check "pass rate: phi(performance) = 1/2" "$(jf "$T/a.json" pass_rate performance shapley)" 0.500000
check "pass rate: phi(history) = 1/2" "$(jf "$T/a.json" pass_rate history shapley)" 0.500000
check "pass rate: I(performance, history) = 1" \
  "$(jf "$T/a.json" pass_rate performance+history interactions)" 1.000000
check "pass rate: d(performance, history) = 1" \
  "$(jf "$T/a.json" pass_rate performance+history dividends)" 1.000000
check "compile rate: phi(history) = 1" "$(jf "$T/a.json" compile_rate history shapley)" 1.000000
check "compile rate: phi(performance) = 0" "$(jf "$T/a.json" compile_rate performance shapley)" 0.000000
check "compile rate: I = 0" "$(jf "$T/a.json" compile_rate performance+history interactions)" 0.000000
check "v({}) pass = 0, v(all) pass = 1" \
  "$(jf "$T/a.json" pass_rate '{}' v) $(jf "$T/a.json" pass_rate performance+history v)" \
  "0.000000 1.000000"
grep -q "performance  *0.500  \[  0.500,   0.500\]" "$T/a2.out" &&
  ok "terminal table with a degenerate interval" || bad "table: $(grep -m1 performance "$T/a2.out")"
check "gate results cached by source" "$(q "select count(*) from analysis_gate")" 3

# ---- replayed with the network off: identical tables ------------------------
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
"$K" analyze $ARGS --provider replay --model m 1 >"$T/r.out" 2>"$T/r.err"
check "replayed analysis exits 0" $? 0
tail -n +2 "$T/a2.out" >"$T/a2.tab"
tail -n +2 "$T/r.out" >"$T/r.tab"
cmp -s "$T/a2.tab" "$T/r.tab" && [ -s "$T/r.tab" ] && ok "replay gives identical tables" ||
  bad "replay tables differ: $(diff "$T/a2.tab" "$T/r.tab" | head -5)"
check "replay is a new analysis" "$(q "select count(*) from analyses")" 2

# ---- the analysis in kevo report: read back without a model ------------------
"$K" report --analysis 1 -o "$T/an.html" >"$T/rep.out" 2>&1
check "kevo report --analysis exits 0" $? 0
grep -q "4 bars, 8 cells" "$T/rep.out" && ok "report counts 4 bars and 8 cells" ||
  bad "report: $(cat "$T/rep.out")"
grep -q "<title>performance: 0.500, 95% interval \[0.500, 0.500\]" "$T/an.html" &&
  ok "report: phi(performance) = 1/2 as kevo analyze computed" || bad "report: no phi(performance) = 0.500"
grep -q "interaction I(performance, history) = 1.000" "$T/an.html" &&
  ok "report: I(performance, history) = 1 in the heat map" || bad "report: no I = 1"
grep -q "Shapley value of history = 1.000" "$T/an.html" &&
  ok "report: compile rate phi(history) = 1 on the diagonal" || bad "report: no phi(history) = 1"
"$K" report --analysis 99 -o "$T/none.html" >/dev/null 2>"$T/none.err"
check "report of an unknown analysis" "$? $(grep -c 'analysis 99 is not in' "$T/none.err")" "2 1"

# ---- cost refused beyond --budget-usd ----------------------------------------
mkdir -p "$T/config/kevo"
printf '{"models": {"pricey": {"provider": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": "", "input_usd_per_mtok": 1000, "output_usd_per_mtok": 1000}}}\n' \
  >"$T/config/kevo/config.json"
"$K" analyze --players history --samples 3 --no-timing --model pricey --budget-usd 0.01 1 \
  >/dev/null 2>"$T/b.err"
check "beyond --budget-usd: refused" "$? $(grep -c 'refused: the worst case' "$T/b.err")" "1 1"
rm "$T/config/kevo/config.json"

# ---- planning x alignment, and plan transfer --------------------------------
start_standin "$SRC/tests/analysis/rules.txt"
"$K" analyze --base-url "$URL" --model m --api-key-env "" --experiment planning --samples 2 --no-timing --bootstrap 200 --json 1 \
  >"$T/p.json" 2>"$T/p.err"
check "planning experiment exits 0" $? 0
"$K" report --analysis -o "$T/pl.html" >/dev/null 2>&1
grep -q "<title>plan, aligned: 1.000" "$T/pl.html" && grep -q "<title>plan, misaligned: 0.000" "$T/pl.html" &&
  ok "report: the latest analysis's 2x2" || bad "report: no 2x2 of the planning analysis"
pc() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f" % d["metrics"]["pass_rate"][sys.argv[2]]["value"])' "$T/p.json" "$1"; }
# aligned feedback (the parent was accepted and timed): planned or not, correct;
# misaligned (the wrong node's feedback: no performance block, "Verdict: wrong_output"): wrong.
check "planning 2x2: pass rates" \
  "$(pc 'no plan, misaligned') $(pc 'plan, misaligned') $(pc 'no plan, aligned') $(pc 'plan, aligned')" \
  "0.000 0.000 1.000 1.000"
check "planning: planner calls made" \
  "$(q "select count(*) > 0 from llm_calls where role = 'analyze:planner'")" 1
"$K" run --strategy greedy --plan-mode explicit --base-url "$URL" --model m --api-key-env "" \
  --steps 3 --budget 0.1 --concurrency 1 --seed 1 --starter "$RS/good.c" "$RS" >/dev/null 2>&1
check "recorded an explicit-plan run" "$(q "select count(*) from nodes where run_id = 2 and plan like '%Unroll%'")" 2
"$K" analyze --transfer-to m2 --samples 1 --no-timing --bootstrap 100 --json 2 >"$T/t.json" 2>"$T/t.err"
check "transfer experiment exits 0" $? 0
tc() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f" % d["metrics"][sys.argv[3]][sys.argv[2]]["value"])' "$T/t.json" "$1" "$2"; }
check "transfer: pass rates (no plan, own, transferred)" \
  "$(tc 'no plan' pass_rate) $(tc 'own plan' pass_rate) $(tc 'transferred plan' pass_rate)" \
  "1.000 1.000 1.000"
check "transfer: the transferred plan names its optimization" \
  "$(tc 'transferred plan' plan:unroll) $(tc 'no plan' plan:unroll)" "1.000 0.000"
check "transfer: the target model was asked" \
  "$(q "select count(*) > 0 from llm_calls where role like 'analyze:%' and request_json like '%\"m2\"%'")" 1

# ---- bad input -----------------------------------------------------------------
"$K" analyze 999 >/dev/null 2>"$T/e.err"
check "unknown run" "$? $(grep -c 'run 999 is not in' "$T/e.err")" "2 1"
"$K" analyze --players performance,history,rules,profile,history,rules,profile 1 >/dev/null 2>"$T/e.err"
check "n > 6 players" "$? $(grep -c 'at most 6' "$T/e.err")" "2 1"
"$K" analyze --players profile 1 >/dev/null 2>"$T/e.err"
check "a player the run never had" "$? $(grep -c 'never had a profile block' "$T/e.err")" "2 1"
"$K" analyze --players frob 1 >/dev/null 2>"$T/e.err"
check "an unknown player" "$? $(grep -c "'frob' is not a player" "$T/e.err")" "2 1"
q "insert into runs (task_id, strategy, config_json, status, kevo_version)
   select task_id, strategy, '{\"strategy\":\"greedy\",\"model\":{\"model\":\"m\",\"provider\":\"openai\",\"base_url\":\"$URL\"}}', status, '0.0.1' from runs where id = 1"
"$K" analyze --api-key-env "" 3 >/dev/null 2>"$T/e.err"
check "a run recorded with an older schema" "$? $(grep -c 'older schema' "$T/e.err")" "2 1"

echo "analyze_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
