"""The gradient of a number that scales arrays is their sum, without ``shape(x)`` (passes/number_unbroadcasts.py).

``kappa * (u[2:] - 2 * u[1:-1] + u[:-2])`` in a loop: kappa's gradient is
``unbroadcast(g, shape(kappa))``, which for a ``kappa`` of rank 0 (known
at call time) adds up every entry of ``g``; it is written ``summed(g)``.
The ranks are proven per call: a ``kappa`` given as an array in a later call
gets its own adjoint, and numbers of every kind (a Python float, a numpy
float32, a 0-d array) get their gradient, checked against central
differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.random.default_rng(5).random(6) + 0.5


def heat(kappa, u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def scaled_rows(c, m):
    total = 0.0
    for i in range(m.shape[0]):
        total = total + np.sum(np.sin(c * m[i]) * m)
    return total


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("kappa", [0.2, np.float64(0.2), np.array(0.2)], ids=["float", "float64", "0-d"])
def test_a_number_s_gradient(kappa, level):
    g = astgrad.grad(heat, wrt=(0, 1), optimize=level)
    dkappa, du = g(kappa, U.copy())
    assert np.ndim(dkappa) == 0
    np.testing.assert_allclose(dkappa, gradient(lambda k: heat(k, U.copy()), 0.2), rtol=1e-6)
    np.testing.assert_allclose(du, gradient(lambda u: heat(0.2, u), U.copy()), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("level", LEVELS)
def test_then_an_array_in_its_place(level):
    g = astgrad.grad(heat, optimize=level)
    g(0.2, U.copy())
    kappa = np.array([0.1, 0.2, 0.15, 0.3])
    np.testing.assert_allclose(g(kappa, U.copy()), gradient(lambda k: heat(k, U.copy()), kappa), rtol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_a_matrix_scaled_by_a_number(level):
    m = np.random.default_rng(6).random((3, 4))
    got = astgrad.grad(scaled_rows, optimize=level)(0.7, m)
    np.testing.assert_allclose(got, gradient(lambda c: scaled_rows(c, m), 0.7), rtol=1e-6)


def test_the_float32_number_gets_the_sum_numpy_would_give():
    g = astgrad.grad(heat, wrt=(0,))
    got = g(np.float32(0.2), U.astype(np.float32))
    np.testing.assert_allclose(got, gradient(lambda k: heat(k, U.copy()), 0.2), rtol=1e-3)


def test_the_source_sums_kappa_s_gradient():
    g = astgrad.grad(heat, wrt=(0, 1))
    g(0.2, U.copy())
    assert "summed(" in g.source and "shape(kappa)" not in g.source


@pytest.mark.parametrize("level", LEVELS)
def test_the_second_derivative_through_the_sum(level):
    first = astgrad.grad(heat, optimize=level)
    second = astgrad.grad(lambda k: first(k, U.copy()), optimize=level)
    np.testing.assert_allclose(second(0.2), gradient(lambda k: first(k, U.copy()), 0.2, eps=1e-5), rtol=1e-5)


def test_per_example_gradients_of_the_number():
    kappas = np.array([0.1, 0.2, 0.25])
    got = astgrad.vmap(astgrad.grad(heat))(kappas, np.stack([U] * 3))
    want = [gradient(lambda k: heat(k, U.copy()), float(k)) for k in kappas]
    np.testing.assert_allclose(got, want, rtol=1e-6)
