#!/bin/sh
# The torch surface's checks on the GPU (KEVO_TORCH_DEVICE=cuda; label gpu):
# the candidate's process copies each check call's inputs and weights to the
# device and the outputs, inputs and weights back; kevo reads them with the
# process stopped. Timing there is refused (it waits for clean-worker-owned
# device buffers, issue 28).
#   gpu.sh KEVO SRC
set -u
KEVO=$1
SRC=$2
PY=${KEVO_PYTHON:-python3}
if ! "$PY" -c "import torch, triton, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
  >/dev/null 2>&1; then
  echo "SKIPPED: $PY has no torch with a GPU (or no triton)"
  exit 77
fi
D="$SRC/tests/torch_surface"
C="$D/cands"
OUT=$(mktemp -d /tmp/kevo-torch-surface-gpu-XXXXXX)
trap 'rm -rf "$OUT"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export KEVO_TORCH_DEVICE=cuda
"$KEVO" eval --surface torch "$D/task" "$C/ok_torch.py" >"$OUT/timed.log" 2>&1
rc=$?
cat "$OUT/timed.log"
[ $rc = 2 ] && grep -q "does not time there yet" "$OUT/timed.log" ||
  fail "timing on the GPU is not refused (exit $rc)"
"$KEVO" eval --surface torch --json --no-timing --seed 21 "$D/task" \
  "$C/ok_torch.py" "$C/ok_triton.py" "$C/mutate_input.py" "$C/mutate_weight.py" \
  "$C/cache_ptr.py" "$C/cache_last.py" "$C/fallback_module.py" "$C/side_ctor.py" \
  >"$OUT/g.jsonl" 2>"$OUT/g.err"
cat "$OUT/g.err"
"$PY" - "$OUT/g.jsonl" <<'PYEOF' || fail "verdicts (above)"
import json, sys
want = [("ok_torch", {"ok"}), ("ok_triton", {"ok"}), ("mutate_input", {"input_mutated"}),
        ("mutate_weight", {"input_mutated"}),
        # On the GPU the first check call at a size may return what the
        # LOAD's warm-up forward (inputs kevo never drew) left at the same
        # device address: kevo cannot name it stale, only wrong (H200).
        ("cache_ptr", {"stale_output", "wrong_output"}),
        ("cache_last", {"wrong_output", "stale_output"}), ("fallback_module", {"wrong_output"}),
        ("side_ctor", {"ok"})]
got = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = len(got) != len(want)
for (name, ok), r in zip(want, got):
    print("%-16s %-14s %s" % (name, r["verdict"], r["detail"][:140]))
    if r["verdict"] not in ok:
        print("  FAIL: expected %s; in full: %s" % (" or ".join(sorted(ok)), r["detail"]))
        print("  its stderr: %s" % r.get("stderr", "")[-1500:])
        bad = True
    if "ESCAPED" in r.get("stderr", ""):
        print("  FAIL: an escape: %s" % r["stderr"][-400:])
        bad = True
sys.exit(1 if bad else 0)
PYEOF
echo "1 passed, 0 failed"
