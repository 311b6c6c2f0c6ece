"""A rule registered for a ufunc reaches the operators recorded after it.

The tape remembers each ufunc's rule between operations; a change to the
table (``defvjp``) must replace what it remembered, never leave the old rule
computing gradients without an error.
"""

import numpy as np

import astgrad


def _grads(op):
    x = astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True)
    y = astgrad.tensor(np.array([3.0, 5.0]), requires_grad=True)
    op(x, y).sum().backward()
    return x.grad.numpy(), y.grad.numpy()


def test_a_new_rule_for_np_add_is_used_by_the_next_plus(isolated_rules):
    gx, gy = _grads(lambda x, y: x + y)  # records with the shipped rule first, so it is remembered
    np.testing.assert_array_equal(gx, [1.0, 1.0])
    np.testing.assert_array_equal(gy, [1.0, 1.0])
    astgrad.defvjp(np.add, lambda g, ans, x, y: (2.0 * g, 3.0 * g))
    gx, gy = _grads(lambda x, y: x + y)
    np.testing.assert_array_equal(gx, [2.0, 2.0])
    np.testing.assert_array_equal(gy, [3.0, 3.0])


def test_a_new_rule_for_np_multiply_is_used_by_the_next_times_and_by_np_multiply(isolated_rules):
    gx, gy = _grads(lambda x, y: x * y)
    np.testing.assert_array_equal(gx, [3.0, 5.0])  # d(xy)/dx = y
    astgrad.defvjp(np.multiply, lambda g, ans, x, y: (g * 0.5, g * 0.25))
    for op in (lambda x, y: x * y, np.multiply):
        gx, gy = _grads(op)
        np.testing.assert_array_equal(gx, [0.5, 0.5])
        np.testing.assert_array_equal(gy, [0.25, 0.25])
