"""Embedding, Dropout and LayerNorm: printed modules, values, gradients and errors."""

import numpy as np

import torch

nn = torch.nn
F = nn.functional
print(nn.Embedding(10, 3), nn.Embedding(5, 2, padding_idx=-1), nn.Dropout(0.25), nn.Dropout())
print(nn.LayerNorm(3), nn.LayerNorm([2, 3], eps=1e-6, elementwise_affine=False), nn.LayerNorm(4, bias=False))
print(nn.BCEWithLogitsLoss(), nn.L1Loss(), nn.SmoothL1Loss(beta=0.5), nn.HuberLoss(delta=2.0))
norm = nn.LayerNorm(3)
print(norm.weight, norm.bias)
print(nn.Sequential(nn.Embedding(4, 2), nn.LayerNorm(2), nn.Dropout(0.1)))

table = torch.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
picked = F.embedding(torch.tensor([[1, 2], [1, 0]]), table, padding_idx=1)
print(picked)
picked.sum().backward()
print(table.grad)
layer = nn.Embedding(6, 2, padding_idx=2)
print(layer.weight[2], layer(torch.tensor([2, 3])).shape)

x = torch.tensor([[1.0, 2.0, 4.0], [0.5, -1.0, 3.0]], requires_grad=True)
scale = torch.tensor([1.0, 2.0, 0.5], requires_grad=True)
shift = torch.tensor([0.1, 0.2, 0.3], requires_grad=True)
normed = F.layer_norm(x, (3,), scale, shift)
print(normed)
(normed * torch.tensor([[1.0, -2.0, 0.5], [0.3, 0.2, 0.1]])).sum().backward()
print(np.round(x.grad.numpy(), 5), np.round(scale.grad.numpy(), 5), shift.grad)

dropout = nn.Dropout(0.5)
dropout.eval()
print(dropout(x) is x, F.dropout(x, 0.5, training=False) is x)
for call in ["F.embedding(torch.tensor([4]), table)", "F.embedding(torch.tensor([1.0]), table)", "nn.Dropout(1.5)",
             "F.layer_norm(x, (2,))"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)
torch.manual_seed(0)
dropped = nn.Dropout(0.5)(torch.ones(1000, dtype=torch.float64, requires_grad=True))
print(sorted(set(np.round(dropped.detach().numpy(), 6).tolist())), dropped.grad_fn.name())
print(400 < int((dropped.detach().numpy() == 0).sum()) < 600)
