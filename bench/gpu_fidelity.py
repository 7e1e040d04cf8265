#!/usr/bin/env python3
"""Timing fidelity of the cuda surface: kevo's median against
triton.testing.do_bench for the same kernels on the same GPU.

For each example task, `kevo eval --surface cuda --json` runs RUNS times on
good.cu; each run times the candidate and the reference (reference.cu)
interleaved. The same two sources are built with plain nvcc into shared
objects, called through ctypes on torch tensors of the bench size, and timed
with do_bench (median; it flushes the L2 before every call too). Reported:
kevo's median (the median over runs), the run-to-run coefficient of variation
of kevo's median, do_bench's median, and their ratio.

usage: [METHODS=kevo,do_bench] bench/gpu_fidelity.py BUILD_DIR [OUT_MD]   (needs torch and triton)
"""
import ctypes
import datetime
import json
import os
import statistics as st
import subprocess
import sys
import tempfile

import torch
import triton.testing

B = sys.argv[1] if len(sys.argv) > 1 else "build"
OUTMD = sys.argv[2] if len(sys.argv) > 2 else None
RUNS = int(os.environ.get("RUNS", "3"))
BUDGET = os.environ.get("BUDGET", "0.5")
# kevo's timing methods to compare in one run (METHODS=kevo,do_bench: the A/B
# of kevo's default against its do_bench cache regime, --timing do_bench).
METHODS = os.environ.get("METHODS", "kevo").split(",")
KEVO = os.path.join(B, "kevo")
TASKS = ["rowsum", "softmax", "layernorm", "transpose", "matmul", "conv1d"]
TORCH_DT = {"f32": torch.float32, "f64": torch.float64, "i32": torch.int32, "i64": torch.int64,
            "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16}
C_SCALAR = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
            "i64": ctypes.c_int64, "u8": ctypes.c_uint8}


def expr(e, sizes):
    if isinstance(e, int):
        return e
    return int(eval(str(e).replace("/", "//"), {"__builtins__": {}}, dict(sizes)))


def make_args(task, sizes):
    args, types, keep = [], [], []
    for p in task["params"]:
        role = p["role"]
        if role == "size":
            args.append(sizes[p["name"]])
            types.append(ctypes.c_int)
        elif role == "scalar":
            init = p.get("init", {})
            v = p["value"] if "value" in p else (init.get("lo", 0) + init.get("hi", 1)) / 2
            args.append(C_SCALAR[p["dtype"]](v))
            types.append(C_SCALAR[p["dtype"]])
        else:
            n = 1
            for d in p.get("shape", []):
                n *= expr(d, sizes)
            dt = TORCH_DT[p["dtype"]]
            init = p.get("init", {})
            if dt.is_floating_point:
                t = torch.empty(max(n, 1), dtype=torch.float32, device="cuda")
                if init.get("dist") == "normal":
                    t.normal_(init.get("mean", 0), init.get("std", 1))
                else:
                    t.uniform_(init.get("lo", -1), init.get("hi", 1))
                t = t.to(dt)
            else:
                t = torch.randint(int(init.get("lo", 0)), int(init.get("hi", 100)) + 1, (max(n, 1),),
                                  dtype=dt, device="cuda")
            keep.append(t)
            args.append(ctypes.c_void_p(t.data_ptr()))
            types.append(ctypes.c_void_p)
    return args, types, keep


def build(src, out, arch):
    subprocess.run(["nvcc", "-shared", "-O3", "-arch=" + arch, "-Xcompiler", "-fPIC", src, "-o", out],
                   check=True, capture_output=True)
    return ctypes.CDLL(out)


def do_bench_us(lib, entry, task, sizes):
    args, types, keep = make_args(task, sizes)
    fn = getattr(lib, entry)
    fn.argtypes = types + [ctypes.c_void_p]
    fn.restype = None
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    call = lambda: fn(*args, stream)
    ms = [triton.testing.do_bench(call, warmup=25, rep=200, return_mode="median") for _ in range(3)]
    torch.cuda.synchronize()
    del keep
    return st.median(ms) * 1000.0


def main():
    arch = "sm_" + subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader",
                                   "-i", "0"], capture_output=True, text=True).stdout.split()[0].replace(".", "")
    tmp = tempfile.mkdtemp()
    env = dict(os.environ, KEVO_DB=os.path.join(tmp, "db"))
    rows = []
    for name in TASKS:
        d = os.path.join("examples/tasks", name)
        task = json.load(open(os.path.join(d, "task.json")))
        sizes = task["bench"][0]
        kc = {m: [] for m in METHODS}
        kr = {m: [] for m in METHODS}
        cvin = {m: [] for m in METHODS}
        for _ in range(RUNS):
            for m in METHODS:  # interleaved: drift falls on every method alike
                p = subprocess.run([KEVO, "eval", "--surface", "cuda", "--json", "--budget", BUDGET,
                                    "--timing", m, d, os.path.join(d, "good.cu")],
                                   capture_output=True, text=True, env=env)
                j = json.loads(p.stdout)
                kc[m].append(j["timing"]["median_us"])
                kr[m].append(j["timing"]["reference_median_us"])
                cvin[m].append(j["timing"]["candidate"]["cv"])
        for who, src, kk in (("good", "good.cu", kc), ("reference", "reference.cu", kr)):
            lib = build(os.path.join(d, src), os.path.join(tmp, name + "-" + who + ".so"), arch)
            db = do_bench_us(lib, task["entry"], task, sizes)
            for m in METHODS:
                ks = kk[m]
                km = st.median(ks)
                rr = st.pstdev(ks) / st.mean(ks) if len(ks) > 1 else 0
                rows.append((name, who, m, km, 100 * rr,
                             100 * st.median(cvin[m]) if who == "good" else None, db, km / db))
                print(rows[-1], flush=True)
    dev = torch.cuda.get_device_name(0)
    out = ["### Timing fidelity, cuda surface (%s, %s, kevo budget %s s per side, %d kevo runs, "
           "do_bench median of 3)" % (datetime.date.today().isoformat(), dev, BUDGET, RUNS), "",
           "| task | kernel | kevo --timing | kevo median us | kevo run-to-run CV | kevo in-run CV | do_bench us | kevo / do_bench |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append("| %s | %s | %s | %.1f | %.2f%% | %s | %.1f | %.3f |" % (
            r[0], r[1], r[2], r[3], r[4], "%.2f%%" % r[5] if r[5] is not None else "", r[6], r[7]))
    text = "\n".join(out)
    print(text)
    if OUTMD:
        with open(OUTMD, "a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
