"""A loop's index that its body rebinds keeps, for the adjoint, the value the body gave it.

The reverse loop of ``for i in range(3)`` rebinds ``i`` to each index in turn, at the top of each
reversed iteration.  When the body itself rebinds ``i`` (``i = np.sum(t)``, or an inner
``for i in range(2)``), the adjoint of the statements after that rebinding read the loop's index
instead of the body's value: a wrong gradient with no error at every level (for the inner loop,
d/dx 0 where finite differences give 0.214).  The loop now counts with an index of its own and
binds the user's name to it first thing in the body, an ordinary assignment the adjoint undoes.
"""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad, directional


def rebound_to_a_sum(x, y):
    for i in range(3):
        t = x * 2.0
        i = np.sum(t)
        x = np.sin(t) * i
    return np.sum(x * x)


def rebound_by_an_inner_loop(x, y):
    for i in range(3):
        for i in range(2):
            x = np.sin(x) * y
        x = x * i
    return np.sum(x * x)


def rebound_to_a_number(x, y):
    for i in range(3):
        x = np.sin(x) * y
        i = i + 0.5
        x = x * i
    return np.sum(x * x)


def enumerate_index_rebound(x, y):
    for i, v in enumerate([x, y]):
        i = np.sum(v * x)
        x = np.sin(x) * i
    return np.sum(x * x)


def rebound_with_a_break(x, y):
    for i in range(4):
        x = np.sin(x) * y + 0.1 * i
        i = 2.5
        x = x * i
        if np.sum(x) > 0.3:
            break
    return np.sum(x * x) + i


def index_read_after_the_loop(x, y):
    for i in range(3):
        x = np.cos(x) * y
        i = i * 2
    return np.sum(x * i)


CASES = [rebound_to_a_sum, rebound_by_an_inner_loop, rebound_to_a_number, enumerate_index_rebound,
         rebound_with_a_break, index_read_after_the_loop]
X = np.array([0.37, -0.65, 1.13])
Y = np.array([0.93, 0.43, -0.42])


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("level", [0, 1, 2])
def test_gradient_equals_differences(f, level):
    assert_grad(astgrad.grad(f, wrt=(0, 1), optimize=level), f, X, Y, wrt=(0, 1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f", CASES)
def test_tangent_equals_differences(f):
    u, v = np.array([0.6, -0.3, 0.74]), np.array([-0.2, 0.5, 0.3])
    _, tangent = astgrad.jvp(f, (0, 1))(X, Y, (u, v))
    np.testing.assert_allclose(tangent, directional(lambda t: f(X + t * u, Y + t * v), 0.0, 1.0), rtol=1e-6)


def test_the_value_after_the_loop_is_pythons():
    """The body's last value of i, as Python leaves it (here 4), reaches the result."""
    x = np.array([0.5, 0.25, -1.0])
    value, _ = astgrad.value_and_grad(index_read_after_the_loop)(x, Y)
    assert value == index_read_after_the_loop(x, Y)
