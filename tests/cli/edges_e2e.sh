#!/bin/sh
# End-to-end tests of rough edges a careful user hits (issue 17): a resume of
# a run another process is running, a run killed with SIGKILL, resume adding
# steps and writing the best kernel, a dollar cap on a model with no price,
# reading commands on a missing, empty or damaged store, and a task check
# size whose output cannot depend on the inputs; issue 33's: two benches of
# one suite at once, a broken or random reference, a killed kevo's scratch,
# a gate server's message.
# usage: edges_e2e.sh KEVO_BINARY SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC="$2"
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-edges-e2e-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/run.db"
export XDG_CONFIG_HOME="$T/config" # no user LLM configuration
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
expect() {
  name=$1 code=$2 pat=$3
  shift 4
  "$@" >"$T/out" 2>&1
  got=$?
  if [ "$got" != "$code" ]; then
    bad "$name: exit $got, expected $code"
    tail -15 "$T/out" | sed 's/^/    /'
  elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$T/out"; then
    bad "$name: output lacks /$pat/"
    tail -15 "$T/out" | sed 's/^/    /'
  else
    ok "$name"
  fi
}
check() { [ "$2" = "$3" ] && ok "$1" || bad "$1: got '$2', want '$3'"; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }

RS="$EX/rowsum"
SM="$EX/softmax"
cd "$T" || exit 1

# --- task check names a size whose output cannot depend on the inputs ---
expect "softmax: its 1x1 size is named degenerate, the task passes" 0 \
  "warning: degenerate check size: rows=1 cols=1 \(check size 1\)" -- "$K" task check "$SM"
grep -q "^task ok" "$T/out" && ok "softmax task ok" || bad "softmax not ok"
mkdir -p "$T/centre"
cat >"$T/centre/task.json" <<'JSON'
{"name": "centre", "entry": "centre",
 "params": [{"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "y", "role": "out", "dtype": "f32", "shape": ["n"]},
            {"name": "n", "role": "size"}],
 "check": [{"n": 7}, {"n": 1}, {"n": 100}], "tolerance": {"atol": 1e-5, "rtol": 1e-5}}
JSON
cat >"$T/centre/reference.c" <<'C'
void centre(const float *x, float *y, int n) {
  float m = 0;
  for (int i = 0; i < n; i++) m += x[i];
  m /= (float)n;
  for (int i = 0; i < n; i++) y[i] = x[i] - m;
}
C
expect "x - mean: n=1 always gives 0, named" 0 "warning: degenerate check size: n=1 \(check size 2\)" \
  -- "$K" task check "$T/centre"
expect "the warning in --json" 0 "" -- "$K" task check --json "$T/centre"
python3 -c "import json; j=json.load(open('$T/out')); assert j['ok'] and not j['findings'] and 'n=1' in j['warnings'][0]" &&
  ok "json: ok, no findings, one warning" || bad "json warnings: $(cat "$T/out")"

# --- task check warns when the tolerance is tighter than float rounding ---
# rowsum with a float accumulator and no tolerance (the default atol = rtol =
# 1e-5): the same sum in another order (gcc -fassociative-math) fails it.
mkdir -p "$T/fsum"
python3 -c "import json; t = json.load(open('$RS/task.json')); t.pop('tolerance'); json.dump(t, open('$T/fsum/task.json', 'w'))"
cat >"$T/fsum/reference.c" <<'C'
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int c = 0; c < cols; c++) s += x[(long)r * cols + c];
    y[r] = s;
  }
}
C
if cc --version 2>/dev/null | grep -qi clang; then
  ok "fsum: skipped, cc is clang (the reordered reference needs gcc's optimize pragma)"
else
  expect "float sum, default tolerance: warned, the task still passes" 0 \
    "warning: the tolerance \(atol 1e-05, rtol 1e-05\) is tighter than float rounding.*loosen" \
    -- "$K" task check "$T/fsum"
  grep -q "^task ok" "$T/out" && ok "fsum task ok" || bad "fsum not ok"
  expect "rowsum's own tolerance: no rounding warning" 0 "" -- "$K" task check "$RS"
  grep -q "tighter than float rounding" "$T/out" && bad "rowsum warned: $(cat "$T/out")" ||
    ok "rowsum: no rounding warning"
fi

# --- reading commands: an existing store, opened read-only ---
for c in "runs" "best" "llm calls" "rules list" "runs show 1"; do
  # shellcheck disable=SC2086
  expect "$c: a mistyped --db is refused" 2 "$T/typo/kevo.db: no such database" -- "$K" $c --db "$T/typo/kevo.db"
done
[ ! -e "$T/typo" ] && ok "no directory made for a mistyped --db" || bad "$T/typo was created"
: >"$T/empty.db"
expect "runs on an empty file" 2 "not a kevo store" -- "$K" runs --db "$T/empty.db"
check "the empty file is left empty" "$(wc -c <"$T/empty.db" | tr -d ' ')" 0
head -c 65536 /dev/urandom >"$T/junk.db"
expect "runs on a file that is not a database" 2 "junk.db" -- "$K" runs --db "$T/junk.db"

# --- a run another process runs; a run killed with SIGKILL ---
expect "a first run" 0 "best kernel of run 1" -- "$K" run --no-timing --steps 2 -o "$T/b1.c" "$RS"
# The live run is stopped (SIGSTOP) once it has committed a step: it holds
# the run, deterministically, while another process tries to resume it. Its
# timing budget is kept with it (untimed here, to keep the test short).
"$K" run --no-timing --budget 0.1 --steps 4 --seed 3 "$RS" >"$T/live.out" 2>&1 &
pid=$!
i=0
while [ "$(q "select count(*) from nodes where run_id = 2")" -lt 1 ] 2>/dev/null && [ $i -lt 1200 ]; do
  sleep 0.1
  i=$((i + 1))
done
kill -STOP $pid
n0=$(q "select count(*) from nodes where run_id = 2")
expect "runs shows the live run running" 0 "^2 +rowsum +tune +running" -- "$K" runs
expect "resume of a live run is refused" 2 "run 2 is still running in another kevo process \(pid $pid\)" \
  -- "$K" resume 2
check "the live run keeps its status" "$(q "select status from runs where id = 2")" running
check "the refused resume wrote no step" "$(q "select count(*) from nodes where run_id = 2")" "$n0"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
expect "runs shows the killed run as killed" 0 "^2 +rowsum +tune +killed" -- "$K" runs
expect "a killed run resumes, writes its best" 0 "best kernel of run 2 .*: $T/b2.c" -- "$K" resume 2 -o "$T/b2.c"
head -1 "$T/b2.c" | grep -q "kevo best of run 2: task rowsum" && ok "the resumed run's best file" ||
  bad "best file: $(head -1 "$T/b2.c" 2>&1)"
check "4 steps, each once" "$(q "select count(*) || ' ' || count(distinct step) from nodes where run_id = 2")" "4 4"
expect "runs shows it done" 0 "^2 +rowsum +tune +done" -- "$K" runs
q "select config_json from runs where id = 2" | grep -q '"time_budget_s":0.1' &&
  ok "the run keeps its timing budget" || bad "no budget in $(q "select config_json from runs where id = 2")"

# --- resume --steps adds steps to a finished run ---
check "run 1 took 2 of 5 values" "$(q "select status || ' ' || count(*) from runs r join nodes n on n.run_id = r.id where r.id = 1")" "done 2"
expect "resume --steps 2 of a finished run" 0 "best kernel of run 1" -- "$K" resume 1 --steps 2 -o "$T/b1b.c"
check "two more steps, each value once" "$(q "select count(*) || ' ' || count(distinct params) from nodes where run_id = 1")" "4 4"
check "the run is done again" "$(q "select status from runs where id = 1")" done
expect "resume of a finished run says how to add steps" 0 "is finished; 'kevo resume 1 --steps N'" -- "$K" resume 1 -o "$T/b1c.c"
expect "resume --steps 0 refused" 2 "--steps" -- "$K" resume 1 --steps 0

# --- a dollar cap with no price caps nothing: refused before anything runs ---
nruns=$(q "select count(*) from runs")
expect "--budget-usd on a model with no price" 2 "--budget-usd 1: model m has no price" -- \
  "$K" run --strategy greedy --base-url http://127.0.0.1:9 --model m --api-key-env "" \
  --budget-usd 1 --steps 2 "$RS"
check "no run created" "$(q "select count(*) from runs")" "$nruns"
expect "llm ask --max-usd on a model with no price" 2 "--max-usd 1: model m has no price" -- \
  "$K" llm ask --base-url http://127.0.0.1:9 --model m --api-key-env "" --max-usd 1 hello

# --- a read-only store is still read ---
if [ "$(id -u)" != 0 ]; then
  cp "$KEVO_DB" "$T/ro.db"
  chmod 0444 "$T/ro.db"
  expect "runs on a read-only store" 0 "^1 +rowsum +tune +done" -- "$K" runs --db "$T/ro.db"
fi

# ---- messages: the user's file, not kevo's copy; a .cu on the cpu surface ----
cp "$RS/good.cu" "$T/mine.cu"
expect "a .cu on the cpu surface: its name and the hint" 1 \
  "verdict: compile_error: mine.cu:[0-9]+:[0-9]+: error: .*pass --surface cuda" -- \
  "$K" eval --no-timing "$RS" "$T/mine.cu"
grep -q "candidate\.c" "$T/out" && bad "the log still names candidate.c" ||
  ok "no candidate.c in what the user reads"

# ---- a key variable that is not set: refused before a run exists ------------
before=$(q "select count(*) from runs")
unset KEVO_EDGES_NO_SUCH_KEY
expect "an unset key variable: exit 2, named" 2 "KEVO_EDGES_NO_SUCH_KEY is not set" -- \
  "$K" run --base-url http://127.0.0.1:9/v1 --model m --api-key-env KEVO_EDGES_NO_SUCH_KEY "$RS"
check "no run created for it" "$(q "select count(*) from runs")" "$before"
expect "--strategy tune with a model: no LLM is used, and it says so" 0 "--strategy tune \(no LLM\)" -- \
  "$K" run --strategy tune --model m --steps 1 --no-timing "$RS"

# ---- eval: a candidate on stdin; --json says why it could not judge ----------
expect "eval - reads the candidate from stdin" 0 "^verdict: ok" -- \
  sh -c "\"$K\" eval --no-timing \"$RS\" - <\"$RS/good.c\""
"$K" eval --json "$T/no-such-task" "$RS/good.c" >"$T/j.out" 2>/dev/null
check "eval --json when kevo cannot judge: exit 2, an error object on stdout" \
  "$? $(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["verdict"] is None and "no-such-task" in o["error"])' "$T/j.out")" \
  "2 True"

# ---- bad options are found before a run exists or a call is made -------------
before=$(q "select count(*) from runs")
expect "run --surface foo: refused first" 2 "--surface foo: not a surface" -- \
  "$K" run --surface foo --base-url http://127.0.0.1:9/v1 --model m --api-key-env "" "$RS"
mkdir -p "$T/badprompts" && echo "{{nope}}" >"$T/badprompts/task.md"
expect "run --prompts with a bad template: refused first" 2 "task.md: unknown variable \{\{nope\}\}" -- \
  "$K" run --prompts "$T/badprompts" --base-url http://127.0.0.1:9/v1 --model m --api-key-env "" "$RS"
check "no run created for them" "$(q "select count(*) from runs")" "$before"

# ---- --name=value, and -- before a file whose name starts with '-' -------------
expect "--steps=1 --timing-ci=off: as --steps 1 --timing-ci off" 0 "best kernel of run" -- \
  "$K" run --steps=1 --timing-ci=off --no-timing "$RS"
cp "$RS/good.c" "$T/-dash.c"
expect "eval -- TASK -dash.c: a file, not an option" 0 "^verdict: ok" -- \
  sh -c "cd \"$T\" && \"$K\" eval --no-timing -- \"$RS\" -dash.c"
expect "without --, -dash.c is an unknown option" 2 "unknown or incomplete option '-dash.c'" -- \
  sh -c "cd \"$T\" && \"$K\" eval --no-timing \"$RS\" -dash.c"

# ---- eval shows each phase as it ends: the checks before timing is over -------
"$K" eval --budget 3 "$RS" "$RS/good.c" >"$T/phases.out" 2>&1 &
EP=$!
i=0
while ! grep -q "^  checks .* passed" "$T/phases.out" 2>/dev/null && [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -0 "$EP" 2>/dev/null && grep -q "^  checks .* passed" "$T/phases.out" &&
  ! grep -q "^verdict" "$T/phases.out" && ok "eval: the checks shown while it still times" ||
  bad "eval: the checks were not shown before the end: $(cat "$T/phases.out")"
wait "$EP"
check "eval: then the verdict" "$(grep -c "^verdict: ok" "$T/phases.out")" 1

# ---- runs: untimed runs say so; --json ----------------------------------------
expect "runs: an untimed best says untimed, not 0.00x" 0 "^1 +rowsum +tune +[a-z]+ +[0-9]+ +untimed" -- "$K" runs
"$K" runs --json >"$T/runs.json" 2>&1
check "runs --json: every run, the untimed one with no speedup" \
  "$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); r=[x for x in a if x["id"] == 1][0]; print(len(a), r["accepted"], r["best_speedup"])' "$T/runs.json")" \
  "$(q "select count(*) from runs") True None"

# ---- issue 33 item 6: a first hour's rough edges ---------------------------------
# Two benches of one suite at once: the second refuses (after --wait), naming
# the first; no task runs twice.
B33="$T/b33.db"
mkdir -p "$T/suite33"
cp -r "$EX/rowsum" "$EX/transpose" "$T/suite33/"
BENCH="--strategy tune --steps 3 --budget 0.1 --seed 1"
KEVO_DB="$B33" "$K" bench $BENCH "$T/suite33" >"$T/b1.out" 2>"$T/b1.err" &
B1=$!
i=0
while [ "$(sqlite3 "$B33" "select count(*) from runs" 2>/dev/null)" != 1 ] && [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
KEVO_DB="$B33" expect "bench: a second at once refuses, naming the first" 2 \
  "being run by another kevo process \(pid $B1\), still after the wait" -- \
  "$K" bench $BENCH --wait 1 "$T/suite33"
wait "$B1"
check "bench: the first ends well" "$?" 0
check "bench: each task run once" "$(sqlite3 "$B33" "select count(*) || ':' || count(distinct task_id) from runs")" "2:2"

# A reference that does not compile is named, not kevo's copy (candidate.c).
cp -r "$RS" "$T/badref"
echo 'this is not C;' >>"$T/badref/reference.c"
expect "eval: a broken reference's log names reference.c" 2 "^reference.c:[0-9]+:[0-9]+: error" -- \
  "$K" eval --no-timing "$T/badref" "$RS/good.c"
grep -q "candidate.c" "$T/out" && bad "eval: the log still names candidate.c" || ok "eval: no candidate.c"
expect "task check: the log names reference.c" 1 "^reference.c:[0-9]+:[0-9]+: error" -- \
  "$K" task check "$T/badref"
grep -q "candidate.c" "$T/out" && bad "task check: the log still names candidate.c" || ok "task check: no candidate.c"

# A reference that answers differently on the same inputs is told so, not to
# loosen the tolerance.
cp -r "$RS" "$T/nondet"
cat >"$T/nondet/reference.c" <<'EOF'
#include <stddef.h>
#include <stdlib.h>
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0.0;
    for (int c = 0; c < cols; c++)
      s += (double)x[(size_t)r * (size_t)cols + (size_t)c];
    y[r] = (float)s + (float)(rand() % 100) * 0.01f;
  }
}
EOF
expect "task check: a random reference is not deterministic" 1 "it is not deterministic" -- \
  "$K" task check "$T/nondet"
grep -q "loosen" "$T/out" && bad "task check: still told to loosen the tolerance" ||
  ok "task check: not told to loosen the tolerance"
grep -q "the reference itself gives different answers on the same inputs" "$T/out" &&
  ok "task check: told the reference itself differs" || bad "task check: $(cat "$T/out")"

# A killed kevo's workers' scratch directories are swept by the next kevo
# (their owner is gone); a live owner's stay.
"$K" eval "$RS" "$RS/good.c" >/dev/null 2>&1 &
EP=$!
i=0
while ! ls -d "$KEVO_CACHE_DIR"/scratch/worker-*-"$EP"-* >/dev/null 2>&1 && [ $i -lt 600 ]; do
  sleep 0.05
  i=$((i + 1))
done
kill -9 "$EP"
wait "$EP" 2>/dev/null
left=$(ls -d "$KEVO_CACHE_DIR"/scratch/worker-*-"$EP"-* 2>/dev/null | head -1)
if [ -n "$left" ]; then
  ok "a killed eval leaves its worker's scratch"
  live=$(echo "$left" | sed "s/-$EP-......\$/-$$-live00/")
  mkdir -p "$live"
  "$K" runs >/dev/null 2>&1
  [ ! -e "$left" ] && ok "the next kevo sweeps it" || bad "stale scratch not swept: $left"
  [ -d "$live" ] && ok "a live owner's scratch stays" || bad "a live owner's scratch was swept"
  rm -rf "$live"
else
  bad "no worker scratch of pid $EP: $(ls "$KEVO_CACHE_DIR"/scratch)"
fi

# A kevo below kevo (a gate server's words) is not "kevo: kevo:".
"$K" run --executor local --surface cuda --steps 1 "$RS" >"$T/out" 2>&1
if grep -q "cannot judge cuda kernels" "$T/out"; then
  grep -qE "(^|: |; )kevo: gate serve" "$T/out" && bad "double prefix: $(grep -m1 'gate serve' "$T/out")" ||
    ok "a gate server's message without a second 'kevo:'"
else
  ok "a gate server's message (this host judges cuda: nothing to see)"
fi

# Why a run ended is recorded and shown: a full disk is not "killed"; a tune
# space smaller than the steps asked says so.
mkdir -p "$T/fd/full"
if unshare -rm sh "$(dirname "$0")/full_disk.sh" "$K" "$T/fd" "$RS" 2>/dev/null; then
  cat "$T/fd/full.out" | tail -3
  grep -q "disk is full" "$T/fd/full.out" && ok "full disk: the run says so" || bad "full disk: $(cat "$T/fd/full.out")"
  grep -qE "^1 +rowsum +tune +stopped" "$T/fd/full.runs" && ok "full disk: runs lists it stopped, not killed" ||
    bad "full disk: runs: $(cat "$T/fd/full.runs")"
  grep -qE "^  ended +kevo could not go on: .*the disk is full" "$T/fd/full.show" &&
    ok "full disk: runs show says why it stopped" || bad "full disk: runs show: $(cat "$T/fd/full.show")"
else
  echo "SKIP full disk: no user and mount namespace for a small tmpfs here"
fi
KEVO_DB="$T/space.db" "$K" run --strategy tune --steps 16 --budget 0.05 "$RS" >/dev/null 2>&1
KEVO_DB="$T/space.db" expect "runs show: a tune space smaller than the steps asked says so" 0 \
  "^  steps +5, 5 accepted \(every point of the tune space judged: 5 points \(16 steps asked\)\)" -- \
  "$K" runs show

echo "edges e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
