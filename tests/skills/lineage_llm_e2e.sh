#!/bin/sh
# KLineage's LLM mode end to end against the loopback stand-in serving
# scripted replies (lineage_replies.txt): the expert (examples/tasks/rowsum
# good.c, not annotated) is walked back by the "model": a first
# de-optimization that the gate rejects (it drops the tail: wrong_output),
# retried with the verdict and accepted; a second accepted; then NAIVE. Each
# accepted step is re-derived forward from its card alone: one re-derivation
# passes (and gets its paired test), one does not load (a risk on its
# card, not admitted). Every step and every call is recorded, and the same
# walk replays from the store with the stand-in gone (--provider replay).
# The legacy walk: KLineage's audit and round-trip gate off (--audit off
# --roundtrip off); lineage_kl_e2e tests them.
# usage: lineage_llm_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-lineage-llm-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_DB="$T/kevo.db"
export XDG_CONFIG_HOME="$T/config"
FAILS=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; FAILS=$((FAILS + 1)); }
check() {
  _name=$1; shift
  if "$@"; then pass "$_name"; else fail "$_name"; fi
}
q() { sqlite3 "$KEVO_DB" "$1"; }
mkdir -p "$T/rowsum"
sed 's/"rows": 8192, "cols": 8192/"rows": 512, "cols": 1024/' "$SRC/examples/tasks/rowsum/task.json" \
  > "$T/rowsum/task.json"
cp "$SRC/examples/tasks/rowsum/reference.c" "$T/rowsum/"
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/skills/lineage_replies.txt" \
  --max-requests 50 --lifetime 300 --log "$T/standin.log" &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"

"$K" lineage extract --base-url "$URL" --model m --api-key-env "" --budget 0.2 --pairs 4 \
  --audit off --roundtrip off \
  -o "$T/cards.json" "$T/rowsum" "$SRC/examples/tasks/rowsum/good.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err" "$T/out"
check "LLM walk exits 0" [ "$rc" = 0 ]
check "LLM walk: 3 steps, 2 accepted" grep -q '(llm, cpu, .*): 3 steps, 2 accepted' "$T/out"
check "the walk ends where the model says NAIVE" grep -q 'the model says the kernel is naive' "$T/err"
"$K" lineage show >"$T/show" 2>&1
cat "$T/show"
check "step 1: the first proposal is rejected (wrong_output)" sh -c "sed -n 4p '$T/show' | grep -q 'OMP_ROWS *wrong_output'"
check "step 2: the retry is accepted" sh -c "sed -n 5p '$T/show' | grep -q 'OMP_ROWS *ok'"
check "step 3: LANES accepted" sh -c "sed -n 6p '$T/show' | grep -q 'LANES *ok'"
check "the retry's prompt carried the rejection" \
  [ "$(q "SELECT COUNT(*) FROM llm_calls WHERE role = 'lineage:deopt' AND request_json LIKE '%previous proposal for this step was refused: removing OMP_ROWS gave wrong_output%'")" = 1 ]
check "every call recorded: 4 de-optimizations, 2 re-derivations" \
  [ "$(q "SELECT role || ':' || COUNT(*) FROM llm_calls GROUP BY role ORDER BY role" | tr '\n' ' ')" = "lineage:deopt:4 lineage:rederive:2 " ]
check "the re-derivation prompt holds the card, not the diff" \
  [ "$(q "SELECT COUNT(*) FROM llm_calls WHERE role = 'lineage:rederive' AND request_json LIKE '%Skill card:%' AND request_json NOT LIKE '%@@ %'")" = 2 ]
check "OMP_ROWS re-derived and paired" \
  sh -c "grep -q ' OMP_ROWS .*x \[' '$T/show'"
check "LANES' failed re-derivation is a risk on its card, not admitted" \
  [ "$(q "SELECT COUNT(*) FROM skills WHERE name = 'LANES' AND status != 'admitted' AND card_json LIKE '%re-derived from this card failed the gate (load_error: %undefined symbol: lanes_sum_rows%'")" = 1 ]
check "the rejected proposal is a risk on the cards" \
  [ "$(q "SELECT COUNT(*) FROM skills WHERE card_json LIKE '%removing OMP_ROWS from this kernel was rejected%'")" = 2 ]
check "every kernel is in the store" \
  [ "$(q 'SELECT COUNT(*) FROM lineage_steps s JOIN sources o ON o.hash = s.child_hash')" = 3 ]
q "SELECT ord, mechanism, verdict, accepted FROM lineage_steps ORDER BY ord" >"$T/steps1"

# replay: the stand-in is gone, the store answers
kill "$SPID" 2>/dev/null
wait "$SPID" 2>/dev/null
SPID=
"$K" lineage extract --provider replay --model m --budget 0.2 --pairs 4 --audit off --roundtrip off \
  "$T/rowsum" "$SRC/examples/tasks/rowsum/good.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "replay with the network off exits 0" [ "$rc" = 0 ]
q "SELECT ord, mechanism, verdict, accepted FROM lineage_steps WHERE lineage_id = (SELECT MAX(id) FROM lineages) ORDER BY ord" >"$T/steps2"
check "replay: the same steps and verdicts" cmp -s "$T/steps1" "$T/steps2"
check "replay: no new calls went out" [ "$(q "SELECT COUNT(*) FROM llm_calls WHERE provider != 'replay'")" = 6 ]
# prompts overridden from a directory (the stand-in is gone: replay, whose
# keys the new prompts miss, so the walk stops at its first call), and a
# template with an unknown variable refused before anything runs
mkdir -p "$T/prompts" "$T/badprompts"
printf 'OVERRIDDEN {{name}} attempt {{attempt}}/{{attempts}}\n```{{lang}}\n{{code}}```\n' \
  >"$T/prompts/lineage_deopt.md"
"$K" lineage extract --provider replay --model m --budget 0.2 --pairs 4 --prompts "$T/prompts" \
  "$T/rowsum" "$SRC/examples/tasks/rowsum/good.c" >"$T/out" 2>"$T/err"
check "an overridden prompt is what is asked (a replay miss names it)" \
  [ "$(q "SELECT COUNT(*) FROM llm_calls WHERE role = 'lineage:deopt' AND request_json LIKE '%OVERRIDDEN rowsum attempt 1/3%'")" -ge 1 ]
echo '{{frob}}' >"$T/badprompts/lineage_rederive.md"
"$K" lineage extract --provider replay --model m --prompts "$T/badprompts" \
  "$T/rowsum" "$SRC/examples/tasks/rowsum/good.c" >"$T/out" 2>"$T/err"
rc=$?
check "a bad template: exit 2, the file and the variables named" \
  sh -c "[ $rc = 2 ] && grep -q 'lineage_rederive.md: unknown variable {{frob}}; this template may use: name surface' '$T/err'"
echo "lineage_llm_e2e: $FAILS failed"
[ "$FAILS" = 0 ]
