#!/bin/sh
# Two `kevo eval` processes at once on the cpu surface, as two users' shells
# would start them: both judge the good kernel `ok`, and their timings take
# turns on the cores (the device lock), so the two timing windows do not
# overlap. Each window is placed from what the process reports: it starts
# after its compile, checks and wait for the lock, and lasts its timing.
# usage: devlock_e2e.sh KEVO_BINARY SOURCE_DIR
set -u
K="$1"
SRC="$2"
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-devlock-e2e-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/e2e.db"
# A lock directory of its own: other kevo processes on this machine (other
# tests, other users of it) neither wait for these two nor make them wait.
export KEVO_LOCK_DIR="$T/locks"
task="$SRC/examples/tasks/rowsum"
"$K" device >/dev/null 2>&1 # the CPU's ceilings, once, before the two start

sa=$(date +%s.%N)
"$K" eval --surface cpu --json "$task" "$task/good.c" >"$T/a.json" 2>"$T/a.err" &
pa=$!
sb=$(date +%s.%N)
"$K" eval --surface cpu --json "$task" "$task/good.c" >"$T/b.json" 2>"$T/b.err" &
pb=$!
wait $pa
ra=$?
wait $pb
rb=$?
if [ $ra -ne 0 ] || [ $rb -ne 0 ]; then
  echo "FAIL exit statuses $ra and $rb (expected 0 and 0)"
  cat "$T/a.err" "$T/b.err"
  head -c 1500 "$T/a.json" "$T/b.json"
  exit 1
fi
python3 - "$T/a.json" "$T/b.json" "$sa" "$sb" <<'PY'
import json, sys
runs = []
for path, start in ((sys.argv[1], float(sys.argv[3])), (sys.argv[2], float(sys.argv[4]))):
    j = json.load(open(path))
    s = j["seconds"]
    if j["verdict"] != "ok" or "timing" not in j:
        sys.exit("FAIL %s: verdict %s: %s" % (path, j["verdict"], j["detail"]))
    begin = start + s["compile"] + s["check"] + s["lock_wait"]
    runs.append((begin, begin + s["timing"], s["lock_wait"], s["timing"], j["timing"]["median_us"]))
    print("eval %d: compile %.2f s, checks %.2f s, waited %.2f s for the cores, timing %.2f s, "
          "median %.1f us" % (len(runs), s["compile"], s["check"], s["lock_wait"], s["timing"],
                              j["timing"]["median_us"]))
(a0, a1, wa, ta, _), (b0, b1, wb, tb, _) = runs
overlap = min(a1, b1) - max(a0, b0)
# What the reports leave out (process start, task load, the policy scan) is
# tens of milliseconds: 0.3 s of slack. Without the lock the two windows,
# seconds long and started together, overlap almost wholly.
if overlap > 0.3:
    sys.exit("FAIL the two timings overlapped for %.2f s (windows %.2f-%.2f and %.2f-%.2f)"
             % (overlap, a0, a1, b0, b1))
if max(wa, wb) < 0.5 * min(ta, tb):
    sys.exit("FAIL neither evaluation waited for the other's timing (waits %.2f s and %.2f s)"
             % (wa, wb))
print("PASS two concurrent evaluations: both ok, timings one after the other "
      "(overlap %.2f s, the second waited %.2f s)" % (max(overlap, 0.0), max(wa, wb)))
PY
