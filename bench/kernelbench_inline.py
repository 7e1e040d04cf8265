#!/usr/bin/env python3
"""A KernelBench-style evaluation of an example's good.cu, for comparison with
`kevo eval --surface cuda` of the same kernel on the same GPU: compile with
torch.utils.cpp_extension.load_inline into a fresh build directory (as for a
new candidate), 5 correctness trials against PyTorch on random inputs of the
bench size (atol = rtol = 1e-2, KernelBench's), then 100 timed trials with
CUDA events after 3 warm-ups (KernelBench's defaults). Prints one JSON line
of seconds per phase.

usage: bench/kernelbench_inline.py TASK   (rowsum softmax layernorm transpose matmul conv1d)
"""
import json
import os
import sys
import tempfile
import time

t_start = time.time()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.cpp_extension import load_inline  # noqa: E402

t_import = time.time() - t_start
torch.backends.cuda.matmul.allow_tf32 = False
name = sys.argv[1] if len(sys.argv) > 1 else "rowsum"
d = os.path.join("examples/tasks", name)
task = json.load(open(os.path.join(d, "task.json")))
src = open(os.path.join(d, "good.cu")).read()
CT = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t",
      "f16": "__half", "bf16": "__nv_bfloat16"}
REF = {
    "rowsum": lambda a: a["x"].sum(1),
    "softmax": lambda a: torch.softmax(a["x"], 1),
    "layernorm": lambda a: F.layer_norm(a["x"], (a["cols"],), a["gamma"], a["beta"], a["eps"]),
    "transpose": lambda a: a["x"].t().contiguous(),
    "matmul": lambda a: a["a"] @ a["b"],
    "conv1d": lambda a: F.conv1d(a["x"][:, None, :], a["w"][None, None, :])[:, 0, :],
}

# The binding: tensors and numbers in, the entry launched on torch's stream.
decl, call = [], []
for p in task["params"]:
    if p["role"] == "size":
        decl.append("int64_t %s" % p["name"])
        call.append("(int)%s" % p["name"])
    elif p["role"] == "scalar":
        decl.append("double %s" % p["name"])
        call.append("(%s)%s" % (CT[p["dtype"]], p["name"]))
    else:
        decl.append("torch::Tensor %s" % p["name"])
        call.append("reinterpret_cast<%s%s *>(%s.data_ptr())" % (
            "const " if p["role"] == "in" else "", CT[p["dtype"]], p["name"]))
fn = "%s_forward" % task["entry"]
wrapper = "\nvoid %s(%s) {\n  %s(%s, at::cuda::getCurrentCUDAStream());\n}\n" % (
    fn, ", ".join(decl), task["entry"], ", ".join(call))
cuda_src = "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n" + src + wrapper
cpp_src = "#include <torch/extension.h>\nvoid %s(%s);" % (fn, ", ".join(decl))

t0 = time.time()
mod = load_inline(name="kb_%s_%d" % (name, os.getpid()), cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=[fn], build_directory=tempfile.mkdtemp(prefix="kb-inline-"),
                  verbose=False)
forward = getattr(mod, fn)
t_compile = time.time() - t0

sizes = task["bench"][0]


def inputs(seed):
    torch.manual_seed(seed)
    a, args, out = dict(sizes), [], None
    for p in task["params"]:
        if p["role"] == "size":
            args.append(sizes[p["name"]])
        elif p["role"] == "scalar":
            a[p["name"]] = p.get("value", 0.0)
            args.append(a[p["name"]])
        else:
            shape = [int(eval(str(e).replace("/", "//"), {}, dict(sizes))) for e in p["shape"]]
            init = p.get("init", {})
            if p["role"] == "out":
                t = torch.empty(shape, device="cuda")
                out = t
            elif init.get("dist") == "normal":
                t = torch.randn(shape, device="cuda") * init.get("std", 1) + init.get("mean", 0)
            else:
                lo, hi = init.get("lo", -1), init.get("hi", 1)
                t = torch.rand(shape, device="cuda") * (hi - lo) + lo
            a[p["name"]] = t
            args.append(t)
    return a, args, out


t0 = time.time()
ok = True
for trial in range(5):
    a, args, out = inputs(trial)
    forward(*args)
    torch.cuda.synchronize()
    ok = ok and bool(torch.allclose(out, REF[name](a), atol=1e-2, rtol=1e-2))
t_check = time.time() - t0

t0 = time.time()
a, args, out = inputs(99)
for _ in range(3):
    forward(*args)
torch.cuda.synchronize()
times = []
for _ in range(100):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    forward(*args)
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e) * 1000)
t_time = time.time() - t0
times.sort()
print(json.dumps({"task": name, "import_s": round(t_import, 2), "compile_s": round(t_compile, 2),
                  "check_s": round(t_check, 2), "timing_s": round(t_time, 2),
                  "total_s": round(time.time() - t_start, 2),
                  "total_without_import_s": round(time.time() - t_start - t_import, 2),
                  "correct": ok, "median_us": round(times[50], 1)}), flush=True)
