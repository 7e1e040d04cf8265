# Model's BatchNorm renamed (norm -> bn): kevo binds the task's weights by Model's
# names, so this ModelNew would run on weights of its own: load_error, naming it.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, hidden, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(depth)])
        self.bn = nn.BatchNorm1d(hidden)

    def forward(self, x, scale):
        x = self.bn(x)
        n = len(self.layers)
        for i, layer in enumerate(self.layers):
            x = F.linear(x, layer.weight, layer.bias)
            if i + 1 < n:
                x = F.relu(x)
        return x * scale
