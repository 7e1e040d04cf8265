# The module of KernelBench level1/88_MinGPTNewGelu, rewritten for kevo's
# compile test of ../../88_MinGPTNewGelu.cu (task.json is kevo import's of the
# original): the tanh approximation of GELU.
import math

import torch

batch_size = 8192
dim = 8192


class Model(torch.nn.Module):
    def forward(self, x):
        c = math.sqrt(2.0 / math.pi)
        return 0.5 * x * (1.0 + torch.tanh(c * (x + 0.044715 * x**3)))


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
