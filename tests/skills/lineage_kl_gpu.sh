#!/bin/sh
# A KLineage walk of one expert kernel with the stand-in proposing the steps
# (label gpu: the cuda surface needs the device). kl_replies.py writes what a
# model would answer: each step removes the next mechanism of the annotated
# expert (kevo lineage resolve's kernels: the expert given to the walk is the
# resolved one, NOT annotated), with preconditions, an audit citing the real
# lines, and a re-derivation that is the richer kernel plus a comment, so the
# round trip's 0.99x-in-every-trial gate is timed on the device. The walk
# runs with --preset klineage; the script prints the lineage, each card's
# contract, audit and round trip, the termination, and the wall time (the
# cost). usage:
#   lineage_kl_gpu.sh KEVO LLM_STANDIN SOURCE_DIR [TASK|TASK_DIR [EXPERT [SURFACE]]]
# (default: rowsum, examples/tasks/rowsum/expert.cu, cuda; on a machine
# without a GPU: rowsum examples/tasks/rowsum/expert.c cpu). KL_EXTRA: more
# options after the preset's (KL_EXTRA="--roundtrip-rule interval": kevo's rule).
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
SRC=$(cd "$3" && pwd)
TASK=${4:-rowsum}
TASKDIR=$SRC/examples/tasks/$TASK
[ -d "$TASK" ] && TASKDIR=$(cd "$TASK" && pwd)
EXPERT=${5:-$TASKDIR/expert.cu}
SURFACE=${6:-cuda}
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-lineage-klgpu-XXXXXX")
SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_DB="$T/kevo.db" KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}" XDG_CONFIG_HOME="$T/config"
FAILS=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; FAILS=$((FAILS + 1)); }
check() {
  _name=$1; shift
  if "$@"; then pass "$_name"; else fail "$_name"; fi
}
q() { sqlite3 "$KEVO_DB" "$1"; }
EXT=${EXPERT##*.}
HW=gpu
[ "$SURFACE" = cuda ] || HW=cpu
MECHS=$(python3 "$SRC/tests/skills/kl_replies.py" "$K" "$EXPERT" "$T" $HW) || { echo "FAIL replies"; exit 1; }
N=$(echo "$MECHS" | wc -w)
echo "expert $EXPERT: $N mechanisms, removal order: $MECHS"
"$STANDIN" --port-file "$T/port" --replies "$T/replies.txt" --max-requests 200 --lifetime 3000 \
  --log "$T/standin.log" &
SPID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/port")/v1"
t0=$(date +%s)
"$K" lineage extract --surface "$SURFACE" --preset klineage --base-url "$URL" --model m \
  --api-key-env "" ${KL_EXTRA:-} -o "$T/cards.json" "$TASKDIR" "$T/k0.$EXT" >"$T/out" 2>"$T/err"
rc=$?
t1=$(date +%s)
cat "$T/err" "$T/out"
"$K" lineage show --markdown
echo "cost: $((t1 - t0)) s of wall time for the walk; $(q 'SELECT COUNT(*) FROM llm_calls') stand-in calls ($(q "SELECT group_concat(role || ':' || n, ' ') FROM (SELECT role, COUNT(*) n FROM llm_calls GROUP BY role)")), $(q 'SELECT COUNT(*) FROM sources') kernels stored"
python3 - "$T/cards.json" <<'EOF'
import json, sys
for c in json.load(open(sys.argv[1]))["skills"]:
    e, ev = c["effect"], c["evidence"]
    rt = ev.get("roundtrip") or {}
    print(f"card {c['name']}: {c['status']}; forward {e.get('speedup', 0):.2f}x ci {e.get('ci')} "
          f"p={e.get('wilcoxon_p')}; contract {c['contract']['requires']} -> "
          f"{c['contract']['provides']}; audit {(ev.get('audit') or {}).get('why')}; "
          f"round trip: {rt.get('why')} trials {[round(x, 3) for x in rt.get('trial_ratios', [])]}")
EOF
check "the walk exits 0" [ "$rc" = 0 ]
check "every mechanism was proposed and audited" \
  [ "$(q "SELECT COUNT(*) FROM llm_calls WHERE role = 'lineage:audit'")" -ge "$N" ]
check "no proposal failed its audit or its contract" \
  [ "$(q "SELECT COUNT(*) FROM lineage_steps WHERE verdict IN ('audit_failed', 'contract_failed', 'preconditions', 'anchor')")" = 0 ]
check "every round trip was timed against the richer kernel (taken: ratios on its card; refused: by the clock)" \
  [ "$(q "SELECT COUNT(*) FROM lineage_steps WHERE verdict = 'ok' OR detail LIKE '%speed not restored%'")" = "$(q 'SELECT COUNT(*) FROM lineage_steps')" ]
check "the cards' round trips hold their trial ratios" \
  python3 -c "import json,sys; c=json.load(open('$T/cards.json'))['skills']; sys.exit(0 if all(len(x['evidence']['roundtrip']['trial_ratios']) >= 3 for x in c) else 1)"
check "the walk ended complete or on KLineage's rejection limit (round trips refused by the clock)" \
  grep -Eq 'termination: (complete|rejection_limit)' "$T/out"
echo "lineage_kl_gpu: $FAILS failed"
[ "$FAILS" = 0 ]
