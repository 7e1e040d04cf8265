#!/bin/sh
# kevo import of what KernelBench has and kevo once refused, end to end:
#  - a network with more weights than an entry's 32 params (torch/deep_mlp.py:
#    36 Linear weights and a BatchNorm): its weights are packed into read-only
#    buffers, the prototype and README show the table, kevo task check passes
#    (the torch worker binds the packed weights to the Model), a C candidate
#    that reads the table is ok and one that reads the layers in reverse is
#    wrong_output;
#  - a Python float in get_inputs() (deep_mlp.py's scale): a scalar param;
#  - a 6 GiB input (torch/big_input.py): within the caps of the 80 GiB kevo
#    assumes, refused under --device-memory 16 and KEVO_DEVICE_MEMORY_GIB=16
#    with a message naming the cap and how to change it;
#  - --allow cublas,cudnn writes task.json's allow; an unknown name is refused;
#  - a module that imports einops: imported where KEVO_PYTHON has einops,
#    else refused as missing_module naming pip install einops.
#   pack.sh KEVO SRC
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
  echo "SKIPPED: $PY cannot import torch; install CPU torch (pip install torch) or set KEVO_PYTHON"
  exit 77
fi
unset KEVO_DEVICE_MEMORY_GIB
OUT=$(mktemp -d /tmp/kevo-import-pack-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
M=$SRC/tests/import/torch
T=$OUT/tasks/deep_mlp

"$KEVO" import -o "$OUT/tasks" --allow cublas,cudnn "$M/deep_mlp.py" >"$OUT/import.log" 2>&1 ||
  { cat "$OUT/import.log"; fail "import of deep_mlp.py"; }
"$PY" - "$T/task.json" <<'PYEOF' || fail "deep_mlp's task.json"
import json, sys
t = json.load(open(sys.argv[1]))
ps = {p["name"]: p for p in t["params"]}
assert t["allow"] == ["cublas", "cudnn"], t.get("allow")
assert ps["scale"] == {"name": "scale", "role": "scalar", "dtype": "f32", "value": 0.5}, ps["scale"]
w = ps["weights_0"]
assert [m["name"] for m in w["pack"]][:3] == ["layers.0.weight", "layers.0.bias", "layers.1.weight"]
assert len(w["pack"]) == 36 and w["shape"] == ["18*hidden*hidden + 18*hidden"], w["shape"]
assert len(t["params"]) <= 32
print("deep_mlp: %d params, weights_0 packs %d tensors" % (len(t["params"]), len(w["pack"])))
PYEOF
grep -q "^/\*   17\*hidden\*hidden + 17\*hidden  layers.17.weight \[hidden\]\[hidden\] \*/" "$T/README.md" ||
  fail "README.md does not show the table of weights_0"
grep -q "A candidate may call cublas and cudnn" "$T/README.md" || fail "README.md does not say what is allowed"

"$KEVO" task check --surface cpu "$T" >"$OUT/check.log" 2>&1
rc=$?
cat "$OUT/check.log"
[ $rc = 0 ] && grep -q "task ok" "$OUT/check.log" || fail "task check of deep_mlp exited $rc"
"$KEVO" eval --surface cpu --no-timing "$T" "$M/deep_mlp_ok.c" >"$OUT/ok.log" 2>&1
cat "$OUT/ok.log"
grep -q "verdict: ok" "$OUT/ok.log" || fail "the candidate that reads the table is not ok"
"$KEVO" eval --surface cpu --no-timing "$T" "$M/deep_mlp_wrong.c" >"$OUT/wrong.log" 2>&1
grep -q "verdict: wrong_output" "$OUT/wrong.log" || { cat "$OUT/wrong.log"; fail "layers in reverse are not wrong_output"; }

"$KEVO" import -o "$OUT/x" --allow cublas,libc "$M/deep_mlp.py" >"$OUT/allow.log" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "allow: 'libc' is not a library kevo can allow; give a comma-separated list of cublas, cudnn, cublaslt" "$OUT/allow.log" ||
  fail "--allow libc: exit $rc: $(cat "$OUT/allow.log")"

"$KEVO" import -o "$OUT/big" "$M/big_input.py" >"$OUT/big.log" 2>&1 ||
  { cat "$OUT/big.log"; fail "a 6 GiB input is refused under an H100's caps"; }
"$KEVO" import -o "$OUT/big16" --device-memory 16 "$M/big_input.py" >"$OUT/big16.log" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "kevo_byte_caps" "$OUT/big16.log" &&
  grep -q "half the 16 GiB of device memory kevo assumes (--device-memory)" "$OUT/big16.log" ||
  fail "--device-memory 16: exit $rc: $(cat "$OUT/big16.log")"
KEVO_DEVICE_MEMORY_GIB=16 "$KEVO" import -o "$OUT/big16e" "$M/big_input.py" >"$OUT/big16e.log" 2>&1
grep -q "half the 16 GiB of device memory kevo assumes (KEVO_DEVICE_MEMORY_GIB)" "$OUT/big16e.log" ||
  fail "KEVO_DEVICE_MEMORY_GIB=16: $(cat "$OUT/big16e.log")"

"$KEVO" import -o "$OUT/ein" "$M/uses_einops.py" >"$OUT/ein.log" 2>&1
rc=$?
if "$PY" -c "import einops" >/dev/null 2>&1; then
  [ $rc = 0 ] || { cat "$OUT/ein.log"; fail "a module that imports einops (installed)"; }
else
  echo "note: $PY has no einops (.ci/run installs it); checking the refusal instead"
  grep -q "missing_module" "$OUT/ein.log" && grep -q "pip install einops" "$OUT/ein.log" ||
    fail "no einops: $(cat "$OUT/ein.log")"
fi
echo "1 passed, 0 failed"
