#!/bin/sh
# tune throughput on this machine's GPU, the kernel-only path (NVRTC) against
# the host-entry path (nvcc), side by side in one run: `kevo run --strategy
# tune` over the 20 variants of bench/nvrtc/rowsum_tune.cu (nvcc) and
# rowsum_tune_k.cu (NVRTC) on tests/gpu/rowsum, variants judged per minute
# (the reference cached first). Source to verdict per new candidate is
# bench/verdict_latency.py's (it was this script's first part).
# usage: bench/nvrtc_latency.sh [BUILD_DIR] [OUT_MD]     (OUT_MD: the table appended there)
# env:   BUDGET (0.5 s per side), STEPS (20 tune variants)
set -eu
B=${1:-build}
OUTMD=${2:-}
K="$B/kevo"
BUDGET=${BUDGET:-0.5}
STEPS=${STEPS:-20}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="$T/calib"
"$K" device --surface cuda >/dev/null 2>&1
dev=$("$K" device --surface cuda --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
out="$T/table.md"
echo "### tune throughput, NVRTC against nvcc ($(date -u +%Y-%m-%d), $dev, budget $BUDGET s per side)" >"$out"
{
  echo
  echo "| tune (tests/gpu/rowsum, $STEPS variants) | wall s | variants/min | accepted | best speedup |"
  echo "|---|---|---|---|---|"
} | tee -a "$out"
for form in nvcc nvrtc; do
  src=bench/nvrtc/rowsum_tune.cu
  [ "$form" = nvrtc ] && src=bench/nvrtc/rowsum_tune_k.cu
  export KEVO_CACHE_DIR="$T/tune-$form"
  export KEVO_DB="$T/tune-$form.db"
  mkdir -p "$KEVO_CACHE_DIR" && cp "$T/calib/calib-cuda.json" "$KEVO_CACHE_DIR/"
  "$K" eval --surface cuda --json --no-timing tests/gpu/rowsum tests/gpu/cands/good.cu >/dev/null 2>&1 || true
  s=$(date +%s.%N)
  "$K" run --strategy tune --surface cuda --steps "$STEPS" --budget "$BUDGET" --starter "$src" \
    -o "$T/best-$form.cu" tests/gpu/rowsum >"$T/tune-$form.log" 2>&1 && rc=0 || rc=$?
  e=$(date +%s.%N)
  python3 - "$form" "$s" "$e" "$T/tune-$form.log" "$STEPS" "$rc" <<'PY' | tee -a "$out"
import re, sys
form, s, e, log, steps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), open(sys.argv[4]).read(), int(sys.argv[5])
if sys.argv[6] != "0":
    last = [l for l in log.splitlines() if l.strip()][-1:] or ["?"]
    print("| %s | failed (exit %s): %s | | | |" % (form, sys.argv[6], last[0][:120]))
    sys.exit()
w = e - s
acc = re.findall(r"accepted (\d+)", log)
best = re.findall(r"best ([0-9.]+x)", log)
print("| %s | %.1f | %.1f | %s | %s |" % (form, w, steps / w * 60, acc[-1] if acc else "?",
                                         best[-1] if best else "?"))
PY
  tail -3 "$T/tune-$form.log"
done
if [ -n "$OUTMD" ]; then
  { echo; cat "$out"; } >>"$OUTMD"
fi
