# The module of KernelBench level1/12_Matmul_with_diagonal_matrices_,
# rewritten for kevo's compile test of ../../12_Matmul_with_diagonal_matrices_.cu
# (task.json is kevo import's of the original): diag(A) @ B.
import torch

M = 4096
N = 4096


class Model(torch.nn.Module):
    def forward(self, A, B):
        return A[:, None] * B


def get_inputs():
    return [torch.rand(N), torch.rand(N, M)]


def get_init_inputs():
    return []
