# Writing outside the outputs, before an input: four bytes just before x in
# kevo's check memory (the memfd "kevo-check"). The answer is right; the guard
# zone before the input is not: input_mutated, naming the zone.
import ctypes
import torch
import torch.nn as nn
import torch.nn.functional as F


def in_check_memory(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= addr < hi and "kevo-check" in line:
                return addr - lo >= 4
    return False


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
        if in_check_memory(x.data_ptr()):
            ctypes.c_uint32.from_address(x.data_ptr() - 4).value = 0x01020304
        return y
