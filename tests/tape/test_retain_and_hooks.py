"""Freeing and retain_graph, saved values on nodes, retain_grad and hooks (sections 5, 6, 8)."""

import re
import warnings

import pytest

import astgrad.torch as torch

SECOND_TIME = "^Trying to backward through the graph a second time"


def leaf(*values, dtype=None):
    return torch.tensor(list(values), dtype=dtype, requires_grad=True)


# ------------------------------------------------------------ freeing


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_graph_without_saved_tensors_backpropagates_twice(reduce):
    x = torch.ones(2, 2, requires_grad=True)
    y = getattr(x + 2, reduce)()
    y.backward()
    y.backward()
    step = 1.0 if reduce == "sum" else 0.25
    assert x.grad.tolist() == [[2 * step] * 2] * 2


def test_retain_retain_plain_then_the_fourth_raises():
    x = leaf(1.0, 1.0)
    y = (x * x).sum()
    seen = []
    for kwargs in ({"retain_graph": True}, {"retain_graph": True}, {}):
        y.backward(**kwargs)
        seen.append(x.grad.tolist())
    assert seen == [[2.0, 2.0], [4.0, 4.0], [6.0, 6.0]]
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        y.backward()
    assert x.grad.tolist() == [6.0, 6.0]


def test_accumulation_is_in_place_into_the_same_object():
    x = torch.ones(2, 2, requires_grad=True)
    out = ((x + 2) * (x + 2) * 3).mean()
    out.backward(retain_graph=True)
    first = x.grad
    out.backward()
    assert x.grad is first
    assert x.grad.tolist() == [[9.0, 9.0], [9.0, 9.0]]


def test_leaf_backward_copies_the_gradient():
    v = leaf(1.0, 2.0)
    g = torch.tensor([3.0, 4.0])
    v.backward(g)
    assert v.grad is not g and v.grad.data_ptr() != g.data_ptr()
    assert repr(v.grad) == "tensor([3., 4.])"
    s = torch.tensor(2.0, requires_grad=True)
    s.backward()
    assert repr(s.grad) == "tensor(1.)"


def test_a_leaf_not_reached_keeps_none_and_repeated_uses_sum():
    x, unused = leaf(1.0, 1.0), leaf(1.0)
    (x * x + x).sum().backward()
    assert repr(x.grad) == "tensor([3., 3.])"
    assert unused.grad is None


# ------------------------------------------------------- saved values


def test_saved_values_on_nodes():
    x = leaf(1.0, 2.0)
    assert (x * x).grad_fn._saved_self is x
    assert repr(x.exp().grad_fn._saved_result) == "tensor([2.7183, 7.3891], grad_fn=<ExpBackward0>)"
    assert (x + 2).grad_fn._saved_alpha == 1
    assert (x - x).grad_fn._saved_alpha == 1
    assert (x ** 3).grad_fn._saved_exponent == 3
    other = (x * 3).grad_fn._saved_other
    assert repr(other) == "tensor(3)" and other.dtype == torch.int64
    assert repr((x * 2.5).grad_fn._saved_other) == "tensor(2.5000, dtype=torch.float64)"


def test_saved_attribute_names_follow_pytorch():
    x = leaf(1.0, 2.0)

    def saved(t):
        return sorted(a for a in dir(t.grad_fn) if a.startswith("_saved_"))

    assert saved(x * x) == ["_saved_other", "_saved_self"]
    assert saved(x + 2) == ["_saved_alpha"]
    assert saved(x ** 3) == ["_saved_exponent", "_saved_self"]
    assert saved(x ** x) == ["_saved_exponent", "_saved_result", "_saved_self"]
    assert saved(x.exp()) == ["_saved_result"]
    assert saved(x.sin()) == ["_saved_self"]
    with pytest.raises(AttributeError):
        (x + 2).grad_fn._saved_self


def test_saved_tensors_raise_after_backward_scalars_do_not():
    x = leaf(1.0, 2.0)
    product, power, exp, add = x * x, x ** 3, x.exp(), x + 2
    (product + power + exp + add).sum().backward()
    for node, name in ((product.grad_fn, "_saved_self"), (product.grad_fn, "_saved_other"),
                       (exp.grad_fn, "_saved_result"), (power.grad_fn, "_saved_self")):
        with pytest.raises(RuntimeError, match=SECOND_TIME):
            getattr(node, name)
    assert power.grad_fn._saved_exponent == 3
    assert add.grad_fn._saved_alpha == 1


def test_retained_graph_keeps_saved_values_and_grad_fn_stays():
    x = leaf(1.0, 2.0)
    y = x * x
    y.sum().backward(retain_graph=True)
    assert y.grad_fn._saved_self is x
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x


# ----------------------------------------------------------- retain_grad


def test_retain_grad_on_the_tutorial_graph():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    assert not y.retains_grad
    y.retain_grad()
    z.retain_grad()
    assert y.retains_grad and z.retains_grad
    z.mean().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert z.grad.tolist() == [[0.25, 0.25], [0.25, 0.25]]
        assert y.grad.tolist() == [[4.5, 4.5], [4.5, 4.5]]
    assert x.grad.tolist() == [[4.5, 4.5], [4.5, 4.5]]
    assert not y.grad.requires_grad and y.grad.is_leaf and y.grad.grad_fn is None


def test_retain_grad_on_a_leaf_is_a_no_op():
    x = leaf(1.0)
    assert x.retain_grad() is None
    assert not x.retains_grad
    (x * 2).backward()
    assert repr(x.grad) == "tensor([2.])"


def test_retained_grad_accumulates_and_autograd_grad_fills_it_too():
    # Measured on PyTorch 2.13: retain_grad also sees autograd.grad and backward(inputs=...).
    x = leaf(1.0, 1.0)
    y = x * 2
    y.retain_grad()
    z = (y * y).sum()
    torch.autograd.grad(z, x, retain_graph=True)
    assert y.grad.tolist() == [4.0, 4.0] and x.grad is None
    z.backward(inputs=[x])
    assert y.grad.tolist() == [8.0, 8.0] and x.grad.tolist() == [8.0, 8.0]


def test_non_leaf_warning_once_per_source_line_under_the_default_filter():
    y = leaf(1.0) * 2
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("default")
        for _ in range(3):
            y.grad
        y.grad
    assert len(record) == 2
    assert all(w.category is UserWarning and w.filename == __file__ for w in record)


# ----------------------------------------------------------------- hooks


def test_hook_on_a_non_leaf_replaces_the_gradient():
    x = leaf(1.0, 1.0, 1.0)
    y = x * 2
    seen = []
    handle = y.register_hook(lambda g: seen.append(g) or g * 10)
    assert type(handle).__module__ == "torch.utils.hooks" and type(handle).__name__ == "RemovableHandle"
    y.sum().backward()
    assert repr(seen[0]) == "tensor([1., 1., 1.])"
    assert repr(x.grad) == "tensor([20., 20., 20.])"


def test_leaf_hook_runs_before_accumulation_on_each_backward():
    x = leaf(1.0, 1.0)
    seen = []
    x.register_hook(lambda g: seen.append(repr(g)))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert seen == ["tensor([3., 3.])", "tensor([3., 3.])"]
    assert repr(x.grad) == "tensor([6., 6.])"


def test_leaf_hook_adds_to_the_gradient():
    x = leaf(1.0, 1.0, 1.0)
    x.register_hook(lambda g: g + 100)
    (x * 2).sum().backward()
    assert repr(x.grad) == "tensor([102., 102., 102.])"


def test_hooks_run_in_registration_order_and_retain_grad_sees_the_result():
    x = leaf(1.0, 1.0)
    y = x * 1
    y.retain_grad()
    order = []
    y.register_hook(lambda g: order.append(("hook1", repr(g))) or g * 2)
    y.register_hook(lambda g: order.append(("hook2", repr(g))) or g + 1)
    y.sum().backward()
    assert order == [("hook1", "tensor([1., 1.])"), ("hook2", "tensor([2., 2.])")]
    assert repr(y.grad) == "tensor([3., 3.])"
    assert repr(x.grad) == "tensor([3., 3.])"


def test_hook_returning_none_keeps_the_gradient():
    x = leaf(2.0)
    y = x * x
    y.register_hook(lambda g: None)
    y.backward()
    assert repr(x.grad) == "tensor([4.])"


def test_removed_hook_no_longer_runs():
    x = leaf(1.0, 1.0)
    handle = x.register_hook(lambda g: g * 2)
    (x * 3).sum().backward()
    assert repr(x.grad) == "tensor([6., 6.])"
    handle.remove()
    handle.remove()  # a second remove is harmless
    (x * 3).sum().backward()
    assert repr(x.grad) == "tensor([9., 9.])"


def test_hook_changing_the_dtype():
    x = leaf(1.0, 1.0)
    x.register_hook(lambda g: g.double())
    with pytest.raises(RuntimeError) as info:
        (x * 3).sum().backward()
    assert str(info.value) == ("hook '<lambda>' has changed the type of value "
                               "(was torch.FloatTensor got torch.DoubleTensor)")


def test_retain_grad_follows_an_in_place_op_but_earlier_hooks_see_the_old_value():
    x = leaf(1.0, 1.0)
    y = x * 2
    y.retain_grad()
    seen = []
    y.register_hook(lambda g: seen.append(("before", repr(g))))
    y.mul_(3)
    y.register_hook(lambda g: seen.append(("after", repr(g))))
    y.sum().backward()
    assert seen == [("after", "tensor([1., 1.])"), ("before", "tensor([3., 3.])")]
    assert repr(y.grad) == "tensor([1., 1.])" and repr(x.grad) == "tensor([6., 6.])"


def test_retain_grad_on_a_base_written_through_a_view():
    x = leaf(1.0, 1.0, 1.0, 1.0)
    y = x * 2
    y.retain_grad()
    y[:2].mul_(3)
    y.sum().backward()
    assert repr(y.grad) == "tensor([1., 1., 1., 1.])"
    assert repr(x.grad) == "tensor([6., 6., 2., 2.])"


def test_handle_repr_and_resetting_grads():
    x = leaf(1.0, 1.0)
    handle = x.register_hook(lambda g: g)
    assert re.fullmatch(r"<torch\.utils\.hooks\.RemovableHandle object at 0x[0-9a-f]+>", repr(handle))
    (x * 3).sum().backward()
    zeroed = x.grad.zero_()
    assert zeroed is x.grad and repr(zeroed) == "tensor([0., 0.])"
    (x * 3).sum().backward()
    assert repr(x.grad.data.zero_()) == "tensor([0., 0.])" and repr(x.grad) == "tensor([0., 0.])"
    x.grad = None
    (x * 3).sum().backward()
    assert repr(x.grad) == "tensor([3., 3.])"
