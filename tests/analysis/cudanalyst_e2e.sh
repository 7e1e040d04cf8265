#!/bin/sh
# kevo analyze --preset cudanalyst end to end against the loopback stand-in.
# A recorded greedy run: step 0 does not compile, step 1 debugs it (correct),
# step 2 refines step 1. So the chosen nodes are step 1 (a failing parent:
# the Debugger has a report, the Analyzer none) and step 2 (a passing parent:
# the Analyzer has its loop nest, the Debugger none): CUDAnalyst's status
# gating. (Dividends of one player are v({i}) - v({}): the v values.) The stand-in (tests/analysis/ca_rules.txt) answers the planner with
# a plan, and the coder with a correct kernel iff
#   step 1: the Debugger's report AND the history block are in the prompt;
#   step 2: the Analyzer's report is;
# else a kernel that does not compile. With players d (debugger), a
# (analyzer), h (history), each node weighing 1/2, the pass rate is
#   v(S) = 1/2 [d in S and h in S] + 1/2 [a in S]
# so, exactly: Shapley phi_d = phi_h = 1/4, phi_a = 1/2; Harsanyi dividends
# d({a}) = d({d,h}) = 1/2, every other 0; Grabisch I({d,h}) = 1/2,
# I({d,a}) = I({a,h}) = 0, I(N) = 0. (CUDAnalyst's released "pairwise
# synergy", d(ij) - d(N)/3, is 1/2 for {d,h} too.) Every sample of a prompt
# is alike, so best-of-k over 3 rollouts of k = 5 keeps these values.
# Then the recorded frozen unit (the child's prompt as sent, the plan
# decision injected before its history), the planner once per (node,
# coalition, rollout), and the errors.
# usage: cudanalyst_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC="$3"
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-ca-e2e-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/ca.db"
export XDG_CONFIG_HOME="$T/config"
RS="$EX/rowsum"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  "$STANDIN" --port-file "$T/port" --replies "$1" --max-requests 2000 --lifetime 280 &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
# jf FILE METRIC NAME KIND: a value from kevo analyze --json
jf() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); m=d["metrics"][sys.argv[2]]; k=sys.argv[4]
if k=="shapley": r=[x for x in m["shapley"] if x["player"]==sys.argv[3]][0]
elif k=="v": print("%.6f" % m["v"][sys.argv[3]]); sys.exit(0)
else: r=[x for x in m[k] if x["players"]==sys.argv[3]][0]
print("%.6f" % r["value"])' "$@"
}
cd "$T" || exit 1

# ---- the recorded run ----------------------------------------------------------
start_standin "$SRC/tests/analysis/ca_record.txt"
"$K" run --strategy greedy --base-url "$URL" --model m --api-key-env "" --steps 3 --no-timing \
  --concurrency 1 --seed 1 "$RS" >"$T/run.out" 2>&1
check "recorded run exits 0" $? 0
check "recorded run: compile_error, ok, ok" \
  "$(q "select group_concat(verdict, ' ') from (select verdict from nodes where run_id = 1 order by step)")" \
  "compile_error ok ok"

# ---- the 3-player game: debugger, analyzer, history (prompt rebuilt) -----------
start_standin "$SRC/tests/analysis/ca_rules.txt"
"$K" analyze --preset cudanalyst --frozen rebuilt --players debugger,analyzer,history --no-timing \
  --bootstrap 200 --base-url "$URL" --model m --api-key-env "" --json 1 >"$T/g.json" 2>"$T/g.err"
check "3-player analysis exits 0" $? 0
grep -q -- "--preset cudanalyst (yuxuan-z19/cudanalyst as released): --players debugger,analyzer,profiler" "$T/g.err" &&
  ok "the preset's options are said" || bad "preset line: $(head -2 "$T/g.err")"
grep -q "2 parents judged again" "$T/g.err" && ok "feedback recomputed on the 2 parents" ||
  bad "no recompute line: $(grep -m2 kevo "$T/g.err")"
grep -q "to do: 288 LLM calls" "$T/g.err" && ok "cost: 2 nodes x 8 x 3 rollouts x (5 + planner)" ||
  bad "cost: $(grep -m1 'to do' "$T/g.err")"
for want in "pass_rate debugger shapley 0.250000" "pass_rate history shapley 0.250000" \
  "pass_rate analyzer shapley 0.500000" "pass_rate analyzer v 0.500000" \
  "pass_rate debugger+history dividends 0.500000" "pass_rate debugger v 0.000000" \
  "pass_rate debugger+analyzer+history dividends 0.000000" \
  "pass_rate debugger+history interactions 0.500000" \
  "pass_rate debugger+analyzer interactions 0.000000" \
  "pass_rate analyzer+history interactions 0.000000" \
  "compile_rate analyzer shapley 0.500000"; do
  set -- $want
  check "$1 $3 of $2 = $4" "$(jf "$T/g.json" "$1" "$2" "$3")" "$4"
done
check "v({}) = 0, v(N) = 1" \
  "$(jf "$T/g.json" pass_rate '{}' v) $(jf "$T/g.json" pass_rate debugger+analyzer+history v)" \
  "0.000000 1.000000"
check "the planner: once per node, coalition and rollout" \
  "$(q "select count(*) from llm_calls where role = 'analyze:planner'")" 48
check "samples: 2 nodes x 8 x 15, each recorded once" \
  "$(q "select count(*) from analysis_samples where analysis_id = 1")" 240
check "status gating: the Debugger only at the failing parent, the Analyzer only at the passing" \
  "$(q "select (sum(request_json like '%## Debugger\\nPlan decision%') > 0) || ' ' || (sum(request_json like '%## Analyzer\\nPlan decision%') > 0) || ' ' || sum(request_json like '%## Debugger\\nPlan decision%' and request_json like '%## Analyzer\\nPlan decision%') from llm_calls where role = 'analyze:coder'")" "1 1 0"
q "select request_json from llm_calls where role = 'analyze:coder' and request_json like '%## Analyzer%' limit 1" >"$T/an.req"
grep -q "function rowsum: 2 loops, nested 2 deep" "$T/an.req" &&
  ok "the Analyzer's report: the parent's loop nest" || bad "analyzer report: $(head -c 400 "$T/an.req")"

# ---- the recorded frozen unit: debugger and analyzer ------------------------------
M=$(q "select max(id) from llm_calls")
"$K" analyze --preset cudanalyst --players debugger,analyzer --no-timing --bootstrap 200 \
  --base-url "$URL" --model m --api-key-env "" --json 1 >"$T/r.json" 2>"$T/r.err"
check "recorded-prompt analysis exits 0" $? 0
check "recorded: phi(debugger) = phi(analyzer) = 1/2, d = 0" \
  "$(jf "$T/r.json" pass_rate debugger shapley) $(jf "$T/r.json" pass_rate analyzer shapley) $(jf "$T/r.json" pass_rate debugger+analyzer dividends)" \
  "0.500000 0.500000 0.000000"
q "select request_json from llm_calls where role = 'analyze:coder' and id > $M and request_json like '%# Plan Decision%## Debugger%' limit 1" >"$T/rec.req"
python3 - "$T/rec.req" <<'EOF' && ok "the decision sits before the recorded history" || bad "injection: $(head -c 300 "$T/rec.req")"
import json, sys
body = json.load(open(sys.argv[1]))
text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
d, h = text.find("# Plan Decision"), text.find("## Earlier attempts")
sys.exit(0 if 0 <= d < h else 1)
EOF
"$K" analyze --preset cudanalyst --players debugger,history --no-timing \
  --base-url "$URL" --model m --api-key-env "" 1 >/dev/null 2>"$T/e.err"
check "recorded prompt with a block player: refused" \
  "$? $(grep -c 'needs --frozen rebuilt' "$T/e.err")" "2 1"
"$K" analyze --preset cudanalyst --players profiler --no-timing \
  --base-url "$URL" --model m --api-key-env "" 1 >/dev/null 2>"$T/e.err"
check "the Profiler on the cpu: refused with the reason" \
  "$? $(grep -c 'cuda with ncu only' "$T/e.err")" "2 1"
"$K" analyze --preset nope 1 >/dev/null 2>"$T/e.err"
check "an unknown preset" "$? $(grep -c 'the presets are adaexplore' "$T/e.err")" "2 1"

echo "cudanalyst_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
