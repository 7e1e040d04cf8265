# Honest on a packed network (tests/torch_surface/deep_task: 36 Linear weights packed, a
# BatchNorm whose running statistics training mode updates in place, as Model's
# do, and a Python float): ok.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, hidden, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(depth)])
        self.norm = nn.BatchNorm1d(hidden)

    def forward(self, x, scale):
        x = self.norm(x)
        n = len(self.layers)
        for i, layer in enumerate(self.layers):
            x = F.linear(x, layer.weight, layer.bias)
            if i + 1 < n:
                x = F.relu(x)
        return x * scale
