#!/usr/bin/env python3
"""kevo's import helper: runs one KernelBench-style PyTorch module and reports
the facts kevo needs to write a task for it.

    kevo_import.py FILE.py [--max-bytes N] [--check-bytes N] [--threads N]

A KernelBench-style module defines `class Model(nn.Module)`, module-level size
constants, `get_inputs()` and `get_init_inputs()`. This helper:

  1. parses the file (a syntax error is reported, nothing runs);
  2. runs it at its own sizes on torch's "meta" device (shapes and dtypes, no
     memory, no arithmetic): the bench run; when an operator has no meta
     kernel, it runs on the CPU instead if the tensors fit in --max-bytes;
  3. runs it for real on the CPU with its integer size constants scaled down
     (the literal ones: `batch_size = 4096`, not `dim = 2 * hidden`, which is
     recomputed), keeping the first two scalings that run with inputs under
     --check-bytes and everything under --max-bytes (a network's weights do
     not scale): the check runs (each constant halved apart, then, if
     that leaves fewer than two, all halved together);
  4. infers each tensor's init from how it was made (buffers as Model built
     them: forward's updates, a BatchNorm's running statistics, are undone) (PyTorch's default for
     Linear/Conv layers: uniform(+-1/sqrt(fan_in)); constants such as a norm's
     ones and zeros become a narrow uniform around the value).

Python numbers (int, float) in get_inputs() become scalar params with the
module's value (refused where a scaled size changes it).

It prints exactly one line on stdout, `KEVO_IMPORT_JSON {...}`, and nothing
else there (the module's own prints go to stderr). kevo runs it with a
deadline, a scrubbed environment and CUDA hidden, inside kevo-sandbox: no
network, Landlock (writes only in its scratch directory), the seccomp filter of
kevo's workers (programs may still run, inside the same sandbox) and a data
cap (include/kevo/import.h, docs/sandbox.md); it never needs a GPU.
"""
import ast
import json
import math
import os
import sys
import time
import types

MARK = "KEVO_IMPORT_JSON "
SCALE_MIN = 16  # constants below this are kept (kernel sizes, strides, heads)
FLOORS = (8, 16, 32, 64, 128)
_out = None


def emit(obj):
    obj["kevo_import"] = 1
    _out.write(MARK + json.dumps(obj, allow_nan=False) + "\n")
    _out.flush()
    os._exit(0)


def fail(cause, detail):
    emit({"ok": False, "cause": cause, "detail": detail})


class Refused(Exception):
    def __init__(self, cause, detail):
        super().__init__(detail)
        self.cause = cause
        self.detail = detail


def literal_int(node):
    """The value of an integer expression made only of literals, else None."""
    if isinstance(node, ast.Constant):
        v = node.value
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = literal_int(node.operand)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.BinOp):
        a, b = literal_int(node.left), literal_int(node.right)
        if a is None or b is None:
            return None
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b if b else None,
               ast.Pow: lambda: a ** b if 0 <= b <= 64 else None}
        f = ops.get(type(node.op))
        return f() if f else None
    return None


def literal_ints(node):
    """[(suffix, value)] for an integer literal expression or a list/tuple of
    them (`layer_sizes = [400, 800]` gives layer_sizes_0, layer_sizes_1)."""
    v = literal_int(node)
    if v is not None:
        return [("", v)]
    if isinstance(node, (ast.List, ast.Tuple)) and 0 < len(node.elts) <= 16:
        vs = [literal_int(e) for e in node.elts]
        if all(x is not None for x in vs):
            return [("_%d" % i, x) for i, x in enumerate(vs)]
    return None


def is_const_assign(st):
    return isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets) \
        and literal_ints(st.value) is not None


def unpack(st):
    """`D, H, W = 16, 32, 32` as [(name, value node)], else None."""
    if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
            isinstance(st.targets[0], ast.Tuple) and isinstance(st.value, ast.Tuple) and \
            len(st.targets[0].elts) == len(st.value.elts) and \
            all(isinstance(t, ast.Name) for t in st.targets[0].elts):
        return list(zip([t.id for t in st.targets[0].elts], st.value.elts))
    return None


def base_constants(tree):
    """Top-level literal integer constants: name -> value, in source order."""
    out = {}
    for st in tree.body:
        for name, node in unpack(st) or []:
            for k in [k for k in out if k == name or k.startswith(name + "_")]:
                del out[k]
            v = literal_int(node)
            if v is not None:
                out[name] = v
        if isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets):
            vs = literal_ints(st.value)
            for t in st.targets:
                for k in [k for k in out if k == t.id or k.startswith(t.id + "_")]:
                    del out[k]
                for suffix, v in vs or []:
                    out[t.id + suffix] = v
    return out


def with_constants(tree, values):
    """A copy of the module whose literal constants take the given values."""
    new = ast.parse(ast.unparse(tree))
    body = []
    for st in new.body:
        pairs = unpack(st)
        if pairs:
            for name, node in pairs:
                v = literal_int(node)
                val = ast.Constant(values.get(name, v)) if v is not None else node
                a = ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=val)
                body.append(ast.copy_location(a, st))
        elif is_const_assign(st):
            vs = literal_ints(st.value)
            for t in st.targets:
                elts = [ast.Constant(values.get(t.id + sfx, v)) for sfx, v in vs]
                if isinstance(st.value, ast.List):
                    val = ast.List(elts=elts, ctx=ast.Load())
                elif isinstance(st.value, ast.Tuple):
                    val = ast.Tuple(elts=elts, ctx=ast.Load())
                else:
                    val = elts[0]
                a = ast.Assign(targets=[ast.Name(id=t.id, ctx=ast.Store())], value=val)
                body.append(ast.copy_location(a, st))
        else:
            body.append(st)
    new.body = body
    return ast.fix_missing_locations(new)


def scaled(consts, floor):
    """Halves each constant >= SCALE_MIN while it stays >= floor (exactly for
    even values, so 3 * 2^17 ends at 12 and keeps its divisors; rounding down
    for odd ones, such as the irregular 8205)."""
    out = {}
    for k, v in consts.items():
        if v >= SCALE_MIN and v > floor:
            while v // 2 >= floor:
                v //= 2
        out[k] = v
    return out


def scaled_together(consts, floor):
    """Divides every constant >= SCALE_MIN by one power of two, the largest
    that takes none of them below floor, so their ratios stay and a size that
    one divides (GroupNorm's channels by its groups: 192 by 64) still divides
    at check size (24 by 8), where scaled() takes both to the floor apart
    (12 and 8)."""
    big = [v for v in consts.values() if v >= SCALE_MIN and v > floor]
    if not big:
        return dict(consts)
    s = 0
    while all(v >> (s + 1) >= floor for v in big):
        s += 1
    return {k: (v >> s if v >= SCALE_MIN and v > floor else v) for k, v in consts.items()}


DTYPES = None


def dtype_name(t):
    return DTYPES.get(t.dtype) or str(t.dtype).replace("torch.", "")


def tensor_bytes(ts):
    return sum(t.numel() * t.element_size() for t in ts)


def gib(n):
    return "%.2f GiB" % (n / 2**30) if n >= 2**30 else "%.1f MiB" % (n / 2**20)


def run_module(torch, tree, path, consts, device):
    """Runs the module once; returns (ns, inputs, model, outputs)."""
    mod = types.ModuleType("kevo_reference")
    mod.__file__ = path
    code = compile(with_constants(tree, consts), path, "exec")
    torch.manual_seed(0)
    with torch.device(device):
        try:
            exec(code, mod.__dict__)
        except ModuleNotFoundError as e:
            raise Refused("missing_module", "it imports %s, which this Python (%s) lacks; "
                          "install it there (pip install %s)" % (e.name, sys.executable,
                                                                  (e.name or "").split(".")[0]))
        except Exception as e:
            raise Refused("exception", "running the module's top level raised %s: %s"
                          % (type(e).__name__, e))
        ns = mod.__dict__
        model_cls = ns.get("Model")
        if not isinstance(model_cls, type) or not issubclass(model_cls, torch.nn.Module):
            raise Refused("no_model", "Model is not a subclass of torch.nn.Module; define "
                          "class Model(nn.Module)")
        for fn in ("get_inputs", "get_init_inputs"):
            if not callable(ns.get(fn)):
                raise Refused("no_" + fn, "%s is not a function; define def %s(): return [...]"
                              % (fn, fn))
        try:
            init = ns["get_init_inputs"]()
        except Exception as e:
            raise Refused("exception", "get_init_inputs() raised %s: %s" % (type(e).__name__, e))
        if not isinstance(init, (list, tuple)):
            raise Refused("bad_init_inputs", "get_init_inputs() returned %s, not a list; return "
                          "[arg, ...]" % type(init).__name__)
        try:
            model = model_cls(*init)
        except Exception as e:
            raise Refused("exception", "Model(*get_init_inputs()) raised %s: %s"
                          % (type(e).__name__, e))
        try:
            inputs = ns["get_inputs"]()
        except Exception as e:
            raise Refused("exception", "get_inputs() raised %s: %s" % (type(e).__name__, e))
        if not isinstance(inputs, (list, tuple)):
            raise Refused("not_tensor", "get_inputs() returned %s, not a list of tensors"
                          % type(inputs).__name__)
        for i, x in enumerate(inputs):
            if is_number(x):
                continue  # a scalar param of the entry
            if not isinstance(x, torch.Tensor):
                raise Refused("not_tensor", "get_inputs()[%d] is %s (%.40r), neither a tensor nor "
                              "a Python int or float; kevo passes tensors and numbers to the "
                              "entry" % (i, type(x).__name__, x))
        return ns, list(inputs), model


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def scalar_dtype(v):
    if isinstance(v, float):
        return "f32"
    return "i32" if -2**31 <= v < 2**31 else "i64"


def forward(torch, model, inputs, device):
    """Runs forward once. The buffers are put back as Model built them (a
    BatchNorm in training mode updates its running statistics in forward):
    their inits are inferred from what Model starts from, not from one
    call's batch (running_var 1, not 0.91 +- 0.001 after a step)."""
    with torch.device(device), torch.no_grad():
        before = [(b, b.clone()) for b in model.buffers()] if device != "meta" else []
        try:
            out = model(*inputs)
        except NotImplementedError:
            raise
        except Exception as e:
            raise Refused("exception", "Model.forward raised %s: %s" % (type(e).__name__, e))
        for b, v in before:
            b.copy_(v)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    for i, o in enumerate(outs):
        if not isinstance(o, torch.Tensor):
            raise Refused("not_tensor", "forward's output %d is %s, not a tensor" %
                          (i, type(o).__name__))
    if not outs:
        raise Refused("not_tensor", "forward returned nothing; return a tensor")
    return outs


def stats(torch, t):
    if t.device.type == "meta" or t.numel() == 0:
        return None
    x = t.detach()
    if x.dtype == torch.bool:
        x = x.to(torch.uint8)
    if x.is_complex():
        return None
    if not x.is_floating_point():
        return {"int": True, "min": int(x.min()), "max": int(x.max())}
    x = x.double()
    if not bool(torch.isfinite(x).all()):
        return {"int": False, "nonfinite": True}
    return {"int": False, "min": float(x.min()), "max": float(x.max()),
            "mean": float(x.mean()), "std": float(x.std()) if x.numel() > 1 else 0.0,
            "n": x.numel()}


def rnd(v):
    return float("%.6g" % v)


def infer_init(st, layer, fan_in):
    """(init, how) for a tensor from its layer and its observed values."""
    if fan_in:
        b = rnd(1 / math.sqrt(fan_in))
        return ({"dist": "uniform", "lo": -b, "hi": b},
                "PyTorch's default for %s: uniform(+-1/sqrt(fan_in=%d))" % (layer, fan_in))
    if st is None:
        return None, "no values seen"
    if st.get("nonfinite"):
        return None, "its values are not all finite"
    if st["int"]:
        return {"dist": "int", "lo": st["min"], "hi": st["max"]}, \
            "integers in the range seen [%d, %d]" % (st["min"], st["max"])
    lo, hi, mean, std, n = st["min"], st["max"], st["mean"], st["std"], st["n"]
    if lo == hi:
        w = max(abs(lo) * 0.1, 0.1)
        if lo > 0:
            w = min(w, lo / 2)
        return ({"dist": "uniform", "lo": rnd(lo - w), "hi": rnd(lo + w)},
                "constant %g by default, drawn uniform(%g +- %g) so it changes per seed"
                % (lo, lo, rnd(w)))
    width = hi - lo
    if width > 0 and abs(std - width / math.sqrt(12)) < 0.15 * std:
        # Looks uniform: round the ends outwards to one decimal of their scale
        # (torch.rand's [0.0012, 0.997] becomes [0, 1]).
        scale = 10 ** math.floor(math.log10(max(abs(lo), abs(hi))))
        lo = math.floor(lo / scale * 10) / 10 * scale
        hi = math.ceil(hi / scale * 10) / 10 * scale
        return ({"dist": "uniform", "lo": rnd(lo), "hi": rnd(hi)},
                "uniform like the module's own values [%g, %g]" % (rnd(lo), rnd(hi)))
    # Normal: snap a mean within noise of 0 to 0 and a std within noise of 1 to 1.
    if abs(mean) <= 3 * std / math.sqrt(n):
        mean = 0.0
    std = float("%.2g" % std)
    if abs(std - 1) <= 3 / math.sqrt(2 * n):
        std = 1.0
    return ({"dist": "normal", "mean": rnd(mean), "std": rnd(std)},
            "normal like the module's own values (mean %g, std %g)" % (rnd(mean), rnd(std)))


def cap_memory(max_bytes):
    """Caps this process's data (heap and anonymous maps, where torch's CPU
    tensors live) at what it has now plus twice max_bytes, so that a module
    whose size could not be measured fails with MemoryError instead of
    taking the machine. Under kevo's sandbox the seccomp filter refuses
    setrlimit, and the cap kevo-sandbox set before (-d, kv_import_data_cap)
    is the one in force."""
    try:
        import resource
        with open("/proc/self/status") as f:
            data = next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmData:"))
        limit = data + 2 * max_bytes
        soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    except (OSError, ValueError, StopIteration):
        pass


def main():
    global _out, DTYPES
    _out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # the module's prints go to stderr
    args = sys.argv[1:]
    if not args:
        fail("usage", "usage: kevo_import.py FILE.py [--max-bytes N] [--check-bytes N] "
             "[--threads N]")
    path = args[0]
    opts = {"--max-bytes": 2 << 30, "--check-bytes": 64 << 20, "--threads": 1}
    i = 1
    while i < len(args):
        if args[i] in opts and i + 1 < len(args):
            opts[args[i]] = int(args[i + 1])
            i += 2
        else:
            fail("usage", "unknown option %s" % args[i])
    t0 = time.time()
    try:
        with open(path, "rb") as f:
            raw = f.read(1 << 20 + 1)
    except OSError as e:
        fail("read", "cannot read it: %s" % e.strerror)
    if len(raw) > 1 << 20:
        fail("read", "over 1 MiB; a module file should be small")
    try:
        src = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail("read", "not UTF-8 text (byte %d)" % e.start)
    try:
        tree = ast.parse(src, filename=path)
    except SyntaxError as e:
        fail("syntax", "syntax error at line %s: %s" % (e.lineno, e.msg))
    names = {st.name for st in tree.body if isinstance(st, (ast.ClassDef, ast.FunctionDef))}
    if "Model" not in names:
        fail("no_model", "no class Model at the top level; a KernelBench module defines "
             "class Model(nn.Module)")
    for fn in ("get_inputs", "get_init_inputs"):
        if fn not in names:
            fail("no_" + fn, "no function %s at the top level; define def %s(): return [...]"
                 % (fn, fn))
    consts = base_constants(tree)

    try:
        import torch
    except Exception as e:
        fail("no_torch", "this Python (%s) cannot import torch: %s; install it (pip install "
             "torch) or set KEVO_PYTHON to a Python that has it" % (sys.executable, e))
    torch.set_num_threads(max(1, opts["--threads"]))
    DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
              torch.bfloat16: "bf16", torch.int32: "i32", torch.int64: "i64",
              torch.uint8: "u8", torch.bool: "u8"}

    def collect(ns, inputs, model, outs):
        sig_names = []
        try:
            import inspect
            ps = list(inspect.signature(model.forward).parameters.values())
            sig_names = [p.name for p in ps if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            pass
        owners = {}
        for mname, m in model.named_modules():
            for pname, _ in m.named_parameters(recurse=False):
                owners[(mname + "." if mname else "") + pname] = (m, pname)
        ts = []
        for i, x in enumerate(inputs):
            nm = sig_names[i] if i < len(sig_names) else "in%d" % i
            if is_number(x):  # a 0-d tensor stands for it; its value goes in the owner slot
                ts.append(("scalar", nm, torch.tensor(x, device="cpu"), x))
            else:
                ts.append(("input", nm, x, None))
        for n, p in model.named_parameters():
            ts.append(("parameter", n, p, owners.get(n)))
        for n, b in model.named_buffers():
            ts.append(("buffer", n, b, None))
        for i, o in enumerate(outs):
            ts.append(("output", "out" if len(outs) == 1 else "out%d" % i, o, None))
        return ts

    def attempt(values, device):
        ns, inputs, model = run_module(torch, tree, path, values, device)
        held = tensor_bytes([x for x in inputs if not is_number(x)]) + \
            tensor_bytes(list(model.parameters())) + \
            tensor_bytes(list(model.buffers()))
        return ns, inputs, model, held

    # The bench run: the module's own sizes, on the meta device when it can.
    bench, bench_dev, notes = None, "meta", []
    try:
        ns, inputs, model, held = attempt(consts, "meta")
        outs = forward(torch, model, inputs, "meta")
        bench = collect(ns, inputs, model, outs)
    except Refused as e:
        if e.cause != "exception":
            fail(e.cause, e.detail)
        meta_err = e.detail
    except (NotImplementedError, RuntimeError) as e:
        meta_err = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    except Exception as e:
        meta_err = "%s: %s" % (type(e).__name__, e)
    if bench is None:
        # Some operator has no meta kernel (or the module insists on real
        # values): run on the CPU if it fits.
        try:
            ns, inputs, model, held = attempt(consts, "meta")
        except Refused as e:
            if e.cause != "exception":
                fail(e.cause, e.detail)
            held = 0  # it needs real values even to build: the memory cap below guards it
        except Exception:
            held = 0
        cap_memory(opts["--max-bytes"])
        if held > opts["--max-bytes"]:
            fail("too_large", "its inputs and weights need %s at its own sizes, over the %s "
                 "kevo import runs on the CPU (kevo import --max-gib), and its shapes could not be found "
                 "without running it (%s)" % (gib(held), gib(opts["--max-bytes"]), meta_err))
        bench_dev = "cpu"
        notes.append("its own sizes ran on the CPU (no meta kernel: %s)" % meta_err[:200])
        try:
            ns, inputs, model, held = attempt(consts, "cpu")
            outs = forward(torch, model, inputs, "cpu")
        except Refused as e:
            fail(e.cause, e.detail)
        except MemoryError:
            fail("too_large", "ran out of memory at its own sizes on the CPU (kevo import "
                 "--max-gib)")
        except Exception as e:
            if "can't allocate memory" in str(e) or "not enough memory" in str(e):
                fail("too_large", "ran out of memory at its own sizes on the CPU (kevo import "
                     "--max-gib): %s" % str(e)[:200])
            fail("exception", "%s: %s" % (type(e).__name__, e))
        bench = collect(ns, inputs, model, outs)
        out_bytes = tensor_bytes([t for k, _, t, _ in bench if k == "output"])
        if held + out_bytes > opts["--max-bytes"]:
            fail("too_large", "needs %s at its own sizes, over the %s limit (kevo import --max-gib)" %
                 (gib(held + out_bytes), gib(opts["--max-bytes"])))
    runs = [{"kind": "bench", "device": bench_dev, "constants": consts}]
    results = [bench]

    # The check runs: constants scaled down, real values on the CPU. First
    # each constant halved apart, floor by floor; where that leaves fewer than
    # two sizes that build and run (a size one constant must divide: 192
    # channels in 64 groups halve apart to 12 in 8), all halved together,
    # floor by floor. Only sizes that ran are recorded: task check runs the
    # reference at exactly these.
    check_err, tried = None, set()
    for together in (False, True):
        for floor in FLOORS:
            if len(results) == 3:
                break
            values = (scaled_together if together else scaled)(consts, floor)
            key = tuple(sorted(values.items()))
            if key in tried or values == consts:
                continue
            tried.add(key)
            how = "scaled down (floor %d%s)" % (floor, ", together" if together else "")
            try:
                ns, inputs, model, held = attempt(values, "meta")
                # The weights of a network do not scale with its constants:
                # --check-bytes bounds what does (the inputs), --max-bytes all.
                held_in = tensor_bytes([x for x in inputs if not is_number(x)])
                if held_in > opts["--check-bytes"] or held > opts["--max-bytes"]:
                    check_err = "%s it still needs %s" % (how, gib(held))
                    break  # a larger floor needs more
                ns, inputs, model, held = attempt(values, "cpu")
                outs = forward(torch, model, inputs, "cpu")
                r = collect(ns, inputs, model, outs)
            except Refused as e:
                check_err = "%s: %s" % (how, e.detail)
                continue
            except Exception as e:
                check_err = "%s: %s: %s" % (how, type(e).__name__, e)
                continue
            if len(r) != len(bench) or any(a[0] != b[0] or a[1] != b[1] or
                                           a[2].dtype != b[2].dtype or a[2].dim() != b[2].dim()
                                           for a, b in zip(r, bench)):
                check_err = "%s it has other tensors or ranks" % how
                continue
            runs.append({"kind": "check", "device": "cpu", "constants": values})
            results.append(r)
    if len(results) == 1:
        if bench_dev == "meta":
            # No scaling ran: check at its own sizes, which must then fit.
            held = tensor_bytes([t for _, _, t, _ in bench])
            if held > opts["--max-bytes"]:
                fail("too_large", "needs %s at its own sizes, over the %s limit (kevo import --max-gib), "
                     "and it does not run with its size constants scaled down (%s)" %
                     (gib(held), gib(opts["--max-bytes"]), check_err or "no constant to scale"))
            try:
                ns, inputs, model, held = attempt(consts, "cpu")
                outs = forward(torch, model, inputs, "cpu")
            except Refused as e:
                fail(e.cause, e.detail)
            except MemoryError:
                fail("too_large", "ran out of memory at its own sizes on the CPU")
            except Exception as e:
                fail("exception", "%s: %s" % (type(e).__name__, e))
            results.append(collect(ns, inputs, model, outs))
        else:
            results.append(bench)
        runs.append({"kind": "check", "device": "cpu", "constants": consts})
        notes.append("check sizes are its own sizes: %s" %
                     (check_err or "it has no integer size constant to scale down"))

    # Probes on the meta device: every constant a different multiple of its
    # check value, so that equal constants (batch_size = height = 128) are
    # told apart, and a literal 3 in the model is not taken for a constant
    # that is 3 too. One with every constant >= 2 changed, one with only the
    # scaled ones. They are never size sets, only evidence for the shapes.
    def probe_run(values):
        """The probe's tensors, or None when the module does not build or run
        so, or makes other tensors or ranks."""
        try:
            ns, inputs, model, held = attempt(values, "meta")
            outs = forward(torch, model, inputs, "meta")
            r = collect(ns, inputs, model, outs)
        except Exception:
            return None
        if len(r) == len(bench) and all(a[0] == b[0] and a[1] == b[1] and
                                        a[2].dim() == b[2].dim() for a, b in zip(r, bench)):
            return r
        return None

    def add_probe(base, new):
        """A probe with the constants in `new` changed; where that breaks the
        module (GroupNorm(40, 32): its channels must divide by its groups),
        the changes one at a time, keeping each that still runs, so that
        in_features = out_features = 8 are still told apart when
        num_groups = 8 must stay as it is."""
        probe = dict(base, **new)
        r = probe_run(probe)
        if r is None:
            probe = dict(base)
            for name, v in new.items():
                trial = dict(probe, **{name: v})
                t = probe_run(trial)
                if t is not None:
                    probe, r = trial, t
        if r is not None and all(x["constants"] != probe for x in runs):
            runs.append({"kind": "probe", "device": "meta", "constants": probe})
            results.append(r)

    if len(runs) > 1:
        base = runs[1]["constants"]
        for only_scaled in (False, True):
            changed = [name for name, v in base.items()
                       if ((v != consts[name]) if only_scaled else v >= 2)]
            if changed:
                add_probe(base, {name: base[name] * (k + 2) for k, name in enumerate(changed)})
        # Probes at odd sizes: where every size is a power of two (or a
        # multiple of a pooling window), (height - kernel_size + 1) / 4 and
        # (height - in_channels + 4) / 4 give the same numbers, and the
        # import could take the wrong one. Each scaled constant plus 1, 2
        # and 3 makes floors differ.
        grown = [name for name, v in base.items() if v != consts[name]]
        for off in (1, 2, 3) if grown else ():
            add_probe(base, {name: base[name] + off for name in grown})

    tensors = []
    for j, (kind, name, t0_, owner) in enumerate(bench):
        if kind == "scalar":
            vals = [r[j][3] for r in results]
            if any(v != owner for v in vals):
                fail("not_tensor", "get_inputs()'s number %s is %s at the module's sizes and %s "
                     "when its size constants are scaled: kevo passes a number as a fixed scalar "
                     "param; return a tensor, or a number that does not depend on the sizes"
                     % (name, owner, [v for v in vals if v != owner][0]))
            tensors.append({"kind": "scalar", "name": name, "dtype": scalar_dtype(owner),
                            "torch_dtype": type(owner).__name__,
                            "shapes": [[] for _ in results], "value": owner})
            continue
        dt = DTYPES.get(t0_.dtype)
        if dt is None:
            fail("dtype", "%s %s has dtype %s, which kevo does not support (f32 f64 f16 bf16 "
                 "i32 i64 u8 bool)" % (kind, name, str(t0_.dtype).replace("torch.", "")))
        entry = {"kind": kind, "name": name, "dtype": dt,
                 "torch_dtype": str(t0_.dtype).replace("torch.", ""),
                 "shapes": [list(r[j][2].shape) for r in results]}
        if kind != "output":
            layer, fan_in = None, None
            if owner is not None:
                m, pname = owner
                layer = type(m).__name__
                w = getattr(m, "weight", None)
                default_kaiming = isinstance(m, (torch.nn.Linear, torch.nn.Bilinear,
                                                 torch.nn.modules.conv._ConvNd))
                if default_kaiming and isinstance(w, torch.Tensor) and w.dim() >= 2 and \
                        pname in ("weight", "bias"):
                    fi, _ = torch.nn.init._calculate_fan_in_and_fan_out(w)
                    fan_in = fi if fi > 0 else None
            # Values from the real runs only; integers take the range valid in all.
            sts = [stats(torch, r[j][2]) for r in results[1:] if r[j][2].device.type != "meta"]
            sts = [s for s in sts if s is not None]
            st = sts[-1] if sts else None  # the largest run: the most samples
            if st and st["int"]:
                st = {"int": True, "min": max(s["min"] for s in sts),
                      "max": min(s["max"] for s in sts)}
                if st["min"] > st["max"]:
                    st = sts[0]
            init, how = infer_init(st, layer, fan_in)
            if t0_.dtype == torch.bool and init:
                init = {"dist": "int", "lo": 0, "hi": 1}
            entry["init"] = init
            entry["init_note"] = how
            if layer:
                entry["layer"] = layer
        tensors.append(entry)
    consts_out = [{"name": k, "values": [r["constants"].get(k, v) for r in runs]}
                  for k, v in consts.items()]
    emit({"ok": True, "torch": torch.__version__, "runs": [r["kind"] for r in runs],
          "bench_device": bench_dev, "constants": consts_out, "tensors": tensors,
          "notes": notes, "seconds": round(time.time() - t0, 3)})


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except BaseException as e:  # anything unexpected is still one JSON line
        if _out is None:
            _out = sys.stdout
        fail("exception", "the import helper failed: %s: %s" % (type(e).__name__, e))
