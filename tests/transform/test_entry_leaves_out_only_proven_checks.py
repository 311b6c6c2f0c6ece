"""The compiled entry leaves out the checks of a returned gradient only where the code proves them.

Where the adjoint is a straight line of arithmetic on float array arguments
and numbers (api/fresh.py), the entry returns the gradient without testing
that it is fresh and of its argument's shape and dtype; everywhere else the
tests stay.  Each way the proof could be wrong is tried here: programs it
must refuse, a function put in place of the generated one, and every change
between calls the entry must still notice (the code, numpy's functions, a
rule, the dtype, the rank): the gradient after each is right, never stale.
"""

import linecache
import types

import numpy as np
import pytest

import astgrad
from astgrad.api import gradient
from astgrad.api.fresh import fresh_like
from astgrad.transform import runtime
from astgrad.transform.pipeline import Generated
from tests._numeric import gradient as numeric

X = np.array([[0.3, -0.2], [0.5, 1.5]])


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return np.mean(z)


def _tutorial_grad(x):
    return 6 * (x + 2) / x.size


def _entry_source(g):
    return "".join(linecache.getlines(type(g).__call__.__code__.co_filename))


def _fresh(got, x):
    assert type(got) is np.ndarray and got.shape == x.shape and got.dtype == x.dtype
    assert got.base is None and got.flags.writeable and not np.shares_memory(got, x)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("shape", [(3,), (2, 2), (2, 1, 3)])
def test_a_straight_line_adjoint_returns_its_own_array_without_the_checks(dtype, shape):
    g = astgrad.grad(tutorial, optimize=2)
    x = (np.arange(np.prod(shape)).reshape(shape) / 4 - 0.3).astype(dtype)
    first = g(x)
    assert "_finish" not in _entry_source(g)  # the entry for these ranks and floats proved the gradient fresh
    second = g(x)
    for got in (first, second):
        _fresh(got, x)
        np.testing.assert_allclose(got, _tutorial_grad(x.astype(np.float64)), rtol=2e-3 if dtype == np.float16 else 1e-6)
    assert first is not second
    np.testing.assert_allclose(second, numeric(tutorial, x.astype(np.float64)), rtol=2e-3 if dtype == np.float16 else 1e-6)


def _generated(source, name, **namespace):
    """A Generated of ``source`` (a module defining ``name``), compiled from its own file name."""
    filename = f"<fresh test {name}>"
    scope = {"np": np, **{n: getattr(runtime, n) for n in ("add_into", "subtract_into", "multiply_into",
                                                            "divide_into", "unbroadcast", "shape")}, **namespace}
    exec(compile(source, filename, "exec"), scope)
    return Generated(source, scope[name], filename, scope)


@pytest.mark.parametrize("body, like", [
    ("y = x + 2\n    dz = dresult / x.size\n    dx = 6 * dz * y\n    return dx", [0]),
    ("t = x * 2.0\n    dx = multiply_into(t, 3.0)\n    return dx", [0]),
    ("dx = -(x ** 2) / x.ndim\n    dw = w * w\n    del x\n    return dx, dw", [0, 1]),
    ("t = x * w\n    return t", None),  # arrays like two arguments: shapes and dtypes may differ
    ("return x", None),  # the argument itself
    ("dx = x\n    return dx", None),
    ("dx = x * 2.0\n    return dx, dx", None),  # one object for two gradients
    ("t = x * 2.0\n    dx = multiply_into(t, 3.0)\n    return dx, t", None),  # into t: maybe t itself
    ("dx = multiply_into(x, 3.0)\n    return dx", None),  # may write into, and return, the argument
    ("dx = x @ x\n    return dx", None),
    ("dx = x * (-1.0) ** 0.5\n    return dx", None),  # a complex number from two floats
    ("dx = x * True\n    return dx", None),
    ("dx = np.sin(x)\n    return dx", None),
    ("dx = x * C\n    return dx", None),  # a global: any value
    ("dx = x[0] * 2.0\n    return dx", None),
    ("dx = x * 2.0\n    if dx[0] > 0:\n        dx = x\n    return dx", None),
    ("dx = x * 2.0\n    for i in range(2):\n        dx = x\n    return dx", None),
    ("dx = x * dresult\n    return dx", [0]),
    ("t = x + 1.0\n    broadcast_shape(shape(t), shape(x))\n    dx = t * 2\n    return dx", [0]),
    ("dx = x * 2.0\n    KEPT.append(dx)\n    return dx", None),  # another reference to the gradient
    ("dx = x * 2.0\n    x.fill(0.0)\n    return dx", None),
])
def test_fresh_like_proves_new_arrays_of_the_arguments_and_nothing_else(body, like):
    made = _generated(f"def df(x, w, *, dresult=1.0):\n    {body}\n", "df", C=np.ones(2), KEPT=[],
                      broadcast_shape=runtime.broadcast_shape)
    assert fresh_like(made, {0, 1}) == like
    if like == [0]:
        assert fresh_like(made, {1}) is None  # x not proven an array of real floats
        x = np.array([1.0, 2.0])
        assert made.function(x, x).base is None


def test_a_seed_that_is_not_a_number_proves_nothing():
    made = _generated("def df(x, *, dresult=None):\n    dx = x * dresult\n    return dx\n", "df")
    made.function.__kwdefaults__["dresult"] = np.ones((3, 2))  # would broadcast x to another shape
    assert fresh_like(made, {0}) is None


def test_a_function_put_in_place_of_the_generated_one_is_checked_as_before():
    g = gradient.GradientFunction(tutorial, 0, "grad", False, level=2)
    floats = frozenset({"x"})
    generated = g._build({"x": (2, False)}, floats=floats)
    assert fresh_like(generated, {0}) == [0]
    for fake in [lambda x: x, lambda x: x.T, lambda x: np.ones((2, 2), dtype=np.float32), lambda x: np.ones(2)]:
        generated.function = fake
        g._entry = gradient._compile_entry(g, generated, {"x": (2, False)}, floats, {"x"})
        out = g(X)
        assert "_finish" in _entry_source(g)
        assert out.dtype == X.dtype and out.shape == X.shape and out.base is None and not np.shares_memory(out, X)
        np.testing.assert_array_equal(out, np.broadcast_to(fake(X), X.shape))


@pytest.mark.parametrize("fake, dtype", [
    (lambda x: x.astype(np.float32), np.float64), (lambda x: x.astype(np.float16), np.float64),
    (lambda x: (x * 1j).astype(np.complex128), np.float64), (lambda x: np.ones(x.shape, dtype=int), np.float64),
    (lambda x: x.astype(np.float64), np.float32), (lambda x: x.astype(np.float32) * 2, np.float32),
])
def test_the_entry_compares_the_dtype_its_guard_read(fake, dtype):
    g = gradient.GradientFunction(tutorial, 0, "grad", False, level=2)
    floats = frozenset({"x"})
    generated = g._build({"x": (2, False)}, floats=floats)
    generated.function = fake
    g._entry = gradient._compile_entry(g, generated, {"x": (2, False)}, floats, {"x"})
    assert "g0.dtype is d0" in _entry_source(g)
    x = X.astype(dtype)
    out = g(x)
    assert out.dtype == x.dtype and out.shape == x.shape and out.base is None
    np.testing.assert_array_equal(out, np.real(fake(x)).astype(dtype))


def _module(source):
    namespace = {"np": np}
    filename = f"<fresh entry module {abs(hash(source))}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_a_replaced_code_and_a_rebound_numpy_global_reach_the_proven_entry(monkeypatch):
    ns = _module("def f(x):\n    return np.mean((x + 1.0) * x)\n")
    g = astgrad.grad(ns["f"], optimize=2)
    for _ in range(2):
        np.testing.assert_allclose(g(X), (2 * X + 1) / X.size)
    assert "_finish" not in _entry_source(g)
    ns["f"].__code__ = (lambda x: np.mean(x * x * x)).__code__
    for _ in range(2):
        np.testing.assert_allclose(g(X), 3 * X * X / X.size)
    monkeypatch.setattr(np, "mean", np.sum)  # the adjoint of a sum now
    for _ in range(2):
        np.testing.assert_allclose(g(X), 3 * X * X)
    monkeypatch.undo()
    like_numpy = types.ModuleType("like_numpy")
    like_numpy.__dict__.update(vars(np), mean=np.sum)
    ns["np"] = like_numpy  # the module's global np
    for _ in range(2):
        np.testing.assert_allclose(g(X), 3 * X * X)


def test_a_rule_registered_after_the_first_call_reaches_the_proven_entry(isolated_rules):
    ns = _module("def f(x):\n    return np.mean(x * x)\n")
    g = astgrad.grad(ns["f"], optimize=2)
    for _ in range(2):
        np.testing.assert_allclose(g(X), 2 * X / X.size)
    assert "_finish" not in _entry_source(g)
    astgrad.defvjp(np.mean, lambda g, ans, x, *rest, **kwargs: np.full_like(x, 7.0) * g)  # wrong on purpose
    for _ in range(2):
        np.testing.assert_allclose(g(X), 14 * X)


def test_another_dtype_or_rank_after_the_first_call_gets_its_own_adjoint():
    g = astgrad.grad(tutorial, optimize=2)
    for x in [X, X.astype(np.float32), X[0], X.astype(np.float32)[0], X.reshape(1, 2, 2), X, np.arange(4).reshape(2, 2),
              2.0, X[0], X.astype(np.float16)]:
        for _ in range(2):
            got = g(x)
            expect = _tutorial_grad(np.asarray(x, dtype=np.float64))
            assert np.shape(got) == np.shape(x)
            if isinstance(x, np.ndarray) and x.dtype.kind == "f":
                _fresh(got, x)
            np.testing.assert_allclose(got, expect, rtol=2e-3 if np.result_type(x) == np.float16 else 1e-6)


def test_a_closure_cell_rebound_after_the_first_call_reaches_the_entry_that_compares_dtypes():
    def inner(v):
        return v * 2.0

    def f(x, w):
        return np.sum(inner(x) * w)
    g = astgrad.grad(f, wrt=(0, 1), optimize=2)
    w = np.array([1.0, -2.0])
    for _ in range(2):
        gx, gw = g(X, w)
        np.testing.assert_allclose(gx, np.broadcast_to(2.0 * w, X.shape))
        np.testing.assert_allclose(gw, np.sum(2.0 * X, axis=0))
    assert "g0.dtype is d0" in _entry_source(g) and "_finish" in _entry_source(g)

    def inner(v):  # noqa: F811 - rebinds the cell f reads
        return v * 5.0
    for _ in range(2):
        gx, gw = g(X, w)
        np.testing.assert_allclose(gx, np.broadcast_to(5.0 * w, X.shape))
        np.testing.assert_allclose(gw, np.sum(5.0 * X, axis=0))
