# Honest with inline C++ (torch.utils.cpp_extension.load_inline), built at import:
# during the LOAD, before stage 3 (g++ and ninja run in the sandbox; about 22 s
# on 2 cores, so run.sh judges it only with KEVO_TORCH_SLOW=1).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
torch::Tensor relu_scale(torch::Tensor y, double s) {
  auto out = torch::empty_like(y);
  auto a = y.contiguous();
  const float *p = a.data_ptr<float>();
  float *o = out.data_ptr<float>();
  for (int64_t i = 0; i < a.numel(); i++) o[i] = (p[i] > 0 ? p[i] : 0) * (float)s;
  return out;
}
"""
ext = load_inline(name="kevo_relu_scale", cpp_sources=src, functions=["relu_scale"],
                  verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return ext.relu_scale(F.linear(x, self.fc.weight, self.fc.bias), self.scale)
