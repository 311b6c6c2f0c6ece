"""Values from the autograd tutorials (TORCH_SEMANTICS.md section 1).

The scripts themselves (examples/tutorial_*.py) are run and compared with
PyTorch's transcript line for line in tests/test_examples.py.
"""

import contextlib
import io
import warnings


from _taped import mask_addresses

def run(source: str) -> tuple[str, dict]:
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exec(compile(source, "<tutorial>", "exec"), namespace)
    return out.getvalue(), namespace


def test_the_doubling_loop_with_the_tutorial_values_stops_after_ten_doublings():
    import astgrad.torch as torch

    # the values PyTorch's seed 7 draws; the loop stops at 1024 as in section 1
    x = torch.tensor([-0.1468, 0.7861, 0.9468], requires_grad=True)
    y = x * 2
    while y.data.norm() < 1000:
        y = y * 2
    v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
    y.backward(v)
    assert repr(x.grad) == "tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])"
    assert repr(x.grad / v) == "tensor([1024., 1024., 1024.])"
    assert repr(y.data.norm() < 1000) == "tensor(False)"


def test_related_values_of_section_one():
    import astgrad.torch as torch

    assert repr(torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)) == "tensor([1.0000e-01, 1.0000e+00, 1.0000e-04])"
    x = torch.ones(2, 2, requires_grad=True)
    out = ((x + 2) * (x + 2) * 3).mean()
    out.backward()
    assert str(x.grad == 4.5) == "tensor([[True, True],\n        [True, True]])"
    assert repr((x.grad == 4.5).all()) == "tensor(True)"
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x.detach()
    assert repr(x.eq(y)) == "tensor([True, True, True])"
    assert torch.equal(x, y) is True
    a = torch.tensor([[8.5453, 0.6806], [2.0562, -3.9514]])
    assert a.requires_grad_(True) is a
    assert repr(a) == "tensor([[ 8.5453,  0.6806],\n        [ 2.0562, -3.9514]], requires_grad=True)"


ARTICLE = '''
import astgrad.torch as torch
x = torch.ones(2, 2, requires_grad=True)
y = x + 2
z = y * y * 3
out = z.mean()
out.backward()
print(x.grad)
d = x.detach()
print(d.requires_grad, x.eq(d).all())
'''


def test_article_steps():
    text, _ = run(ARTICLE)
    assert text == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\nFalse tensor(True)\n"


LEGACY = '''
import astgrad.torch as torch
from astgrad.torch.autograd import Variable
x = Variable(torch.ones(2, 2), requires_grad=True)
print(x)
y = x + 2
print(y.creator)
z = y * y * 3
out = z.mean()
out.backward()
print(x.grad)
print(x.data)
x = torch.randn(3)
x = Variable(x, requires_grad=True)
y = x * 2
gradients = torch.FloatTensor([0.1, 1.0, 0.0001])
y.backward(gradients)
print(x.grad)
'''


def test_legacy_variable_tutorial():
    text, ns = run(LEGACY)
    assert mask_addresses(text) == (
        "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)\n"
        "<AddBackward0 object at 0x...>\n"
        "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])\n"
        "tensor([[1., 1.],\n        [1., 1.]])\n"
        "tensor([2.0000e-01, 2.0000e+00, 2.0000e-04])\n"
    )
    assert type(ns["x"]).__name__ == "Tensor"


def test_creator_is_a_deprecated_alias_naming_grad_fn():
    import pytest

    import astgrad.torch as torch

    x = torch.ones(2, requires_grad=True)
    y = x + 2
    with pytest.warns(DeprecationWarning, match="grad_fn"):
        assert y.creator is y.grad_fn
