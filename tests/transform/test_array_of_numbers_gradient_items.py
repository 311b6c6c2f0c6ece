"""``np.array([a, b])``'s gradient cut into its items by ``number_items`` where the list is proven one of numbers.

The rule's ``_like(g, lst)`` walks the list and reshapes each ``g[i]`` to
its item's shape through ``np.reshape``; for a list literal of numbers
bound once and read by ``np.array`` alone, ``number_items(g, k)`` gives
the same list (passes/number_items.py).  The ways a wrong proof would give
a wrong number, against central differences at every level: a list grown
by an append, an item of rank 1, a list read by another function, an item
that is a 0-d array (a full sum), float32 meeting float64, an int item.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def numbers(p):
    return np.array([p[0] * p[1], p[2] - p[3] * p[0]])


def with_a_sum(p):
    return np.array([np.sum(p * p), p[1] * 3])


def with_an_int(p):
    return np.array([p[0] * p[2], 2])


def grown(p):
    items = [p[0] * p[1]]
    items.append(p[2] * p[2])
    return np.array(items)


def with_a_row(p):
    return np.array([p[:2] * p[2], p[1:3]])


def counted(p):
    items = [p[0] * p[1], p[3]]
    size(items)
    return np.array(items)


def size(items):
    return len(items)


def stepped(rhs):
    def program(p):
        y = p[:2] * 1.0
        for _ in range(3):
            y = y + 0.1 * np.sum(rhs(p * y[0]))
        return np.sum(y * y) + np.sum(rhs(p) ** 2)
    return program


CALLEES = [numbers, with_a_sum, with_an_int, grown, with_a_row, counted]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("rhs", CALLEES, ids=[f.__name__ for f in CALLEES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_items_gradients_against_central_differences(level, rhs, dtype):
    p = np.array([1.1, 0.4, 0.3, 0.9], dtype=dtype)
    program = stepped(rhs)
    got = astgrad.grad(program, optimize=level)(p)
    want = numeric_grad(program, (p.astype(np.float64),), 0)
    np.testing.assert_allclose(got, want, rtol=2e-3 if dtype == np.float32 else 1e-6, atol=1e-6)


def test_only_lists_proven_of_numbers_are_cut_by_number_items():
    p = np.array([1.1, 0.4, 0.3, 0.9])
    for rhs, cut in ((numbers, True), (with_a_sum, True), (with_an_int, True), (grown, False), (with_a_row, False),
                     (counted, False)):
        gradient = astgrad.grad(stepped(rhs))
        gradient(p)
        cuts = "number_items(" in gradient.source or "number_scalars(" in gradient.source  # unpacked as numbers
        assert cuts == cut, (rhs.__name__, gradient.source)
        assert ("_like(" in gradient.source) != cut, rhs.__name__


def test_a_hessian_through_the_items_differentiates_the_level_1_adjoint():
    p = np.array([1.1, 0.4, 0.3, 0.9])
    gradient = astgrad.grad(stepped(numbers))
    want = np.stack([numeric_grad(lambda q: gradient(q)[i], (p,), 0) for i in range(4)])
    np.testing.assert_allclose(astgrad.hessian(stepped(numbers))(p), want, rtol=1e-5, atol=1e-7)
