import torch


# A Python int or float in get_inputs() is a scalar param (deep_mlp.py's
# scale); a list is neither a tensor nor a number.
class Model(torch.nn.Module):
    def forward(self, x, n):
        return x * n[0]


def get_inputs():
    return [torch.rand(4), [3]]


def get_init_inputs():
    return []
