#!/bin/bash
# The seconds the profiler (ncu) and the debugger (compute-sanitizer) add per
# candidate (what kv_gate_result reports as profile.seconds, debug.seconds):
# kevo profile and kevo sanitize
# on the six examples' starter and good CUDA kernels; prints a table and the
# medians, and each profile's summary (SOL, occupancy, top stall, top rule).
# Usage: bench/devtools_cost.sh [BUILD_DIR]   (on a GPU host)
set -u
B=${1:-build}; K=$B/kevo
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-$(mktemp -d)}
tmp=$(mktemp -d)
printf "%-11s %-8s %8s %8s\n" task kernel ncu_s sanitize_s
for d in examples/tasks/*/; do
  t=$(basename $d)
  for c in starter good; do
    [ -f $d/$c.cu ] || continue
    $K eval --no-timing --surface cuda --json $d $d/$c.cu >/dev/null 2>&1   # warm the build cache
    $K profile --json $d $d/$c.cu >$tmp/$t-$c-p.json 2>/dev/null
    $K sanitize --json $d $d/$c.cu >$tmp/$t-$c-s.json 2>/dev/null
    python3 - "$t" "$c" "$tmp/$t-$c-p.json" "$tmp/$t-$c-s.json" <<'PY'
import json, sys
t, c, pf, sf = sys.argv[1:]
p = json.load(open(pf)).get("profile", {}); s = json.load(open(sf)).get("debug", {})
print("%-11s %-8s %8.2f %8.2f" % (t, c, p.get("seconds", -1), s.get("seconds", -1)))
for k in p.get("kernels", []):
    r = k["rules"][0]["name"] + " +%.0f%%" % k["rules"][0]["speedup_pct"] if k["rules"] else "-"
    print("    %s: SOL mem %.0f%% sm %.0f%%, occupancy %.0f%%, top stall %s, top rule %s" % (
        k["name"][:40], k["mem_pct"], k["sm_pct"], k["achieved_occupancy_pct"], k["top_stall"] or "-", r))
if p.get("note"): print("    profile note:", p["note"])
if s.get("note") or s.get("findings"): print("    sanitize:", s.get("note"), s.get("findings"))
PY
  done
done | tee $tmp/table.txt
python3 - $tmp/table.txt <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l[:1] != " " and len(l.split()) == 4]
for i, name in ((2, "ncu"), (3, "compute-sanitizer")):
    v = [float(r[i]) for r in rows if float(r[i]) >= 0]
    if v: print("median seconds added by %s: %.2f over %d kernels" % (name, statistics.median(v), len(v)))
PY
