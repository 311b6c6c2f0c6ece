"""Gradients at ties, kinks and singular points follow PyTorch's conventions (section 6.1)."""

import numpy as np
import pytest

import astgrad.torch as torch
from _taped import grad_of

F = torch.nn.functional


@pytest.mark.parametrize("values, f, expected", [
    ([1.0, 3.0, 3.0], lambda x: x.max(), "tensor([0.0000, 0.5000, 0.5000])"),
    ([5.0, 5.0, 5.0, 5.0], lambda x: x.max(), "tensor([0.2500, 0.2500, 0.2500, 0.2500])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(), "tensor([[0.3333, 0.3333],\n        [0.0000, 0.3333]])"),
    ([1.0, 3.0, 3.0], lambda x: x.min(), "tensor([1., 0., 0.])"),
    ([1.0, 3.0, 3.0], lambda x: x.max(dim=0).values, "tensor([0., 1., 0.])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(dim=1).values, "tensor([[1., 0.],\n        [0., 1.]])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: torch.amax(x, dim=1), "tensor([[0.5000, 0.5000],\n        [0.0000, 1.0000]])"),
    ([-1.0, 0.0, 2.0], lambda x: x.abs(), "tensor([-1.,  0.,  1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.relu(), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: F.relu(x), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(min=0), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(0, 2), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(max=0), "tensor([1., 1., 0.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.sign(), "tensor([0., 0., 0.])"),
    ([0.0, 4.0], lambda x: x.sqrt(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x ** 0.5, "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x.sqrt() * 0, "tensor([nan, 0.])"),
    ([0.0, 4.0], lambda x: x.log(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x ** 2, "tensor([0., 8.])"),
    ([0.0, 4.0], lambda x: x ** 0, "tensor([0., 0.])"),
    ([0.0, 4.0], lambda x: x ** 1.5, "tensor([0., 3.])"),
    ([0.0, 0.0, 0.0], lambda x: x.norm(), "tensor([0., 0., 0.])"),
    ([3.0, 4.0], lambda x: x.norm(), "tensor([0.6000, 0.8000])"),
    ([-1.0, 4.0], lambda x: torch.where(x > 0, x.sqrt(), 0), "tensor([   nan, 0.2500])"),
    ([0.0], lambda x: x / x, "tensor([nan])"),
])
def test_ties_kinks_and_singular_points(values, f, expected):
    with np.errstate(all="ignore"):
        assert grad_of(values, f) == expected


def test_forward_values_at_singular_points():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    assert repr(x.sqrt()) == "tensor([0., 2.], grad_fn=<SqrtBackward0>)"
    assert repr(x.log()) == "tensor([  -inf, 1.3863], grad_fn=<LogBackward0>)"
    values, indices = torch.tensor([1.0, 3.0, 3.0], requires_grad=True).max(dim=0)
    assert repr(values) == "tensor(3., grad_fn=<MaxBackward0>)" and repr(indices) == "tensor(1)"


def test_maximum_gives_half_to_each_side_on_equality():
    z, w = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 0.0], requires_grad=True)
    torch.maximum(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"
    z.grad = w.grad = None
    torch.max(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"
