#!/bin/sh
# KLineage on the GPU (label gpu; CI skips it): every annotated CUDA expert
# of examples/tasks walked backward at its task's own bench size, each
# accepted step's forward edit given the paired, interleaved test, and the
# per-step table printed as Markdown (what BENCHMARKS.md's KLineage section
# holds). Checks: every expert is accepted by the gate, every walk reaches its
# end, and plain TF32 (matmul/expert_mma.cu without TF32_SPLIT) is refused.
# usage: skills_gpu.sh KEVO_BINARY SOURCE_DIR [OUT_DIR]
# env:   KEVO_LINEAGE_EXPERTS (default: all five below), KEVO_LINEAGE_PAIRS (8)
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
OUT=${3:-}
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-skills-gpu-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_DB="${KEVO_DB:-$T/kevo.db}"
PAIRS=${KEVO_LINEAGE_PAIRS:-8}
FAILS=0
EXPERTS=${KEVO_LINEAGE_EXPERTS:-rowsum/expert.cu softmax/expert.cu transpose/expert.cu matmul/expert.cu matmul/expert_mma.cu}
for e in $EXPERTS; do
  task=$(dirname "$e")
  name=$(echo "$e" | tr '/.' '__')
  echo "== $e"
  if "$K" lineage extract --surface cuda --pairs "$PAIRS" -o "$T/$name.json" \
      "$SRC/examples/tasks/$task" "$SRC/examples/tasks/$e"; then
    echo "ok   $e walked"
  else
    echo "FAIL $e"
    FAILS=$((FAILS + 1))
    continue
  fi
  "$K" lineage show --markdown | tee "$T/$name.md"
  [ -n "$OUT" ] && mkdir -p "$OUT" && cp "$T/$name.json" "$T/$name.md" "$OUT/"
done
case " $EXPERTS " in
*" matmul/expert_mma.cu "*) tf32=1 ;;
*) tf32=0 ;;
esac
if [ $tf32 = 0 ]; then
  echo "skip plain TF32 check (matmul/expert_mma.cu not walked)"
elif grep -q '| TF32_SPLIT | wrong_output |' "$T/matmul_expert_mma_cu.md" 2>/dev/null; then
  echo "ok   plain TF32 is refused by the gate (the split is load-bearing)"
else
  echo "FAIL plain TF32 was not refused"
  FAILS=$((FAILS + 1))
fi
"$K" skills list --all
echo "skills_gpu: $FAILS failed"
[ "$FAILS" = 0 ]
