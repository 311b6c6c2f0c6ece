"""A differentiated value passed by keyword gets its gradient in both engines, or a located refusal.

Rules return gradients by position; before, ``np.clip(x, a_min=y)`` gave ``y``
a zero gradient (generated) or none at all (tape) without an error.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad


def clipped(x, y):
    return np.sum(np.clip(x, a_min=y, a_max=2.0) * np.array([1.0, 2.0, 3.0]))


def weighted(x, w):
    return np.average(x, weights=w)


def chosen(x, y):
    return np.sum(np.select([x > 0.5], [x * 2.0], default=y * y))


def padded(x, y):
    return np.sum(np.pad(x, 1, constant_values=y))


X = np.array([0.0, 1.0, 3.0])
Y = np.array([0.5, 0.5, 0.5])


def taped(f, *values):
    leaves = [astgrad.tensor(v, requires_grad=True) for v in values]
    f(*leaves).backward()
    return [leaf.grad.numpy() for leaf in leaves]


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_keyword_values_get_their_gradients(engine):
    run = (lambda f, *v: astgrad.grad(f, wrt=(0, 1))(*v)) if engine == "generated" else taped
    gx, gy = run(clipped, X, Y)
    np.testing.assert_allclose(gx, [0.0, 2.0, 0.0])  # 3.0 is above a_max
    np.testing.assert_allclose(gy, [1.0, 0.0, 0.0])
    gx, gw = run(weighted, X, np.array([1.0, 2.0, 1.0]))
    # average = sum(w x) / sum(w): d/dw_i = (x_i - average) / sum(w)
    np.testing.assert_allclose(gx, [0.25, 0.5, 0.25])
    np.testing.assert_allclose(gw, (X - 1.25) / 4.0)
    gx, gy = run(chosen, X, Y)
    np.testing.assert_allclose(gx, [0.0, 2.0, 2.0])
    np.testing.assert_allclose(gy, [1.0, 0.0, 0.0])


def test_a_keyword_the_rule_cannot_differentiate_is_refused_with_its_line():
    with pytest.raises(astgrad.TransformError, match="constant_values= passed by keyword") as info:
        astgrad.grad(padded, wrt=(0, 1))(X, 0.5)
    assert "test_keyword_arguments_get_gradients.py" in str(info.value)
    with pytest.raises(TypeError, match="constant_values= passed by keyword"):
        taped(padded, X, np.array(0.5))
