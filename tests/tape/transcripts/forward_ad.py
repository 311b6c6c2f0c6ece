"""Dual tensors, as PyTorch's forward-mode AD tutorial uses them."""

import torch

fwAD = torch.autograd.forward_ad

primal = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
tangent = torch.tensor([[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]])


def fn(x, y):
    return x ** 2 + y ** 2


try:
    fwAD.make_dual(primal, tangent)
except RuntimeError as error:
    print("RuntimeError:", error)

model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
with torch.no_grad():
    for k, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1.0, 1.0, p.numel()).reshape(p.shape) * (k + 1) / 4)
        p.requires_grad_(False)  # PyTorch's tangent would carry a grad_fn through parameters that require grad

with fwAD.dual_level():
    dual_input = fwAD.make_dual(primal, tangent)
    print(dual_input)
    plain_tensor = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    dual_output = fn(dual_input, plain_tensor)
    print(dual_output)
    jvp = fwAD.unpack_dual(dual_output).tangent
    print(jvp)
    print(fwAD.unpack_dual(dual_output))
    print(type(fwAD.unpack_dual(dual_output)).__name__, fwAD.unpack_dual(dual_output)._fields)
    print(fwAD.unpack_dual(plain_tensor).tangent)
    print(fwAD.unpack_dual(dual_input).tangent is tangent)

    print(torch.sin(dual_input).sum(dim=1))
    print(dual_input.exp().mean(dim=0))
    print(dual_input @ plain_tensor.T)
    print(torch.softmax(dual_input, dim=1))
    print(dual_input[0], dual_input[:, 1:])
    print(torch.cat([dual_input, plain_tensor]).sum(dim=1))
    print(dual_input.argmax(), dual_input > 0)
    print(torch.relu(dual_input).max())
    print(dual_input.double())

    w = torch.full((2, 3), 0.5, requires_grad=True)
    print(w + dual_input)
    print((w * dual_input).sum())
    out = model(dual_input)
    print(out)
    print(fwAD.unpack_dual(out).tangent)
    frozen = model(dual_input.detach())
    print(frozen, fwAD.unpack_dual(frozen).tangent)

    for bad in (torch.ones(3), torch.ones(2, 3, dtype=torch.int64)):
        try:
            fwAD.make_dual(primal, bad)
        except (RuntimeError, ValueError) as error:
            print(type(error).__name__ + ":", error)
    try:
        fwAD.make_dual(torch.tensor([1, 2]), torch.tensor([1, 2]))
    except ValueError as error:
        print("ValueError:", error)
    try:
        with fwAD.dual_level():
            pass
    except RuntimeError as error:
        print("RuntimeError:", error)

print(fwAD.unpack_dual(dual_output).tangent)
print(dual_output)
