"""A module whose forward is random: training-mode Dropout (kevo task check
refuses it: two calls on the same inputs differ)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc = nn.Linear(64, 32)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.fc(x))


batch_size = 128


def get_inputs():
    return [torch.randn(batch_size, 64)]


def get_init_inputs():
    return [0.5]
