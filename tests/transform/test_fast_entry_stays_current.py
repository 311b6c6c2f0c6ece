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
from astgrad import api

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
    assert type(gf) is not type(gh) and isinstance(gf, api.GradientFunction)
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
    g = api.GradientFunction(lambda x: np.mean((x + 2) ** 2), 0, "grad", False)
    g._generated.function = lambda x: fake
    g._entry = api._compile_entry(g)
    out = g(X)
    assert out is not fake and out.base is None and not np.shares_memory(out, fake)
    np.testing.assert_array_equal(out, fake)


def test_a_view_of_the_argument_is_copied():
    g = api.GradientFunction(lambda x: np.mean((x + 2) ** 2), 0, "grad", False)
    g._generated.function = lambda x: x[:]
    g._entry = api._compile_entry(g)
    out = g(X)
    assert not np.shares_memory(out, X)
    np.testing.assert_array_equal(out, X)
