"""The fast paths of a call: the compiled entry of grad/vjp/value_and_grad, the
inline rebinding check, and the runtime's unbroadcast shortcut.

Each fast path must give what the general path gives (a call with a keyword
argument takes the general path), hand back fresh writeable gradients that
alias nothing, and notice a rebound callee on the next call.
"""

import itertools
import types

import numpy as np
import pytest

import astgrad
from astgrad.api import gradient
from astgrad import rules
from astgrad.transform import runtime
from astgrad.transform.front.parse import Dependencies

X = np.array([[0.3, -0.2], [0.5, 1.5]])


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return np.mean(z)


def pair(x, y):
    return np.sum(x + y)  # both gradients are the same array in the generated code


def ident(x):
    return x


def scaled(x, w):
    return np.sum(np.tanh(x * w) * 2.0)


def _general(g, *args):
    """The same call with f's last argument by keyword, which the compiled entry leaves to the general path."""
    code = g.__wrapped__.__code__
    names = code.co_varnames[:code.co_argcount]
    seed = args[-1:] if g._mode == "vjp" else ()
    args = args[:len(args) - len(seed)]
    return g(*args[:-1], *seed, **{names[len(args) - 1]: args[-1]})


def _assert_same(fast, general):
    if isinstance(general, tuple):
        assert type(fast) is tuple and len(fast) == len(general)
        for a, b in zip(fast, general):
            _assert_same(a, b)
        return
    assert type(fast) is type(general)
    if isinstance(general, np.ndarray):
        assert fast.dtype == general.dtype and fast.shape == general.shape
    np.testing.assert_array_equal(fast, general)


@pytest.mark.parametrize("make, args", [
    (lambda: astgrad.grad(tutorial), (X,)),
    (lambda: astgrad.grad(tutorial, wrt=(0,)), (X,)),
    (lambda: astgrad.grad(tutorial, preserve_result=True), (X,)),
    (lambda: astgrad.grad(tutorial, wrt=(0,), preserve_result=True), (X,)),
    (lambda: astgrad.value_and_grad(tutorial), (X,)),
    (lambda: astgrad.value_and_grad(scaled, wrt=(0, 1)), (X, 0.7)),
    (lambda: astgrad.grad(scaled, wrt=(0, 1)), (X, X[::-1].copy())),
    (lambda: astgrad.grad(scaled, wrt=1), (X, 3)),
    (lambda: astgrad.grad(pair, wrt=(0, 1)), (X, X + 1)),
    (lambda: astgrad.vjp(ident), (X, X * 2)),
    (lambda: astgrad.vjp(ident), (X.astype(np.float32), X.astype(np.float32))),
    (lambda: astgrad.grad(tutorial), (np.float64(2.0),)),
    (lambda: astgrad.grad(tutorial), (2.0,)),
    (lambda: astgrad.grad(tutorial), (2,)),
    (lambda: astgrad.grad(tutorial), (np.array(2.0),)),
    (lambda: astgrad.grad(tutorial), (np.arange(4).reshape(2, 2),)),
    (lambda: astgrad.grad(tutorial), (X.astype(np.float32),)),
])
def test_the_fast_path_gives_what_the_general_path_gives(make, args):
    g = make()
    _assert_same(g(*args), _general(g, *args))


def _arrays(result):
    if isinstance(result, tuple):
        return [a for r in result for a in _arrays(r)]
    return [result] if isinstance(result, np.ndarray) else []


@pytest.mark.parametrize("make, args, wrt", [
    (lambda: astgrad.grad(pair, wrt=(0, 1)), (X, X + 1), (0, 1)),
    (lambda: astgrad.vjp(ident), (X, X * 2), (0,)),
    (lambda: astgrad.grad(scaled, wrt=(0, 1)), (X, X + 0.5), (0, 1)),
    (lambda: astgrad.grad(tutorial), (X.astype(np.float32),), (0,)),
    (lambda: astgrad.grad(tutorial), (np.arange(4.0).reshape(2, 2)[:, ::-1],), (0,)),
])
def test_gradients_are_fresh_writeable_and_shaped_like_their_arguments(make, args, wrt):
    g = make()
    for _ in range(2):  # the first call and a cached one
        grads = _arrays(g(*args))
        assert len(grads) == len(wrt)
        for grad, i in zip(grads, wrt):
            assert grad.flags.writeable and grad.flags.owndata
            assert grad.shape == np.shape(args[i]) and grad.dtype == args[i].dtype
            for arg in args:
                assert not np.shares_memory(grad, arg)
        for a, b in itertools.combinations(grads, 2):
            assert not np.shares_memory(a, b)


def test_a_gradient_that_is_not_fresh_is_copied():
    read_only = np.ones((2, 2))
    read_only.flags.writeable = False
    fakes = [read_only, np.ones((4, 2))[::2], np.ones((2, 2), dtype=np.float32), np.ones((2, 2), dtype=int),
             np.ones(2), 1.5, np.float64(1.5)]
    for fake in fakes:
        g = gradient.GradientFunction(tutorial, 0, "grad", False)  # not the cached one: its function is replaced
        g._generated.function = lambda x, fake=fake: fake
        g._entry = gradient._compile_entry(g)
        out = g(X)
        assert out is not fake and out.flags.writeable and out.flags.owndata
        assert out.dtype == X.dtype and out.shape == X.shape and not np.shares_memory(out, fake)
        np.testing.assert_array_equal(out, np.broadcast_to(fake, X.shape))
    g._generated.function = lambda x: X
    g._entry = gradient._compile_entry(g)
    assert g(X) is not X and g(X + 1) is X  # an argument is copied; the rest is the transform's business


def test_numbers_give_floats():
    for x in (2.0, 3):
        assert type(astgrad.grad(tutorial)(x)) is float
        value, grad = astgrad.value_and_grad(scaled)(x, 0.5)
        assert type(grad) is float
        grad, value = astgrad.grad(scaled, wrt=(0, 1), preserve_result=True)(x, 0.5)
        assert [type(g) for g in grad] == [float, float]
    assert type(astgrad.grad(scaled, wrt=1)(X, 2)) is float


def helper(x):
    return x * 2.0


def calls_helper(x):
    return np.sum(helper(x) * x)


def test_rebinding_a_callee_after_the_first_call_transforms_again(monkeypatch):
    g = astgrad.grad(calls_helper)
    np.testing.assert_allclose(g(X), 4 * X)
    def tripled(x):
        return x * 3.0
    monkeypatch.setitem(globals(), "helper", tripled)
    np.testing.assert_allclose(g(X), 6 * X)   # the compiled entry noticed
    np.testing.assert_allclose(g(X), 6 * X)   # and was compiled again for the new transform
    assert "tripled" in g.source and astgrad.grad(calls_helper) is g


def test_rebinding_a_numpy_function_or_the_code_transforms_again(monkeypatch):
    def f(x):
        return np.sum(np.sin(x))
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X), np.cos(X))
    monkeypatch.setattr(np, "sin", np.cos)
    np.testing.assert_allclose(g(X), -np.sin(X))
    monkeypatch.undo()

    def h(x):
        return np.sum(x * x)
    g = astgrad.grad(h)
    np.testing.assert_allclose(g(X), 2 * X)
    h.__code__ = (lambda x: np.sum(x * x * x)).__code__
    np.testing.assert_allclose(g(X), 3 * X * X)


def test_rebinding_a_closure_cell_transforms_again():
    def inner(x):
        return x * 2.0

    def f(x):
        return np.sum(inner(x))
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X), np.full_like(X, 2.0))

    def inner(x):  # noqa: F811 - rebinds the cell f reads
        return x * 5.0
    np.testing.assert_allclose(g(X), np.full_like(X, 5.0))


def test_dependencies_current_reads_every_kind_of_place():
    module = types.ModuleType("m")
    module.fn = len
    namespace = {"fn": abs}
    cell = types.CellType(helper)
    deps = Dependencies()
    deps.record_attr(module, "fn", len)
    deps.record_key(namespace, "fn", abs)
    deps.record_cell(cell, helper)
    deps.record_attr(module, "not an identifier", len)  # read through getattr
    setattr(module, "not an identifier", len)
    assert deps.current()
    namespace["fn"] = abs
    assert deps.current()
    for undo, redo in [(lambda: delattr(module, "fn"), lambda: setattr(module, "fn", len)),
                       (lambda: namespace.pop("fn"), lambda: namespace.update(fn=abs)),
                       (lambda: setattr(cell, "cell_contents", min), lambda: setattr(cell, "cell_contents", helper)),
                       (lambda: delattr(cell, "cell_contents"), lambda: setattr(cell, "cell_contents", helper)),
                       (lambda: setattr(module, "not an identifier", max),
                        lambda: setattr(module, "not an identifier", len))]:
        undo()
        assert not deps.current()
        redo()
        assert deps.current()
    deps.record_key(namespace, "fn", min)  # a new record is checked at once
    assert not deps.current()
    assert Dependencies().current()


def test_a_general_call_still_checks_its_arguments():
    with pytest.raises(TypeError, match="a vjp is called as"):
        astgrad.vjp(ident)()
    with pytest.raises(astgrad.TransformError, match="join or repeat lists"):  # a list is a container: x + 2 joins
        astgrad.grad(tutorial)([X, X])
    with pytest.raises(TypeError):
        astgrad.grad(tutorial)(X, X)


SHAPES = [(), (1,), (3,), (1, 3), (2, 1), (2, 3), (4, 2, 3), (4, 1, 3), (1, 1, 1), (5, 4, 2, 3), (4, 2, 1)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.bool_])
def test_unbroadcast_equals_the_rule_on_every_broadcastable_pair(dtype):
    rng = np.random.default_rng(0)
    pairs = 0
    for have, to in itertools.product(SHAPES, SHAPES):
        try:
            if np.broadcast_shapes(have, to) != have:
                continue
        except ValueError:
            continue
        g = (rng.standard_normal(have) * 10).astype(dtype)
        fast, slow = runtime.unbroadcast(g, to), rules.unbroadcast(g, to)
        assert type(fast) is type(slow) and np.shape(fast) == np.shape(slow) == to
        assert np.result_type(fast) == np.result_type(slow)
        np.testing.assert_array_equal(fast, slow)
        pairs += 1
    assert pairs > 30
    assert runtime.unbroadcast(2.0, ()) == 2.0 and runtime.unbroadcast(X, X.shape) is X
    np.testing.assert_array_equal(runtime.unbroadcast(2.0, (2, 3)), rules.unbroadcast(2.0, (2, 3)))
