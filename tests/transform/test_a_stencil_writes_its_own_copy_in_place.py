"""``u = u0.copy()`` then ``u[1:-1] = ...`` in a loop: one copy a call, then the writes in place (passes/write_in_place.py).

The optimiser reads the copy through (``u = u0``), and each write copied
``u``.  Where every other read of ``u`` takes its values (``u[2:] - 2 *
u[1:-1]``, a slice bound to a name read for its values and dead after the
write), ``u = copied(u0)`` once and the writes go into it.  Where that is
not proven the writes copy as before: a slice saved for the reverse sweep
(it must keep the old values), a binding inside the loop, one write.
(A slice or another name read after the write astgrad refuses at the
user's line: tests/transform/test_soundness_aliasing.py.)  Each is checked against central
differences at every level, and the caller's array must not change.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.random.default_rng(13).random(7) + 0.5


def heat(u0):
    u = u0.copy()
    for _ in range(4):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def upwind(u0):
    u = u0.copy()
    for _ in range(4):
        mid = u[1:-1]
        u[1:-1] = mid - 0.1 * np.where(mid > 0.9, mid * (mid - u[:-2]), mid * (u[2:] - mid))
    return np.sum(u ** 2)


def product_saved(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] * u[2:]  # the adjoint reads both factors: the old values are saved
    return np.sum(u ** 2)


def bound_in_the_loop(u0):
    s = 0.0
    for k in range(3):
        u = u0.copy()
        u[1:] = u[1:] * (k + 1.0) + u[:-1]
        s = s + np.sum(u ** 2)
    return s


def written_once(u0):
    u = u0.copy()
    u[1:-1] = u[1:-1] * u[2:]
    return np.sum(u ** 2)


def checkpointed_heat(u0):
    u = u0.copy()
    for _ in astgrad.checkpointed(range(6), snapshots=2):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


PROGRAMS = [heat, upwind, product_saved, bound_in_the_loop, written_once, checkpointed_heat]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    given = U.copy()
    got = astgrad.grad(f, optimize=level)(given)
    np.testing.assert_allclose(got, gradient(f, U.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(given, U)


def test_a_view_argument_is_not_written():
    base = np.concatenate([[9.0], U])
    got = astgrad.grad(heat)(base[1:])
    np.testing.assert_allclose(got, gradient(heat, U.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(base[1:], U)


def _source(f):
    g = astgrad.grad(f)
    g(U.copy())
    return g.source


def test_the_heat_step_writes_into_one_copy():
    source = _source(heat)
    assert "u = copied(u0)" in source and "setitem_into(u," in source and "setitem(u," not in source


@pytest.mark.parametrize("f", [upwind, product_saved, bound_in_the_loop, written_once], ids=lambda f: f.__name__)
def test_where_it_is_not_proven_each_write_copies(f):
    source = _source(f)
    assert "setitem_into" not in source and "copied(" not in source
