#!/bin/sh
# kevo report at scale: for each size, a stand-in store of an ada-like run of
# N nodes (tests/report/report_fixture: every verdict, diffs, plans, gate
# verdicts, two LLM calls a node, rules), the page written by kevo report,
# then loaded in headless Chromium. Prints a table: the page's size, kevo
# report's time, and two browser times, each the median of three loads:
# "laid out" is read from the page itself (navigation start to every node
# drawn, the script done and the page laid out: report.js's data-render-ms),
# "painted" is how much longer a headless screenshot of the page takes than
# one of an empty page (so it includes the paint, and not Chromium's start).
# usage: bench/report.sh [BUILD_DIR] [NODES...]    (default: build 1000 10000)
set -eu
BUILD=${1:-build}
[ $# -gt 0 ] && shift
SIZES=${*:-1000 10000}
K="$BUILD/kevo"
FX="$BUILD/tests/report/report_fixture"
[ -x "$K" ] && [ -x "$FX" ] || { echo "bench/report.sh: build $K and $FX first (cmake --build $BUILD)" >&2; exit 2; }
CHROME=
for c in ${KEVO_CHROMIUM:-} chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$c" >/dev/null 2>&1; then CHROME=$(command -v "$c"); break; fi
done
[ -n "$CHROME" ] || { echo "bench/report.sh: install chromium (apt-get install chromium)" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-report-bench-XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME="$T/home" XDG_CONFIG_HOME="$T/home/.config" XDG_CACHE_HOME="$T/home/.cache"
mkdir -p "$HOME"
now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
median3() { printf '%s\n%s\n%s\n' "$1" "$2" "$3" | sort -n | sed -n 2p; }
# chrome ARGS...: headless, no network, within a deadline
chrome() {
  timeout 300 "$CHROME" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-extensions --disable-background-networking --proxy-server=127.0.0.1:9 \
    --host-resolver-rules='MAP * ~NOTFOUND' "$@" 2>/dev/null
}
# shot URL: the seconds a headless screenshot of URL takes, start to exit
shot() {
  s0=$(now)
  chrome --user-data-dir="$T/profile-shot" --hide-scrollbars --window-size=1400,1600 \
    --screenshot="$T/shot.png" "$1" >/dev/null
  s1=$(now)
  calc "$s1 - $s0"
}
echo '<!doctype html><title>empty</title>' >"$T/empty.html"

echo "device: $(uname -sr), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "chromium: $("$CHROME" --version 2>/dev/null | head -1)"
echo
echo "| nodes | page size | kevo report | browser: load to laid out | browser: load to painted |"
echo "|---:|---:|---:|---:|---:|"
for n in $SIZES; do
  db="$T/r$n.db"
  "$FX" --db "$db" --nodes "$n" >"$T/fx$n.json"
  t1=$(now)
  "$K" report --db "$db" -o "$T/r$n.html" 1 >/dev/null 2>"$T/report$n.err"
  t2=$(now)
  size=$(wc -c <"$T/r$n.html")
  ms=
  painted=
  for i in 1 2 3; do
    chrome --user-data-dir="$T/profile$i" --dump-dom "file://$T/r$n.html" >"$T/dom$n.html"
    m=$(sed -n 's/.*data-render-ms="\([0-9]*\)".*/\1/p' "$T/dom$n.html" | head -1)
    nodes=$(sed -n 's/.*data-nodes="\([0-9]*\)".*/\1/p' "$T/dom$n.html" | head -1)
    errs=$(sed -n 's/.*data-errors="\([0-9]*\)".*/\1/p' "$T/dom$n.html" | head -1)
    [ "$nodes" = "$n" ] && [ "$errs" = 0 ] ||
      { echo "bench/report.sh: the page of $n nodes drew ${nodes:-none} with ${errs:-?} errors" >&2; exit 1; }
    ms="$ms $m"
    empty=$(shot "file://$T/empty.html")
    page=$(shot "file://$T/r$n.html")
    painted="$painted $(calc "$page - $empty")"
  done
  # shellcheck disable=SC2086
  printf '| %d | %.1f MiB | %.2f s | %d ms | %.2f s |\n' "$n" "$(calc "$size / 1048576")" \
    "$(calc "$t2 - $t1")" "$(median3 $ms)" "$(median3 $painted)"
done
