"""A gradient of the wrong shape never reaches a leaf's ``.grad``.

A rule (the user's, or a table rule with a bug) may return a gradient that
un-broadcasting cannot fit to its input.  The tape refuses it when the node
runs, in PyTorch's words, and leaves every ``.grad`` as it was.
"""

import numpy as np
import pytest

import astgrad


@pytest.fixture
def wrong_rules(isolated_rules):
    @astgrad.primitive
    def double(x):
        return 2 * x

    @astgrad.primitive
    def scale(x, y):
        return x * y

    astgrad.defvjp(double, lambda g, ans, x: np.concatenate([2 * g, [1.0]]))  # one value too many
    astgrad.defvjp(scale, lambda g, ans, x, y: (g * y, np.ones((2, 2))))  # y is (3,): (2, 2) sums to (2,)
    return double, scale


def test_a_rule_returning_too_many_values_is_refused_naming_the_node_and_both_shapes(wrong_rules):
    double, _ = wrong_rules
    x = astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    out = double(x)
    with pytest.raises(RuntimeError) as info:
        out.sum().backward()
    assert str(info.value) == (f"Function {out.grad_fn.name()} returned an invalid gradient at index 0 - "
                               "got [3] but expected shape compatible with [2]")
    assert x.grad is None


def test_the_shape_named_is_the_rule_s_before_un_broadcasting(wrong_rules):
    _, scale = wrong_rules
    x = astgrad.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    y = astgrad.tensor(np.array([3.0, 4.0, 5.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"at index 1 - got \[2, 2\] but expected shape compatible with \[3\]"):
        scale(x, y).sum().backward()
    assert x.grad is None and y.grad is None


def test_an_earlier_grad_is_left_as_it_was(wrong_rules):
    double, _ = wrong_rules
    x = astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    (x * 3).sum().backward()
    with pytest.raises(RuntimeError, match="invalid gradient"):
        (double(x) + x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_a_hook_changing_a_leaf_gradient_s_shape_is_refused():
    x = astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    x.register_hook(lambda g: g[:1])
    with pytest.raises(RuntimeError, match="hook '<lambda>' has changed the size of value"):
        (x * x).sum().backward()
    assert x.grad is None


def test_broadcast_operands_still_get_gradients_summed_to_their_shape():
    x = astgrad.tensor(np.array([[1.0], [2.0]]), requires_grad=True)
    y = astgrad.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    (x * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[6.0], [6.0]])
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0, 3.0])
