#!/bin/sh
# kevo synthesize against a hostile model (issue 30): the loopback stand-in
# answers with a module that, when kevo runs it, tries
#   - the network: a TCP connection to a listener on 127.0.0.1, and a
#     connection to a Unix socket by its path (a network namespace does not
#     cover those: only the seccomp filter, which denies connect, does);
#   - writes outside its scratch: a planted file in a home directory, in
#     /dev/shm and in /tmp;
#   - reads of private things: a 0600 file of the user's, the API key kevo
#     was given (its own environment and kevo's /proc/PID/environ), and
#     kevo's memory (process_vm_readv, which no file rule covers);
# and raises an error saying what each gave it. Run by plain Python first,
# the attacks succeed (else the test could not tell), then through kevo
# synthesize every one fails, and nothing it tried is left anywhere.
# Needs a Python with torch (kevo synthesize runs the module): exits 77
# (skipped, with a message) without.
# usage: synth_hostile.sh KEVO_BINARY LLM_STANDIN SOURCE_DIR
if [ -n "${KEVO_TORCH_TESTS_SKIP:-}" ]; then
  echo "SKIPPED: $KEVO_TORCH_TESTS_SKIP"
  exit 77
fi
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
STANDIN=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "SKIPPED: $PY cannot import torch, and kevo synthesize runs every module it is given;"
  echo "         install CPU torch (pip install torch) or set KEVO_PYTHON (.ci/run installs it)"
  exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-synth-hostile-XXXXXX")
TAG="kevo-planted-$$"
PIDS=
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  rm -rf "$T" "/dev/shm/$TAG" "/tmp/$TAG"
}
trap cleanup EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
export KEVO_DB="$T/synth.db"
export XDG_CONFIG_HOME="$T/config"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }

# Listeners: TCP on loopback and a Unix socket by path; each connection is a
# line in its log.
"$PY" - "$T" <<'PY' &
import os, socket, sys, threading, time
t = sys.argv[1]
tcp = socket.socket(); tcp.bind(("127.0.0.1", 0)); tcp.listen(8)
uni = socket.socket(socket.AF_UNIX); uni.bind(t + "/sock"); uni.listen(8)
os.chmod(t + "/sock", 0o777)
def serve(s, log):
    while True:
        c, _ = s.accept()
        open(log, "a").write("connected\n")
        c.close()
threading.Thread(target=serve, args=(tcp, t + "/tcp.log"), daemon=True).start()
threading.Thread(target=serve, args=(uni, t + "/unix.log"), daemon=True).start()
open(t + "/port.tmp", "w").write(str(tcp.getsockname()[1]))
os.rename(t + "/port.tmp", t + "/port")
time.sleep(300)
PY
PIDS="$PIDS $!"
i=0
while [ ! -s "$T/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$T/port")
mkdir -p "$T/home"
printf 'kevo-secret-%s\n' "$$" >"$T/secret.txt"
chmod 600 "$T/secret.txt"
KEY="sk-kevo-hostile-$$"

# The module the hostile model writes. Its report: one word per attack,
# "got" when it worked.
cat >"$T/module.py" <<PYEOF
import ctypes
import os
import socket

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2


batch_size = 8
dim = 16


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []


def attack(f):
    try:
        return "got" if f() else "no"
    except Exception as e:
        return "denied(%s)" % type(e).__name__


def tcp():
    socket.create_connection(("127.0.0.1", $PORT), timeout=2).close()
    return True


def unix():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(2)
    s.connect("$T/sock")
    s.close()
    return True


def plant(path):
    def f():
        with open(path, "w") as fh:
            fh.write("planted by a module")
        return True
    return f


def secret():
    return "kevo-secret" in open("$T/secret.txt").read()


def key():
    if "$KEY" in "".join(os.environ.values()):
        return True
    return b"$KEY" in open("/proc/%d/environ" % os.getppid(), "rb").read()


class IOV(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def memory():
    # kevo's (the parent's) first mapped page, read across processes
    pid = os.getppid()
    with open("/proc/%d/maps" % pid) as f:
        start = int(f.readline().split("-")[0], 16)
    buf = ctypes.create_string_buffer(64)
    local, remote = IOV(ctypes.addressof(buf), 64), IOV(start, 64)
    libc = ctypes.CDLL(None, use_errno=True)
    n = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if n < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return n > 0


report = " ".join("%s=%s" % (n, attack(f)) for n, f in [
    ("tcp", tcp), ("unix", unix), ("home", plant("$T/home/.bashrc_planted_by_llm")),
    ("shm", plant("/dev/shm/$TAG")), ("tmp", plant("/tmp/$TAG")), ("secret", secret),
    ("key", key), ("mem", memory)])
raise RuntimeError("HOSTILE " + report + " END")
PYEOF

# Unsandboxed (as kevo ran modules before issue 30), every attack works:
# the test can fail.
KEVO_TEST_KEY=$KEY "$PY" "$T/module.py" >"$T/plain.log" 2>&1
plain=$(grep -o 'HOSTILE tcp=.* END' "$T/plain.log")
echo "plain Python: $plain"
case "$plain" in
*"tcp=got unix=got home=got shm=got tmp=got secret=got key=got mem=got"*)
  ok "unsandboxed, the module reaches both sockets, plants three files, reads the secret, the key and its parent's memory" ;;
*) bad "unsandboxed, the module did not do what the test needs to show the sandbox: $plain" ;;
esac
rm -f "$T/home/.bashrc_planted_by_llm" "/dev/shm/$TAG" "/tmp/$TAG" "$T/tcp.log" "$T/unix.log"

# The stand-in model: the hostile module as its one reply.
{
  printf '=== reply\nName: hostile_scale\n\n```python\n'
  cat "$T/module.py"
  printf '```\n'
} >"$T/replies.txt"
rm -f "$T/sport"
"$STANDIN" --port-file "$T/sport" --replies "$T/replies.txt" --max-requests 20 --lifetime 300 &
PIDS="$PIDS $!"
i=0
while [ ! -s "$T/sport" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
URL="http://127.0.0.1:$(cat "$T/sport")/v1"
cd "$T" || exit 1
KEVO_TEST_KEY=$KEY "$K" synthesize --n 1 --concurrency 1 --jobs 1 --deadline 60 -o practice \
  --base-url "$URL" --model m --api-key-env KEVO_TEST_KEY >synth.out 2>synth.err
rc=$?
cat synth.err synth.out
# A connection of the test's own after kevo's run: the listener takes them in
# order, so once it has logged this one a module's would be logged before it.
"$PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5).close()' "$PORT"
"$PY" -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.close()' "$T/sock"
i=0
while { [ ! -s tcp.log ] || [ ! -s unix.log ]; } && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
got=$(grep -ho 'HOSTILE tcp=.* END' synth.err synth.out | head -n 1)
detail=$(sqlite3 "$KEVO_DB" "select group_concat(detail, ' ') from synth_attempts" 2>/dev/null)
echo "kevo synthesize: $got"
[ -n "$got" ] && ok "the module ran under kevo synthesize and reported (exit $rc)" ||
  bad "no report of the module's attacks (exit $rc)"
for a in tcp unix home shm tmp secret key mem; do
  case "$got" in
  *" $a=denied("*) ok "kevo synthesize: $a denied" ;;
  *) bad "kevo synthesize: $a was not denied: $got" ;;
  esac
done
[ "$(wc -l <tcp.log | tr -d ' ')" = 1 ] && ok "no TCP connection reached the listener but the test's own" ||
  bad "the module reached the TCP listener ($(wc -l <tcp.log) connections, one the test's)"
[ "$(wc -l <unix.log | tr -d ' ')" = 1 ] && ok "no connection reached the Unix socket but the test's own" ||
  bad "the module reached the Unix socket ($(wc -l <unix.log) connections, one the test's)"
for f in "$T/home/.bashrc_planted_by_llm" "/dev/shm/$TAG" "/tmp/$TAG"; do
  [ -e "$f" ] && bad "a file was planted: $f" || ok "nothing planted at $f"
done
if grep -q "kevo-secret-$$\|$KEY" synth.err synth.out || echo "$detail" | grep -q "kevo-secret-$$\|$KEY"; then
  bad "the secret or the key appears in kevo's output or store"
else
  ok "neither the secret nor the key appears in kevo's output or store"
fi
echo "synth_hostile: $pass passed, $fail failed"
[ "$fail" = 0 ]
