#!/bin/sh
# End-to-end tests of the LLM strategies (ada, greedy, best-of-n) on the cpu
# surface, against the loopback stand-in serving scripted replies: correct,
# wrong, crashing and non-compiling kernels, a reply without code, plan and
# rule replies.
# usage: agent_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC="$3"
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-agent-e2e-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap "kill \$SPID 2>/dev/null" EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/agent.db"
export XDG_CONFIG_HOME="$T/config"
REPLIES="$SRC/tests/agent/replies.txt"
RS="$EX/rowsum"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "${DB:-$KEVO_DB}" "$1" 2>/dev/null; }
# start_standin [extra args]: a fresh stand-in; sets SPID and URL.
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  "$STANDIN" --port-file "$T/port" --replies "$REPLIES" --max-requests 200 --lifetime 300 \
    --log "$T/standin.log" "$@" &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
# invariants RUN: every non-root node's parent is in the same run; steps unique.
invariants() {
  orphans=$(q "select count(*) from nodes n where n.run_id = $1 and n.parent_id is not null and
               not exists (select 1 from nodes p where p.id = n.parent_id and p.run_id = n.run_id
                           and p.step < n.step)")
  check "run $1: every parent exists in the run, earlier" "$orphans" 0
  check "run $1: steps unique and dense" \
    "$(q "select count(distinct step) || ' ' || (max(step) + 1) from nodes where run_id = $1")" \
    "$(q "select count(*) || ' ' || count(*) from nodes where run_id = $1")"
}
cd "$T" || exit 1
LLM="--base-url URL --model m --api-key-env ''"

# ---- ada, two requests in flight, timing on --------------------------------
# The first reply comes at once and the second is held until the run has
# printed a judged step with a request in flight (the event this checks; at
# most 120 s): the first kernel is judged while the second request is still
# in flight, whatever the host's load. A fixed hold made every run wait it out.
start_standin --script "ok,hold=120@$T/release"
"$K" run --strategy ada --base-url "$URL" --model m --api-key-env "" --steps 10 --budget 0.1 \
  --concurrency 2 --seed 1 -o "$T/best.c" "$RS" >"$T/ada.out" 2>&1 &
ada=$!
i=0
until grep -Eq 'step [0-9]+/10 .*[1-9] in flight\)  last: [a-z]' "$T/ada.out" 2>/dev/null || [ $i -ge 2400 ] ||
  ! kill -0 $ada 2>/dev/null; do
  sleep 0.05
  i=$((i + 1))
done
touch "$T/release"
wait $ada
check "ada run exits 0" $? 0
check "ada: 10 nodes" "$(q "select count(*) from nodes where run_id = 1")" 10
invariants 1
check "ada: every verdict kind seen" \
  "$(q "select count(distinct verdict) from nodes where run_id = 1 and verdict in
        ('ok','wrong_output','crash','load_error','no_code')")" 5
check "ada: rewards by verdict" \
  "$(q "select count(*) from nodes where run_id = 1 and not (
        (verdict = 'ok' and reward between 0.4 and 1.6) or
        (verdict in ('wrong_output','crash') and abs(reward - 0.05) < 1e-9) or
        (verdict in ('no_code','compile_error') and reward = 0) or
        (verdict = 'load_error' and abs(reward - 0.05) < 1e-9))")" 0
check "ada: small steps have a parent, large ones none" \
  "$(q "select count(*) from nodes where run_id = 1 and
        ((action in ('refine','debug')) != (parent_id is not null))")" 0
fast=$(q "select printf('%.2f', max(speedup)) from nodes where run_id = 1 and verdict = 'ok'")
head -1 "$T/best.c" | grep -q "verdict ok, ${fast}x the reference" &&
  ok "best is the fastest accepted node (${fast}x)" || bad "best header: $(head -1 "$T/best.c"), want $fast"
grep -q 'in flight' "$T/ada.out" && grep -q 'spent \$' "$T/ada.out" && ok "progress line with spend" ||
  bad "no progress/spend line"
"$K" eval --no-timing "$RS" "$T/best.c" >/dev/null 2>&1 && ok "best kernel is accepted" || bad "best kernel rejected"
check "coder calls recorded with the run" "$(q "select count(*) from llm_calls where run_id = 1 and role = 'coder'")" 10
# Rules from the loader's and compiler's evidence, merged, with provenance.
check "rules learnt from the undefined helper" \
  "$(q "select count(*) from rules where text like 'You cannot call fast_sum%'")" 2
check "a rule counts its occurrences" \
  "$(q "select max(count) from rules where text like 'You cannot call fast_sum%'")" 2
check "a rule keeps its evaluations" \
  "$(q "select count(*) from rule_evals e join rules r on r.id = e.rule_id where r.text like
        'You cannot call fast_sum: no library%'")" 2
"$K" rules list >"$T/rules.out" 2>&1 && grep -q "fast_sum" "$T/rules.out" && ok "rules list" || bad "rules list"
rid=$(q "select min(id) from rules")
"$K" rules show "$rid" | grep -q "evaluations [0-9]" && ok "rules show" || bad "rules show"
"$K" rules show 9999 >/dev/null 2>&1
check "rules show unknown" $? 2
"$K" rules export "$T/rules.json" >/dev/null && DB2="$T/other.db" &&
  "$K" rules import --db "$DB2" "$T/rules.json" >/dev/null &&
  "$K" rules import --db "$DB2" "$T/rules.json" >/dev/null
check "import twice is idempotent" "$(DB=$T/other.db q "select count(*) || ' ' || min(count) from rules")" \
  "$(q "select count(*) from rules") $(q "select min(count) from rules")"
grep -Eq 'step [0-9]+/10 .*[1-9] in flight\)  last: [a-z]+ .*(ok|wrong_output|crash|load_error)' "$T/ada.out" &&
  ok "requests in flight while the gate judges" || bad "never a request in flight during judging"
"$K" run --prompt-blocks task,frob --base-url "$URL" --model m "$RS" >"$T/pb.out" 2>&1
check "unknown prompt block refused" "$? $(grep -c "unknown block 'frob'" "$T/pb.out")" "2 1"
n_conc=$(q "select count(*) from nodes where run_id = 1")
[ "$n_conc" = 10 ] && ok "concurrency 2 completes" || bad "concurrency"

# ---- greedy and best-of-n ---------------------------------------------------
"$K" run --strategy greedy --base-url "$URL" --model m --api-key-env "" --steps 5 --no-timing \
  --seed 2 "$RS" >"$T/greedy.out" 2>&1
check "greedy run exits 0" $? 0
invariants 2
check "greedy refines the best accepted kernel" \
  "$(q "select count(*) from nodes n join nodes p on p.id = n.parent_id where n.run_id = 2 and
        n.action = 'refine' and p.verdict != 'ok'")" 0
# The seen-twice rules enter later prompts.
grep -q 'You cannot call fast_sum' "$T/rules.out" && 
  [ "$(q "select count(*) from llm_calls where run_id = 2 and request_json like '%Rules learnt%fast_sum%'")" -ge 1 ] &&
  ok "rules seen twice enter the prompts of a later run" || bad "rules not in any prompt"
"$K" run --strategy best-of-n --base-url "$URL" --model m --api-key-env "" --steps 4 --no-timing \
  --seed 2 --concurrency 4 "$RS" >"$T/bon.out" 2>&1
check "best-of-n run exits 0" $? 0
check "best-of-n: independent samples" \
  "$(q "select count(*) || ' ' || count(parent_id) from nodes where run_id = 3")" "4 0"

# ---- plan_mode explicit and an LLM rule extractor ---------------------------
"$K" run --strategy ada --base-url "$URL" --model m --api-key-env "" --steps 4 --no-timing \
  --plan-mode explicit --rules-llm --seed 4 "$RS" >"$T/plan.out" 2>&1
check "explicit plan run completes" "$(q "select status from runs where id = 4")" done
check "planner calls made" "$(q "select count(*) >= 4 from llm_calls where run_id = 4 and role = 'planner'")" 1
check "plans stored with the nodes" \
  "$(q "select count(*) from nodes where run_id = 4 and plan like '%Split rows across threads%'")" 4
check "the coder got the plan" \
  "$(q "select count(*) >= 4 from llm_calls where run_id = 4 and role = 'coder' and request_json like '%Plan to implement%'")" 1
check "rule_extractor rules stored" \
  "$(q "select count(*) >= 1 from rules where origin = 'llm' and text like 'You cannot write to y%'")" 1

# ---- a USD budget stops the run ---------------------------------------------
start_standin --usage 1000,1000
cat >"$T/kevo.json" <<JSON
{"models": {"priced": {"provider": "openai", "base_url": "$URL", "model": "m", "api_key_env": "",
  "input_usd_per_mtok": 5, "output_usd_per_mtok": 5, "max_tokens": 1000}}}
JSON
"$K" run --strategy best-of-n --model priced --budget-usd 0.03 --steps 10 --no-timing \
  --concurrency 1 "$RS" >"$T/budget.out" 2>&1
check "budget run exits 0" $? 0
nb=$(q "select count(*) from nodes where run_id = 5")
[ "$nb" -ge 1 ] && [ "$nb" -lt 10 ] && ok "budget stopped the run after $nb steps" || bad "budget: $nb nodes"
grep -q "budget" "$T/budget.out" && ok "says the budget ended it" || bad "no budget message"
check "budget run stopped" "$(q "select status from runs where id = 5")" stopped
spent=$(q "select sum(cost_usd) <= 0.03 from llm_calls where run_id = 5")
check "spend within the cap" "$spent" 1
rm -f "$T/kevo.json"

# ---- kill -9 mid-run, then resume -------------------------------------------
start_standin --script "ok,ok,slow=0.5,slow=0.5,slow=0.5,slow=0.5,slow=0.5,slow=0.5"
"$K" run --strategy ada --base-url "$URL" --model m --api-key-env "" --steps 8 --no-timing \
  --seed 6 "$RS" >"$T/killed.out" 2>&1 &
pid=$!
i=0
while [ "$(q "select count(*) from nodes where run_id = 6")" -lt 3 ] 2>/dev/null && [ $i -lt 300 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
before=$(q "select count(*) from nodes where run_id = 6")
[ "$before" -ge 3 ] && [ "$before" -lt 8 ] && ok "killed after $before steps" || bad "kill timing: $before"
check "store intact after kill -9" "$(q "pragma integrity_check")" ok
"$K" resume 6 >"$T/resume.out" 2>&1
check "resume exits 0" $? 0
check "resumed run completes its steps" "$(q "select count(*) from nodes where run_id = 6")" 8
invariants 6
check "resumed run done" "$(q "select status from runs where id = 6")" done

# ---- a recorded run replayed with the network off gives the same tree -------
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
start_standin
"$K" run --strategy ada --base-url "$URL" --model m --api-key-env "" --steps 6 --no-timing \
  --seed 9 --concurrency 1 --prompt-blocks all,-rules "$RS" >"$T/rec.out" 2>&1
check "recorded run exits 0" $? 0
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
"$K" run --strategy ada --provider replay --model m --steps 6 --no-timing --seed 9 --concurrency 1 \
  --prompt-blocks all,-rules "$RS" >"$T/replay.out" 2>&1
check "replayed run exits 0" $? 0
rec=$(q "select group_concat(step || ':' || source_hash || ':' || verdict || ':' || ifnull(parent_id - (select min(id) from nodes where run_id = 7), '-'), ' ') from (select * from nodes where run_id = 7 order by step)")
rep=$(q "select group_concat(step || ':' || source_hash || ':' || verdict || ':' || ifnull(parent_id - (select min(id) from nodes where run_id = 8), '-'), ' ') from (select * from nodes where run_id = 8 order by step)")
[ -n "$rec" ] && [ "$rec" = "$rep" ] && ok "replay gives the same tree" || bad "replay tree differs:
  $rec
  $rep"

echo "agent e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
