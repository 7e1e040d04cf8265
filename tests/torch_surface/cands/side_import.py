# Import-time side effects: the network (TCP to the internet and to this host,
# UDP, a Unix socket) and writes outside the scratch directory (kevo's cache,
# /tmp, /dev/shm, the candidate's own stored file). Each is refused; the
# module is otherwise honest (ok), and the test checks nothing was written.
import os
import socket
import sys

import torch.nn as nn
import torch.nn.functional as F


def report(what, fn):
    try:
        fn()
        print("ESCAPED: %s" % what, file=sys.stderr)
    except OSError as e:
        print("blocked: %s (%s)" % (what, e.strerror or e), file=sys.stderr)


def tcp(host):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect((host, 80))


def udp():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 53))


def unix():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("/run/systemd/private")


def write(path):
    with open(path, "w") as f:
        f.write("pwned")


report("tcp 1.1.1.1", lambda: tcp("1.1.1.1"))
report("tcp 127.0.0.1", lambda: tcp("127.0.0.1"))
report("udp", udp)
report("unix socket", unix)
cache = os.path.dirname(os.path.dirname(os.environ.get("HOME", "/")))
for p in (os.path.join(cache, "kevo-torch-surface-pwned"), "/tmp/kevo-torch-surface-pwned",
          "/dev/shm/kevo-torch-surface-pwned", __file__):
    report("write " + p, lambda p=p: write(p))
report("write scratch (allowed)", lambda: write(os.path.join(os.environ["HOME"], "mine")))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
