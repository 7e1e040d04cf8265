#!/bin/sh
# AdaExplore's adaptation stage end to end, against the loopback stand-in
# serving scripted replies (tests/adapt/*_replies.txt):
#   1. kevo synthesize asks for 20 modules: 7 good ones are accepted as tasks;
#      3 duplicates (word for word, renamed, the same graph written another
#      way), a syntax error, no Model, no code, no get_inputs, a module that
#      hangs, one that imports a missing package, one of 100 GB, two
#      ill-posed ones and a non-tensor input are refused, each with its
#      reason, and nothing is left half-written; run again it asks nothing;
#      killed with kill -9 and run again it continues without asking twice;
#   2. kevo adapt runs the agent over the accepted tasks, learns rules, has
#      the judge merge two phrasings of one rule (and keep two others apart),
#      and reports the rules with the failures behind them;
#   3. the memory is exported (with provenance saying it came from a loopback
#      model), imported into a fresh store twice (counts not doubled), and a
#      later run's prompts carry the imported rules; an accepted kernel that
#      does what a rule forbids flags it, and later prompts leave it out;
#      kevo rules audit lists the flagged rule and the noisy one.
# Needs a Python with torch (the modules run): exits 77 (skipped) without.
# usage: adapt_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch, and kevo synthesize runs every module it is given;"
  echo "         install CPU torch (pip install torch) or set KEVO_PYTHON (.ci/run installs it)"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-adapt-e2e-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap "kill \$SPID 2>/dev/null; echo kept $T" EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/adapt.db"
export XDG_CONFIG_HOME="$T/config"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
has() { if grep -qF -- "$3" "$2"; then ok "$1"; else bad "$1: '$3' not in $2"; fi; }
q() { sqlite3 "${DB:-$KEVO_DB}" "$1" 2>/dev/null; }
# start_standin REPLIES [extra args]: a fresh stand-in; sets SPID and URL.
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  r=$1
  shift
  "$STANDIN" --port-file "$T/port" --replies "$SRC/tests/adapt/$r" --max-requests 400 \
    --lifetime 600 "$@" &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
cd "$T" || exit 1

# ---- 1. synthesize ------------------------------------------------------------
start_standin synth_replies.txt
SYN="--n 20 --concurrency 1 --jobs 2 --deadline 15 -o practice"
"$K" synthesize $SYN --base-url "$URL" --model m --api-key-env "" >synth.out 2>synth.err
rc=$?
cat synth.err synth.out
check "synthesize exits 0" $rc 0
check "7 of 20 accepted" \
  "$(q "select count(*) from synth_attempts where status = 'accepted'")" 7
check "13 refused, each with its cause" \
  "$(q "select group_concat(cause, ' ') from (select cause from synth_attempts where
        status = 'refused' order by cause)")" \
  "duplicate duplicate duplicate ill_posed ill_posed kevo_byte_caps missing_module no_code no_get_inputs no_model not_tensor syntax timeout"
check "every refusal has a reason" \
  "$(q "select count(*) from synth_attempts where status = 'refused' and length(detail) > 20")" 13
has "a syntax error is refused with its line" synth.err "refused (syntax"
has "no Model is refused" synth.err "no class Model at the top level"
has "a hang is killed at the deadline" synth.err "did not finish in 15 s and was killed"
has "a missing package is named" synth.err "it imports kevo_no_such_package_xyz"
has "100 GB is refused before anything is allocated" synth.err "over the per-buffer limit"
has "an all-zero output is ill-posed" synth.err "an output of all zeros passes every check"
has "training-mode Dropout is not deterministic" synth.err "it is not deterministic"
has "a non-tensor input is refused" synth.err "is list ([3]), neither a tensor nor a Python int or float"
check "a word-for-word copy and a renamed copy are the same module" \
  "$(q "select count(*) from synth_attempts where cause = 'duplicate' and
        detail like 'the same module as %'")" 2
check "the same graph written another way is a duplicate at the same shapes" \
  "$(q "select count(*) from synth_attempts where cause = 'duplicate' and
        detail like 'the same operator graph (relu mul) at the same shapes as %relu_scale'")" 1
has "the summary groups the refusals" synth.out "refused: "
# Nothing half-written: seven complete task directories and nothing else.
check "only the accepted tasks are in the output directory" "$(ls -A practice | wc -l | tr -d ' ')" 7
complete=0
for d in practice/*/; do
  [ -f "$d/task.json" ] && [ -f "$d/reference.py" ] && [ -f "$d/README.md" ] &&
    [ -f "$d/synth.json" ] && [ "$(ls -A "$d" | wc -l)" = 4 ] && complete=$((complete + 1))
done
check "each task is whole (task.json, reference.py, README.md, synth.json)" $complete 7
check "no module was left in a scratch directory" \
  "$(find . -name '.kevo-synth-*' -o -name '.kevo-import-*' | wc -l | tr -d ' ')" 0
one=$(ls -d practice/*relu_scale | head -1)
"$K" task check "$one" >check.out 2>&1
check "an accepted task passes kevo task check" "$? $(grep -c 'task ok' check.out)" "0 1"
grep -q '"model": "openai/m (loopback)"' "$one/synth.json" &&
  ok "synth.json says which model wrote it" || bad "synth.json lacks the model"
# Run again: the synthesis is complete, nothing is asked or written.
calls=$(q "select count(*) from llm_calls")
"$K" synthesize $SYN --base-url "$URL" --model m --api-key-env "" >again.out 2>again.err
check "a second run exits 0" $? 0
has "a second run says it is complete" again.err "is complete; nothing was asked"
check "a second run asks the model nothing" "$(q "select count(*) from llm_calls")" "$calls"
check "a second run writes nothing" "$(ls -A practice | wc -l | tr -d ' ')" 7

# Killed with kill -9 while a reply is on its way, then run again.
start_standin synth_replies.txt --script "ok,slow=8"
"$K" synthesize --n 3 --concurrency 1 --jobs 1 --deadline 15 -o practice2 --base-url "$URL" \
  --model m --api-key-env "" >kill.out 2>&1 &
pid=$!
i=0
while [ "$(q "select count(*) from synth_attempts a join syntheses s on s.id = a.synthesis_id
              where s.out_dir like '%/practice2' and a.status = 'accepted'")" != 1 ] &&
  [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
first=$(q "select a.llm_call_id from synth_attempts a join syntheses s on s.id = a.synthesis_id
           where s.out_dir like '%/practice2' and a.ord = 0")
check "killed after the first attempt was judged" \
  "$(q "select group_concat(a.status, ' ') from synth_attempts a join syntheses s on
        s.id = a.synthesis_id where s.out_dir like '%/practice2' order by a.ord")" \
  "accepted pending pending"
start_standin synth_replies.txt
"$K" synthesize --n 3 --concurrency 1 --jobs 1 --deadline 15 -o practice2 --base-url "$URL" \
  --model m --api-key-env "" >resume.out 2>&1
check "the killed synthesis continues and ends" $? 0
has "it says it continued" resume.out "continued synthesis"
check "the answered attempt was not asked again" \
  "$(q "select a.llm_call_id from synth_attempts a join syntheses s on s.id = a.synthesis_id
        where s.out_dir like '%/practice2' and a.ord = 0")" "$first"
check "after the kill: 2 accepted, the re-served module a duplicate" \
  "$(q "select group_concat(coalesce(a.cause, a.status), ' ') from synth_attempts a join
        syntheses s on s.id = a.synthesis_id where s.out_dir like '%/practice2' order by a.ord")" \
  "accepted duplicate accepted"
check "the dead process's scratch was cleaned and nothing is half-written" \
  "$(ls -A practice2 | tr '\n' ' ')" "$(ls practice2 | tr '\n' ' ')"

# ---- 2. adapt -----------------------------------------------------------------
start_standin adapt_replies.txt
"$K" adapt --steps 2 --no-timing --concurrency 1 --base-url "$URL" --model m --api-key-env "" \
  practice >adapt.out 2>adapt.err
rc=$?
cat adapt.err adapt.out
check "adapt exits 0" $rc 0
has "a progress line per task" adapt.err "[7/7]"
check "every practice task ran its steps" \
  "$(q "select count(*) || ' ' || sum(status = 'done') from bench_tasks")" "7 7"
INC="You cannot include fast_math_nonexistent.h: that header is not available."
check "the compiler's rule counts every failure behind it" \
  "$(q "select count from rules where text = '$INC'")" 14
check "the judge was asked about pairs" \
  "$(q "select count(*) from llm_calls where role = 'rule_judge'")" 2
check "the judge merged two phrasings of one rule" \
  "$(q "select count(*) from rule_merges m join rules r on r.id = m.into_id where r.text = '$INC'
        and m.how = 'judge' and m.text like '%because kevo''s compiler does not ship it.'")" 1
check "the merged rule keeps both provenances" \
  "$(q "select count(*) from rule_evidence e join rules r on r.id = e.rule_id where
        r.text = '$INC'")" 14
check "the judge kept two different rules apart" \
  "$(q "select count(*) from rule_judgements where same = 0")" 1
check "three rules remain" "$(q "select count(*) from rules")" 3
has "the report counts the rules" adapt.out "rules learnt or seen again from these failures: 3"
has "the report names the failures behind a rule" adapt.out "step 0 (compile_error, evaluation"
has "the report tells the merges" adapt.out "1 by the judge (2 judge calls: 1 same, 1 different"
calls=$(q "select count(*) from llm_calls")
"$K" adapt --steps 2 --no-timing --concurrency 1 --base-url "$URL" --model m --api-key-env "" \
  practice >adapt2.out 2>adapt2.err
check "adapt again: exits 0" $? 0
has "adapt again: the report of the finished adaptation" adapt2.err "is complete; its report follows"
check "adapt again: nothing new is asked" "$(q "select count(*) from llm_calls")" "$calls"

# ---- 3. share the memory --------------------------------------------------------
"$K" rules export rules.json >export.out 2>&1
check "export exits 0" $? 0
check "every rule exported with its provenance" \
  "$("$PY" -c "import json; d = json.load(open('rules.json')); print(len(d['rules']),
     sum(len(r['provenance']) for r in d['rules']), d['kevo_rules'])")" "3 42 2"
grep -q '"model": "openai/m (loopback)"' rules.json &&
  ok "the export says its rules came from a loopback model" || bad "no model in the export"
grep -q '"role": "produced"' rules.json && grep -q '"role": "confirmed"' rules.json &&
  ok "provenance says which evaluation produced a rule and which confirmed it" ||
  bad "no produced/confirmed roles"
"$K" rules import --db fresh.db rules.json >import1.out 2>&1
check "import exits 0" $? 0
"$K" rules import --db fresh.db rules.json >import2.out 2>&1
has "importing again adds nothing" import2.out "counts +0 (everything was here already)"
check "importing twice does not double the counts" \
  "$(DB=fresh.db q "select group_concat(text || '=' || count, ' | ') from (select * from rules
                   order by text)")" \
  "$(q "select group_concat(text || '=' || count, ' | ') from (select * from rules order by text)")"
check "the scope travels" "$(DB=fresh.db q "select count(*) from rules where surface = 'cpu'")" 3
check "the evidence travels" "$(DB=fresh.db q "select count(*) from rule_evidence")" 42

# A later run in the fresh store: its prompts carry the imported rules; an
# accepted kernel that uses __builtin_expect flags the rule forbidding it.
start_standin run_replies.txt
"$K" run --db fresh.db --strategy greedy --steps 3 --no-timing --concurrency 1 \
  --base-url "$URL" --model m --api-key-env "" "$SRC/examples/tasks/rowsum" >run.out 2>&1
check "the later run exits 0" $? 0
first=$(DB=fresh.db q "select min(id) from llm_calls where role = 'coder'")
check "its first prompt carries the imported rules above the threshold" \
  "$(DB=fresh.db q "select (request_json like '%Rules learnt%fast_math_nonexistent.h%') ||
                   (request_json like '%__builtin_expect in a kernel%') from llm_calls
                   where id = $first")" 11
check "an accepted kernel flagged the rule it contradicts" \
  "$(DB=fresh.db q "select flag like 'contradicted: accepted evaluation % uses __builtin_expect%'
                   from rules where text like '%__builtin_expect%'")" 1
check "later prompts leave the flagged rule out and keep the others" \
  "$(DB=fresh.db q "select count(*) || ' ' || sum(request_json like '%__builtin_expect in a kernel%')
                   || ' ' || sum(request_json like '%fast_math_nonexistent.h%') from llm_calls
                   where role = 'coder' and id > $first")" "2 0 2"
"$K" rules audit --db fresh.db >audit.out 2>&1
check "audit exits 0" $? 0
has "audit lists the flagged rule with its reason" audit.out "contradicted: accepted evaluation"
has "audit lists the noisy rule with its reason" audit.out "about the environment, not the code"
"$K" rules list --db fresh.db >list.out 2>&1
has "rules list marks the flagged rule" list.out "[flagged] You cannot use __builtin_expect"
"$K" rules audit --db fresh.db --apply >apply.out 2>&1
check "audit --apply flags the noisy rule" \
  "$(DB=fresh.db q "select flag like 'noisy: %' from rules where text like '%/tmp%'")" 1

echo "adapt e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
