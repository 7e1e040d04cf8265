#!/bin/sh
# A skill card's verdicts are the exporting host's word (issue 30): kevo
# skills export carries each card's kernels, and kevo skills import --task
# judges every admitted card of that task here before storing it. A lying
# file (a card "admitted" whose kernel writes zeros) is stored as rejected
# and said so; an honest one stays admitted, judged again. Without --task
# the import says which cards were not judged here (the control: the lie is
# then stored as admitted, as every import did before).
#   skills_rejudge_e2e.sh KEVO SRC
set -u
K=$1
SRC=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-skills-rejudge-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="${KEVO_CACHE_DIR:-$T/cache}"
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() { fail=$((fail + 1)); echo "FAIL $1"; }
mkdir -p "$T/rowsum"
sed 's/"rows": 8192, "cols": 8192/"rows": 256, "cols": 512/' "$SRC/examples/tasks/rowsum/task.json" \
  >"$T/rowsum/task.json"
cp "$SRC/examples/tasks/rowsum/reference.c" "$T/rowsum/"

# 1. export carries the kernels: a lineage walked here, exported.
export KEVO_DB="$T/walk.db"
"$K" lineage extract --no-timing "$T/rowsum" "$SRC/examples/tasks/rowsum/expert.c" \
  >"$T/walk.out" 2>&1 || { cat "$T/walk.out"; bad "kevo lineage extract exited $?"; }
"$K" skills export --all "$T/export.json" >/dev/null 2>&1
python3 - "$T/export.json" <<'PY' && ok "skills export: every card carries its two kernels" ||
import json, sys
cards = json.load(open(sys.argv[1]))["skills"]
assert cards, "no cards"
for c in cards:
    k = c["carrier"]
    assert k.get("before_src") and k.get("after_src"), (c["id"], sorted(k))
print(len(cards), "cards, each with before_src and after_src")
PY
  bad "skills export: a card without its kernels"

# 2. a file of two "admitted" cards: one honest, one whose kernel writes zeros
cat >"$T/zeros.c" <<'C'
void rowsum(const float *x, float *y, int rows, int cols) {
  (void)x;
  (void)cols;
  for (int r = 0; r < rows; r++)
    y[r] = 0.0f;
}
C
python3 - "$SRC/tests/skills/labelled_skills.json" "$SRC/examples/tasks/rowsum/good.c" \
  "$T/zeros.c" "$T/cards.json" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
base = [c for c in d["skills"] if c["id"] == "cpu/LANES"][0]
out = []
for name, path in (("HONEST", sys.argv[2]), ("LIAR", sys.argv[3])):
    c = copy.deepcopy(base)
    c["id"] = "x/" + name
    c["name"] = name
    c["provides"] = [name]
    c["carrier"]["after_src"] = open(path).read()
    out.append(c)
json.dump({"kevo_skills": 1, "skills": out}, open(sys.argv[4], "w"))
PY
status() { sqlite3 "$KEVO_DB" "select status from skills where uid = '$1'" 2>/dev/null; }

# The control: without --task nothing is judged here; said, and the lie is
# stored as admitted.
export KEVO_DB="$T/plain.db"
"$K" skills import "$T/cards.json" >"$T/plain.out" 2>&1
cat "$T/plain.out"
grep -q "2 not judged here" "$T/plain.out" &&
  grep -q "skill x/LIAR: not judged here (no --task names its task)" "$T/plain.out" &&
  ok "without --task: the import says the cards were not judged here" ||
  bad "without --task: no word that the cards were not judged here"
[ "$(status x/LIAR)" = admitted ] && ok "without --task the lying card is admitted (the test can tell)" ||
  bad "without --task the lying card is '$(status x/LIAR)' (the test cannot tell)"

export KEVO_DB="$T/judged.db"
"$K" skills import --task "$T/rowsum" "$T/cards.json" >"$T/judged.out" 2>&1
rc=$?
cat "$T/judged.out"
[ $rc = 0 ] && ok "skills import --task exits 0" || bad "skills import --task exited $rc"
grep -q "skill x/LIAR: the skills file says its kernel was accepted, this host judges it wrong_output" \
  "$T/judged.out" && ok "the lying card: both verdicts said" || bad "the lying card's disagreement is not said"
grep -q "skill x/HONEST: judged again here: ok" "$T/judged.out" && ok "the honest card: judged again here: ok" ||
  bad "the honest card was not judged again"
[ "$(status x/LIAR)" = rejected ] && ok "the lying card is stored as rejected" ||
  bad "the lying card is stored as '$(status x/LIAR)'"
[ "$(status x/HONEST)" = admitted ] && ok "the honest card stays admitted" ||
  bad "the honest card is stored as '$(status x/HONEST)'"
"$K" skills show x/LIAR >"$T/show.md" 2>&1
grep -q "judged again on import: the richer kernel is wrong_output here" "$T/show.md" &&
  grep -q '"what":"rejudge"' "$T/show.md" &&
  ok "skills show: the disagreement is recorded (a risk and the log)" ||
  { cat "$T/show.md"; bad "skills show does not record the disagreement"; }
"$K" skills list >"$T/list" 2>&1
cat "$T/list"
grep -q "x/LIAR *rejected" "$T/list" && grep -q "x/HONEST *admitted" "$T/list" &&
  ok "skills list: the lying card rejected, the honest one admitted" ||
  bad "skills list does not show the lying card rejected"
echo "skills_rejudge_e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
