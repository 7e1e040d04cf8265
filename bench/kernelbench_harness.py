#!/usr/bin/env python3
"""KernelBench's way of judging a kernel, for comparison with `kevo eval
--surface cuda` of the same kernel on the same GPU.

    bench/kernelbench_harness.py PROBLEM.py TASK_DIR CANDIDATE.cu [--trials N]

PROBLEM.py is the KernelBench module, TASK_DIR its `kevo import`, CANDIDATE.cu
a kevo candidate for that task (the extern "C" entry of the task's
prototype). The candidate is built with torch.utils.cpp_extension.load_inline
into a ModelNew whose forward allocates the outputs and calls the entry on
torch's current stream, as a KernelBench ModelNew would. Then, as KernelBench
does: 5 correctness trials on fresh get_inputs() (atol = rtol = 1e-2), and
timing with CUDA events: 3 warm-ups, then N trials (default 100) of one
forward each on the same inputs, no L2 flush between trials, the mean
reported (KernelBench's score uses the mean). The eager Model and the Model
under torch.compile(mode=default) are timed the same way. This re-implements
KernelBench's documented method; it is not KernelBench's code. Prints one
JSON object.
"""
import json
import math
import os
import statistics
import sys
import tempfile
import types

import torch
from torch.utils.cpp_extension import load_inline

CT = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t",
      "f16": "__half", "bf16": "__nv_bfloat16"}


def load_problem(path):
    mod = types.ModuleType("kb_problem")
    mod.__file__ = path
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    return mod


def build(task, src):
    params = task["params"]
    decl, call = [], []
    t = s = 0
    for p in params:
        role = p["role"]
        if role == "size":
            decl.append("int %s" % p["name"])
            call.append("(int)s[%d]" % s)
            s += 1
        elif role == "scalar":
            sys.exit("kernelbench_harness: scalar params are not handled")
        else:
            ty = CT[p.get("dtype", "f32")]
            const = "const " if role == "in" else ""
            decl.append("%s%s *%s" % (const, ty, p["name"]))
            call.append("(%s%s *)t[%d].data_ptr()" % (const, ty, t))
            t += 1
    cpp = """#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
extern "C" void %s(%s, cudaStream_t stream);
void run(std::vector<torch::Tensor> t, std::vector<int64_t> s) {
  %s(%s, at::cuda::getCurrentCUDAStream());
}
""" % (task["entry"], ", ".join(decl), task["entry"], ", ".join(call))
    d = tempfile.mkdtemp(prefix="kb-harness-")
    return load_inline(name="kb_" + task["entry"], cpp_sources=[cpp], cuda_sources=[src],
                       functions=["run"], build_directory=d, verbose=False,
                       extra_cuda_cflags=["-O3"])


def time_events(fn, inputs, trials, warmup=3):
    with torch.no_grad():
        for _ in range(warmup):
            fn(*inputs)
        torch.cuda.synchronize()
        ts = []
        for _ in range(trials):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*inputs)
            b.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(b) * 1000.0)  # us
    return {"mean_us": statistics.fmean(ts), "median_us": statistics.median(ts),
            "std_us": statistics.pstdev(ts), "min_us": min(ts), "max_us": max(ts)}


def main():
    args = sys.argv[1:]
    trials = 100
    if "--trials" in args:
        i = args.index("--trials")
        trials = int(args[i + 1])
        del args[i:i + 2]
    problem, tdir, cand = args
    task = json.load(open(os.path.join(tdir, "task.json")))
    mod = load_problem(problem)
    dev = torch.device("cuda")
    torch.manual_seed(42)
    model = mod.Model(*mod.get_init_inputs()).to(dev)
    weights = [w for _, w in list(model.named_parameters()) + list(model.named_buffers())]
    sizes = [int(getattr(mod, p["name"])) for p in task["params"] if p["role"] == "size"]
    ext = build(task, open(cand).read())
    outs_spec = [p for p in task["params"] if p["role"] == "out"]

    def new_forward(*inputs):
        outs = [torch.empty(s, dtype=d, device=dev) for s, d in new_forward.shapes]
        ext.run(list(inputs) + weights + outs, sizes)
        return outs[0] if len(outs) == 1 else tuple(outs)

    inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    with torch.no_grad():
        r = model(*inputs)
    rs = list(r) if isinstance(r, (list, tuple)) else [r]
    new_forward.shapes = [(tuple(x.shape), x.dtype) for x in rs]
    assert len(rs) == len(outs_spec)
    correct, max_diff = 0, 0.0
    for trial in range(5):
        torch.manual_seed(1000 + trial)
        inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
        with torch.no_grad():
            ref = model(*inputs)
            got = new_forward(*inputs)
        ref = list(ref) if isinstance(ref, (list, tuple)) else [ref]
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        ok = all(torch.allclose(g, e, atol=1e-2, rtol=1e-2) for g, e in zip(got, ref))
        max_diff = max(max_diff, max(float((g - e).abs().max()) for g, e in zip(got, ref)))
        correct += ok
    torch.manual_seed(42)
    inputs = [x.to(dev) if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]
    res = {"problem": os.path.basename(problem), "candidate": os.path.basename(cand),
           "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "correct_trials": correct, "max_abs_diff": max_diff, "trials": trials}
    if correct == 5:
        res["new"] = time_events(new_forward, inputs, trials)
        res["eager"] = time_events(model, inputs, trials)
        compiled = torch.compile(model, mode=None)
        res["compile"] = time_events(compiled, inputs, trials)
        res["speedup_vs_eager"] = res["eager"]["mean_us"] / res["new"]["mean_us"]
        res["speedup_vs_compile"] = res["compile"]["mean_us"] / res["new"]["mean_us"]
    print(json.dumps(res))


if __name__ == "__main__":
    main()
