"""jvp of functions that fill dicts and lists item by item (``d["k"] = v``, ``lst[i] = v``) with values that move.

The tangent of such a write is the same write of the tangents (a dict in
place, as the primal writes it; a list or array copied, as the primal
copies).  Each tangent is checked against a central difference along the
direction, and against ``<grad, u>`` from reverse mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from _numeric import directional


def into_a_dict(x):
    d = {}
    d["a"] = np.sin(x)
    d["b"] = x * 2.0
    return np.sum(d["a"] * d["b"])


def over_a_list_item(x):
    lst = [x, x * 2.0]
    lst[1] = np.cos(x)
    return np.sum(lst[0] * lst[1])


def keyed_by_step(x):
    hs = {}
    hs[-1] = x
    for t in range(3):
        hs[t] = np.tanh(hs[t - 1] * 1.5)
    return np.sum(hs[2])


def nested_dicts(x):
    hs = {}
    hs[0] = {}
    hs[0]["h"] = np.sin(x)
    return np.sum(hs[0]["h"] ** 2)


def a_slice_of_a_list(x):
    lst = [x, x]
    lst[1:] = [x * 3.0]
    return np.sum(lst[0] * lst[1])


def one_hot_inputs(x):
    xs = {}
    for t in range(2):
        xs[t] = np.zeros(2)
        xs[t][t] = 1.0
    return np.sum(xs[0] * x + xs[1] * x ** 2)


def rows_of_an_array(x):
    a = np.zeros((2, 2))
    a[0] = x
    a[1] = np.sin(x)
    return np.sum(a ** 2)


def a_dict_of_a_dict_argument(p):
    q = {}
    q["w"] = p["w"] * 2.0
    return np.sum(q["w"] * p["w"])


@pytest.mark.parametrize("f", [into_a_dict, over_a_list_item, keyed_by_step, nested_dicts, a_slice_of_a_list,
                               one_hot_inputs, rows_of_an_array], ids=lambda f: f.__name__)
def test_the_tangent_of_item_assignment_is_the_directional_derivative(f):
    x, u = np.array([0.3, 0.7]), np.array([1.0, -0.5])
    value, tangent = astgrad.jvp(f)(x, u)
    assert value == pytest.approx(f(x))
    assert tangent == pytest.approx(directional(f, x, u), rel=1e-6, abs=1e-8)
    assert tangent == pytest.approx(np.sum(astgrad.grad(f)(x) * u), rel=1e-10)


def test_item_assignment_reading_a_dict_argument():
    p, u = {"w": np.array([0.3, 0.7])}, {"w": np.array([1.0, -0.5])}
    _, tangent = astgrad.jvp(a_dict_of_a_dict_argument)(p, u)
    assert tangent == pytest.approx(directional(lambda w: a_dict_of_a_dict_argument({"w": w}), p["w"], u["w"]))
