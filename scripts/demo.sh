#!/bin/sh
# make demo: validate every example task, then judge a naive and a good
# candidate of two of them, the way a user would.
set -e
B=${1:-build}
K="$B/kevo"
for t in examples/tasks/*/; do
  echo "== kevo task check $t"
  "$K" task check "$t"
done
for t in softmax matmul; do
  for c in starter good; do
    echo "== kevo eval examples/tasks/$t examples/tasks/$t/$c.c"
    "$K" eval --budget 0.5 "examples/tasks/$t" "examples/tasks/$t/$c.c" || true
  done
done
echo "== the store: $("$K" help >/dev/null; echo "${KEVO_DB:-$HOME/.local/share/kevo/kevo.db}")"
