#!/bin/sh
# The world-writable directories (issue 30): /dev/shm, which every user of
# the host shares, and /tmp outside a child's scratch. A candidate and a C
# reference (kevo-worker) and a torch reference.py (the torch reference
# worker) each try to create a file in both while kevo judges them; none may
# appear. The same code run outside kevo creates them (so the test can
# tell). The torch part is skipped, with a message, without a Python with
# torch; the C part always runs.
#   shared_dirs_e2e.sh KEVO SRC
set -u
KEVO=$1
SRC=$2
PY=${KEVO_PYTHON:-python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-shared-dirs-XXXXXX")
TAG="kevo-shared-$$"
cleanup() { rm -rf "$T" /dev/shm/"$TAG"-* /tmp/"$TAG"-*; }
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/kevo.db"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
planted() { ls /dev/shm/"$TAG"-* /tmp/"$TAG"-* 2>/dev/null; }

# ---- kevo-worker: a candidate and a C reference ----------------------------
mkdir -p "$T/rowsum"
sed 's/"rows": 8192, "cols": 8192/"rows": 256, "cols": 512/' "$SRC/examples/tasks/rowsum/task.json" \
  >"$T/rowsum/task.json"
# plant WHO: C that creates /dev/shm/TAG-WHO and /tmp/TAG-WHO, once.
plant() {
  cat <<C
#include <fcntl.h>
#include <unistd.h>
static void plant_$1(void) {
  static int done;
  if (done++)
    return;
  const char *p[] = {"/dev/shm/$TAG-$1", "/tmp/$TAG-$1"};
  for (int i = 0; i < 2; i++) {
    int fd = open(p[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0)
      close(fd);
  }
}
C
}
{
  plant ref
  sed 's/^void rowsum(const float \*x, float \*y, int rows, int cols) {/&\n  plant_ref();/' \
    "$SRC/examples/tasks/rowsum/reference.c"
} >"$T/rowsum/reference.c"
{
  plant cand
  sed 's/^void rowsum(const float \*x, float \*y, int rows, int cols) {/&\n  plant_cand();/' \
    "$SRC/examples/tasks/rowsum/reference.c"
} >"$T/cand.c"
grep -q "plant_ref();" "$T/rowsum/reference.c" && grep -q "plant_cand();" "$T/cand.c" ||
  { echo "FAIL the test could not write its planting reference and candidate"; exit 1; }

# The control: the same code, called outside kevo, plants all four files.
cat >"$T/main.c" <<'C'
void rowsum(const float *x, float *y, int rows, int cols);
int main(void) {
  float x[4] = {1, 2, 3, 4}, y[2];
  rowsum(x, y, 2, 2);
  return y[0] == 3 && y[1] == 7 ? 0 : 1;
}
C
if cc -o "$T/ref_main" "$T/main.c" "$T/rowsum/reference.c" &&
  cc -o "$T/cand_main" "$T/main.c" "$T/cand.c" && "$T/ref_main" && "$T/cand_main" &&
  [ "$(planted | wc -l | tr -d ' ')" = 4 ]; then
  ok "outside kevo the reference and the candidate plant a file in /dev/shm and /tmp each"
else
  bad "outside kevo the planting code did not plant four files: $(planted | tr '\n' ' ')"
fi
rm -f /dev/shm/"$TAG"-* /tmp/"$TAG"-*

"$KEVO" eval --surface cpu --no-timing "$T/rowsum" "$T/cand.c" >"$T/eval.out" 2>&1
rc=$?
cat "$T/eval.out"
[ $rc = 0 ] && grep -q "verdict: ok\|verdict *ok\|: ok" "$T/eval.out" &&
  ok "kevo eval judged the planting candidate against the planting reference (ok: both still compute)" ||
  bad "kevo eval of the planting candidate exited $rc"
left=$(planted)
[ -z "$left" ] && ok "kevo-worker: neither the candidate nor the reference created a file in /dev/shm or /tmp" ||
  bad "kevo-worker: files were created: $left"
rm -f /dev/shm/"$TAG"-* /tmp/"$TAG"-*

# ---- the torch reference worker ---------------------------------------------
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED (torch part): $KEVO_TORCH_TESTS_SKIP"
elif ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED (torch part): $PY cannot import torch; install CPU torch or set KEVO_PYTHON"
else
  "$KEVO" import -o "$T/tasks" "$SRC/examples/kernelbench/1_Softmax_rows.py" >"$T/import.log" 2>&1 ||
    { cat "$T/import.log"; bad "kevo import of 1_Softmax_rows.py"; }
  R="$T/tasks/1_Softmax_rows/reference.py"
  # Planting when the worker loads it (errors ignored: a reference that
  # cannot plant still runs, and the check below is of the host's dirs).
  {
    echo "for _p in ('/dev/shm/$TAG-torch', '/tmp/$TAG-torch'):"
    echo "    try:"
    echo "        open(_p, 'w').close()"
    echo "    except OSError:"
    echo "        pass"
    cat "$R"
  } >"$T/ref.py"
  "$PY" "$T/ref.py" && [ "$(planted | wc -l | tr -d ' ')" = 2 ] &&
    ok "outside kevo the torch reference plants a file in /dev/shm and /tmp" ||
    bad "outside kevo the torch reference did not plant two files: $(planted | tr '\n' ' ')"
  rm -f /dev/shm/"$TAG"-* /tmp/"$TAG"-*
  mv "$T/ref.py" "$R"
  "$KEVO" eval --surface cpu --no-timing "$T/tasks/1_Softmax_rows" \
    "$SRC/tests/import/torch/softmax_ok.c" >"$T/teval.out" 2>&1
  rc=$?
  cat "$T/teval.out"
  [ $rc = 0 ] && ok "kevo eval against the planting torch reference: ok" ||
    bad "kevo eval against the planting torch reference exited $rc"
  left=$(planted)
  [ -z "$left" ] && ok "torch reference worker: no file created in the host's /dev/shm or /tmp" ||
    bad "torch reference worker: files were created: $left"
fi
echo "shared_dirs_e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
