#!/bin/sh
# kevo synthesize --preset adaexplore end to end (AdaExplore's recipe: 3
# KernelBench level-1 problems with ids up to 50, combined with 3 torch.nn
# layers) against the loopback stand-in: a small level-1 suite (ids 19, 23,
# 40 and 77) is imported; each prompt shows 3 of the problems with ids <= 50
# (never 77) and names 3 torch.nn layers; the modules the stand-in writes are
# accepted and each resulting task passes kevo task check. A suite without
# three such problems is refused with the fix.
# Needs a Python with torch (the modules run): exits 77 (skipped) without.
# usage: synth_adaexplore_e2e.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch, and kevo synthesize runs every module it is given;"
  echo "         install CPU torch (pip install torch) or set KEVO_PYTHON (.ci/run installs it)"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-synth-ada-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/synth.db"
export XDG_CONFIG_HOME="$T/config"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
cd "$T" || exit 1

# ---- a small KernelBench level 1 ------------------------------------------------
mkdir -p level1
module() { # FILE OP SHAPE...
  cat >"level1/$1" <<EOF
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return $2


batch_size = 16
dim = 256


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
EOF
}
module 19_ReLU.py "torch.relu(x)"
module 23_Softmax.py "torch.softmax(x, dim=1)"
module 40_LayerNorm.py "torch.nn.functional.layer_norm(x, (x.shape[-1],))"
module 77_Tanh.py "torch.tanh(x)"
"$K" import -o kb1 --python "$PY" level1 >"$T/imp.out" 2>&1
check "the level-1 suite imports" "$?" 0

rm -f "$T/port"
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/agent/synth_replies.txt" --max-requests 50 \
  --lifetime 280 &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"

"$K" synthesize --preset adaexplore --from kb1 --n 2 --seed 1 --jobs 1 --concurrency 1 \
  --python "$PY" -o practice --base-url "$URL" --model m --api-key-env "" >"$T/s.out" 2>"$T/s.err"
check "synthesize exits 0" $? 0 || tail -5 "$T/s.err"
grep -q -- "--preset adaexplore (StigLidu/AdaExplore as released): --style adaexplore" "$T/s.err" &&
  ok "the preset's option is said" || bad "preset line: $(head -2 "$T/s.err")"
check "both modules accepted" "$(q "select count(*) from synth_attempts where status = 'accepted'")" 2
q "select asked from synth_attempts order by id" >"$T/asked.txt"
python3 - "$T/asked.txt" <<'EOF' && ok "each attempt asked 3 problems (ids <= 50) and 3 torch.nn layers" || bad "asked: $(cat "$T/asked.txt")"
import re, sys
rows = [l.strip() for l in open(sys.argv[1]) if l.strip()]
good = len(rows) == 2
for r in rows:
    parts = [p.strip() for p in r[len("adaexplore:"):].split(";")] if r.startswith("adaexplore:") else []
    probs = [p for p in parts if re.match(r"^\d+_", p.split("/")[-1])]
    layers = [p for p in parts if p.startswith("nn.")]
    ids = [int(p.split("/")[-1].split("_")[0]) for p in probs]
    good &= len(set(probs)) == 3 and all(1 <= i <= 50 for i in ids) and len(set(layers)) == 3
    print(r, ids, layers)
sys.exit(0 if good else 1)
EOF
q "select request_json from llm_calls where role like 'synth%' order by id limit 1" >"$T/req.json"
grep -q "Problem [a-z0-9/]*19_ReLU\|Problem [a-z0-9/]*23_Softmax" "$T/req.json" &&
  ! grep -q "77_Tanh" "$T/req.json" && ok "the prompt shows the problems' modules, not id 77" ||
  bad "prompt: $(head -c 400 "$T/req.json")"
n=0
for d in practice/*/; do
  [ -f "$d/task.json" ] || continue
  n=$((n + 1))
  KEVO_PYTHON="$PY" "$K" task check "$d" >"$T/check.out" 2>&1
  check "task check $(basename "$d")" $? 0 || tail -3 "$T/check.out"
done
check "two tasks written" "$n" 2

mkdir -p fewkb/level1 && cp -r kb1/level1/19_ReLU kb1/level1/77_Tanh fewkb/level1/
"$K" synthesize --style adaexplore --from fewkb --n 1 --python "$PY" -o p2 --base-url "$URL" \
  --model m --api-key-env "" >/dev/null 2>"$T/few.err"
check "a suite without 3 problems with ids <= 50: refused with the fix" \
  "$? $(grep -c 'it needs 3: import KernelBench' "$T/few.err")" "2 1"

echo "synth_adaexplore_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
