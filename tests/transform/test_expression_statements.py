"""A statement that is an expression (not a call) is evaluated, its value read by nothing, as Python does.

The code a gradient generates keeps such statements where a value it
computed went unused but may raise (``(a1 > a0) | np.isnan(a0)`` from
np.fmax's rule, a branch of lu_solve's): a hessian differentiates that code
again, and refused it.  In user code the statement raises what Python raises
(an index out of range) and changes no derivative; a yield stays refused.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.4, -1.1, 0.9])
Y = np.array([1.3, 0.2, -0.5])


def with_unused_values(a, b):
    (a > b) | np.isnan(a)
    a[0] * 2.0
    return np.sum(np.sin(a) * b ** 2)


def reads_past_the_end(a):
    a[5]
    return np.sum(a)


def test_first_and_second_derivatives_ignore_the_statement():
    g = astgrad.grad(with_unused_values, wrt=(0, 1))
    ga, gb = g(X, Y)
    np.testing.assert_allclose(ga, gradient(lambda a: with_unused_values(a, Y), X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, gradient(lambda b: with_unused_values(X, b), Y), rtol=1e-6, atol=1e-8)
    first = astgrad.grad(with_unused_values)
    expected = np.array([gradient(lambda p, i=i: first(p, Y)[i], X) for i in range(3)])
    np.testing.assert_allclose(astgrad.hessian(with_unused_values)(X, Y), expected, rtol=1e-5, atol=1e-6)


def test_the_statement_raises_what_python_raises():
    with pytest.raises(IndexError):
        astgrad.grad(reads_past_the_end)(X)
