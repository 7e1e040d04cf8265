# Honest, plain PyTorch: Model's operators in another order (judged ok).
import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.relu(torch.addmm(self.fc.bias, x, self.fc.weight.t())) * self.scale
