#!/bin/sh
# The kernel-only path (NVRTC) against the host-entry path (nvcc), side by
# side in one run on this machine's GPU:
#  1. source to verdict per new candidate: each example's good.cu (nvcc) and
#     good_k.cu (kernel-only, NVRTC), RUNS runs each, as a candidate never
#     seen before (a unique comment; the task's reference and shim cached:
#     the cost of each candidate in a search) and cold (a fresh
#     KEVO_CACHE_DIR holding only the device calibration); compile seconds
#     alone beside the totals; the median over the six examples;
#  2. tune throughput: `kevo run --strategy tune` over the 20 variants of
#     bench/nvrtc/rowsum_tune.cu (nvcc) and rowsum_tune_k.cu (NVRTC) on
#     tests/gpu/rowsum, variants judged per minute (the reference cached first).
# usage: bench/nvrtc_latency.sh [BUILD_DIR] [OUT_MD]     (OUT_MD: the tables appended there)
# env:   RUNS (3), BUDGET (0.5 s per side), STEPS (20 tune variants),
#        CACHES ("new cold": which of the two; "new" alone for a quick
#        before/after; empty skips part 1), TUNE (1; 0 skips part 2)
set -eu
B=${1:-build}
OUTMD=${2:-}
K="$B/kevo"
RUNS=${RUNS:-3}
BUDGET=${BUDGET:-0.5}
STEPS=${STEPS:-20}
CACHES=${CACHES-new cold}
export CACHES
TUNE=${TUNE:-1}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
export KEVO_CACHE_DIR="$T/calib"
"$K" device --surface cuda >/dev/null 2>&1
dev=$("$K" device --surface cuda --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])')
tk=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo 'nvcc ?')
out="$T/table.md"
{
  echo "### Kernel-only (NVRTC) vs host-entry (nvcc), cuda surface ($(date -u +%Y-%m-%d), $dev, $(nproc) CPU cores, CUDA $tk (nvcc and NVRTC), budget $BUDGET s per side, median of $RUNS)"
  echo
  echo "| task | form | cache | total s | compile s | check s | timing s | warm-up / loop / validate / alone s | rounds (stop), validated | verdict | cand us | speedup |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$out"
cat "$out"
: >"$T/all"
for d in $([ -n "$CACHES" ] && echo examples/tasks/*/); do
  [ -f "$d/good_k.cu" ] || continue
  name=$(basename "$d")
  : >"$T/runs"
  for form in nvcc nvrtc; do
    src="$d/good.cu"
    [ "$form" = nvrtc ] && src="$d/good_k.cu"
    # The task's reference and shim, built once into the "new" cache.
    export KEVO_CACHE_DIR="$T/new-$name"
    mkdir -p "$KEVO_CACHE_DIR" && cp "$T/calib/calib-cuda.json" "$KEVO_CACHE_DIR/"
    "$K" eval --surface cuda --json --no-timing "$d" "$src" >/dev/null 2>&1 || true
    for cache in $CACHES; do
      for i in $(seq "$RUNS"); do
        cand="$T/$form-$name-$cache-$i.cu"
        { cat "$src"; echo "// a new candidate $i $$ $cache"; } >"$cand"
        if [ "$cache" = cold ]; then
          export KEVO_CACHE_DIR="$T/cold-$form-$name-$i"
          mkdir -p "$KEVO_CACHE_DIR" && cp "$T/calib/calib-cuda.json" "$KEVO_CACHE_DIR/"
        else
          export KEVO_CACHE_DIR="$T/new-$name"
        fi
        s=$(date +%s.%N)
        "$K" eval --surface cuda --json --budget "$BUDGET" "$d" "$cand" >"$T/r-$form-$cache-$i.json" || true
        e=$(date +%s.%N)
        echo "$form $cache $s $e $T/r-$form-$cache-$i.json" >>"$T/runs"
      done
    done
  done
  python3 - "$T/runs" "$name" "$T/all" <<'PY' | tee -a "$out"
import json, os, sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
allf = open(sys.argv[3], "a")
for cache in os.environ.get("CACHES", "new cold").split():
    for form in ("nvcc", "nvrtc"):
        rs = []
        for f, c, s, e, p in rows:
            if f == form and c == cache:
                try:
                    rs.append((float(e) - float(s), json.load(open(p))))
                except Exception:
                    pass
        if not rs:
            print("| %s | %s | %s | kevo failed | | | | | | | | |" % (sys.argv[2], form, cache))
            continue
        med = lambda f: st.median(f(w, j) for w, j in rs)
        j = rs[-1][1]
        t = j.get("timing") or {}
        tot, comp = med(lambda w, j: w), med(lambda w, j: j["seconds"]["compile"])
        allf.write("%s %s %s %.4f %.4f\n" % (sys.argv[2], form, cache, tot, comp))
        sg = lambda k: med(lambda w, j: ((j.get("timing") or {}).get("stages") or {}).get(k, 0))
        rounds = ", ".join("%s (%s)" % (((j.get("timing") or {}).get("ci") or {}).get("phases", "?"),
                                        ((j.get("timing") or {}).get("ci") or {}).get("stop", "?"))
                           for w, j in rs)
        valid = ", ".join(str(((j.get("timing") or {}).get("clock") or {}).get("validated_calls", "?"))
                          for w, j in rs)
        print("| %s | %s | %s | %.2f | %.3f | %.2f | %.2f | %s | %s; %s | %s | %s | %s |" % (
            sys.argv[2], form, cache, tot, comp, med(lambda w, j: j["seconds"]["check"]),
            med(lambda w, j: j["seconds"]["timing"]),
            " / ".join("%.2f" % sg(k) for k in ("warmup", "loop", "validate", "alone")), rounds,
            valid, j["verdict"],
            "%.1f" % med(lambda w, j: j["timing"]["median_us"]) if t else "",
            "%.2fx" % med(lambda w, j: j["timing"]["speedup"]) if t else ""))
PY
done
python3 - "$T/all" <<'PY' | tee -a "$out"
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
print()
print("| median over the examples | cache | total s | compile s |")
print("|---|---|---|---|")
for cache in ("new", "cold"):
    for form in ("nvcc", "nvrtc"):
        r = [(float(t), float(c)) for n, f, ca, t, c in rows if f == form and ca == cache]
        if r:
            print("| %s | %s | %.2f | %.3f |" % (form, cache, st.median(x for x, _ in r),
                                               st.median(y for _, y in r)))
PY

# Tune throughput: the same 20 variants, each form; the reference cached first.
if [ "$TUNE" = 0 ]; then
  [ -z "$OUTMD" ] || { echo; cat "$out"; } >>"$OUTMD"
  exit 0
fi
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
