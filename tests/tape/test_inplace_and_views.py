"""In-place ops, setitem and views (section 4), detach() and .data basics (section 10)."""

import pytest

import astgrad.torch as torch


def non_leaf():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    return x, x * 1


@pytest.mark.parametrize("op, name", [
    (lambda y: y.add_(1), "AddBackward0"), (lambda y: y.__iadd__(1), "AddBackward0"),
    (lambda y: y.mul_(2), "MulBackward0"), (lambda y: y.__imul__(2), "MulBackward0"),
    (lambda y: y.sub_(1), "SubBackward0"), (lambda y: y.__isub__(1), "SubBackward0"),
    (lambda y: y.div_(2), "DivBackward0"), (lambda y: y.__itruediv__(2), "DivBackward0"),
    (lambda y: y.pow_(2), "PowBackward0"), (lambda y: y.exp_(), "ExpBackward0"),
    (lambda y: y.relu_(), "ReluBackward0"), (lambda y: y.clamp_(min=0), "ClampBackward1"),
    (lambda y: y.neg_(), "NegBackward0"), (lambda y: y.sigmoid_(), "SigmoidBackward0"),
    (lambda y: y.tanh_(), "TanhBackward0"), (lambda y: y.zero_(), "ZeroBackward0"),
    (lambda y: y.fill_(2.0), "FillBackward2"), (lambda y: y.copy_(torch.ones(3)), "CopyBackwards"),
    (lambda y: y.__setitem__(0, 5.0), "CopySlices"),
])
def test_in_place_on_a_non_leaf_renames_grad_fn_and_bumps_version(op, name):
    x, y = non_leaf()
    assert y._version == 0
    result = op(y)
    assert result is (None if name == "CopySlices" else y)
    assert type(y.grad_fn).__name__ == name and y.grad_fn.name() == name
    assert y._version == 1 and not y.is_leaf and y.requires_grad


def test_valid_in_place_chain():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    assert repr(y) == "tensor([9., 9., 9.], grad_fn=<MulBackward0>)"
    y.sum().backward()
    assert repr(x.grad) == "tensor([6., 6., 6.])"


def test_in_place_through_a_view_of_a_non_leaf():
    x = torch.ones(3, requires_grad=True)
    y = x * 1
    v = y[1:]
    v.mul_(torch.tensor([2.0, 3.0]))
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert repr(y) == "tensor([1., 2., 3.], grad_fn=<CopySlices>)"
    y.sum().backward()
    assert repr(x.grad) == "tensor([1., 2., 3.])"


def test_plain_tensor_receiving_grad_data_in_place_becomes_non_leaf():
    x = torch.tensor([1.5410, -0.2934], requires_grad=True)
    z = torch.zeros(3)
    z[0] = x[0]
    assert repr(z) == "tensor([1.5410, 0.0000, 0.0000], grad_fn=<CopySlices>)" and z.is_leaf is False
    z2 = torch.zeros(2)
    z2.add_(x)
    assert type(z2.grad_fn).__name__ == "AddBackward0"
    x2 = torch.ones(2, requires_grad=True)
    buf = torch.zeros(3)
    buf[1:] = x2 * 2
    buf.sum().backward()
    assert repr(x2.grad) == "tensor([2., 2.])"


def test_setitem_overwrites_the_gradient_of_the_replaced_values():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 3
    y[1] = 0.0
    y[2] = x[0] * 10
    y.sum().backward()
    assert repr(x.grad) == "tensor([13.,  0.,  0.])"


def test_in_place_on_a_leaf_is_allowed_under_no_grad():
    x = torch.tensor([2.0, 2.0], requires_grad=True)
    with torch.no_grad():
        x -= 0.5
        x.mul_(1)
    assert repr(x) == "tensor([1.5000, 1.5000], requires_grad=True)"
    assert x.is_leaf and x.grad_fn is None and x._version == 2


def test_detach_shares_storage_and_version_counter():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    d = x.detach()
    assert d is not x and d.data_ptr() == x.data_ptr()
    assert (d.requires_grad, d.is_leaf, d.grad_fn, d.grad) == (False, True, None, None)
    d[0] = 100.0
    assert repr(x) == "tensor([100.,   2.,   3.], requires_grad=True)"
    assert x._version == d._version == 1
    d.zero_()
    assert x._version == d._version == 2
    d.requires_grad_()
    assert d.requires_grad and d.is_leaf and not x.grad_fn


def test_detach_in_place():
    x = torch.ones(2, requires_grad=True)
    z = x * 2
    assert z.detach_() is z
    assert (z.requires_grad, z.is_leaf, z.grad_fn) == (False, True, None)


def test_data_is_a_new_plain_tensor_with_its_own_version_counter():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert x.data is not x.data
    data = x.data
    assert (data.requires_grad, data.is_leaf, data.grad_fn) == (False, True, None)
    assert data.data_ptr() == x.data_ptr()
    x.data[0] = 50.0
    assert x._version == 0 and x.tolist() == [50.0, 2.0, 3.0]
    y = (x * 2).data
    assert y.grad_fn is None and not y.requires_grad


def test_data_writes_escape_the_version_check():
    x = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y = x * x
    x.data.mul_(2)
    y.sum().backward()
    assert repr(x.grad) == "tensor([4., 4., 4.])"


def test_assigning_data_keeps_requires_grad():
    x = torch.ones(2, requires_grad=True)
    x.data = torch.zeros(3)
    assert repr(x) == "tensor([0., 0., 0.], requires_grad=True)"


def test_views_share_storage():
    x = torch.arange(6.0).reshape(2, 3)
    for view in (x[0], x[:, 1], x.t(), x.reshape(6), x.view(3, 2), x.transpose(0, 1), x.unsqueeze(0)):
        assert view._version == x._version
    x[0, 0] = 10.0
    assert x.reshape(6)[0].item() == 10.0 and x.t()[0, 0].item() == 10.0
