"""The pre-0.4 autograd tutorial with ``Variable``, run on astgrad.

The only changes from the original are the two import lines.  ``Variable``
returns a plain Tensor, as in modern PyTorch; ``.creator`` is kept as a
deprecated alias of ``.grad_fn`` so this script still runs.
"""
import warnings

import astgrad.torch as torch
from astgrad.torch.autograd import Variable

warnings.simplefilter("ignore", DeprecationWarning)  # .creator is deprecated; the tutorial uses it
torch.manual_seed(7)

x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)

y = x + 2
print(y)

# y was created as a result of an operation, so it has a creator.
print(y.creator)

z = y * y * 3
out = z.mean()
print(z, out)

out.backward()
print(x.grad)

x = torch.randn(3)
x = Variable(x, requires_grad=True)

y = x * 2
while y.data.norm() < 1000:
    y = y * 2

print(y)

gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)

print(x.grad)
print(x.data)
