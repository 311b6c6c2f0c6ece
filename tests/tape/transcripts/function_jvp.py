"""A custom Function with a jvp (forward mode) and with two outputs, as PyTorch calls them."""

import torch

fwAD = torch.autograd.forward_ad


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y, k):
        print("forward sees a tangent:", fwAD.unpack_dual(x).tangent is not None)
        ctx.save_for_forward(x, y)
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y * k

    @staticmethod
    def jvp(ctx, tx, ty, tk):
        print("jvp got", tx, ty, tk)
        x, y = ctx.saved_tensors
        return (tx * y + x * ty) * ctx.k

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y * ctx.k, g * x * ctx.k, None


class Pair(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2, x * 3

    @staticmethod
    def jvp(ctx, t):
        return t * 2, t * 3

    @staticmethod
    def backward(ctx, a, b):
        return a * 2 + b * 3


with fwAD.dual_level():
    d = fwAD.make_dual(torch.tensor([1.0, 0.5]), torch.tensor([1.0, 2.0]))
    print(Scale.apply(d, torch.full((2,), 3.0), 2.0))
    print(Pair.apply(d))
x = torch.tensor([1.0, 0.5], requires_grad=True)
a, b = Pair.apply(x)
(a + b).sum().backward()
print(x.grad)
