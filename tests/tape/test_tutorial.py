"""The three autograd tutorials print what PyTorch prints (TORCH_SEMANTICS.md section 1)."""

import contextlib
import io
import re
import warnings

import numpy as np

from conftest import mask_addresses

NOTEBOOK = '''
import astgrad.torch as torch
torch.manual_seed(7)
x = torch.ones(2, 2, requires_grad=True)
print(x)
y = x + 2
print(y)
print(y.grad_fn)
z = y * y * 3
out = z.mean()
print(z, out)
a = torch.randn(2, 2)
a = ((a * 3) / (a - 1))
print(a.requires_grad)
a.requires_grad_(True)
print(a.requires_grad)
b = (a * a).sum()
print(b.grad_fn)
out.backward()
print(x.grad)
x = torch.randn(3, requires_grad=True)
y = x * 2
while y.data.norm() < 1000:
    y = y * 2
print(y)
v = torch.tensor([0.1, 1.0, 0.0001], dtype=torch.float)
y.backward(v)
print(x.grad)
print(x.requires_grad)
print((x ** 2).requires_grad)
with torch.no_grad():
    print((x ** 2).requires_grad)
print(x.requires_grad)
y = x.detach()
print(y.requires_grad)
print(x.eq(y).all())
'''

EXPECTED = """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)
tensor([[3., 3.],
        [3., 3.]], grad_fn=<AddBackward0>)
<AddBackward0 object at 0x...>
tensor([[27., 27.],
        [27., 27.]], grad_fn=<MulBackward0>) tensor(27., grad_fn=<MeanBackward0>)
False
True
<SumBackward0 object at 0x...>
tensor([[4.5000, 4.5000],
        [4.5000, 4.5000]])
RANDOM
RANDOM
True
True
False
True
False
tensor(True)
"""


def run(source: str) -> tuple[str, dict]:
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        exec(compile(source, "<tutorial>", "exec"), namespace)
    return out.getvalue(), namespace


def test_notebook_prints_torch_lines_exactly():
    text, ns = run(NOTEBOOK)
    lines = mask_addresses(text).splitlines()
    expected = EXPECTED.splitlines()
    assert len(lines) == len(expected)
    for got, want in zip(lines, expected):
        if want != "RANDOM":
            assert got == want
    # the random lines keep PyTorch's layout: a grad_fn suffix, then a 3-element sci-mode grad
    number = r"-?\d+\.\d{4}(e[+-]\d\d)?"
    assert re.fullmatch(rf"tensor\(\[ *{number}, +{number}, +{number}\], grad_fn=<MulBackward0>\)", lines[12]), lines[12]
    assert re.fullmatch(r"tensor\(\[\d\.\d{4}e[+-]\d\d, \d\.\d{4}e[+-]\d\d, \d\.\d{4}e[+-]\d\d\]\)", lines[13]), lines[13]
    # the grad is v times the number of doublings, a power of two
    torch = ns["torch"]
    ratio = (ns["x"].grad / ns["v"]).numpy()
    assert np.all(ratio == ratio[0]) and np.log2(ratio[0]) == int(np.log2(ratio[0]))
    assert torch.equal(ns["x"], ns["y"]) and ns["y"].requires_grad is False


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
