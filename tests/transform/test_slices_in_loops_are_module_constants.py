"""``np.s_[...]`` of literal slices and ints in a loop is a constant of the module (passes/slice_constants.py).

The name holds the very value ``np.s_[...]`` gives, made once; an index
with a name in it and code outside loops stay as written.  Every program
against central differences at every level, and a second derivative
through a stencil's loop (the generated code is differentiated again).
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.sin(np.linspace(0.0, 6.0, 9)) + 0.2


def heat(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 3)


def grid(x):
    m = np.outer(x, x)
    for _ in range(2):
        m[1:, ::2] = m[1:, ::2] * 0.5 + m[:-1, ::2]
        m[2, 1:-1] = m[2, 1:-1] + m[0, 1:-1] ** 2
    return np.sum(m ** 2)


def named(u0, k):
    u = u0.copy()
    for _ in range(2):
        u[k:-k] = u[k:-k] * u[:-2 * k]
    return np.sum(u ** 2)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [heat, grid], ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    x = U.copy() if f is heat else U[:5].copy()
    np.testing.assert_allclose(astgrad.grad(f, optimize=level)(x.copy()), gradient(f, x.copy()),
                               rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_a_named_bound_stays(level):
    g = astgrad.grad(named, optimize=level)
    np.testing.assert_allclose(g(U.copy(), 1), gradient(lambda u: named(u, 1), U.copy()), rtol=1e-6, atol=1e-7)
    assert "np.s_[k:" in g.source


@pytest.mark.parametrize("level", (1, 2))
def test_the_constants_hold_what_np_s_gives(level):
    g = astgrad.grad(grid, optimize=level)
    g(U[:5].copy())
    bound = g._generated.namespace
    assert repr(bound["s_to_m1__by_2"]) == repr(np.s_[:-1, ::2])
    assert repr(bound["s_0__1_to_m1"]) == repr(np.s_[0, 1:-1])
    assert repr(bound["s_1_on__by_2"]) == repr(np.s_[1:, ::2])
    assert repr(bound["s_2__1_to_m1"]) == repr(np.s_[2, 1:-1])


def test_outside_loops_the_code_stays():
    def once(u0):
        u = u0.copy()
        u[1:-1] = u[1:-1] * u[2:]
        return np.sum(u ** 2)
    g = astgrad.grad(once)
    np.testing.assert_allclose(g(U.copy()), gradient(once, U.copy()), rtol=1e-6, atol=1e-7)
    assert "np.s_[1:-1]" in g.source and "s_1_to_m1" not in g.source


V = np.linspace(-1.0, 1.0, U.size)
HEAT_GRADIENT = astgrad.grad(heat)


def heat_slope(u):
    return np.sum(HEAT_GRADIENT(u) * V)


@pytest.mark.parametrize("level", LEVELS)
def test_a_second_derivative_through_the_loop(level):
    expected = gradient(heat_slope, U.copy())
    np.testing.assert_allclose(astgrad.grad(heat_slope, optimize=level)(U.copy()), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(astgrad.hvp(heat)(U.copy(), V), expected, rtol=1e-5, atol=1e-6)
