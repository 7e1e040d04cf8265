#!/bin/sh
# make demo: validate every example task, judge a naive and a good kernel,
# then tune a starter kernel with no LLM and say where the best one is.
set -e
B=${1:-build}
K="$B/kevo"
for t in examples/tasks/*/; do
  echo "== kevo task check $t"
  "$K" task check "$t"
done
for c in starter good; do
  echo "== kevo eval examples/tasks/matmul examples/tasks/matmul/$c.c"
  "$K" eval --budget 0.5 examples/tasks/matmul "examples/tasks/matmul/$c.c" || true
done
echo "== kevo run examples/tasks/softmax   (no LLM configured: the tune strategy)"
"$K" run --budget 0.3 -o "$B/best-softmax.c" examples/tasks/softmax
echo "== the tuned kernel is $B/best-softmax.c; 'kevo runs' lists the runs, 'kevo best' prints the latest"
