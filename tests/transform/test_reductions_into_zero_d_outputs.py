"""A reduction written into a 0-d array (``out=``), and numpy functions of Python numbers, in generated code.

The seed of a 0-d output is the Python number 1.0, and a Python float reaches
rules as itself (no ``.dtype``): both crashed inside astgrad before.
"""

import math

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.6, -1.3, 2.1])


def sum_into_zero_d(x):
    z = np.zeros(())
    np.sum(x * x, out=z)
    return z


def method_sum_into_zero_d(x):
    z = np.zeros(())
    (x * x).sum(out=z)
    return z * 2.0


def mean_into_zero_d(x):
    z = np.zeros(())
    np.mean(x * x * x, out=z)
    return z


def sum_along_an_axis_into_out(x):
    z = np.zeros(2)
    np.sum(x[:, None] * x[None, :2], axis=0, out=z)
    return np.sum(z * z)


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("f", [sum_into_zero_d, method_sum_into_zero_d, mean_into_zero_d, sum_along_an_axis_into_out],
                         ids=lambda f: f.__name__)
def test_reduction_into_out(f, level):
    expected = gradient(lambda v: float(f(v)), X)
    np.testing.assert_allclose(astgrad.grad(f, optimize=level)(X.copy()), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(astgrad.jacfwd(f)(X.copy()), expected, rtol=1e-6, atol=1e-8)
    g = astgrad.grad(f)
    hessian = np.array([gradient(lambda v, i=i: g(v)[i], X) for i in range(X.size)])
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()), hessian, rtol=1e-5, atol=1e-6)


def sign_times(a):
    return np.sign(a) * a * a


def sign_of_a_math_result(a):
    return np.sign(math.sin(a)) * a


def sign_of_two_numbers(a, b):
    return np.sign(a * b) * b + np.abs(a) * np.sign(a)


@pytest.mark.parametrize("a", [1.5, -0.7])
def test_sign_of_a_python_float(a):
    for f in (sign_times, sign_of_a_math_result):
        assert astgrad.grad(f)(a) == pytest.approx(gradient(f, a), rel=1e-6)
        assert astgrad.jacfwd(f)(a) == pytest.approx(gradient(f, a), rel=1e-6)
        assert astgrad.hessian(f)(a) == pytest.approx(gradient(astgrad.grad(f), a), rel=1e-5, abs=1e-6)
    da, db = astgrad.grad(sign_of_two_numbers, wrt=(0, 1))(a, 2.0)
    assert da == pytest.approx(gradient(lambda v: sign_of_two_numbers(v, 2.0), a), abs=1e-6)
    assert db == pytest.approx(gradient(lambda v: sign_of_two_numbers(a, v), 2.0), abs=1e-6)
