#!/bin/sh
# Gate latency on the CPU surface: for each example's good candidate, seconds
# from source to verdict with a cold and a warm compile cache, split into
# compile, correctness and timing (timing budget 0.5 s per side).
# usage: bench/gate_latency.sh [BUILD_DIR] [--record]   (--record appends to BENCHMARKS.md)
set -eu
B=${1:-build}
REC=${2:-}
K="$B/kevo"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
out="$T/table.md"
{
  echo "### Gate latency, cpu surface ($(date -u +%Y-%m-%d), $cpu, $(nproc) threads)"
  echo
  echo "| task | cache | total s | compile s | checks | check s | timing s | speedup |"
  echo "|---|---|---|---|---|---|---|---|"
} >"$out"
for d in examples/tasks/*/; do
  [ -f "$d/task.json" ] || continue
  name=$(basename "$d")
  export KEVO_CACHE_DIR="$T/cache-$name"
  "$K" device >/dev/null 2>&1 || true
  for cache in cold warm; do
    s=$(date +%s.%N)
    "$K" eval --json --budget 0.5 "$d" "$d/good.c" >"$T/r.json" || true
    e=$(date +%s.%N)
    python3 - "$T/r.json" "$name" "$cache" "$s" "$e" >>"$out" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s = j["seconds"]
t = j.get("timing", {})
print("| %s | %s | %.2f | %.2f | %d | %.2f | %.2f | %s |" % (
    sys.argv[2], sys.argv[3], float(sys.argv[5]) - float(sys.argv[4]), s["compile"],
    len(j["checks"]), s["check"], s["timing"],
    "%.2fx" % t["speedup"] if t else j["verdict"]))
PY
  done
done
cat "$out"
if [ "$REC" = "--record" ]; then
  { echo; cat "$out"; } >>BENCHMARKS.md
fi
