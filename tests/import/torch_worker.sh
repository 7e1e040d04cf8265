#!/bin/sh
# The torch reference worker end to end (cpu surface): an imported task
# passes kevo task check, a correct C candidate is judged ok and timed
# against PyTorch (speedup reported), a wrong one is wrong_output, and a
# module with training-mode Dropout is refused as not deterministic.
# Exits 77 (skipped, with a message) when this Python has no torch.
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
KEVO=$1
SRC=$2
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch, so the torch reference worker is not tested here;"
  echo "         install CPU torch (pip install torch) or set KEVO_PYTHON (.ci/run installs it)"
  exit 77
fi
OUT=$(mktemp -d /tmp/kevo-torch-worker-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
T="$OUT/tasks/1_Softmax_rows"

"$KEVO" import -o "$OUT/tasks" "$SRC/examples/kernelbench/1_Softmax_rows.py" >"$OUT/import.log" 2>&1 ||
  { cat "$OUT/import.log"; fail "import of 1_Softmax_rows.py"; }

"$KEVO" task check "$T" >"$OUT/check.log" 2>&1
rc=$?
cat "$OUT/check.log"
[ $rc = 0 ] || fail "task check on the imported task exited $rc"
grep -q "task ok" "$OUT/check.log" || fail "task check did not say ok"

"$KEVO" eval --json "$T" "$SRC/tests/import/torch/softmax_ok.c" >"$OUT/ok.json" 2>"$OUT/ok.err"
rc=$?
cat "$OUT/ok.err"
"$PY" - "$OUT/ok.json" <<'PYEOF' || fail "the correct candidate (exit $rc)"
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing") or {}
print("correct candidate:", r["verdict"], "-", r["detail"])
print("  candidate %.1f us, reference (torch) %.1f us, speedup %.2fx, kevo's clock %.1f us"
      % (t.get("median_us", 0), t.get("reference_median_us", 0), t.get("speedup", 0),
         (t.get("clock") or {}).get("parent_us_per_call", 0)))
assert r["verdict"] == "ok", r["verdict"]
assert t.get("speedup", 0) > 0 and t.get("reference_median_us", 0) > 0, "not timed"
assert len(r["checks"]) >= 4 and all(c["verdict"] == "ok" for c in r["checks"])
PYEOF

"$KEVO" eval --no-timing "$T" "$SRC/tests/import/torch/softmax_wrong.c" >"$OUT/wrong.log" 2>&1
cat "$OUT/wrong.log"
grep -q "verdict: wrong_output" "$OUT/wrong.log" || fail "the wrong candidate is not wrong_output"

"$KEVO" import -o "$OUT/tasks" "$SRC/tests/import/torch/dropout.py" >"$OUT/import2.log" 2>&1 ||
  { cat "$OUT/import2.log"; fail "import of dropout.py"; }
"$KEVO" task check "$OUT/tasks/dropout" >"$OUT/drop.log" 2>&1
rc=$?
cat "$OUT/drop.log"
[ $rc = 1 ] || fail "task check of a Dropout module exited $rc, not 1"
grep -q "same inputs differ" "$OUT/drop.log" || fail "the Dropout module is not refused as random"
echo "1 passed, 0 failed"
