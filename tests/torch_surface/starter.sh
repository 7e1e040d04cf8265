#!/bin/sh
# kevo task starter --surface torch: the task's Model renamed ModelNew
# (whole words only: `class Model(`, `super(Model, self)`; ModelNew or
# MyModel untouched), judged ok by the torch surface; a reference.py without
# a class Model is refused with the reason; python `# kevo:tune` knobs tuned.
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

# Python tunables (issue 29 item 4): `# kevo:tune NAME=...` in the module,
# read as NAME = globals().get("NAME", DEFAULT); kevo run --strategy tune
# judges each value (kevo's `NAME = v` lines first, so kevo's value wins).
export KEVO_DB="$OUT/tune.db"
sed -e 's/^class ModelNew(nn.Module):/# kevo:tune MUL=1,2\nMUL = globals().get("MUL", 2)\n\n&/' \
  -e 's/\* self\.scale$/* self.scale * MUL/' "$OUT/s.py" >"$OUT/tune.py"
grep -q '\* self.scale \* MUL$' "$OUT/tune.py" || { cat "$OUT/tune.py"; fail "tune.py not made"; }
"$KEVO" run --surface torch --strategy tune --no-timing --starter "$OUT/tune.py" "$T" >"$OUT/tune.log" 2>&1 ||
  { cat "$OUT/tune.log"; fail "kevo run --strategy tune on a python starter"; }
v=$(sqlite3 "$KEVO_DB" "select group_concat(params || ':' || verdict, ' ') from (select params, verdict from nodes order by params)")
case "$v" in
  *"MUL=1:ok"*"MUL=2:wrong_output"*) ;;
  *) cat "$OUT/tune.log"; fail "tune verdicts '$v', want MUL=1 ok and MUL=2 wrong_output" ;;
esac
"$KEVO" best >"$OUT/best.py" 2>&1 && grep -q "^# kevo:tuned MUL=1$" "$OUT/best.py" &&
  grep -q "^MUL = 1$" "$OUT/best.py" || { cat "$OUT/best.py"; fail "best is not MUL=1 with kevo's value first"; }
echo "ok: python tunables: MUL=1 ok, MUL=2 wrong_output, best written with kevo's value"
sed 's/globals().get("MUL", 2)/2/' "$OUT/tune.py" >"$OUT/noguard.py"
"$KEVO" run --surface torch --strategy tune --no-timing --starter "$OUT/noguard.py" "$T" >"$OUT/ng.log" 2>&1 &&
  fail "a tunable the module overrides was accepted"
grep -q "MUL = globals().get(\"MUL\", DEFAULT)" "$OUT/ng.log" || { cat "$OUT/ng.log"; fail "no fix named"; }
echo "ok: a module that ignores kevo's value is refused, naming the fix"
