#!/bin/sh
# The torch reference worker end to end: an imported task passes kevo task
# check, a correct candidate is judged ok and timed against PyTorch (speedup
# reported) and against the module under torch.compile (a baseline), a wrong
# one is wrong_output, and a module with training-mode Dropout is refused as
# not deterministic.
#   torch_worker.sh KEVO SRC [cpu|cuda]
# cpu (the default): C candidates, torch on the CPU. cuda (ctest label gpu):
# CUDA candidates, torch on the GPU.
# Exits 77 (skipped, with a message) when this Python has no torch.
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
KEVO=$1
SRC=$2
SURFACE=${3:-cpu}
EXT=c
[ "$SURFACE" = cuda ] && EXT=cu
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

"$KEVO" task check --surface "$SURFACE" "$T" >"$OUT/check.log" 2>&1
rc=$?
cat "$OUT/check.log"
[ $rc = 0 ] || fail "task check on the imported task exited $rc"
grep -q "task ok" "$OUT/check.log" || fail "task check did not say ok"

"$KEVO" eval --surface "$SURFACE" --json "$T" "$SRC/tests/import/torch/softmax_ok.$EXT" >"$OUT/ok.json" 2>"$OUT/ok.err"
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

# The same candidate against the module under torch.compile too (the baseline
# the field reports): compiled before timing, its compile time apart.
"$KEVO" eval --surface "$SURFACE" --json --budget 0.2 --torch-compile default "$T" \
  "$SRC/tests/import/torch/softmax_ok.$EXT" \
  >"$OUT/compiled.json" 2>"$OUT/compiled.err"
rc=$?
cat "$OUT/compiled.err"
"$PY" - "$OUT/compiled.json" <<'PYEOF' || fail "the torch.compile baseline (exit $rc)"
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing") or {}
print("vs torch.compile:", r["verdict"], "- speedup %.2fx vs eager, %.2fx vs %s (compiled in %.1f s)"
      % (t.get("speedup", 0), t.get("speedup_vs_baseline", 0), t.get("baseline_kind"),
         t.get("baseline_compile_s", 0)))
assert r["verdict"] == "ok", r["verdict"]
assert t.get("baseline_kind") == "torch.compile(mode=default)", t.get("baseline_kind")
assert t.get("speedup_vs_baseline", 0) > 0 and t.get("baseline_median_us", 0) > 0, "not timed"
assert t.get("baseline_compile_s", 0) > 0, "no compile time"
PYEOF
"$KEVO" eval --torch-compile fastest "$T" "$SRC/tests/import/torch/softmax_ok.c" >"$OUT/badmode.log" 2>&1
[ $? = 2 ] && grep -q "use default, reduce-overhead" "$OUT/badmode.log" ||
  fail "an unknown torch.compile mode is not refused: $(cat "$OUT/badmode.log")"

"$KEVO" eval --surface "$SURFACE" --no-timing "$T" "$SRC/tests/import/torch/softmax_wrong.$EXT" >"$OUT/wrong.log" 2>&1
cat "$OUT/wrong.log"
grep -q "verdict: wrong_output" "$OUT/wrong.log" || fail "the wrong candidate is not wrong_output"

"$KEVO" import -o "$OUT/tasks" "$SRC/tests/import/torch/dropout.py" >"$OUT/import2.log" 2>&1 ||
  { cat "$OUT/import2.log"; fail "import of dropout.py"; }
"$KEVO" task check --surface "$SURFACE" "$OUT/tasks/dropout" >"$OUT/drop.log" 2>&1
rc=$?
cat "$OUT/drop.log"
[ $rc = 1 ] || fail "task check of a Dropout module exited $rc, not 1"
grep -q "different answers on the same inputs" "$OUT/drop.log" || fail "the Dropout module is not refused as random"
echo "1 passed, 0 failed"
