"""A user function's result of a known rank is an array or a number: its gradient adds with ``+``, not ``accumulate``.

A call's result may be a list or a tuple, whose gradients ``accumulate``
adds item by item; where the ranks prove its rank (front/ranks.py, the
callee's returned value by the call's arguments': RK4's ``k3 = f(t, y, p)``
of a right-hand side ``np.array([a, b])``), it is none, and the adjoint
writes ``dk3 = dk3 + g``.  A callee returning a list or a tuple keeps
``accumulate``; every case against central differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def pair(y, p):
    return np.array([p[0] * y[0] - p[1] * y[1], p[2] * y[0] * y[1]])


def as_list(y, p):
    return [p[0] * y[0] - p[1] * y[1], p[2] * y[0] * y[1]]


def as_tuple(y, p):
    return p[0] * y[0] - p[1] * y[1], p[2] * y[0] * y[1]


def stepped(f):
    def program(p, y0):
        y = y0
        for _ in range(3):
            k = f(y, p)
            y = y + 0.1 * np.array([k[0], k[1]]) + 0.05 * np.array([k[1], k[0]])
            k2 = f(y, p)
            y = y * 0.9 + 0.1 * k2[0]
        return np.sum(y ** 2)
    return program


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [pair, as_list, as_tuple])
def test_a_call_s_gradient_adds(level, f):
    p = np.array([1.1, 0.4, 0.3])
    y0 = np.array([0.5, 0.7])
    program = stepped(f)
    gradient = astgrad.grad(program, optimize=level)
    np.testing.assert_allclose(gradient(p, y0), numeric_grad(program, (p, y0), 0), rtol=1e-6, atol=1e-9)
    if f is pair and level:
        assert "accumulate(dk," not in gradient.source, gradient.source
    if f is not pair:
        assert "accumulate(dk," in gradient.source, gradient.source
