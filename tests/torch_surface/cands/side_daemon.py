# A process left behind: the module starts a child in a session of its own at
# import (meant to outlive kevo's SIGSTOP of the worker and write into its
# memory later). kevo finds it once ModelNew is built, kills it and refuses
# the candidate: load_error.
import subprocess

import torch.nn as nn
import torch.nn.functional as F

subprocess.Popen(["/bin/sleep", "30"], start_new_session=True)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return F.relu(F.linear(x, self.fc.weight, self.fc.bias)) * self.scale
