#!/usr/bin/env python3
"""kevo's torch candidate worker: runs a KernelBench-style candidate (a Python
file defining ModelNew) for the gate's torch surface, speaking kevo-worker's
protocol. docs/torch-surface.md is the user's account of it.

    kevo_torch_cand.py --scratch DIR --rt LIBKEVO_PYRT [--surface cpu|cuda]
                       [--read PATH]... [--no-sandbox]

kevo starts it for the candidate (cw) and, never given a candidate, for
kevo's empty entry (ew: an empty ModelNew whose phases price what a phase
costs besides forward). It shares the frames, the generator bindings and the
sandbox's first two stages with the torch reference worker
(kevo_torch_worker.py, imported here), and never loads the task's Model: the
reference runs in that other process, so nothing of its module, weights or
results is in this one.

What kevo judges is read by kevo, never reported from here (issue 28):
  - CHECK: one call on the check memory (fd 6, kv_check_layout): kevo wrote
    the inputs, the task's weights, poisoned outputs and guard zones keyed by
    a secret while this process was stopped; this worker makes ModelNew's
    forward on views of those bytes, copies what forward returned into the
    output views, and answers "returned". kevo stops the process and reads
    outputs, inputs and guard zones itself.
  - TIME: m calls on the timed calls' memory (fd 5, kv_shm_layout), each on
    its own fresh inputs; the reply's per-call times are only bounded by
    kevo's clock around the phase (less the empty entry's phases, run by a
    clean process of this very script), never believed.
On a GPU (--surface cuda) the candidate's process copies each check call's
inputs to the device and forward's outputs back itself (that copy is its own
output, which is what kevo judges). Timing on the GPU is not done here: it
will time on device buffers owned by a clean worker and shared through CUDA
IPC (issue 28, kevo-worker's cuda runtime), read by kevo once this process
is stopped; see gpu_time_hook().

Construction (KernelBench's conventions): per size set, the task's
get_init_inputs() at that set's size constants (computed from reference.py
with its Model class and everything else but constants, imports and
functions left out), then torch.manual_seed(0) and ModelNew(*init_inputs).
The task's weights (Model's parameters and buffers, which task.json makes
inputs drawn afresh per call) are bound for every call to ModelNew's
parameters and buffers of the same names (conv.weight <- conv_weight; a
packed network's by its pack table): the weights cannot diverge from the
reference's, and a ModelNew without one of them does not load.

Sandbox, tighter than the reference worker's (whose stages 1 and 2 it
reuses):
  stage 1, at start: RLIMIT_CORE 0, RLIMIT_FSIZE, RLIMIT_DATA 32 GiB, a new
    network and IPC namespace, no_new_privs (kevo_torch_worker.sb_start);
    then a mount namespace with a private tmpfs on the scratch directory
    (512 MiB, 8192 inodes, gone with the process), which holds Triton's,
    inductor's and torch's extension caches (TRITON_CACHE_DIR and the rest
    point there, never at kevo's shared cache); a child subreaper, so that
    any process the candidate starts stays this worker's descendant.
  stage 2, at LOAD, before reference.py's constants are run or the
    candidate is read by Python: Landlock reading only the system
    directories, Python's installation and sys.path, this script's
    directory and the one candidate file (not the task's directory, not
    kevo's object cache: no other candidate's objects), writing only the
    scratch tmpfs and /dev/null (not /dev/shm, not kevo's caches); no TCP;
    the reference worker's seccomp filter (no ptrace, process_vm_*, bpf,
    perf_event_open, key ring, mount, namespaces, module loading, io_uring,
    inet/inet6/netlink/packet sockets).
  stage 3, once ModelNew is built and has run once at every listed size
    (Triton's JIT and load_inline's build happen then, timed apart by kevo
    as jit_s): any process the candidate started must be gone (a live one
    is killed and the LOAD refused), then a seccomp filter with no fork,
    vfork, execve, execveat or clone of a process (threads only). From then
    on no process of the candidate outlives kevo's SIGSTOP of this one.
  Off, and why: executable mappings (Triton's and load_inline's compiled
  code is loaded with dlopen), AF_UNIX sockets (CUDA's cuInit), the exec
  lockdown of kevo-worker (Python loads modules lazily); fork and exec
  until stage 3 (compilers). The candidate shares this interpreter: it can
  rewrite anything this script does (its clock, its replies, what it copies)
  and that is why nothing it says is believed.
"""
import ast
import ctypes
import mmap
import os
import platform
import struct
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kevo_torch_worker as ktw  # noqa: E402  frames, generator, sandbox stages 1 and 2

# Captured before any candidate code runs (a candidate may patch time's;
# kevo's clock bounds the times anyway).
_ns = time.perf_counter_ns

CHECK_FD, SHM_FD = 6, 5
SCRATCH_BYTES, SCRATCH_INODES = 512 << 20, 8192
torch = None
kimp = None
state = {"locked": False, "cand": None, "ref": None, "empty": False, "jit_s": 0.0,
         "dev": None, "surface": "cpu"}
models = {}  # layout key -> (model, fin, binds, outs)
chk = {"map": None, "len": 0, "whole": None}
shm = {"map": None, "len": 0, "whole": None}


class Fail(ktw.Fail):
    pass


# ---- sandbox ----

def sb_scratch(st, notes, scratch):
    """Stage 1's end: a mount namespace of our own with a size-capped tmpfs on
    the scratch directory (the caches a candidate may write), and a child
    subreaper. Best effort: without them the scratch is the plain directory
    kevo removes after the worker, which the HELLO says."""
    lc = ktw.sb_libc()
    if lc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        notes.append("subreaper: %s" % ktw.sb_errno())
    st["scratch"] = "off"
    if lc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        notes.append("scratch: unshare(CLONE_NEWNS): %s" % ktw.sb_errno())
        return
    # MS_REC | MS_PRIVATE on /: nothing mounted here reaches the host.
    if lc.mount(None, b"/", None, ctypes.c_ulong(0x4000 | 0x40000), None) != 0:
        notes.append("scratch: making / private: %s" % ktw.sb_errno())
        return
    opts = ("size=%d,nr_inodes=%d,mode=0700" % (SCRATCH_BYTES, SCRATCH_INODES)).encode()
    # MS_NOSUID | MS_NODEV
    if lc.mount(b"tmpfs", scratch.encode(), b"tmpfs", ctypes.c_ulong(0x2 | 0x4), opts) != 0:
        notes.append("scratch: mount tmpfs: %s" % ktw.sb_errno())
        return
    os.chdir(scratch)  # the tmpfs, not the directory under it
    st.update({"scratch": "active", "scratch_bytes": SCRATCH_BYTES,
               "scratch_inodes": SCRATCH_INODES})


def cache_env(scratch):
    """Every cache torch, Triton and load_inline write, in the scratch (never
    kevo's shared cache: code there is loaded by later processes)."""
    for var, sub in (("TRITON_CACHE_DIR", "triton"), ("TRITON_HOME", "."),
                     ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                     ("TORCH_EXTENSIONS_DIR", "torch_extensions"), ("XDG_CACHE_HOME", ".cache")):
        d = os.path.join(scratch, sub)
        os.makedirs(d, mode=0o700, exist_ok=True)
        os.environ[var] = d
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    if state["surface"] == "cpu":
        # No GPU here: Triton kernels run in Triton's interpreter on CPU tensors.
        os.environ["TRITON_INTERPRET"] = "1"


def sb_lock2(cand_path):
    """Stage 2 (module docstring)."""
    j = ktw.jail
    if not j["on"]:
        return
    reads = [p for p in ktw.sb_read_paths(HERE, []) if p]
    if cand_path:
        reads.append(cand_path)  # the one file, not its directory
    writes = [j["scratch"], "/dev/null"]
    if j["cuda"]:
        # What the driver may read later besides /proc/driver/nvidia,
        # /sys/devices and /sys/bus/pci (kevo-worker's cuda runtime found
        # these on an H200); CUDA itself started before (cuda_start).
        reads += ["/proc/devices", "/sys/module/nvidia", "/proc/sys/vm/mmap_min_addr"]
        writes += ["/dev/" + n for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")]
    try:
        ktw.sb_landlock(j["st"], j["notes"], reads, writes)
        ktw.sb_seccomp(j["st"], j["notes"])
    except OSError as e:
        raise Fail("the torch candidate worker's sandbox could not be set up (%s); kevo does "
                   "not run a candidate without it" % e)


# Stage 3: no new processes (threads only). x86_64 syscall numbers.
NR_CLONE, NR_FORK, NR_VFORK, NR_EXECVE, NR_EXECVEAT, NR_CLONE3 = 56, 57, 58, 59, 322, 435
CLONE_THREAD = 0x10000
JSET = 0x45


def noproc_filter():
    ld, jeq, ret = ktw.LD_ABS, ktw.JEQ, ktw.RET
    eperm, allow = ktw.RET_EPERM, ktw.RET_ALLOW
    enosys = 0x00050000 | 38  # clone3: ENOSYS, so that threads are made with clone
    f = [(ld, 0, 0, 4), (jeq, 1, 0, 0xC000003E), (ret, 0, 0, ktw.RET_KILL), (ld, 0, 0, 0)]
    for nr in (NR_FORK, NR_VFORK, NR_EXECVE, NR_EXECVEAT):
        f += [(jeq, 0, 1, nr), (ret, 0, 0, eperm)]
    f += [(jeq, 0, 1, NR_CLONE3), (ret, 0, 0, enosys)]
    # clone: a thread (CLONE_THREAD in flags, args[0]'s low word) or nothing
    f += [(jeq, 0, 3, NR_CLONE), (ld, 0, 0, 16), (JSET, 1, 0, CLONE_THREAD), (ret, 0, 0, eperm)]
    f += [(ret, 0, 0, allow)]
    return f


def live_children():
    """This process's children (with the subreaper, every descendant whose
    parent died is one), zombies reaped first."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            break
    kids = []
    try:
        for tid in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/children" % tid) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def sb_lock3():
    """Stage 3 (module docstring): raises Fail when the candidate left a
    process running (killed first)."""
    kids = live_children()
    if kids:
        for k in kids:
            try:
                os.kill(k, 9)
            except OSError:
                pass
        raise Fail("the candidate left %d process%s running after ModelNew was built (pid %s); "
                   "a candidate may start compilers while it loads, never a process that "
                   "stays" % (len(kids), "" if len(kids) == 1 else "es",
                              ", ".join(map(str, kids[:4]))))
    j = ktw.jail
    if not j["on"]:
        return
    if platform.machine() != "x86_64":
        j["notes"].append("no-process filter: written for x86_64")
        return
    prog = noproc_filter()
    raw = b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in prog)
    fbuf = ctypes.create_string_buffer(raw, len(raw))
    fprog = struct.pack("=HxxxxxxQ", len(prog), ctypes.addressof(fbuf))
    pbuf = ctypes.create_string_buffer(fprog, len(fprog))
    if ktw.sb_syscall(317, 1, 1, pbuf) != 0:  # SECCOMP_SET_MODE_FILTER, TSYNC
        raise Fail("the no-process filter could not be set: %s" % ktw.sb_errno())
    j["st"]["no_process"] = "active"


# ---- the task's construction, without its Model ----

KEEP = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.FunctionDef)


class Construction:
    """get_init_inputs() per size set, and how many of the task's inputs are
    forward's (the rest are Model's weights), from reference.py less every
    class (Model) and every statement but imports, assignments and
    functions: never the module kevo judges against."""

    def __init__(self, src, path):
        tree = ast.parse(src.decode("utf-8"), filename=path)
        tree.body = [st for st in tree.body if isinstance(st, KEEP)]
        self.tree = tree
        self.consts = kimp.base_constants(tree)
        self.path = path
        self.nfwd = None

    def namespace(self, lay):
        values = dict(self.consts)
        for p, (name, role, _) in enumerate(ktw.params):
            if role == 3:
                values[name] = int(lay.sizes[p])
        ns = {"__name__": "kevo_task_construction"}
        exec(compile(kimp.with_constants(self.tree, values), self.path, "exec"), ns)
        return ns

    def init_inputs(self, lay):
        ns = self.namespace(lay)
        if self.nfwd is None:
            ins = ns["get_inputs"]()
            self.nfwd = sum(1 for x in ins if isinstance(x, torch.Tensor))
        return list(ns["get_init_inputs"]())


# ---- ModelNew ----

def load_candidate(path):
    with open(path, "rb") as f:
        src = f.read().decode("utf-8")
    try:
        code = compile(src, path, "exec")
    except SyntaxError as e:
        raise Fail("the candidate has a syntax error at line %s: %s" % (e.lineno, e.msg))
    mod = types.ModuleType("kevo_candidate")
    mod.__file__ = path
    sys.modules["kevo_candidate"] = mod
    try:
        exec(code, mod.__dict__)
    except Exception as e:
        raise Fail("importing the candidate raised %s: %s" % (type(e).__name__, str(e)[:400]))
    cls = mod.__dict__.get("ModelNew")
    if not isinstance(cls, type) or not issubclass(cls, torch.nn.Module):
        raise Fail("the candidate defines no class ModelNew(torch.nn.Module)")
    return cls


class EmptyModel:
    """kevo's empty entry: forward returns the outputs' tensors, made once,
    so a phase of it costs what a candidate's phase costs besides forward
    (views, weight binds, the copy of the outputs)."""

    def __init__(self, lay, weights):
        self.outs = [torch.empty(lay.dims[p], dtype=ktw.torch_dtype(ktw.params[p][2]))
                     for p in range(len(ktw.params)) if ktw.params[p][1] in (1, 2)]
        self.weights = weights

    def __call__(self, *args):
        return self.outs if len(self.outs) != 1 else self.outs[0]


def weight_params():
    """The task's inputs that are Model's weights (not packed), after
    forward's."""
    ins = [p for p, (_, role, _) in enumerate(ktw.params) if role == 0 and p not in ktw.packs]
    return ins[:state["ref"].nfwd], ins[state["ref"].nfwd:]


def binds_for(model, lay, where):
    """(tensor, param, shape, pack offset or None, own) for each of the task's
    weights. own: a buffer of ModelNew's (BatchNorm's running statistics),
    which forward may update in place as Model's does in training mode: it
    gets a copy of kevo's bytes each call, so that what Model may do is no
    input_mutated; parameters are kevo's bytes themselves."""
    bufs = {id(b) for _, b in model.named_buffers()}
    named = {}
    for n, w in list(model.named_parameters()) + list(model.named_buffers()):
        named.setdefault(n, w)
    byflat = {}
    for n, w in named.items():
        byflat.setdefault(n.replace(".", "_"), (n, w))
    binds = []
    for p, names in ktw.packs.items():
        off = 0
        for n in names:
            w = named.get(n)
            if w is None:
                raise Fail("%s: ModelNew has no parameter or buffer %s, which task.json's %s "
                           "packs; keep Model's names (kevo binds the task's weights to them)"
                           % (where, n, ktw.params[p][0]))
            binds.append((w, p, tuple(w.shape), off, id(w) in bufs))
            off += w.numel()
    _, wps = weight_params()
    for p in wps:
        name = ktw.params[p][0]
        hit = byflat.get(name)
        if hit is None:
            raise Fail("%s: ModelNew has no parameter or buffer for task.json's weight %s "
                       "(%d elements); keep Model's parameter names and shapes (kevo binds the "
                       "task's weights, drawn afresh for every call, to them)"
                       % (where, name, int(lay.nelem[p])))
        n, w = hit
        if w.numel() != int(lay.nelem[p]):
            raise Fail("%s: ModelNew's %s has %d elements, task.json's %s has %d"
                       % (where, n, w.numel(), name, int(lay.nelem[p])))
        binds.append((w, p, tuple(w.shape), None, id(w) in bufs))
    return binds


def model_for(lay):
    if lay.key in models:
        return models[lay.key]
    ref = state["ref"]
    where = "at " + " ".join("%s=%d" % (n, int(lay.sizes[p]))
                             for p, (n, r, _) in enumerate(ktw.params) if r == 3)
    try:
        init = ref.init_inputs(lay)
    except Exception as e:
        raise Fail("%s: the task's get_init_inputs() raised %s: %s"
                   % (where, type(e).__name__, e))
    fwd, wps = weight_params()
    outs = [p for p, (_, role, _) in enumerate(ktw.params) if role in (1, 2)]
    fin = [p for p, (_, role, _) in enumerate(ktw.params) if p in fwd or role == 4]
    if state["empty"]:
        m = EmptyModel(lay, None)
        # the same number of binds as a candidate's, on stand-ins
        binds = [(torch.nn.Parameter(torch.empty(lay.dims[p],
                                                 dtype=ktw.torch_dtype(ktw.params[p][2])),
                                     requires_grad=False), p, tuple(lay.dims[p]), None, False)
                 for p in wps]
        entry = (m, fin, binds, outs)
    else:
        try:
            torch.manual_seed(0)
            m = state["cand"](*init)
            if state["dev"] is not None:
                m = m.to(state["dev"])
        except Exception as e:
            raise Fail("%s: building ModelNew(*get_init_inputs()) raised %s: %s"
                       % (where, type(e).__name__, str(e)[:400]))
        entry = (m, fin, binds_for(m, lay, where), outs)
    models[lay.key] = entry
    return entry


def typed(raw, p, lay):
    """Param p's tensor (its dtype and shape) over raw: bytes of kevo's memory
    (a uint8 view) or a buffer of this process's own."""
    dt = ktw.torch_dtype(ktw.params[p][2])
    if not lay.nbytes[p]:
        return torch.empty(lay.dims[p], dtype=dt)
    t = raw if raw.dtype == dt else raw.view(dt)
    return t.view(lay.dims[p])


def plain(x):
    return type(x) is torch.Tensor


def call(lay, raws):
    """One forward on raws (uint8 views of kevo's memory, cpu), its outputs
    copied into the output views. Returns forward's ns on this process's
    clock (informative only)."""
    model, fin, binds, outs = model_for(lay)
    dev = state["dev"]
    args, back = [], []  # back (GPU): (kevo's bytes, the device copy) of each input
    for p in fin:
        if p in ktw.scalars:
            args.append(ktw.scalar_arg(p))
        else:
            t = typed(raws[p], p, lay)
            args.append(t if dev is None else t.to(dev))  # the candidate's own copy (GPU)
            if dev is not None:
                back.append((t, args[-1]))
    for w, p, shape, off, own in binds:
        t = typed(raws[p], p, lay)
        if off is not None:
            t = t.view(-1)[off:off + w.numel()]
        t = t if tuple(t.shape) == shape else t.view(shape)
        if own:  # a buffer: its own copy (binds_for)
            w.data = t.clone() if dev is None else t.to(dev)
            continue
        w.data = t if dev is None else t.to(dev)
        if dev is not None:
            back.append((t, w.data))
    with torch.no_grad():
        t0 = _ns()
        res = model(*args)
        if dev is not None:
            torch.cuda.synchronize()
        t1 = _ns()
    # GPU: the inputs and weights as the call left them go back too, so that
    # an input changed on the device is the input_mutated it would be in
    # kevo's own memory.
    for host, d in back:
        host.copy_(d)
    res = list(res) if isinstance(res, (list, tuple)) else [res]
    if len(res) != len(outs):
        raise Fail("ModelNew.forward returned %d outputs, task.json has %d" % (len(res), len(outs)))
    for r, p in zip(res, outs):
        # A plain tensor: a subclass could compute in its copy (after forward's clock).
        if not plain(r):
            raise Fail("ModelNew.forward's output for %s is a %s, not a plain torch.Tensor"
                       % (ktw.params[p][0], type(r).__name__))
        if r.numel() != int(lay.nelem[p]):
            raise Fail("ModelNew.forward's output for %s has %d elements, task.json says %d"
                       % (ktw.params[p][0], r.numel(), int(lay.nelem[p])))
        if lay.nbytes[p]:
            typed(raws[p], p, lay).copy_(r.reshape(lay.dims[p]))
    return t1 - t0


def own_buffers(lay, seed):
    """Buffers of this process (not kevo's memory) with kevo's inputs of
    seed: the warm-up call at LOAD that triggers JIT compiles."""
    raws = ktw.buffers(lay)
    ktw.fresh(lay, raws, seed, 0)
    return raws


# ---- jobs ----

def ensure_torch():
    global torch, kimp
    if torch is None:
        import torch as t
        torch = t
        ktw.torch = t
        torch.set_grad_enabled(False)
    if kimp is None:
        import kevo_import as k
        kimp = k
        ktw.kimp = k


def cuda_start():
    """CUDA's context, and Triton's driver where Triton is installed, made
    before stage 2, as the reference worker makes them at HELLO: under
    Landlock cuInit fails (torch: "Unexpected error from cudaGetDeviceCount",
    seen on an H200); once made, the driver works on the descriptors it
    opened. Nothing of the candidate has been read yet."""
    ensure_torch()
    try:
        torch.cuda.init()
        torch.cuda.set_device(0)
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    except Exception as e:
        raise Fail("torch cannot use the GPU: %s: %s" % (type(e).__name__, e))
    try:
        import triton
        triton.runtime.driver.active.get_current_device()
    except Exception:  # no Triton here, or an older one: the candidate's own import says
        pass


def prepare(req):
    """What LOAD (or the empty entry's first phase) needs before any code of
    the task or the candidate: reference.py read, stage 2, torch."""
    ref = req.get("reference")
    if not isinstance(ref, str):
        raise Fail("bad LOAD request (no reference)")
    cand = req.get("path") if not req.get("empty") else None
    if not state["locked"]:
        cache_env(ktw.jail["scratch"] if ktw.jail["on"] else os.getcwd())
        # Read before Landlock: the task's directory is not readable after it.
        try:
            tree_src = open(ref, "rb").read()
        except OSError as e:
            raise Fail("%s: %s" % (ref, e.strerror))
        if state["surface"] == "cuda":
            cuda_start()
        sb_lock2(os.path.realpath(cand) if cand else None)
        state["locked"] = True
        ensure_torch()
        try:
            state["ref"] = Construction(tree_src, ref)
        except (SyntaxError, UnicodeDecodeError) as e:
            raise Fail("%s: %s" % (ref, e))
        if state["surface"] == "cuda":
            state["dev"] = torch.device("cuda", 0)
    return cand


def listed_layouts():
    lays = []
    for bench, n in ((0, "check"), (1, "bench")):
        i = 0
        while True:
            try:
                lays.append(ktw.Layout(bench, i))
            except ktw.Fail:
                break
            i += 1
    return lays


def handle_load(req):
    if req.get("slot") != 0 or state["cand"] is not None or (state["empty"] and models):
        raise Fail("bad LOAD request (one candidate per worker, in slot 0)")
    t0 = _ns()
    cand = prepare(req)
    lays = listed_layouts()
    if not lays:
        raise Fail("the task has no size set")
    state["ref"].init_inputs(lays[0])  # forward's inputs counted on the smallest set
    if req.get("empty"):
        state["empty"] = True
        ktw.reply({"empty": True})
        return
    state["cand"] = load_candidate(cand)
    # Every listed size once, on this process's own buffers: Triton's JIT
    # and load_inline's build happen now, before stage 3, and kevo reports
    # this LOAD's wall apart from every timed call.
    for lay in lays:
        call(lay, own_buffers(lay, 1))
    sys.stdout.flush()
    sb_lock3()
    st = dict(ktw.jail["st"] or {})
    ktw.reply({"torch": torch.__version__, "jit_s": (_ns() - t0) * 1e-9,
               "layouts": len(lays), "sandbox": st})


def map_fd(store, fd, nbytes):
    if store["len"] != nbytes:
        # (another bench size: a new mapping; the old one goes with its views)
        store["map"] = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        store["len"] = nbytes
        store["whole"] = torch.frombuffer(store["map"], dtype=torch.uint8)
    return store["whole"]


def views(whole, base, offs, lay):
    return {p: whole[base + offs[p]: base + offs[p] + lay.nbytes[p]]
            for p in range(len(ktw.params)) if ktw.is_buffer(ktw.params[p][1])}


def handle_check(req):
    if state["cand"] is None or not req.get("shm"):
        raise Fail("bad CHECK request (the torch candidate worker calls ModelNew on kevo's check "
                   "memory only, after its LOAD)")
    lay = ktw.pick(req)
    calls, nbytes = req.get("calls"), req.get("shm_bytes")
    if not isinstance(calls, list) or len(calls) != 1 or not isinstance(nbytes, int):
        raise Fail("bad CHECK request (one call on the check memory)")
    offs = (ctypes.c_size_t * ktw.MAXP)()
    per = ktw.rt.kvpy_check_layout(ktw.task, lay.nelem, offs)
    if per > nbytes:
        raise Fail("bad CHECK request (%d bytes in %d)" % (per, nbytes))
    whole = map_fd(chk, CHECK_FD, nbytes)
    ns = call(lay, views(whole, 0, offs, lay))
    sys.stdout.flush()
    sys.stderr.flush()
    ktw.reply({"call_ns": [ns]})  # "returned": kevo reads the memory itself


def gpu_time_hook(req, lay, m):
    """The GPU's timed calls: to come on device buffers a clean kevo-worker
    owns and shares through CUDA IPC (issue 28's cuda work), so that kevo
    validates a timed call's outputs from memory this process cannot touch
    once it is stopped. Until then the torch surface times on the CPU."""
    raise Fail("the torch surface does not time on the GPU yet: its timed calls need device "
               "buffers owned by a clean worker (CUDA IPC, issue 28); judge with --no-timing "
               "or on the CPU")


def handle_init(req):
    models.clear()
    ktw.handle_init(req)


def handle_time(req):
    lay = ktw.pick(req)
    slot, m, nbytes = req.get("slot"), req.get("calls"), req.get("shm_bytes")
    if not isinstance(m, int) or not 1 <= m <= 4096 or not isinstance(nbytes, int):
        raise Fail("bad TIME request")
    if slot == -1 and not state["empty"]:
        raise Fail("kevo's empty entry runs in a worker that loaded it (LOAD empty)")
    if slot not in (0, -1) or (state["cand"] is None and not state["empty"]):
        raise Fail("bad TIME request (nothing loaded in slot %r)" % (slot,))
    if state["dev"] is not None:
        gpu_time_hook(req, lay, m)
    offs = (ctypes.c_size_t * ktw.MAXP)()
    per = ktw.rt.kvpy_shm_layout(ktw.task, lay.nelem, offs)
    if per * m > nbytes:
        raise Fail("bad TIME request (%d calls of %d bytes in %d)" % (m, per, nbytes))
    whole = map_fd(shm, SHM_FD, nbytes)
    ns = [call(lay, views(whole, c * per, offs, lay)) for c in range(m)]
    sys.stdout.flush()
    sys.stderr.flush()
    ktw.reply({"ns": ns})


def main():
    args = sys.argv[1:]
    scratch, rtpath, surface, use_sandbox, reads = ".", None, "cpu", True, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--scratch", "--rt", "--surface", "--read") and i + 1 < len(args):
            v = args[i + 1]
            if a == "--read":
                reads.append(v)  # kevo's object cache: not granted, the file alone is
            elif a == "--scratch":
                scratch = v
            elif a == "--rt":
                rtpath = v
            else:
                surface = v
            i += 2
        elif a == "--no-sandbox":
            use_sandbox = False
            i += 1
        else:
            sys.stderr.write("kevo_torch_cand: unknown argument '%s'\n" % a)
            return 2
    try:
        os.fstat(ktw.REQ_FD)
        os.fstat(ktw.RESP_FD)
    except OSError:
        sys.stderr.write("kevo_torch_cand: is started by kevo (it talks over descriptors 3 and "
                         "4); run 'kevo eval --surface torch' instead\n")
        return 2
    if surface not in ("cpu", "cuda"):
        sys.stderr.write("kevo_torch_cand: surface '%s': use cpu or cuda\n" % surface)
        return 2
    state["surface"] = surface
    st = {"no_new_privs": "off", "netns": "off", "landlock": "off", "seccomp": "off",
          "rlimits": "off", "file_limit_bytes": 0, "scratch": "off", "no_process": "off"}
    notes = []
    scratch = os.path.abspath(scratch)
    if use_sandbox:
        why = ktw.sb_start(st, notes)
        if why:
            sys.stderr.write("kevo_torch_cand: the sandbox: %s\n" % why)
            return 2
        sb_scratch(st, notes, scratch)
        ktw.jail.update({"on": True, "st": st, "notes": notes, "scratch": scratch,
                         "cuda": surface == "cuda"})
        notes.append("landlock and seccomp at LOAD, before the candidate is read; no new "
                     "processes once ModelNew is built")
    try:
        ktw.load_rt(rtpath or "libkevo_pyrt.so")
        ktw.rt.kvpy_check_layout.restype = ctypes.c_size_t
        ktw.rt.kvpy_check_layout.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64),
                                             ctypes.POINTER(ctypes.c_size_t)]
    except (OSError, AttributeError) as e:
        sys.stderr.write("kevo_torch_cand: cannot load kevo's generator library %s: %s\n"
                         % (rtpath, e))
        return 2
    hello = dict(st)
    hello.update({"pid": os.getpid(), "landlock_abi": 0, "note": "; ".join(notes),
                  "surface": surface, "runtime": "torch-candidate",
                  "python": sys.version.split()[0]})
    ktw.send(ktw.HELLO, hello)
    handlers = {ktw.INIT: handle_init, ktw.LOAD: handle_load, ktw.CHECK: handle_check,
                ktw.TIME: handle_time}
    while True:
        typ, tok, js = ktw.read_frame()
        ktw.token = tok
        if typ == ktw.QUIT:
            os._exit(0)
        try:
            req = ktw.json.loads(js)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError:
            ktw.reply_error("request is not JSON")
            continue
        h = handlers.get(typ)
        try:
            if h is None:
                raise Fail("the torch candidate worker does not do request type %d" % typ)
            h(req)
        except ktw.Fail as e:
            ktw.reply_error(str(e))
        except Exception as e:
            traceback.print_exc(limit=4)
            sys.stderr.flush()
            ktw.reply_error("%s: %s" % (type(e).__name__, str(e)[:600]))


if __name__ == "__main__":
    sys.exit(main())
