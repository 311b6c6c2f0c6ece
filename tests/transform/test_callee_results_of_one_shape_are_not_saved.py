"""A call's result whose shape the callee fixes is not saved for its shape on every trip of a loop.

RK4 taking ``f`` calls ``k1 = f(t, y, p)`` four times a step; a right-hand
side returning ``np.array([a, b])`` of numbers gives an array of shape
``(2,)`` whatever it is given, so the reverse sweep may read the shapes of
``k1`` and of the broadcasts of it with numbers (``h * k1``, ``k1 + 2 * k2``)
from their last values (passes/fixed_shapes.py, pipeline
``returned_shape``).  The ways a wrong proof would give a wrong number,
each against central differences at every level: a list grown by appends
before ``np.array`` (its length changes from trip to trip), items of rank 1
whose length changes, the list read by another call before ``np.array``, a
list bound in a branch, the state ``y`` itself (a list's item, its shape
the broadcast of the first state's and the result's: not proven); with
float32 arguments, a strided view, an int first state.
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
    return np.stack(ys)


def lotka_volterra(t, y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def fit(p, f, t, y0):
    return np.sum(rk4(f, y0, t, p) ** 2)


def fit_float64(p, f, t):
    return np.sum(rk4(f, np.array([1.0, 0.5]), t, p) ** 2)


def grown(p, n):
    items = [p[0] * p[1]]
    for j in range(n):
        items.append(p[j % 4] * p[0])
    return np.array(items)


def rows(p, n):
    return np.array([p[:n + 1] * p[0], p[:n + 1]])


def logged(p, n):
    items = [p[0] * p[1], p[2] * n]
    note(items)
    return np.array(items)


def note(items):
    return len(items)


def branched(p, n):
    items = [p[0] * p[1]]
    if n % 2:
        items = [p[0] * p[1], p[2] * p[3]]
    return np.array(items)


def pairs(p, n):
    return np.array([p[0] * p[1] + n, p[2] * p[3]])


def looped(g):
    def program(p):
        total = 0.0 * p[0]
        for n in range(4):
            k = g(p, n)
            s = p[1] + k  # k read for its shape only: its gradient is s's, summed to k's shape
            total = total + np.sum(s * s)
        return total
    return program


def _check(fn, args, level, wrt=0):
    got = astgrad.grad(fn, wrt=wrt, optimize=level)(*args)
    np.testing.assert_allclose(got, numeric_grad(fn, args, wrt), rtol=1e-6, atol=1e-8)
    return got


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("callee", [grown, rows, logged, branched, pairs])
def test_a_callee_s_result_shape_is_proven_or_saved(level, callee):
    p = np.array([1.1, 0.4, 0.3, 0.9, 0.7])
    _check(looped(callee), (p,), level)


def test_only_the_callee_of_numbers_drops_its_saves():
    p = np.array([1.1, 0.4, 0.3, 0.9, 0.7])
    for callee, dropped in ((pairs, True), (grown, False), (rows, False), (logged, False), (branched, False)):
        source = astgrad.grad(looped(callee), optimize=2)
        source(p)
        assert ("only_shape(k)" not in source.source) == dropped, (callee.__name__, source.source)


@pytest.mark.parametrize("level", LEVELS)
def test_rk4_reads_the_stages_shapes_from_their_last_values(level):
    t = np.linspace(0.0, 1.0, 6)
    p = np.array([1.1, 0.4, 0.3, 0.9])
    gradient = astgrad.grad(fit_float64, optimize=level)
    got = gradient(p, lotka_volterra, t)
    np.testing.assert_allclose(got, numeric_grad(fit_float64, (p, lotka_volterra, t), 0), rtol=1e-6)
    if level:
        forward = gradient.source[gradient.source.index("def forward_rk4"):gradient.source.index("def backward_rk4")]
        assert "(k1)" not in forward and "(t24)" not in forward and "(k4)" not in forward, forward
        assert "append(only_shape(y))" in forward or "append(y)" in forward  # a list's item: not proven


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("y0", [np.array([1.0, 0.5]), np.array([1, 2]), np.array([1.0, 9.0, 0.5, 9.0])[::2],
                                np.array([[1.0, 0.5, 0.2], [0.5, 0.3, 0.4]]), np.array([0.7])],
                         ids=["float", "int", "view", "rows", "one"])
def test_rk4_with_first_states_of_other_shapes(level, y0):
    t = np.linspace(0.0, 1.0, 5)
    p = np.array([1.1, 0.4, 0.3, 0.9])
    if y0.shape == (1,):  # y[1] of a 1-vector: the program raises, and so does its gradient
        with pytest.raises(IndexError):
            fit(p, lotka_volterra, t, y0)
        with pytest.raises(IndexError):
            astgrad.grad(fit, optimize=level)(p, lotka_volterra, t, y0)
        return
    _check(fit, (p, lotka_volterra, t, y0), level)


@pytest.mark.parametrize("level", LEVELS)
def test_rk4_in_float32(level):
    t = np.linspace(0.0, 1.0, 5).astype(np.float32)
    p = np.array([1.1, 0.4, 0.3, 0.9], dtype=np.float32)
    y0 = np.array([1.0, 0.5], dtype=np.float32)
    got = astgrad.grad(fit, optimize=level)(p, lotka_volterra, t, y0)
    want = numeric_grad(fit, (p.astype(np.float64), lotka_volterra, t.astype(np.float64), y0.astype(np.float64)), 0)
    np.testing.assert_allclose(got, want, rtol=2e-3)
