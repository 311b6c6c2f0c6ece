"""``np.array`` of nested lists and the builtins ``sum``/``max``/``min``: closed forms, both engines."""

from __future__ import annotations

import numpy as np
import pytest

import astgrad


def nested(x):
    m = np.array([[x[0], x[1]], [x[1] * x[2], 3.0]])
    return np.sum(m @ m)


def test_nested_list_gradient_matches_the_closed_form():
    x = np.array([0.5, -1.5, 2.0])
    a, b, c = x
    # m = [[a, b], [b c, 3]]: sum(m @ m) = a^2 + 2 b^2 c + a b + 3 b + a b c + 3 b c + 9
    def loss(v):
        a, b, c = v
        m = np.array([[a, b], [b * c, 3.0]])
        return np.sum(m @ m)
    want = [(loss(x + e * 1e-6) - loss(x - e * 1e-6)) / 2e-6 for e in np.eye(3)]
    exact = [2 * a + b + b * c, 4 * b * c + a + 3 + a * c + 3 * c, 2 * b * b + a * b + 3 * b]
    np.testing.assert_allclose(want, exact, rtol=1e-6)
    np.testing.assert_allclose(astgrad.grad(nested)(x), exact, rtol=1e-12)


def integer_copy(x):
    return np.sum(np.array(x, dtype=int) * x)


def test_integer_dtype_gives_a_zero_gradient_through_the_cast():
    x = np.array([1.25, 2.5, -0.5])
    np.testing.assert_array_equal(astgrad.grad(integer_copy)(x), [1.0, 2.0, 0.0])


def losses(x):
    return sum([np.sum(x * x), np.sum(x) * 2.0], 1.0)


def two_argument_max(x):
    return max(x[0] * 3.0, x[1]) + min(x[2], x[0], key=float)


def first_of_ties(x):
    return max([x[0], x[1], x[0]])


def test_sum_max_min_builtins():
    x = np.array([0.5, 1.0, 0.25])
    np.testing.assert_allclose(astgrad.grad(losses)(x), 2 * x + 2.0)
    np.testing.assert_allclose(astgrad.grad(two_argument_max)(x), [3.0, 0.0, 1.0])
    # the two x[0] values are equal: Python's max returns the first, which gets the gradient
    np.testing.assert_allclose(astgrad.grad(first_of_ties)(np.array([2.0, 1.0])), [1.0, 0.0])


def test_the_tape_refuses_np_array_of_tensors_and_np_stack_is_the_way():
    t = astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy"):
        np.array([t, t * 2])
    y = np.stack([t, t * 2])
    (y * y).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 10 * np.array([1.0, 2.0]))
