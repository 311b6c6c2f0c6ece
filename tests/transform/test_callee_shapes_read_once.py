"""A callee's backward half reads ``shape(y)`` once where ``y`` cannot change after it is popped.

``backward_f`` of a right-hand side ``np.array([p[0] * y[0] - ..., ...])``
adds each item's gradient into ``dy`` and ``dp`` with ``add_at(dy, g,
shape(y), i)``, ten times a call; ``y`` and ``p`` are popped once at its
start and never bound again, so each shape is read once there
(passes/invariant_shapes.py, ``_Hoist.function``).  Where a name is bound
again in the callee (restored by a second pop), or a shape is read once,
the reads stay; each case against central differences at every level, with
float32 meeting float64, an int array, a strided view.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def rhs(y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def rebinding(y, p):
    a = p[0] * y[0] + p[1] * y[1]
    y = y[::-1] * a
    return np.array([a * y[0], p[2] * y[1] * y[0]])


def twice(f):
    def program(p, y):
        k = f(y, p)
        return np.sum(f(y + 0.5 * k, p) * k)
    return program


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [rhs, rebinding])
@pytest.mark.parametrize("y", [np.array([1.0, 0.5]), np.array([1.0, 0.5], dtype=np.float32), np.array([2, 1]),
                               np.array([1.0, 7.0, 0.5, 7.0])[::2]], ids=["float64", "float32", "int", "view"])
def test_callee_gradients_with_shapes_read_once(level, f, y):
    p = np.array([1.1, 0.4, 0.3, 0.9])
    program = twice(f)
    got = astgrad.grad(program, wrt=(0, 1), optimize=level)(p, y)
    wide = y.astype(np.float64)
    for i, g in enumerate(got):
        want = numeric_grad(program, (p, wide), i)
        np.testing.assert_allclose(g, want, rtol=1e-3 if y.dtype == np.float32 else 1e-6, atol=1e-6)


def test_the_popped_names_shapes_are_read_once_and_a_rebound_name_s_stay():
    p, y = np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.0, 0.5])
    gradient = astgrad.grad(twice(rhs), wrt=(0, 1))
    gradient(p, y)
    backward = gradient.source[gradient.source.index("def backward_rhs"):]
    assert backward.count("shape(y)") == 1 and backward.count("shape(p)") == 1, backward
    gradient = astgrad.grad(twice(rebinding), wrt=(0, 1))
    gradient(p, y)
    backward = gradient.source[gradient.source.index("def backward_rebinding"):]
    assert backward.count("shape(p)") == 1, backward  # p is popped once
