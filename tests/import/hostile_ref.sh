#!/bin/sh
# The torch reference worker's sandbox against a hostile reference.py: at
# load it tries to write into a home directory, read a private file outside
# the task and connect to a listener on 127.0.0.1. Each must fail, and the
# same module run by the same Python outside kevo must succeed at all three
# (so that the test can tell); under kevo its memory is capped (RLIMIT_DATA
# 32 GiB). A cache whose torchinductor/ directory is another's (here: mode
# 0777) or a link is refused, naming the directory.
#   hostile_ref.sh KEVO SRC
# Exits 77 (skipped, with a message) when this Python has no torch.
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
KEVO=$1
SRC=$2
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch; install CPU torch or set KEVO_PYTHON"
  exit 77
fi
OUT=$(mktemp -d /tmp/kevo-hostile-ref-XXXXXX)
LPID=
trap '[ -n "$LPID" ] && kill "$LPID" 2>/dev/null; rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
T="$OUT/tasks/1_Softmax_rows"
mkdir "$OUT/home" "$OUT/private"
echo "SECRET-7d1f-not-for-references" >"$OUT/private/key"
chmod 600 "$OUT/private/key"

# A listener on 127.0.0.1: it records every connection it accepts.
"$PY" - "$OUT" <<'PYEOF' &
import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(4)
open(sys.argv[1] + "/port.tmp", "w").write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + "/port.tmp", sys.argv[1] + "/port")
s.settimeout(1)
end = time.time() + 600
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    open(sys.argv[1] + "/connected", "a").write("connection\n")
    c.close()
PYEOF
LPID=$!
for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$OUT/port" ] && break; sleep 1; done
[ -s "$OUT/port" ] || fail "the listener did not start"
PORT=$(cat "$OUT/port")

"$KEVO" import -o "$OUT/tasks" "$SRC/examples/kernelbench/1_Softmax_rows.py" >"$OUT/import.log" 2>&1 ||
  { cat "$OUT/import.log"; fail "import of 1_Softmax_rows.py"; }
sed -e "s|@HOME_DIR@|$OUT/home|" -e "s|@SECRET_FILE@|$OUT/private/key|" -e "s|@PORT@|$PORT|" \
  "$SRC/tests/import/hostile/attacks.py" >"$OUT/attacks.py"

# The control: outside kevo the same code does all three.
"$PY" "$OUT/attacks.py" >"$OUT/control.log" 2>&1
grep -q "write=DONE read=DONE:SECRET-7d1f-not-for-references connect=DONE" "$OUT/control.log" ||
  { cat "$OUT/control.log"; fail "the control run outside kevo did not manage the attacks"; }
[ -f "$OUT/home/planted_by_reference" ] && [ -s "$OUT/connected" ] ||
  fail "the control run left no trace"
rm -f "$OUT/home/planted_by_reference" "$OUT/connected"
echo "PASS: outside kevo the hostile module writes, reads and connects"

# The hostile reference: the attacks run when the worker loads it.
cat "$OUT/attacks.py" "$T/reference.py" >"$OUT/ref.py"
mv "$OUT/ref.py" "$T/reference.py"
"$KEVO" eval --surface cpu --json "$T" "$SRC/tests/import/torch/softmax_ok.c" \
  >"$OUT/eval.json" 2>"$OUT/eval.err"
rc=$?
cat "$OUT/eval.err"
sleep 1
grep -h "HOSTILE" "$OUT/eval.json" "$OUT/eval.err" | head -3
[ $rc != 0 ] || grep -q HOSTILE "$OUT/eval.json" "$OUT/eval.err" ||
  fail "the hostile reference's load did not report (exit $rc)"
[ -f "$OUT/home/planted_by_reference" ] && fail "reference.py wrote into the home directory"
grep -rq "SECRET-7d1f" "$OUT/eval.json" "$OUT/eval.err" && fail "reference.py read the private file"
[ -s "$OUT/connected" ] && fail "reference.py connected to the listener on 127.0.0.1"
grep -q "write=refused(PermissionError)" "$OUT/eval.json" "$OUT/eval.err" ||
  fail "the write was not refused by the sandbox"
grep -q "read=refused(PermissionError)" "$OUT/eval.json" "$OUT/eval.err" ||
  fail "the read was not refused by the sandbox"
grep -q "connect=refused" "$OUT/eval.json" "$OUT/eval.err" || fail "the connect was not refused"
grep -q "memory=capped(32 GiB)" "$OUT/eval.json" "$OUT/eval.err" || fail "no memory cap"
echo "PASS: under kevo the hostile reference's write, read and connect are refused"

# torch's code cache: a torchinductor/ another user could write is refused.
C="$OUT/cache"
mkdir -p "$C/torchinductor"
chmod 777 "$C/torchinductor"
KEVO_CACHE_DIR="$C" "$KEVO" eval --surface cpu --json "$T" "$SRC/tests/import/torch/softmax_ok.c" \
  >"$OUT/c1.json" 2>"$OUT/c1.err"
grep -q "$C/torchinductor: writable by others" "$OUT/c1.json" "$OUT/c1.err" ||
  { cat "$OUT/c1.err" "$OUT/c1.json"; fail "a torchinductor/ of mode 0777 was not refused"; }
rmdir "$C/torchinductor"
ln -s "$OUT/home" "$C/torchinductor"
KEVO_CACHE_DIR="$C" "$KEVO" eval --surface cpu --json "$T" "$SRC/tests/import/torch/softmax_ok.c" \
  >"$OUT/c2.json" 2>"$OUT/c2.err"
grep -q "$C/torchinductor: a symbolic link" "$OUT/c1.json" "$OUT/c2.err" "$OUT/c2.json" ||
  { cat "$OUT/c2.err" "$OUT/c2.json"; fail "a torchinductor/ that is a link was not refused"; }
echo "PASS: a torchinductor/ of mode 0777, or a link, is refused with the directory and the fix"
# Where no network namespace can be made, the worker refuses to run, unless
# KEVO_TORCH_ALLOW_NETWORK=1 (unshare made to fail here).
"$PY" - "$SRC/python" <<'PYEOF' || fail "the worker without a network namespace"
import os, sys
sys.path.insert(0, sys.argv[1])
import kevo_torch_worker as w
real = w.sb_libc()
class NoUnshare:
    def __getattr__(self, n):
        return getattr(real, n)
    def unshare(self, flags):
        return -1
w._libc = NoUnshare()
os.environ.pop("KEVO_TORCH_ALLOW_NETWORK", None)
st, notes = {"netns": "off"}, []
why = w.sb_start(st, notes)
assert why and "KEVO_TORCH_ALLOW_NETWORK=1" in why and st["netns"] == "unavailable", why
print("refused:", why[:100], "...")
os.environ["KEVO_TORCH_ALLOW_NETWORK"] = "1"
st, notes = {"netns": "off"}, []
assert w.sb_start(st, notes) is None and any("KEVO_TORCH_ALLOW_NETWORK=1" in n for n in notes)
PYEOF
echo "PASS: without a network namespace the worker refuses, unless KEVO_TORCH_ALLOW_NETWORK=1"
# kevo doctor shows the torch worker's layers, probed.
"$KEVO" doctor >"$OUT/doctor.txt" 2>&1
grep -q "torch reference worker  netns active, no_new_privs active, rlimits active (memory 32 GiB) at start; at the first LOAD landlock active (ABI [0-9]*, writes beside scratch closed), seccomp active" "$OUT/doctor.txt" ||
  { sed -n '/every child/,/lock dir/p' "$OUT/doctor.txt"; fail "kevo doctor does not show the torch worker's layers"; }
grep -q "compilers               netns active, no_new_privs active, landlock active, rlimits active" "$OUT/doctor.txt" ||
  fail "kevo doctor does not show the compilers' layers"
echo "PASS: kevo doctor shows every child's layers"
echo "PASS"
