# A network with more weights than an entry's 32 params (18 Linear layers:
# 36 weights), a BatchNorm (its running statistics are buffers), and a Python
# float in get_inputs(): kevo import packs the weights into read-only
# buffers and passes the float as a scalar param (tests/import/pack.sh).
import torch
import torch.nn as nn

batch_size = 16
hidden = 32


class Model(nn.Module):
    def __init__(self, hidden, depth):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(depth)])
        self.norm = nn.BatchNorm1d(hidden)

    def forward(self, x, scale):
        x = self.norm(x)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i + 1 < len(self.layers):
                x = torch.relu(x)
        return x * scale


def get_inputs():
    return [torch.rand(batch_size, hidden), 0.5]


def get_init_inputs():
    return [hidden, 18]
