"""A loop's ``unbroadcast`` between values proven one shape is dropped; a list's items proven one shape are not saved.

FixedShapes' roots (passes/fixed_shapes.py) now decide, for an elementwise
operation in a loop of an entry or a callee (passes/trip_shapes.py), that an
operand has the result's shape: RK4's ``k1 + 2 * k2``, ``h * k3`` and ``y + h
* k3`` (a callee's ``np.array([a, b])`` of shape ``(2,)`` broadcast with a
``y`` of rank 1 is ``(2,)`` or numpy raises).  A private list's items get a
root where the first items and every append have one (``ys = [y0]``,
``ys.append(y * c)``), so ``y = ys[i]`` is not saved for its shape.

Where the proof must fail, the code keeps its ``unbroadcast`` and the number
is right at every level (central differences): an item that grows (a first
state of length 1, the right-hand side of length 2), a callee's result of
shape ``(1,)`` (broadcasting it is no proof), a state of rank 2, an append
of another length, float32 meeting float64, int and strided first states.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def rk4(f, y0, t, p):
    ys = [y0]
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[i]
        k1 = f(t[i], y, p)
        k2 = f(t[i] + h / 2, y + h / 2 * k1, p)
        k3 = f(t[i] + h / 2, y + h / 2 * k2, p)
        k4 = f(t[i] + h, y + h * k3, p)
        ys.append(y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.stack(ys[1:])


def lotka_volterra(t, y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def first_only(t, y, p):  # reads y[0] alone: a first state of length 1 grows to 2
    return np.array([p[0] * y[0] - p[1], p[2] * y[0] + p[3]])


def one_entry(t, y, p):  # shape (1,): it broadcasts into y's
    return np.array([p[0] * np.sum(y) - p[1]])


def corners(t, y, p):  # shape (2,), broadcast into a y of rank 2
    return np.array([p[0] * y[0, 0] - p[1], p[2] * y[-1, -1] - p[3]])


def fit(p, f, t, y0):
    return np.sum(rk4(f, y0, t, p) ** 2)


def _check(fn, args, level, wrt=0, rtol=1e-6):
    gradient = astgrad.grad(fn, wrt=wrt, optimize=level)
    got = gradient(*args)
    want = numeric_grad(fn, tuple(a.astype(np.float64) if isinstance(a, np.ndarray) else a for a in args), wrt)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-8)
    return gradient.source


def _half(source, name):
    start = source.index(f"def {name}")
    end = source.find("\ndef ", start + 1)
    return source[start:] if end < 0 else source[start:end]


@pytest.mark.parametrize("level", LEVELS)
def test_rk4_s_stages_add_without_unbroadcast(level):
    t = np.linspace(0.0, 1.0, 6)
    p = np.array([1.1, 0.4, 0.3, 0.9])
    source = _check(fit, (p, lotka_volterra, t, np.array([1.0, 0.5])), level)
    backward = _half(source, "backward_rk4")
    if level:
        for name in ("k1", "k2", "k3", "k4", "t22", "t24"):
            assert f"shape({name})" not in backward, backward
        assert "append(only_shape(t23))" not in source
    assert "shape(y)" in backward  # the first state's shape is not the stages': y is summed to it


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", ["grows", "one", "rows", "int", "view", "float32"])
def test_rk4_where_the_shapes_are_not_one(level, case):
    t = np.linspace(0.0, 1.0, 5)
    p = np.array([1.1, 0.4, 0.3, 0.9])
    f, y0, rtol = {
        "grows": (first_only, np.array([0.7]), 1e-6),  # y + h * k1: (1,) with (2,), the item grows
        "one": (one_entry, np.array([1.0, 0.5, 0.2]), 1e-6),  # k of shape (1,): no constant proof
        "rows": (corners, np.array([[1.0, 0.5], [0.3, 0.2], [0.4, 0.6]]), 1e-6),  # rank 2 over (2,)
        "int": (lotka_volterra, np.array([1, 2]), 1e-6),
        "view": (lotka_volterra, np.array([1.0, 9.0, 0.5, 9.0])[::2], 1e-6),
        "float32": (lotka_volterra, np.array([1.0, 0.5], dtype=np.float32), 2e-3),  # float32 meets float64 p
    }[case]
    source = _check(fit, (p, f, t, y0), level, rtol=rtol)
    if case in ("grows", "one", "rows"):
        assert "shape(y)" in _half(source, "backward_rk4")


def decay(c, y0, n):
    ys = [y0]
    for i in range(n):
        y = ys[i]
        ys.append(y * (1.0 - 0.3 * c) + np.sin(y))
    return np.sum(np.stack(ys) ** 2)


def lengthens(c, y0, n):
    ys = [y0]
    for i in range(n):
        y = ys[i]
        ys.append(np.concatenate([y, y[:1]]) * (1.0 - 0.3 * c))
    return sum(np.sum(item ** 2) for item in ys)


def widens(c, y0, w, n):
    ys = [y0]
    for i in range(n):
        y = ys[i]
        ys.append(y * (1.0 - 0.3 * c) + w)  # w broadcasts: the first item (1,), the others w's
    return np.sum(np.stack(ys[1:]) ** 2)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("y0", [np.array([1.0, 0.5, 0.2]), np.array([1, 2, 3]),
                                np.array([1.0, 9.0, 0.5, 9.0, 0.2])[::2], np.array([1.0, 0.5], dtype=np.float32)],
                         ids=["float", "int", "view", "float32"])
def test_a_list_s_items_of_one_shape_are_not_saved(level, y0):
    rtol = 2e-3 if y0.dtype == np.float32 else 1e-6
    source = _check(decay, (0.4, y0, 4), level, rtol=rtol)
    _check(decay, (0.4, y0, 4), level, wrt=1, rtol=rtol)
    if level:
        assert "only_shape(y)" not in source and "shape(y)" not in source, source


@pytest.mark.parametrize("level", LEVELS)
def test_a_list_whose_items_change_shape_keeps_its_saves(level):
    y0 = np.array([1.0, 0.5])
    _check(lengthens, (0.4, y0, 3), level)
    _check(lengthens, (0.4, y0, 3), level, wrt=1)
    w = np.array([0.1, -0.2, 0.3])
    source = _check(widens, (0.4, np.array([0.7]), w, 3), level)
    _check(widens, (0.4, np.array([0.7]), w, 3), level, wrt=1)
    assert "shape(y)" in source
