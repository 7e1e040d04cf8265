#!/bin/bash
# Every KernelBench problem through kevo: `kevo import` of the tree's level1..3
# (all at once, --jobs JOBS_IMPORT), then `kevo task check --surface S` of every
# imported task, CHECKS at a time (checks are not timing: several share a GPU),
# within a wall-clock budget. One TSV row per problem and a summary by outcome
# and cause; rerun with the same OUT to go on where a budget stopped it.
#
#   scripts/kb-import-check.sh [options] KERNELBENCH_TREE OUT
#     --kevo PATH        kevo binary (default build/kevo, else kevo on PATH)
#     --surface S        cuda (default) or cpu
#     --checks N         task checks at once (default 4)
#     --jobs-import N    modules imported at once (default: the cores, at most 16)
#     --deadline S       per worker job of a task check (default 60)
#     --budget S         stop starting checks after S seconds in all (default 450:
#                        the run ends within 8 minutes); the rest are not_run
#     --import-args "A"  more options of kevo import (e.g. "--device-memory 141")
#
# Writes OUT/tasks (the import; kept, so a rerun skips it), OUT/import.log,
# OUT/check/<level>-<problem>.{json,err}, and OUT/kb.tsv with the columns
#   problem  level  outcome  cause  seconds
# outcome: ok (imported, task check passed), rejected (task check refused the
# task: cause is the first finding's kind), error (kevo could not check it:
# cause from its message), skipped (kevo import refused it: its cause),
# not_run (the budget ran out first). seconds: the import's for skipped
# problems, the check's otherwise. OUT/summary.txt (also printed): counts by
# outcome and cause, and seconds per check.
# KEVO_PYTHON: the Python with torch (and einops) the reference runs in.
# KEVO_IMPORT_STARTER=0 leaves the READMEs' generated starters out of the
# import (faster; set here unless already set).
set -u
KEVO=""
SURFACE=cuda
CHECKS=4
NCPU=$(nproc 2>/dev/null || echo 4)
JOBS_IMPORT=$((NCPU < 16 ? NCPU : 16))
DEADLINE=60
BUDGET=450
IMPORT_ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
  --kevo) KEVO=$2; shift 2 ;;
  --surface) SURFACE=$2; shift 2 ;;
  --checks) CHECKS=$2; shift 2 ;;
  --jobs-import) JOBS_IMPORT=$2; shift 2 ;;
  --deadline) DEADLINE=$2; shift 2 ;;
  --budget) BUDGET=$2; shift 2 ;;
  --import-args) IMPORT_ARGS=$2; shift 2 ;;
  -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
  -*) echo "kb-import-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  *) break ;;
  esac
done
if [ $# -ne 2 ]; then
  echo "usage: scripts/kb-import-check.sh [options] KERNELBENCH_TREE OUT (see --help)" >&2
  exit 2
fi
KB=$1
OUT=$2
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$KEVO" ]; then
  if [ -x "$HERE/build/kevo" ]; then KEVO=$HERE/build/kevo; else KEVO=$(command -v kevo); fi
fi
[ -x "$KEVO" ] || { echo "kb-import-check: no kevo binary (--kevo PATH)" >&2; exit 2; }
KEVO=$(realpath "$KEVO")
PY=${KEVO_PYTHON:-python3}
export KEVO_IMPORT_STARTER=${KEVO_IMPORT_STARTER:-0}
mkdir -p "$OUT/check"
OUT=$(realpath "$OUT")
T0=$(date +%s)
dirs=""
for level in level1 level2 level3; do
  [ -d "$KB/$level" ] && dirs="$dirs $KB/$level"
done
[ -n "$dirs" ] || { echo "kb-import-check: $KB has no level1, level2 or level3" >&2; exit 2; }

# 1. Import (skipped when OUT/tasks is there from an earlier run).
if [ ! -d "$OUT/tasks" ]; then
  # shellcheck disable=SC2086
  "$KEVO" import --jobs "$JOBS_IMPORT" $IMPORT_ARGS -o "$OUT/tasks" $dirs >"$OUT/import.log" 2>&1
  echo "import: $(($(date +%s) - T0)) s: $(grep '^kevo import:' "$OUT/import.log")"
else
  echo "import: reusing $OUT/tasks ($(grep -c . "$OUT/import.log" 2>/dev/null) log lines)"
fi

# 2. One row per problem kevo import skipped: "[i/n] NAME: skipped (CAUSE, S s): ..."
TSV=$OUT/kb.tsv
[ -f "$TSV" ] || : >"$TSV"
sed -n 's/^\[[0-9]*\/[0-9]*\] \([^:]*\): skipped (\([^,]*\), \([0-9.]*\) s).*/\1\t\2\t\3/p' \
  "$OUT/import.log" | while IFS="$(printf '\t')" read -r name cause sec; do
  level=$(for d in $dirs; do [ -f "$d/$name.py" ] && basename "$d"; done | head -n 1)
  grep -q "^$name	${level:-?}	" "$TSV" ||
    printf '%s\t%s\tskipped\t%s\t%s\n' "$name" "${level:-?}" "$cause" "$sec" >>"$TSV"
done

# 3. task check of every imported task not yet in the TSV, CHECKS at a time.
check_one() {
  dir=$1
  level=$(basename "$(dirname "$dir")")
  name=$(basename "$dir")
  if [ $(($(date +%s) - T0)) -ge "$BUDGET" ]; then
    printf '%s\t%s\tnot_run\tbudget\t0\n' "$name" "$level" >>"$TSV"
    return
  fi
  f=$OUT/check/$level-$name
  s=$(date +%s.%N)
  "$KEVO" task check --surface "$SURFACE" --deadline "$DEADLINE" --json "$dir" >"$f.json" 2>"$f.err"
  rc=$?
  e=$(date +%s.%N)
  row=$("$PY" - "$f.json" "$f.err" "$rc" <<'PYEOF'
import json, re, sys
js, err, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
KINDS = [  # a finding's words -> its cause
    ("constant output", "ill_posed_constant"), ("all zeros", "ill_posed_zeros"),
    ("copy of the input", "ill_posed_copy"), ("not deterministic", "not_deterministic"),
    ("no answer within", "timeout"), ("out of memory", "out_of_memory"),
    ("does not compile", "compile"), ("tolerance", "tolerance"), ("sandbox", "sandbox"),
    ("CUDA", "cuda"), ("raised", "raised"), ("import the module again", "stale_task")]
def kind(text):
    for k, v in KINDS:
        if k.lower() in text.lower():
            return v
    w = re.sub(r"[^a-z]+", "_", text.lower()).strip("_")
    return "_".join(w.split("_")[:4]) or "unknown"
try:
    findings = json.load(open(js)).get("findings") or []
except Exception:
    findings = None
if rc == 0:
    print("ok\t-")
elif rc == 1 and findings:
    print("rejected\t" + kind(findings[0]))
else:
    text = open(err).read().strip().splitlines()
    print("error\t" + kind(text[-1] if text else "exit %d" % rc))
PYEOF
)
  printf '%s\t%s\t%s\t%.1f\n' "$name" "$level" "$row" "$(awk "BEGIN{print $e - $s}")" >>"$TSV"
  echo "$level/$name: $row"
}
export -f check_one
export KEVO SURFACE DEADLINE TSV OUT PY T0 BUDGET
find "$OUT/tasks" -mindepth 2 -maxdepth 2 -type d | sort | while read -r d; do
  grep -q "^$(basename "$d")	$(basename "$(dirname "$d")")	" "$TSV" || echo "$d"
done | xargs -r -P "$CHECKS" -I{} bash -c 'check_one "$1"' _ {}

# 4. The summary: counts by outcome and by cause, seconds per check.
"$PY" - "$TSV" "$(($(date +%s) - T0))" <<'PYEOF' | tee "$OUT/summary.txt"
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
out = collections.Counter(r[2] for r in rows)
cause = collections.Counter((r[2], r[3]) for r in rows if r[2] != "ok")
levels = collections.Counter((r[1], r[2]) for r in rows)
print("%d problems in %s (%s s this run)" % (len(rows), sys.argv[1], sys.argv[2]))
for o, n in out.most_common():
    print("  %-9s %d" % (o, n))
print("by level: " + ", ".join("%s %s %d" % (l, o, n) for (l, o), n in sorted(levels.items())))
print("by cause:")
for (o, c), n in sorted(cause.items(), key=lambda x: (-x[1], x[0])):
    print("  %-9s %-40s %d" % (o, c, n))
secs = sorted(float(r[4]) for r in rows if r[2] in ("ok", "rejected", "error"))
if secs:
    print("task check: %d, median %.1f s, max %.1f s, mean %.1f s per task"
          % (len(secs), secs[(len(secs) - 1) // 2], secs[-1], sum(secs) / len(secs)))
PYEOF
