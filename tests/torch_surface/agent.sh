#!/bin/sh
# The agent on the torch surface (issue 29 item 4), against the loopback
# stand-in: kevo run --surface torch --strategy greedy asks in the field's
# form (a ModelNew from Model, Triton or inline CUDA), takes the python block
# defining ModelNew out of each reply (not the usage example after it), and
# the gate judges each: ok, wrong_output, and a reply without code recorded
# as such. (Starting from the task's Model renamed ModelNew: starter.sh.)
#   agent.sh KEVO LLM_STANDIN SRC        (exits 77, skipped, without torch)
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
  echo "SKIPPED: $PY cannot import torch; install CPU torch (pip install torch) or set KEVO_PYTHON"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-torch-agent-XXXXXX")
SPID=
trap '[ -n "$SPID" ] && kill $SPID 2>/dev/null && wait $SPID 2>/dev/null; rm -rf "$T"' EXIT
export KEVO_DB="$T/db" XDG_CONFIG_HOME="$T/config"
fail() { echo "FAIL: $*"; exit 1; }
q() { sqlite3 "$KEVO_DB" "$1" 2>/dev/null; }
"$STANDIN" --port-file "$T/port" --replies "$SRC/tests/torch_surface/agent_replies.txt" \
  --max-requests 20 --lifetime 240 --log "$T/standin.log" &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"
cd "$T" || exit 1
"$K" run --surface torch --strategy greedy --base-url "$URL" --model m --api-key-env "" \
  --steps 4 --no-timing --seed 3 "$SRC/tests/torch_surface/task" >"$T/run.out" 2>&1 ||
  { cat "$T/run.out"; fail "kevo run --surface torch exits $?"; }
[ "$(q "select count(*) from llm_calls where request_json like '%Name your optimized architecture ModelNew%' and request_json like '%class ModelNew(torch.nn.Module)%'")" -ge 1 ] ||
  fail "no prompt in the field's form"
[ "$(q "select count(*) from llm_calls where request_json like '%Define exactly this entry point%'")" = 0 ] ||
  fail "a prompt asked for a C entry"
echo "ok: prompts in the field's form, none for a C entry"
v=$(q "select group_concat(verdict, ' ') from (select verdict from nodes where run_id = 1 order by step)")
echo "verdicts by step: $v"
case "$v" in
  "ok wrong_output no_code"*) ;;
  *) cat "$T/run.out"; fail "verdicts '$v', want the fused ModelNew ok, the wrong one wrong_output, then no_code" ;;
esac
[ "$(q "select count(*) from nodes n join sources s on s.hash = n.source_hash where n.run_id = 1 and n.verdict = 'ok' and s.text like '%addmm%' and s.text not like '%m = ModelNew(64%'")" -ge 1 ] ||
  fail "the block defining ModelNew was not the one taken"
echo "ok: the ModelNew block judged ok, the wrong one wrong_output"
