#!/bin/sh
# Two gates side by side on the examples' good kernels: speedup, candidate and
# reference medians, and seconds from source to verdict, the median of RUNS
# runs of each, the two gates alternating (OLD first, then NEW, RUNS times).
# usage: bench/gate_compare.sh OLD_BUILD NEW_BUILD [SURFACE] [OUT_MD]
# (OLD_BUILD and NEW_BUILD each hold kevo and kevo-worker)
set -eu
OLD=$1
NEW=$2
SURF=${3:-cuda}
OUTMD=${4:-}
RUNS=${RUNS:-3}
BUDGET=${BUDGET:-0.5}
EXT=$([ "$SURF" = cuda ] && echo cu || echo c)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
for d in examples/tasks/*/; do
  name=$(basename "$d")
  [ -f "$d/good.$EXT" ] || continue
  for i in $(seq "$RUNS"); do
    for g in old new; do
      B=$(cd "$([ $g = old ] && echo "$OLD" || echo "$NEW")" && pwd)
      export KEVO_CACHE_DIR="$T/cache-$g" KEVO_WORKER="$B/kevo-worker"
      s=$(date +%s.%N)
      "$B/kevo" eval --surface "$SURF" --json --budget "$BUDGET" "$d" "$d/good.$EXT" >"$T/$name-$g-$i.json" || true
      e=$(date +%s.%N)
      python3 -c "print($e - $s)" >"$T/$name-$g-$i.s"
    done
  done
done
python3 - "$T" "$RUNS" "$SURF" "$BUDGET" >"$T/table.md" <<'PY'
import json, os, statistics as st, sys, datetime
T, RUNS, SURF, BUDGET = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = sorted({f.split("-")[0] for f in os.listdir(T) if f.endswith(".json")})
dev = ""
print(f"### Old gate vs new gate, {SURF} surface ({datetime.date.today()}, budget {BUDGET} s per side, median of {RUNS})")
print()
print("| task | gate | verdict | speedup | cand us | ref us | timing s | total s | new/old speedup |")
print("|---|---|---|---|---|---|---|---|---|")
for n in names:
    sp = {}
    for g in ("old", "new"):
        js, secs = [], []
        for i in range(1, RUNS + 1):
            try:
                js.append(json.load(open(f"{T}/{n}-{g}-{i}.json")))
                secs.append(float(open(f"{T}/{n}-{g}-{i}.s").read()))
            except Exception:
                pass
        if not js:
            continue
        dev = js[0].get("device", dev)
        t = [j.get("timing", {}) for j in js]
        med = lambda k: st.median([x.get(k, 0) for x in t]) if t else 0
        sp[g] = med("speedup")
        ratio = f"{sp['new'] / sp['old']:.3f}" if g == "new" and sp.get("old") else ""
        v = ",".join(sorted({j["verdict"] for j in js}))
        print(f"| {n} | {g} | {v} | {sp[g]:.2f}x | {med('median_us'):.1f} | {med('reference_median_us'):.1f} | "
              f"{st.median([j['seconds']['timing'] for j in js]):.2f} | {st.median(secs):.2f} | {ratio} |")
print()
print(f"Device: {dev}")
PY
cat "$T/table.md"
[ -n "$OUTMD" ] && cat "$T/table.md" >>"$OUTMD"
exit 0
