#!/bin/sh
# The GPU side of a change to the gate or the worker, in one call of under
# 10 minutes on one GPU: every CTest test labelled gpu but skills_gpu (a
# KLineage walk of five experts at bench size: over 10 minutes on its own;
# run it with `ctest -L gpu -R skills_gpu` when lib/skills changes), then
# bench/gpu_fidelity.py (kevo's medians against triton's do_bench).
#
#   scripts/gpu-check.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR (default build) is a build configured with -DKEVO_REQUIRE_NVCC=ON,
# which may have been made on another machine: its tests name the source
# directory it was configured in, which this script links to the checkout it
# runs from when that directory is missing (as root on a lent machine).
# KEVO_DEVLIBS=DIR: shared libraries (libjansson, libseccomp, libcmocka,
# libcurl...) copied from the build machine; those this host lacks are put on
# LD_LIBRARY_PATH. KEVO_GPU_CHECK_SKIP: a CTest regex of tests left out
# (default ^skills_gpu$); KEVO_GPU_CHECK_BENCH_S: the bench's limit in
# seconds (240; 0 leaves the bench out). Writes OUT_DIR/gpu-tests.log, OUT_DIR/fidelity.md and
# OUT_DIR/summary.txt; prints the summary last. Exit 0 when every test
# passed and the bench ran.
set -u
BUILD=$(cd "${1:-build}" && pwd) || exit 2
OUTD=${2:-$BUILD/gpu-check}
SRC=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUTD"
OUTD=$(cd "$OUTD" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-gpu-check-XXXXXX")
trap 'rm -rf "$T"' EXIT
t0=$(date +%s)
say() { echo "$*" | tee -a "$OUTD/summary.txt"; }
: >"$OUTD/summary.txt"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L fails): run this on a machine with one" >&2
  exit 2
fi
# The build's source directory, as CMake recorded it.
home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")
if [ -n "$home" ] && [ ! -e "$home/CMakeLists.txt" ]; then
  mkdir -p "$(dirname "$home")" && ln -sfn "$SRC" "$home" ||
    { echo "gpu-check: the build names $home, which is missing and cannot be linked to $SRC" >&2; exit 2; }
fi
if [ -n "${KEVO_DEVLIBS:-}" ]; then
  mkdir -p "$T/libs"
  for f in "$KEVO_DEVLIBS"/*.so*; do
    n=$(basename "$f")
    ldconfig -p | grep -q "^[[:space:]]*$n " || ln -s "$(cd "$(dirname "$f")" && pwd)/$n" "$T/libs/$n"
  done
  export LD_LIBRARY_PATH="$T/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "libraries from KEVO_DEVLIBS: $(ls "$T/libs" | tr '\n' ' ')"
fi
# Tests query kevo's store with the sqlite3 shell; a host without it (the
# lent machines) gets one made of Python's sqlite3 module: list mode, '|'
# between columns, NULL as nothing, as the shell prints them.
if ! command -v sqlite3 >/dev/null 2>&1; then
  mkdir -p "$T/bin"
  cat >"$T/bin/sqlite3" <<'PYEOF'
#!/usr/bin/env python3
import sqlite3, sys
db, sql = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else sys.stdin.read())
c = sqlite3.connect(db, timeout=30)
try:
    try:
        rows = c.execute(sql).fetchall()
    except sqlite3.ProgrammingError:  # more than one statement
        rows = c.executescript(sql).fetchall()
    for row in rows:
        print("|".join("" if v is None else str(v) for v in row))
    c.commit()
except sqlite3.Error as e:
    sys.exit("Error: %s" % e)
PYEOF
  chmod +x "$T/bin/sqlite3"
  export PATH="$T/bin:$PATH"
  say "sqlite3: none here; a stand-in of Python's sqlite3 module"
fi
say "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1), $(date -u +%Y-%m-%d)"

# The tests, one at a time: the device lock serializes timing loops only,
# and a check or compile of one test beside another's empty phases reads as
# interference (seen: honest good_k.cu judged interference under -j3).
export KEVO_CACHE_DIR="$T/cache" KEVO_DB="$T/kevo.db"
ts=$(date +%s)
(cd "$BUILD" && ctest -L gpu -E "${KEVO_GPU_CHECK_SKIP:-^skills_gpu\$}" --timeout 420 --output-on-failure) \
  >"$OUTD/gpu-tests.log" 2>&1
trc=$?
say "ctest -L gpu -E '${KEVO_GPU_CHECK_SKIP:-^skills_gpu\$}': exit $trc in $(($(date +%s) - ts)) s"
grep -E "Test +#|tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run" "$OUTD/gpu-tests.log" |
  sed 's/^/  /' | tee -a "$OUTD/summary.txt"

# The bench: kevo against do_bench on the examples (RUNS=3 by default).
bs=${KEVO_GPU_CHECK_BENCH_S:-240}
[ "$bs" = 0 ] && { say "gpu-check: $(($(date +%s) - t0)) s in all (no bench)"; [ $trc = 0 ]; exit; }
ts=$(date +%s)
(cd "$SRC" && timeout "$bs" python3 bench/gpu_fidelity.py "$BUILD" "$OUTD/fidelity.md") \
  >"$T/fidelity.out" 2>&1
frc=$?
say "bench/gpu_fidelity.py: exit $frc in $(($(date +%s) - ts)) s"
tail -n 20 "$T/fidelity.out" | tee -a "$OUTD/summary.txt"
[ -s "$OUTD/fidelity.md" ] || cp "$T/fidelity.out" "$OUTD/fidelity.md"
say "gpu-check: $(($(date +%s) - t0)) s in all"
[ $trc = 0 ] && [ $frc = 0 ]
