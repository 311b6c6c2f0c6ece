"""Hessians (forward mode over the generated gradient) of item writes in loops and of list comprehensions.

Before, the first said ``scatter`` had no forward rule for an index popped off
the gradient's stack, the second failed at the gradient's ``t1.pop()``, and a
comprehension returned by a function, or np.concatenate of np.split's parts,
was refused with a message about names astgrad made (``result.append``) or
about astgrad's own source. Each is checked against central differences of
the generated gradient.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.8, -1.3, 1.7, 0.4])


def products_of_neighbours(v):
    y = np.zeros(4)
    for i in range(1, 4):
        y[i] = v[i] * v[i - 1]
    return np.sum(y * y)


def sum_of_a_comprehension(v):
    return np.sum([v[i] ** 3 for i in range(4)])


def comprehension_with_a_condition(v):
    squares = [v[i] * v[j] for i in range(4) for j in range(4) if i < j]
    return np.sum(np.array(squares) ** 2)


def squares(v):
    return [v[i] ** 2 for i in range(4)]


def calls_a_function_returning_a_comprehension(v):
    parts = squares(v)
    return np.sum(parts[0] * parts[2]) + np.sum(parts[1] * parts[3] * parts[0])


def concatenated_split(v):
    parts = np.split(v, [1])
    return np.sum(np.concatenate(parts) ** 3) + np.sum(parts[1] ** 2)


def unequal_array_split(v):
    a, b, c = np.array_split(v * v, 3)
    return np.sum(a * b[:1]) + np.sum(c ** 3) * np.sum(b)


CASES = [products_of_neighbours, sum_of_a_comprehension, comprehension_with_a_condition,
         calls_a_function_returning_a_comprehension, concatenated_split, unequal_array_split]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_matches_differences_of_the_gradient(f):
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X.copy()), gradient(f, X), rtol=1e-6, atol=1e-6)
    expected = np.array([gradient(lambda p, i=i: g(p)[i], X) for i in range(X.size)])
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()), expected, rtol=1e-5, atol=1e-5)


def test_jvp_of_a_returned_comprehension():
    u = np.array([1.0, -2.0, 0.5, 3.0])
    value, tangent = astgrad.jvp(squares)(X.copy(), u)
    np.testing.assert_allclose(value, X ** 2)
    np.testing.assert_allclose(tangent, 2 * X * u)
    np.testing.assert_allclose(astgrad.vjp(squares)(X.copy(), list(u)), 2 * X * u)


def generator(v):
    total = np.sum(v)
    yield total


def test_a_generator_is_refused_at_its_yield():
    with pytest.raises(astgrad.TransformError, match="generators cannot be differentiated") as error:
        astgrad.grad(generator)(X.copy())
    message = str(error.value)
    assert "yield total" in message and "returns nothing" not in message
