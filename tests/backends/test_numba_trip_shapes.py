"""backend="numba": the reverse sweep's shape proofs reach the compiled text, and the numbers stay numpy's.

The numpy backend's proofs of a loop's shapes (passes/trip_shapes.py,
passes/fixed_shapes.py, a callee's returned shape) now run for Numba too:
RK4's loop saves no ``only_shape`` of its stages, and ``unbroadcast(e,
shape(a))`` proven needless is ``e``.  A rule skipped for a zero gradient
then starts it as zeros of the expression the other arm binds (one type per
variable, backends/numba/lower.py).  Where the proof must fail (a value that
changes length each trip, overlapping slices, an alias of a written array,
float32 meeting float64, int arrays, a view, a subclass) the gradient is
still numpy's and the central differences', at every level (refused, through
backend="auto"): small sizes, the sweep over kinds and levels cut by
``sweep``.
"""

import warnings

import numpy as np
import pytest

import _numeric
import astgrad

pytest.importorskip("numba")


def lotka_volterra(t, y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def rk4(f, y0, t, p):  # issue 32's S2
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


def fit(p, y0, f, t):
    return np.sum((rk4(f, y0, t, p) - 0.5) ** 2)


def shrinking(w, u):
    """A value one shorter each trip: no shape is the same across trips."""
    for i in range(3):
        u = u[1:] * w[i] + u[:-1]
    return np.sum(u ** 2)


def overlapping(c, u):
    """A slice written from an overlapping slice of the same array, in a loop."""
    u = u.copy()
    for _ in range(3):
        u[1:] = u[1:] + c * u[:-1]
    return np.sum(u ** 2)


def aliased(c, u):
    """An alias of the array the loop writes into, made after each write and read before the next."""
    u = u.copy()
    w = u[1:] * 0.0
    for _ in range(3):
        u[1:-1] = u[1:-1] + c * (u[2:] - 2 * u[1:-1] + u[:-2])
        v = u
        w = v[1:] * v[:-1] + w
    return np.sum(w) + np.sum(u ** 2)


def damped(c, u):
    """A step whose scale is an array of the state's shape, or broadcast from one item."""
    for _ in range(3):
        u = u - 0.1 * c * u + 0.05 * u * u
    return np.sum(u ** 2)


class Tagged(np.ndarray):
    """A subclass of ndarray."""


def _check(fn, args, optimize=None, backend="numba", wrt=(0, 1)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a refusal falls back to numpy, with its warning
        gradient = astgrad.grad(fn, wrt=wrt, backend=backend, optimize=optimize)
        got = gradient(*args)
    want = astgrad.grad(fn, wrt=wrt, optimize=optimize)(*args)
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    low = any(np.asarray(a).dtype == np.float32 for a in args if isinstance(a, np.ndarray))
    for position, a, b in zip(wrt, got, want):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-5 if low else 1e-12, atol=1e-6 if low else 1e-13)
        if not low:
            np.testing.assert_allclose(a, _numeric.numeric_grad(fn, args, position), rtol=1e-6, atol=1e-8)
    return gradient.source


_P = np.array([1.1, 0.4, 0.9, 0.3])
_T = np.linspace(0.0, 1.0, 5)


def test_rk4s_stages_are_saved_without_their_shapes_and_its_unbroadcasts_proven_away():
    text = _check(fit, (_P, np.array([1.0, 0.5]), lotka_volterra, _T), wrt=(0,))
    assert "only_shape(saved_value(k1))" not in text and "_stack_steps" not in text
    assert "unbroadcast(dt26" not in text and "zeros_like_gradient(dt24 * t25)" in text


def _rk4_kinds():
    wide = np.zeros(8)
    wide[::2] = _P
    return {
        "float32 state": (_P, np.array([1.0, 0.5], dtype=np.float32), lotka_volterra, _T),
        "int state": (_P, np.array([1, 2]), lotka_volterra, _T),
        "a view": (wide[::2], np.array([1.0, 0.5]), lotka_volterra, _T),
        "a subclass": (_P.view(Tagged), np.array([1.0, 0.5]), lotka_volterra, _T),
        "a longer parameter": (np.append(_P, 7.0), np.array([1.0, 0.5]), lotka_volterra, _T),
    }


@pytest.mark.sweep(3)
@pytest.mark.parametrize("kind", sorted(_rk4_kinds()))
def test_rk4_where_the_kinds_differ_is_numpys(kind):
    _check(fit, _rk4_kinds()[kind], backend="auto", wrt=(0,))


_U = np.sin(np.linspace(0.0, 3.0, 8)) + 0.2


def _loop_cases():
    return {
        "shrinking": (shrinking, (np.array([0.9, 1.1, 0.8]), _U)),
        "overlapping": (overlapping, (0.3, _U)),
        "aliased": (aliased, (0.2, _U)),
        "an array scale": (damped, (np.linspace(0.5, 1.5, 8), _U)),
        "a broadcast scale": (damped, (np.array([0.7]), _U)),
        "float32 meeting float64": (damped, (np.linspace(0.5, 1.5, 8), _U.astype(np.float32))),
        "an int state": (damped, (np.linspace(0.5, 1.5, 8), np.arange(8))),
    }


@pytest.mark.sweep(3)
@pytest.mark.parametrize("optimize", [0, 1, 2])
@pytest.mark.parametrize("case", sorted(_loop_cases()))
def test_where_the_proof_must_fail_the_gradient_is_numpys_at_every_level(case, optimize):
    fn, args = _loop_cases()[case]
    _check(fn, args, optimize, backend="auto")


def test_a_value_changing_length_keeps_its_saved_shapes():
    text = _check(shrinking, (np.array([0.9, 1.1, 0.8]), _U))
    assert "unbroadcast(" in text  # the shapes differ across trips: no proof drops them
