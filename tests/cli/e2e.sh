#!/bin/sh
# End-to-end tests of the kevo command line, run as a user would run it.
# usage: e2e.sh KEVO_BINARY SOURCE_DIR
set -u
K="$1"
SRC="$2"
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-e2e-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/e2e.db"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# expect NAME CODE PATTERN -- command...: exit code and a pattern in stdout+stderr.
expect() {
  name=$1 code=$2 pat=$3
  shift 4
  "$@" >"$T/out" 2>&1
  got=$?
  if [ "$got" != "$code" ]; then
    bad "$name: exit $got, expected $code"
    sed 's/^/    /' "$T/out" | tail -15
  elif [ -n "$pat" ] && ! grep -qE -- "$pat" "$T/out"; then
    bad "$name: output lacks /$pat/"
    sed 's/^/    /' "$T/out" | tail -15
  else
    ok "$name"
  fi
}
# jfield FILE EXPR: evaluates a Python expression over the JSON in FILE as j.
jcheck() {
  name=$1 expr=$2
  if python3 -c "import json,sys; j=json.load(open('$T/out')); sys.exit(0 if ($expr) else 1)"; then
    ok "$name"
  else
    bad "$name: JSON fails: $expr"
    head -c 2000 "$T/out"
  fi
}

RS="$EX/rowsum"

# --- bad input: one line naming the problem and the fix, exit 2 ---
expect "no arguments" 2 "commands" -- "$K"
expect "unknown command" 2 "'frob' is not a command" -- "$K" frob
expect "help" 0 "eval" -- "$K" help
expect "a command's --help" 0 "^usage: kevo eval " -- "$K" eval --help
expect "a command's -h after other options" 0 "^usage: kevo run " -- "$K" run --steps 3 -h
expect "help CMD" 0 "^usage: kevo import " -- "$K" help import
expect "help of no command" 2 "'frob' is not a command" -- "$K" help frob
# kevo help CMD describes every option its usage line names, one line each
# (issue 33 item 7); --api-key-env, which a local model server needs, too.
cmds=$("$K" help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p')
[ "$(echo "$cmds" | wc -w)" -ge 20 ] && ok "help lists $(echo "$cmds" | wc -w) commands" ||
  bad "help lists only: $cmds"
for cmd in $cmds; do
  "$K" help "$cmd" >"$T/help" 2>&1
  missing=""
  for f in $(sed -n 's/^usage: //p' "$T/help" | grep -oE -- '(^|[[ |])(--[a-z][a-z0-9-]*|-o)' | sed 's/^[[ |]//' | sort -u); do
    grep -qE -- "^  $f( |$)" "$T/help" || missing="$missing $f"
  done
  [ -z "$missing" ] && ok "help $cmd: every option described" || bad "help $cmd: no description of$missing"
done
for cmd in run llm; do
  "$K" help "$cmd" | grep -qE -- "^  --api-key-env NAME +the environment variable holding the key" &&
    ok "help $cmd: --api-key-env" || bad "help $cmd: no --api-key-env"
done
expect "eval without arguments" 2 "needs a task directory" -- "$K" eval
expect "eval unknown flag" 2 "unknown or incomplete option '--frobnicate'" -- "$K" eval --frobnicate "$RS" "$RS/good.c"
expect "eval flag without value" 2 "incomplete option '--db'" -- "$K" eval "$RS" "$RS/good.c" --db
expect "eval bad number" 2 "--budget: 'soon' is not a positive number" -- "$K" eval --budget soon "$RS" "$RS/good.c"
expect "eval missing task dir" 2 "task.json" -- "$K" eval "$T/nope" "$RS/good.c"
expect "eval missing candidate" 2 "missing.c: cannot read" -- "$K" eval "$RS" "$T/missing.c"
if [ ! -e /dev/nvidiactl ]; then
  # No GPU here: the cuda surface cannot judge, says why, exits 2.
  expect "eval cuda surface without a GPU" 2 "--surface cuda: " -- "$K" eval --surface cuda "$RS" "$RS/good.cu"
  expect "task check cuda surface without a GPU" 2 "--surface cuda: " -- "$K" task check --surface cuda "$RS"
  # To only compile (KEVO_CUDA_ARCH): a compile error is judged, with the
  # compiler's log; a kernel that compiles is said to.
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    printf 'extern "C" void rowsum(const float *x, float *y, int rows, int cols, cudaStream_t stream) { oops }\n' >"$T/oops.cu"
    expect "no GPU, KEVO_CUDA_ARCH: a compile error is judged" 1 "verdict: compile_error: oops.cu\(1\): error: identifier \"oops\"" -- env KEVO_CUDA_ARCH=sm_90 PATH="$PATH:/usr/local/cuda/bin" "$K" eval --surface cuda "$RS" "$T/oops.cu"
    expect "no GPU, KEVO_CUDA_ARCH: a kernel that compiles says so" 2 "good.cu compiles \(the compile step needs no GPU\)" -- env KEVO_CUDA_ARCH=sm_90 PATH="$PATH:/usr/local/cuda/bin" "$K" eval --surface cuda "$RS" "$RS/good.cu"
  else
    echo "SKIP no GPU, KEVO_CUDA_ARCH: no nvcc here"
  fi
fi
expect "eval unknown surface" 2 "--surface frob: not a surface" -- "$K" eval --surface frob "$RS" "$RS/good.c"
mkdir -p "$T/badtask"
cp "$RS/reference.c" "$T/badtask/"
sed 's/"dtype": "f32", "shape": \["rows"\]/"dtype": "float", "shape": ["rows"]/' "$RS/task.json" >"$T/badtask/task.json"
expect "malformed task names field and fix" 2 "params\[1\]\.dtype: 'float' is not a dtype; use one of" -- "$K" eval "$T/badtask" "$RS/good.c"
printf '{"name": "x", ' >"$T/badtask/task.json"
expect "truncated task.json" 2 "task.json" -- "$K" task check "$T/badtask"
expect "task check unknown flag" 2 "unknown or incomplete option" -- "$K" task check --frob "$RS"
expect "no compiler on PATH" 2 "cc" -- env PATH=/nonexistent KEVO_CACHE_DIR="$T/nocc" "$K" eval --no-timing "$RS" "$RS/good.c"

# --- task check: every example is well-posed; an ill-posed one is caught ---
for d in "$EX"/*/; do
  [ -f "$d/task.json" ] || continue
  expect "task check $(basename "$d")" 0 "task ok" -- "$K" task check "$d"
done
# --deadline: a reference slower than the job deadline is refused, named.
mkdir -p "$T/slowref"
sed 's/"name": "rowsum"/"name": "slowref"/' "$RS/task.json" >"$T/slowref/task.json"
{ echo '#include <time.h>'; sed 's/^void rowsum(\(.*\)) {$/void rowsum(\1) {\n  struct timespec ts = {0, 300000000}; nanosleep(\&ts, 0);/' "$RS/reference.c"; } >"$T/slowref/reference.c"
grep -q nanosleep "$T/slowref/reference.c" || echo "FAIL: the slow reference was not made"
expect "task check --deadline: slow reference refused" 1 "no answer within 0.2 s" -- "$K" task check --deadline 0.2 "$T/slowref"
expect "task check --deadline: enough time" 0 "task ok" -- "$K" task check --deadline 5 "$T/slowref"
expect "task check --deadline: not a number" 2 "not a positive number" -- "$K" task check --deadline soon "$RS"
mkdir -p "$T/tiny"
cat >"$T/tiny/task.json" <<'JSON'
{"name": "tiny", "entry": "tiny",
 "params": [{"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "y", "role": "out", "dtype": "f32", "shape": ["n"]},
            {"name": "n", "role": "size"}],
 "check": [{"n": 5}, {"n": 100}], "tolerance": {"atol": 1e-5, "rtol": 1e-5}}
JSON
cat >"$T/tiny/reference.c" <<'C'
void tiny(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] * 1e-9f; }
C
expect "ill-posed task: zeros pass" 1 "ill-posed: an output of all zeros" -- "$K" task check "$T/tiny"
cat >"$T/tiny/reference.c" <<'C'
void tiny(const float *x, float *y, int n) { (void)x; for (int i = 0; i < n; i++) y[i] = 3.0f; }
C
expect "ill-posed task: output ignores inputs" 1 "does not change when the inputs change" -- "$K" task check "$T/tiny"
cat >"$T/tiny/reference.c" <<'C'
void tiny(const float *x, float *y, int n) { for (int i = 0; i < n; i++) y[i] = x[i] * 1.000001f; }
C
expect "ill-posed task: a copy of the input passes" 1 "copy of input 'x'" -- "$K" task check "$T/tiny"
# One-element outputs (a total, a loss): well-posed when the value moves
# with the inputs beyond the tolerance, ill-posed (naming why) when not.
mkdir -p "$T/total"
cat >"$T/total/task.json" <<'JSON'
{"name": "total", "entry": "total",
 "params": [{"name": "x", "role": "in", "dtype": "f32", "shape": ["n"]},
            {"name": "y", "role": "out", "dtype": "f32", "shape": [1]},
            {"name": "n", "role": "size"}],
 "check": [{"n": 5}, {"n": 1000}], "tolerance": {"atol": 1e-4, "rtol": 1e-4}}
JSON
cat >"$T/total/reference.c" <<'C'
void total(const float *x, float *y, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i]; y[0] = (float)s; }
C
expect "a one-element output (a total) is well-posed" 0 "task ok" -- "$K" task check "$T/total"
grep -q "^    void total(const float \*x, float \*y, int n);" "$T/out" &&
  ok "task check prints the entry a candidate defines" || bad "task check: no prototype in its output"
cat >"$T/total/reference.c" <<'C'
void total(const float *x, float *y, int n) { double s = 0; for (int i = 0; i < n; i++) s += x[i]; y[0] = (float)(1.0 + 1e-7 * s); }
C
expect "a one-element output that barely moves is ill-posed, saying why" 1 "constant output that ignores the inputs .* vary less than the tolerance" -- "$K" task check "$T/total"

# --- eval: verdicts, exit codes, JSON, the store ---
# One judging at the example's own bench size (a 256 MiB matrix); the rest
# use the small copies.
expect "eval good (human), the example as shipped" 0 "verdict: ok: .* at rows=8192 cols=8192" -- "$K" eval --budget 0.2 "$SRC/examples/tasks/rowsum" "$SRC/examples/tasks/rowsum/good.c"
expect "eval good (human)" 0 "verdict: ok" -- "$K" eval --budget 0.2 "$RS" "$RS/good.c"
expect "eval good (json)" 0 "" -- "$K" eval --json --budget 0.2 "$RS" "$RS/good.c"
jcheck "json has the contract's fields" "j['verdict']=='ok' and j['detail'] and j['timing']['median_us']>0 and j['timing']['reference_median_us']>0 and j['timing']['speedup']>0 and len(j['checks'])>=6 and 'log' in j['compile']"
jcheck "json timing statistics" "all(k in j['timing']['candidate'] for k in ('median_us','iqr_us','cv','n'))"
cat >"$T/wrong.c" <<'C'
void rowsum(const float *x, float *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) { float s = 0; for (int c = 0; c < cols; c++) s += x[r * cols + c]; y[r] = s * 1.01f; }
}
C
# A relative KEVO_WORKER (as from a build directory): the worker and the
# compile sandbox found beside it start in directories of their own.
expect "relative KEVO_WORKER" 0 "verdict: ok" -- sh -c "cd '$(dirname "$(dirname "$K")")' && KEVO_CACHE_DIR='$T/relw' KEVO_WORKER='$(basename "$(dirname "$K")")/kevo-worker' '$K' eval --no-timing '$RS' '$RS/good.c'"
expect "eval wrong (exit 1)" 1 "verdict: wrong_output: .*y\[0\]: expected .*, got" -- "$K" eval --no-timing "$RS" "$T/wrong.c"
printf 'void rowsum(const float *x, float *y, int rows, int cols) { oops }\n' >"$T/broken.c"
expect "eval compile error shows the compiler" 1 "compile_error.*error" -- "$K" eval --no-timing "$RS" "$T/broken.c"
expect "eval compile error json" 1 "" -- "$K" eval --json --no-timing "$RS" "$T/broken.c"
jcheck "compile log kept" "j['verdict']=='compile_error' and 'oops' in j['compile']['log']"
printf 'void rowsum(const double *x, float *y, int rows, int cols) { (void)x; (void)y; (void)rows; (void)cols; }\n' >"$T/sig.c"
expect "wrong signature is a compile error" 1 "compile_error.*conflicting types" -- "$K" eval --no-timing "$RS" "$T/sig.c"
n=$(sqlite3 "$KEVO_DB" "select count(*) from evaluations" 2>/dev/null || echo 0)
if [ "$n" -ge 5 ]; then ok "evaluations recorded in the store ($n)"; else bad "store has $n evaluations, expected >= 5"; fi
v=$(sqlite3 "$KEVO_DB" "select verdict from evaluations order by id desc limit 1" 2>/dev/null)
if [ "$v" = "compile_error" ]; then ok "last stored verdict"; else bad "last stored verdict is '$v'"; fi
expect "eval into an explicit --db" 1 "" -- "$K" eval --db "$T/other.db" --no-timing "$RS" "$T/wrong.c"
n=$(sqlite3 "$T/other.db" "select count(*) from evaluations" 2>/dev/null || echo 0)
if [ "$n" = 1 ]; then ok "--db used"; else bad "--db store has $n rows"; fi

# --- several candidates in one eval: in turn, workers kept warm ---
expect "eval several (exit 1: one rejected)" 1 "3 candidates: 1 accepted, 2 rejected; warm workers taken: reference 2, candidate 2" -- "$K" eval --no-timing "$RS" "$RS/good.c" "$T/wrong.c" "$T/broken.c"
expect "eval several (json lines)" 1 "" -- "$K" eval --json --budget 0.1 "$RS" "$RS/good.c" "$T/wrong.c" "$RS/starter.c"
if python3 - "$T/out" <<'PY'; then ok "one JSON object per candidate, in order, each with its timeline"; else bad "eval several: JSON lines"; head -c 3000 "$T/out"; fi
import json, sys
js = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert [j["verdict"] for j in js] == ["ok", "wrong_output", "ok"], [j["verdict"] for j in js]
for j in js:
    tl = j["timeline"]
    at = [t for _, t in tl]
    assert tl[0][0] == "compiled" and tl[-1][0] == "end" and at == sorted(at) and at[0] > 0, tl
names = [w for w, _ in js[2]["timeline"]]
for w in ("checked", "device_locked", "warm_up", "loop", "candidate_stopped", "alone"):
    assert w in names, (w, names)
PY
n=$(sqlite3 "$KEVO_DB" "select count(*) from evaluations where candidate_path like '%starter.c'" 2>/dev/null || echo 0)
if [ "$n" -ge 1 ]; then ok "each of several candidates recorded"; else bad "the third candidate was not recorded"; fi
expect "eval stdin twice" 2 "stdin \(-\) can give one candidate only" -- "$K" eval "$RS" - -

# --- every example's candidates are accepted ---
for d in "$EX"/*/; do
  [ -f "$d/task.json" ] || continue
  for c in starter good; do
    expect "eval $(basename "$d")/$c.c" 0 "verdict: ok" -- "$K" eval --budget 0.1 "$d" "$d/$c.c"
  done
done

# --- import with a Python that has no torch: nothing could be tried, exit 2 ---
cat >"$T/notorch" <<'SH'
#!/bin/sh
exec python3 -c 'import runpy, sys
sys.modules["torch"] = None
a = sys.argv[1:]
while a and a[0].startswith("-"):
    a.pop(0)
sys.argv = a
runpy.run_path(a[0], run_name="__main__")' "$@"
SH
chmod +x "$T/notorch"
expect "import without torch exits 2, naming the fix" 2 "cannot import torch.*set KEVO_PYTHON" -- "$K" import --python "$T/notorch" -o "$T/imp" "$SRC/examples/kernelbench/1_Softmax_rows.py"

# --- doctor and device ---
expect "doctor" 0 "doctor: all good" -- "$K" doctor
# Every kind of child (issue 30), profilers' targets too, with what is off and why.
expect "doctor: ncu's target" 0 "ncu's target .* seccomp.* off \\(ncu hangs under seccomp" -- "$K" doctor
KEVO_SANITIZER_WITHOUT=seccomp,tool_netns expect "doctor: sanitizer's target as set" 0 \
  "sanitizer's target .* but seccomp off \\(KEVO_SANITIZER_WITHOUT\\); the tool in the host's network" -- "$K" doctor
expect "device" 0 "bandwidth" -- "$K" device

echo "cli e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
