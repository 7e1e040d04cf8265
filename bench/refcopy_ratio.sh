#!/bin/sh
# A copy of the reference judged against the reference: the speedup must be
# 1.00x +-2% on every example (issue 28 item 4: reference and candidate phases
# under the same cache regime). Prints one row per example: the median
# speedup of RUNS evaluations, its min and max, and whether the median is
# within +-2%.
#
# usage: bench/refcopy_ratio.sh [BUILD_DIR] [SURFACE] [TIMING]
#   BUILD_DIR holds kevo and kevo-worker (default build-h5; on a GPU host:
#   build-gpu); SURFACE cpu (default) or cuda; TIMING kevo (default) or
#   kernelbench (kevo eval --timing kernelbench).
#   RUNS (default 5), BUDGET (seconds per side, default 0.5), TASKS (a
#   space-separated list of task directories, default examples/tasks/*).
set -eu
B=$(cd "${1:-build-h5}" && pwd)
SURF=${2:-cpu}
METHOD=${3:-kevo}
RUNS=${RUNS:-5}
BUDGET=${BUDGET:-0.5}
EXT=$([ "$SURF" = cuda ] && echo cu || echo c)
TASKS=${TASKS:-$(ls -d examples/tasks/*/)}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db" KEVO_CACHE_DIR="$T/cache" KEVO_WORKER="$B/kevo-worker"
for d in $TASKS; do
  d=${d%/}
  name=$(basename "$d")
  [ -f "$d/reference.$EXT" ] || continue
  # A copy under another name: the same source, compiled as a candidate.
  cp "$d/reference.$EXT" "$T/$name-copy.$EXT"
  for i in $(seq "$RUNS"); do
    "$B/kevo" eval --surface "$SURF" --timing "$METHOD" --json --budget "$BUDGET" "$d" \
      "$T/$name-copy.$EXT" >"$T/$name-$i.json" || true
  done
done
python3 - "$T" "$RUNS" "$SURF" "$METHOD" "$BUDGET" <<'PY'
import json, os, statistics as st, sys, datetime
T, RUNS, SURF, METHOD, BUDGET = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
names = sorted({f.rsplit("-", 1)[0] for f in os.listdir(T) if f.endswith(".json")})
print(f"### A copy of the reference against the reference, {SURF} surface, timing {METHOD} "
      f"({datetime.date.today()}, budget {BUDGET} s per side, {RUNS} runs)")
print()
print("| task | verdicts | median speedup | min | max | within +-2% | vs reference beside | alone/beside |")
print("|---|---|---|---|---|---|---|---|")
bad = 0
for n in names:
    sp, verdicts, bes, ab = [], [], [], []
    for i in range(1, RUNS + 1):
        try:
            j = json.load(open(os.path.join(T, f"{n}-{i}.json")))
        except Exception:
            verdicts.append("error")
            continue
        verdicts.append(j.get("verdict") or "error")
        t = j.get("timing") or {}
        if j.get("verdict") == "ok" and t.get("speedup"):
            sp.append(t["speedup"])
            # the same candidate against the reference timed beside it only
            # (kevo takes the faster of beside and alone: a min of two noisy
            # figures, which reads low on a noisy host)
            b, a = t.get("reference_beside_median_us"), (t.get("reference_alone") or {}).get("median_us")
            if b and t.get("median_us"):
                bes.append(b / t["median_us"])
            if a and b:
                ab.append(a / b)
    v = ",".join(sorted(set(verdicts)))
    if not sp:
        print(f"| {n} | {v} | - | - | - | no | - | - |")
        bad += 1
        continue
    m = st.median(sp)
    ok = abs(m - 1) <= 0.02
    bad += not ok
    bm = f"{st.median(bes):.3f}x" if bes else "-"
    am = f"{st.median(ab):.3f}" if ab else "-"
    print(f"| {n} | {v} | {m:.3f}x | {min(sp):.3f}x | {max(sp):.3f}x | {'yes' if ok else 'NO'} | {bm} | {am} |")
print()
print(f"{len(names) - bad} of {len(names)} within 1.00x +-2%")
PY
