"""The compiled call entry is cheap and never stale.

The entry runs as the gradient's own ``__call__``, reads a global as a
subscript of the globals dict, and takes ``base is None`` as "no view of
anything".  Each shortcut is tried here the way it could go wrong: a global
deleted or rebound after the first call, globals that are a dict subclass,
a redefined callee, a second gradient, a new signature, and returned arrays
that are views passing every other test.
"""

import itertools
import linecache
import types

import numpy as np
import pytest

import astgrad
from astgrad.api import gradient

X = np.array([[0.3, -0.2], [0.5, 1.5]])


_FILES = itertools.count()


def _module(source, namespace=None):
    """A module of its own (its globals a dict these tests change), its source readable by linecache."""
    namespace = {"np": np} if namespace is None else namespace
    filename = f"<entry test {next(_FILES)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_a_global_callee_deleted_after_the_first_call_is_a_name_error_not_the_old_gradient():
    ns = _module("def helper(x):\n    return x * 2.0\n\ndef f(x):\n    return np.sum(helper(x) * x)\n")
    g = astgrad.grad(ns["f"])
    np.testing.assert_allclose(g(X), 4 * X)
    del ns["helper"]
    with pytest.raises(NameError, match="helper"):
        ns["f"](X)  # what Python does
    with pytest.raises(Exception, match="helper"):
        g(X)


def test_a_global_callee_rebound_then_rebound_back_gives_each_ones_gradient():
    ns = _module("def helper(x):\n    return x * 2.0\n\ndef f(x):\n    return np.sum(helper(x) * x)\n")
    g = astgrad.grad(ns["f"])
    original = ns["helper"]
    for factor, fn in [(2.0, original), (5.0, lambda x: x * 5.0), (2.0, original), (7.0, lambda x: x * 7.0)]:
        ns["helper"] = fn
        for _ in range(2):  # the call that transforms again, and the one the new entry takes
            np.testing.assert_allclose(g(X), 2 * factor * X)


def test_a_global_bound_to_a_numpy_function_rebound_transforms_again():
    ns = _module("act = np.sin\n\ndef f(x):\n    return np.sum(act(x))\n")
    g = astgrad.grad(ns["f"])
    np.testing.assert_allclose(g(X), np.cos(X))
    ns["act"] = np.cos
    np.testing.assert_allclose(g(X), -np.sin(X))
    np.testing.assert_allclose(g(X), -np.sin(X))


class _Defaulting(dict):
    """Globals whose missing keys have a value: a subscript would call ``__missing__``."""

    calls = 0

    def __missing__(self, key):
        _Defaulting.calls += 1
        return np.cos


def test_globals_of_a_dict_subclass_are_read_without_its_missing_hook():
    namespace = _Defaulting(np=np, __builtins__=__builtins__)
    ns = _module("def helper(x):\n    return x * 3.0\n\ndef f(x):\n    return np.sum(helper(x) * x)\n", namespace)
    f = types.FunctionType(ns["f"].__code__, namespace)
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X), 6 * X)
    before = _Defaulting.calls
    np.testing.assert_allclose(g(X), 6 * X)
    assert _Defaulting.calls == before
    del namespace["helper"]  # now the hook answers for the name, as Python's lookup would not
    with pytest.raises(Exception, match="helper"):
        g(X)


def test_each_gradient_runs_its_own_entry():
    def f(x):
        return np.sum(x * x)

    def h(x):
        return np.sum(x * x * x)
    gf, gh = astgrad.grad(f), astgrad.grad(h)
    gf(X), gh(X)
    assert type(gf) is not type(gh) and isinstance(gf, gradient.GradientFunction)
    assert type(gf).__call__ is gf._entry is not type(gh).__call__
    for _ in range(2):
        np.testing.assert_allclose(gf(X), 2 * X)
        np.testing.assert_allclose(gh(X), 3 * X * X)


def test_a_code_replaced_after_the_first_call_installs_a_new_entry():
    def f(x):
        return np.sum(x * x)
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X), 2 * X)
    first = g._entry
    f.__code__ = (lambda x: np.sum(np.sin(x))).__code__
    np.testing.assert_allclose(g(X), np.cos(X))
    assert g._entry is not first
    np.testing.assert_allclose(g(X), np.cos(X))


def test_a_new_signature_gets_its_own_entry_and_the_old_one_still_answers():
    def f(w, x):
        return np.sum(np.tanh(x @ w))
    g = astgrad.grad(f)
    w, x, v = np.array([[0.2, -0.1], [0.4, 0.3]]), np.array([[1.0, 2.0], [0.5, -1.0]]), np.array([1.0, 2.0])
    expect_matrix = x.T @ (1 - np.tanh(x @ w) ** 2)
    expect_vector = np.outer(v, 1 - np.tanh(v @ w) ** 2)
    for _ in range(2):
        np.testing.assert_allclose(g(w, x), expect_matrix)
        np.testing.assert_allclose(g(w, v), expect_vector)


@pytest.mark.parametrize("fake", [
    np.arange(4.0).reshape(2, 2),  # a contiguous, writeable float64 view of the right shape
    np.arange(8.0).reshape(2, 2, 2)[0],
    np.ones((2, 2)).T,
], ids=["reshaped", "first row of a cube", "transposed"])
def test_a_view_passing_every_other_test_is_copied(fake):
    assert fake.base is not None and fake.flags.writeable and fake.shape == X.shape and fake.dtype == X.dtype
    g = gradient.GradientFunction(lambda x: np.mean((x + 2) ** 2), 0, "grad", False)
    g._generated.function = lambda x: fake
    g._entry = gradient._compile_entry(g)
    out = g(X)
    assert out is not fake and out.base is None and not np.shares_memory(out, fake)
    np.testing.assert_array_equal(out, fake)


def test_a_view_of_the_argument_is_copied():
    g = gradient.GradientFunction(lambda x: np.mean((x + 2) ** 2), 0, "grad", False)
    g._generated.function = lambda x: x[:]
    g._entry = gradient._compile_entry(g)
    out = g(X)
    assert not np.shares_memory(out, X)
    np.testing.assert_array_equal(out, X)


# The adjoint specialised for an array argument reads ``x.size`` where the
# general one calls ``size(x)`` (a number has no ``.size``), and its entry
# leaves out the ``type(x) is np.ndarray`` test of a returned gradient that
# its guard already made.  Each test below is a way those two shortcuts
# could give a wrong number or an aliased gradient without an error.

def _mean_square(x):
    return np.mean((x + 2) ** 2)


def _mean_square_grad(x):
    return 2 * (np.asarray(x, dtype=float) + 2) / np.size(x)


class _Sub(np.ndarray):
    """An ndarray subclass: the entry's guard (``type(x) is np.ndarray``) does not take it."""


def test_the_array_adjoint_reads_the_size_of_an_array_and_the_general_one_the_size_of_anything():
    g = astgrad.grad(_mean_square)
    cube = np.arange(24.0).reshape(2, 3, 4)
    for x in [X, X.T, X[::-1], X[:1], np.arange(5.0), 2.0, 3, np.float64(1.5), np.array(0.5), cube, cube[:, 1],
              X.astype(np.float32), np.arange(4).reshape(2, 2), X.view(_Sub), X, 2.0, X[:, :1]]:
        for _ in range(2):  # the call that specialises, then the compiled entry
            got = g(x)
            np.testing.assert_allclose(got, _mean_square_grad(x), rtol=1e-6)
            assert np.shape(got) == np.shape(x)
    assert "x.size" in g.sources["a 2-d integer x"] and "size(x)" in g.sources["any"]
    assert "x.size" not in g.sources["a scalar x"]


def test_a_parameter_the_function_rebinds_keeps_the_size_helper():
    def f(x):
        x = x[0]  # x now the first row: its size is not the argument's
        return np.mean(x * x)
    g = astgrad.grad(f)
    got = g(X)
    np.testing.assert_allclose(got, np.array([2 * X[0] / 2, [0.0, 0.0]]))
    np.testing.assert_allclose(g(X), got)


def test_a_dask_array_of_the_specialised_rank_gets_the_gradient_of_its_size():
    g = astgrad.grad(_mean_square)
    np.testing.assert_allclose(g(X), _mean_square_grad(X))  # the 2-d adjoint, x.size
    da = pytest.importorskip("dask.array")
    lazy = da.from_array(np.arange(6.0).reshape(2, 3), chunks=(1, 3))
    np.testing.assert_allclose(np.asarray(g(lazy)), _mean_square_grad(np.arange(6.0).reshape(2, 3)))


def test_the_specialised_entry_notices_an_edited_function_a_rebound_global_and_a_deleted_one():
    ns = _module("act = np.sin\n\ndef f(x):\n    return np.mean(act(x) * x)\n")
    g = astgrad.grad(ns["f"])
    for _ in range(2):
        np.testing.assert_allclose(g(X), (np.cos(X) * X + np.sin(X)) / X.size)
    assert "x.size" in g.source and g._entry is not gradient._call_general
    ns["act"] = np.cos
    for _ in range(2):
        np.testing.assert_allclose(g(X), (-np.sin(X) * X + np.cos(X)) / X.size)
    first = ns["f"].__code__
    ns["f"].__code__ = (lambda x: np.mean(x * x * x)).__code__
    for _ in range(2):
        np.testing.assert_allclose(g(X), 3 * X * X / X.size)
    assert "x.size" in g.source
    ns["f"].__code__ = first  # edited back
    np.testing.assert_allclose(g(X), (-np.sin(X) * X + np.cos(X)) / X.size)
    del ns["act"]
    with pytest.raises(Exception, match="act"):
        g(X)


def _cube_raw(x):
    return x ** 3


def test_a_rule_registered_after_the_specialised_entry_reaches_it(isolated_rules):
    cube = astgrad.primitive(_cube_raw)
    ns = _module("def f(x):\n    return np.mean(cube(x)) + np.mean(x * 2.0)\n", {"np": np, "cube": cube})
    astgrad.defvjp(cube, lambda g, ans, x: g * 3 * x)  # wrong on purpose, then corrected
    g = astgrad.grad(ns["f"])
    for _ in range(2):
        np.testing.assert_allclose(g(X), (3 * X + 2) / X.size)
    assert g._entry is not gradient._call_general  # the compiled entry, tested at each call
    astgrad.defvjp(cube, lambda g, ans, x: g * 3 * x ** 2)
    for _ in range(2):
        np.testing.assert_allclose(g(X), (3 * X ** 2 + 2) / X.size)


@pytest.mark.parametrize("fake", [
    lambda x: x, lambda x: x.T, lambda x: x[:], lambda x: np.arange(4.0).reshape(2, 2), lambda x: 1.5,
    lambda x: np.float64(1.5), lambda x: np.ones((2, 2), dtype=np.float32), lambda x: np.ones(2),
    lambda x: np.ones((2, 2)).view(_Sub), lambda x: _read_only(),
], ids=["the argument", "its transpose", "a view of it", "a reshaped view", "a float", "a numpy float",
        "float32", "another shape", "a subclass", "read-only"])
def test_the_specialised_entry_copies_a_gradient_that_is_not_fresh(fake):
    g = gradient.GradientFunction(_mean_square, 0, "grad", False)
    generated = g._build({"x": (2, False)})
    assert "x.size" in generated.source
    generated.function = fake
    g._entry = gradient._compile_entry(g, generated, {"x": (2, False)})
    assert "t0 is _ndarray" not in linecache.getlines(g._entry.__code__.co_filename)[-8]
    x = X.copy()
    out = g(x)
    assert type(out) is np.ndarray and out.dtype == x.dtype and out.shape == x.shape
    assert out.flags.writeable and out.base is None and not np.shares_memory(out, x)
    np.testing.assert_array_equal(out, np.broadcast_to(fake(x), x.shape))


def _read_only():
    out = np.ones((2, 2))
    out.flags.writeable = False
    return out


def test_a_vjp_returning_its_seed_returns_a_copy_through_the_specialised_entry():
    def f(x):
        return x * np.mean(x) - x * np.mean(x) + x  # the identity, by a rank-dependent adjoint
    df = astgrad.vjp(f)
    seed = np.array([[1.0, 2.0], [3.0, 4.0]])
    for _ in range(2):
        out = df(X, seed)
        np.testing.assert_allclose(out, seed, atol=1e-12)
        assert out is not seed and not np.shares_memory(out, seed) and not np.shares_memory(out, X)


def test_calls_the_entry_does_not_take_reach_the_general_path_with_their_arguments():
    def scaled(x, w):
        return np.mean(np.tanh(x * w))
    g = astgrad.grad(scaled, wrt=(0, 1))
    expect = (1 - np.tanh(X * 0.5) ** 2) / X.size
    for _ in range(2):
        gx, gw = g(X, 0.5)
        np.testing.assert_allclose(gx, expect * 0.5)
        np.testing.assert_allclose(gw, np.sum(expect * X))
    with pytest.raises(TypeError, match="w"):
        g(X)  # one argument short: the general path binds and names the missing one
    with pytest.raises(TypeError):
        g(X, 0.5, 1.0)
    with pytest.raises(TypeError):
        g()
    np.testing.assert_allclose(g(X, w=0.5)[0], expect * 0.5)
    np.testing.assert_allclose(g(x=X, w=0.5)[1], np.sum(expect * X))
    with pytest.raises(TypeError, match="a0"):
        g(X, a0=0.5)  # the entry's own parameter names are positional-only: no keyword reaches them
    with pytest.raises(TypeError):
        g(X, self=0.5)
    df = astgrad.vjp(lambda x: x * 2.0)
    with pytest.raises(TypeError, match="a vjp is called as"):
        df()
    np.testing.assert_allclose(df(X, X), 2 * X)
