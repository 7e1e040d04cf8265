#!/bin/sh
# cmake --install into a fresh prefix, then the installed kevo used from an
# empty directory with none of the build's variables: it finds its worker
# beside itself and its shipped helpers in PREFIX/share/kevo, and judges an
# installed example.
# usage: install_e2e.sh BUILD_DIR
set -u
B=$(cd "$1" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-install-XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
P="$T/prefix"
cmake --install "$B" --prefix "$P" >"$T/install.log" 2>&1 && ok "cmake --install" ||
  bad "cmake --install: $(tail -3 "$T/install.log")"
for f in bin/kevo bin/kevo-worker bin/kevo-sandbox bin/kevo-nvrtc share/kevo/kevo_import.py share/kevo/kevo_synth.py \
  share/kevo/kevo_torch_worker.py share/kevo/libkevo_pyrt.so \
  share/kevo/examples/tasks/rowsum/task.json share/doc/kevo/README.md share/doc/kevo/docs/gate.md \
  share/doc/kevo/docs/report.png; do
  [ -e "$P/$f" ] && ok "installed $f" || bad "not installed: $f"
done
mkdir "$T/empty"
cd "$T/empty" || exit 1
run() { env -u KEVO_WORKER -u KEVO_SOURCE_DIR -u KEVO_BIN KEVO_CACHE_DIR="$T/cache" \
  KEVO_DB="$T/kevo.db" "$@"; }
v=$(run "$P/bin/kevo" --version 2>&1)
case "$v" in "kevo "[0-9]*) ok "kevo --version: $v" ;; *) bad "kevo --version: $v" ;; esac
run "$P/bin/kevo" doctor >"$T/doctor.txt" 2>&1
grep -q "worker .*ok .*$P/bin/kevo-worker" "$T/doctor.txt" && ok "doctor: the worker beside kevo" ||
  bad "doctor: $(grep worker "$T/doctor.txt")"
RS="$P/share/kevo/examples/tasks/rowsum"
run "$P/bin/kevo" eval --no-timing "$RS" "$RS/good.c" >"$T/eval.txt" 2>&1
rc=$?
[ $rc = 0 ] && grep -q "^verdict: ok" "$T/eval.txt" && ok "an installed example judged ok" ||
  bad "eval: exit $rc: $(tail -3 "$T/eval.txt")"
[ -z "$(ls -A "$T/empty")" ] && ok "nothing written into the working directory" ||
  bad "written into the working directory: $(ls -A "$T/empty")"
echo "install_e2e: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
