"""``np.where(c, a * x, b * y)``'s adjoint multiplies inside one ``np.where`` (passes/where_products.py).

``cleaned(unselected(w, c, True, None), w * x)`` with ``w = np.where(c, g, 0)``
is ``np.where(c, g * x, 0)`` where ``x`` surely has ``c``'s shape: the same
numbers, NaN and infinities included (a structural zero stays zero where
``x`` is infinite).  Where ``x``'s shape is not proven the code stays.
Each program is checked against central differences at every level, and
the structural zeros against their value, 0.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.sin(np.linspace(0.0, 6.0, 9)) + 0.2


def upwind(u0):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        u[1:-1] = u[1:-1] - 0.1 * np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead)
    return np.sum(u ** 2)


def broadcast_past_the_condition(x):
    m = np.outer(np.arange(1.0, 4.0), x)
    return np.sum(np.where(x > 0.5, x * m, m * 2.0))


def log_at_zero(x):
    return np.sum(np.where(x > 0.5, x * np.log(x), 0.0))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [upwind, broadcast_past_the_condition], ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    got = astgrad.grad(f, optimize=level)(U.copy())
    np.testing.assert_allclose(got, gradient(f, U.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_a_structural_zero_stays_zero_where_the_factor_is_infinite(level):
    x = np.array([0.0, 0.2, 0.8, 1.5, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        got = astgrad.grad(log_at_zero, optimize=level)(x)
    np.testing.assert_array_equal(got[[0, 1, 4]], 0.0)
    np.testing.assert_allclose(got[[2, 3]], np.log(x[[2, 3]]) + 1.0, rtol=1e-12)


def _source(f):
    g = astgrad.grad(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        g(U.copy())
    return g.source


def test_the_upwind_step_multiplies_inside_the_where():
    source = _source(upwind)
    assert "* back, 0)" in source and "* ahead)" in source
    # the masks go on to the rules before (back's and ahead's differences), cleaning no product there
    assert not any(" * " in line for line in source.splitlines() if "cleaned(" in line)


def test_a_factor_broadcast_past_the_condition_keeps_the_mask():
    assert "cleaned(" in _source(broadcast_past_the_condition)
