"""A custom autograd.Function in PyTorch 2's style: forward without ctx, then setup_context."""

import torch

class Cube(torch.autograd.Function):
    @staticmethod
    def forward(x, k):
        return x ** 3 * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k
        print("setup_context sees", type(output).__name__, output.requires_grad)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * ctx.k * g, None

x = torch.tensor([1.0, 2.0], requires_grad=True)
y = Cube.apply(x, 2.0)
print(y, y.grad_fn.name())
y.sum().backward()
print(x.grad)
with torch.no_grad():
    z = Cube.apply(x, 1.0)
print(z, z.requires_grad)

class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2
    @staticmethod
    def setup_context(ctx, inputs, output):
        pass
    @staticmethod
    def backward(ctx, g):
        return g
try:
    Bad.apply(x)
except Exception as e:
    print(type(e).__name__, e)
