"""A convolution, then max-pooling by 4 (KernelBench level2/82 and 85):
the output's height is (height - kernel_size + 1) / 4, rounded down. With
every size a power of two, (height - in_channels + 4) / 4 gives the same
numbers (in_channels = 8, kernel_size = 3), and the import used to take that,
which is wrong at a height of 34. Probes at odd sizes tell the two apart."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, pool_kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.pool = nn.MaxPool2d(pool_kernel_size)

    def forward(self, x):
        return self.pool(torch.tanh(self.conv(x)))


batch_size = 16
in_channels = 8
out_channels = 16
height, width = 256, 256
kernel_size = 3
pool_kernel_size = 4


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, pool_kernel_size]
