#!/bin/sh
# kevo run --online-attribution end to end against the loopback stand-in,
# whose replies depend only on the blocks a prompt holds
# (tests/analysis/online_rules.txt): a correct kernel iff the history block
# is there, else a syntax error. The store holds one imported rule (a long
# one), so every prompt may carry a rules block that changes nothing.
# Judged without timing, every outcome is exact: history carries the whole
# reward (1), rules none. With every step randomised and a price of 2 per
# 1k tokens, rules (about 96 tokens: a cost of 0.19) is turned off; history
# (about 90 tokens, 0.18, far below its contribution) never is, nor
# performance (no timing: its block is empty, so it costs nothing).
# Checks: the decision is in the store (the node whose outcome caused it,
# with the estimate), printed, and obeyed (no later prompt holds the block,
# no later randomised step draws it); after kill -9 and kevo resume it is
# obeyed again and not taken twice; a run without the option randomises
# nothing; bad values are refused.
# usage: online_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-online-e2e-XXXXXX")
SPID=
APID=
cleanup() {
  [ -n "$APID" ] && kill -9 "$APID" 2>/dev/null
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/online.db"
export XDG_CONFIG_HOME="$T/config"
RS="$EX/rowsum"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 -cmd ".timeout 5000" "$KEVO_DB" "$1" 2>/dev/null; }
qn() { r=$(q "$1"); echo "${r:-0}"; }
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/analysis/online_rules.txt" \
  --max-requests 400 --lifetime 280 &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"
cd "$T" || exit 1
LLM="--base-url $URL --model m --api-key-env"
RUN="--strategy greedy --steps 20 --no-timing --concurrency 1 --seed 3 --starter $RS/good.c"
cat >"$T/rules.json" <<'EOF'
{"kevo_rules": 1, "rules": [
 {"text": "You cannot call fast_sum or fast_rowsum: no library defines them, so a kernel that calls either fails to link; write every reduction yourself, in plain C loops, and keep the signature of the entry exactly as the task declares it.", "origin": "compiler", "count": 5}
]}
EOF
"$K" rules import "$T/rules.json" >/dev/null 2>&1
check "a rule in the store, active in prompts" "$(qn "select count(*) from rules")" 1

# obeyed RUN: the node whose outcome turned rules off, its step, and checks
# that nothing after it used the block
obeyed() {
  run=$1
  node=$(q "select id from nodes where run_id = $run and params like '%online attribution: rules off%'")
  step=$(q "select step from nodes where id = ${node:-0}")
  check "run $run: later randomised steps never draw rules" \
    "$(qn "select count(*) from nodes where run_id = $run and step > ${step:-0} and params like '%attr=%rules:%'")" 0
  # One coder call per step (greedy, --concurrency 1, no planner): the run's
  # k-th call wrote step k (step 0 is the starter).
  ranked="select (select count(*) from llm_calls d where d.run_id = c.run_id and d.id <= c.id) as k,
          request_json like '%fast_rowsum%' as rules from llm_calls c where run_id = $run"
  # (a kill may leave one more: the call in flight, asked again on resume)
  check "run $run: a call per step" "$(qn "select count(*) between 19 and 20 from llm_calls where run_id = $run")" 1
  check "run $run: prompts up to the decision held the rules block" \
    "$(qn "select count(*) > 0 from ($ranked) where k <= ${step:-0} and rules")" 1
  check "run $run: later prompts hold no rules block" \
    "$(qn "select count(*) from ($ranked) where k > ${step:-0} and rules")" 0
  check "run $run: later prompts, some" "$(qn "select count(*) > 0 from ($ranked) where k > ${step:-0}")" 1
  check "run $run: history and performance are never turned off" \
    "$(qn "select count(*) from nodes where run_id = $run and (params like '%history off%' or params like '%performance off%')")" 0
  later=$(qn "select count(*) from nodes where run_id = $run and step > ${step:-0} and params like '%history:1:%'")
  [ "$later" -gt 0 ] && ok "run $run: history still drawn after the decision ($later steps)" ||
    bad "run $run: history not drawn after the decision"
}

# ---- 1. every step randomised: rules turned off, history kept ----------------------
"$K" run $RUN $LLM "" --online-attribution 1 --attr-price 2 "$RS" >"$T/r1.out" 2>"$T/r1.err"
check "run exits 0" $? 0
check "every step but the starter is randomised" \
  "$(qn "select count(*) from nodes where run_id = 1 and params like '%attr=%'")" 19
check "the decision is recorded once, on the node that caused it" \
  "$(qn "select count(*) from nodes where run_id = 1 and params like '%online attribution: rules off from step%'")" 1
note=$(q "select substr(params, instr(params, 'online attribution')) from nodes where run_id = 1 and params like '%online attribution%'")
echo "  note: $note"
python3 - "$note" <<'EOF' && ok "the estimate that caused it: Shapley estimate below its cost" || bad "the note: $note"
import re, sys
m = re.search(r"Shapley estimate ([-+]?[0-9.]+) \(se ([0-9.]+), ([0-9]+) randomised steps\) stayed below its cost ([0-9.]+)", sys.argv[1])
sys.exit(0 if m and float(m.group(1)) < float(m.group(4)) and int(m.group(3)) >= 10 else 1)
EOF
grep -q "kevo: run 1: online attribution: rules off from step" "$T/r1.err" &&
  ok "the decision is printed" || bad "not printed: $(grep -m1 attribution "$T/r1.err")"
obeyed 1
check "every call names the node it wrote" \
  "$(qn "select count(*) from llm_calls c left join nodes n on n.id = c.node_id where c.run_id = 1 and (n.id is null or n.run_id != 1)")" 0
"$K" llm calls --run 1 --json >"$T/calls.json" 2>"$T/calls.err"
check "llm calls --run 1 --json: the run's calls, with their nodes" \
  "$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); print(len(a), all(c["run_id"] == 1 and c["node_id"] > 0 for c in a))' "$T/calls.json")" \
  "$(qn "select count(*) from llm_calls where run_id = 1") True"
"$K" llm calls --run 1 --limit 2 >"$T/calls2.txt" 2>&1
check "llm calls --run 1 --limit 2: the last two" "$(grep -c "run=1 node=" "$T/calls2.txt")" 2
"$K" runs show 1 >"$T/show.txt" 2>&1
grep -q "online attribution: rules off" "$T/show.txt" && ok "kevo runs show shows the decision" ||
  bad "runs show: no decision"

# ---- 2. killed after the decision, resumed -----------------------------------------
"$K" run $RUN $LLM "" --online-attribution 1 --attr-price 2 "$RS" >"$T/r2.out" 2>"$T/r2.err" &
APID=$!
i=0
while [ "$(qn "select count(*) from nodes where run_id = 2 and params like '%online attribution%'")" -lt 1 ] &&
  [ $i -lt 4800 ] && kill -0 $APID 2>/dev/null; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 $APID 2>/dev/null
wait $APID 2>/dev/null
APID=
n2=$(qn "select count(*) from nodes where run_id = 2")
[ "$n2" -lt 20 ] && [ "$n2" -gt 8 ] && ok "killed after the decision, $n2 of 20 nodes recorded" ||
  bad "kill -9: $n2 nodes"
"$K" resume 2 >"$T/r3.out" 2>"$T/r3.err"
check "kevo resume exits 0" $? 0
check "resumed: 20 nodes" "$(qn "select count(*) from nodes where run_id = 2")" 20
check "the run's settings keep --no-timing (for kevo resume)" \
  "$(qn "select count(*) from runs where id = 2 and config_json like '%\"timing\":false%'")" 1
grep -q "best [0-9]" "$T/r3.err" && bad "resumed: timed, though the run started with --no-timing" ||
  ok "resumed: untimed, as the run started"
check "resumed: the decision is taken once" \
  "$(qn "select count(*) from nodes where run_id = 2 and params like '%online attribution%'")" 1
grep -q "online attribution" "$T/r3.err" && bad "resumed: the decision was announced again" ||
  ok "resumed: the decision is replayed from the store, not announced again"
obeyed 2

# ---- 3. opt-in, and bad values -----------------------------------------------------
"$K" run --strategy greedy --steps 4 --no-timing --concurrency 1 --starter "$RS/good.c" $LLM "" \
  "$RS" >/dev/null 2>&1
check "without the option nothing is randomised" \
  "$(qn "select count(*) from nodes where run_id = 3 and (params like '%attr=%' or params like '%off=%')")" 0
check "the run's settings say nothing of attribution" \
  "$(qn "select count(*) from runs where id = 3 and config_json like '%attribution%'")" 0
check "run 1's settings keep it (for kevo resume)" \
  "$(qn "select count(*) from runs where id = 1 and config_json like '%\"attribution\":{\"price\":2%'")" 1
"$K" run --online-attribution 0 $LLM "" "$RS" >/dev/null 2>"$T/e1.err"
check "--online-attribution 0 refused" "$? $(grep -c "online-attribution: '0' is not a positive" "$T/e1.err")" "2 1"
"$K" run --online-attribution 1.5 $LLM "" "$RS" >/dev/null 2>"$T/e2.err"
check "--online-attribution 1.5 refused" "$? $(grep -c 'the share of steps to randomise, in (0, 1]' "$T/e2.err")" "2 1"
"$K" run --online-attribution 1 --attr-price -1 $LLM "" "$RS" >/dev/null 2>"$T/e3.err"
check "--attr-price -1 refused" "$? $(grep -c "attr-price: '-1' is not a positive" "$T/e3.err")" "2 1"

echo "online_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
