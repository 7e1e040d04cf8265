#!/bin/sh
# Gate latency on the cuda surface: for each example's good.cu, seconds from
# source to verdict, split into compile, correctness (worker start included)
# and timing, the median of RUNS runs each, with three caches: cold (a fresh
# KEVO_CACHE_DIR holding only the device calibration: reference, call shim and
# candidate all compile), new (a candidate never seen before, the task's
# reference and shim cached: the cost of each candidate in a search) and warm
# (the same candidate again: nothing compiles). Then the
# throughput: unique candidates (good.cu and starter.cu of every example, each
# made unique by a comment) judged back to back, and with PAR judged at once.
# usage: bench/gpu_latency.sh [BUILD_DIR] [OUT_MD]       (OUT_MD: table appended there)
set -eu
B=${1:-build}
OUTMD=${2:-}
K="$B/kevo"
RUNS=${RUNS:-3}
BUDGET=${BUDGET:-0.5}
PAR=${PAR:-4}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
export KEVO_CACHE_DIR="$T/calib"
"$K" device --surface cuda >/dev/null 2>&1
dev=$("$K" device --surface cuda --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
out="$T/table.md"
{
  echo "### Gate latency, cuda surface ($(date -u +%Y-%m-%d), $dev, $(nproc) CPU cores, budget $BUDGET s per side, median of $RUNS)"
  echo
  echo "| task | cache | total s | compile s | check s | timing s | checks | cand us | ref us | speedup | roofline |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} >"$out"
cat "$out"
for d in examples/tasks/*/; do
  [ -f "$d/good.cu" ] || continue
  name=$(basename "$d")
  : >"$T/runs"
  for cache in cold new warm; do
    for i in $(seq "$RUNS"); do
      cand="$d/good.cu"
      if [ "$cache" = cold ]; then
        export KEVO_CACHE_DIR="$T/cache-$name-$i"
        mkdir -p "$KEVO_CACHE_DIR" && cp "$T/calib/calib-cuda.json" "$KEVO_CACHE_DIR/"
      elif [ "$cache" = new ]; then
        cand="$T/new-$name-$i.cu"
        { cat "$d/good.cu"; echo "// a new candidate $i $$"; } >"$cand"
      fi
      s=$(date +%s.%N)
      "$K" eval --surface cuda --json --budget "$BUDGET" "$d" "$cand" >"$T/r-$cache-$i.json" || true
      e=$(date +%s.%N)
      echo "$cache $s $e $T/r-$cache-$i.json" >>"$T/runs"
    done
  done
  python3 - "$T/runs" "$name" <<'PY' | tee -a "$out"

import json, sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
for cache in ("cold", "new", "warm"):
    rs = [(float(e) - float(s), json.load(open(p))) for c, s, e, p in rows if c == cache]
    med = lambda f: st.median(f(w, j) for w, j in rs)
    j = rs[-1][1]
    t = j.get("timing", {})
    print("| %s | %s | %.2f | %.2f | %.2f | %.2f | %d | %s | %s | %s | %s |" % (
        sys.argv[2], cache, med(lambda w, j: w), med(lambda w, j: j["seconds"]["compile"]),
        med(lambda w, j: j["seconds"]["check"]), med(lambda w, j: j["seconds"]["timing"]),
        len(j["checks"]),
        "%.1f" % med(lambda w, j: j["timing"]["median_us"]) if t else j["verdict"],
        "%.1f" % med(lambda w, j: j["timing"]["reference_median_us"]) if t else "",
        "%.2fx" % med(lambda w, j: j["timing"]["speedup"]) if t else "",
        "%.0f%%" % (100 * med(lambda w, j: j["timing"]["roofline_fraction"])) if t else ""))
PY
done

# Throughput: every candidate is new to the cache (a unique comment).
mkdir -p "$T/cands"
n=0
for d in examples/tasks/*/; do
  for c in starter good; do
    [ -f "$d/$c.cu" ] || continue
    n=$((n + 1))
    { cat "$d/$c.cu"; echo "// throughput variant $n $$"; } >"$T/cands/$n.cu"
    echo "$d $T/cands/$n.cu" >>"$T/list"
  done
done
judge() { # DIR CAND CACHE
  KEVO_CACHE_DIR="$3" "$K" eval --surface cuda --budget "$BUDGET" "$1" "$2" >/dev/null 2>&1 || true
}
export KEVO_CACHE_DIR="$T/tp-seq"
mkdir -p "$KEVO_CACHE_DIR" && cp "$T/calib/calib-cuda.json" "$KEVO_CACHE_DIR/"
s=$(date +%s.%N)
while read -r d c; do judge "$d" "$c" "$KEVO_CACHE_DIR"; done <"$T/list"
e=$(date +%s.%N)
seq_s=$(python3 -c "print('%.1f' % ($e - $s))")
for f in "$T"/cands/*.cu; do echo "// again" >>"$f"; done
mkdir -p "$T/tp-par" && cp "$T/calib/calib-cuda.json" "$T/tp-par/"
s=$(date +%s.%N)
i=0
while read -r d c; do
  judge "$d" "$c" "$T/tp-par" &
  i=$((i + 1))
  [ $((i % PAR)) = 0 ] && wait
done <"$T/list"
wait
e=$(date +%s.%N)
par_s=$(python3 -c "print('%.1f' % ($e - $s))")
{
  echo
  echo "Throughput: $n unique candidates (cold compile, checks, timing at budget $BUDGET s): $seq_s s back to back ($(python3 -c "print('%.1f' % ($n * 60 / $seq_s))") per minute); $par_s s with $PAR judged at once ($(python3 -c "print('%.1f' % ($n * 60 / $par_s))") per minute; their timings share the GPU)."
} | tee -a "$out"
if [ -n "$OUTMD" ]; then
  { echo; cat "$out"; } >>"$OUTMD"
fi
