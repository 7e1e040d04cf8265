# Weight mutation: the task's weights are inputs (drawn afresh per call, bound
# to ModelNew's parameters); scaling the bias in place after using it is
# input_mutated.
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
        self.fc.bias.data.mul_(0.5)
        return y
