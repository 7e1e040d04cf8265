#!/bin/sh
# kevo import end to end with a real Python and torch (CPU): the examples
# import, every bad module is refused with its cause and the file named,
# nothing is half-written, and task check says where the reference is.
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
  echo "SKIPPED: $PY cannot import torch, so kevo import is not tested end to end here;"
  echo "         install CPU torch (pip install torch) or set KEVO_PYTHON (.ci/run installs it)"
  exit 77
fi
OUT=$(mktemp -d /tmp/kevo-import-e2e-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$KEVO" import -o "$OUT/ok" --jobs 2 "$SRC/examples/kernelbench" >"$OUT/ok.log" 2>&1
rc=$?
cat "$OUT/ok.log"
[ $rc = 0 ] || fail "importing examples/kernelbench exited $rc"
for t in 1_Softmax_rows 2_Linear_GELU_Scale 3_Small_ConvNet; do
  d="$OUT/ok/kernelbench/$t"
  [ -f "$d/task.json" ] && [ -f "$d/README.md" ] || fail "$t: no task.json or README.md"
  cmp -s "$d/reference.py" "$SRC/examples/kernelbench/$t.py" || fail "$t: reference.py differs"
done
grep -q '"hidden\*2"' "$OUT/ok/kernelbench/3_Small_ConvNet/task.json" || fail "no hidden*2 shape"

# task check on an imported task: the torch reference worker runs it
# (tests/import/torch_worker.sh tests it further).
"$KEVO" task check "$OUT/ok/kernelbench/1_Softmax_rows" >"$OUT/check.log" 2>&1
rc=$?
cat "$OUT/check.log"
[ $rc = 0 ] || fail "task check on an imported task exited $rc, not 0"

# Sizes tied by the module's arithmetic (KernelBench level2/30 and 37 were
# refused by task check for these): equal constants feeding different dims
# keep their own names in the shapes though a GroupNorm rejects the probe
# with every constant a different multiple, and a size that a constant must
# divide is scaled down with it (apart, no floor builds). task check runs
# the reference at every check size of both.
# And a pooled convolution whose output height two expressions give at every
# power-of-two size (KernelBench level2/82 and 85): the odd-size probes and
# the smallest offset pick the module's own, checked at a height of 34.
TIED="$SRC/tests/import/torch/tied_equal.py $SRC/tests/import/torch/tied_divisible.py $SRC/tests/import/torch/odd_pool.py"
# shellcheck disable=SC2086
"$KEVO" import -o "$OUT/tied" $TIED >"$OUT/tied.log" 2>&1
rc=$?
cat "$OUT/tied.log"
[ $rc = 0 ] || fail "importing tests/import/torch/tied_*.py exited $rc, not 0"
"$PY" - "$OUT/tied" <<'PYEOF' || fail "tied constants: wrong shapes or check sizes"
import json, sys
eq = json.load(open(sys.argv[1] + "/tied_equal/task.json"))
shape = {p["name"]: p.get("shape") for p in eq["params"]}
assert shape["gemm_weight"] == ["out_features", "in_features"], shape["gemm_weight"]
assert shape["out"] == ["batch_size", "out_features"], shape["out"]
dv = json.load(open(sys.argv[1] + "/tied_divisible/task.json"))
assert len(dv["check"]) == 2, dv["check"]
for s in dv["check"]:
    assert s["num_groups"] < 64 and s["out_features"] % s["num_groups"] == 0, s
# A check size the import never ran, in_features apart from out_features:
# the shapes above must still give the model's tensors.
eq["check"].append({"batch_size": 8, "in_features": 8, "out_features": 16, "num_groups": 8})
json.dump(eq, open(sys.argv[1] + "/tied_equal/task.json", "w"), indent=2)
op = json.load(open(sys.argv[1] + "/odd_pool/task.json"))
shape = {p["name"]: p.get("shape") for p in op["params"]}
assert shape["out"][2:] == ["(height-kernel_size+1)/4", "(width-kernel_size+1)/4"], shape["out"]
# (height - in_channels + 6) / 4, the old fit, gives 9 here where the model gives 8.
op["check"].append({"batch_size": 2, "in_channels": 4, "out_channels": 4, "height": 34,
                    "width": 35, "kernel_size": 3})
json.dump(op, open(sys.argv[1] + "/odd_pool/task.json", "w"), indent=2)
PYEOF
for t in tied_equal tied_divisible odd_pool; do
  "$KEVO" task check --surface cpu "$OUT/tied/$t" >"$OUT/tied-check.log" 2>&1
  rc=$?
  cat "$OUT/tied-check.log"
  [ $rc = 0 ] || fail "task check on $t exited $rc, not 0"
done

"$KEVO" import -o "$OUT/bad" --deadline 20 "$SRC/tests/import/bad" >"$OUT/bad.log" 2>&1
rc=$?
cat "$OUT/bad.log"
[ $rc = 1 ] || fail "importing tests/import/bad exited $rc, not 1"
grep -q "0 of 7 modules imported" "$OUT/bad.log" || fail "a bad module was imported"
expect() { # cause file
  grep -A8 "^skipped, $1 " "$OUT/bad.log" | grep -q "$2" || fail "$2 is not skipped as $1"
}
expect no_model no_model.py
expect syntax syntax_error.py
expect not_tensor not_tensor.py
expect too_large huge_inputs.py
expect timeout hangs.py
expect crash segfaults.py
expect dtype complex_dtype.py
grep -q "SEGV" "$OUT/bad.log" || fail "the segfault is not named"
[ -z "$(ls -A "$OUT/bad" 2>/dev/null)" ] || fail "something was left in $OUT/bad: $(ls -A "$OUT/bad")"

# A hostile module (issue 30): at import it tries the network, a write
# outside its scratch and a read of a private file, then shows what it read
# in its error. Run by plain Python, all three work (the test can fail); run
# by kevo import (and so by kevo synthesize, which imports what a model
# wrote), none does.
mkdir -p "$OUT/hostile"
printf 'kevo-secret-%s\n' "$$" >"$OUT/secret.txt"
chmod 600 "$OUT/secret.txt"
"$PY" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
s.settimeout(90); end = time.time() + 90
while time.time() < end:
    try:
        c, _ = s.accept(); open(sys.argv[2], "a").write("connected\n"); c.close()
    except OSError:
        break' "$OUT/port" "$OUT/connections" &
LPID=$!
i=0
while [ ! -s "$OUT/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
cat >"$OUT/hostile/hostile.py" <<PYEOF
import socket
import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.rand(8)]


def get_init_inputs():
    return []


try:
    socket.create_connection(("127.0.0.1", $(cat "$OUT/port")), timeout=2).close()
except Exception:
    pass
try:
    open("$OUT/planted", "w").write("planted by a module")
except Exception:
    pass
try:
    SECRET = open("$OUT/secret.txt").read()
except Exception as e:
    SECRET = "denied (%s)" % type(e).__name__
raise RuntimeError("the module read: " + SECRET)
PYEOF
# lines N: waits (at most 10 s) until the listener has recorded N
# connections, then prints how many it has.
lines() {
  i=0
  while [ "$(cat "$OUT/connections" 2>/dev/null | wc -l)" -lt "$1" ] && [ $i -lt 200 ]; do
    sleep 0.05
    i=$((i + 1))
  done
  cat "$OUT/connections" 2>/dev/null | wc -l | tr -d ' '
}
"$PY" "$OUT/hostile/hostile.py" >"$OUT/plain.log" 2>&1
lines 1 >/dev/null
{ grep -q "kevo-secret-$$" "$OUT/plain.log" && [ -f "$OUT/planted" ] && [ -s "$OUT/connections" ]; } ||
  fail "unsandboxed, the hostile module did not do all three (the test cannot show the sandbox)"
rm -f "$OUT/planted" "$OUT/connections"
"$KEVO" import -o "$OUT/hostile-out" "$OUT/hostile/hostile.py" >"$OUT/hostile.log" 2>&1
cat "$OUT/hostile.log"
# A connection of the test's own, after the import: the listener takes them
# in order, so once it has recorded one, a module's would be there before it.
"$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()' "$(cat "$OUT/port")"
got=$(lines 1)
kill $LPID 2>/dev/null
grep -q "kevo-secret-$$" "$OUT/hostile.log" && fail "kevo import: the module read a private file"
[ -f "$OUT/planted" ] && fail "kevo import: the module wrote outside its scratch"
[ "$got" = 1 ] || fail "kevo import: the module reached a local port ($got connections, the test's own one of them)"
grep -q "the module read: denied (PermissionError)" "$OUT/hostile.log" ||
  fail "kevo import: the module's read was not denied as expected"
echo "1 passed, 0 failed"
