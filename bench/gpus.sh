#!/bin/sh
# Issue 31's must-show: more GPUs, more verdicts. Candidates per minute by
# way and form, each GPU's busy fraction, and the medians of the same
# kernels judged concurrently and serially.
#
# The candidates: rowsum with an inert tunable (PAD, 8 values) beside its
# BLOCK (5 values): 40 distinct sources, each compiled and judged; a run of
# --steps 40 tries them all (exhaustive), so every way judges the same 40
# kernels. Two forms:
#   nvcc     the host-entry starter (starter.cu), compiled by nvcc
#   nvrtc    the same naive kernel in the kernel-only form (`// kevo:launch`),
#            compiled by NVRTC
# Three ways, each with a compile cache of its own (every way compiles its
# 40 sources, as a search does):
#   two      --executor gpus --gpus 0,1 --concurrency 2*PER
#   one      --executor gpus --gpus 0   --concurrency PER
#   serial   no executor: one candidate at a time in kevo's own process
#            (the whole space compiled first by the compile pool)
# PER (default 2): gate servers per GPU; the executor's compile pool builds
# ahead of them. With POOL_OFF=1 a fourth way, `two` with
# KEVO_EXEC_COMPILERS=0 (the servers compile, as before issue 31).
#
# GPU busy: nvidia-smi's utilization.gpu sampled every 200 ms during the
# run, averaged per GPU; and the fraction of the run each GPU's timing lock
# was held (the verdicts' timing seconds summed per GPU over the wall).
# Medians are compared per source (the same bytes) between `two` and
# `serial`: the ratio's median and range.
#
# usage: bench/gpus.sh [BUILD_DIR] [--record]   (--record appends to BENCHMARKS.md)
# env:   GPUS (default 0,1), PER (servers per GPU, default 2), BUDGET (timed
#        seconds per side, default 1), STEPS (default 40), FORMS (default
#        "nvcc nvrtc"), POOL_OFF (1: also the way without a compile pool),
#        SURFACE (default cuda; cpu: a dry run of the script on a machine
#        without GPUs: the form is c, the "GPUs" only labels)
set -eu
B=${1:-build}
REC=${2:-}
K="$B/kevo"
GPUS=${GPUS:-0,1}
FIRST=${GPUS%%,*}
NGPU=$(echo "$GPUS" | tr ',' '\n' | grep -c .)
PER=${PER:-2}
BUDGET=${BUDGET:-1}
STEPS=${STEPS:-40}
SURFACE=${SURFACE:-cuda}
POOL_OFF=${POOL_OFF:-0}
if [ "$SURFACE" = cuda ]; then FORMS=${FORMS:-nvcc nvrtc}; else FORMS=c; fi
[ -x "$K" ] || { echo "$K: not built (make, or name the build directory)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-gpus-XXXXXX")
SMI=
trap '[ -z "$SMI" ] || kill "$SMI" 2>/dev/null; rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
export KEVO_CACHE_DIR="$T/cache"
TUNE_PAD="// kevo:tune PAD=0,1,2,3,4,5,6,7"
for form in $FORMS; do
  cp -r examples/tasks/rowsum "$T/task-$form"
  case $form in
  nvcc)
    { echo "$TUNE_PAD"; printf '#ifndef PAD\n#define PAD 0\n#endif\n__device__ int kevo_bench_pad[PAD + 1];\n'
      cat examples/tasks/rowsum/starter.cu; } >"$T/task-$form/starter.cu" ;;
  nvrtc)
    cat >"$T/task-$form/starter.cu" <<'CU'
// rowsum's naive starter in the kernel-only form (NVRTC): one thread per row.
// kevo:tune PAD=0,1,2,3,4,5,6,7
// kevo:tune BLOCK=32,64,128,256,512
#ifndef PAD
#define PAD 0
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
// kevo:launch rowsum_naive grid=((rows + BLOCK - 1) / BLOCK) block=(BLOCK) args=(x, y, rows, cols)
__device__ int kevo_bench_pad[PAD + 1];
__global__ void rowsum_naive(const float *x, float *y, int rows, int cols) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows)
    return;
  const float *xr = x + (size_t)r * (size_t)cols;
  float s = 0.0f;
  for (int c = 0; c < cols; c++)
    s += xr[c];
  y[r] = s + 0.0f * kevo_bench_pad[0];
}
CU
    ;;
  c)
    { echo "$TUNE_PAD"; printf '#ifndef PAD\n#define PAD 0\n#endif\nint kevo_bench_pad[PAD + 1];\n'
      cat examples/tasks/rowsum/starter.c; } >"$T/task-$form/starter.c" ;;
  esac
done
EXT=cu
[ "$SURFACE" = cuda ] || EXT=c
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

run() { # FORM NAME ENV... -- ARGS...: one run; its wall time in $T/FORM-NAME.s
  form=$1 name=$2
  shift 2
  envs=
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs="$envs $1"; shift; done
  [ $# -eq 0 ] || shift
  id="$form-$name"
  mkdir -p "$T/cache-$id" && cp "$T/cache/"calib-*.json "$T/cache-$id/" 2>/dev/null || true
  if command -v nvidia-smi >/dev/null 2>&1 && [ "$SURFACE" = cuda ]; then
    nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 200 \
      >"$T/$id.smi" 2>/dev/null &
    SMI=$!
  fi
  s=$(date +%s.%N)
  # shellcheck disable=SC2086 # envs: NAME=VALUE words
  env KEVO_CACHE_DIR="$T/cache-$id" $envs "$K" run --surface "$SURFACE" --steps "$STEPS" \
    --budget "$BUDGET" -o "$T/$id.best.$EXT" "$@" "$T/task-$form" >"$T/$id.out" 2>&1 ||
    { echo "$id: kevo run failed:" >&2; tail -20 "$T/$id.out" >&2; exit 1; }
  e=$(date +%s.%N)
  [ -z "$SMI" ] || { kill "$SMI" 2>/dev/null; wait "$SMI" 2>/dev/null || true; SMI=; }
  echo "$s $e" | awk '{printf "%.1f", $2 - $1}' >"$T/$id.s"
  q "SELECT max(id) FROM runs" >"$T/$id.run"
}
WAYS="two one serial"
[ "$POOL_OFF" = 1 ] && WAYS="two two-nopool one serial"
for form in $FORMS; do
  run "$form" two -- --executor gpus --gpus "$GPUS" --concurrency $((PER * NGPU))
  [ "$POOL_OFF" != 1 ] || run "$form" two-nopool KEVO_EXEC_COMPILERS=0 -- --executor gpus \
    --gpus "$GPUS" --concurrency $((PER * NGPU))
  run "$form" one -- --executor gpus --gpus "$FIRST" --concurrency "$PER"
  run "$form" serial --
done

per_min() { awk -v s="$(cat "$T/$1.s")" -v n="$STEPS" 'BEGIN { printf "%.1f", n * 60 / s }'; }
judged() { echo "FROM nodes n JOIN evaluations e ON e.id = n.eval_id WHERE n.run_id = $(cat "$T/$1.run")"; }
# The mean per candidate of each part (the gate's compile / check / timing /
# lock wait at the server, and the pool's build ahead of it).
parts() {
  q "SELECT printf('%.2f / %.2f / %.2f / %.2f / %.2f',
            avg(coalesce(json_extract(e.result_json, '$.executor.seconds.compile_ahead'), 0)),
            avg(json_extract(e.result_json, '$.seconds.compile')),
            avg(json_extract(e.result_json, '$.seconds.check')),
            avg(json_extract(e.result_json, '$.seconds.timing')),
            avg(json_extract(e.result_json, '$.seconds.lock_wait'))) $(judged "$1")"
}
# Each GPU: its timing lock held over the wall, and nvidia-smi's mean
# utilization while the run lasted.
busy() {
  lock=$(q "SELECT group_concat(g || ': ' || printf('%.0f%%', 100.0 * t / $(cat "$T/$1.s")), ', ') FROM
              (SELECT coalesce(json_extract(e.result_json, '$.executor.gpu'), '$FIRST') g,
                      sum(json_extract(e.result_json, '$.seconds.timing')) t $(judged "$1") GROUP BY 1)")
  smi=
  [ ! -s "$T/$1.smi" ] || smi=$(awk -F', *' '{ s[$1] += $2; n[$1]++ }
      END { for (g in s) printf "%s%s: %.0f%%", (k++ ? ", " : ""), g, s[g] / n[g] }' "$T/$1.smi")
  echo "timing lock $lock${smi:+; nvidia-smi $smi}"
}
pergpu() {
  q "SELECT group_concat(g || ': ' || c, ', ') FROM (SELECT coalesce(json_extract(e.result_json,
       '$.executor.gpu'), '-') g, count(*) c $(judged "$1") GROUP BY 1)"
}
ratio() { # FORM: medians of `two` over `serial`, per source
  r=$(q "SELECT c.median_us / s.median_us FROM
          (SELECT e.source_hash h, e.median_us $(judged "$1-two") AND e.median_us > 0) c
          JOIN (SELECT e.source_hash h, e.median_us $(judged "$1-serial") AND e.median_us > 0) s
          ON s.h = c.h ORDER BY 1")
  n=$(echo "$r" | grep -c . || true)
  med=$(echo "$r" | awk '{a[NR] = $1} END { if (NR) printf "%.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
  echo "$n kernels: median ratio $med, range $(echo "$r" | head -1 | awk '{printf "%.3f", $1}') to $(echo "$r" | tail -1 | awk '{printf "%.3f", $1}')"
}
way_label() {
  case $1 in
  two) echo "\`--executor gpus --gpus $GPUS --concurrency $((PER * NGPU))\`" ;;
  two-nopool) echo "the same, \`KEVO_EXEC_COMPILERS=0\` (the servers compile)" ;;
  one) echo "\`--executor gpus --gpus $FIRST --concurrency $PER\`" ;;
  serial) echo "serial (no executor)" ;;
  esac
}
device=$(q "SELECT device FROM evaluations WHERE device != '' LIMIT 1")
rows=
for form in $FORMS; do
  for w in $WAYS; do
    id="$form-$w"
    pool=$(grep -o "[0-9]* built ahead by the compile pool" "$T/$id.out" | head -1 || true)
    rows="$rows
| $form | $(way_label "$w") | $(cat "$T/$id.s") s | $(per_min "$id") | $(parts "$id") | $(busy "$id") | $(pergpu "$id")${pool:+; $pool} |"
  done
done
speedups=
for form in $FORMS; do
  speedups="$speedups
- $form: two GPUs / one GPU $(awk -v a="$(per_min "$form-two")" -v b="$(per_min "$form-one")" 'BEGIN { printf "%.2fx", a / b }'), one GPU through the executor / serial $(awk -v a="$(per_min "$form-one")" -v b="$(per_min "$form-serial")" 'BEGIN { printf "%.2fx", a / b }'); medians concurrent over serial, $(ratio "$form")"
done
report=$(cat <<EOF
### Executors: candidates per minute on one and two GPUs (issue 31), $(date -u +%Y-%m-%d)

\`bench/gpus.sh\` on $device: $STEPS $SURFACE candidates per form (rowsum, BLOCK x an inert PAD), budget ${BUDGET} s, $PER gate servers per GPU.
Per candidate, seconds: built ahead by the executor's compile pool / the server's compile (a cache hit when built ahead) / check / timing / timing-lock wait.

| form | way | wall | candidates/min | ahead / compile / check / timing / lock wait s | GPU busy | judged per GPU |
|---|---|---|---|---|---|---|$rows
$speedups
EOF
)
echo "$report"
[ "$REC" != --record ] || printf '\n%s\n' "$report" >>BENCHMARKS.md
