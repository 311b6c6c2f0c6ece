"""What a node keeps: only what the gradients it will compute read, as in PyTorch."""

import numpy as np
import pytest

import astgrad.torch as torch


def test_a_factor_is_kept_only_when_the_other_factor_needs_a_gradient():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3  # the gradient for x reads only the constant
    with torch.no_grad():
        x.add_(1)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_a_factor_the_gradient_reads_is_still_version_checked():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    with torch.no_grad():
        x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_product_with_a_constant_tensor_keeps_only_the_constant():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = torch.tensor([5.0, 7.0])
    y = x * c
    y.sum().backward()  # frees what was saved
    y2 = (x * c).sum()
    y2.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 14.0])
    z = (x * c).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()  # the constant factor c was saved and freed
