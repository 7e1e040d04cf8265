import torch


class NotAModel(torch.nn.Module):
    def forward(self, x):
        return x


def get_inputs():
    return [torch.rand(4)]


def get_init_inputs():
    return []
