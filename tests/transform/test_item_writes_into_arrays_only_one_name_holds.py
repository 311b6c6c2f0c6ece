"""``rates[i] += v`` into ``rates = np.zeros(n)`` writes in place: no copy of ``rates`` per item.

passes/write_in_place.py proves that no other name reaches the array:
made by ``np.zeros``, read only for numbers (``rates[i]`` of a 1-d array,
``stoich @ rates``).  Where another name may see the write (an alias, a
view, a row of a 2-d array, the array saved for the reverse sweep, a
method call), the write copies as before.  Each program
is checked against central differences at every level, and its arguments
are left as they were.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(35)
K = RNG.uniform(0.5, 1.5, 4)
C0 = RNG.uniform(0.5, 1.5, 4)


def reactions(k, c0):
    c = c0.copy()
    for _ in range(3):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[i] * c[(i + 1) % 4]
        c = c - 0.1 * rates
    return np.sum(c * c)


def aliased(k, c0):
    """``before = rates``, read before the writes (astgrad refuses a read after them): the proof fails all the
    same, the write copies."""
    c = c0.copy()
    total = 0.0
    for _ in range(2):
        rates = np.ones(len(k))
        before = rates
        total = total + np.sum(before * c)
        for i in range(len(k)):
            rates[i] += k[i] * c[i]
        c = c - 0.1 * rates
    return total + np.sum(c * c)


def viewed(k, c0):
    """``tail = rates[1:]``, a view read before the writes."""
    c = c0.copy()
    total = 0.0
    for _ in range(2):
        rates = np.ones(len(k))
        tail = rates[1:]
        total = total + np.sum(tail * c[1:])
        for i in range(len(k)):
            rates[i] = k[i] * c[i]
        c = c * 0.9 + 0.1 * rates
    return total + np.sum(c * c)


def rows(k, c0):
    """``grid[0]`` of a 2-d array is a row, a view: read for its values all the same, the proof fails."""
    grid = np.zeros((2, len(k)))
    total = 0.0
    for i in range(len(k)):
        grid[0, i] = k[i] * c0[i]
        total = total + np.sum(grid[0] * c0)
    return total + np.sum(grid * grid)


def read_back(k, c0):
    """Each write followed by a read of the whole array, whose values the reverse sweep needs."""
    rates = np.zeros(len(k))
    total = 0.0
    for i in range(len(k)):
        rates[i] = k[i] * c0[i]
        total = total + np.sum(rates * rates * c0)
    return total


def snapshots(k, c0):
    """``rates.copy()`` after each write: a method call, which the proof does not follow."""
    rates = np.zeros(len(k))
    total = 0.0
    for i in range(len(k)):
        rates[i] = k[i] * c0[i]
        snap = rates.copy()
        total = total + np.sum(snap * c0)
    return total


def returned_pair(k, c0):
    rates = np.zeros(len(k))
    for i in range(len(k)):
        rates[i] = k[i] * c0[i]
    return np.sum(rates ** 2)


CASES = [reactions, aliased, viewed, rows, read_back, snapshots, returned_pair]


def _check(f, level):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks
        k, c0 = K.copy(), C0.copy()
        got = g(k, c0)
        np.testing.assert_array_equal(k, K)
        np.testing.assert_array_equal(c0, C0)
        np.testing.assert_allclose(got[0], gradient(lambda x: f(x, C0.copy()), K.copy()), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], gradient(lambda x: f(K.copy(), x), C0.copy()), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(f(K.copy(), C0.copy()), f(K.copy(), C0.copy()))
    return g.source


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, level)


def test_the_reaction_loop_writes_in_place():
    assert "setitem_into(rates, i, " in _check(reactions, 2)


@pytest.mark.parametrize("f", [aliased, viewed, rows, read_back, snapshots], ids=lambda f: f.__name__)
def test_a_write_another_name_may_see_copies(f):
    assert "setitem_into" not in _check(f, 2)
