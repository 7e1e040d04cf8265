#!/bin/sh
# kevo analyze --preset cudanalyst on the cuda surface, with the Profiler
# live (Nsight Compute) and the Debugger's compute-sanitizer, against the
# loopback stand-in (the GPU machine reaches no model). A recorded greedy run
# on rowsum: step 0 does not compile, step 1 debugs it (correct), step 2
# refines step 1. The stand-in (ca_gpu_rules.txt) writes a correct kernel
# iff, at step 1 (a failing parent), the Debugger's report is in the prompt;
# at step 2 (a passing parent), both the Analyzer's and the Profiler's are.
# So, exactly, with players d, a, p (debugger, analyzer, profiler):
#   v(S) = 1/2 [d in S] + 1/2 [a in S and p in S]
#   Shapley 1/2, 1/4, 1/4; dividend d({a,p}) = 1/2; I({a,p}) = 1/2.
# The recorded frozen unit (the preset's default): every tool varies the
# child's recorded prompt. Prints what each phase cost.
# usage: cudanalyst_gpu.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR   (ctest label gpu)
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-ca-gpu-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/ca.db"
export XDG_CONFIG_HOME="$T/config"
RS="$SRC/examples/tasks/rowsum"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
now() { date +%s.%N; }
start_standin() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -f "$T/port"
  "$STANDIN" --port-file "$T/port" --replies "$1" --max-requests 2000 --lifetime 1800 &
  SPID=$!
  i=0
  while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
  URL="http://127.0.0.1:$(cat "$T/port")/v1"
}
jf() {
  python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); m=d["metrics"][sys.argv[2]]; k=sys.argv[4]
if k=="shapley": r=[x for x in m["shapley"] if x["player"]==sys.argv[3]][0]
elif k=="v": print("%.6f" % m["v"][sys.argv[3]]); sys.exit(0)
else: r=[x for x in m[k] if x["players"]==sys.argv[3]][0]
print("%.6f" % r["value"])' "$@"
}
cd "$T" || exit 1

start_standin "$SRC/tests/analysis/ca_gpu_record.txt"
t0=$(now)
"$K" run --strategy greedy --surface cuda --base-url "$URL" --model m --api-key-env "" --steps 3 \
  --concurrency 1 --seed 1 "$RS" >"$T/run.out" 2>&1
check "recorded cuda run exits 0" $? 0
t1=$(now)
check "recorded run: compile_error, ok, ok" \
  "$(q "select group_concat(verdict, ' ') from (select verdict from nodes where run_id = 1 order by step)")" \
  "compile_error ok ok"

start_standin "$SRC/tests/analysis/ca_gpu_rules.txt"
"$K" analyze --preset cudanalyst --bootstrap 200 --base-url "$URL" --model m --api-key-env "" \
  --json 1 >"$T/g.json" 2>"$T/g.err"
check "analysis with the Profiler live exits 0" $? 0 || head -20 "$T/g.err"
t2=$(now)
for want in "pass_rate debugger shapley 0.500000" "pass_rate analyzer shapley 0.250000" \
  "pass_rate profiler shapley 0.250000" "pass_rate analyzer+profiler dividends 0.500000" \
  "pass_rate analyzer+profiler interactions 0.500000" \
  "pass_rate debugger+profiler interactions 0.000000"; do
  set -- $want
  check "$1 $3 of $2 = $4" "$(jf "$T/g.json" "$1" "$2" "$3")" "$4"
done
q "select request_json from llm_calls where role = 'analyze:coder' and request_json like '%## Profiler%' limit 1" >"$T/p.req"
python3 - "$T/p.req" <<'EOF' && ok "the Profiler's report: Nsight Compute's summary of the parent" || bad "profiler report: $(head -c 600 "$T/p.req")"
import json, sys
body = json.load(open(sys.argv[1]))
text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
rep = text[text.find("## Profiler"):][:1500]
print(rep)
sys.exit(0 if "rowsum_k" in rep and "SOL" in rep else 1)
EOF
echo "cost: recorded run $(python3 -c "print(round($t1 - $t0, 1))") s; analysis (parents judged again" \
  "with ncu and compute-sanitizer, $(q "select count(*) from llm_calls where role like 'analyze:%'") calls" \
  "to the stand-in, $(q "select count(*) from analysis_gate") distinct kernels judged)" \
  "$(python3 -c "print(round($t2 - $t1, 1))") s"
grep "kevo: analysis\|judged again" "$T/g.err"
echo "cudanalyst_gpu: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
