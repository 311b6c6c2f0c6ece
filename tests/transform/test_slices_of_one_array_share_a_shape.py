"""``u[1:-1]``, ``u[2:]`` and ``u[:-2]`` of one array have one shape, whatever its length: no un-broadcasting.

A stencil's slices drop the same number of entries from the first axis
(``max(0, n - 2)`` left of ``n``), an item write keeps its array's shape,
and the ranks given at call time prove the array one (front/same_shapes.py):
the heat equation's and Burgers' reverse sweeps call no
``unbroadcast(..., shape(t))`` between them, and the write's zeroing and
the read's add cancel (passes/item_updates.py).  Where a slice's length is
not the array's less a constant (``u[:1]``, ``u[-1:]``, a step), or two
slices drop different counts, or the number is a one-element array, the
shapes may differ by broadcasting a length 1: the proof fails and the sum
stays.  Each program is checked against central differences at every
level, with arrays of length 3 where a length 1 broadcasts.
"""

import re

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(33)


def heat(kappa, u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def upwind(nu, u0):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead)
        u[1:-1] = u[1:-1] - 0.1 * advect + nu * (ahead - back)
    return np.sum(u ** 2)


def unequal(kappa, u0):
    """``u[2:] * u[1:]``: lengths 1 and 2 of a length-3 array broadcast."""
    u = u0.copy()
    for _ in range(2):
        u[1:] = u[1:] + kappa * u[2:] * u[1:]
    return np.sum(u ** 2)


def into_longer(kappa, u0):
    """``u[1:] = u[2:] * kappa``: a value of length 1 written into a slice of 2."""
    u = u0.copy()
    for _ in range(2):
        u[1:] = u[2:] * kappa + u[:-1]
    return np.sum(u ** 3)


def from_the_start(kappa, u0):
    """``u[:1]`` and ``u[-1:]`` have one entry whatever the length."""
    u = u0.copy()
    for _ in range(2):
        u[1:-1] = u[1:-1] + kappa * u[:1] * u[-1:]
    return np.sum(u ** 2)


def stepped(kappa, u0):
    """``u[1::3]`` has one entry of a length-3 array, ``u[1:]`` two."""
    u = u0.copy()
    for _ in range(2):
        u[1:] = u[1:] * kappa + u[1::3]
    return np.sum(u ** 2)


def shrinking(kappa, u0):
    """``u = u[1:] * ...`` in the loop: u's shape changes from trip to trip, its slices have none."""
    u = u0.copy()
    total = 0.0
    for _ in range(2):
        total = total + np.sum(u[1:] * u[:-1] * kappa)
        u = u[1:] + u[:-1]
    return total + np.sum(u * u[1:])


def rows(kappa, u0):
    """A 2-d array: the slices of its first axis keep the second."""
    u = np.outer(u0, u0[::-1])
    for _ in range(2):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - u[:-2])
    return np.sum(u ** 2)


#: each program with the lengths it runs at (the unequal slices broadcast only where one has one entry)
CASES = [(heat, 3), (heat, 6), (upwind, 3), (upwind, 6), (unequal, 3), (into_longer, 3), (from_the_start, 3),
         (from_the_start, 6), (stepped, 3), (shrinking, 4), (rows, 3), (rows, 5)]


def _check(f, kappa, u0, level):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks
        got = g(np.copy(kappa) if np.ndim(kappa) else kappa, u0.copy())
        want_kappa = gradient(lambda k: f(k, u0.copy()), kappa)
        np.testing.assert_allclose(got[0], want_kappa, rtol=1e-6, atol=1e-8)
        assert np.shape(got[0]) == np.shape(kappa)
        np.testing.assert_allclose(got[1], gradient(lambda x: f(kappa, x), u0.copy()), rtol=1e-6, atol=1e-8)
    return g


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f, n", CASES, ids=[f"{f.__name__}-{n}" for f, n in CASES])
def test_gradients_match_differences(f, n, level):
    _check(f, 0.3, RNG.uniform(-1.0, 1.0, n), level)


@pytest.mark.parametrize("f", [heat, unequal, from_the_start], ids=lambda f: f.__name__)
def test_a_one_element_array_is_not_a_number(f):
    """``kappa`` of shape (1,): its gradient is summed over the slice it multiplied, at every level."""
    for level in LEVELS:
        _check(f, np.array([0.3]), RNG.uniform(-1.0, 1.0, 3), level)


def test_a_product_of_numbers_is_no_constant():
    """``nu * dt`` of two numbers, then arrays added to it in a loop: its gradient is summed back to a number."""
    def accumulated(nu, dt, x):
        total = nu * dt
        for _ in range(3):
            total = total + x * nu
        return np.sum(total * total)
    x = RNG.uniform(-1.0, 1.0, 3)
    for level in LEVELS:
        g = astgrad.grad(accumulated, wrt=(0, 1, 2), optimize=level)
        for _ in range(2):
            got = g(0.5, 0.2, x.copy())
            np.testing.assert_allclose(got[0], gradient(lambda k: accumulated(k, 0.2, x), 0.5), rtol=1e-6)
            np.testing.assert_allclose(got[1], gradient(lambda k: accumulated(0.5, k, x), 0.2), rtol=1e-6)
            np.testing.assert_allclose(got[2], gradient(lambda v: accumulated(0.5, 0.2, v), x), rtol=1e-6)


def test_a_list_is_not_an_array():
    """``u[1:-1] = ...`` on a list replaces items, which may change its length: no shape is proven."""
    def listed(kappa, u0):
        u = [u0[0], u0[1], u0[2], u0[3]]
        u[1:-1] = [kappa * u[1], kappa * u[2]]
        return u[0] * u[1] + u[2] * u[3]
    u0 = RNG.uniform(-1.0, 1.0, 4)
    for level in LEVELS:
        g = astgrad.grad(listed, wrt=(0, 1), optimize=level)
        got = g(0.3, u0.copy())
        np.testing.assert_allclose(got[0], gradient(lambda k: listed(k, u0), 0.3), rtol=1e-6)
        np.testing.assert_allclose(got[1], gradient(lambda x: listed(0.3, x), u0), rtol=1e-6)


def test_the_stencils_reverse_sweeps_call_no_unbroadcast():
    for f in (heat, upwind):
        source = _check(f, 0.3, RNG.uniform(-1.0, 1.0, 6), 2).source
        loop = source[source.index("for _ in reversed"):]
        # only the number's sum over the slice: kappa and nu have shape () (read once before the loop)
        number_shapes = ["shape(kappa)", "shape(nu)"] + re.findall(r"(\w+) = shape\((?:kappa|nu)\)", source)
        assert loop.count("unbroadcast(") == sum(loop.count(f", {s})") for s in number_shapes), loop
        assert "setitem(" not in loop, loop  # the write's zeroing and the read's add cancel
