#!/bin/bash
# KernelBench problems side by side (issue 27): hand-written CUDA candidates
# (bench/kernelbench_cands/NAME.cu, each with a NAME.wrong.cu twin that must
# be rejected), every side of each problem measured four ways in one run on
# one GPU:
#   - kevo's default timing: `kevo eval --surface cuda --torch-compile default`
#     (medians; eager Model = the reference, torch.compile(Model) = the
#     baseline, the candidate);
#   - kevo `--timing kernelbench` (KernelBench's protocol in kevo's gate: 3
#     warm-ups, 100 trials on the same inputs, no flush, the mean);
#   - KernelBench's harness (bench/kernelbench_harness.py: the candidate in a
#     ModelNew, 5 correctness trials, events around 100 forwards, the mean);
#   - triton's do_bench of each side (bench/kernelbench_sides.py one: median,
#     L2 flushed before every call).
# Plus the wrong twin's verdict (kevo eval --no-timing) and, for a candidate
# that calls a vendor library (ALLOW below: imported with --allow), its
# verdict on the task imported without --allow (must be policy_violation).
#
#   bench/kernelbench_vs_harness.sh --list
#       the KernelBench files the run reads (relative to KERNELBENCH_DIR)
#   bench/kernelbench_vs_harness.sh KEVO KERNELBENCH_DIR OUTDIR [NAME...]
#
# KERNELBENCH_DIR holds level1/ level2/ level3/ (only the --list files are
# needed). Environment: KEVO_PYTHON (the Python with torch and triton, for
# kevo import and the harness; default python3), BUDGET (kevo eval --budget,
# seconds per candidate; default 1), TRIALS (the harness's timed trials;
# default 100), JOBS (kevo import --jobs; default 4). Writes
# OUTDIR/kernelbench_vs_harness.md (the tables) and
# OUTDIR/kernelbench_vs_harness.json (every verdict, timing and log tail, and
# the seconds each step took), rewritten after every problem; prints the
# tables. Scratch (tasks, kevo's store, logs) goes to a temporary directory,
# removed at the end unless KEEP=1.
set -u

# level/file of each problem, relative to KERNELBENCH_DIR: two per level (and
# a third level-1 problem kept from the first version of this bench).
PROBLEMS=(
  level1/12_Matmul_with_diagonal_matrices_.py
  level1/88_MinGPTNewGelu.py
  level1/100_HingeLoss.py
  level2/76_Gemm_Add_ReLU.py
  level2/12_Gemm_Multiply_LeakyReLU.py
  level3/3_DeepNarrowMLP.py
  level3/4_LeNet5.py
)
# NAME=LIBS: imported with `kevo import --allow LIBS`; its candidate calls
# them and must be refused (policy_violation) by the task imported without.
ALLOW=(
  76_Gemm_Add_ReLU=cublas
)

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${PROBLEMS[@]}"
  exit 0
fi
if [ $# -lt 3 ]; then
  sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
KEVO=$(realpath "$1")
KB=$(realpath "$2")
OUT=$3
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
CANDS=$HERE/kernelbench_cands
PY=${KEVO_PYTHON:-python3}
export KEVO_PYTHON=$PY
BUDGET=${BUDGET:-1}
TRIALS=${TRIALS:-100}
JOBS=${JOBS:-4}
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
TMP=$(mktemp -d /tmp/kb-vs-harness.XXXXXX)
export KEVO_DB=$TMP/kevo.db
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$TMP"' EXIT
T0=$(date +%s.%N)
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
log() { printf '[%6s s] %s\n' "$(since "$T0")" "$*" >&2; }

allow_of() {
  local a
  for a in "${ALLOW[@]}"; do
    [ "${a%%=*}" = "$1" ] && { echo "${a#*=}"; return; }
  done
}

# The problems of this run.
sel=()
for p in "${PROBLEMS[@]}"; do
  name=$(basename "$p" .py)
  if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx "$name"; then continue; fi
  if [ ! -f "$KB/$p" ]; then
    log "missing $KB/$p (copy the files of --list there)"
    continue
  fi
  sel+=("$p")
done
[ ${#sel[@]} -gt 0 ] || { log "no problem to run"; exit 2; }

# Imports, concurrently (CPU only): every problem without --allow into
# $TMP/plain, then each ALLOW problem again with its --allow into $TMP/allow.
log "kevo import of ${#sel[@]} problems (KEVO_PYTHON=$PY)"
files=()
for p in "${sel[@]}"; do files+=("$KB/$p"); done
"$KEVO" import --force --jobs "$JOBS" -o "$TMP/plain" "${files[@]}" >"$TMP/import.plain.log" 2>&1 &
pids=($!)
for p in "${sel[@]}"; do
  name=$(basename "$p" .py)
  libs=$(allow_of "$name")
  [ -n "$libs" ] || continue
  "$KEVO" import --force --allow "$libs" -o "$TMP/allow" "$KB/$p" >"$TMP/import.$name.log" 2>&1 &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
log "imported"

summarize() {
  "$PY" - "$TMP" "$OUT" "$T0" "$BUDGET" "$TRIALS" "${sel[@]}" <<'PY'
import datetime, json, os, sys, time
tmp, out, t0, budget, trials = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5]
probs = sys.argv[6:]

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception as e:  # noqa: BLE001
        return {"error": "%s: %s" % (os.path.basename(path), e)}

def tail(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""

rows, probs_out, device = [], [], None
for p in probs:
    name = os.path.basename(p)[:-3]
    if not os.path.exists(os.path.join(tmp, name + ".secs")):
        continue
    d = {"problem": p}
    d["allow"] = open(os.path.join(tmp, name + ".allow")).read().strip()
    for step in ("kevo", "kb", "wrong", "policy", "sides"):
        # sides.py writes NAME.harness.json; its stdout is a one-line summary
        f = os.path.join(tmp, "%s.%s.json" % (name, "harness" if step == "sides" else step))
        if os.path.exists(f):
            d[step] = load(f)
            d[step + "_stderr_tail"] = tail(os.path.join(tmp, "%s.%s.err" % (name, step)))
    d["seconds"] = {}
    for line in open(os.path.join(tmp, name + ".secs")):
        k, v = line.split()
        d["seconds"][k] = float(v)
    probs_out.append(d)
    k, kb, s = d.get("kevo", {}), d.get("kb", {}), d.get("sides", {})
    kt, kbt = k.get("timing") or {}, kb.get("timing") or {}
    h, db = s.get("harness") or {}, s.get("do_bench") or {}
    device = device or h.get("device")
    def mean(t, side):
        return (t.get(side) or {}).get("mean_us")
    sides = {
        "eager": (kt.get("reference_median_us"), mean(kbt, "reference"), (h.get("eager") or {}).get("mean_us"), db.get("eager")),
        "compile": (kt.get("baseline_median_us"), mean(kbt, "baseline"), (h.get("compile") or {}).get("mean_us"), db.get("compile")),
        "candidate": (kt.get("median_us"), mean(kbt, "candidate"), (h.get("new") or {}).get("mean_us"), db.get("candidate")),
    }
    for side, (kd, kk, hv, dv) in sides.items():
        rows.append((name, side, kd, kk, hv, dv))
    d["sides_us"] = {side: dict(zip(("kevo_default", "kevo_kernelbench", "harness", "do_bench"), v))
                     for side, v in sides.items()}

def verdict(j):
    return j.get("verdict") or "error: %s" % str(j.get("error", "-"))[:200]

def f1(v):
    return "%.1f" % v if isinstance(v, (int, float)) and v else "-"

def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and b:
        r = a / b
        return r, "%.3f%s" % (r, "" if abs(r - 1) <= 0.05 else " (!)")
    return None, "-"

md = ["### KernelBench problems side by side (%s, %s; kevo --budget %s, harness %s trials; %.0f s)"
      % (datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"), device or "?", budget, trials, time.time() - t0), "",
      "| problem | side | kevo default us | kevo kernelbench us | harness us | do_bench us | kevo default / do_bench | kevo kernelbench / harness |",
      "|---|---|---|---|---|---|---|---|"]
n1 = w1 = n2 = w2 = 0
for name, side, kd, kk, hv, dv in rows:
    r1, s1 = ratio(kd, dv)
    r2, s2 = ratio(kk, hv)
    if r1 is not None:
        n1 += 1
        w1 += abs(r1 - 1) <= 0.05
    if r2 is not None:
        n2 += 1
        w2 += abs(r2 - 1) <= 0.05
    md.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (name, side, f1(kd), f1(kk), f1(hv), f1(dv), s1, s2))
md += ["", "kevo default within 5%% of do_bench on %d of %d sides; kevo --timing kernelbench within 5%% "
       "of the harness on %d of %d sides ((!): outside 5%%)." % (w1, n1, w2, n2), "",
       "| problem | allow | kevo verdict (default / kernelbench) | speedup vs eager, vs compile (default) | harness correct | wrong twin | without --allow | seconds (kevo, kernelbench, wrong, policy, harness+do_bench) |",
       "|---|---|---|---|---|---|---|---|"]
for d in probs_out:
    name = os.path.basename(d["problem"])[:-3]
    k, kb, s = d.get("kevo", {}), d.get("kb", {}), d.get("sides", {})
    kt = k.get("timing") or {}
    h = s.get("harness") or {}
    sec = d["seconds"]
    md.append("| %s | %s | %s / %s | %s | %s | %s | %s | %s |" % (
        d["problem"][:-3], d.get("allow") or "-",
        verdict(k), verdict(kb),
        "%.2fx, %.2fx" % (kt.get("speedup", 0), kt.get("speedup_vs_baseline", 0)) if kt else "-",
        "%s/5" % h.get("correct_trials", "?") if h else s.get("error", "-"),
        verdict(d.get("wrong") or {}),
        verdict(d["policy"]) if "policy" in d else "n/a",
        ", ".join("%.0f" % sec.get(x, 0) for x in ("kevo", "kb", "wrong", "policy", "sides"))))
text = "\n".join(md) + "\n"
with open(os.path.join(out, "kernelbench_vs_harness.md"), "w") as f:
    f.write(text)
with open(os.path.join(out, "kernelbench_vs_harness.json"), "w") as f:
    json.dump({"device": device, "budget": budget, "trials": trials, "seconds": time.time() - t0,
               "problems": probs_out}, f, indent=1)
print(text)
PY
}

# step NAME STEP CMD...: runs CMD, stdout to $TMP/NAME.STEP.json, stderr to
# .err, its seconds into NAME.secs.
step() {
  local name=$1 what=$2 s
  shift 2
  s=$(date +%s.%N)
  "$@" >"$TMP/$name.$what.json" 2>"$TMP/$name.$what.err"
  echo "$what $(since "$s")" >>"$TMP/$name.secs"
}

for p in "${sel[@]}"; do
  name=$(basename "$p" .py)
  cand=$CANDS/$name.cu
  libs=$(allow_of "$name")
  echo "$libs" >"$TMP/$name.allow"
  if [ -n "$libs" ]; then t=$TMP/allow/$name; else t=$TMP/plain/$name; fi
  : >"$TMP/$name.secs"
  if [ ! -f "$t/task.json" ]; then
    log "$name: not imported:"
    tail -n 5 "$TMP"/import.*.log >&2
    continue
  fi
  log "$name: kevo eval (default timing)"
  step "$name" kevo "$KEVO" eval --surface cuda --json --budget "$BUDGET" --torch-compile default "$t" "$cand"
  log "$name: kevo eval --timing kernelbench"
  step "$name" kb "$KEVO" eval --surface cuda --json --budget "$BUDGET" --torch-compile default \
    --timing kernelbench "$t" "$cand"
  log "$name: the wrong twin"
  step "$name" wrong "$KEVO" eval --surface cuda --json --no-timing "$t" "$CANDS/$name.wrong.cu"
  if [ -n "$libs" ]; then
    log "$name: the candidate on the task without --allow"
    step "$name" policy "$KEVO" eval --surface cuda --json --no-timing "$TMP/plain/$name" "$cand"
  fi
  log "$name: harness and do_bench"
  step "$name" sides "$PY" "$HERE/kernelbench_sides.py" one "$KB/$p" "$t" "$cand" \
    "$TMP/$name.harness.json" --trials "$TRIALS"
  summarize >/dev/null
  log "$name: done"
done
summarize
