#!/bin/sh
# A killed kevo takes its workers with it (issue 17): kill -9 kevo while its
# candidate's worker spins in a call (tests/adversarial/cands/infinite_loop.c,
# which no signal but SIGKILL stops), and while a worker is stopped
# (SIGSTOP, as one waiting for the device's timing lock is): neither may
# outlive it. Before, the spinning worker ran on (PR_SET_PDEATHSIG now kills
# it); the stopped one is killed by the kernel's rule for an orphaned process
# group with a stopped member (SIGHUP, then SIGCONT), checked so it stays so.
# usage: pdeath_e2e.sh KEVO_BINARY SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-pdeath-XXXXXX")
KP=
cleanup() {
  [ -n "$KP" ] && kill -9 "$KP" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
# a process that is gone or a zombie (PID 1 of a container may not reap)
gone() { [ ! -e "/proc/$1" ] || grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null; }
workers_of() { for p in $(pgrep -P "$1" 2>/dev/null); do
  case "$(cat "/proc/$p/comm" 2>/dev/null)" in kevo-worker) echo "$p" ;; esac
done; }
RS="$SRC/examples/tasks/rowsum"

# ---- 1. a worker spinning in the candidate's call ----------------------------
"$K" eval --no-timing "$RS" "$SRC/tests/adversarial/cands/infinite_loop.c" >"$T/e1.out" 2>&1 &
KP=$!
spin=
i=0
while [ $i -lt 600 ]; do # the candidate's worker: the one that has used CPU
  for w in $(workers_of "$KP"); do
    t=$(awk '{print $14 + $15}' "/proc/$w/stat" 2>/dev/null)
    [ "${t:-0}" -gt 50 ] && spin=$w
  done
  [ -n "$spin" ] && break
  sleep 0.05
  i=$((i + 1))
done
[ -n "$spin" ] && ok "a worker spins in the candidate's call (pid $spin)" || bad "no spinning worker"
kill -9 "$KP"
wait "$KP" 2>/dev/null
KP=
i=0
while [ -n "$spin" ] && ! gone "$spin" && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
[ -n "$spin" ] && gone "$spin" && ok "it died with kevo (within $((i * 50)) ms)" ||
  bad "the spinning worker outlived kevo: $(ps -o pid,stat,etime,comm -p "$spin" 2>/dev/null | tail -1)"
[ -n "$spin" ] && kill -9 "$spin" 2>/dev/null

# ---- 2. a stopped worker ---------------------------------------------------------
"$K" eval --no-timing "$RS" "$SRC/tests/adversarial/cands/infinite_loop.c" >"$T/e2.out" 2>&1 &
KP=$!
ws=
i=0
while [ -z "$ws" ] && [ $i -lt 600 ]; do ws=$(workers_of "$KP"); sleep 0.05; i=$((i + 1)); done
for w in $ws; do kill -STOP "$w"; done
sleep 0.2
kill -9 "$KP"
wait "$KP" 2>/dev/null
KP=
sleep 0.5
left=
for w in $ws; do gone "$w" || left="$left $w"; done
[ -n "$ws" ] && [ -z "$left" ] && ok "stopped workers died with kevo ($(echo $ws | wc -w))" ||
  bad "stopped workers outlived kevo:${left:- none started}"
for w in $left; do kill -9 "$w" 2>/dev/null; done
echo "pdeath_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
