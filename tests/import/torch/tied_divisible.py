"""A divisibility constraint between two constants: GroupNorm's channels
(out_features = 192 = 3 * 64) must divide by num_groups (64). Each constant
halved to a floor apart gives 12 channels in 8 groups, which does not build
at any floor; halved together (24 in 8, 48 in 16) it does, so the check sizes
are scaled down and each names num_groups, which no shape does (KernelBench
level2/37 was checked with out_features 8 and num_groups 64)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        x = self.matmul(x)
        return self.group_norm(torch.sigmoid(x) * x)


batch_size = 64
in_features = 96
out_features = 192
num_groups = 64


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups]
