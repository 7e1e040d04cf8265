#!/bin/sh
# kevo adapt --jobs N end to end against the loopback stand-in, with no
# torch needed: the practice suite is five copies of examples/tasks/rowsum
# (C tasks with a starter), every reply a correct kernel that the stand-in
# sends after 0.4 s. Checks:
#   1. with --jobs 3 the tasks' runs overlap (the store's node ids of two
#      runs interleave) and at most 3 run at once; one live line per change;
#      every task done with exactly its steps, one run per task;
#   2. killed with kill -9 while several tasks run, the same command
#      continues: nothing recorded before the kill is lost, no task gets a
#      second run, no step is recorded twice, every task ends done;
#   3. --jobs with a bad value is refused.
# usage: adapt_jobs_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-adapt-jobs-XXXXXX")
SPID=
APID=
cleanup() {
  [ -n "$APID" ] && kill -9 "$APID" 2>/dev/null
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export XDG_CONFIG_HOME="$T/config"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 -cmd ".timeout 5000" "$KEVO_DB" "$1" 2>/dev/null; }
# qn SQL: a count, 0 when the store cannot be read yet
qn() { r=$(q "$1"); echo "${r:-0}"; }
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  "$STANDIN" --port-file "$T/port" --replies "$SRC/tests/adapt/run_replies.txt" \
    --max-requests 400 --lifetime 280 --script "$SLOW" &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
SLOW=$(python3 -c 'print(",".join(["slow=0.4"] * 60))')
for t in a b c d e; do
  mkdir -p "$T/practice/$t"
  cp "$SRC/examples/tasks/rowsum/task.json" "$SRC/examples/tasks/rowsum/reference.c" \
    "$SRC/examples/tasks/rowsum/starter.c" "$T/practice/$t/"
done
cd "$T" || exit 1

# ---- 1. three at a time ---------------------------------------------------------
export KEVO_DB="$T/one.db"
start_standin
"$K" adapt --jobs 3 --strategy greedy --steps 3 --no-timing --concurrency 1 --no-rules-llm \
  --base-url "$URL" --model m --api-key-env "" practice >"$T/one.out" 2>"$T/one.err"
check "adapt --jobs 3 exits 0" $? 0
check "every task done" "$(q "select group_concat(status) from bench_tasks")" "done,done,done,done,done"
# Why a task did not end done (a CI run saw one 'failed' and kept no trace).
q "select '  ' || name || ' ' || status || ': ' || coalesce(detail, '') from bench_tasks
   where status != 'done'"
[ "$(q "select count(*) from bench_tasks where status != 'done'")" = 0 ] || tail -n 20 "$T/one.err"
check "one run per task" "$(q "select count(*) || ' ' || count(distinct run_id) from bench_tasks")" "5 5"
check "runs: one per task, no other" "$(q "select count(*) from runs")" 5
check "each run: its 3 steps, each once" \
  "$(q "select group_concat(c) from (select count(*) || '/' || count(distinct step) as c from nodes group by run_id)")" \
  "3/3,3/3,3/3,3/3,3/3"
# Overlap: some node of run A lies between two nodes of run B (ids are the
# store's insertion order).
ov=$(q "select count(*) from nodes x join nodes y on y.run_id <> x.run_id
        where y.id > (select min(id) from nodes where run_id = x.run_id)
          and y.id < (select max(id) from nodes where run_id = x.run_id) and x.id = (select min(id) from nodes where run_id = x.run_id)")
[ "${ov:-0}" -gt 0 ] && ok "the runs overlap ($ov nodes of one run inside another's)" ||
  bad "the runs did not overlap: $(q "select group_concat(run_id) from (select run_id from nodes order by id)")"
grep -q "at a time" "$T/one.err" && grep -q "3 at a time" "$T/one.err" &&
  ok "says it runs 3 at a time" || bad "no '3 at a time' line: $(head -3 "$T/one.err")"
maxrun=$(sed -n 's/^adapt  [0-9]*\/5 done  \([0-9]*\) running:.*/\1/p' "$T/one.err" | sort -n | tail -1)
check "the live line: at most 3 running at once, and 3 at some point" "$maxrun" 3
check "a line per task as it ends" "$(grep -c '^\[[0-9]/5\] [a-e]: done' "$T/one.err")" 5
grep -q "the practice runs spent" "$T/one.err" && ok "the runs' spend is summed" ||
  bad "no spend line"

# ---- 2. kill -9 while several run, then the same command -------------------------
export KEVO_DB="$T/two.db"
start_standin
"$K" adapt --jobs 3 --strategy greedy --steps 3 --no-timing --concurrency 1 --no-rules-llm \
  --base-url "$URL" --model m --api-key-env "" practice >"$T/two.out" 2>"$T/two.err" &
APID=$!
i=0
while [ "$(qn "select count(*) from bench_tasks where status = 'running'")" -lt 2 ] ||
  [ "$(qn "select count(*) from nodes")" -lt 4 ]; do
  [ $i -gt 600 ] && break
  sleep 0.05
  i=$((i + 1))
done
kill -9 $APID 2>/dev/null
wait $APID 2>/dev/null
APID=
running=$(q "select count(*) from bench_tasks where status = 'running'")
before=$(q "select count(*) from nodes")
q "select id || ':' || run_id || ':' || step from nodes order by id" >"$T/before.txt"
[ "${running:-0}" -ge 2 ] && [ "${before:-0}" -ge 4 ] && [ "$before" -lt 15 ] &&
  ok "killed with $running tasks running and $before of 15 nodes recorded" ||
  bad "kill -9 mid-way: $running running, $before nodes"
"$K" adapt --jobs 3 --strategy greedy --steps 3 --no-timing --concurrency 1 --no-rules-llm \
  --base-url "$URL" --model m --api-key-env "" practice >"$T/two2.out" 2>"$T/two2.err"
check "the same command after kill -9 exits 0" $? 0
check "after the resume: every task done" "$(q "select group_concat(status) from bench_tasks")" \
  "done,done,done,done,done"
check "after the resume: one bench, one run per task, no other run" \
  "$(q "select count(distinct bench_id) || ' ' || count(distinct run_id) from bench_tasks") $(q "select count(*) from runs")" \
  "1 5 5"
check "after the resume: each run has its 3 steps, none twice" \
  "$(q "select group_concat(c) from (select count(*) || '/' || count(distinct step) as c from nodes group by run_id)")" \
  "3/3,3/3,3/3,3/3,3/3"
q "select id || ':' || run_id || ':' || step from nodes order by id" >"$T/after.txt"
lost=$(grep -vxF -f "$T/after.txt" "$T/before.txt" | wc -l)
check "nothing recorded before the kill is lost" "$lost" 0
grep -q "continuing\|running:" "$T/two2.err" && ok "the resumed adapt shows its live line" ||
  bad "resumed: $(head -3 "$T/two2.err")"

# ---- 3. bad input ------------------------------------------------------------------
"$K" adapt --jobs 0 --model m --base-url "$URL" practice >/dev/null 2>"$T/bad.err"
check "--jobs 0 is refused" "$? $(grep -c -- '--jobs' "$T/bad.err")" "2 1"

echo "adapt_jobs_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
