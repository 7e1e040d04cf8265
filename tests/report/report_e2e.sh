#!/bin/sh
# kevo report and kevo runs show on a stand-in store (report_fixture): the
# page as a file (self-contained, one script of kevo's own, hostile strings
# escaped, the data block unbreakable, long texts cut with a note) and the
# terminal summary; and the errors a user can make.
# usage: report_e2e.sh KEVO_BINARY REPORT_FIXTURE
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
FX=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-report-e2e-XXXXXX")
trap 'rm -rf "$T"' EXIT
[ -n "${KEEP:-}" ] && trap - EXIT && echo "kept $T"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
check() { if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', want '$3'"; fi; }
# json FIELD: a field of the fixture's summary line
json() { sed -n "s/.*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$T/fx.json"; }
cd "$T" || exit 1
DB="$T/kevo.db"

"$FX" --db "$DB" --nodes 60 >"$T/fx.json" || { echo "FAIL the fixture"; exit 1; }
RUN=$(json run)
TUNE=$(json tune_run)
BEST=$(json best)
HOSTILE=$(json hostile_node)

# ---- the latest run, default output ------------------------------------------
"$K" report --db "$DB" >"$T/out.txt" 2>"$T/err.txt"
check "report exits 0" $? 0
check "the path written is printed" "$(grep -c ': report.html$' "$T/out.txt")" 1
[ -s report.html ] && ok "report.html in the current directory" || bad "no report.html"
grep -q "<title>kevo report: run $TUNE (rowsum)</title>" report.html &&
  ok "no RUN: the latest run ($TUNE)" || bad "the latest run is not the one reported"

# ---- two runs in one page ----------------------------------------------------------
"$K" report --db "$DB" -o "$T/both.html" "$RUN" "$TUNE" >"$T/out2.txt" 2>&1
check "report of two runs exits 0" $? 0
H="$T/both.html"
check "one section per run" "$(grep -c '<section class="run"' "$H")" 2
check "nodes drawn: every node of both runs" "$(grep -o '<circle class="n v[0-9]*"' "$H" | wc -l)" \
  $(( 60 + 6 ))
check "curve points: every candidate" "$(grep -o '<circle class="pt v[0-9]*"' "$H" | wc -l)" $(( 60 + 6 ))
grep -q "$BEST&#215;\|$BEST×" "$H" && ok "the best speedup ($BEST) is shown" || bad "best $BEST not shown"
grep -q "kevo best $RUN -o best-run$RUN.c" "$H" && ok "where the best kernel is" || bad "no kevo best line"

# Self-contained: nothing to fetch, one script of its own, a policy that
# allows only that script and that style (by hash) and no fetching.
check "script elements: kevo's, the palette and one data block per run" \
  "$(grep -o '<script' "$H" | wc -l)" 4
check "one executable script (the others are JSON)" \
  "$(grep -o '<script>' "$H" | wc -l)" 1
grep -q "http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-" "$H" &&
  ok "a Content-Security-Policy that fetches nothing" || bad "no CSP"
check "no external resource" "$(grep -Eio '<(link|img|iframe|object|embed)[ >]|src="|@import|url\(' "$H" | wc -l)" 0
grep -q '@font-face' "$H" && bad "a font is loaded" || ok "system fonts only"

# Hostile strings: text everywhere, and unable to close the data block.
check "the hostile source never appears raw" \
  "$(grep -c '</script><script>alert(1)</script>' "$H")" 0
check "nor the hostile markup" "$(grep -c '<img src=x onerror' "$H")" 0
grep -q '&lt;/script&gt;&lt;script&gt;document.documentElement.setAttribute(&#39;data-pwned&#39;' "$H" &&
  ok "hostile params escaped in the tooltips" || bad "hostile params not found escaped"
grep -q 'You cannot &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;' "$H" &&
  ok "a hostile rule is text" || bad "hostile rule not escaped"
grep -q '\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e' "$H" &&
  ok "in the data block: \\u003c escapes" || bad "the data block does not escape <"
# The data blocks parse as JSON and hold the hostile source intact.
if command -v python3 >/dev/null; then
  python3 - "$H" "$HOSTILE" >"$T/py.txt" 2>&1 <<'EOF'
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r'<script type="application/json" class="kv-data">(.*?)</script>', html, re.S)
assert len(blocks) == 2, len(blocks)
runs = [json.loads(b) for b in blocks]
node = [n for n in runs[0]["nodes"] if n["id"] == int(sys.argv[2])][0]
text = node.get("df", "") + node.get("pl", "") + node.get("cl", "")
assert "</script><script>alert(1)</script>" in text, "hostile text lost"
assert all("v" in n and "s" in n for r in runs for n in r["nodes"])
big = [n for n in runs[0]["nodes"] if "cut at 65536 of" in n.get("df", "") + n.get("src", "")]
assert big, "no source was cut at 64 KiB"
print("ok", len(runs[0]["nodes"]), len(runs[1]["nodes"]))
EOF
  check "data blocks are JSON with the hostile text intact, a long source cut" \
    "$(cat "$T/py.txt")" "ok 60 6"
else
  bad "python3 is needed to parse the data blocks"
fi
check "every verdict in the legend" \
  "$(sed -n "/id=\"run-$RUN\"/,/<\/section>/p" "$H" | grep -o '<i class="sw v[0-9]*"></i>' | wc -l)" \
  "$(json verdicts)"
check "the unknown verdict by its name in its tooltips (tree and curve)" \
  "$(grep -o 'exotic_verdict</title>' "$H" | wc -l)" 2
check "rules learnt, with their steps" \
  "$(sed -n "/id=\"run-$RUN\"/,/<\/section>/p" "$H" | grep -o '<td class="steps"><a ' | wc -l)" \
  "$(json rules)"
grep -q '<td>coder</td><td class="num">60</td><td class="num bad">' "$H" &&
  ok "LLM calls by role, failed ones counted" || bad "no coder row with failures"
grep -q "None: the tune strategy needs no model." "$H" && ok "tune: no LLM section" ||
  bad "tune run: LLM text"
grep -q 'Diff\|"df":"@@' "$H" && ok "diffs to parents embedded" || bad "no diffs"
grep -q '"db":"the starter"' "$H" && ok "a tuned root diffs against the starter" ||
  bad "tune roots not diffed against the starter"

# ---- kevo runs show ------------------------------------------------------------------
"$K" runs show --db "$DB" "$RUN" >"$T/show.txt" 2>&1
check "runs show exits 0" $? 0
check "runs show: one line per node" "$(grep -cE '^ +[0-9]+ [a-z]+.*: [a-z_]+' "$T/show.txt")" 60
grep -q "^  best       $BEST""x ok at step" "$T/show.txt" && ok "runs show: the best" ||
  bad "runs show best: $(grep best "$T/show.txt")"
grep -q "^  model      stand-in-coder  (openai, http://127.0.0.1:8000/v1)" "$T/show.txt" &&
  ok "runs show: the model" || bad "runs show: model"
grep -q "^      [0-9]" "$T/show.txt" && ok "runs show: children indented" || bad "no indentation"
grep -q ": exotic_verdict$" "$T/show.txt" && ok "runs show: an unknown verdict by name" ||
  bad "unknown verdict"
check "runs show: no control characters" "$(tr -d '\n\t' <"$T/show.txt" | LC_ALL=C grep -c '[[:cntrl:]]')" 0
"$K" runs --db "$DB" >"$T/runs.txt" 2>&1
check "kevo runs still lists" "$(grep -c rowsum "$T/runs.txt")" 2

# ---- a bench (kevo bench): its score, curve and tasks -----------------------------------
"$K" report --db "$DB" --bench -o "$T/bench.html" >"$T/b.txt" 2>&1
check "report --bench exits 0" $? 0
grep -q "report of the latest bench (0 nodes, 5 bench tasks" "$T/b.txt" && ok "bench: what was written" ||
  bad "bench: $(cat "$T/b.txt")"
B="$T/bench.html"
check "bench: one row per task" "$(grep -o '<tr class="task">' "$B" | wc -l)" 5
check "bench: correct 2 of 5 (fast_0 40%)" "$(grep -c 'correct (fast_0)</div><div class="v">40%' "$B")" 1
# The geomean of the correct tasks (best and 1.25) is on the card, the "all"
# row and level 1's row (both correct tasks are level 1's).
G=$(python3 -c "print('%.2f' % ((float('$BEST') * 1.25) ** 0.5))")
check "bench: geomean over the correct ones ($G)" "$(grep -o ">$G×<" "$B" | wc -l)" 3
grep -q 'data-pwned' "$B" && ! grep -q '<img src=x' "$B" && ok "bench: a hostile detail is text" ||
  bad "bench: hostile detail not escaped"
check "bench: the fast_p curve's four marks" "$(grep -o 'class="v0 fp"' "$B" | wc -l)" 4
"$K" report --db "$DB" --bench 99 >"$T/b2.txt" 2>&1
check "unknown bench: exit 2" $? 2
grep -q "bench 99 is not in" "$T/b2.txt" && ok "unknown bench: says so" || bad "$(cat "$T/b2.txt")"
"$K" report --db "$DB" -o "$T/mixed.html" "$RUN" --bench >/dev/null 2>&1
check "a run and a bench in one page" "$(grep -c '<section class="run"\|<section class="bench"' "$T/mixed.html")" 2

# ---- errors ----------------------------------------------------------------------------
"$K" report --db "$DB" 999 >"$T/e1.txt" 2>&1
check "unknown run: exit 2" $? 2
grep -q "run 999 is not in .*see 'kevo runs'" "$T/e1.txt" && ok "unknown run: says so" ||
  bad "unknown run message: $(cat "$T/e1.txt")"
"$K" report --db "$DB" abc >"$T/e2.txt" 2>&1
check "bad run id: exit 2" $? 2
grep -q "'abc' is not a run id" "$T/e2.txt" && grep -q "usage: kevo report" "$T/e2.txt" &&
  ok "bad run id: says so, with usage" || bad "bad run id message"
"$K" report --db "$T/empty.db" >"$T/e3.txt" 2>&1
check "empty store: exit 2" $? 2
grep -q "holds no runs yet" "$T/e3.txt" && ok "empty store: says so" || bad "empty store message"
"$K" report --db "$DB" -o "$T/no/such/dir/r.html" >"$T/e4.txt" 2>&1
check "unwritable output: exit 2" $? 2
grep -q "pass another -o FILE" "$T/e4.txt" && ok "unwritable output: names the fix" ||
  bad "unwritable output: $(cat "$T/e4.txt")"
"$K" runs show --db "$DB" 999 >"$T/e5.txt" 2>&1
check "runs show unknown run: exit 2" $? 2
"$K" runs show --db "$DB" --frob >"$T/e6.txt" 2>&1
check "runs show bad flag: exit 2" $? 2

echo "report_e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
