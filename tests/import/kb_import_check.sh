#!/bin/sh
# scripts/kb-import-check.sh on a small KernelBench-shaped tree, cpu surface:
# level1 holds a softmax (ok) and a training-mode Dropout (rejected: not
# deterministic), level2 a module without Model (skipped by kevo import); the
# TSV has one row per problem with its outcome and cause, the summary counts
# them, and a rerun with the same OUT checks nothing again.
#   kb_import_check.sh KEVO SRC
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
OUT=$(mktemp -d /tmp/kevo-kbcheck-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$OUT/kb/level1" "$OUT/kb/level2"
cp "$SRC/examples/kernelbench/1_Softmax_rows.py" "$SRC/tests/import/torch/dropout.py" "$OUT/kb/level1/"
cp "$SRC/tests/import/bad/no_model.py" "$OUT/kb/level2/"
"$SRC/scripts/kb-import-check.sh" --kevo "$KEVO" --surface cpu --checks 2 --jobs-import 2 \
  "$OUT/kb" "$OUT/run" >"$OUT/log" 2>&1 || { cat "$OUT/log"; fail "the script exited $?"; }
cat "$OUT/log"
T=$OUT/run/kb.tsv
[ "$(wc -l <"$T")" = 3 ] || { cat "$T"; fail "not one row per problem"; }
grep -q "^1_Softmax_rows	level1	ok	-	[0-9.]*$" "$T" || { cat "$T"; fail "softmax is not ok"; }
grep -q "^dropout	level1	rejected	not_deterministic	[0-9.]*$" "$T" ||
  { cat "$T"; fail "dropout is not rejected as not deterministic"; }
grep -q "^no_model	level2	skipped	no_model	[0-9.]*$" "$T" || { cat "$T"; fail "no_model is not skipped"; }
grep -q "^  ok  *1$" "$OUT/run/summary.txt" && grep -q "rejected  *not_deterministic  *1" "$OUT/run/summary.txt" ||
  fail "the summary does not count by outcome and cause"
"$SRC/scripts/kb-import-check.sh" --kevo "$KEVO" --surface cpu "$OUT/kb" "$OUT/run" >"$OUT/log2" 2>&1 ||
  fail "the rerun exited $?"
[ "$(wc -l <"$T")" = 3 ] && ! grep -q "level1/" "$OUT/log2" || { cat "$OUT/log2" "$T"; fail "the rerun checked again"; }
echo "PASS: kb-import-check: ok, rejected and skipped rows with causes, a summary, a rerun that resumes"
