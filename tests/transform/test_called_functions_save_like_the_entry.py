"""A called function's forward/backward pair is optimised as the entry is, then cut in two.

The pair is one function until ``split`` (transform/passes/split.py): its
forward half saves what the backward half reads before binding it.  The
ways that could give a wrong number without an error, each against central
differences at every level: a name the backward half reads that the forward
half bound only on a path not taken (or in a loop run zero times); a
backward half run again on the same saves (a pullback, whose results must
not be written into what was saved); a caller writing into a value the
callee saved (refused); jumps in the backward half; a callee called in a loop.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(7)


def laplacian(u):
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u


def wave(c, u0, steps):
    u_prev = u0
    u = u0
    for _ in range(steps):
        u_next = 2 * u - u_prev + c * laplacian(u)
        u_prev = u
        u = u_next
    return np.sum(u ** 2)


def branchy(x, flag):
    if flag:
        t = np.sin(x) * x
        y = t * t
    else:
        y = np.cos(x)
    return y * x


def uses_branchy(x, flag):
    return np.sum(branchy(x, flag) ** 2)


def looped(x, n):
    s = x * 0.0
    for i in range(n):
        s = s + np.sin(x * s + i)
    return s * x


def uses_looped(x, n):
    return np.sum(looped(x, n))


def early_exit(x):
    y = x
    while True:
        y = np.tanh(y) * 1.5
        if np.max(np.abs(y)) > 1.2:
            break
        y = y + 0.5
    return y * x


def uses_early_exit(x):
    return np.sum(early_exit(x))


def exp_of(x):
    return np.exp(x)


def writes_the_result(x):
    y = exp_of(x)
    y[0] = 3.0
    return np.sum(y * x)


def big(x, w):
    h = np.tanh(x * w) * x
    return np.sin(h) * w + h * h


def uses_big(x, w):
    return big(x, w) * 2.0


@pytest.mark.parametrize("level", LEVELS)
def test_a_stencil_called_in_a_loop(level):
    u0 = RNG.normal(size=(5, 5))
    g = astgrad.grad(wave, wrt=(0, 1), optimize=level)
    dc, du0 = g(0.1, u0, 4)
    np.testing.assert_allclose(dc, numeric_grad(wave, (0.1, u0, 4), 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(du0, numeric_grad(wave, (0.1, u0, 4), 1), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("flag", [True, False])
def test_a_name_bound_on_a_path_not_taken(level, flag):
    x = RNG.normal(size=4)
    got = astgrad.grad(uses_branchy, optimize=level)(x, flag)
    np.testing.assert_allclose(got, numeric_grad(uses_branchy, (x, flag), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_loop_in_the_callee_run_any_number_of_times(level, n):
    x = RNG.normal(size=3)
    got = astgrad.grad(uses_looped, optimize=level)(x, n)
    np.testing.assert_allclose(got, numeric_grad(uses_looped, (x, n), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("level", LEVELS)
def test_a_callee_that_breaks_out_of_its_loop(level):
    x = np.array([0.2, -0.4, 0.3])
    got = astgrad.grad(uses_early_exit, optimize=level)(x)
    np.testing.assert_allclose(got, numeric_grad(uses_early_exit, (x,), 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("level", LEVELS)
def test_the_caller_writing_into_what_the_callee_returned_is_refused(level):
    """The callee's backward half reads the array it returned (exp's rule): a write into it is refused."""
    with pytest.raises(astgrad.TransformError, match="may share memory with another array"):
        astgrad.grad(writes_the_result, optimize=level)(RNG.normal(size=4))


@pytest.mark.parametrize("level", LEVELS)
def test_a_pullback_runs_the_backward_half_again_on_the_same_saves(level):
    n = 5000  # above the size at which results are written into their operands
    x, w = RNG.normal(size=n), RNG.normal(size=n)
    out, vjp_fn = astgrad.vjp(uses_big, x, w, optimize=level)
    np.testing.assert_allclose(out, uses_big(x, w))
    # the Jacobian is diagonal: the product with a cotangent is the cotangent times the derivative
    h = np.tanh(x * w) * x
    dh_dx = (1 - np.tanh(x * w) ** 2) * w * x + np.tanh(x * w)
    dh_dw = (1 - np.tanh(x * w) ** 2) * x * x
    outer = np.cos(h) * w + 2 * h
    for _ in range(3):
        ct = RNG.normal(size=n)
        dx, dw = vjp_fn(ct)
        np.testing.assert_allclose(dx, 2 * ct * outer * dh_dx, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dw, 2 * ct * (outer * dh_dw + np.sin(h)), rtol=1e-10, atol=1e-12)
