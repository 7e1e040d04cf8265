# Work deferred to the copy after forward: forward returns a tensor subclass
# that computes the answer only when it is read (here, whenever any torch
# function touches it), after forward's clock stopped. kevo takes plain
# tensors only: refused (crash, naming the type).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Lazy(torch.Tensor):
    @staticmethod
    def __new__(cls, shape, thunk):
        t = torch.Tensor._make_subclass(cls, torch.zeros(shape))
        t.thunk = thunk
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = tuple(a.thunk() if isinstance(a, Lazy) else a for a in args)
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        w, b = self.fc.weight, self.fc.bias
        return Lazy((x.shape[0], w.shape[0]), lambda: F.relu(F.linear(x, w, b)) * self.scale)
