# Side effects from the constructor and from forward: the constructor tries
# the network and writes outside the scratch (refused), forward tries to start
# a process (fork, a subprocess: refused once ModelNew is built). Otherwise
# honest: ok, with every attempt blocked.
import os
import socket
import subprocess
import sys

import torch.nn as nn
import torch.nn.functional as F

tried = set()


def report(what, fn):
    try:
        fn()
        print("ESCAPED: %s" % what, file=sys.stderr)
    except OSError as e:
        print("blocked: %s (%s)" % (what, e.strerror or e), file=sys.stderr)


def tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect(("::1", 22))


def write(path):
    with open(path, "w") as f:
        f.write("pwned")


def fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale
        if "ctor" not in tried:
            tried.add("ctor")
            report("tcp6 ::1 from the constructor", tcp6)
            report("write /tmp from the constructor",
                   lambda: write("/tmp/kevo-torch-surface-pwned-ctor"))

    def forward(self, x):
        if "fwd" not in tried and in_check_memory(x.data_ptr()):  # a check call: after LOAD
            tried.add("fwd")
            report("fork from forward", fork)
            report("subprocess from forward", lambda: subprocess.run(["/bin/true"], check=True))
        return F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale


def in_check_memory(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= addr < hi:
                return "kevo-check" in line
    return False
