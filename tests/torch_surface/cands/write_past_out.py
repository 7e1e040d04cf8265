# Writing outside the outputs: in kevo's check memory (found through
# /proc/self/maps, the mapping of the memfd "kevo-check" that holds the
# input), find the output buffer by its poison and write four bytes just past
# its end. The answer itself is right; the guard zone after the output is
# not: wrong_output, naming the zone.
import ctypes
import torch
import torch.nn as nn
import torch.nn.functional as F

POISON = (0x7FC5A5A5, 0x7FC35A5A)


def check_mapping(addr):
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
            if lo <= addr < hi and "kevo-check" in line:
                return lo, hi
    return None


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
        m = check_mapping(x.data_ptr())
        if m:
            b = self.fc.bias
            a = b.data_ptr() + b.numel() * 4
            while a + 4 <= m[1] and ctypes.c_uint32.from_address(a).value not in POISON:
                a += 4
            end = a + y.numel() * 4
            if end + 4 <= m[1]:
                ctypes.c_uint32.from_address(end).value = 0
        return y
