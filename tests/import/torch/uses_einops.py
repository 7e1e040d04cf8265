# A module that imports einops (as KernelBench's Mamba2 problems do).
import torch
from einops import rearrange

n = 64


class Model(torch.nn.Module):
    def forward(self, x):
        return rearrange(x, "(a b) c -> a (b c)", a=2) * 3


def get_inputs():
    return [torch.randn(n, n)]


def get_init_inputs():
    return []
