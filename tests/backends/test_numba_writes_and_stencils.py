"""backend="numba" on programs that write into arrays, roll stencils, call np.eye and math.sqrt.

Each compiled gradient is compared with the numpy backend's (1e-12) and with
central differences; what is not compiled is refused at the user's line and
backend="auto" runs numpy.  Small sizes: each gradient compiles once.
"""

import math
import warnings

import numpy as np
import pytest

import _numeric
import astgrad

pytest.importorskip("numba")


def simulated(u0, k):
    """A slice written in a loop, items added to with numbers saved beside arrays, a roll, np.eye and np.ones."""
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + k[0] * (u[2:] - 2.0 * u[1:-1] + u[:-2])
        rates = np.zeros(3)
        rates[0] += -k[1] * u[0] + k[2] * u[1]
        rates[2] = k[2] * u[1] * u[2]
        u[:3] = u[:3] + 0.1 * rates
        u = u + 0.1 * np.roll(u, -2, axis=0)
    square = np.reshape(u, (2, 3))
    return np.sum(square * square * (np.eye(2, 3) + np.ones((2, 3))))


def test_writes_rolls_and_numbers_saved_beside_arrays_give_numpys_gradient():
    args = (np.array([0.3, -1.0, 2.0, 0.5, 1.5, -0.2]), np.array([0.2, 0.5, 0.3]))
    got = astgrad.grad(simulated, wrt=(0, 1), backend="numba")(*args)
    numpy = astgrad.grad(simulated, wrt=(0, 1))(*args)
    for position, a, b in zip((0, 1), got, numpy):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, _numeric.numeric_grad(simulated, args, position), rtol=1e-6, atol=1e-8)


def fancy(x):
    y = np.zeros(3)
    y[[0, 0, 2]] = x
    return np.sum(y * y)


def test_a_write_through_an_index_array_is_refused_at_the_line_and_auto_runs_numpy():
    """An index array may name an element twice, where numpy keeps the last write: left to numpy."""
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fancy, backend="numba")(x)
    assert "y[[0, 0, 2]] = x" in str(info.value)
    with pytest.warns(RuntimeWarning, match="backend='auto' runs the numpy backend"):
        got = astgrad.grad(fancy, backend="auto")(x)
    np.testing.assert_array_equal(got, [0.0, 4.0, 6.0])  # the first write to y[0] is lost


def root(x):
    return math.sqrt(x) * 2.0 + math.log(x)


def test_math_outside_its_domain_raises_pythons_error_compiled():
    gradient = astgrad.grad(root, backend="numba")
    assert gradient(4.0) == pytest.approx(0.5 + 0.25, rel=1e-15)
    for bad in (-1.0, 0.0):
        with pytest.raises(ValueError, match="math domain error"):
            gradient(bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ValueError numpy raises too is no reason to fall back
        auto = astgrad.grad(root, backend="auto")
        with pytest.raises(ValueError, match="math domain error"):
            auto(-1.0)
        assert auto(4.0) == pytest.approx(0.75, rel=1e-15)


def write_at(x, i):
    y = np.zeros(3)
    y[i] = x
    y[-1] += x * 2.0
    return np.sum(y * y)


def test_an_item_written_past_the_end_raises_numpys_index_error():
    gradient = astgrad.grad(write_at, backend="numba")
    for i in (0, -1):
        assert gradient(1.5, i) == astgrad.grad(write_at)(1.5, i) == (15.0 if i == 0 else 27.0)
    for i in (3, -4):
        with pytest.raises(IndexError):
            gradient(1.5, i)
