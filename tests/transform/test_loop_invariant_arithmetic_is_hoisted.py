"""``1 - damping * dt`` in a loop over a range, of numbers it never rebinds: computed once before it.

passes/invariant_shapes.py hoists it exactly as the loop evaluates it, under
``if range(...):`` so that a loop of no trip computes nothing.  Where the
proof fails (an operand rebound in the loop, an array written into, an
expression only one branch runs) it stays; every case is checked against
central differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)


def pendulum(damping, omega0, steps):
    """The reverse sweep multiplies by ``1 - damping * dt`` on every trip."""
    dt = 0.01
    theta, omega = 0.3, omega0
    for _ in range(steps):
        omega = omega - dt * (9.81 * np.sin(theta) + damping * omega)
        theta = theta + dt * omega
    return theta ** 2 + 0.1 * omega ** 2


def rebound(damping, omega0, steps):
    """``dt`` halved in the loop: ``1 - damping * dt`` differs from trip to trip."""
    dt = 0.1
    omega = omega0
    for _ in range(steps):
        omega = omega - dt * damping * omega
        dt = dt * 0.5
    return omega ** 2


def written_array(damping, omega0, steps):
    """``c[0]`` written in the loop: an array operand is never hoisted."""
    c = np.array([damping, 0.5])
    omega = omega0
    for i in range(steps):
        omega = omega * (1 - c * 0.1)
        c[0] = c[0] * 0.9
    return np.sum(omega ** 2)


def branch(damping, omega0, steps):
    """The product only one branch computes."""
    omega = omega0
    for i in range(steps):
        if i % 2:
            omega = omega * (1 - damping * 0.1)
        else:
            omega = omega + damping
    return omega ** 2


CASES = [pendulum, rebound, written_array, branch]


def _check(f, level, steps=5):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks
        got = g(0.4, 0.8, steps)
        np.testing.assert_allclose(got[0], gradient(lambda d: f(d, 0.8, steps), 0.4), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], gradient(lambda w: f(0.4, w, steps), 0.8), rtol=1e-6, atol=1e-8)
    return g.source


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("steps", [0, 5])
def test_gradients_match_differences(f, level, steps):
    _check(f, level, steps)


def test_the_invariant_product_is_computed_once():
    source = _check(pendulum, 1)
    reverse = source[source.index("in range(_trips)") if "_trips" in source else source.index("reversed("):]
    assert "damping * dt" not in reverse.split("\n", 1)[1], source
    assert "1 - damping * dt" in source, source


@pytest.mark.parametrize("f", [rebound, written_array, branch], ids=lambda f: f.__name__)
def test_what_may_change_stays_in_the_loop(f):
    source = _check(f, 1)
    body = source[source.index("for i in reversed") if "for i in reversed" in source
                  else source.index("for _ in reversed"):]
    assert "if range(" not in source, source
    assert "0.1" in body or "dt" in body, source


def test_a_loop_of_no_trip_computes_nothing():
    """Hoisted before a loop that never runs, ``damping * dt`` would overflow; under ``if range(...)`` it is not
    computed."""
    def f(damping, omega0, dt, steps):
        omega = omega0
        for _ in range(steps):
            omega = omega - dt * damping * omega
        return omega ** 2 + damping

    g = astgrad.grad(f, wrt=(0, 1), optimize=2)
    with np.errstate(all="raise"):
        got = g(np.float64(1e200), np.float64(0.8), np.float64(1e200), 0)
        got = g(np.float64(1e200), np.float64(0.8), np.float64(1e200), 0)  # the specialised one
    assert got == (1.0, 1.6)
