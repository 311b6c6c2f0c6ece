"""PyTorch's losses for regression and binary classification: values, grad_fn names, gradients and errors."""

import numpy as np

import torch

F = torch.nn.functional
x = torch.tensor([[-1.5, 0.2, 3.0], [0.5, -0.1, 0.0]], requires_grad=True, dtype=torch.float64)
y = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.5]], dtype=torch.float64)
class_weight = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64)
positive_weight = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
far = torch.tensor([-800.0, 0.0, 800.0], requires_grad=True)
calls = [
    "F.binary_cross_entropy_with_logits(x, y)",
    "F.binary_cross_entropy_with_logits(x, y, reduction='none')",
    "F.binary_cross_entropy_with_logits(x, y, pos_weight=positive_weight, weight=class_weight)",
    "F.binary_cross_entropy_with_logits(far, torch.tensor([1.0, 0.5, 0.0]))",
    "F.smooth_l1_loss(x, y)",
    "F.smooth_l1_loss(x, y, beta=0.5, reduction='sum')",
    "F.smooth_l1_loss(x, y, beta=0.0)",
    "F.huber_loss(x, y)",
    "F.huber_loss(x, y, delta=0.5, reduction='none')",
    "F.l1_loss(x, y)",
    "F.l1_loss(x, y, reduction='none')",
    "F.l1_loss(x, y, reduction='sum')",
    "torch.nn.BCEWithLogitsLoss(pos_weight=positive_weight)(x, y)",
    "torch.nn.SmoothL1Loss(beta=2.0)(x, y)",
    "torch.nn.HuberLoss(reduction='sum', delta=0.25)(x, y)",
    "torch.nn.L1Loss(reduction='none')(x, y)",
    # errors
    "F.smooth_l1_loss(x, y, beta=-1.0)",
    "F.huber_loss(x, y, delta=0.0)",
    "F.binary_cross_entropy_with_logits(x, torch.zeros(3))",
    "F.huber_loss(x, y, weight=class_weight)",
]
for call in calls:
    try:
        loss = eval(call)
    except Exception as error:
        print(call, "!!", type(error).__name__, ":", error)
        continue
    print(call, "->", repr(loss))
    leaf = far if "far" in call else x
    (gradient,) = torch.autograd.grad(loss.sum(), leaf)
    print("   grad", np.round(gradient.numpy(), 12).tolist())
