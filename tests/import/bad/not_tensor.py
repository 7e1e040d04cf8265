import torch


class Model(torch.nn.Module):
    def forward(self, x, n):
        return x * n


def get_inputs():
    return [torch.rand(4), 3]


def get_init_inputs():
    return []
