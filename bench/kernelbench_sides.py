#!/usr/bin/env python3
"""Every side of a KernelBench problem, by kevo and by triton's do_bench, in
one run on one GPU: the eager Model, torch.compile(Model) (mode default) and
a hand-written candidate (bench/kernelbench_cands/NAME.cu).

  bench/kernelbench_sides.py one PROBLEM.py TASK_DIR CAND.cu OUT.json [--trials N]

(what bench/kernelbench_vs_harness.sh runs per problem): in one process,
KernelBench's harness (bench/kernelbench_harness.py: the candidate built with
nvcc, 5 correctness trials, then CUDA events around N forwards, the mean)
and do_bench of each side: the eager Model and torch.compile(Model) (the
same compiled module the harness timed) on the harness's inputs, and the
candidate's entry called through ctypes on those inputs, the Model's weights
and output buffers allocated once (median of 3 do_bench medians, warmup 25
ms, rep 200 ms, the L2 flushed before every call). Writes one JSON object.

  bench/kernelbench_sides.py KEVO KERNELBENCH_DIR OUT_MD NAME...

kevo: `kevo import` of the problem, then RUNS (default 2) runs of
`kevo eval --surface cuda --json --torch-compile default TASK CAND`; the
median over runs of each side's median. With KEVO_TORCH_WORKER_OLD set (a
copy of an earlier python/kevo_torch_worker.py), the same again with that
worker, for a before/after in one run. do_bench: the problem's own Model on
get_inputs() (same buffers every call, the L2 flushed between calls, median
of 3 do_bench medians), the compiled Model likewise, the candidate built with
nvcc into a shared object and called through ctypes on buffers of the task's
bench size (bench/gpu_fidelity.py's method). Appends a Markdown table to
OUT_MD and prints it.
"""
import datetime
import glob
import importlib.util
import json
import os
import statistics as st
import subprocess
import sys
import tempfile

import torch
import triton.testing

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gpu_fidelity as gf  # noqa: E402  (make_args, build, do_bench_us)

RUNS = int(os.environ.get("RUNS", "2"))


def kevo_sides(kevo, task, cand, env):
    c, r, b, lead, unc = [], [], [], 0.0, 0
    for _ in range(RUNS):
        p = subprocess.run([kevo, "eval", "--surface", "cuda", "--json", "--torch-compile", "default",
                            task, cand], capture_output=True, text=True, env=env)
        try:
            j = json.loads(p.stdout)
        except Exception:
            print("kevo eval failed:", p.stdout[-2000:], p.stderr[-2000:], flush=True)
            return None
        t = j.get("timing") or {}
        if j.get("verdict") != "ok" or not t:
            print("kevo eval:", j.get("verdict"), j.get("detail"), flush=True)
            return None
        c.append(t["median_us"])
        r.append(t["reference_median_us"])
        b.append(t.get("baseline_median_us", 0))
        tl = t.get("torch_lead") or {}
        lead = max(lead, tl.get("us", 0))
        unc += tl.get("uncovered_calls", 0)
    return {"candidate": st.median(c), "eager": st.median(r), "compile": st.median(b), "lead_us": lead,
            "uncovered": unc}


def dobench_model(problem):
    spec = importlib.util.spec_from_file_location("kbprob", problem)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    eager = mod.Model(*mod.get_init_inputs()).cuda()
    comp = torch.compile(mod.Model(*mod.get_init_inputs()).cuda())
    out = {}
    with torch.no_grad():
        for name, m in (("eager", eager), ("compile", comp)):
            for _ in range(3):
                m(*inputs)
            torch.cuda.synchronize()
            ms = [triton.testing.do_bench(lambda: m(*inputs), warmup=25, rep=200, return_mode="median")
                  for _ in range(3)]
            out[name] = st.median(ms) * 1000
    return out


def dobench_us(fn):
    torch.cuda.synchronize()
    ms = [triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median") for _ in range(3)]
    return st.median(ms) * 1000.0


def one(argv):
    import time
    import kernelbench_harness as kh
    trials = 100
    if "--trials" in argv:
        i = argv.index("--trials")
        trials = int(argv[i + 1])
        del argv[i:i + 2]
    problem, tdir, cand, out = argv
    t0 = time.time()
    res = {"problem": os.path.basename(problem)[:-3]}
    try:
        h, ctx = kh.harness(problem, tdir, cand, trials)
        res["harness"] = h
        t1 = time.time()
        res["harness_s"] = t1 - t0
        model, compiled, new, inputs = ctx["model"], ctx["compiled"], ctx["new"], ctx["inputs"]
        outs = [torch.empty(s, dtype=d, device="cuda") for s, d in new.shapes]
        args = new.args(inputs, outs)
        stream = torch.cuda.current_stream().cuda_stream
        db = {}
        with torch.no_grad():
            db["eager"] = dobench_us(lambda: model(*inputs))
            db["compile"] = dobench_us(lambda: compiled(*inputs))
            db["candidate"] = dobench_us(lambda: new.fn(*args, stream))
        res["do_bench"] = db
        res["do_bench_s"] = time.time() - t1
    except Exception as e:  # noqa: BLE001  (reported in the JSON, the next problem goes on)
        import traceback
        res["error"] = "%s: %s" % (type(e).__name__, e)
        res["traceback"] = traceback.format_exc()[-4000:]
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({k: v for k, v in res.items() if k != "traceback"})[:2000], flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "one":
        return one(sys.argv[2:])
    kevo, kb, outmd = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    names = sys.argv[4:]
    tmp = tempfile.mkdtemp()
    env = dict(os.environ, KEVO_DB=os.path.join(tmp, "db"))
    old = os.environ.get("KEVO_TORCH_WORKER_OLD")
    arch = "sm_" + subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader", "-i", "0"],
                                  capture_output=True, text=True).stdout.split()[0].replace(".", "")
    rows = []
    for name in names:
        prob = glob.glob(os.path.join(kb, "level*", name + ".py"))[0]
        p = subprocess.run([kevo, "import", "--force", "-o", os.path.join(tmp, "tasks"), prob],
                           capture_output=True, text=True, env=env)
        task = glob.glob(os.path.join(tmp, "tasks", "**", name, "task.json"), recursive=True)
        if not task:
            print("import of %s failed: %s" % (name, p.stderr[-1500:]), flush=True)
            continue
        tdir = os.path.dirname(task[0])
        cand = os.path.join(HERE, "kernelbench_cands", name + ".cu")
        k = kevo_sides(kevo, tdir, cand, env)
        k_old = kevo_sides(kevo, tdir, cand, dict(env, KEVO_TORCH_WORKER=old)) if old else None
        db = dobench_model(prob)
        tj = json.load(open(task[0]))
        lib = gf.build(cand, os.path.join(tmp, name + ".so"), arch)
        db["candidate"] = gf.do_bench_us(lib, tj["entry"], tj, tj["bench"][0])
        for side in ("eager", "compile", "candidate"):
            kv = k[side] if k else float("nan")
            ko = k_old[side] if k_old else float("nan")
            rows.append((name, side, ko, kv, db[side], kv / db[side], k["lead_us"] if k else 0,
                         k["uncovered"] if k else -1))
            print(rows[-1], flush=True)
    dev = torch.cuda.get_device_name(0)
    out = ["### KernelBench sides: kevo against do_bench (%s, %s, %d kevo runs each)"
           % (datetime.date.today().isoformat(), dev, RUNS), "",
           "| problem | side | kevo before (us) | kevo now (us) | do_bench (us) | kevo now / do_bench | torch lead us | uncovered calls |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %.1f | %.1f | %.1f | %.3f | %.0f | %d |" % r)
    text = "\n".join(out)
    print(text)
    with open(outmd, "a") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
