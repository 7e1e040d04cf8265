#!/usr/bin/env python3
"""Source to verdict per new candidate on this machine's GPU (issue 13), side
by side in one run: each example's good.cu (host entry, nvcc) and good_k.cu
(kernel-only, NVRTC), every candidate never seen before (a unique comment;
the task's reference and shim built once beforehand, as in a search):

  cold  one `kevo eval` process per candidate: from its start to its
        verdict line on stdout, worker start-up included (median of RUNS);
        beside it the process's whole wall clock, the static analysis
        (which comes after the verdict) and the teardown included;
  warm  one `kevo eval` of 1 + RUNS candidates: the workers kept warm
        (kv_gate_warm, as in `kevo run`) and (cuda) each next candidate
        compiled while the last one is judged; a candidate's figure is the
        time from the verdict line before it to its own (median of the RUNS
        after the first). "compiled ahead" counts those whose compile was
        done ahead.
Every verdict's JSON is read back from the store kevo eval recorded it in.

Each cold figure is split by the verdict's own timeline (seconds from the
evaluation's start: compiled, both workers up, checked, the timing loop,
the reference's answers, the candidate's process gone, the phases alone,
the workers stopped). With --inline, KernelBench's way (load_inline of the
same good.cu, bench/kernelbench_inline.py) is measured in the same run, one
example after another, and the ratios printed.

usage: bench/verdict_latency.py [--build DIR] [--runs N] [--budget S]
                                [--inline] [--out BENCHMARKS.md]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics as st
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("--build", default="build")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--budget", default="0.5")
ap.add_argument("--inline", action="store_true")
ap.add_argument("--tasks", default="")
ap.add_argument("--out", default="")
ap.add_argument("--surface", default="cuda", help="cpu: good.c alone (a dry run without a GPU)")
ap.add_argument("--forms", default="nvcc,nvrtc")
ap.add_argument("--no-warm", action="store_true")
ap.add_argument("--no-cold", action="store_true")
ap.add_argument("--keep", default="", help="a directory for every verdict's JSON")
a = ap.parse_args()
K = os.path.abspath(os.path.join(a.build, "kevo"))
T = tempfile.mkdtemp(prefix="kevo-latency-")
env = dict(os.environ, KEVO_DB=os.path.join(T, "bench.db"))
lines = []


def say(s=""):
    print(s, flush=True)
    lines.append(s)


def kevo(args, cache, **kw):
    return subprocess.run([K] + args, env=dict(env, KEVO_CACHE_DIR=cache), capture_output=True,
                          text=True, **kw)


# The device's ceilings, measured once and copied into every cache.
calib = os.path.join(T, "calib")
SF = ["--surface", a.surface]
kevo(["device"] + SF, calib)
dev = json.loads(kevo(["device", "--json"] + SF, calib).stdout)["device"]
calib_file = os.path.join(calib, "calib-%s.json" % a.surface)


def new_cache(name):
    d = os.path.join(T, name)
    os.makedirs(d, exist_ok=True)
    if os.path.exists(calib_file):
        shutil.copy(calib_file, d)
    return d


def stamped(args, cache):
    """Runs kevo; the time of its start, of every "verdict:" line and of its exit."""
    s = time.monotonic()
    p = subprocess.Popen([K] + args, env=dict(env, KEVO_CACHE_DIR=cache), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    stamps = [time.monotonic() - s for line in p.stdout if line.startswith("verdict:")]
    err = p.stderr.read()
    p.wait()
    return stamps, time.monotonic() - s, err


def recorded(cand):
    """The result kevo eval recorded for this candidate."""
    db = sqlite3.connect(env["KEVO_DB"])
    row = db.execute("select result_json from evaluations where candidate_path = ? "
                     "order by id desc limit 1", (cand,)).fetchone()
    db.close()
    try:
        return json.loads(row[0])
    except (TypeError, ValueError):
        return {"verdict": "not recorded"}


def new_candidate(src, tag):
    p = os.path.join(T, tag + os.path.splitext(src)[1])
    with open(p, "w") as f:
        f.write(open(src).read() + "\n// a new candidate %s %d\n" % (tag, os.getpid()))
    return p


MARKS = ["compiled", "reference_worker_up", "candidate_worker_up", "checked", "warm_up", "loop",
         "validated", "candidate_stopped", "alone", "timed", "workers_stopped", "verdict",
         "analysis_joined", "end"]


def at(j, what):
    for w, t in j.get("timeline", []):
        if w == what:
            return t
    return None


tasks = [t for t in (a.tasks.split(",") if a.tasks else sorted(os.listdir("examples/tasks")))
         if os.path.exists("examples/tasks/%s/good_k.cu" % t)]
say("### Source to verdict per new candidate, cold and warm (%s, %s, %d CPU cores, budget %s s "
    "per side, median of %d)" % (time.strftime("%Y-%m-%d", time.gmtime()), dev, os.cpu_count(),
                                 a.budget, a.runs))
say()
say("| task | form | cold s | cold, process s | warm s | warm: compiled ahead | verdict | speedup | "
    "cold: " + " / ".join(MARKS) + " s; static s |")
say("|---|---|---|---|---|---|---|---|---|")
summary = {}
for name in tasks:
    d = "examples/tasks/" + name
    forms = [f for f in (("nvcc", d + "/good.cu"), ("nvrtc", d + "/good_k.cu"))
             if f[0] in a.forms.split(",")]
    if a.surface == "cpu":
        forms = (("cc", d + "/good.c"),)
    for form, src in forms:
        cache = new_cache("c-%s-%s" % (name, form))
        # The task's reference and shim, built once.
        kevo(["eval", "--json", "--no-timing", d, src] + SF, cache)
        cold, wall, marks, js = [], [], {m: [] for m in MARKS}, []
        for i in range(0 if a.no_cold else a.runs):
            cand = new_candidate(src, "%s-%s-cold-%d" % (name, form, i))
            stamps, w, err = stamped(["eval", "--budget", a.budget, d, cand] + SF, cache)
            j = recorded(cand) if stamps else {"verdict": "kevo failed: " + err.strip()[-200:]}
            js.append(j)
            cold.append(stamps[0] if stamps else float("nan"))
            wall.append(w)
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                with open(os.path.join(a.keep, "%s-%s-cold-%d.json" % (name, form, i)), "w") as f:
                    json.dump(j, f)
            for m in MARKS:
                if at(j, m) is not None:
                    marks[m].append(at(j, m))
        # Warm: one process, 1 + RUNS new candidates, verdicts timed as they come.
        cands = [new_candidate(src, "%s-%s-warm-%d" % (name, form, i))
                 for i in range(0 if a.no_warm else a.runs + 1)]
        stamps = stamped(["eval", "--budget", a.budget] + SF + [d] + cands, cache)[0] if cands else []
        wj = [recorded(c) for c in cands]
        warm = [stamps[i] - stamps[i - 1] for i in range(1, len(stamps))]
        ok = all(j.get("verdict") == "ok" for j in js + wj)
        sp = [j["timing"]["speedup"] for j in js if j.get("timing")]
        med = lambda x: st.median(x) if x else float("nan")
        summary.setdefault(form, []).append((med(cold), med(warm), med(wall)))
        stat = [j["static"]["seconds"] for j in js if (j.get("static") or {}).get("seconds")]
        ahead = sum(1 for j in wj[1:] if (j.get("compile") or {}).get("cached"))
        say("| %s | %s | %.2f | %.2f | %.2f | %d of %d | %s | %s | %s; %.2f |" % (
            name, form, med(cold), med(wall), med(warm), ahead, max(len(wj) - 1, 0),
            "ok" if ok else "; ".join(sorted({str(j.get("verdict")) for j in js + wj})),
            "%.2fx" % med(sp) if sp else "",
            " / ".join("%.2f" % med(marks[m]) if marks[m] else "-" for m in MARKS), med(stat)))
say()
say("| median over the examples | cold s | warm s | cold, process s |")
say("|---|---|---|---|")
med_of = {}
for form, rows in summary.items():
    med_of[form] = tuple(st.median(r[k] for r in rows) for k in range(3))
    say("| %s | %.2f | %.2f | %.2f |" % ((form,) + med_of[form]))

if a.inline:
    say()
    say("| KernelBench's way (load_inline), one after another | total s | without torch's import s |")
    say("|---|---|---|")
    tot = []
    for name in tasks:
        p = subprocess.run([sys.executable, "bench/kernelbench_inline.py", name],
                           capture_output=True, text=True)
        try:
            j = json.loads(p.stdout.strip().splitlines()[-1])
            tot.append(j["total_s"])
            say("| %s | %.1f | %.1f |" % (name, j["total_s"], j["total_without_import_s"]))
        except (ValueError, IndexError, KeyError):
            say("| %s | failed: %s | |" % (name, p.stderr.strip()[-150:]))
    if tot and "nvrtc" in med_of:
        li = st.median(tot)
        c, w = med_of["nvrtc"][:2]
        say()
        say("load_inline median %.1f s: kernel-only cold %.1fx (%.2f s), warm %.1fx (%.2f s); "
            "30x needs %.2f s, 100x %.2f s" % (li, li / c, c, li / w, w, li / 30, li / 100))
if a.out:
    with open(a.out, "a") as f:
        f.write("\n" + "\n".join(lines) + "\n")
shutil.rmtree(T, ignore_errors=True)
