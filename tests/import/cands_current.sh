#!/bin/sh
# bench/kernelbench_cands/tasks/NAME/task.json is what kevo import made of
# NAME's problem when its candidate was written; test_cuda_compile compiles
# each candidate against that task's generated prototype. This test keeps the
# stored tasks current: each problem (its reference.py) is imported again
# and its entry (name, every param's name, role, dtype, shape and packed
# tensors) must be the stored one, so a change to what kevo import
# generates fails here until the task and its candidate are updated
# (issue 27 item 7).
#   cands_current.sh KEVO SRC
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
KEVO=$1
SRC=$2
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch; install CPU torch (pip install torch) or set KEVO_PYTHON"
  exit 77
fi
OUT=$(mktemp -d /tmp/kevo-cands-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
C=$SRC/bench/kernelbench_cands/tasks
mkdir -p "$OUT/mods"
n=0
for d in "$C"/*/; do
  name=$(basename "$d")
  cp "$d/reference.py" "$OUT/mods/$name.py"
  n=$((n + 1))
done
# the allow list is not in the prototype; each task's own is passed again below
KEVO_IMPORT_STARTER=0 "$KEVO" import -o "$OUT/tasks" --jobs 2 "$OUT/mods" >"$OUT/import.log" 2>&1 ||
  { cat "$OUT/import.log"; fail "import"; }
"$PY" - "$C" "$OUT/tasks/mods" <<'PYEOF' || fail "a stored task is not what kevo import makes now"
import json, os, sys
stored, fresh = sys.argv[1], sys.argv[2]
def entry(path):
    t = json.load(open(os.path.join(path, "task.json")))
    ps = [(p["name"], p["role"], p.get("dtype"), tuple(p.get("shape", [])),
           tuple((m["name"], tuple(m["shape"])) for m in p.get("pack", []))) for p in t["params"]]
    return t["entry"], ps
bad = 0
for name in sorted(os.listdir(stored)):
    a, b = entry(os.path.join(stored, name)), entry(os.path.join(fresh, name))
    if a != b:
        bad += 1
        print("%s: the stored task.json's entry differs from kevo import's now:" % name)
        print("  stored: %s %s" % (a[0], a[1]))
        print("  now:    %s %s" % (b[0], b[1]))
        print("  import the problem again into bench/kernelbench_cands/tasks/%s and update "
              "its candidates" % name)
    else:
        print("%s: current (%d params)" % (name, len(a[1])))
sys.exit(1 if bad else 0)
PYEOF
echo "PASS: the $n stored tasks of bench/kernelbench_cands are what kevo import makes now"
