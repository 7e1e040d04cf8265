import torch


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.fft.fft(x)


n = 64


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
