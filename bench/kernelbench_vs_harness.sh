#!/bin/bash
# Hand-written CUDA kernels for three KernelBench problems, judged by kevo and
# by KernelBench's method (bench/kernelbench_harness.py) on the same GPU:
#   bench/kernelbench_vs_harness.sh KEVO KERNELBENCH_DIR OUTDIR [NAME...]
# For each problem in bench/kernelbench_cands: kevo import, `kevo eval
# --surface cuda --torch-compile default` of the correct kernel (verdict,
# speedup vs eager and vs compile), `kevo eval` of the wrong one (must be
# rejected), then the harness on the correct one. Writes OUTDIR/*.json and
# prints a table.
set -u
KEVO=$(realpath "$1")
KB=$2
OUT=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
for c in "$HERE"/kernelbench_cands/*.cu; do
  case $c in *.wrong.cu) continue ;; esac
  name=$(basename "$c" .cu)
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  prob=$(ls "$KB"/level*/"$name.py" | head -n 1)
  "$KEVO" import --force -o "$OUT/tasks" "$prob" >"$OUT/$name.import.log" 2>&1 || { cat "$OUT/$name.import.log"; continue; }
  t=$(dirname "$(find "$OUT/tasks" -path "*/$name/task.json" | head -n 1)")
  "$KEVO" eval --surface cuda --json --torch-compile default "$t" "$c" >"$OUT/$name.kevo.json" 2>"$OUT/$name.kevo.err"
  "$KEVO" eval --surface cuda --json --no-timing "$t" "${c%.cu}.wrong.cu" >"$OUT/$name.wrong.json" 2>"$OUT/$name.wrong.err"
  python3 "$HERE/kernelbench_harness.py" "$prob" "$t" "$c" >"$OUT/$name.harness.json" 2>"$OUT/$name.harness.err"
  tail -n 3 "$OUT/$name.kevo.err" "$OUT/$name.harness.err"
done
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("| problem | kevo verdict | kevo cand us | kevo eager us | kevo compile us | kevo x eager | kevo x compile | wrong kernel | harness correct | harness cand us (mean) | harness eager us | harness compile us | harness x eager | harness x compile |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for f in sorted(glob.glob(os.path.join(out, "*.kevo.json"))):
    name = os.path.basename(f)[:-len(".kevo.json")]
    def load(suffix):
        try:
            return json.load(open(os.path.join(out, name + suffix)))
        except Exception as e:
            return {"verdict": "error: %s" % e}
    k, w, h = load(".kevo.json"), load(".wrong.json"), load(".harness.json")
    t = k.get("timing") or {}
    row = [name, k.get("verdict"), "%.1f" % t.get("median_us", 0), "%.1f" % t.get("reference_median_us", 0),
           "%.1f" % t.get("baseline_median_us", 0), "%.2f" % t.get("speedup", 0),
           "%.2f" % t.get("speedup_vs_baseline", 0), w.get("verdict"),
           "%s/5" % h.get("correct_trials", "?")]
    if "new" in h:
        row += ["%.1f" % h["new"]["mean_us"], "%.1f" % h["eager"]["mean_us"], "%.1f" % h["compile"]["mean_us"],
                "%.2f" % h["speedup_vs_eager"], "%.2f" % h["speedup_vs_compile"]]
    else:
        row += ["-"] * 5
    print("| " + " | ".join(str(x) for x in row) + " |")
PY
