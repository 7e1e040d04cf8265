# The module of KernelBench level1/100_HingeLoss, rewritten for kevo's compile
# test of ../../100_HingeLoss.cu (task.json is kevo import's of the original).
import torch

batch_size = 32768
input_shape = (32768,)


class Model(torch.nn.Module):
    def forward(self, predictions, targets):
        return (1 - predictions * targets).clamp(min=0).mean()


def get_inputs():
    return [torch.rand(batch_size, *input_shape), torch.randint(0, 2, (batch_size,)).float() * 2 - 1]


def get_init_inputs():
    return []
