"""dtypes of factories, forward promotion and gradients (TORCH_SEMANTICS.md section 3)."""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from _taped import grad_of


@pytest.mark.parametrize("make, dtype", [
    (lambda: torch.randn(2), "torch.float32"), (lambda: torch.rand(2), "torch.float32"),
    (lambda: torch.zeros(2), "torch.float32"), (lambda: torch.ones(2), "torch.float32"),
    (lambda: torch.tensor([1.0, 2]), "torch.float32"), (lambda: torch.arange(3.0), "torch.float32"),
    (lambda: torch.tensor([1, 2]), "torch.int64"), (lambda: torch.arange(3), "torch.int64"),
    (lambda: torch.tensor(True), "torch.bool"),
    (lambda: torch.tensor(np.array([1.0, 2.0])), "torch.float64"),
    (lambda: torch.from_numpy(np.array([1.0, 2.0])), "torch.float64"),
    (lambda: torch.full((2,), 1.5), "torch.float32"), (lambda: torch.eye(2), "torch.float32"),
    (lambda: torch.linspace(0, 1, 5), "torch.float32"),
    (lambda: torch.zeros_like(torch.tensor([1, 2])), "torch.int64"),
    (lambda: torch.ones_like(torch.ones(2, dtype=torch.float64)), "torch.float64"),
    (lambda: torch.tensor([1, 2], dtype=torch.float), "torch.float32"),
    (lambda: torch.FloatTensor([0.1, 1.0]), "torch.float32"),
    (lambda: torch.ones(2, dtype=torch.long), "torch.int64"),
    (lambda: torch.ones(2, dtype=torch.bool), "torch.bool"),
])
def test_factory_dtypes(make, dtype):
    assert repr(make().dtype) == dtype


def test_factory_values():
    assert repr(torch.eye(2)) == "tensor([[1., 0.],\n        [0., 1.]])"
    assert repr(torch.arange(1, 7, 2)) == "tensor([1, 3, 5])"
    assert repr(torch.linspace(0, 1, 5)) == "tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])"
    assert repr(torch.full((2, 2), 7.0)) == "tensor([[7., 7.],\n        [7., 7.]])"
    assert repr(torch.zeros(2, 3).shape) == "torch.Size([2, 3])" and torch.ones((2, 3)).shape == (2, 3)
    torch.manual_seed(3)
    a = torch.randn(4)
    torch.manual_seed(3)
    assert torch.equal(a, torch.randn(4))
    r = torch.rand(1000)
    assert 0 <= float(r.min()) and float(r.max()) < 1
    assert astgrad.tensor([1.0]).dtype == torch.float32 and astgrad.ones(1).dtype == torch.float32


@pytest.mark.parametrize("expression, expected", [
    ("torch.tensor([1, 2]) * 1.5", "tensor([1.5000, 3.0000])"),
    ("torch.tensor([1, 2]) / 2", "tensor([0.5000, 1.0000])"),
    ("torch.tensor([3, 4]) // 2", "tensor([1, 2])"),
    ("torch.tensor([1, 2]) ** 2", "tensor([1, 4])"),
    ("torch.tensor([1, 2], dtype=torch.int32) + 1", "tensor([2, 3], dtype=torch.int32)"),
    ("torch.tensor([True, False]) + torch.tensor([True, True])", "tensor([True, True])"),
    ("torch.tensor([1, 2]).sum()", "tensor(3)"),
    ("torch.tensor([1.0, 2.0]) + torch.tensor(1.0, dtype=torch.float64)", "tensor([2., 3.])"),
    ("torch.tensor([1.0, 2.0]) * np.float64(2.0)", "tensor([2., 4.])"),
    ("torch.tensor([1.0, 2.0], dtype=torch.float64) + 1", "tensor([2., 3.], dtype=torch.float64)"),
    ("torch.tensor([1, 2]) > 1", "tensor([False,  True])"),
])
def test_forward_promotion(expression, expected):
    assert repr(eval(expression, {"torch": torch, "np": np})) == expected


@pytest.mark.parametrize("a, b, dtype", [
    ("int64", "float32", "torch.float32"), ("float32", "float64", "torch.float64"),
    ("int32", "int64", "torch.int64"), ("float32", "int64", "torch.float32"), ("bool", "int64", "torch.int64"),
])
def test_tensor_tensor_promotion(a, b, dtype):
    x = torch.ones(2, dtype=getattr(torch, a if a != "bool" else "bool"))
    y = torch.ones(2, dtype=getattr(torch, b))
    assert repr((x + y).dtype) == dtype and repr((y * x).dtype) == dtype


def test_gradient_has_the_leafs_dtype():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * torch.tensor([2.0, 2.0], dtype=torch.float64)).sum().backward()
    assert x.grad.dtype == torch.float32 and repr(x.grad) == "tensor([2., 2.])"
    x64 = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (x64 * 2).sum().backward()
    assert repr(x64.grad) == "tensor([2., 2.], dtype=torch.float64)"
    x.grad = None
    (x * torch.ones(2, dtype=torch.float64)).sum().backward()
    assert x.grad.dtype == torch.float32
    x.grad = None
    x64.float().sum().backward()
    assert x64.grad.dtype == torch.float64 and x64.grad.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("dtype", ["float64", "long", "bool"])
def test_gradient_argument_of_another_dtype_is_cast(dtype):
    x = torch.ones(3, requires_grad=True)
    (x * 2).backward(torch.ones(3, dtype=getattr(torch, dtype)))
    assert repr(x.grad) == "tensor([2., 2., 2.])"


def test_grad_itself_is_a_plain_leaf():
    x = torch.ones(2, requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    assert (g.requires_grad, g.is_leaf, g.grad_fn) == (False, True, None)


def test_integer_and_bool_results_never_require_grad():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    for t in (a > 0, a.argmax(), a.long()):
        assert t.requires_grad is False and t.grad_fn is None
    assert repr(a > 0) == "tensor([True, True])"
    assert torch.where(a > 0, torch.ones(2), torch.ones(2)).requires_grad is False
    assert torch.zeros_like(a).requires_grad is False
    b = torch.tensor([3.0, 4.0])
    assert (a + b).requires_grad and not (b + b).requires_grad and (a * 0).requires_grad
    assert torch.cat([a, b]).requires_grad and (a @ b).requires_grad and a.clone().requires_grad


def test_conversions():
    x = torch.ones(2, requires_grad=True)
    assert x.tolist() == [1.0, 1.0]
    assert x.sum().item() == 2.0 and type(x.sum().item()) is float
    assert int(x.sum()) == 2
    assert torch.tensor(0.1).item() == 0.10000000149011612
    assert x.detach().numpy().dtype == np.float32
    assert torch.tensor([1, 2]).numpy().tolist() == [1, 2]


@pytest.mark.parametrize("dtype, expected", [
    (torch.float32, "tensor([2., 2.])"),
    (torch.float64, "tensor([2., 2.], dtype=torch.float64)"),
    (torch.float16, "tensor([2., 2.], dtype=torch.float16)"),
])
def test_a_grad_has_its_leafs_dtype(dtype, expected):
    assert grad_of([1.0, 1.0], lambda x: x.double() * 2, dtype=dtype) == expected


def test_float32_leaf_in_a_float64_computation_gets_a_float32_grad():
    x = torch.ones(2, requires_grad=True)
    (x * torch.ones(2, dtype=torch.float64) * 2).sum().backward()
    assert x.grad.dtype == torch.float32
    s = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    (x * s).sum().backward()
    assert repr(s.grad) == "tensor(2., dtype=torch.float64)"
