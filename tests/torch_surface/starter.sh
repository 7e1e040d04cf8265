#!/bin/sh
# kevo task starter --surface torch: the task's Model renamed ModelNew
# (whole words only: `class Model(`, `super(Model, self)`; ModelNew or
# MyModel untouched), judged ok by the torch surface; a reference.py without
# a class Model is refused with the reason.
#   starter.sh KEVO SRC        (exits 77, skipped, without torch)
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
OUT=$(mktemp -d /tmp/kevo-tstarter-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

T=$SRC/tests/torch_surface/task
"$KEVO" task starter --surface torch "$T" -o "$OUT/s.py" 2>"$OUT/gen" || { cat "$OUT/gen"; fail "starter"; }
grep -q "^class ModelNew(nn.Module):" "$OUT/s.py" || fail "no class ModelNew"
grep -q "class Model(" "$OUT/s.py" && fail "class Model left"
"$KEVO" eval --surface torch --no-timing "$T" "$OUT/s.py" >"$OUT/eval.log" 2>&1
rc=$?
grep -q "^verdict: ok" "$OUT/eval.log" && [ $rc = 0 ] || { cat "$OUT/eval.log"; fail "the starter is not ok (exit $rc)"; }
echo "ok: the torch starter of $(basename "$T") is judged ok"

# Whole words, in the field's own style (super(Model, self)).
mkdir -p "$OUT/kb"
cp "$T/task.json" "$OUT/kb/"
cat >"$OUT/kb/reference.py" <<'PY'
import torch
import torch.nn as nn

class MyModel(nn.Module):
    pass

class Model(nn.Module):
    """Model: a Model of ModelNew-free text."""
    def __init__(self):
        super(Model, self).__init__()
PY
"$KEVO" task starter --surface torch "$OUT/kb" -o "$OUT/kb.py" 2>/dev/null || fail "starter of the super(Model, self) file"
grep -q "super(ModelNew, self).__init__()" "$OUT/kb.py" && grep -q "^class MyModel(nn.Module):" "$OUT/kb.py" &&
  grep -q '"""ModelNew: a ModelNew of ModelNew-free text."""' "$OUT/kb.py" ||
  { cat "$OUT/kb.py"; fail "the rename is not whole-word"; }
echo "ok: whole-word rename"

printf 'import torch\nclass Net(torch.nn.Module):\n    pass\n' >"$OUT/kb/reference.py"
"$KEVO" task starter --surface torch "$OUT/kb" -o "$OUT/none.py" >"$OUT/none.log" 2>&1 && fail "no class Model, yet a starter"
grep -q "defines no class Model" "$OUT/none.log" || { cat "$OUT/none.log"; fail "no reason given"; }
echo "ok: no class Model: refused with the reason"
