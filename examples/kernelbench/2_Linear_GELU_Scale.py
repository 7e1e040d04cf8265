import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 2 (a fused chain): Linear, then GELU, then a scale by a constant."""

    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.fc(x)
        x = torch.nn.functional.gelu(x)
        return x * self.scale


batch_size = 1024
in_features = 2048
out_features = 4096
scale = 0.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
