#!/bin/bash
# GPU test (CTest label gpu) of the debugger and the profiler through kevo:
# compute-sanitizer finds the planted out-of-bounds write (memcheck) and the
# planted shared-memory race (racecheck) and names their lines; the good
# rowsum gets no findings; ncu profiles the good rowsum. Usage: KEVO SRC
set -u
K=$1; S=$2; T=$S/examples/tasks/rowsum
fail() { echo "FAIL: $*"; exit 1; }
export KEVO_CACHE_DIR=${KEVO_CACHE_DIR:-$(mktemp -d)}
py() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); $1" "$2"; }
o=$(mktemp)
$K sanitize --json $T $S/tests/debug/oob.cu >$o; rc=$?
[ $rc = 1 ] || fail "oob.cu: exit $rc, want 1 (findings)"
py 'f=[x for x in r["debug"]["findings"] if x["tool"]=="memcheck"]; assert f and f[0]["line"]==13 and "write" in f[0]["kind"], r["debug"]' $o || fail "oob.cu: memcheck did not name line 13"
$K sanitize --json $T $S/tests/debug/race.cu >$o
py 'f=[x for x in r["debug"]["findings"] if x["tool"]=="racecheck"]; assert f and 17 in (f[0]["line"], f[0].get("line2")), r["debug"]' $o || fail "race.cu: racecheck did not name line 17"
$K sanitize --json $T $T/good.cu >$o; rc=$?
[ $rc = 0 ] || fail "good.cu: exit $rc, want 0"
py 'assert r["debug"]["findings"]==[] and r["debug"]["tools"], r["debug"]' $o || fail "good.cu: findings on a correct kernel"
$K profile --json $T $T/good.cu >$o || fail "profile good.cu: exit $?"
py 'k=r["profile"]["kernels"]; assert k and k[0]["duration_us"]>0 and k[0]["achieved_occupancy_pct"]>0, r["profile"]' $o || fail "profile: no kernel metrics"
echo ok
