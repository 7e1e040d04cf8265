#!/bin/sh
# Issue 14's two-GPU must-show: `kevo run --executor gpus --concurrency 8`
# using both GPUs, its throughput (candidates per minute) against one GPU,
# and the medians of the same kernels judged concurrently and serially.
#
# The candidates: rowsum's starter.cu with a second, inert tunable (PAD, 8
# values) beside its BLOCK (5 values): 40 distinct sources, each compiled
# and judged; a run of --steps 40 tries them all (exhaustive), so every way
# below judges the same 40 kernels.
#   two      --executor gpus --gpus 0,1 --concurrency 8
#   one      --executor gpus --gpus 0   --concurrency 4
#   serial   no executor: one candidate at a time, in kevo's own process
# Medians are compared per source (the same bytes) between `two` and
# `serial`: the ratio's median and range.
#
# usage: bench/gpus.sh [BUILD_DIR] [--record]   (--record appends to BENCHMARKS.md)
# env:   GPUS (default 0,1), BUDGET (timed seconds per side, default 1),
#        STEPS (candidates, default 40), SURFACE (default cuda; cpu: a dry run of
#        the script itself on a machine without GPUs, the "GPUs" then only
#        labels)
set -eu
B=${1:-build}
REC=${2:-}
K="$B/kevo"
GPUS=${GPUS:-0,1}
FIRST=${GPUS%%,*}
BUDGET=${BUDGET:-1}
STEPS=${STEPS:-40}
SURFACE=${SURFACE:-cuda}
if [ "$SURFACE" = cuda ]; then EXT=cu PADDECL="__device__ int"; else EXT=c PADDECL="int"; fi
[ -x "$K" ] || { echo "$K: not built (make, or name the build directory)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-gpus-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
export KEVO_CACHE_DIR="$T/cache"
cp -r examples/tasks/rowsum "$T/task"
{
  echo "// kevo:tune PAD=0,1,2,3,4,5,6,7"
  echo "#ifndef PAD"
  echo "#define PAD 0"
  echo "#endif"
  echo "$PADDECL kevo_bench_pad[PAD + 1];"
  cat examples/tasks/rowsum/starter.$EXT
} >"$T/task/starter.$EXT"
"$K" device --surface "$SURFACE" >/dev/null

# The store's answers: the sqlite3 shell, else Python's sqlite3 module (GPU
# hosts may have only the library and python3).
q() {
  if command -v sqlite3 >/dev/null 2>&1; then
    sqlite3 "$KEVO_DB" "$1"
  else
    python3 -c 'import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))' "$KEVO_DB" "$1"
  fi
}

run() { # NAME ARGS...: one run, its wall time in $T/NAME.s
  name=$1
  shift
  # A compile cache of its own (the device's ceilings copied in): every way
  # compiles the 40 sources itself, as a search would (on 2026-11-26 the
  # first way paid every compile and the others judged from its cache).
  mkdir -p "$T/cache-$name" && cp "$T/cache/"calib-*.json "$T/cache-$name/" 2>/dev/null || true
  s=$(date +%s.%N)
  KEVO_CACHE_DIR="$T/cache-$name" "$K" run --surface "$SURFACE" --steps "$STEPS" --budget "$BUDGET" -o "$T/$name.best.$EXT" "$@" \
    "$T/task" >"$T/$name.out" 2>&1 ||
    { echo "$name: kevo run failed:" >&2; tail -20 "$T/$name.out" >&2; exit 1; }
  e=$(date +%s.%N)
  echo "$s $e" | awk '{printf "%.1f", $2 - $1}' >"$T/$name.s"
  q "SELECT max(id) FROM runs" >"$T/$name.run"
}
run two --executor gpus --gpus "$GPUS" --concurrency 8
run one --executor gpus --gpus "$FIRST" --concurrency 4
run serial

per_min() { awk -v s="$(cat "$T/$1.s")" -v n="$STEPS" 'BEGIN { printf "%.1f", n * 60 / s }'; }
used=$(q "SELECT group_concat(DISTINCT json_extract(e.result_json, '$.executor.gpu'))
          FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id = $(cat "$T/two.run")")
ratios=$(q "SELECT c.median_us / s.median_us FROM
              (SELECT e.source_hash h, e.median_us FROM nodes n JOIN evaluations e ON e.id = n.eval_id
               WHERE n.run_id = $(cat "$T/two.run") AND e.median_us > 0) c
            JOIN (SELECT e.source_hash h, e.median_us FROM nodes n JOIN evaluations e ON e.id = n.eval_id
               WHERE n.run_id = $(cat "$T/serial.run") AND e.median_us > 0) s ON s.h = c.h
            ORDER BY 1")
n=$(echo "$ratios" | grep -c . || true)
med=$(echo "$ratios" | awk '{a[NR] = $1} END { if (NR) printf "%.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
lo=$(echo "$ratios" | head -1 | awk '{printf "%.3f", $1}')
hi=$(echo "$ratios" | tail -1 | awk '{printf "%.3f", $1}')
device=$(q "SELECT device FROM evaluations WHERE device != '' LIMIT 1")
# Where each way's time went: the mean per candidate of each part of a
# verdict (seconds.*), and how many each GPU judged.
parts() {
  q "SELECT printf('%.2f / %.2f / %.2f / %.2f', avg(json_extract(e.result_json, '$.seconds.compile')),
            avg(json_extract(e.result_json, '$.seconds.check')),
            avg(json_extract(e.result_json, '$.seconds.timing')),
            avg(json_extract(e.result_json, '$.seconds.lock_wait')))
     FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id = $(cat "$T/$1.run")"
}
pergpu() {
  q "SELECT group_concat(g || ': ' || c, ', ') FROM (SELECT coalesce(json_extract(e.result_json,
       '$.executor.gpu'), '-') g, count(*) c FROM nodes n JOIN evaluations e ON e.id = n.eval_id
       WHERE n.run_id = $(cat "$T/$1.run") GROUP BY 1)"
}
report=$(cat <<EOF
### Executors: two GPUs vs one (issue 14), $(date -u +%Y-%m-%d)

\`bench/gpus.sh\` on $device: $STEPS $SURFACE candidates (rowsum, BLOCK x an inert PAD), budget ${BUDGET} s.

| way | wall | candidates/min | per candidate: compile / check / timing / lock wait s | judged per GPU |
|---|---|---|---|---|
| \`--executor gpus --gpus $GPUS --concurrency 8\` (GPUs used: $used) | $(cat "$T/two.s") s | $(per_min two) | $(parts two) | $(pergpu two) |
| \`--executor gpus --gpus $FIRST --concurrency 4\` | $(cat "$T/one.s") s | $(per_min one) | $(parts one) | $(pergpu one) |
| serial (no executor) | $(cat "$T/serial.s") s | $(per_min serial) | $(parts serial) | $(pergpu serial) |

Medians of the same $n kernels, judged concurrently on two GPUs over judged serially:
median ratio $med, range $lo to $hi.
EOF
)
echo "$report"
[ "$REC" != --record ] || printf '\n%s\n' "$report" >>BENCHMARKS.md
