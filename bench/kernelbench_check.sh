#!/bin/bash
# kevo import of KernelBench's levels, then `kevo task check` on every task
# imported, several at a time, with one line per task and a table by level.
#   bench/kernelbench_check.sh KEVO KERNELBENCH_DIR OUTDIR [SURFACE] [JOBS]
# SURFACE: cpu or cuda (default cuda); env DEADLINE: seconds per job (default 60). Writes OUTDIR/import.log,
# OUTDIR/check.tsv (level, task, exit code, seconds, first finding),
# OUTDIR/check/<level>-<task>.json and OUTDIR/per_task.tsv (each problem's
# import and check outcome, cause and seconds); prints the table by level,
# then counts by outcome and cause (bench/kernelbench_summary.py).
# IMPORT_ARGS: more options of kevo import (e.g. "--device-memory 141
# --allow cublas,cudnn"). Modules that import einops need it in KEVO_PYTHON's
# environment (.ci/run installs it in its venv).
set -u
KEVO=$(realpath "$1")
KB=$2
OUT=$3
SURFACE=${4:-cuda}
JOBS=${5:-6}
mkdir -p "$OUT/check"
t0=$(date +%s)
dirs=""
for level in level1 level2 level3; do
  [ -d "$KB/$level" ] && dirs="$dirs $KB/$level"
done
# OUTDIR/tasks from an earlier run (its import.log beside): import is skipped.
if [ ! -d "$OUT/tasks" ]; then
  # shellcheck disable=SC2086
  "$KEVO" import --jobs "$JOBS" ${IMPORT_ARGS:-} -o "$OUT/tasks" $dirs >"$OUT/import.log" 2>&1
fi
tail -n 2 "$OUT/import.log"
t1=$(date +%s)
echo "import: $((t1 - t0)) s"
: >"$OUT/check.tsv"
one() {
  level=$(basename "$(dirname "$1")")
  name=$(basename "$1")
  s=$(date +%s.%N)
  "$KEVO" task check --surface "$SURFACE" --deadline "$DEADLINE" --json "$1" >"$OUT/check/$level-$name.json" 2>"$OUT/check/$level-$name.err"
  rc=$?
  e=$(date +%s.%N)
  first=$(python3 -c 'import json,sys
try:
    f = json.load(open(sys.argv[1])).get("findings") or []
    print((f[0] if f else "").replace("\t", " ").replace("\n", " ")[:300])
except Exception:
    print(open(sys.argv[2]).read().replace("\t", " ").replace("\n", " ")[:300])' \
    "$OUT/check/$level-$name.json" "$OUT/check/$level-$name.err")
  printf '%s\t%s\t%s\t%.1f\t%s\n' "$level" "$name" "$rc" "$(awk "BEGIN{print $e - $s}")" "$first" >>"$OUT/check.tsv"
  echo "$level/$name: exit $rc"
}
export -f one
DEADLINE=${DEADLINE:-60}
export KEVO OUT SURFACE DEADLINE
find "$OUT/tasks" -name task.json | sed 's:/task.json$::' | sort | xargs -P "$JOBS" -I{} bash -c 'one "$1"' _ {}
t2=$(date +%s)
echo "task check: $((t2 - t1)) s"
python3 - "$OUT/check.tsv" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(lambda: [0, 0, 0, []])
for level, name, rc, sec, first in rows:
    b = by[level]
    b[0] += 1
    b[1 if rc == "0" else 2] += 1
    b[3].append(float(sec))
print("| level | checked | ok | refused | median s/task | max s/task |")
print("|---|---|---|---|---|---|")
for level in sorted(by):
    n, ok, bad, secs = by[level]
    secs.sort()
    print("| %s | %d | %d | %d | %.1f | %.1f |" % (level, n, ok, bad, secs[len(secs) // 2], secs[-1]))
PY
python3 "$(dirname "$0")/kernelbench_summary.py" "$OUT"
