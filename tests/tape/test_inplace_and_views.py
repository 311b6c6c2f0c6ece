"""In-place ops, setitem and views (section 4); in-place safety, the version counter, .data, detach,
requires_grad_ and conversions (section 10)."""

import warnings

import numpy as np
import pytest

import astgrad.tape._tensor as tape_tensor
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


VERSION_ERROR = "^one of the variables needed for gradient computation has been modified by an inplace operation"


def leaf(*values, dtype=None):
    return torch.tensor(list(values), dtype=dtype, requires_grad=True)


# ------------------------------------------------------- version counter


def test_detach_shares_storage_and_the_version_counter():
    x = leaf(1.0, 2.0, 3.0)
    d = x.detach()
    assert d is not x and d.data_ptr() == x.data_ptr()
    assert (d.requires_grad, d.is_leaf, d.grad_fn, d.grad) == (False, True, None, None)
    d[0] = 100.0
    assert repr(x) == "tensor([100.,   2.,   3.], requires_grad=True)"
    assert x._version == 1 and d._version == 1
    d.zero_()
    assert x._version == 2 and d._version == 2
    assert isinstance(x._version, int)


def test_detached_tensor_can_become_an_independent_leaf():
    x = leaf(1.0, 2.0)
    d = x.detach().requires_grad_()
    assert (d.is_leaf, d.requires_grad, d.grad_fn) == (True, True, None)
    (d * 3).sum().backward()
    assert repr(d.grad) == "tensor([3., 3.])" and x.grad is None


def test_views_share_the_version_counter():
    x = leaf(1.0, 1.0, 1.0, 1.0)
    y = x * 1
    v = y[:2]
    v.mul_(2)
    assert y._version == 1 and v._version == 1
    assert repr(y) == "tensor([2., 2., 1., 1.], grad_fn=<CopySlices>)"
    assert repr(v) == "tensor([2., 2.], grad_fn=<AsStridedBackward0>)"
    y.sum().backward()
    assert repr(x.grad) == "tensor([2., 2., 1., 1.])"


def test_modifying_a_saved_view_through_its_base_is_detected():
    x = leaf(1.0, 2.0, 3.0)
    y = x * 1
    z = (y[:2] * y[:2]).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR):
        z.backward()


def test_in_place_on_an_output_that_its_node_saved():
    x = leaf(1.0, 1.0)
    y = x * 1
    y.exp_()
    y.add_(1)
    with pytest.raises(RuntimeError, match=VERSION_ERROR + r": \[torch.FloatTensor \[2\]\], which is output 0 "
                                           r"of Exp, is at version 2; expected version 1 instead\."):
        y.sum().backward()
    assert x.grad is None


def test_a_valid_in_place_chain_on_a_non_leaf():
    x = leaf(1.0, 1.0, 1.0)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    assert repr(y) == "tensor([9., 9., 9.], grad_fn=<MulBackward0>)"
    assert y._version == 2 and not y.is_leaf
    y.sum().backward()
    assert repr(x.grad) == "tensor([6., 6., 6.])"


def test_in_place_with_a_tensor_operand_keeps_the_old_value_for_backward():
    x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
    y = x * 1
    y.mul_(w)
    y.mul_(w)
    y.sum().backward()
    assert repr(x.grad) == "tensor([ 9., 16.])"
    assert repr(w.grad) == "tensor([ 6., 16.])"


@pytest.mark.parametrize("op, name", [
    ("add_(1)", "AddBackward0"), ("mul_(2)", "MulBackward0"), ("sub_(1)", "SubBackward0"),
    ("div_(2)", "DivBackward0"), ("pow_(2)", "PowBackward0"), ("exp_()", "ExpBackward0"),
    ("relu_()", "ReluBackward0"), ("clamp_(min=0)", "ClampBackward1"), ("neg_()", "NegBackward0"),
    ("sigmoid_()", "SigmoidBackward0"), ("tanh_()", "TanhBackward0"), ("zero_()", "ZeroBackward0"),
    ("fill_(1.)", "FillBackward2"), ("copy_(torch.ones(2))", "CopyBackwards"),
])
def test_in_place_ops_rename_the_node_and_bump_the_version(op, name):
    x = leaf(0.5, 2.0)
    y = x * 1
    eval("y." + op)
    assert type(y.grad_fn).__name__ == name and y._version == 1


@pytest.mark.parametrize("op, expected", [
    (lambda y: y.add_(1), [1.0, 1.0]), (lambda y: y.mul_(3), [3.0, 3.0]), (lambda y: y.pow_(2), [1.0, 4.0]),
    (lambda y: y.neg_(), [-1.0, -1.0]), (lambda y: y.zero_(), [0.0, 0.0]), (lambda y: y.fill_(7.0), [0.0, 0.0]),
    (lambda y: y.clamp_(max=1.0), [1.0, 0.0]), (lambda y: y.copy_(torch.ones(2)), [0.0, 0.0]),
])
def test_in_place_gradients(op, expected):
    x = leaf(0.5, 2.0)
    y = x * 1
    op(y)
    y.sum().backward()
    assert x.grad.tolist() == expected


def test_plain_tensor_receiving_grad_data_in_place_joins_the_graph():
    x = torch.tensor([1.5410, 2.0, 3.0], requires_grad=True)
    z = torch.zeros(3)
    z[0] = x[0]
    assert repr(z) == "tensor([1.5410, 0.0000, 0.0000], grad_fn=<CopySlices>)" and not z.is_leaf
    z2 = torch.zeros(3)
    z2.add_(x)
    assert type(z2.grad_fn).__name__ == "AddBackward0"
    buf = torch.zeros(3)
    w = leaf(1.0, 1.0)
    buf[1:] = w * 2
    buf.sum().backward()
    assert repr(w.grad) == "tensor([2., 2.])"


def test_in_place_on_a_leaf_under_no_grad_keeps_it_a_leaf():
    x = leaf(2.0, 2.0)
    with torch.no_grad():
        x -= 0.5
    assert repr(x) == "tensor([1.5000, 1.5000], requires_grad=True)"
    assert x._version == 1 and x.is_leaf and x.grad_fn is None


# ------------------------------------------------------------------ .data


def test_data_is_a_new_plain_tensor_each_time_sharing_storage():
    x = leaf(1.0, 2.0, 3.0)
    assert x.data is not x.data
    d = x.data
    assert (d.requires_grad, d.is_leaf, d.grad_fn) == (False, True, None)
    assert d.data_ptr() == x.data_ptr()
    assert (x * 2).data.grad_fn is None


def test_data_writes_escape_the_version_counter():
    x = leaf(1.0, 2.0, 3.0)
    x.data[0] = 50.0
    assert x._version == 0
    x = leaf(1.0, 1.0, 1.0)
    y = x * x
    x.data.mul_(2)
    y.sum().backward()  # silently uses the new values, as PyTorch does
    assert repr(x.grad) == "tensor([4., 4., 4.])"


def test_assigning_data_keeps_requires_grad_and_may_change_shape():
    x = leaf(1.0, 2.0)
    x.data = torch.zeros(3)
    assert repr(x) == "tensor([0., 0., 0.], requires_grad=True)"


# ------------------------------------------------------- detach_, requires_grad_


def test_detach_in_place_makes_a_leaf():
    z = leaf(1.0, 2.0) * 2
    assert z.detach_() is z
    assert (z.is_leaf, z.requires_grad, z.grad_fn) == (True, False, None)
    assert repr(z) == "tensor([2., 4.])"


def test_requires_grad_toggles_on_leaves():
    b = torch.ones(2)
    assert b.requires_grad_() is b and b.requires_grad
    assert repr(b.requires_grad_(False)) == "tensor([1., 1.])"
    b.requires_grad_(requires_grad=True)
    assert repr(b) == "tensor([1., 1.], requires_grad=True)"
    b.requires_grad = False
    assert not b.requires_grad


def test_is_leaf_requires_grad_grad_fn_table():
    b = torch.ones(2, requires_grad=True)
    a = torch.ones(2)

    def row(t):
        return (t.is_leaf, t.requires_grad, None if t.grad_fn is None else type(t.grad_fn).__name__)

    assert row(torch.ones(2)) == (True, False, None)
    assert row(b) == (True, True, None)
    assert row(b * 2) == (False, True, "MulBackward0")
    assert row(b.detach()) == row(b.data) == (True, False, None)
    with torch.no_grad():
        assert row(b * 2) == (True, False, None)
        assert row(torch.ones(2, requires_grad=True)) == (True, True, None)
    assert row(a * 2) == (True, False, None)
    assert row((b * 2).detach().requires_grad_()) == (True, True, None)


# ------------------------------------------------------------ conversions


def test_numpy_allowed_outside_grad_mode_and_shares_memory():
    x = torch.ones(2, requires_grad=True)
    for mode in (torch.no_grad, torch.inference_mode):
        with mode():
            array = x.numpy()
            assert repr(array) == "array([1., 1.], dtype=float32)"
            assert np.shares_memory(array, x.detach().numpy())
    assert repr(x.detach().numpy()) == "array([1., 1.], dtype=float32)"
    assert repr(x.numpy(force=True)) == "array([1., 1.], dtype=float32)"
    x.detach().numpy()[0] = 7.0
    x.data.numpy()[1] = 8.0
    assert repr(x) == "tensor([7., 8.], requires_grad=True)"


def test_scalar_conversions():
    x = torch.ones(2, requires_grad=True)
    assert x.tolist() == [1.0, 1.0]
    item = x.sum().item()
    assert item == 2.0 and type(item) is float
    assert int(x.sum()) == 2 and bool(x.sum()) is True
    assert torch.tensor(0.1).item() == 0.10000000149011612


def test_float_of_a_tensor_that_requires_grad_warns_once_per_process():
    tape_tensor._warned.discard("float")
    x = torch.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert float(x.sum()) == 2.0
        float(x.sum())
        x.sum().item(), int(x.sum()), bool(x.sum())
        float(torch.ones(1))
    assert len(record) == 1 and record[0].category is UserWarning
    assert str(record[0].message) == (
        "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
        "Consider using tensor.detach() first. (Triggered internally at "
        "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)"
    )
    assert record[0].filename == __file__


def test_zero_gives_plus_zero_where_the_tensor_held_nan_infinity_or_negatives():
    """t * 0 would keep NaN (and make NaN of infinity, -0 of negatives): a NaN gradient would survive zero_grad."""
    x = torch.tensor([float("nan"), float("inf"), -2.0, 3.0], requires_grad=True)
    y = x * 1
    y.zero_()
    assert np.array_equal(y.detach().numpy(), np.zeros(4)) and not np.signbit(y.detach().numpy()).any()
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    p = torch.nn.Parameter(torch.ones(2))
    p.grad = torch.tensor([float("nan"), -1.0])
    torch.optim.SGD([p], lr=0.1).zero_grad(set_to_none=False)
    assert p.grad.tolist() == [0.0, 0.0] and not np.signbit(p.grad.numpy()).any()
