"""Equal constants feeding different dims: in_features = out_features, and a
GroupNorm whose channels (out_features) must divide by num_groups, so the
import's probe with every constant a different multiple (GroupNorm(40, 32))
does not build. The weight is still (out_features, in_features) in task.json,
not (in_features, in_features) (KernelBench level2/30 was imported so)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        return torch.relu(self.group_norm(self.gemm(x)))


batch_size = 64
in_features = 256
out_features = 256
num_groups = 16


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups]
