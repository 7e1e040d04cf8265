#!/bin/sh
# Medians of the same kernels judged one at a time and several at once
# (issue 14: one timing loop per device at a time), cpu surface.
#
# For each kernel, R rounds; each round runs N evaluations of its good.c in
# three ways, in a rotating order (so that drift in the machine's load falls
# on every way alike):
#   serial   one `kevo eval` after another;
#   locked   N `kevo eval` processes at once, as kevo runs them: their
#            compiles and checks overlap, their timings take turns (the
#            device lock);
#   unlocked N at once, each with a lock directory of its own
#            (KEVO_LOCK_DIR), which defeats the lock: how concurrent
#            evaluations were timed before it, shown for contrast only (kevo
#            has no switch to turn the lock off).
# Every process uses this script's private lock directory, so other kevo
# processes on the machine neither wait for these nor make them wait (their
# load still disturbs every way alike).
#
# usage: bench/concurrent.sh [BUILD_DIR] [--record]   (--record appends to BENCHMARKS.md)
# env:   KERNELS (default "rowsum matmul"), N (at once, default 4), R (rounds,
#        default 3), BUDGET (timed seconds per side, default 1, kevo's default),
#        FRESH=1 (each evaluation gets a source of its own, good.c plus a
#        unique comment, so that it compiles, as a search's new candidates do,
#        beside the others' timings; default 0: compiled once, cached)
set -eu
B=${1:-build}
REC=${2:-}
K="$B/kevo"
KERNELS=${KERNELS:-rowsum matmul}
N=${N:-4}
R=${R:-3}
BUDGET=${BUDGET:-1}
FRESH=${FRESH:-0}
[ -x "$K" ] || { echo "$K: not built (make, or name the build directory)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-concurrent-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/bench.db"
export KEVO_CACHE_DIR="$T/cache"
export KEVO_LOCK_DIR="$T/locks"
"$K" device >/dev/null 2>&1 # the CPU's ceilings, measured once before anything is timed

# one KERNEL MODE ROUND I [LOCKDIR]: one evaluation, its JSON kept.
one() {
  out="$T/$1.$2.$3.$4.json"
  src="examples/tasks/$1/good.c"
  if [ "$FRESH" = 1 ]; then
    src="$T/src.$1.$2.$3.$4.c"
    { cat "examples/tasks/$1/good.c"; echo "/* $$ $1 $2 $3 $4 $(date +%s.%N) */"; } >"$src"
  fi
  if [ -n "${5:-}" ]; then
    KEVO_LOCK_DIR="$5" "$K" eval --surface cpu --json --budget "$BUDGET" \
      "examples/tasks/$1" "$src" >"$out" 2>"$out.err" || true
  else
    "$K" eval --surface cpu --json --budget "$BUDGET" "examples/tasks/$1" "$src" >"$out" \
      2>"$out.err" || true
  fi
}

# batch KERNEL MODE ROUND: N evaluations in that way; the wall time is kept.
batch() {
  s=$(date +%s.%N)
  i=0
  pids=""
  while [ $i -lt "$N" ]; do
    case $2 in
    serial) one "$1" "$2" "$3" $i ;;
    locked)
      one "$1" "$2" "$3" $i &
      pids="$pids $!"
      ;;
    unlocked)
      one "$1" "$2" "$3" $i "$T/own-lock-$3-$i" &
      pids="$pids $!"
      ;;
    esac
    i=$((i + 1))
  done
  for p in $pids; do wait "$p"; done
  e=$(date +%s.%N)
  echo "$1 $2 $3 $s $e" >>"$T/walls"
}

for k in $KERNELS; do
  [ -f "examples/tasks/$k/good.c" ] || { echo "examples/tasks/$k/good.c: not found (run from the source tree)" >&2; exit 2; }
  "$K" eval --surface cpu --no-timing "examples/tasks/$k" "examples/tasks/$k/good.c" >/dev/null 2>&1 || true # compiled once
  r=0
  while [ $r -lt "$R" ]; do
    case $((r % 3)) in
    0) order="serial locked unlocked" ;;
    1) order="locked unlocked serial" ;;
    *) order="unlocked serial locked" ;;
    esac
    for m in $order; do
      echo "kevo: $k, round $((r + 1))/$R, $m ($N evaluations)" >&2
      batch "$k" "$m" $r
    done
    r=$((r + 1))
  done
done

out="$T/table.md"
python3 - "$T" "$N" "$R" "$BUDGET" "$KERNELS" >"$out" <<'PY'
import glob, json, os, statistics as st, sys
d, n, rounds, budget, kernels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5].split()
walls = {}
for line in open(os.path.join(d, "walls")):
    k, m, r, s, e = line.split()
    walls.setdefault((k, m), []).append(float(e) - float(s))
print("| kernel | how | evaluations | candidate median us (median, min-max) | vs serial | "
      "reference median us | vs serial | waited for the lock s (mean) | wall s per %d |" % n)
print("|---|---|---|---|---|---|---|---|---|")
for k in kernels:
    base = None
    for m in ("serial", "locked", "unlocked"):
        cand, ref, wait, bad = [], [], [], []
        for f in sorted(glob.glob(os.path.join(d, "%s.%s.*.json" % (k, m)))):
            try:
                j = json.load(open(f))
            except ValueError:
                bad.append("no result (%s)" % open(f + ".err").read().strip()[:200])
                continue
            if j.get("verdict") != "ok" or "timing" not in j:
                bad.append("%s: %s" % (j.get("verdict"), j.get("detail", "")[:200]))
                continue
            cand.append(j["timing"]["median_us"])
            ref.append(j["timing"]["reference_median_us"])
            wait.append(j["seconds"].get("lock_wait", 0.0))
        for b in bad:
            print("kevo: %s %s: %s" % (k, m, b), file=sys.stderr)
        if not cand:
            print("| %s | %s | 0 of %d ok | | | | | | |" % (k, m, n * rounds))
            continue
        c, rf = st.median(cand), st.median(ref)
        if m == "serial":
            base = (c, rf)
        ratio = lambda x, b: "%.2fx" % (x / b) if b else "-"
        print("| %s | %s | %d%s | %.1f (%.1f-%.1f) | %s | %.1f | %s | %.1f | %.1f |" % (
            k, m if m == "serial" else "%s, %d at once" % (m, n), len(cand),
            "" if len(cand) == n * rounds else " of %d ok" % (n * rounds), c, min(cand), max(cand),
            ratio(c, base[0]) if base else "-", rf, ratio(rf, base[1]) if base else "-",
            st.mean(wait), st.median(walls.get((k, m), [0]))))
PY
cat "$out"
if [ "$REC" = "--record" ]; then
  os=Linux
  [ -r /etc/os-release ] && os=$(. /etc/os-release && echo "$NAME $VERSION_ID" | sed 's| GNU/Linux||')
  gpu="no GPU"
  command -v nvidia-smi >/dev/null 2>&1 && gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
  {
    echo
    fresh="cached compiles"
    [ "$FRESH" = 1 ] && fresh="a fresh source per evaluation"
    echo "### $(date -u +%Y-%m-%d), this machine: $os, $(nproc) cores, $gpu (N=$N at once, $R rounds, budget $BUDGET s per side, $fresh)"
    echo
    cat "$out"
  } >>BENCHMARKS.md
fi
