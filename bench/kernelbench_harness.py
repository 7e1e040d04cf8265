#!/usr/bin/env python3
"""KernelBench's way of judging a kernel, for comparison with `kevo eval
--surface cuda` of the same kernel on the same GPU.

    bench/kernelbench_harness.py PROBLEM.py TASK_DIR CANDIDATE.cu [--trials N] [--load-inline]

PROBLEM.py is the KernelBench module, TASK_DIR its `kevo import`, CANDIDATE.cu
a kevo candidate for that task (the extern "C" entry of the task's
prototype). The candidate is built into a ModelNew whose forward allocates
the outputs and calls the entry on torch's current stream, as a KernelBench
ModelNew would: by default built with nvcc into a shared object and called
through ctypes (seconds to build; linked with the vendor libraries the task
allows); with --load-inline through torch.utils.cpp_extension.load_inline as
KernelBench does (a minute or more to build). The task's parameters are
filled from the problem's own Model: get_inputs() in order, then its
parameters and buffers by name, a packed weights buffer (task.json "pack")
concatenated once, as a ModelNew would in its constructor. Then, as
KernelBench does: 5 correctness trials on fresh get_inputs() (atol = rtol =
1e-2), and timing with CUDA events: 3 warm-ups, then N trials (default 100)
of one forward each on the same inputs, no L2 flush between trials, the mean
reported (KernelBench's score uses the mean). The eager Model and the Model
under torch.compile(mode=default) are timed the same way. This
re-implements KernelBench's documented method; it is not KernelBench's code.
Prints one JSON object.
"""
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import types

import torch

CT = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t",
      "f16": "__half", "bf16": "__nv_bfloat16"}
C_SCALAR = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32,
            "i64": ctypes.c_int64, "u8": ctypes.c_uint8}
LIBS = {"cublas": ["-lcublas"], "cublaslt": ["-lcublasLt"], "cudnn": ["-lcudnn"]}


def load_problem(path):
    mod = types.ModuleType("kb_problem")
    mod.__file__ = path
    exec(compile(open(path).read(), path, "exec"), mod.__dict__)
    return mod


def load_task(tdir):
    return json.load(open(os.path.join(tdir, "task.json")))


def arch():
    cc = torch.cuda.get_device_capability(0)
    return "sm_%d%d" % cc


def build_so(task, cand, out_so):
    """The candidate with nvcc into a shared object, linked with the vendor
    libraries task.json allows (a library kevo finds elsewhere must be on
    nvcc's or the linker's path here)."""
    cmd = ["nvcc", "-shared", "-O3", "-arch=" + arch(), "-Xcompiler", "-fPIC", cand, "-o", out_so]
    for lib in task.get("allow", []):
        cmd += LIBS.get(lib, [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("nvcc failed: %s\n%s" % (" ".join(cmd), p.stderr[-3000:]))
    lib = ctypes.CDLL(out_so)
    fn = getattr(lib, task["entry"])
    fn.restype = None
    return lib, fn


def build_inline(task, src):
    decl, call = [], []
    t = s = 0
    for p in task["params"]:
        role = p["role"]
        if role == "size":
            decl.append("int %s" % p["name"])
            call.append("(int)s[%d]" % s)
            s += 1
        elif role == "scalar":
            sys.exit("kernelbench_harness: scalar params are not handled with --load-inline")
        else:
            ty = CT[p.get("dtype", "f32")]
            const = "const " if role == "in" else ""
            decl.append("%s%s *%s" % (const, ty, p["name"]))
            call.append("(%s%s *)t[%d].data_ptr()" % (const, ty, t))
            t += 1
    from torch.utils.cpp_extension import load_inline
    cpp = """#include <torch/extension.h>
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
extern "C" void %s(%s, cudaStream_t stream);
void run(std::vector<torch::Tensor> t, std::vector<int64_t> s) {
  %s(%s, at::cuda::getCurrentCUDAStream());
}
""" % (task["entry"], ", ".join(decl), task["entry"], ", ".join(call))
    d = tempfile.mkdtemp(prefix="kb-harness-")
    extra = []
    for lib in task.get("allow", []):
        extra += LIBS.get(lib, [])
    return load_inline(name="kb_" + task["entry"], cpp_sources=[cpp], cuda_sources=[src],
                       functions=["run"], build_directory=d, verbose=False,
                       extra_cuda_cflags=["-O3"], extra_ldflags=extra)


def weight_args(task, model, n_inputs):
    """The tensors of the task's weight params (those after the inputs, before
    the outputs), from the model: by name ('.' written '_'), a packed buffer
    concatenated from its 'pack' list; a name not found takes the next of the
    model's tensors in order."""
    named = list(model.named_parameters()) + list(model.named_buffers())
    by_dot = dict(named)
    by_us = {k.replace(".", "_"): v for k, v in named}
    order = [v for _, v in named]
    pos, out = 0, []
    ins = [p for p in task["params"] if p["role"] in ("in", "scalar")][n_inputs:]
    for p in ins:
        if "pack" in p:
            ts = [by_dot[e["name"]].detach().reshape(-1) for e in p["pack"]]
            out.append(torch.cat(ts).contiguous())
            pos += len(ts)
        elif p["name"] in by_us:
            out.append(by_us[p["name"]].detach().contiguous())
            pos += 1
        else:
            out.append(order[pos].detach().contiguous())
            pos += 1
    return out


class NewModel:
    """forward(*inputs) of the candidate: outputs allocated per call (as a
    ModelNew's forward does), the entry called on torch's current stream."""

    def __init__(self, task, model, n_inputs, fn=None, ext=None):
        self.task, self.fn, self.ext = task, fn, ext
        self.weights = weight_args(task, model, n_inputs)
        self.sizes = [int(task["bench"][0][p["name"]]) for p in task["params"] if p["role"] == "size"]
        self.out_spec = [p for p in task["params"] if p["role"] == "out"]
        self.shapes = None
        if fn is not None:
            types_ = []
            for p in task["params"]:
                if p["role"] == "size":
                    types_.append(ctypes.c_int)
                elif p["role"] == "scalar":
                    types_.append(C_SCALAR[p["dtype"]])
                else:
                    types_.append(ctypes.c_void_p)
            fn.argtypes = types_ + [ctypes.c_void_p]
            self.prepare(n_inputs)

    def prepare(self, n_inputs):
        """The entry's arguments in the task's order with the weights and
        sizes filled in once; the positions of the inputs and outputs, filled
        per call."""
        self.fixed, self.in_pos, self.out_pos = [], [], []
        it_w, si, k = iter(self.weights), iter(self.sizes), 0
        for p in self.task["params"]:
            r = p["role"]
            if r == "size":
                self.fixed.append(next(si))
            elif r == "out":
                self.out_pos.append(len(self.fixed))
                self.fixed.append(None)
            elif k < n_inputs:
                self.in_pos.append((len(self.fixed), C_SCALAR[p["dtype"]] if r == "scalar" else None))
                self.fixed.append(None)
                k += 1
            else:
                w = next(it_w)
                self.fixed.append(w.data_ptr() if isinstance(w, torch.Tensor) else C_SCALAR[p["dtype"]](w))
                k += 1

    def args(self, inputs, outs):
        vals = list(self.fixed)
        for (pos, scalar), x in zip(self.in_pos, inputs):
            vals[pos] = scalar(x) if scalar else x.data_ptr()
        for pos, o in zip(self.out_pos, outs):
            vals[pos] = o.data_ptr()
        return vals

    def __call__(self, *inputs):
        outs = [torch.empty(s, dtype=d, device="cuda") for s, d in self.shapes]
        if self.fn is not None:
            self.fn(*self.args(inputs, outs), torch.cuda.current_stream().cuda_stream)
        else:
            ts = [x for x in inputs if isinstance(x, torch.Tensor)] + self.weights + outs
            self.ext.run(ts, self.sizes)
        return outs[0] if len(outs) == 1 else tuple(outs)


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


def cuda_inputs(mod, seed):
    torch.manual_seed(seed)
    return [x.cuda() if isinstance(x, torch.Tensor) else x for x in mod.get_inputs()]


def harness(problem, tdir, cand, trials=100, load_inline=False, so_dir=None):
    """KernelBench's protocol on the candidate, the eager Model and
    torch.compile(Model). Returns (result dict, context for more timing:
    model, compiled model, new model, inputs)."""
    task = load_task(tdir)
    mod = load_problem(problem)
    torch.manual_seed(42)
    model = mod.Model(*mod.get_init_inputs()).cuda()
    n_inputs = len(mod.get_inputs())
    if load_inline:
        new = NewModel(task, model, n_inputs, ext=build_inline(task, open(cand).read()))
    else:
        d = so_dir or tempfile.mkdtemp(prefix="kb-harness-")
        _, fn = build_so(task, cand, os.path.join(d, os.path.basename(cand)[:-3] + ".so"))
        new = NewModel(task, model, n_inputs, fn=fn)
    inputs = cuda_inputs(mod, 42)
    with torch.no_grad():
        r = model(*inputs)
    rs = list(r) if isinstance(r, (list, tuple)) else [r]
    assert len(rs) == len(new.out_spec), "outputs: the model's %d, the task's %d" % (len(rs), len(new.out_spec))
    new.shapes = [(tuple(x.shape), x.dtype) for x in rs]
    correct, max_diff = 0, 0.0
    for trial in range(5):
        inputs = cuda_inputs(mod, 1000 + trial)
        with torch.no_grad():
            ref = model(*inputs)
            got = new(*inputs)
        ref = list(ref) if isinstance(ref, (list, tuple)) else [ref]
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        ok = all(torch.allclose(g, e, atol=1e-2, rtol=1e-2) for g, e in zip(got, ref))
        max_diff = max(max_diff, max(float((g - e).abs().max()) for g, e in zip(got, ref)))
        correct += ok
    inputs = cuda_inputs(mod, 42)
    res = {"problem": os.path.basename(problem), "candidate": os.path.basename(cand),
           "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "build": "load_inline" if load_inline else "nvcc+ctypes",
           "correct_trials": correct, "max_abs_diff": max_diff, "trials": trials}
    compiled = torch.compile(model, mode=None)
    if correct == 5:
        res["new"] = time_events(new, inputs, trials)
        res["eager"] = time_events(model, inputs, trials)
        res["compile"] = time_events(compiled, inputs, trials)
        res["speedup_vs_eager"] = res["eager"]["mean_us"] / res["new"]["mean_us"]
        res["speedup_vs_compile"] = res["compile"]["mean_us"] / res["new"]["mean_us"]
    return res, {"model": model, "compiled": compiled, "new": new, "inputs": inputs, "task": task}


def main():
    args = sys.argv[1:]
    trials = 100
    if "--trials" in args:
        i = args.index("--trials")
        trials = int(args[i + 1])
        del args[i:i + 2]
    inline = "--load-inline" in args
    if inline:
        args.remove("--load-inline")
    problem, tdir, cand = args
    res, _ = harness(problem, tdir, cand, trials, inline)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
