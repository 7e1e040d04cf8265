#!/bin/sh
# KLineage end to end on the cpu surface, no LLM:
#   1. kevo lineage extract walks examples/tasks/rowsum/expert.c back to the
#      naive loop through the gate (at a small bench size), with a paired,
#      interleaved test per step; the 3x step (LANES) is admitted (its
#      interval's lower end at least 1.03 and p < 0.05); the
#      lineage, its steps and the cards are in the store;
#   2. a fragile expert: a simplification the gate rejects (wrong_output) is
#      recorded, the mechanism it needs stays untried, and the rejection is
#      a risk on the cards;
#   3. bad input: an expert the gate rejects, a dependency cycle, an unknown
#      mechanism, a skills file with a missing field or a future version:
#      exit 2 with the reason, and nothing written;
#   4. kevo skills list/show/export/import (twice: nothing doubles)/retire;
#   5. kevo skills match on the labelled cards (tests/skills/labelled_*.json)
#      through the CLI and the store's FTS5 index.
# usage: skills_e2e.sh KEVO_BINARY SOURCE_DIR
set -u
K=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-skills-e2e-XXXXXX")
[ -n "${KEVO_KEEP_TEST_DIR:-}" ] || trap 'rm -rf "$T"' EXIT
export KEVO_DB="$T/kevo.db"
FAILS=0
pass() { echo "ok   $1"; }
fail() { echo "FAIL $1"; FAILS=$((FAILS + 1)); }
check() { # check NAME COMMAND...: the command must succeed
  _name=$1; shift
  if "$@"; then pass "$_name"; else fail "$_name"; fi
}
q() { sqlite3 "$KEVO_DB" "$1"; }

# A small rowsum (the same task, a bench size this machine times in ms).
mkdir -p "$T/rowsum"
sed 's/"rows": 8192, "cols": 8192/"rows": 512, "cols": 1024/' "$SRC/examples/tasks/rowsum/task.json" \
  > "$T/rowsum/task.json"
cp "$SRC/examples/tasks/rowsum/reference.c" "$T/rowsum/"

# 1. the expert walked back
# 12 pairs: p < 0.05 survives any one pair flipped by a loaded host.
"$K" lineage extract --budget 0.2 --pairs 12 -o "$T/cards.json" "$T/rowsum" \
  "$SRC/examples/tasks/rowsum/expert.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err" "$T/out"
check "lineage extract exits 0" [ "$rc" = 0 ]
check "three steps, three accepted" grep -q '3 steps, 3 accepted' "$T/out"
check "the expert is gated first" grep -q 'expert   accepted' "$T/err"
"$K" lineage show >"$T/show" 2>&1
cat "$T/show"
check "lineage show: TREE_COMBINE removed first" sh -c "sed -n 4p '$T/show' | grep -q TREE_COMBINE"
check "lineage show: OMP_ROWS removed last" sh -c "sed -n 6p '$T/show' | grep -q OMP_ROWS"
check "LANES pays and is admitted (its interval clears 1.03, p < 0.05)" \
  sh -c "grep ' LANES ' '$T/show' | grep -q 'yes\$'"
check "every accepted step has a paired interval" [ "$(grep -c 'x \[' "$T/show")" = 3 ]
"$K" lineage show --markdown >"$T/md" 2>&1
check "lineage show --markdown: a table" grep -q '^| step | mechanism removed' "$T/md"
check "store: one lineage, three steps" [ "$(q 'SELECT COUNT(*) FROM lineages'):$(q 'SELECT COUNT(*) FROM lineage_steps')" = "1:3" ]
check "store: every simpler kernel's source" [ "$(q 'SELECT COUNT(*) FROM lineage_steps s JOIN sources o ON o.hash = s.child_hash')" = 3 ]
check "store: three cards" [ "$(q 'SELECT COUNT(*) FROM skills')" = 3 ]
check "the file from -o holds three cards" [ "$(grep -c '"carrier"' "$T/cards.json")" = 3 ]
check "a default anchor: the first distinctive line the forward edit adds" \
  [ "$(q "SELECT json_extract(card_json, '\$.anchor.pattern') FROM skills WHERE name = 'TREE_COMBINE'")" = "for (int w = LANES / 2; w > 0; w /= 2)" ]
check "an anchor= given is kept" \
  [ "$(q "SELECT json_extract(card_json, '\$.anchor.pattern') FROM skills WHERE name = 'LANES'")" = "acc[l] += xr[c + l];" ]
check "a card's carrier is the forward edit (+ the accumulators)" \
  sh -c "grep -q '+    float acc\[LANES\];' '$T/cards.json'"

# 2. a fragile expert: one step rejected, one untried
"$K" lineage extract --budget 0.2 --pairs 3 "$T/rowsum" "$SRC/tests/skills/fragile.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "fragile: exits 0" [ "$rc" = 0 ]
cat "$T/out"
check "--pairs 3: said up front that no step can be admitted" \
  grep -q 'warning: --pairs 3: a paired test on 3 pairs can never be significant' "$T/err"
check "--pairs 3: each measured step says why it is not admitted" \
  grep -q 'not admitted: 3 pairs can never be significant' "$T/err"
check "--pairs 3: nothing admitted, and the summary says why" \
  grep -q '0 admitted as skills (too few pairs to admit any)' "$T/out"
"$K" lineage show >"$T/show" 2>&1
cat "$T/show"
check "fragile: removing TAIL is rejected (wrong_output)" sh -c "grep ' TAIL ' '$T/show' | grep -q wrong_output"
check "fragile: ZERO_INIT is not tried (TAIL needs it)" sh -c "grep ZERO_INIT '$T/show' | grep -q skipped"
check "fragile: the rejection is a risk on UNROLL4's card" \
  [ "$(q "SELECT COUNT(*) FROM skills WHERE name = 'UNROLL4' AND card_json LIKE '%removing TAIL from this kernel was rejected%'")" = 1 ]

# 3. bad input: nothing half-written
before=$(q 'SELECT COUNT(*) FROM lineages'):$(q 'SELECT COUNT(*) FROM lineage_steps'):$(q 'SELECT COUNT(*) FROM skills')
"$K" lineage extract --budget 0.2 "$T/rowsum" "$SRC/tests/skills/broken_expert.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "an expert the gate rejects: exit 2" [ "$rc" = 2 ]
check "... with its verdict" grep -q 'the gate rejects the expert kernel (every mechanism on): wrong_output' "$T/err"
"$K" lineage extract "$T/rowsum" "$SRC/tests/skills/cycle.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "a dependency cycle: exit 2, the cycle named" sh -c "[ $rc = 2 ] && grep -q 'cycle.c: requires form a cycle: A -> B -> A' '$T/err'"
"$K" lineage extract "$T/rowsum" "$SRC/tests/skills/unknown.c" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "an unknown mechanism: exit 2, file, line and name" sh -c "[ $rc = 2 ] && grep -q 'unknown.c: line 7: KV_MECH_BB: no mechanism BB is declared' '$T/err'"
after=$(q 'SELECT COUNT(*) FROM lineages'):$(q 'SELECT COUNT(*) FROM lineage_steps'):$(q 'SELECT COUNT(*) FROM skills')
check "nothing written by the refused walks ($before = $after)" [ "$before" = "$after" ]

# 4. kevo skills
"$K" skills list >"$T/list" 2>&1
cat "$T/list"
check "skills list: the admitted LANES card" grep -q 'rowsum/cpu/.*/LANES@.* admitted' "$T/list"
id=$(q "SELECT id FROM skills WHERE name = 'LANES'")
"$K" skills show "$id" >"$T/card.md" 2>&1
check "skills show: Markdown with effect, preconditions and the carrier" \
  sh -c "grep -q '^## LANES' '$T/card.md' && grep -q 'Effect' '$T/card.md' && grep -q 'Preconditions' '$T/card.md' && grep -q '^\`\`\`diff' '$T/card.md'"
check "skills show: the verification log" grep -q '"what":"lineage"' "$T/card.md"
"$K" skills export "$T/export.json" >/dev/null 2>&1
check "skills export: every card" [ "$(grep -c '"carrier"' "$T/export.json")" = "$(q 'SELECT COUNT(*) FROM skills')" ]
n=$(q 'SELECT COUNT(*) FROM skills')
KEVO_DB="$T/fresh.db" "$K" skills import "$T/export.json" >"$T/imp" 2>&1
cat "$T/imp"
check "import into a fresh store: all new" grep -q ": $n cards: $n new, 0 updated" "$T/imp"
KEVO_DB="$T/fresh.db" "$K" skills import "$T/export.json" >"$T/imp" 2>&1
cat "$T/imp"
check "import twice: nothing new" grep -q ": $n cards: 0 new, 0 updated, $n already held" "$T/imp"
check "import twice: the logs did not double" \
  [ "$(sqlite3 "$T/fresh.db" 'SELECT COUNT(*) FROM skill_log')" = "$(q 'SELECT COUNT(*) FROM skill_log')" ]
# bad files: nothing imported
python3 - "$T/export.json" "$T" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
good = d["skills"][0]
bad = dict(good); del bad["effect"]
json.dump({"kevo_skills": 1, "skills": [good, bad]}, open(sys.argv[2] + "/missing.json", "w"))
json.dump({"kevo_skills": 9, "skills": [good]}, open(sys.argv[2] + "/future.json", "w"))
EOF
KEVO_DB="$T/bad.db" "$K" skills import "$T/missing.json" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "a card without effect: exit 2, the field named" sh -c "[ $rc = 2 ] && grep -q 'missing.json: skills\[1\]: effect: missing' '$T/err'"
check "... and not even the good card was imported" [ "$(sqlite3 "$T/bad.db" 'SELECT COUNT(*) FROM skills')" = 0 ]
KEVO_DB="$T/bad.db" "$K" skills import "$T/future.json" >"$T/out" 2>"$T/err"
rc=$?
cat "$T/err"
check "a future schema: exit 2, upgrade kevo" sh -c "[ $rc = 2 ] && grep -q 'version 9 is newer than this kevo reads (1); upgrade kevo' '$T/err'"
"$K" skills retire "$id" --reason "test" >/dev/null 2>&1
check "retire: gone from the list" sh -c "! '$K' skills list | grep -q '/LANES@'"
check "retire: kept with --all" sh -c "'$K' skills list --all | grep -q '/LANES@.* retired'"

# 5. retrieval through the CLI, on the labelled cards
export KEVO_DB="$T/labelled.db"
"$K" skills import "$SRC/tests/skills/labelled_skills.json" >/dev/null 2>&1
"$K" skills match --arch x86_64 "$SRC/examples/tasks/rowsum" "$SRC/examples/tasks/rowsum/starter.c" >"$T/m" 2>&1
cat "$T/m"
check "match: LANES, OMP_ROWS, TREE_COMBINE" sh -c "grep -q '^  match cpu/LANES' '$T/m' && grep -q '^  match cpu/OMP_ROWS' '$T/m' && grep -q '^  match cpu/TREE_COMBINE' '$T/m'"
check "match: FTS5 relevance" grep -q 'relevance: FTS5 bm25' "$T/m"
check "match: wrong dtype refused" grep -q 'no    cpu/F64_ONLY .*dtype: x is f32' "$T/m"
check "match: wrong architecture refused" grep -q 'no    cpu/AVX512_ONLY .*architecture: measured on armv9' "$T/m"
check "match: sizes not divisible refused" grep -q 'no    cpu/VEC4 .*divisible by 4' "$T/m"
"$K" skills match --arch x86_64 "$SRC/examples/tasks/rowsum" "$SRC/examples/tasks/rowsum/good.c" >"$T/m" 2>&1
check "match: already provided" grep -q 'no    cpu/LANES .*already provided' "$T/m"
"$K" skills match --surface cuda "$SRC/examples/tasks/matmul" >"$T/m" 2>&1
rc=$?
check "match --surface cuda without an architecture: exit 2" sh -c "[ $rc = 2 ] && grep -q 'arch sm_90' '$T/m'"

echo "skills_e2e: $FAILS failed"
[ "$FAILS" = 0 ]
