#!/bin/sh
# Two kevo processes on one host judging the same new candidate at once (two
# benches, an executor's servers) build it once (issue 31): the second waits
# for the first's build (an flock per cache key, lib/gate/objcache.c) and
# finds it, instead of compiling it again beside it. The candidate is
# rowsum's good kernel padded with 1,500 functions, a compile of a few
# seconds, so that the two surely overlap. Before: both compiled.
#   compile_once.sh KEVO SRC
set -u
K=$1
S=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/kevo-compile-once-XXXXXX")
trap 'rm -rf "$T"' EXIT
export KEVO_CACHE_DIR="$T/cache" KEVO_DB="$T/kevo.db"
python3 - "$S/examples/tasks/rowsum/good.c" "$T/slow.c" <<'PY'
import sys
src = open(sys.argv[1]).read()
n = 1500
pad = "\n".join("static float kv_pad%d(float x) { float y = x; for (int i = 0; i < 7; i++) "
                "y = y * 1.0001f + %d.0f; return y; }" % (i, i) for i in range(n))
pad += "\nfloat kv_pad_all(float x) { return %s; }\n" % " + ".join("kv_pad%d(x)" % i for i in range(n))
open(sys.argv[2], "w").write(src + "\n" + pad)
PY
"$K" eval --no-timing --json --db "$T/a.db" "$S/examples/tasks/rowsum" "$T/slow.c" >"$T/a.json" 2>"$T/a.err" &
a=$!
"$K" eval --no-timing --json --db "$T/b.db" "$S/examples/tasks/rowsum" "$T/slow.c" >"$T/b.json" 2>"$T/b.err" &
b=$!
wait $a; ra=$?
wait $b; rb=$?
python3 - "$T/a.json" "$T/b.json" <<'PY' || { cat "$T/a.err" "$T/b.err"; exit 1; }
import json, sys
rs = [json.JSONDecoder().raw_decode(open(p).read().strip())[0] for p in sys.argv[1:]]
for r in rs:
    print("%s: compile %.2f s, cached %s" % (r["verdict"], r["compile"]["seconds"], r["compile"]["cached"]))
assert all(r["verdict"] == "ok" for r in rs), "both accepted"
assert sorted(r["compile"]["cached"] for r in rs) == [False, True], "built once, found once"
PY
[ $ra = 0 ] && [ $rb = 0 ] || { echo "FAIL: exit $ra, $rb"; exit 1; }
echo "compile_once: ok"
