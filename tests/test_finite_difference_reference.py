"""The finite-difference reference every test compares with (tests/_numeric.py), against closed forms."""

import numpy as np
import pytest

from _numeric import directional, gradient, numeric_grad

X = np.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]])


def test_gradient_of_an_array_function_is_its_closed_form():
    np.testing.assert_allclose(gradient(lambda x: np.sum(x ** 3), X), 3 * X ** 2, rtol=1e-7, atol=1e-8)


def test_gradient_of_a_number_is_a_float():
    got = gradient(lambda t: np.sin(t) * t, 0.4)
    assert type(got) is float
    assert got == pytest.approx(np.cos(0.4) * 0.4 + np.sin(0.4), rel=1e-8)


def test_each_evaluation_gets_its_own_array():
    def writes_into_its_argument(x):
        total = float(np.sum(x * x))
        x[...] = 0.0
        return total
    original = X.copy()
    np.testing.assert_allclose(gradient(writes_into_its_argument, X), 2 * original, rtol=1e-7)
    np.testing.assert_array_equal(X, original)


def test_directional_derivative_is_the_gradient_along_v():
    v = np.array([[1.0, 0.0, -2.0], [0.5, 3.0, 1.0]])
    assert directional(lambda x: np.sum(np.exp(x)), X, v) == pytest.approx(np.sum(np.exp(X) * v), rel=1e-7)


def test_a_complex_point_moves_along_a_complex_direction():
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j])
    step = np.array([0.0, 1.0j])
    # |z|^2 = x^2 + y^2: along i at the second element, 2 y
    assert directional(lambda w: np.sum(np.abs(w) ** 2), z, step) == pytest.approx(2 * 0.3, rel=1e-7)


def test_numeric_grad_differentiates_one_argument_of_several():
    def f(a, b, scale=1.0):
        return scale * np.sum(a * b ** 2)
    a, b = X, X + 1.0
    np.testing.assert_allclose(numeric_grad(f, (a, b), 1, kwargs={"scale": 2.0}), 4 * a * b, rtol=1e-6)
