# Honest, with a Triton kernel: the GEMM in torch, then one kernel for bias,
# ReLU and scale (on the CPU it runs in Triton's interpreter).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_scale(y_ptr, b_ptr, out_ptr, n, cols, scale, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    y = tl.load(y_ptr + i, mask=m)
    b = tl.load(b_ptr + i % cols, mask=m)
    tl.store(out_ptr + i, tl.maximum(y + b, 0.0) * scale, mask=m)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = torch.mm(x, self.fc.weight.t()).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        bias_relu_scale[(triton.cdiv(n, 1024),)](y, self.fc.bias, out, n, y.shape[1],
                                                 self.scale, BLOCK=1024)
        return out
