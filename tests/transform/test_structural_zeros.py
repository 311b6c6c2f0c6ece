"""Entries whose adjoint is structurally zero stay zero through an infinite local derivative.

``inv_r = 1 / np.sqrt(r2); inv_r[r2 == 0] = 0`` and the side of
``np.where`` that is not selected: numpy's function is smooth around the
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
from _numeric import gradient


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


CASES = [
    (pairwise_potential, np.array([[0.0, 0.3], [1.0, -0.2], [0.4, 0.9]])),
    (selected_root, np.array([-1.0, 1.0, 4.0, -0.2])),
    (both_sides, np.array([0.5, 2.0, -1.0, 3.0])),
    (overwritten_by_index, np.array([0.0, 0.5, 0.0, -1.0])),
    (in_a_loop, np.array([0.0, 1.5, 2.0, 0.5])),
]


@pytest.mark.parametrize("fn, x", CASES, ids=[c[0].__name__ for c in CASES])
def test_an_infinite_derivative_where_the_adjoint_is_structurally_zero_gives_numpys_derivative(fn, x):
    with np.errstate(all="ignore"):
        got = astgrad.grad(fn)(x.copy())
        want = gradient(fn, x)
    assert np.all(np.isfinite(want))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def a_used_infinite_derivative(x):
    return np.sum(np.where(x > -0.5, np.sqrt(x), 0.0))


def read_again(x):
    b = 1.0 / np.sqrt(x)
    c = b * 1.0
    c[x == 0] = 0.0
    return np.sum(c) + np.sum(b)  # b's entries at x == 0 reach the result


def test_a_true_infinity_or_nan_is_not_hidden():
    with np.errstate(all="ignore"):
        got = astgrad.grad(a_used_infinite_derivative)(np.array([0.0, 1.0, -1.0]))
        assert np.isinf(got[0]) and got[1] == 0.5 and got[2] == 0.0
        got = astgrad.grad(read_again)(np.array([0.0, 4.0]))
    assert not np.isfinite(got[0])
    np.testing.assert_allclose(got[1], -1.0 / 16.0 * 2)
