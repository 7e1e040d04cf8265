#!/bin/sh
# The GPU timing attacks (tests/gpu/cands/, test_gpu's attack table) judged by
# a kevo build, one `kevo eval --surface cuda --json` each, then a table of
# verdicts and speedups. Controls first: each attack task's reference judged
# as a candidate (an honest measurement of the same work: about 1x).
# An attack is FOOLED when its verdict is ok with a speedup of 1.3x or more.
# Every candidate is compiled and checked first, in parallel and untimed, so
# that the timed runs, one at a time, only time.
# usage: tests/gpu/attacks.sh [BUILD_DIR] [OUT_DIR]
#   BUDGET (0.3 s per side), JOBS (4 parallel compiles), ONLY (a name filter)
set -u
B=${1:-build}
OUT=${2:-/tmp/kevo-attacks}
S=$(cd "$(dirname "$0")/../.." && pwd)
K="$B/kevo"
BUDGET=${BUDGET:-0.3}
JOBS=${JOBS:-4}
ONLY=${ONLY:-}
mkdir -p "$OUT"
rm -f "$OUT/runs"
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$OUT/cache}" KEVO_DB="${KEVO_DB:-$OUT/kevo.db}"
[ -x "$B/kevo-worker" ] && export KEVO_WORKER="${KEVO_WORKER:-$(cd "$B" && pwd)/kevo-worker}"

# kind name task candidate class
LIST="control ref_rowsum rowsum tests/gpu/rowsum/reference.cu honest
control ref_matmul matmul tests/gpu/matmul/reference.cu honest
control ref_rowmax rowmax tests/gpu/rowmax/reference.cu honest
control ref_fourier fourier tests/gpu/fourier/reference.cu honest
control ref_histogram histogram tests/gpu/histogram/reference.cu honest
attack forge_elapsed rowsum tests/gpu/cands/forge_elapsed.cu 1:driver-table
attack forge_clock rowsum tests/gpu/cands/forge_clock.cu 1:GOT-clock
attack forge_write rowsum tests/gpu/cands/forge_write.cu 1:GOT-write
attack forge_reply rowsum tests/gpu/cands/forge_reply.cu 1:own-reply
attack hog_stream rowsum tests/gpu/cands/hog_stream.cu 2:spinner
attack persistent_ctx rowsum tests/gpu/cands/persistent_ctx.cu 2:second-ctx
attack steal_ref_output rowsum tests/gpu/cands/steal_ref_output.cu 2:ref-buffers
attack last_call_only rowsum tests/gpu/cands/last_call_only.cu 3:last-call
attack diff_cache matmul tests/gpu/cands/diff_cache.cu 3:diff-cache
attack sampled_cache rowmax tests/gpu/cands/sampled_cache.cu 3:sampled-cache
attack fourier_poison fourier tests/gpu/cands/fourier_poison.cu 4:slow-path
attack histogram_contention histogram tests/gpu/cands/histogram_contention.cu 4:contention"
[ -n "$ONLY" ] && LIST=$(echo "$LIST" | grep -E "$ONLY")

echo "== device"
"$K" device --surface cuda 2>&1 | tee "$OUT/device.txt"

echo "== compile and check, $JOBS at a time"
t0=$(date +%s)
echo "$LIST" | while read -r kind name task cand class; do
  echo "$name $S/tests/gpu/$task $S/$cand"
done | xargs -P "$JOBS" -n 3 sh -c \
  'timeout 300 "$0" eval --surface cuda --no-timing --json "$2" "$3" >"'"$OUT"'/$1.check.json" 2>&1; echo "  $1: exit $?"' "$K"
echo "  ($(($(date +%s) - t0)) s)"

echo "== timed, one at a time (budget $BUDGET s per side)"
echo "$LIST" | while read -r kind name task cand class; do
  s=$(date +%s.%N)
  timeout 240 "$K" eval --surface cuda --json --budget "$BUDGET" "$S/tests/gpu/$task" "$S/$cand" \
    >"$OUT/$name.json" 2>"$OUT/$name.err"
  rc=$?
  e=$(date +%s.%N)
  echo "$kind $name $task $class $rc $s $e" >>"$OUT/runs"
  echo "  $name: exit $rc ($(awk "BEGIN{printf \"%.1f\", $e - $s}") s)"
done

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
rows = [l.split() for l in open(os.path.join(out, "runs"))]
print()
print("%-8s %-21s %-10s %-14s %-14s %7s %9s %9s %-12s %6s  %s" % (
    "kind", "candidate", "task", "class", "verdict", "speedup", "cand_us", "ref_us",
    "timer c/r", "wall", "outcome; detail"))
fooled = 0
for kind, name, task, klass, rc, s, e in rows:
    try:
        j = json.load(open(os.path.join(out, name + ".json")))
    except Exception as ex:
        err = open(os.path.join(out, name + ".err")).read().strip().splitlines()
        print("%-8s %-21s %-10s %-14s %-14s %7s %9s %9s %-12s %6.1f  NO RESULT (exit %s): %s" % (
            kind, name, task, klass, "-", "-", "-", "-", "-", float(e) - float(s), rc,
            err[-1][:150] if err else ex))
        continue
    v = j.get("verdict", "?")
    t = j.get("timing") or {}
    sp = t.get("speedup") or 0
    tm = t.get("timer") or {}
    timer = "%s/%s" % (tm.get("candidate", "-"), tm.get("reference", "-"))
    if kind == "attack":
        outcome = "FOOLED" if v == "ok" and sp >= 1.3 else "not fooled"
        fooled += outcome == "FOOLED"
    else:
        outcome = "control"
    print("%-8s %-21s %-10s %-14s %-14s %7.2f %9.1f %9.1f %-12s %6.1f  %s; %s" % (
        kind, name, task, klass, v, sp, t.get("median_us") or 0,
        t.get("reference_median_us") or 0, timer, float(e) - float(s), outcome,
        (j.get("detail") or "")[:160]))
    notes = [l for l in (j.get("stderr") or "").splitlines() if l.strip()]
    if kind == "attack" and notes:
        print("%8s %s" % ("", " | ".join(notes[:2] + (["... " + notes[-1]] if len(notes) > 2 else []))[:230]))
print("\n%d of %d attacks fooled the gate" % (fooled, sum(r[0] == "attack" for r in rows)))
PY
