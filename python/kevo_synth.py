#!/usr/bin/env python3
"""kevo's synthesize helper: fingerprints of KernelBench-style modules, read
from their source alone. Nothing is executed and torch is not imported.

    kevo_synth.py FILE...

prints one line per file on stdout:

    KEVO_SYNTH_JSON {"file": F, "ok": true, "module_key": HEX, "ops": [...], "ops_key": HEX}
    KEVO_SYNTH_JSON {"file": F, "ok": false, "cause": "syntax", "detail": "..."}

module_key: sha256 of the module's syntax tree with docstrings removed and
every variable, argument, function and class renamed by order of first
appearance, so that formatting, comments and names do not matter but every
literal does: two files with the same module_key are the same module.

ops: the operators of Model.forward in the order Python evaluates them,
normalised so that the spellings of one operator agree: torch.relu(x),
F.relu(x), x.relu() and a layer nn.ReLU() called through self.act are all
"relu"; a + b and torch.add(a, b) are "add"; `@`, torch.matmul and torch.mm
are "matmul". Layers called through self.NAME are resolved to their class in
__init__ (nn.Sequential to its layers). Integer literals given to
dimension-taking operators stay ("softmax(dim=1)"); other scalar literals
are dropped (x * 0.5 and x * 0.7 are both "mul"). ops_key is sha256 of ops.
kevo adds the import's shapes to ops_key to decide that two modules are the
same operator graph at the same shapes.
"""
import ast
import hashlib
import json
import sys

MARK = "KEVO_SYNTH_JSON "
MAX_BYTES = 1 << 20

ALIASES = {
    "mm": "matmul", "bmm": "matmul", "__matmul__": "matmul", "multiply": "mul",
    "subtract": "sub", "divide": "div", "true_divide": "div", "neg": "neg", "negative": "neg",
    "clip": "clamp", "clamp_min": "clamp", "clamp_max": "clamp", "absolute": "abs",
    "greater": "gt", "less": "lt", "concat": "cat", "concatenate": "cat", "swapaxes": "transpose",
    "moveaxis": "movedim", "linear": "linear", "relu_": "relu", "sigmoid_": "sigmoid",
}
# Layers (nn.X) named as the functional operator they compute.
LAYERS = {
    "relu": "relu", "relu6": "relu6", "gelu": "gelu", "silu": "silu", "sigmoid": "sigmoid",
    "tanh": "tanh", "softmax": "softmax", "logsoftmax": "log_softmax", "leakyrelu": "leaky_relu",
    "elu": "elu", "selu": "selu", "mish": "mish", "hardtanh": "hardtanh", "hardswish": "hardswish",
    "softplus": "softplus", "identity": "identity", "flatten": "flatten",
}
DIM_FUNCS = {"softmax", "log_softmax", "sum", "mean", "cumsum", "cumprod", "argmax", "argmin",
             "max", "min", "prod", "std", "var", "norm", "logsumexp", "amax", "amin", "cat",
             "stack", "squeeze", "unsqueeze", "flatten", "glu", "normalize", "all", "any"}
PREFIXES = ("torch.nn.functional.", "nn.functional.", "torch.", "F.", "functional.")
FLOATY = (float, complex)


def dotted(node):
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def norm_name(name):
    name = name.lower()
    return ALIASES.get(name, name)


def literal(node):
    """A literal as a short string, or None for what is not one (or a float)."""
    try:
        v = ast.literal_eval(node)
    except Exception:
        return None
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return repr(v)
    if isinstance(v, (tuple, list)) and all(isinstance(x, int) and not isinstance(x, bool)
                                            for x in v):
        return repr(tuple(v))
    return None


def describe_call(base, call, skip_first):
    """base plus its literal arguments: dims kept for DIM_FUNCS, keywords kept
    when literal and not a float."""
    args = []
    positional = call.args[1:] if skip_first else call.args
    for a in positional:
        v = literal(a)
        if v is not None and base in DIM_FUNCS and v.lstrip("-").isdigit():
            args.append("dim=" + v)
    for kw in call.keywords:
        if kw.arg is None:
            continue
        v = literal(kw.value)
        if v is not None:
            args.append("%s=%s" % (kw.arg, v))
    return base + ("(" + ",".join(sorted(args)) + ")" if args else "")


class Layers:
    """self.NAME -> the ops of the layer built in __init__."""

    def __init__(self, cls):
        self.map = {}
        init = next((f for f in cls.body if isinstance(f, ast.FunctionDef)
                     and f.name == "__init__"), None)
        if init is None:
            return
        for st in ast.walk(init):
            if isinstance(st, ast.Assign) and len(st.targets) == 1:
                t = st.targets[0]
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                        t.value.id == "self":
                    ops = self.layer_ops(st.value)
                    if ops is not None:
                        self.map[t.attr] = ops

    def layer_ops(self, node):
        if not isinstance(node, ast.Call):
            return None
        name = dotted(node.func)
        if not name:
            return None
        short = name.split(".")[-1]
        if short == "Sequential":
            ops = []
            for a in node.args:
                sub = self.layer_ops(a)
                if sub:
                    ops.extend(sub)
            return ops
        if short in ("Parameter", "ModuleList", "ModuleDict", "ParameterList"):
            return None
        if not (name.startswith("nn.") or name.startswith("torch.nn.") or short[:1].isupper()):
            return None
        key = short.lower()
        return [describe_call(LAYERS.get(key, key), node, False)]


class Ops(ast.NodeVisitor):
    BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv:
           "floordiv", ast.Mod: "mod", ast.Pow: "pow", ast.MatMult: "matmul", ast.BitAnd: "and",
           ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "shl", ast.RShift: "shr"}
    CMP = {ast.Gt: "gt", ast.GtE: "ge", ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne"}

    def __init__(self, layers):
        self.ops = []
        self.layers = layers

    def visit_BinOp(self, node):
        self.visit(node.left)
        self.visit(node.right)
        self.ops.append(self.BIN.get(type(node.op), "binop"))

    def visit_AugAssign(self, node):
        self.visit(node.value)
        self.ops.append(self.BIN.get(type(node.op), "binop"))

    def visit_UnaryOp(self, node):
        self.visit(node.operand)
        if isinstance(node.op, ast.USub) and literal(node.operand) is None and \
                not isinstance(node.operand, ast.Constant):
            self.ops.append("neg")
        elif isinstance(node.op, ast.Invert):
            self.ops.append("not")

    def visit_Compare(self, node):
        self.visit(node.left)
        for c in node.comparators:
            self.visit(c)
        for op in node.ops:
            self.ops.append(self.CMP.get(type(op), "cmp"))

    def visit_Subscript(self, node):
        self.generic_visit(node)
        self.ops.append("index")

    def visit_Call(self, node):
        f = node.func
        name = dotted(f)
        for a in node.args:
            self.visit(a)
        for kw in node.keywords:
            self.visit(kw.value)
        if name and name.startswith("self.") and name.count(".") == 1:
            ops = self.layers.map.get(name[5:])
            self.ops.extend(ops if ops is not None else ["call:" + name[5:]])
            return
        if name and name.startswith("super"):
            return
        if name:
            for p in PREFIXES:
                if name.startswith(p):
                    base = norm_name(name[len(p):])
                    if base.startswith("nn.") or base.startswith("functional."):
                        base = base.split(".")[-1]
                    self.ops.append(describe_call(base, node, True))
                    return
        if isinstance(f, ast.Attribute):
            # A method of a value (x.sum(1), x.view(...)): its receiver first.
            self.visit(f.value)
            self.ops.append(describe_call(norm_name(f.attr), node, False))
            return
        if isinstance(f, ast.Name):
            self.ops.append(describe_call(norm_name(f.id), node, True))
            return
        self.generic_visit(node)
        self.ops.append("call")


class Renamer(ast.NodeTransformer):
    """Every name renamed by order of first appearance; docstrings removed."""

    def __init__(self):
        self.names = {}

    def new(self, name):
        if name not in self.names:
            self.names[name] = "v%d" % len(self.names)
        return self.names[name]

    def strip_doc(self, node):
        body = getattr(node, "body", None)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]

    def generic_visit(self, node):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            self.strip_doc(node)
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and \
                node.name not in ("Model", "forward", "__init__", "get_inputs", "get_init_inputs"):
            node.name = self.new(node.name)
        return super().generic_visit(node)

    def visit_Name(self, node):
        node.id = self.new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.new(node.arg)
        node.annotation = None
        return node

    def visit_alias(self, node):
        if node.asname:
            node.asname = self.new(node.asname)
        return node


def fingerprint(path):
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        return {"ok": False, "cause": "read", "detail": "cannot read it: %s" % e.strerror}
    if len(raw) > MAX_BYTES:
        return {"ok": False, "cause": "read", "detail": "over 1 MiB; a module should be small"}
    try:
        src = raw.decode("utf-8")
        tree = ast.parse(src, filename=path)
    except UnicodeDecodeError as e:
        return {"ok": False, "cause": "read", "detail": "not UTF-8 text (byte %d)" % e.start}
    except SyntaxError as e:
        return {"ok": False, "cause": "syntax",
                "detail": "syntax error at line %s: %s" % (e.lineno, e.msg)}
    except (RecursionError, MemoryError, ValueError) as e:
        return {"ok": False, "cause": "syntax", "detail": "cannot parse it: %s" % type(e).__name__}
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if cls is None:
        return {"ok": False, "cause": "no_model",
                "detail": "no class Model at the top level; a KernelBench module defines "
                          "class Model(nn.Module)"}
    fwd = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "forward"),
               None)
    if fwd is None:
        return {"ok": False, "cause": "no_model", "detail": "class Model has no forward method"}
    ops = Ops(Layers(cls))
    for st in fwd.body:
        ops.visit(st)
    canon = ast.dump(Renamer().visit(tree), annotate_fields=False, include_attributes=False)
    sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
    return {"ok": True, "module_key": sha(canon), "ops": ops.ops[:256],
            "ops_key": sha(json.dumps(ops.ops))}


def main():
    sys.setrecursionlimit(2000)
    out = sys.stdout
    for path in sys.argv[1:]:
        try:
            r = fingerprint(path)
        except RecursionError:
            r = {"ok": False, "cause": "syntax", "detail": "nested too deeply to read"}
        r["file"] = path
        out.write(MARK + json.dumps(r) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
