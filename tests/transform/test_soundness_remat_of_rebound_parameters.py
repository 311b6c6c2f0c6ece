"""A parameter rebound by one cheap operation keeps its first value for the adjoint.

At optimize=2 the adjoint recomputes a cheap value (``x = y + y``) instead of saving it.  When
that name is a parameter, the primal's push before the rebinding also saved the parameter's
first value, which the adjoint restores for the reads above it (``np.cos(-x)`` of
``np.sin(-x)``): dropping the push gave a wrong gradient with no error (a random program of
the slow suite found it).
"""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad


def rebound_by_an_add(x, y):
    v0 = np.sin(-x)
    x = y + y
    return np.sum(v0 * v0) + np.sum(x * y)


def rebound_by_a_product(x, y):
    a = np.exp(x * 0.5)
    x = x * y
    return np.sum(a * x) + np.sum(np.cos(x))


def rebound_by_a_negation_in_a_loop_body(x, y):
    total = 0.0
    for i in range(3):
        total = total + np.sum(np.sin(x) * y)
    x = -y
    return total + np.sum(x * x * y)


X = np.array([0.3, -0.7, 1.1])
Y = np.array([0.5, 0.2, -0.4])


@pytest.mark.parametrize("f", [rebound_by_an_add, rebound_by_a_product, rebound_by_a_negation_in_a_loop_body])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_gradient_of_a_rebound_parameter_equals_differences(f, level):
    assert_grad(astgrad.grad(f, wrt=(0, 1), optimize=level), f, X, Y, wrt=(0, 1), rtol=1e-6, atol=1e-8)


def test_the_first_value_is_restored_not_recomputed():
    """The adjoint's last binding of x before ``np.cos(-x)`` restores the saved first value."""
    lines = [line.strip() for line in astgrad.grad(rebound_by_an_add, wrt=(0, 1)).source.splitlines()]
    reader = next(i for i, line in enumerate(lines) if "np.cos(-x)" in line)
    last = max(i for i, line in enumerate(lines[:reader]) if line.startswith("x = "))
    assert lines[last] != "x = y + y", "\n".join(lines)
