#!/bin/sh
# kevo run through an executor, as a user runs it: `--executor local
# --concurrency 2` judges two candidates at once on gate servers; one server
# is killed with SIGKILL mid-job and the run still records every step exactly
# once (the killed job judged again by the other server); bad executor input
# fails with a message naming the fix.
# With the LLM stand-in, an LLM strategy (greedy) judges its kernels through
# the executor too.
# usage: exec_e2e.sh KEVO_BINARY SOURCE_DIR [LLM_STANDIN]
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC="$2"
# The examples at small bench sizes, made by the build (tests/small_tasks.py).
EX="$(dirname "$K")/test-tasks"
STANDIN=${3:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-exec-e2e-XXXXXX")
KPID=
SPID=
trap '[ -z "$KPID" ] || kill "$KPID" 2>/dev/null; [ -z "$SPID" ] || kill "$SPID" 2>/dev/null; rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/run.db"
export XDG_CONFIG_HOME="$T/config"
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
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
RS="$EX/rowsum"
cd "$T" || exit 1

# ---- bad input ----
expect "unknown executor" 2 "--executor nope: not an executor; use local, gpus, ssh or slurm" -- \
  "$K" run --executor nope "$RS"
expect "ssh without hosts" 2 "names no hosts" -- "$K" run --executor ssh "$RS"
printf '{"ssh": {"hosts": ["-oProxyCommand=x"]}}' >"$T/bad.json"
expect "a host that reads as an option" 2 "bad.json: ssh.hosts\[0\]: .* not a host name" -- \
  "$K" run --executor ssh --executor-config "$T/bad.json" "$RS"
printf '{"slurm": {"partitoin": "gpu"}}' >"$T/typo.json"
expect "a misspelt field" 2 "typo.json: slurm: \"partitoin\" is not a field kevo knows" -- \
  "$K" run --executor slurm --executor-config "$T/typo.json" "$RS"
if command -v ssh >/dev/null; then
  printf '{"ssh": {"hosts": ["kevo-no-such-host.invalid"]}}' >"$T/unreachable.json"
  expect "an unreachable host" 2 "ssh kevo-no-such-host.invalid #0: could not start a gate server: .*(resolve|kevo-no-such-host).*check ssh.hosts\[0\] in .*unreachable.json" -- \
    "$K" run --executor ssh --executor-config "$T/unreachable.json" "$RS"
fi
if [ ! -d /proc/driver/nvidia/gpus ]; then
  expect "gpus without a GPU" 2 "shows no GPU" -- env -u CUDA_VISIBLE_DEVICES "$K" run --executor gpus "$RS"
  expect "cuda on a host without a GPU" 2 "cannot judge cuda kernels" -- \
    "$K" run --executor local --surface cuda "$RS"
fi

# ---- a run through two local gate servers, one killed mid-job ----
"$K" run --executor local --concurrency 2 --steps 5 --budget 0.3 "$RS" >"$T/run.out" 2>&1 &
KPID=$!
victim=
i=0
while [ -z "$victim" ] && [ $i -lt 600 ] && kill -0 "$KPID" 2>/dev/null; do
  # a gate server (a child of kevo running `kevo gate serve`; kevo's other
  # children are its compile pool's compilers) that has a child of its own
  # (a worker) is in the middle of a job
  for s in $(ps -o pid=,args= --ppid "$KPID" 2>/dev/null | awk '/gate serve/ {print $1}'); do
    if [ -n "$(ps -o pid= --ppid "$s" 2>/dev/null)" ]; then
      victim=$s
      break
    fi
  done
  [ -n "$victim" ] || sleep 0.1
  i=$((i + 1))
done
if [ -n "$victim" ]; then
  sleep 0.5
  kill -9 "$victim" 2>/dev/null && echo "killed gate server $victim mid-job"
fi
wait "$KPID"
code=$?
KPID=
if [ -n "$victim" ] && [ "$code" = 0 ]; then ok "the run survives a gate server killed mid-job"; else
  bad "run through local servers: exit $code (victim '$victim')"
  tail -20 "$T/run.out" | sed 's/^/    /'
fi
grep -q "2 of 2 gate servers up, [0-9]* jobs kept submitted, compile pool: [1-9][0-9]* compilers" "$T/run.out" &&
  ok "two servers and a compile pool" || bad "the run did not say it has two servers and a compile pool"
grep -q "goes to another server" "$T/run.out" && ok "the killed job is retried elsewhere" ||
  { bad "no retry noted"; tail -20 "$T/run.out" | sed 's/^/    /'; }
run=$(q "SELECT max(id) FROM runs")
n=$(q "SELECT count(*) FROM nodes WHERE run_id=$run")
steps=$(q "SELECT count(DISTINCT step) FROM nodes WHERE run_id=$run")
evals=$(q "SELECT count(DISTINCT eval_id) FROM nodes WHERE run_id=$run AND eval_id IS NOT NULL")
total=$(q "SELECT count(*) FROM evaluations")
[ "$n" = 5 ] && [ "$steps" = 5 ] && [ "$evals" = 5 ] && [ "$total" = 5 ] &&
  ok "every step recorded exactly once (5 nodes, 5 evaluations)" ||
  bad "recorded: $n nodes, $steps steps, $evals evaluations of nodes, $total evaluations in all"
retried=$(q "SELECT count(*) FROM evaluations WHERE json_extract(result_json, '$.executor.attempts') = 2")
[ "$retried" = 1 ] && ok "one evaluation says it took two tries" || bad "evaluations with attempts 2: $retried"
hosts=$(q "SELECT count(*) FROM evaluations WHERE json_extract(result_json, '$.executor.name') = 'local' AND json_extract(result_json, '$.executor.host') != ''")
[ "$hosts" = 5 ] && ok "every evaluation names the executor and host that judged it" ||
  bad "evaluations naming their host: $hosts"
# the pipeline: each candidate built by the compile pool before it went to a
# server, which found it built (its compile a cache hit)
ahead=$(q "SELECT count(*) FROM evaluations WHERE json_extract(result_json, '$.executor.compiled_ahead') = 1 AND json_extract(result_json, '$.compile.cached') = 1 AND json_extract(result_json, '$.executor.at.sent') >= json_extract(result_json, '$.executor.at.compile_end')")
[ "$ahead" = 5 ] && grep -q "5 jobs sent (5 built ahead by the compile pool" "$T/run.out" &&
  ok "every candidate was built ahead by the compile pool and reached its server built" ||
  { bad "built ahead and found built by the server: $ahead of 5"; grep "kevo: executor:" "$T/run.out" | sed 's/^/    /'; }

# ---- a bench over a suite shares one executor across its tasks ----
# Two tasks, two at once (--jobs 2 is the default with an executor), two
# servers: while one task's run starts or ends the other's candidates keep
# the servers busy; each task's steps recorded once each.
mkdir -p "$T/suite"
cp -r "$RS" "$T/suite/rowsum"
cp -r "$EX/transpose" "$T/suite/transpose"
expect "bench through one executor" 0 "" -- "$K" bench --executor local --concurrency 2 --steps 4 \
  --budget 0.2 "$T/suite"
b=$(q "SELECT max(id) FROM benches")
runs=$(q "SELECT count(*) FROM bench_tasks WHERE bench_id=$b AND run_id IS NOT NULL")
nodes=$(q "SELECT count(*) || ' ' || count(DISTINCT n.run_id || ':' || n.step) || ' ' || count(DISTINCT n.eval_id) FROM nodes n JOIN bench_tasks bt ON bt.run_id = n.run_id WHERE bt.bench_id=$b AND n.eval_id IS NOT NULL")
[ "$runs" = 2 ] && [ "$nodes" = "8 8 8" ] && ok "the bench's two tasks: 8 steps, each judged once" ||
  bad "bench through one executor: $runs runs, nodes/steps/evaluations '$nodes'"
# the tasks overlapped on the servers: a verdict of one task's arrived while
# the other task had a job at a server (times from the shared executor's start)
over=$(q "SELECT count(*) FROM evaluations a JOIN nodes na ON na.eval_id = a.id JOIN bench_tasks ta ON ta.run_id = na.run_id,
              evaluations c JOIN nodes nc ON nc.eval_id = c.id JOIN bench_tasks tc ON tc.run_id = nc.run_id
          WHERE ta.bench_id=$b AND tc.bench_id=$b AND ta.run_id < tc.run_id
            AND json_extract(a.result_json, '$.executor.at.sent') < json_extract(c.result_json, '$.executor.at.verdict')
            AND json_extract(c.result_json, '$.executor.at.sent') < json_extract(a.result_json, '$.executor.at.verdict')")
[ "${over:-0}" -ge 1 ] && ok "the two tasks' jobs were on the servers at once ($over overlapping pairs)" ||
  bad "the bench's tasks never overlapped on the servers"

# ---- an LLM strategy through the executor ----
if [ -n "$STANDIN" ]; then
  "$STANDIN" --port-file "$T/port" --replies "$SRC/tests/agent/replies.txt" --max-requests 50 \
    --lifetime 200 --log "$T/standin.log" &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  "$K" run --strategy greedy --base-url "http://127.0.0.1:$(cat "$T/port")/v1" --model m \
    --api-key-env "" --steps 4 --no-timing --seed 2 --executor local --concurrency 2 "$RS" \
    >"$T/greedy.out" 2>&1
  code=$?
  run=$(q "SELECT max(id) FROM runs")
  judged=$(q "SELECT count(*) FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id=$run AND json_extract(e.result_json, '$.executor.name') = 'local'")
  withcode=$(q "SELECT count(*) FROM nodes WHERE run_id=$run AND eval_id IS NOT NULL")
  if [ "$code" = 0 ] && [ "$withcode" -ge 1 ] && [ "$judged" = "$withcode" ]; then
    ok "greedy judges every kernel through the executor ($judged of $withcode)"
  else
    bad "greedy through the executor: exit $code, $judged of $withcode judged by it"
    tail -15 "$T/greedy.out" | sed 's/^/    /'
  fi
  # best-of-n, 3 requests at once: replies that arrive together are judged at
  # once (prefetched), each recorded once
  "$K" run --strategy best-of-n --base-url "http://127.0.0.1:$(cat "$T/port")/v1" --model m \
    --api-key-env "" --steps 6 --no-timing --seed 3 --executor local --concurrency 3 "$RS" \
    >"$T/bon.out" 2>&1
  code=$?
  run=$(q "SELECT max(id) FROM runs")
  nodes=$(q "SELECT count(*) || ' ' || count(DISTINCT step) FROM nodes WHERE run_id=$run")
  evals=$(q "SELECT count(*) FROM nodes WHERE run_id=$run AND eval_id IS NOT NULL")
  dup=$(q "SELECT count(*) - count(DISTINCT eval_id) FROM nodes WHERE run_id=$run AND eval_id IS NOT NULL")
  servers=$(q "SELECT count(DISTINCT json_extract(e.result_json, '$.executor.server')) FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id=$run")
  if [ "$code" = 0 ] && [ "$nodes" = "6 6" ] && [ "$evals" -ge 1 ] && [ "$dup" = 0 ]; then
    ok "best-of-n through the executor: 6 nodes, $evals judged once each on $servers servers"
  else
    bad "best-of-n through the executor: exit $code, nodes '$nodes', $evals judged, $dup twice"
    tail -15 "$T/bon.out" | sed 's/^/    /'
  fi
else
  echo "exec_e2e: no LLM stand-in given: the LLM strategy through an executor is not tested"
fi

# ---- a remote host's verdict is evidence, not a verdict ----
# A stand-in srun (on PATH) runs the gate server through a proxy that lies:
# every verdict it passes on says ok. A kernel that writes zeros is then the
# run's best as far as the remote host goes; kevo judges it again here and
# neither reports it as best nor writes it out. An honest remote's best is
# judged again too and written, saying so.
mkdir -p "$T/fakebin"
cat >"$T/fakebin/srun" <<'SH'
#!/bin/sh
# srun's options (--name=value, --quiet, --unbuffered) skipped; the command run
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
if [ -n "${KEVO_TEST_LIAR:-}" ]; then exec python3 "$KEVO_TEST_LIAR" "$@"; fi
exec "$@"
SH
chmod +x "$T/fakebin/srun"
cat >"$T/liar.py" <<'PY'
# A gate server that says ok to everything: kevo gate serve behind a proxy
# that rewrites each verdict (type 202) into an accepted ok.
import json, struct, subprocess, sys, threading
H = struct.Struct("<IIQIQ")
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def pump_in():
    while True:
        b = sys.stdin.buffer.read1(65536)
        if not b:
            p.stdin.close(); return
        p.stdin.write(b); p.stdin.flush()
threading.Thread(target=pump_in, daemon=True).start()
out, src = sys.stdout.buffer, p.stdout
def exact(n):
    b = b""
    while len(b) < n:
        c = src.read(n - len(b))
        if not c:
            sys.exit(0)
        b += c
    return b
while True:
    m, t, tok, jl, bl = H.unpack(exact(H.size))
    js, blob = exact(jl), exact(bl)
    if t == 202:
        v = json.loads(js)
        r = v.get("result")
        if isinstance(r, dict):
            r.update({"verdict": "ok", "accepted": True, "detail": "all checks passed"})
            for c in r.get("checks") or []:
                c["verdict"] = "ok"
        js = json.dumps(v).encode()
    out.write(H.pack(m, t, tok, len(js), bl) + js + blob)
    out.flush()
PY
printf '{"slurm": {"servers": 1}}' >"$T/slurm.json"
cat >"$T/zeros.c" <<'C'
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x; (void)cols;
  for (int r = 0; r < rows; r++) y[r] = 0.0f;
}
C
PATH="$T/fakebin:$PATH" KEVO_TEST_LIAR="$T/liar.py" "$K" run --executor slurm \
  --executor-config "$T/slurm.json" --steps 1 --no-timing --starter "$T/zeros.c" \
  -o "$T/liar_best.c" "$RS" >"$T/liar.out" 2>&1
code=$?
if grep -q "accepted by a remote host (slurm, host .*) but this host judges it wrong_output" \
  "$T/liar.out" && [ ! -e "$T/liar_best.c" ] && [ "$code" != 0 ]; then
  ok "a lying remote host's best is judged again here, refused and not written (exit $code)"
else
  bad "a lying remote host's best: exit $code, written: $([ -e "$T/liar_best.c" ] && echo yes || echo no)"
  tail -15 "$T/liar.out" | sed 's/^/    /'
fi
rec=$(q "SELECT count(*) FROM evaluations WHERE json_extract(result_json, '$.rejudge.agrees') = 0 AND verdict = 'wrong_output' AND json_extract(result_json, '$.rejudge.remote_verdict') = 'ok'")
[ "$rec" -ge 1 ] && ok "the disagreement is recorded (the remote's ok, this host's wrong_output)" ||
  bad "no recorded disagreement ($rec)"
run=$(q "SELECT max(id) FROM runs")
"$K" best "$run" -o "$T/liar_best2.c" >"$T/best.out" 2>&1
code=$?
[ "$code" != 0 ] && [ ! -e "$T/liar_best2.c" ] && grep -q "this host judges it wrong_output" "$T/best.out" &&
  ok "kevo best -o refuses it too" || { bad "kevo best -o on the lying run: exit $code"; sed 's/^/    /' "$T/best.out"; }
PATH="$T/fakebin:$PATH" "$K" run --executor slurm --executor-config "$T/slurm.json" --steps 1 \
  --no-timing -o "$T/honest_best.c" "$RS" >"$T/honest.out" 2>&1
code=$?
if [ "$code" = 0 ] && grep -q "judged again here: ok" "$T/honest.out" &&
  grep -q "judged again here" "$T/honest_best.c"; then
  ok "an honest remote host's best is judged again here and written, saying so"
else
  bad "an honest remote's best: exit $code"
  tail -15 "$T/honest.out" | sed 's/^/    /'
fi

# ---- a node lost mid-job costs only its job ----
# A stand-in srun whose first step is a node that dies (SIGKILL) in the middle
# of a job, once the gate server has a worker: the job is re-queued on the
# next allocation and every step recorded once, no evaluation twice.
cat >"$T/fakebin/srun-lost" <<'SH'
#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
if [ ! -e "$KEVO_TEST_LOST" ]; then
  : >"$KEVO_TEST_LOST"
  me=$$
  (
    i=0
    while [ $i -lt 600 ] && [ -z "$(ps -o pid= --ppid "$me" 2>/dev/null)" ]; do sleep 0.05; i=$((i + 1)); done
    sleep 0.3
    echo "stand-in node: lost mid-job" >>"$KEVO_TEST_LOST"
    kill -9 "$me"
  ) </dev/null >/dev/null 2>&1 &
fi
exec "$@"
SH
chmod +x "$T/fakebin/srun-lost"
mkdir -p "$T/lostbin" && cp "$T/fakebin/srun-lost" "$T/lostbin/srun"
PATH="$T/lostbin:$PATH" KEVO_TEST_LOST="$T/lost.mark" "$K" run --executor slurm \
  --executor-config "$T/slurm.json" --steps 3 --budget 0.5 "$RS" >"$T/lost.out" 2>&1
code=$?
run=$(q "SELECT max(id) FROM runs")
nodes=$(q "SELECT count(*) || ' ' || count(DISTINCT step) || ' ' || count(DISTINCT eval_id) FROM nodes WHERE run_id=$run AND eval_id IS NOT NULL")
retried=$(q "SELECT count(*) FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id=$run AND json_extract(e.result_json, '$.executor.attempts') = 2")
if [ "$code" = 0 ] && grep -q "lost mid-job" "$T/lost.mark" && grep -q "goes to another server" "$T/lost.out" &&
  [ "$nodes" = "3 3 3" ] && [ "$retried" = 1 ]; then
  ok "a node lost mid-job: its job re-queued, 3 steps judged once each (one in 2 tries)"
else
  bad "a node lost mid-job: exit $code, nodes/steps/evaluations '$nodes', retried $retried"
  tail -15 "$T/lost.out" | sed 's/^/    /'
fi

echo "exec_e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
