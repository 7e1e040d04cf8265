# Forge the clock inside the process: time's clocks and the worker's own
# (captured as __main__._ns) run 50x slow, while forward does 40x the work.
# kevo's clock is the parent's, around each phase: the forged times are
# implausible, or raised to what kevo's clock leaves; never a speedup.
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_real = time.perf_counter_ns


def slow_ns():
    return _real() // 50


time.perf_counter_ns = slow_ns
time.perf_counter = lambda: slow_ns() * 1e-9
time.monotonic_ns = slow_ns
main = sys.modules.get("__main__")
if main is not None and hasattr(main, "_ns"):
    main._ns = slow_ns


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        for _ in range(39):
            F.linear(x, self.fc.weight, self.fc.bias).sum()
        return F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
