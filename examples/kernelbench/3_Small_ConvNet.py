import torch
import torch.nn as nn


class Model(nn.Module):
    """Level 3 (a small network): conv, batch norm, ReLU, pooling, conv, global
    average and a classifier. Batch norm in eval mode, so that the reference is
    deterministic and uses its running statistics (buffers)."""

    def __init__(self, in_channels, hidden, num_classes):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, hidden, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(hidden)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(hidden, hidden * 2, kernel_size=3, padding=1)
        self.fc = nn.Linear(hidden * 2, num_classes)
        self.eval()

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = torch.relu(self.conv2(x))
        x = x.mean(dim=(2, 3))
        return self.fc(x)


batch_size = 64
in_channels = 3
hidden = 32
num_classes = 100
height = 64
width = 64


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, hidden, num_classes]
