#!/bin/sh
# kevo task starter end to end (cpu surface): imported example tasks
# (examples/kernelbench and tests/import/torch) each get a generated minimal
# candidate that kevo judges ok, their README.md shows its entry, kevo import
# of one module prints the entry a candidate defines, kevo run without an
# LLM starts from the generated starter where the task has none, and a task
# whose module the generator cannot follow (training-mode Dropout) is refused
# with the reason, in the README and by kevo task starter (exit 1).
#   starter.sh KEVO SRC
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
OUT=$(mktemp -d /tmp/kevo-starter-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
M=$SRC/tests/import/torch
mkdir -p "$OUT/mods"
cp "$SRC"/examples/kernelbench/*.py "$M/deep_mlp.py" "$M/tied_equal.py" "$M/dropout.py" \
  "$OUT/mods/"

# One module: kevo import prints the entry a candidate defines.
"$KEVO" import -o "$OUT/one" "$M/odd_pool.py" >"$OUT/one.log" 2>&1 || fail "import of one module"
grep -q "a candidate of odd_pool defines, on the cpu surface (C):" "$OUT/one.log" &&
  grep -q "^    void odd_pool(const float \*x," "$OUT/one.log" &&
  grep -q '^    extern "C" void odd_pool(.*cudaStream_t stream);' "$OUT/one.log" ||
  { cat "$OUT/one.log"; fail "kevo import of one module does not print the entry"; }

"$KEVO" import -o "$OUT/tasks" --jobs 2 "$OUT/mods" >"$OUT/import.log" 2>&1 ||
  { cat "$OUT/import.log"; fail "import"; }
grep -q "each task's README.md shows the entry a candidate defines" "$OUT/import.log" ||
  fail "kevo import of several modules does not point at the READMEs"
for name in odd_pool 1_Softmax_rows 2_Linear_GELU_Scale 3_Small_ConvNet deep_mlp tied_equal; do
  T=$OUT/tasks/mods
  [ $name = odd_pool ] && T=$OUT/one
  grep -q "^## A minimal correct candidate" "$T/$name/README.md" ||
    fail "$name: README.md has no starter section"
  sed -n '/^## A minimal correct candidate/,$p' "$T/$name/README.md" | grep -q "^void \(op_\)\?$name(.*) {$" ||
    { sed -n '/A minimal correct/,$p' "$T/$name/README.md"; fail "$name: README.md does not show the starter's entry"; }
  "$KEVO" task starter "$T/$name" -o "$OUT/$name.c" 2>"$OUT/$name.gen" ||
    { cat "$OUT/$name.gen"; fail "$name: kevo task starter"; }
  "$KEVO" eval --surface cpu --no-timing "$T/$name" "$OUT/$name.c" >"$OUT/$name.log" 2>&1
  rc=$?
  grep -q "^verdict: ok" "$OUT/$name.log" && [ $rc = 0 ] ||
    { cat "$OUT/$name.gen" "$OUT/$name.log"; fail "$name: the generated starter is not judged ok (exit $rc)"; }
  echo "ok: $name: $(cat "$OUT/$name.gen")"
done

T=$OUT/tasks/mods
# The cuda surface's starter is written too (its compile is test_cuda_compile's).
"$KEVO" task starter --surface cuda "$T/3_Small_ConvNet" >"$OUT/conv.cu" ||
  fail "kevo task starter --surface cuda"
grep -q 'extern "C" void op_3_Small_ConvNet(.*cudaStream_t stream)' "$OUT/conv.cu" ||
  fail "the cuda starter does not define the cuda entry"
grep -q "cudaMemcpy" "$OUT/conv.cu" || fail "the cuda starter does not copy to the host"
grep -q "the inputs copied from the GPU, the outputs copied back" "$OUT/conv.cu" ||
  fail "the cuda starter does not say that it computes on the host"
# and it compiles on the gate's cuda path (nvcc, no GPU needed: KEVO_CUDA_ARCH)
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
if [ -n "$NVCC" ]; then
  PATH=$(dirname "$NVCC"):$PATH KEVO_CUDA_ARCH=sm_90 "$KEVO" eval --surface cuda \
    "$T/3_Small_ConvNet" "$OUT/conv.cu" >"$OUT/conv.log" 2>&1
  grep -q "conv.cu compiles (the compile step needs no GPU)\|^verdict: ok" "$OUT/conv.log" ||
    { cat "$OUT/conv.log"; fail "the cuda starter does not compile on the gate's cuda path"; }
  # A network of 626 packed tensors (ResNet101): its starter is whole (every
  # layer, the entry's last line) and compiles against the generated header.
  B=$SRC/tests/import/big/10_ResNet101
  "$KEVO" task starter --surface cuda "$B" -o "$OUT/rn.cu" 2>"$OUT/rn.gen" ||
    { cat "$OUT/rn.gen"; fail "kevo task starter of ResNet101"; }
  grep -q "const float \*weights_12_2 = weights_12_1 + " "$OUT/rn.cu" && tail -2 "$OUT/rn.cu" | grep -q "kt_free_all" ||
    fail "the ResNet101 starter is cut short"
  PATH=$(dirname "$NVCC"):$PATH KEVO_CUDA_ARCH=sm_90 "$KEVO" eval --surface cuda "$B" \
    "$OUT/rn.cu" >"$OUT/rn.log" 2>&1
  grep -q "rn.cu compiles (the compile step needs no GPU)\|^verdict: ok" "$OUT/rn.log" ||
    { tail -20 "$OUT/rn.log"; fail "the ResNet101 starter does not compile against its header"; }
else
  echo "note: no nvcc here; the cuda starters' compile was not checked"
fi

# Refused, with the reason: training-mode Dropout is random.
"$KEVO" task starter "$T/dropout" >"$OUT/drop.c" 2>"$OUT/drop.err"
rc=$?
cat "$OUT/drop.err"
[ $rc = 1 ] || fail "kevo task starter of a random module exited $rc, not 1"
grep -q "no starter for dropout (unsupported): .*Dropout.*training mode" "$OUT/drop.err" ||
  fail "the refusal does not name the cause"
grep -q "cannot write one for this task: .*Dropout" "$T/dropout/README.md" ||
  fail "the README does not say why there is no starter"

# kevo run without an LLM: starts from the generated starter (no starter.c).
KEVO_LLM_CONFIG=/dev/null "$KEVO" run --surface cpu --strategy tune --steps 1 --budget 0.2 \
  --db "$OUT/runs.db" "$T/1_Softmax_rows" >"$OUT/run.log" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "starting from kevo task starter's" "$OUT/run.log" ||
  { cat "$OUT/run.log"; fail "kevo run without an LLM on an imported task (exit $rc)"; }
echo "PASS: starters of 6 imported tasks judged ok; cuda starter written; Dropout refused with its reason; kevo run started from the generated starter"
