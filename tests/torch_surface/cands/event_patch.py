# Forge the GPU's timers: torch.cuda.Event (elapsed_time says 1 us),
# torch.cuda.synchronize and Event.synchronize made no-ops, while forward does
# 40x the work. kevo times by its own clock around each phase (on the CPU
# and, as in the cuda surface, on the GPU): the forgery changes nothing.
import torch
import torch.nn as nn
import torch.nn.functional as F


class FakeEvent:
    def __init__(self, *a, **k):
        pass

    def record(self, *a, **k):
        pass

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, other):
        return 0.001


torch.cuda.Event = FakeEvent
torch.cuda.synchronize = lambda *a, **k: None
torch.cuda.current_stream = lambda *a, **k: None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        for _ in range(39):
            F.linear(x, self.fc.weight, self.fc.bias).sum()
        return F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
