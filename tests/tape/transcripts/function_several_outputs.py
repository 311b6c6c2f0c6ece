"""A custom Function whose forward returns two tensors: backward gets both gradients, zeros for the unused one."""

import torch

class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        print("backward called with", g_sin, g_cos)
        return g_sin * x.cos() - g_cos * x.sin()

x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
s, c = SinCos.apply(x)
print(s, c)
print(s.grad_fn.name(), type(s.grad_fn).__name__)
(s * 2 + c * 3).sum().backward()
print(x.grad)
x.grad = None
s, c = SinCos.apply(x)
s.sum().backward()
print(x.grad)
x.grad = None
s, c = SinCos.apply(x)
(s * c).sum().backward()
print(x.grad)
s, c = SinCos.apply(torch.tensor([1.0]))
print(s, c)
