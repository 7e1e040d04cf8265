#!/usr/bin/env python3
"""kevo task starter's helper: a minimal correct candidate of an imported
task, written from its reference.py.

    kevo_starter.py TASK_DIR --surface cpu|cuda

prints one line on stdout:

    KEVO_STARTER_JSON {"ok": true, "source": "...", "ops": [...], "what": "..."}
    KEVO_STARTER_JSON {"ok": false, "cause": "...", "detail": "..."}

How: Model is traced with torch.fx at every size set of task.json (the
bench size on torch's meta device, the check sizes on the CPU), each
operator of the graph becomes a call into a small runtime of plain loops
(kevo_starter_rt.h, pasted into the source), and every integer the graph
holds (a view's sizes, a pooling window) is written as the size param that
takes the same values in every set, or as the literal where it never
changes. Float32 only. The cpu surface's starter computes in the entry; the
cuda surface's copies the inputs to the host, computes there and copies the
outputs back (correct and slow: a real kernel replaces it). A module the
tracer cannot follow (control flow on values), an operator the runtime
lacks, or a dtype other than float32 is refused, naming it.
"""
import ast
import json
import os
import sys
import traceback

MARK = "KEVO_STARTER_JSON "
HERE = os.path.dirname(os.path.abspath(__file__))
torch = None
kimp = None


class Unsupported(Exception):
    pass


CTYPE = {"f32": "float", "f64": "double", "i32": "int32_t", "i64": "int64_t", "u8": "uint8_t",
         "f16": None, "bf16": None}

UNARY = {
    "relu": "KU_RELU", "sigmoid": "KU_SIGMOID", "tanh": "KU_TANH", "exp": "KU_EXP",
    "log": "KU_LOG", "log2": "KU_LOG2", "sqrt": "KU_SQRT", "rsqrt": "KU_RSQRT", "abs": "KU_ABS",
    "neg": "KU_NEG", "negative": "KU_NEG", "silu": "KU_SILU", "softsign": "KU_SOFTSIGN",
    "selu": "KU_SELU", "hardsigmoid": "KU_HARDSIGMOID", "hardswish": "KU_HARDSWISH",
    "erf": "KU_ERF", "sin": "KU_SIN", "cos": "KU_COS", "reciprocal": "KU_RECIP",
    "floor": "KU_FLOOR", "ceil": "KU_CEIL", "round": "KU_ROUND", "sign": "KU_SIGN",
    "log1p": "KU_LOG1P", "expm1": "KU_EXPM1", "logsigmoid": "KU_LOGSIGMOID",
    "tanhshrink": "KU_TANHSHRINK", "square": "KU_SQUARE", "relu6": None,
}
BINARY = {
    "add": "KB_ADD", "sub": "KB_SUB", "subtract": "KB_SUB", "mul": "KB_MUL",
    "multiply": "KB_MUL", "div": "KB_DIV", "true_divide": "KB_DIV", "truediv": "KB_DIV",
    "maximum": "KB_MAX", "minimum": "KB_MIN", "pow": "KB_POW", "gt": "KB_GT", "lt": "KB_LT",
    "ge": "KB_GE", "le": "KB_LE", "eq": "KB_EQ", "ne": "KB_NE", "floordiv": "KB_FDIV",
    "remainder": "KB_REM", "fmod": None, "mod": "KB_REM",
}
REDUCE = {"sum": "KR_SUM", "mean": "KR_MEAN", "amax": "KR_MAX", "amin": "KR_MIN",
          "prod": "KR_PROD", "argmax": "KR_ARGMAX", "argmin": "KR_ARGMIN", "var": "KR_VAR",
          "std": "KR_STD", "logsumexp": "KR_LOGSUMEXP", "any": "KR_ANY", "all": "KR_ALL"}


def name_of(target):
    """An fx call target as one lower-case name (F.relu, torch.relu, 'relu',
    operator.add, Tensor.relu_ all give 'relu'/'add')."""
    n = target if isinstance(target, str) else getattr(target, "__name__", str(target))
    n = n.strip("_")
    if n.endswith("_") and n not in ("__getitem__",):
        n = n.rstrip("_")
    return n


class Trace:
    """Model traced at one size set: its graph, its modules, the size values."""

    def __init__(self, tree, consts, sizes, meta):
        values = dict(consts)
        values.update(sizes)
        import types
        mod = types.ModuleType("kevo_reference")
        exec(compile(kimp.with_constants(tree, values), "reference.py", "exec"), mod.__dict__)
        torch.manual_seed(0)
        if meta:
            with torch.device("meta"):
                model = mod.__dict__["Model"](*mod.__dict__["get_init_inputs"]())
        else:
            model = mod.__dict__["Model"](*mod.__dict__["get_init_inputs"]())
        self.model = model
        self.mod = mod
        self.sizes = sizes
        try:
            self.gm = torch.fx.symbolic_trace(model)
        except Exception as e:
            raise Unsupported("torch.fx cannot trace Model.forward (%s: %s); a starter is "
                              "written from the traced graph" % (type(e).__name__,
                                                                 str(e).split("\n")[0][:200]))
        self.nodes = list(self.gm.graph.nodes)


def run_types(tr, task):
    """Each node's value at a check size (real CPU tensors): what it is."""
    vals = {}
    shapes = {p["name"]: shape_of(p, tr.sizes) for p in task["params"]}
    args = []
    for p in forward_params(task):
        if p["role"] == "scalar":
            args.append(p.get("value", 1.0))
        elif p["dtype"] in ("i64", "i32", "u8"):
            hi = int(p.get("init", {}).get("hi", 2)) if isinstance(p.get("init"), dict) else 2
            dt = {"i64": torch.int64, "i32": torch.int32, "u8": torch.bool}[p["dtype"]]
            args.append(torch.randint(0, max(hi, 1) + 1, shapes[p["name"]]).to(dt))
        else:
            args.append(torch.rand(shapes[p["name"]]))

    class Rec(torch.fx.Interpreter):
        def run_node(self, n):
            v = super().run_node(n)
            vals[n.name] = v
            return v

    with torch.no_grad():
        Rec(tr.gm).run(*args)
    return vals


def py_expr(e, sizes):
    return int(eval(str(e).replace("/", "//"), {"__builtins__": {}}, dict(sizes)))


def shape_of(p, sizes):
    return [py_expr(e, sizes) for e in p.get("shape", [])]


def forward_params(task):
    """forward's arguments: the inputs before the weights, and the scalars."""
    packed = {m["name"] for p in task["params"] for m in p.get("pack", [])}
    weights = set(weight_names(task)) | {p["name"] for p in task["params"] if p.get("pack")}
    out = []
    for p in task["params"]:
        if p["role"] == "scalar" or (p["role"] == "in" and p["name"] not in weights):
            out.append(p)
    del packed
    return out


def weight_names(task):
    return [p["name"] for p in task["params"] if p.get("_weight")]


class Gen:
    def __init__(self, task, traces, types_, surface):
        self.task = task
        self.tr = traces
        self.types = types_
        self.surface = surface
        self.lines = []
        self.n = 0
        self.ops = []
        self.sizes = [p for p in task["params"] if p["role"] == "size"]
        self.weights = {}  # qualified name -> C expression of a kt

    # ---- integers: a literal, or the size param that takes its values ----
    def num(self, vals):
        v0 = vals[0]
        if isinstance(v0, bool):
            return "1" if v0 else "0"
        if isinstance(v0, float) or any(isinstance(v, float) for v in vals):
            if all(v == v0 for v in vals):
                return repr(float(v0)) if v0 == v0 and abs(v0) != float("inf") else (
                    "NAN" if v0 != v0 else ("INFINITY" if v0 > 0 else "-INFINITY"))
            raise Unsupported("a float that changes with the sizes (%s)" % vals)
        if all(v == v0 for v in vals):
            return str(v0)
        for p in self.sizes:
            if all(t.sizes.get(p["name"]) == v for t, v in zip(self.tr, vals)):
                return p["name"]
        for p in self.sizes:
            for q in self.sizes:
                if all(t.sizes.get(p["name"]) * t.sizes.get(q["name"]) == v
                       for t, v in zip(self.tr, vals)):
                    return "%s*%s" % (p["name"], q["name"])
        raise Unsupported("an integer of the graph (%s at the size sets) is no size param" %
                          ", ".join(map(str, vals)))

    def tmp(self, ctype, expr):
        self.n += 1
        name = "t%d" % self.n
        self.lines.append("  %s %s = %s;" % (ctype, name, expr))
        return name

    def longs(self, valss):
        """A C array of longs from parallel lists: its name and length."""
        k = len(valss[0])
        if any(len(v) != k for v in valss):
            raise Unsupported("a list whose length changes with the sizes")
        if k == 0:
            return "NULL", 0
        items = [self.num([v[i] for v in valss]) for i in range(k)]
        self.n += 1
        nm = "a%d" % self.n
        self.lines.append("  long %s[%d] = {%s};" % (nm, k, ", ".join(items)))
        return nm, k

    # ---- values ----
    def val(self, alts):
        """C expression of an fx argument (parallel across the traces)."""
        a = alts[0]
        if isinstance(a, torch.fx.Node):
            return self.var[a.name]
        if isinstance(a, (int, float, bool)):
            return self.num(alts)
        if a is None:
            return "0"
        raise Unsupported("an argument of type %s" % type(a).__name__)

    def is_tensor(self, a):
        return isinstance(a, torch.fx.Node) and torch.is_tensor(self.types.get(a.name))

    def tensor(self, alts):
        """A kt from an argument: a tensor node, or a number made a 0-d tensor."""
        if self.is_tensor(alts[0]):
            return self.var[alts[0].name]
        return "kt_scalar(%s)" % self.val(alts)

    def generate(self):
        self.var = {}
        g0 = self.tr[0].nodes
        for t in self.tr[1:]:
            if len(t.nodes) != len(g0) or any(
                    (a.op, str(a.target)) != (b.op, str(b.target)) for a, b in zip(g0, t.nodes)):
                raise Unsupported("Model.forward traces to different graphs at different sizes "
                                  "(a loop or branch on the sizes)")
        fin = forward_params(self.task)
        k = 0
        for i, node in enumerate(g0):
            alts = [t.nodes[i] for t in self.tr]
            if node.op == "placeholder":
                p = fin[k]
                k += 1
                if p["role"] == "scalar":
                    self.var[node.name] = "(double)%s" % p["name"]
                else:
                    self.var[node.name] = self.wrap(p["name"], p["shape"], p["dtype"])
            elif node.op == "get_attr":
                self.var[node.name] = self.attr(node.target, alts)
            elif node.op == "output":
                self.output(node)
            else:
                self.node(node, alts)

    def wrap(self, ptr, shape, dtype):
        cast = {"u8": "uint8_t", "i32": "int32_t", "i64": "int64_t"}.get(dtype)
        if dtype != "f32" and not cast:
            raise Unsupported("a %s tensor (%s): the starter's runtime is float32 only" %
                              (dtype, ptr))
        self.n += 1
        s = "s%d" % self.n
        if shape:
            self.lines.append("  long %s[%d] = {%s};" % (s, len(shape), ", ".join(
                "(long)(%s)" % e for e in shape)))
        fn = "kt_wrap_" + cast if cast else "kt_wrap"
        return self.tmp("kt", "%s(%s, %d, %s)" % (fn, ptr, len(shape), s if shape else "NULL"))

    def attr(self, qual, alts):
        if qual in self.weights:
            return self.weights[qual]
        # a constant tensor of forward (torch.tensor(...) in it): its values, where they are
        # the same at every size set and few
        vals = []
        for t in self.tr:
            v = t.gm
            for part in qual.split("."):
                v = getattr(v, part, None)
            vals.append(v)
        v0 = vals[0]
        if (torch.is_tensor(v0) and v0.device.type == "cpu" and v0.numel() <= 4096 and
                all(torch.is_tensor(v) and v.shape == v0.shape and
                    (v.device.type == "meta" or torch.equal(v, v0)) for v in vals)):
            flat = [repr(float(e)) for e in v0.detach().double().flatten().tolist()]
            self.n += 1
            c = "k%d" % self.n
            self.lines.append("  static const float %s[%d] = {%s};" % (c, max(len(flat), 1),
                                                                      ", ".join(flat) or "0"))
            shape = [str(d) for d in v0.shape]
            return self.wrap(c, shape, "f32")
        raise Unsupported("Model.%s is a tensor that is neither a parameter nor a buffer" % qual)

    def weight(self, qual):
        w = self.weights.get(qual)
        if w is None:
            raise Unsupported("Model.%s: not among task.json's params" % qual)
        return w

    def has_weight(self, qual):
        return qual in self.weights

    # ---- the graph's nodes ----
    def node(self, node, alts):
        res = self.types.get(node.name)
        if node.op == "call_module":
            m = self.tr[0].gm.get_submodule(node.target)
            ms = [t.gm.get_submodule(node.target) for t in self.tr]
            kind = type(m).__name__
            self.ops.append(kind)
            expr = self.module(node, kind, m, ms, alts)
        else:
            nm = name_of(node.target)
            self.ops.append(nm)
            expr = self.function(node, nm, alts, res)
        if expr is None:
            return
        if torch.is_tensor(res):
            self.var[node.name] = self.tmp("kt", expr)
        elif isinstance(res, (tuple, list)) and all(torch.is_tensor(r) for r in res):
            self.var[node.name] = expr  # already a kt array name
        elif isinstance(res, (int, bool)) or isinstance(res, float):
            self.var[node.name] = self.tmp("double" if isinstance(res, float) else "long", expr)
        elif isinstance(res, (tuple, list, torch.Size)):
            self.var[node.name] = expr  # a long array name
        else:
            raise Unsupported("%s returns %s" % (node.target, type(res).__name__))

    def args(self, alts, i, key, default=None):
        """Argument i (or keyword key) of the parallel nodes."""
        out = []
        for n in alts:
            if i is not None and len(n.args) > i:
                out.append(n.args[i])
            elif key in n.kwargs:
                out.append(n.kwargs[key])
            else:
                out.append(default)
        return out

    def dims(self, valss, nd):
        """A dim or a list of dims as a bit mask over nd dims."""
        v = valss[0]
        if v is None:
            return "0"
        vs = v if isinstance(v, (list, tuple)) else [v]
        for other in valss:
            o = other if isinstance(other, (list, tuple)) else [other]
            if list(o) != list(vs):
                raise Unsupported("a reduction's dims change with the sizes")
        mask = 0
        for d in vs:
            mask |= 1 << (d + nd if d < 0 else d)
        return "%dL" % mask

    def output(self, node):
        outs = [p for p in self.task["params"] if p["role"] in ("out", "inout")]
        res = node.args[0]
        items = list(res) if isinstance(res, (tuple, list)) else [res]
        if len(items) != len(outs):
            raise Unsupported("forward returns %d values, the task has %d outputs" %
                              (len(items), len(outs)))
        for it, p in zip(items, outs):
            if p["dtype"] not in ("f32", "i64", "i32"):
                raise Unsupported("a %s output (%s)" % (p["dtype"], p["name"]))
            n = " * ".join("(long)(%s)" % e for e in p["shape"]) or "1"
            src = self.var[it.name] if not isinstance(it, (int, float)) else "kt_scalar(%r)" % it
            dst = p["name"] if self.surface == "cpu" else "h_" + p["name"]
            if p["dtype"] == "f32":
                self.lines.append("  kt_store(%s, %s, %s);" % (src, dst, n))
            else:
                ct = CTYPE[p["dtype"]]
                self.lines.append("  { kt o = %s; long n = %s; if (kt_numel(&o) != n) "
                                  "kt_fail(\"the output has another element count\"); "
                                  "for (long i = 0; i < n; i++) %s[i] = (%s)o.d[i]; }"
                                  % (src, n, dst, ct))

    # ---- operators ----
    def win(self, ms, sp, fields, defaults):
        """kt_win of a module (or of function arguments): per field a list
        of parallel values, each an int or a tuple of sp ints."""
        rows = []
        for f, d in zip(("k", "st", "pad", "dil", "opad"), defaults):
            vals = fields.get(f)
            if vals is None:
                rows.append(["1" if d == 1 else "0"] * 3)
                continue
            per = []
            for v in vals:
                if v is None:
                    v = fields["k"][0] if f == "st" else d
                if isinstance(v, str):
                    if v == "valid":
                        v = 0
                    else:
                        raise Unsupported("padding='%s'" % v)
                t = list(v) if isinstance(v, (list, tuple)) else [v] * sp
                if len(t) != sp:
                    raise Unsupported("a window of %d dims for %d spatial dims" % (len(t), sp))
                per.append(t)
            row = ["1" if d == 1 else "0"] * (3 - sp)
            row += [self.num([q[i] for q in per]) for i in range(sp)]
            rows.append(row)
        self.n += 1
        nm = "w%d" % self.n
        self.lines.append("  kt_win %s = {%s};" % (nm, ", ".join(
            "{%s}" % ", ".join(r) for r in rows)))
        return nm

    def mweight(self, qual):
        if self.has_weight(qual):
            return self.weight(qual), "1"
        return "kt_scalar(0)", "0"

    def module(self, node, kind, m, ms, alts):
        x = self.tensor(self.args(alts, 0, "input"))
        nn = torch.nn
        q = node.target
        def attr(a):
            return [getattr(mm, a) for mm in ms]
        if kind in ACT:
            return self.act(kind.lower(), x, lambda a, d: attr(a)[0] if hasattr(m, a) else d, ms)
        if isinstance(m, nn.Linear):
            b, hb = self.mweight(q + ".bias")
            return "kt_linear(%s, %s, %s, %s)" % (x, self.weight(q + ".weight"), b, hb)
        if isinstance(m, (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d,
                          nn.ConvTranspose2d, nn.ConvTranspose3d)):
            if m.padding_mode != "zeros":
                raise Unsupported("%s with padding_mode=%s" % (kind, m.padding_mode))
            sp = len(m.kernel_size)
            tr = "Transpose" in kind
            w = self.win(ms, sp, {"k": attr("kernel_size"), "st": attr("stride"),
                                  "pad": attr("padding"), "dil": attr("dilation"),
                                  "opad": attr("output_padding") if tr else None},
                         (1, 1, 0, 1, 0))
            b, hb = self.mweight(q + ".bias")
            return "kt_conv%s(%s, %s, %s, %s, %d, %s, %s)" % (
                "_t" if tr else "", x, self.weight(q + ".weight"), b, hb, sp, w,
                self.num(attr("groups")))
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            rm, hr = self.mweight(q + ".running_mean")
            rv, _ = self.mweight(q + ".running_var")
            w, hw = self.mweight(q + ".weight")
            b, _ = self.mweight(q + ".bias")
            return "kt_batch_norm(%s, %s, %s, %s, %s, %s, %s, %d, %s)" % (
                x, rm, rv, w, b, hr, hw, 1 if m.training else 0, self.num(attr("eps")))
        if isinstance(m, nn.modules.instancenorm._InstanceNorm):
            if m.track_running_stats and not m.training:
                raise Unsupported("%s with running statistics in eval mode" % kind)
            w, hw = self.mweight(q + ".weight")
            b, _ = self.mweight(q + ".bias")
            return "kt_group_norm(%s, %s.s[1], %s, %s, %s, %s)" % (
                x, x, w, b, hw, self.num(attr("eps")))
        if isinstance(m, nn.LayerNorm):
            w, hw = self.mweight(q + ".weight")
            b, hb = self.mweight(q + ".bias")
            return "kt_layer_norm(%s, %d, %s, %s, %s, %s, %s)" % (
                x, len(m.normalized_shape), w, b, hw, hb, self.num(attr("eps")))
        if isinstance(m, nn.GroupNorm):
            w, hw = self.mweight(q + ".weight")
            b, _ = self.mweight(q + ".bias")
            return "kt_group_norm(%s, %s, %s, %s, %s, %s)" % (
                x, self.num(attr("num_groups")), w, b, hw, self.num(attr("eps")))
        if isinstance(m, (nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d, nn.AvgPool1d,
                          nn.AvgPool2d, nn.AvgPool3d)):
            sp = int(kind[-2])
            avg = kind.startswith("Avg")
            if getattr(m, "return_indices", False):
                raise Unsupported("%s with return_indices" % kind)
            w = self.win(ms, sp, {"k": attr("kernel_size"), "st": attr("stride"),
                                  "pad": attr("padding"),
                                  "dil": None if avg else attr("dilation")}, (1, 1, 0, 1, 0))
            mode = 0 if not avg else (1 if m.count_include_pad else 2)
            div = getattr(m, "divisor_override", None)
            return "kt_pool(%s, %d, %s, %d, %s, %s)" % (
                x, sp, w, mode, self.num(attr("ceil_mode")),
                self.num(attr("divisor_override")) if div else "0")
        if isinstance(m, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d,
                          nn.AdaptiveMaxPool1d, nn.AdaptiveMaxPool2d, nn.AdaptiveMaxPool3d)):
            sp = int(kind[-2])
            if getattr(m, "return_indices", False):
                raise Unsupported("%s with return_indices" % kind)
            vals = []
            for v in attr("output_size"):
                t = list(v) if isinstance(v, (list, tuple)) else [v] * sp
                vals.append([-1 if e is None else e for e in t])
            a, _ = self.longs(vals)
            return "kt_adaptive_pool(%s, %d, %s, %d)" % (x, sp, a, 1 if "Avg" in kind else 0)
        if isinstance(m, nn.Flatten):
            return "kt_flatten(%s, %s, %s)" % (x, self.num(attr("start_dim")),
                                                self.num(attr("end_dim")))
        if isinstance(m, (nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d,
                          nn.AlphaDropout)):
            if m.training and m.p > 0:
                raise Unsupported("%s in training mode (random)" % kind)
            return x
        if isinstance(m, nn.Identity):
            return x
        if isinstance(m, nn.TripletMarginLoss):
            if m.p != 2 or m.swap or m.reduction not in ("mean", "sum"):
                raise Unsupported("TripletMarginLoss with p=%s swap=%s reduction=%s"
                                  % (m.p, m.swap, m.reduction))
            pos, neg = self.tensor(self.args(alts, 1, "positive")), \
                self.tensor(self.args(alts, 2, "negative"))
            eps = self.num(attr("eps"))
            d = []
            for other in (pos, neg):
                diff = self.tmp("kt", "kt_binary_s(kt_binary(%s, %s, KB_SUB), %s, KB_ADD, 0)"
                                % (x, other, eps))
                d.append(self.tmp("kt", "kt_reduce(%s, 1L << (%s.nd - 1), 0, KR_NORM2, 0)"
                                  % (diff, diff)))
            h = self.tmp("kt", "kt_unary(kt_binary_s(kt_binary(%s, %s, KB_SUB), %s, KB_ADD, 0), "
                               "KU_RELU, 0, 0)" % (d[0], d[1], self.num(attr("margin"))))
            return "kt_reduce(%s, 0, 0, %s, 0)" % (h, "KR_SUM" if m.reduction == "sum"
                                                     else "KR_MEAN")
        if isinstance(m, (nn.Softmax, nn.LogSoftmax)):
            return "kt_softmax(%s, %s, %d)" % (x, self.num(attr("dim")), kind == "LogSoftmax")
        raise Unsupported("the layer nn.%s" % kind)

    def act(self, nm, x, get, ms=None):
        """An activation (module or function): a unary op of the runtime."""
        def n(v):
            return self.num([v])
        if nm in ("relu6",):
            return "kt_unary(%s, KU_CLAMP, 0, 6)" % x
        if nm == "hardtanh":
            return "kt_unary(%s, KU_CLAMP, %s, %s)" % (x, n(get("min_val", -1.0)),
                                                        n(get("max_val", 1.0)))
        if nm in ("leakyrelu", "leaky_relu"):
            return "kt_unary(%s, KU_LEAKY, %s, 0)" % (x, n(get("negative_slope", 0.01)))
        if nm == "elu":
            return "kt_unary(%s, KU_ELU, %s, 0)" % (x, n(get("alpha", 1.0)))
        if nm == "celu":
            raise Unsupported("celu")
        if nm == "softplus":
            return "kt_unary(%s, KU_SOFTPLUS, %s, %s)" % (x, n(get("beta", 1.0)),
                                                          n(get("threshold", 20.0)))
        if nm == "mish":
            return "kt_unary(%s, KU_MISH, 1, 20)" % x
        if nm == "gelu":
            appr = get("approximate", "none")
            return "kt_unary(%s, %s, 0, 0)" % (x, "KU_GELU_TANH" if appr == "tanh" else "KU_GELU")
        if nm == "softmax" or nm == "logsoftmax":
            return "kt_softmax(%s, %s, %d)" % (x, n(get("dim", -1)), nm == "logsoftmax")
        op = UNARY.get(nm)
        if not op:
            raise Unsupported("the activation %s" % nm)
        return "kt_unary(%s, %s, 0, 0)" % (x, op)

    def function(self, node, nm, alts, res):
        t0 = self.tr[0]
        del t0
        a = lambda i, key=None, d=None: self.args(alts, i, key, d)  # noqa: E731
        first = node.args[0] if node.args else None
        if nm in ("getattr",):
            what = node.args[1]
            x = self.var[first.name]
            if what == "shape":
                return self.shape_array(x, len(self.types[first.name].shape))
            if what in ("dtype", "device"):
                self.var[node.name] = "0"
                return None
            if what == "T":
                nd = len(self.types[first.name].shape)
                arr, _ = self.longs([list(range(nd))[::-1]])
                return "kt_permute(%s, %s)" % (x, arr) if nd else x
            if what == "mT":
                return "kt_transpose(%s, -2, -1)" % x
            if what == "ndim":
                return "%s.nd" % x
            if what in ("values", "indices") and isinstance(self.types[first.name], tuple):
                return "%s[%d]" % (x, what == "indices")
            raise Unsupported("the attribute .%s" % what)
        if nm == "getitem":
            src = self.types.get(first.name) if hasattr(first, "name") else None
            idx = node.args[1]
            if torch.is_tensor(src):
                return self.index(first, alts, src.dim())
            if not isinstance(idx, int):
                raise Unsupported("indexing with %r" % (idx,))
            base = self.var[first.name]
            k = idx if idx >= 0 else idx + len(src)
            if isinstance(src, (tuple, list)) and all(torch.is_tensor(r) for r in src):
                return "%s[%d]" % (base, k)
            return "%s[%d]" % (base, k)
        if nm == "size":
            x = self.var[first.name]
            d = a(1, "dim")
            if d[0] is None:
                return self.shape_array(x, len(self.types[first.name].shape))
            return "%s.s[kt_dim(%s, %s.nd)]" % (x, self.num(d), x)
        if nm == "dim":
            return "%s.nd" % self.var[first.name]
        if nm == "numel":
            return "kt_numel(&%s)" % self.var[first.name]
        if nm in ("contiguous", "detach", "clone", "float", "to", "cpu", "cuda", "type_as"):
            if torch.is_tensor(res) and res.dtype != torch.float32:
                raise Unsupported("a conversion to %s" % res.dtype)
            return ("kt_copy(%s)" if nm == "clone" else "%s") % self.var[first.name]
        if nm in ("view", "reshape", "expand_as", "view_as", "reshape_as"):
            x = self.var[first.name]
            if nm in ("view_as", "reshape_as"):
                other = self.var[node.args[1].name]
                return "kt_view(%s, %s.nd, %s.s)" % (x, other, other)
            if nm == "expand_as":
                raise Unsupported("expand_as")
            return self.view(x, alts, 1)
        if nm == "flatten":
            x = self.var[first.name]
            return "kt_flatten(%s, %s, %s)" % (x, self.num(a(1, "start_dim", 0)),
                                                self.num(a(2, "end_dim", -1)))
        if nm == "unsqueeze":
            return "kt_unsqueeze(%s, %s)" % (self.var[first.name], self.num(a(1, "dim")))
        if nm == "squeeze":
            d = a(1, "dim")
            if isinstance(d[0], (list, tuple)):
                raise Unsupported("squeeze over several dims")
            return "kt_squeeze(%s, %s)" % (self.var[first.name],
                                           "KT_ALL" if d[0] is None else self.num(d))
        if nm == "permute":
            x = self.var[first.name]
            dims = node.args[1:] if len(node.args) > 2 or isinstance(node.args[1], int) \
                else node.args[1]
            arr, _ = self.longs([list(dims)])
            return "kt_permute(%s, %s)" % (x, arr)
        if nm in ("transpose", "swapaxes"):
            return "kt_transpose(%s, %s, %s)" % (self.var[first.name], self.num(a(1, "dim0")),
                                                 self.num(a(2, "dim1")))
        if nm == "t":
            return "kt_transpose(%s, 0, 1)" % self.var[first.name]
        if nm in ("cat", "concat", "concatenate", "stack"):
            items = first
            d = a(1, "dim", 0)
            names = [self.var[i.name] for i in items]
            if nm == "stack":
                names = ["kt_unsqueeze(%s, %s)" % (v, self.num(d)) for v in names]
            self.n += 1
            arr = "c%d" % self.n
            self.lines.append("  kt %s[%d] = {%s};" % (arr, len(names), ", ".join(names)))
            return "kt_cat(%s, %d, %s)" % (arr, len(names), self.num(d))
        if nm in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                  "conv_transpose3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d",
                  "avg_pool2d", "avg_pool3d"):
            return self.fconv(node, nm, alts)
        if nm in ("adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
                  "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d"):
            sp = int(nm[-2])
            vals = []
            for v in a(1, "output_size"):
                t = list(v) if isinstance(v, (list, tuple)) else [v] * sp
                vals.append([-1 if e is None else e for e in t])
            arr, _ = self.longs(vals)
            return "kt_adaptive_pool(%s, %d, %s, %d)" % (self.var[first.name], sp, arr,
                                                         1 if "avg" in nm else 0)
        if nm in ("narrow", "select"):
            x = self.var[first.name]
            nd = len(self.types[first.name].shape)
            d = a(1, "dim")
            if not isinstance(d[0], int):
                raise Unsupported("%s along a computed dim" % nm)
            dd = d[0] + nd if d[0] < 0 else d[0]
            st = a(2, "start" if nm == "narrow" else "index")
            cs = "(long)%s" % self.var[st[0].name] if hasattr(st[0], "name") else self.num(st)
            rows = {"kind": ["1"] * nd, "a": ["0"] * nd, "b": ["KT_END"] * nd, "st": ["1"] * nd}
            rows["a"][dd] = cs
            if nm == "select":
                rows["kind"][dd] = "0"
            else:
                ln = a(3, "length")
                cl = "(long)%s" % self.var[ln[0].name] if hasattr(ln[0], "name") else self.num(ln)
                rows["b"][dd] = "%s + %s" % (cs, cl)
            names = []
            for key in ("kind", "a", "b", "st"):
                self.n += 1
                names.append("i%d" % self.n)
                self.lines.append("  long %s[%d] = {%s};" % (names[-1], nd, ", ".join(rows[key])))
            return "kt_index(%s, %d, %s)" % (x, nd, ", ".join(names))
        if nm == "tensor" and isinstance(first, (int, float, bool)):
            return "kt_scalar(%s)" % self.num(a(0, "data"))
        if nm in ("zeros_like", "ones_like"):
            x = self.var[first.name]
            return "kt_binary_s(kt_zeros(%s.nd, %s.s), %d, KB_ADD, 0)" % (x, x, nm == "ones_like")
        if nm == "cross_entropy":
            if len(self.types[first.name].shape) != 2 or any(
                    node.kwargs.get(k) not in (None, d) for k, d in
                    (("weight", None), ("reduction", "mean"), ("label_smoothing", 0.0))):
                raise Unsupported("cross_entropy other than mean over (N, C) logits")
            return "kt_cross_entropy(%s, %s)" % (self.var[first.name],
                                                 self.var[node.args[1].name])
        if nm == "scaled_dot_product_attention":
            if any(node.kwargs.get(k) not in (None, False, 0.0) for k in
                   ("attn_mask", "dropout_p", "is_causal", "scale")) or len(node.args) > 3:
                raise Unsupported("scaled_dot_product_attention with a mask, dropout, "
                                  "causality or a scale")
            q, k, v = (self.var[node.args[i].name] for i in range(3))
            sc = self.tmp("kt", "kt_matmul(%s, kt_transpose(%s, -2, -1))" % (q, k))
            sc = self.tmp("kt", "kt_binary_s(%s, 1.0 / sqrt((double)%s.s[%s.nd - 1]), KB_MUL, 0)"
                          % (sc, q, q))
            return "kt_matmul(kt_softmax(%s, -1, 0), %s)" % (sc, v)
        if nm in ("smooth_l1_loss", "huber_loss", "mse_loss", "l1_loss", "kl_div"):
            return self.loss(node, nm, a)
        if nm in ("triu", "tril"):
            return "kt_tri(%s, %s, %d)" % (self.var[first.name], self.num(a(1, "diagonal", 0)),
                                          nm == "triu")
        if nm == "diag":
            if a(1, "diagonal", 0)[0]:
                raise Unsupported("diag with an offset")
            return "kt_diag(%s)" % self.var[first.name]
        if nm in ("matmul", "mm", "bmm"):
            return "kt_matmul(%s, %s)" % (self.var[first.name], self.var[node.args[1].name])
        if nm == "linear":
            b = a(2, "bias")
            return "kt_linear(%s, %s, %s, %d)" % (
                self.var[first.name], self.var[node.args[1].name],
                self.var[b[0].name] if b[0] is not None else "kt_scalar(0)", b[0] is not None)
        if nm in ("softmax", "log_softmax"):
            return "kt_softmax(%s, %s, %d)" % (self.var[first.name], self.num(a(1, "dim")),
                                               nm == "log_softmax")
        if nm in ("cumsum", "cumprod"):
            return "kt_cum(%s, %s, %d)" % (self.var[first.name], self.num(a(1, "dim")),
                                           nm == "cumprod")
        if nm == "flip":
            dims = a(1, "dims")[0]
            dims = [dims] if isinstance(dims, int) else list(node.args[1:]) \
                if len(node.args) > 2 else dims
            x = self.var[first.name]
            for d in dims:
                x = self.tmp("kt", "kt_flip(%s, %s)" % (x, self.num([d])))
            return x
        if nm in ("max", "min") and len(node.args) >= 2 and hasattr(node.args[1], "name") \
                and self.is_tensor(node.args[1]):
            nm = "maximum" if nm == "max" else "minimum"
        if nm in ("max", "min"):
            x = self.var[first.name]
            d = a(1, "dim")
            keep = self.num(a(2, "keepdim", False))
            op = "KR_MAX" if nm == "max" else "KR_MIN"
            if d[0] is None:
                return "kt_reduce(%s, 0, 0, %s, 0)" % (x, op)
            dd = self.num(d)
            self.n += 1
            arr = "c%d" % self.n
            self.lines.append("  kt %s[2] = {kt_reduce1(%s, %s, %s, %s, 0), "
                              "kt_reduce1(%s, %s, %s, KR_ARG%s, 0)};"
                              % (arr, x, dd, keep, op, x, dd, keep, nm.upper()))
            return arr
        if nm in REDUCE or nm == "norm":
            x = self.var[first.name]
            nd = len(self.types[first.name].shape)
            d = a(1, "dim")
            keep = self.num(a(2, "keepdim", False))
            corr = "0"
            if nm in ("var", "std"):
                c = node.kwargs.get("correction", node.kwargs.get("unbiased", True))
                corr = "1" if c is True else "0" if c is False else str(c)
            if nm == "norm":
                p = a(1, "p", 2)
                if p[0] not in (2, 2.0, "fro", None):
                    raise Unsupported("norm with p=%r" % (p[0],))
                d = a(2, "dim")
                keep = self.num(a(3, "keepdim", False))
                return "kt_reduce(%s, %s, %s, KR_NORM2, 0)" % (x, self.dims(d, nd), keep)
            if nm in ("argmax", "argmin"):
                if d[0] is None:
                    x = self.tmp("kt", "kt_flatten(%s, 0, -1)" % x)
                    return "kt_reduce1(%s, 0, 0, %s, 0)" % (x, REDUCE[nm])
                return "kt_reduce1(%s, %s, %s, %s, 0)" % (x, self.num(d), keep, REDUCE[nm])
            return "kt_reduce(%s, %s, %s, %s, %s)" % (x, self.dims(d, nd), keep, REDUCE[nm], corr)
        if nm in ("clamp", "clip", "clamp_min", "clamp_max", "hardtanh"):
            x = self.var[first.name]
            if nm == "hardtanh":
                lo, hi = a(1, "min_val", -1.0), a(2, "max_val", 1.0)
            elif nm == "clamp_min":
                lo, hi = a(1, "min"), [None]
            elif nm == "clamp_max":
                lo, hi = [None], a(1, "max")
            else:
                lo, hi = a(1, "min"), a(2, "max")
            if any(hasattr(v, "name") for v in lo + hi):
                raise Unsupported("clamp by tensors")
            return "kt_unary(%s, KU_CLAMP, %s, %s)" % (
                x, "-INFINITY" if lo[0] is None else self.num(lo),
                "INFINITY" if hi[0] is None else self.num(hi))
        if nm in ("where",):
            return "kt_where(%s, %s, %s)" % (self.tensor(a(0)), self.tensor(a(1)),
                                             self.tensor(a(2)))
        if nm == "dropout":
            tr = a(2, "training", True)[0]
            p = a(1, "p", 0.5)[0]
            if tr and p:
                raise Unsupported("dropout in training mode (random)")
            return self.var[first.name]
        if nm in ("batch_norm",):
            x = self.var[first.name]
            rm, rv = a(1, "running_mean"), a(2, "running_var")
            w, b = a(3, "weight"), a(4, "bias")
            tr, eps = a(5, "training", False), a(7, "eps", 1e-5)
            hr = rm[0] is not None
            hw = w[0] is not None
            return "kt_batch_norm(%s, %s, %s, %s, %s, %d, %d, %s, %s)" % (
                x, self.tensor(rm) if hr else "kt_scalar(0)", self.tensor(rv) if hr else
                "kt_scalar(0)", self.tensor(w) if hw else "kt_scalar(0)",
                self.tensor(b) if b[0] is not None else "kt_scalar(0)", hr, hw,
                self.num(tr), self.num(eps))
        if nm == "layer_norm":
            x = self.var[first.name]
            shp = a(1, "normalized_shape")[0]
            w, b, eps = a(2, "weight"), a(3, "bias"), a(4, "eps", 1e-5)
            k = len(shp) if isinstance(shp, (list, tuple, torch.Size)) else 1
            return "kt_layer_norm(%s, %d, %s, %s, %d, %d, %s)" % (
                x, k, self.tensor(w) if w[0] is not None else "kt_scalar(0)",
                self.tensor(b) if b[0] is not None else "kt_scalar(0)", w[0] is not None,
                b[0] is not None, self.num(eps))
        if nm == "group_norm":
            x = self.var[first.name]
            w, b, eps = a(2, "weight"), a(3, "bias"), a(4, "eps", 1e-5)
            return "kt_group_norm(%s, %s, %s, %s, %d, %s)" % (
                x, self.num(a(1, "num_groups")), self.tensor(w) if w[0] is not None else
                "kt_scalar(0)", self.tensor(b) if b[0] is not None else "kt_scalar(0)",
                w[0] is not None, self.num(eps))
        act = {"relu6", "hardtanh", "leaky_relu", "elu", "softplus", "mish", "gelu"}
        if nm in act or (nm in UNARY and UNARY[nm]):
            x = self.var[first.name]
            pos = {"threshold": 2, "max_val": 2}
            return self.act(nm, x, lambda key, d: a(pos.get(key, 1), key, d)[0])
        if nm in BINARY and BINARY[nm] or nm in ("rsub", "rtruediv", "rdiv", "rpow", "rmul",
                                                 "radd"):
            return self.binary(node, nm, alts, res)
        if nm == "pow" and not self.is_tensor(node.args[0]):
            return self.binary(node, nm, alts, res)
        raise Unsupported("the operator %s" % nm)

    def index(self, first, alts, nd):
        """x[...] with ints, slices, None and one Ellipsis (no tensor indices)."""
        specs = []
        for n in alts:
            sp = n.args[1] if isinstance(n.args[1], tuple) else (n.args[1],)
            real = sum(1 for e in sp if e is not None and e is not Ellipsis)
            out = []
            for e in sp:
                if e is Ellipsis:
                    out += [slice(None)] * (nd - real)
                else:
                    out.append(e)
            specs.append(out)
        k = len(specs[0])
        rows = {"kind": [], "a": [], "b": [], "st": []}
        for i in range(k):
            e = specs[0][i]
            col = [sp[i] for sp in specs]
            if e is None:
                vals = (2, 0, 0, 1)
                for key, v in zip(rows, vals):
                    rows[key].append(str(v))
            elif isinstance(e, slice):
                rows["kind"].append("1")
                for key, f, d in (("a", "start", 0), ("b", "stop", None), ("st", "step", 1)):
                    vs = [getattr(c, f) for c in col]
                    if hasattr(vs[0], "name"):
                        rows[key].append("(long)%s" % self.var[vs[0].name])
                    elif vs[0] is None:
                        rows[key].append("KT_END" if d is None else str(d))
                    else:
                        rows[key].append(self.num(vs))
            elif isinstance(e, int) or hasattr(e, "name"):
                rows["kind"].append("0")
                rows["a"].append("(long)%s" % self.var[e.name] if hasattr(e, "name")
                                 else self.num(col))
                rows["b"].append("0")
                rows["st"].append("1")
            else:
                raise Unsupported("indexing a tensor with %s" % type(e).__name__)
        names = []
        for key in ("kind", "a", "b", "st"):
            self.n += 1
            nm = "i%d" % self.n
            self.lines.append("  long %s[%d] = {%s};" % (nm, max(k, 1), ", ".join(rows[key])
                                                         or "0"))
            names.append(nm)
        return "kt_index(%s, %d, %s)" % (self.var[first.name], k, ", ".join(names))

    def fconv(self, node, nm, alts):
        """F.conv{1,2,3}d / conv_transpose / max_pool / avg_pool, by argument."""
        a = lambda i, key=None, d=None: self.args(alts, i, key, d)  # noqa: E731
        sp = int(nm[-2])
        x = self.var[node.args[0].name]
        if nm.startswith("conv"):
            tr = "transpose" in nm
            wn = node.args[1] if len(node.args) > 1 else node.kwargs["weight"]
            b = a(2, "bias")
            if tr:
                f = {"k": None, "st": a(3, "stride", 1), "pad": a(4, "padding", 0),
                     "opad": a(5, "output_padding", 0), "dil": a(7, "dilation", 1)}
                groups = a(6, "groups", 1)
            else:
                f = {"k": None, "st": a(3, "stride", 1), "pad": a(4, "padding", 0),
                     "dil": a(5, "dilation", 1)}
                groups = a(6, "groups", 1)
            w = self.win(None, sp, f, (1, 1, 0, 1, 0))
            return "kt_conv%s(%s, %s, %s, %d, %d, %s, %s)" % (
                "_t" if tr else "", x, self.var[wn.name],
                self.var[b[0].name] if b[0] is not None else "kt_scalar(0)", b[0] is not None,
                sp, w, self.num(groups))
        avg = nm.startswith("avg")
        k = a(1, "kernel_size")
        st = a(2, "stride")
        st = [v if v not in (None, []) else kk for v, kk in zip(st, k)]
        f = {"k": k, "st": st, "pad": a(3, "padding", 0)}
        if avg:
            ceil = a(4, "ceil_mode", False)
            cip = a(5, "count_include_pad", True)[0]
            div = a(6, "divisor_override")
            w = self.win(None, sp, f, (1, 1, 0, 1, 0))
            return "kt_pool(%s, %d, %s, %d, %s, %s)" % (x, sp, w, 1 if cip else 2, self.num(ceil),
                                                         "0" if div[0] is None else self.num(div))
        if a(5, "ceil_mode", False)[0] is None or a(6, "return_indices", False)[0]:
            raise Unsupported("%s with return_indices" % nm)
        f["dil"] = a(4, "dilation", 1)
        w = self.win(None, sp, f, (1, 1, 0, 1, 0))
        return "kt_pool(%s, %d, %s, 0, %s, 0)" % (x, sp, w, self.num(a(5, "ceil_mode", False)))

    def loss(self, node, nm, a):
        """F.smooth_l1_loss, huber_loss, mse_loss, l1_loss, kl_div with their
        reduction ('mean', 'sum', 'none'; kl_div also 'batchmean')."""
        x, y = self.tensor(a(0, "input")), self.tensor(a(1, "target"))
        red = a(None, "reduction", "mean")[0]
        if nm == "kl_div":
            if a(None, "log_target", False)[0]:
                raise Unsupported("kl_div with log_target")
            e = self.tmp("kt", "kt_binary(%s, %s, KB_KLDIV)" % (x, y))
        else:
            d = self.tmp("kt", "kt_binary(%s, %s, KB_SUB)" % (x, y))
            beta = self.num(a(None, "beta" if nm == "smooth_l1_loss" else "delta", 1.0))
            op = {"smooth_l1_loss": "kt_unary(%s, KU_HUBER, %s, 0)" % (d, beta),
                  "huber_loss": "kt_binary_s(kt_unary(%s, KU_HUBER, %s, 0), %s, KB_MUL, 0)"
                                % (d, beta, beta),
                  "mse_loss": "kt_unary(%s, KU_SQUARE, 0, 0)" % d,
                  "l1_loss": "kt_unary(%s, KU_ABS, 0, 0)" % d}[nm]
            e = self.tmp("kt", op)
        if red == "none":
            return e
        if red == "batchmean":
            return "kt_binary_s(kt_reduce(%s, 0, 0, KR_SUM, 0), (double)%s.s[0], KB_DIV, 0)" % (
                e, x)
        return "kt_reduce(%s, 0, 0, %s, 0)" % (e, "KR_SUM" if red == "sum" else "KR_MEAN")

    def shape_array(self, x, nd):
        self.n += 1
        nm = "a%d" % self.n
        self.lines.append("  long %s[%d];" % (nm, max(nd, 1)))
        self.lines.append("  for (int i = 0; i < %s.nd; i++) %s[i] = %s.s[i];" % (x, nm, x))
        return nm

    def view(self, x, alts, start):
        rest = [n.args[start:] for n in alts]
        if len(rest[0]) == 1 and isinstance(rest[0][0], (list, tuple)):
            rest = [list(r[0]) for r in rest]
        k = len(rest[0])
        items = []
        for i in range(k):
            v = rest[0][i]
            if hasattr(v, "name"):
                items.append("(long)%s" % self.var[v.name])
            else:
                items.append(self.num([r[i] for r in rest]))
        self.n += 1
        nm = "a%d" % self.n
        self.lines.append("  long %s[%d] = {%s};" % (nm, max(k, 1), ", ".join(items) or "0"))
        return "kt_view(%s, %d, %s)" % (x, k, nm)

    def binary(self, node, nm, alts, res):
        swap = nm.startswith("r") and nm not in ("remainder", "round", "rsqrt")
        base = {"rsub": "sub", "rtruediv": "truediv", "rdiv": "div", "rpow": "pow",
                "rmul": "mul", "radd": "add"}.get(nm, nm)
        if node.kwargs.get("alpha") not in (None, 1):
            raise Unsupported("%s with alpha" % nm)
        x0, y0 = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("other")
        if swap:
            x0, y0 = y0, x0
        tx, ty = self.is_tensor(x0), self.is_tensor(y0)
        xa = [n.args[0] for n in alts]
        ya = [n.args[1] if len(n.args) > 1 else n.kwargs.get("other") for n in alts]
        if swap:
            xa, ya = ya, xa
        if not tx and not ty:  # numbers (sizes): C arithmetic
            cx, cy = self.val(xa), self.val(ya)
            ops = {"add": "+", "sub": "-", "mul": "*", "floordiv": "/", "mod": "%%"}
            if base in ops:
                return "(%s %s %s)" % (cx, ops[base].replace("%%", "%"), cy)
            if base in ("truediv", "div"):
                return "((double)%s / (double)%s)" % (cx, cy)
            if base == "pow":
                return "pow(%s, %s)" % (cx, cy)
            raise Unsupported("the number operator %s" % nm)
        op = BINARY[base]
        if tx and ty:
            return "kt_binary(%s, %s, %s)" % (self.var[x0.name], self.var[y0.name], op)
        if tx:
            return "kt_binary_s(%s, %s, %s, 0)" % (self.var[x0.name], self.val(ya), op)
        return "kt_binary_s(%s, %s, %s, 1)" % (self.var[y0.name], self.val(xa), op)


ACT = {"ReLU", "ReLU6", "Sigmoid", "Tanh", "GELU", "SiLU", "Mish", "Softplus", "Softsign",
       "ELU", "SELU", "LeakyReLU", "Hardtanh", "Hardsigmoid", "Hardswish", "LogSigmoid",
       "Tanhshrink", "Softmax", "LogSoftmax"}


def mark_weights(task, model):
    """task.json's params that are Model's weights (unpacked) get _weight."""
    names = [n.replace(".", "_") for n, _ in list(model.named_parameters()) +
             list(model.named_buffers())]
    packed = {m["name"] for p in task["params"] for m in p.get("pack", [])}
    unpacked = [n for n, _ in list(model.named_parameters()) + list(model.named_buffers())
                if n not in packed]
    want = {n.replace(".", "_") for n in unpacked}
    ins = [p for p in task["params"] if p["role"] == "in" and not p.get("pack")]
    # the weights are the last len(want) plain inputs, in named order
    k = len(unpacked)
    for p in ins[len(ins) - k:] if k else []:
        if p["name"] in want:
            p["_weight"] = True
    del names
    return unpacked


def bind_weights(g, task, model):
    """The C expression of every weight: a param, or a slice of a pack."""
    lines = []
    unpacked = mark_weights(task, model)
    byname = {p["name"]: p for p in task["params"]}
    for n in unpacked:
        p = byname.get(n.replace(".", "_"))
        if p is None:
            raise Unsupported("Model.%s is not among task.json's params: import again" % n)
        g.weights[n] = (p, None)
    for p in task["params"]:
        for m in p.get("pack", []):
            g.weights[m["name"]] = (p, m)
    return lines


def emit_weights(g, task):
    """Pointers into the packs (each after the one before), wrapped as kt."""
    out = {}
    for p in task["params"]:
        if not p.get("pack") or p["dtype"] != "f32":
            continue  # another dtype's pack (num_batches_tracked): unused by forward
        prev = None
        for k, m in enumerate(p["pack"]):
            ptr = "%s_%d" % (p["name"], k)
            if prev is None:
                g.lines.append("  const float *%s = %s;" % (ptr, p["name"]))
            else:
                pm = p["pack"][k - 1]
                size = " * ".join("(long)(%s)" % e for e in pm["shape"]) or "1"
                g.lines.append("  const float *%s = %s + %s;" % (ptr, prev, size))
            g.lines.append("  (void)%s;" % ptr)
            prev = ptr
            out[m["name"]] = (ptr, m["shape"], p["dtype"])
    for qual, (p, m) in list(g.weights.items()):
        if m is None:
            g.weights[qual] = ("lazy", p["name"], p["shape"], p["dtype"])
        elif m["name"] in out:
            ptr, shape, dt = out[m["name"]]
            g.weights[qual] = ("lazy", ptr, shape, dt)
        else:
            g.weights[qual] = ("lazy", p["name"], m["shape"], p["dtype"])  # refused if used


class LazyWeights(dict):
    """Weights are wrapped as kt on first use (a network of hundreds of
    tensors wraps only those its graph reads)."""

    def __init__(self, g):
        super().__init__()
        self.g = g

    def get(self, k, d=None):
        v = dict.get(self, k, d)
        if isinstance(v, tuple) and v and v[0] == "lazy":
            _, ptr, shape, dt = v
            v = self.g.wrap(ptr, shape, dt)
            self[k] = v
        return v

    def __contains__(self, k):
        return dict.__contains__(self, k)

    def __getitem__(self, k):
        return self.get(k)


def signature(task, surface):
    parts = []
    for p in task["params"]:
        ct = CTYPE.get(p.get("dtype", "i32"))
        if ct is None and p["role"] != "size":
            raise Unsupported("a %s param (%s): the starter handles f32 tensors" %
                              (p["dtype"], p["name"]))
        if p["role"] == "in":
            parts.append("const %s *%s" % (ct, p["name"]))
        elif p["role"] in ("out", "inout"):
            parts.append("%s *%s" % (ct, p["name"]))
        elif p["role"] == "size":
            parts.append("int %s" % p["name"])
        else:
            parts.append("%s %s" % (ct, p["name"]))
    if surface == "cuda":
        parts.append("cudaStream_t stream")
        return 'extern "C" void %s(%s)' % (task["entry"], ", ".join(parts))
    return "void %s(%s)" % (task["entry"], ", ".join(parts) or "void")


def staging(task, body):
    """The cuda surface: inputs copied to the host, the outputs back."""
    pre, post = [], []
    pre.append("  cudaStreamSynchronize(stream);")
    for p in task["params"]:
        if p["role"] not in ("in", "out", "inout"):
            continue
        ct = CTYPE[p["dtype"]]
        n = " * ".join("(long)(%s)" % e for e in p["shape"]) or "1"
        pre.append("  size_t n_%s = (size_t)(%s) * sizeof(%s);" % (p["name"], n, ct))
        pre.append("  %s *h_%s = (%s *)kt_alloc(n_%s);" % (ct, p["name"], ct, p["name"]))
        if p["role"] in ("in", "inout"):
            pre.append("  cudaMemcpy(h_%s, %s, n_%s, cudaMemcpyDeviceToHost);" %
                       (p["name"], p["name"], p["name"]))
        if p["role"] in ("out", "inout"):
            post.append("  cudaMemcpyAsync(%s, h_%s, n_%s, cudaMemcpyHostToDevice, stream);" %
                        (p["name"], p["name"], p["name"]))
    post.append("  cudaStreamSynchronize(stream);")
    out = []
    names = [p["name"] for p in task["params"] if p["role"] in ("in", "out", "inout")]
    for line in body:
        for nm in names:
            for w in ("kt_wrap(", "kt_wrap_uint8_t(", "kt_wrap_int32_t(", "kt_wrap_int64_t("):
                line = line.replace("%s%s," % (w, nm), "%sh_%s," % (w, nm))
            line = line.replace("const float *%s_0 = %s;" % (nm, nm),
                                "const float *%s_0 = h_%s;" % (nm, nm))
        out.append(line)
    return pre + out + post


def generate(task_dir, surface):
    with open(os.path.join(task_dir, "task.json")) as f:
        task = json.load(f)
    ref = os.path.join(task_dir, "reference.py")
    with open(ref) as f:
        tree = ast.parse(f.read(), filename=ref)
    consts = kimp.base_constants(tree)
    sets = list(task.get("check", [])) + list(task.get("bench", []))
    if not sets:
        sets = [{}]
    traces = []
    for k, s in enumerate(sets):
        meta = k >= len(task.get("check", []))
        traces.append(Trace(tree, consts, s, meta))
    g = Gen(task, traces, None, surface)
    g.weights = LazyWeights(g)
    bind_weights(g, task, traces[0].model)
    g.types = run_types(traces[0], task)
    emit_weights(g, task)
    sig = signature(task, surface)
    g.generate()
    body = g.lines
    if surface == "cuda":
        body = staging(task, body)
    for p in task["params"]:
        if p["role"] == "size":
            body.insert(0, "  (void)%s;" % p["name"])
    with open(os.path.join(HERE, "kevo_starter_rt.h")) as f:
        rt = f.read()
    ops = sorted(set(g.ops))
    what = ("computes %s with plain loops on the host%s" %
            (", ".join(ops) if ops else "the outputs",
             "" if surface == "cpu" else
             " (the inputs copied from the GPU, the outputs copied back: correct and slow)"))
    head = ("/* kevo task starter: a minimal correct candidate of task '%s' (%s surface),\n"
            " * generated from reference.py traced by torch.fx. It %s.\n"
            " * Replace it with a real kernel; kevo run tunes or rewrites it. */\n"
            % (task["name"], surface, what))
    entry = sig + " {\n" + "\n".join(body) + "\n  kt_free_all();\n}\n"
    return {"ok": True, "source": head + rt + "\n" + entry, "entry": entry, "ops": ops,
            "what": what}


def main(argv):
    global torch, kimp
    if len(argv) < 2:
        print("usage: kevo_starter.py TASK_DIR [--surface cpu|cuda]", file=sys.stderr)
        return 2
    surface = "cpu"
    if "--surface" in argv:
        surface = argv[argv.index("--surface") + 1]
    sys.path.insert(0, HERE)
    try:
        import torch as t
        import torch.fx  # noqa: F401
        torch = t
        import kevo_import as k
        kimp = k
        out = generate(argv[1], surface)
    except Unsupported as e:
        out = {"ok": False, "cause": "unsupported", "detail": str(e)}
    except Exception as e:
        out = {"ok": False, "cause": "error", "detail": "%s: %s (%s)" % (
            type(e).__name__, str(e).split("\n")[0][:300],
            traceback.format_exc().strip().split("\n")[-3][:200])}
    sys.stdout.write(MARK + json.dumps(out) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
