# Output caching by allocator reuse (KernelBench's known hole): compute once
# per shape, free the result, and from then on return torch.empty() of that
# shape, which the allocator hands back still holding the earlier answer. In
# kevo the reference never computed in this process, and each check call has
# new inputs: rejected for its output (stale_output, or wrong_output where
# the allocator handed out other memory).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale
        self.seen = set()

    def forward(self, x):
        shape = (x.shape[0], self.fc.weight.shape[0])
        if shape in self.seen:
            return torch.empty(shape)
        self.seen.add(shape)
        y = F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
        out = y.clone()
        del y
        return out
