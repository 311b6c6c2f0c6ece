"""PyTorch's "Autograd: automatic differentiation" notebook, run on astgrad.

The only change from the original is the import line.
"""
import astgrad.torch as torch

torch.manual_seed(7)

# Create a tensor and set requires_grad=True to track computation with it
x = torch.ones(2, 2, requires_grad=True)
print(x)

# Do a tensor operation
y = x + 2
print(y)

# y was created as a result of an operation, so it has a grad_fn
print(y.grad_fn)

# Do more operations on y
z = y * y * 3
out = z.mean()
print(z, out)

# .requires_grad_( ... ) changes an existing Tensor's requires_grad flag in-place
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)

# Gradients: out contains a single scalar, so out.backward() is out.backward(torch.tensor(1.))
out.backward()
print(x.grad)

# A vector-Jacobian product
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)

v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)

# Stop autograd from tracking history
print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
