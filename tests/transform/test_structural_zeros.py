"""Entries whose adjoint is structurally zero stay zero through an infinite local derivative.

``inv_r = 1 / np.sqrt(r2); inv_r[r2 == 0] = 0`` and the side of
``np.where`` that is not selected, or the entries of each choice (and of
the default) that ``np.select`` does not take: numpy's function is smooth around the
point (its central differences are finite), while the rule of the
operation that made the overwritten or unselected entries multiplies their
zero adjoint by an infinite derivative, NaN in JAX and PyTorch.  The
generated engine carries where those zeros stand (transform/runtime/structural.py)
and gives numpy's derivative; a NaN or infinity anywhere else, where the
value is used, stays.
"""

import numpy as np
import pytest

import astgrad
from _numeric import directional, gradient


def pairwise_potential(x):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d ** 2, axis=-1)
    inv_r = 1 / np.sqrt(r2)
    inv_r[r2 == 0] = 0  # the diagonal: no self-interaction
    return 0.5 * np.sum(inv_r)


def selected_root(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def both_sides(x):
    return np.sum(np.where(x < 1.0, np.log(1.0 - x), np.log(x - 1.0)) * x)


def overwritten_by_index(x):
    y = np.log(x) * x
    y[0] = 2.0
    y[2:] = 0.0
    return np.sum(y * y)


def in_a_loop(x):
    total = 0.0
    for k in range(3):
        z = 1.0 / (x - k)
        z[k] = 0.0  # x[k] is k: the pole, dropped
        total = total + np.sum(z ** 2)
    return total


def selected_branches(x):
    return np.sum(np.select([x > 0, x < -1], [np.sqrt(x), np.log(-x)], 0.0))


def branches_apart(x):
    return np.sum(np.select([x > 1, x < -1], [np.sqrt(x), np.log(-x)], 0.0) * x)


def select_with_an_expression_default(x):
    return np.sum(np.select([x >= 0], [np.sqrt(x) + x], np.log(-x) * x))


def select_of_whole_array_functions(x):
    # choices that are not elementwise in x: a running sum and a product with a total, each then under a root
    return np.sum(np.select([x > 0.5, x < -1], [np.sqrt(np.cumsum(x)), np.sqrt(-x) * np.sum(x ** 2)], x))


def choices_named_first(x):
    choices = [1.0 / x, np.log(x - 1.0)]
    picked = np.select((x < -0.5, x > 2), choices, default=x ** 2)
    return np.sum(picked * np.exp(x))


def select_then_written(x):
    y = np.select([x > 0.1], [np.sqrt(x)], 2.0 * x)
    y[-1] = 0.0  # x[-1] is positive: sqrt's derivative is finite there, and overwritten anyway
    return np.sum(np.where(y > 0.5, y * y, 0.0))


def one_value_chosen_twice(x):
    s = np.sqrt(x)
    return np.sum(np.select([x > 1, x > 0], [s, s], -x) * x)  # s is taken where x > 0: zero only below


def choices_in_a_tuple(x):
    s = np.sqrt(x) * x
    return np.sum(np.select([x > 1, x > 0.5, x > 0], (s, 2.0 * x, s), -x))


def choice_used_again_later(x):
    s = np.exp(x)
    y = np.select([x > 0], [s], 0.0)
    return np.sum(y) + np.sum(s * s)  # s's whole gradient: no entry is zero


def select_in_a_loop(x):
    total = 0.0
    for k in range(2):
        total = total + np.sum(np.select([x > k], [np.sqrt(x - k)], 0.0))
    return total


CASES = [
    (pairwise_potential, np.array([[0.0, 0.3], [1.0, -0.2], [0.4, 0.9]])),
    (selected_root, np.array([-1.0, 1.0, 4.0, -0.2])),
    (both_sides, np.array([0.5, 2.0, -1.0, 3.0])),
    (overwritten_by_index, np.array([0.0, 0.5, 0.0, -1.0])),
    (in_a_loop, np.array([0.0, 1.5, 2.0, 0.5])),
    (branches_apart, np.array([0.0, -0.5, -2.0, 1.5, 4.0])),
    (select_with_an_expression_default, np.array([-0.5, 2.0, -3.0, 1.0, 0.3])),
    (select_of_whole_array_functions, np.array([1.0, -2.0, -0.5, 2.0, 0.7])),
    (choices_named_first, np.array([0.0, -1.0, 3.0, 1.0, 0.5])),
    (select_then_written, np.array([-1.0, 0.0, 0.36, 1.0, 0.0, 4.0])),
    (one_value_chosen_twice, np.array([2.0, 0.5, -1.0, 0.3])),
    (choices_in_a_tuple, np.array([2.0, 0.7, -1.0, 0.3])),
    (choice_used_again_later, np.array([1.0, -1.0, 0.5])),
    (select_in_a_loop, np.array([0.5, 1.5, -1.0, 3.0])),
]

SELECT_CASES = CASES[5:]


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_an_infinite_derivative_where_the_adjoint_is_structurally_zero_gives_numpys_derivative(fn, x):
    with np.errstate(all="ignore"):
        got = astgrad.grad(fn)(x.copy())
        want = gradient(fn, x)
    assert np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_forward_mode_gives_numpys_derivative_where_the_adjoint_is_structurally_zero(fn, x):
    """Forward mode needs no mask: np.where and np.select pick tangents, an item assignment replaces them, so
    the infinite tangent of an entry not taken is never read."""
    rng = np.random.default_rng(0)
    with np.errstate(all="ignore"):
        want = gradient(fn, x)
        np.testing.assert_allclose(astgrad.jacfwd(fn)(x.copy()), want, rtol=1e-6, atol=1e-8)
        for _ in range(3):
            u = rng.normal(size=x.shape)
            value, tangent = astgrad.jvp(fn)(x.copy(), u)
            assert value == fn(x.copy())
            np.testing.assert_allclose(tangent, directional(fn, x, u), rtol=1e-6, atol=1e-8)


def test_np_select_of_a_root_and_a_log_gives_finite_derivatives_at_zero_and_below():
    """The unselected entries of sqrt(x) (x <= 0, infinite or NaN derivative) and log(-x) (x >= 0): zero, not
    NaN.  x == 0 is the kink of numpy's function (sqrt taken just above it): numpy's derivative from below."""
    x = np.array([0.0, -0.5, -2.0, 1.0, 4.0, 0.0, -1.5])
    with np.errstate(all="ignore"):
        got = astgrad.grad(selected_branches)(x.copy())
        want = gradient(selected_branches, x)
        below = gradient(lambda s: selected_branches(np.where(x == 0, s, x)), -1e-6)  # the zeros moved together
    apart = x != 0
    np.testing.assert_allclose(got[apart], want[apart], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[~apart], [0.0, 0.0])
    assert abs(below) < 1e-8


@pytest.mark.parametrize("fn, x", SELECT_CASES, ids=[c[0].__name__ for c in SELECT_CASES])
def test_the_hessian_through_np_select_is_the_derivative_of_the_gradient(fn, x):
    """Forward over the generated gradient: the tangent of a cleaned gradient is cleaned at the same mask."""
    grad = astgrad.grad(fn)
    with np.errstate(all="ignore"):
        got = np.reshape(astgrad.hessian(fn)(x.copy()), (x.size, x.size))
        for k, index in enumerate(np.ndindex(x.shape)):
            want = gradient(lambda y: grad(y.copy())[index], x)
            np.testing.assert_allclose(got[k], want.ravel(), rtol=1e-5, atol=1e-6)


def a_used_infinite_derivative(x):
    return np.sum(np.where(x > -0.5, np.sqrt(x), 0.0))


def read_again(x):
    b = 1.0 / np.sqrt(x)
    c = b * 1.0
    c[x == 0] = 0.0
    return np.sum(c) + np.sum(b)  # b's entries at x == 0 reach the result


def selected_root_at_zero(x):
    return np.sum(np.select([x >= 0, x < -1], [np.sqrt(x), np.log(-x)], 0.0))


def choice_read_again(x):
    b = np.sqrt(x)
    return np.sum(np.select([x > 0], [b], 0.0)) + np.sum(b[:2])  # b[0] at x == 0 reaches the result


def test_a_true_infinity_or_nan_is_not_hidden():
    with np.errstate(all="ignore"):
        got = astgrad.grad(a_used_infinite_derivative)(np.array([0.0, 1.0, -1.0]))
        assert np.isinf(got[0]) and got[1] == 0.5 and got[2] == 0.0
        got = astgrad.grad(read_again)(np.array([0.0, 4.0]))
    assert not np.isfinite(got[0])
    np.testing.assert_allclose(got[1], -1.0 / 16.0 * 2)


def test_a_true_infinity_or_nan_is_not_hidden_by_np_select():
    with np.errstate(all="ignore"):
        got = astgrad.grad(selected_root_at_zero)(np.array([0.0, -2.0, 4.0]))
        assert np.isinf(got[0])
        np.testing.assert_allclose(got[1:], [-0.5, 0.25])
        got = astgrad.grad(choice_read_again)(np.array([0.0, 4.0, 1.0]))
    assert not np.isfinite(got[0])
    np.testing.assert_allclose(got[1:], [0.25 * 2, 0.5])


def test_the_tape_gives_pytorchs_nan_through_np_select():
    """The tape carries no masks (docs/guarantees.md): the unselected entries' NaN, as torch.where gives."""
    x = np.array([0.0, -0.5, -2.0, 1.0, 4.0])
    t = astgrad.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        np.sum(np.select([t > 0, t < -1], [np.sqrt(t), np.log(-t)], 0.0)).backward()
    got = t.grad.numpy()
    assert np.all(np.isnan(got[:3]))
    np.testing.assert_allclose(got[3:], [0.5, 0.25])


def broadcast_choice(x):
    return np.sum(np.select([x > 0], [np.sqrt(x[0])], 1.0) * x)  # each entry of x[0] chosen in two rows


def test_a_choice_broadcast_over_the_conditions_keeps_its_nan_and_gives_no_wrong_number():
    """A choice's gradient summed over rows it was broadcast to is not cleaned (docs/guarantees.md): NaN
    where an unselected row's derivative is, numpy's derivative elsewhere."""
    x = np.array([[1.0, -1.0, 2.0], [2.0, -3.0, 1.0]])
    with np.errstate(all="ignore"):
        got = astgrad.grad(broadcast_choice)(x.copy())
        want = gradient(broadcast_choice, x)
    assert np.all(np.isfinite(want))
    assert np.all(np.isnan(got) | np.isclose(got, want, rtol=1e-6, atol=1e-8))
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
