#!/usr/bin/env python3
"""Adaptive timing against the fixed budget, in one run (issue 13, item 3).

For each example task (examples/tasks/*/) and each of its starter and good
kernels, `kevo eval --json` runs REPEATS times with a fixed budget
(--timing-ci 0) and REPEATS times adaptive (--timing-ci TARGET), the two
interleaved (fixed, adaptive, fixed, adaptive, ...) so that a drift of the
machine hits both alike. Reported per kernel: the median speedup of each
mode and their difference, the run-to-run coefficient of variation of each
mode's speedup, the median seconds spent timing (seconds.timing: the whole
timing stage, warm-up, validations and the reference alone included), the
rounds the adaptive runs took and why they stopped, and the median width of
the reported 95% interval.

usage: bench/adaptive_timing.py BUILD_DIR [cpu|cuda] [OUT_MD]
env:   REPEATS (default 3), BUDGET (seconds per side, default 1.0: the
       default of kevo eval), TARGET (default 0.01), TASKS (comma list),
       KERNELS (default starter,good)
"""
import datetime
import json
import os
import statistics as st
import subprocess
import sys
import tempfile
import time

B = sys.argv[1] if len(sys.argv) > 1 else "build"
SURF = sys.argv[2] if len(sys.argv) > 2 else "cpu"
OUTMD = sys.argv[3] if len(sys.argv) > 3 else None
REPEATS = int(os.environ.get("REPEATS", "3"))
BUDGET = os.environ.get("BUDGET", "1.0")
TARGET = os.environ.get("TARGET", "0.01")
KEVO = os.path.join(B, "kevo")
EXT = ".cu" if SURF == "cuda" else ".c"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = os.environ.get("TASKS", "conv1d,layernorm,matmul,rowsum,softmax,transpose").split(",")
KERNELS = os.environ.get("KERNELS", "starter,good").split(",")


def judge(task, kern, ci):
    d = os.path.join(ROOT, "examples", "tasks", task)
    cmd = [KEVO, "eval", "--json", "--surface", SURF, "--budget", BUDGET, "--timing-ci", ci, d,
           os.path.join(d, kern + EXT)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    wall = time.time() - t0
    try:
        j = json.loads(p.stdout)
    except ValueError:
        sys.stderr.write("%s %s: no JSON (exit %d): %s\n" % (task, kern, p.returncode,
                                                            p.stderr[-500:]))
        return None
    t = j.get("timing")
    if j.get("verdict") != "ok" or not t:
        sys.stderr.write("%s %s: %s: %s\n" % (task, kern, j.get("verdict"), j.get("detail")))
        return None
    ci_ = t.get("ci", {})
    return {"speedup": t["speedup"], "timing_s": j["seconds"]["timing"], "wall_s": wall,
            "phases": ci_.get("phases", t.get("clock", {}).get("phases", 0)),
            "max": ci_.get("max_phases", 0), "min": ci_.get("min_phases", 0),
            "stop": ci_.get("stop", "?"), "hw": ci_.get("half_width", 0),
            "chw": ci_.get("clock_half_width"), "device": j.get("device", "")}


def cv(xs):
    return st.pstdev(xs) / st.mean(xs) if len(xs) > 1 and st.mean(xs) > 0 else 0.0


def main():
    if "KEVO_DB" not in os.environ:  # the evaluations are not recorded anywhere that lasts
        os.environ["KEVO_DB"] = os.path.join(tempfile.mkdtemp(prefix="kevo-adapt-"), "b.db")
    env_dev = ""
    rows = []
    for task in TASKS:
        for kern in KERNELS:
            if not os.path.exists(os.path.join(ROOT, "examples", "tasks", task, kern + EXT)):
                continue
            res = {"0": [], TARGET: []}
            for rep in range(REPEATS):
                for ci in ("0", TARGET):
                    r = judge(task, kern, ci)
                    sys.stderr.write("%s %s rep %d ci %s: %s\n" % (
                        task, kern, rep, ci,
                        "%.3fx, %.2f s timing, %d phases (%s), +-%.2f%%" % (
                            r["speedup"], r["timing_s"], r["phases"], r["stop"], 100 * r["hw"])
                        if r else "failed"))
                    if r:
                        res[ci].append(r)
                        env_dev = env_dev or r["device"]
            f, a = res["0"], res[TARGET]
            if not f or not a:
                rows.append((task, kern, None))
                continue
            fs, as_ = [x["speedup"] for x in f], [x["speedup"] for x in a]
            stops = {}
            for x in a:
                stops[x["stop"]] = stops.get(x["stop"], 0) + 1
            rows.append((task, kern, {
                "fixed": st.median(fs), "adapt": st.median(as_),
                "diff": st.median(as_) / st.median(fs) - 1, "cv_f": cv(fs), "cv_a": cv(as_),
                "t_f": st.median([x["timing_s"] for x in f]),
                "t_a": st.median([x["timing_s"] for x in a]),
                "ph_f": st.median([x["phases"] for x in f]),
                "ph_a": "-".join(str(x["phases"]) for x in a),
                "range": "%d-%d" % (a[0]["min"], a[0]["max"]),
                "stops": ",".join("%s %d" % kv for kv in sorted(stops.items())),
                "hw_f": st.median([x["hw"] for x in f]), "hw_a": st.median([x["hw"] for x in a]),
                "n": "%d/%d" % (len(f), len(a))}))
    title = "### Adaptive timing vs fixed budget, %s surface (%s, %s, budget %s s per side, " \
            "target +-%.1f%%, %d repeats each, interleaved)" % (
                SURF, datetime.date.today().isoformat(), env_dev, BUDGET, 100 * float(TARGET),
                REPEATS)
    out = [title, "",
           "| task | kernel | fixed speedup | adaptive speedup | diff | CV fixed | CV adaptive "
           "| timing s fixed | timing s adaptive | phases fixed | phases adaptive (min-max) "
           "| stops | 95% CI +- fixed | 95% CI +- adaptive |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    diffs, cvs, tf, ta = [], [], [], []
    for task, kern, r in rows:
        if not r:
            out.append("| %s | %s | failed |  |  |  |  |  |  |  |  |  |  |  |" % (task, kern))
            continue
        diffs.append(abs(r["diff"]))
        cvs.append(r["cv_a"])
        tf.append(r["t_f"])
        ta.append(r["t_a"])
        out.append("| %s | %s | %.3fx | %.3fx | %+.2f%% | %.2f%% | %.2f%% | %.2f | %.2f | %d "
                   "| %s (%s) | %s | %.2f%% | %.2f%% |" % (
                       task, kern, r["fixed"], r["adapt"], 100 * r["diff"], 100 * r["cv_f"],
                       100 * r["cv_a"], r["t_f"], r["t_a"], r["ph_f"], r["ph_a"], r["range"],
                       r["stops"], 100 * r["hw_f"], 100 * r["hw_a"]))
    if diffs:
        out += ["", "Median |diff| %.2f%% (max %.2f%%); adaptive run-to-run CV median %.2f%% "
                "(max %.2f%%); timing seconds, sum over kernels: fixed %.1f, adaptive %.1f "
                "(%.2fx)." % (100 * st.median(diffs), 100 * max(diffs), 100 * st.median(cvs),
                              100 * max(cvs), sum(tf), sum(ta), sum(tf) / max(sum(ta), 1e-9))]
    text = "\n".join(out) + "\n"
    sys.stdout.write(text)
    if OUTMD:
        with open(OUTMD, "a") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
