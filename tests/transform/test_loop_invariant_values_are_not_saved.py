"""``nu * dt`` and ``dx ** 2`` computed in a loop from operands it never rebinds: saved no more on every trip.

Every trip computes the same number, so the reverse sweep reads the last
one (passes/invariant_saves.py).  Where a trip may compute another value
(an operand rebound in the loop, a counter, a slice of the state, a
random draw, an operand written through a statement kept as written) the
value stays saved; each program is checked against central differences at
every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U0 = np.random.default_rng(34).uniform(0.5, 1.5, 6)


def invariant(nu, u0):
    u = u0.copy()
    dx = 0.3
    for _ in range(4):
        u[1:-1] = u[1:-1] + nu * 0.1 / dx ** 2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def rebound(nu, u0):
    """``dt = dt * 0.5``: ``nu * dt`` differs from trip to trip."""
    u = u0.copy()
    dt = 0.1
    for _ in range(4):
        u = u * np.exp(-nu * dt)
        dt = dt * 0.5
    return np.sum(u ** 2)


def counted(nu, u0):
    """``nu * t`` of the loop's counter."""
    u = u0.copy()
    for t in range(4):
        u = u * np.sin(nu * t + 1.0)
    return np.sum(u ** 2)


def of_the_state(nu, u0):
    """``nu * s`` of a number the loop changes."""
    u = u0.copy()
    s = 1.0
    for _ in range(4):
        s = s * np.sum(u) * 0.1
        u = u * np.tanh(nu * s)
    return np.sum(u ** 2)


def rebound_parameter(nu, u0):
    """``nu`` itself rebound in the loop, after ``nu ** 2`` is read."""
    u = u0.copy()
    for _ in range(3):
        u = u * nu ** 2
        nu = nu * 1.1
    return np.sum(u ** 2)


def from_the_shape(nu, u0):
    """``dt = 1 / n`` of ``n, = u0.shape`` read once before the loop: ``np.sqrt(dt)`` and ``nu * dt`` invariant."""
    (n,) = u0.shape
    dt = 1.0 / n
    u = u0.copy()
    for _ in range(4):
        u = u * np.exp(-nu * dt + nu * np.sqrt(dt))
    return np.sum(u ** 2)


def shape_in_the_loop(nu, u0):
    """``n, = u.shape`` of an array the loop shortens: ``nu / n`` differs from trip to trip."""
    u = u0.copy()
    for _ in range(3):
        (n,) = u.shape
        u = u[1:] * np.exp(-nu / n)
    return np.sum(u ** 2)


def shape_rebound(nu, u0):
    """``n`` bound from the shape, then again in the loop."""
    (n,) = u0.shape
    u = u0.copy()
    for _ in range(3):
        u = u * np.exp(-nu / n)
        n = n + 1
    return np.sum(u ** 2)


CASES = [invariant, rebound, counted, of_the_state, rebound_parameter, from_the_shape, shape_in_the_loop,
         shape_rebound]


def _check(f, level):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks
        got = g(0.7, U0.copy())
        np.testing.assert_allclose(got[0], gradient(lambda k: f(k, U0.copy()), 0.7), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], gradient(lambda x: f(0.7, x), U0.copy()), rtol=1e-6, atol=1e-8)
    return g.source


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, level)


def test_the_invariant_values_are_not_pushed():
    source = _check(invariant, 1)
    loop = source[source.index("for _ in range"):source.index("for _ in reversed")]
    assert loop.count("_stack.append(") == 1, loop  # the stencil's sum, not nu * 0.1 nor dx ** 2


def test_values_of_a_shape_read_before_the_loop_are_not_pushed():
    source = _check(from_the_shape, 1)
    loop = source[source.index("for _ in range"):source.index("for _ in reversed")]
    assert loop.count("_stack.append(") == 1, loop  # u's, not nu * dt nor np.sqrt(dt)


@pytest.mark.parametrize("f", [rebound, counted, of_the_state, rebound_parameter, shape_in_the_loop, shape_rebound],
                         ids=lambda f: f.__name__)
def test_a_value_that_changes_stays_saved(f):
    source = _check(f, 1)
    assert "_stack.pop()" in source[source.index("for _ in reversed") if "for _ in reversed" in source
                                    else source.index("reversed("):]
