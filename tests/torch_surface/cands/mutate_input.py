# Input mutation: the right answer, then the input zeroed in place (a
# "workspace" reuse): input_mutated.
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
        x.zero_()
        return y
