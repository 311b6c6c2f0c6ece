"""Results written into an operand's memory: ``transform.inplace`` and the runtime helpers.

The pass may only pick an array the generated function made itself and that
no other name reads afterwards; the helpers may only write when the result
has the operand's shape and dtype.  Each rule is checked on small hand-made
functions (the rewritten source), and the whole on gradients large enough
for the helpers to write in place, against central differences along a
direction and against the caller's arrays, which must not change.
"""

import operator
import textwrap

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir import compat
from astgrad.transform import runtime
from astgrad.transform.passes.inplace import reuse_buffers
from astgrad.transform.back.namespace import Namespace
from astgrad.transform.front.naming import Names
from _numeric import directional
from corpus.functions import CASES

BIG = (80, 70)  # above the helpers' 4096 elements: they write in place


# -- the runtime helpers ------------------------------------------------------

def test_a_large_float_array_is_written_in_place():
    a, b = np.full(BIG, 2.0), np.full(BIG, 3.0)
    for helper, expected in [(runtime.add_into, 5.0), (runtime.subtract_into, 2.0),
                             (runtime.multiply_into, 6.0), (runtime.divide_into, 2.0)]:
        out = helper(a, b)
        assert out is a
        np.testing.assert_array_equal(out, np.full(BIG, expected))


@pytest.mark.parametrize("other", [np.ones(BIG[1]), np.ones((BIG[0], 1)), 2.0, 3, np.float64(2.0)])
def test_what_broadcasts_into_the_operand_is_written_in_place(other):
    a = np.ones(BIG)
    expected = a + other
    assert runtime.add_into(a, other) is a
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("buffer, other", [
    (np.ones(BIG, np.float32), np.ones(BIG)),  # the result is float64
    (np.ones(BIG, np.float32), np.float64(2.0)),
    (np.ones(BIG), np.ones(BIG, complex)),  # the result is complex
    (np.ones(BIG), 1j),
    (np.ones(BIG[1]), np.ones(BIG)),  # the result is larger
    (np.broadcast_to(np.ones(BIG[1]), BIG), np.ones(BIG)),  # read-only
    (np.ones(BIG, np.int64), np.ones(BIG, np.int64)),  # not floating
    (np.ones((10, 10)), np.ones((10, 10))),  # small: a new array costs less
    (np.array(1.0), np.array(2.0)),  # 0-d: the operator gives a numpy scalar
    (1.5, 2.0),
])
def test_otherwise_the_operator_runs_as_written(buffer, other):
    before = np.copy(buffer) if isinstance(buffer, np.ndarray) else buffer
    for helper, op in [(runtime.add_into, operator.add), (runtime.multiply_into, operator.mul),
                       (runtime.subtract_into, operator.sub), (runtime.divide_into, operator.truediv)]:
        out = helper(buffer, other)
        expected = op(before, other)
        assert out is not buffer
        assert type(out) is type(expected) and np.result_type(out) == np.result_type(expected)
        np.testing.assert_array_equal(out, expected)
        np.testing.assert_array_equal(buffer, before)


def test_an_error_is_the_operators():
    with pytest.raises(ZeroDivisionError):
        runtime.divide_into(1.0, 0.0)
    with pytest.raises(ValueError, match="broadcast"):
        runtime.add_into(np.ones(BIG), np.ones(3))


# -- which statements the pass rewrites -----------------------------------------

def rewritten(source):
    """The source of ``source``'s function after the pass, in a module that knows numpy and the helpers."""
    tree = compat.parse(textwrap.dedent(source))
    fn_def = tree.body[0]
    ns = Namespace(Names())
    ns.bind(np, "np")
    for fn in (runtime.unbroadcast, runtime.shape, runtime.filled):
        ns.bind(fn, fn.__name__)
    reuse_buffers(fn_def, ns, numbers=["dresult"], counts=["size"])
    return compat.to_source(fn_def)


def test_an_operand_the_function_made_and_does_not_read_again_is_written_into():
    src = rewritten("""
        def f(x, y):
            a = np.exp(x)
            b = a * y
            return b
    """)
    assert "b = multiply_into(a, y)" in src


def test_an_accumulation_writes_into_the_total():
    src = rewritten("""
        def f(x, y):
            d = x * y
            d = d + np.sin(y)
            d = d - y
            return d
    """)
    assert "d = add_into(d, np.sin(y))" in src
    assert "d = subtract_into(d, y)" in src


def test_the_right_operand_of_a_product_may_be_the_one_written():
    src = rewritten("""
        def f(x, y):
            t = np.exp(x)
            u = y * t
            return u
    """)
    assert "u = multiply_into(t, y)" in src


def test_the_right_operand_of_a_difference_is_not():
    src = rewritten("""
        def f(x, y):
            t = np.exp(x)
            u = y - t
            v = y / t
            return u + v
    """)
    assert "_into" not in src


@pytest.mark.parametrize("source", [
    # read again later
    """
    def f(x, y):
        a = np.exp(x)
        b = a * y
        return a + b
    """,
    # another name shares the array and is read later
    """
    def f(x, y):
        a = np.exp(x)
        c = unbroadcast(a, shape(y))
        b = a * y
        return b + c
    """,
    # kept somewhere else: on the stack, in a tuple, by an unknown call
    """
    def f(x, y):
        a = np.exp(x)
        _stack.append(a)
        b = a * y
        return b
    """,
    """
    def f(x, y):
        a = np.exp(x)
        pair = (a, y)
        b = a * y
        return b
    """,
    """
    def f(x, y):
        a = np.exp(x)
        keep(a)
        b = a * y
        return b
    """,
    # the caller's arrays, and what came from the stack
    """
    def f(x, y):
        b = x * y
        return b
    """,
    """
    def f(x, y):
        a = _stack.pop()
        b = a * y
        return b
    """,
    # assigned in a branch: not known to be the function's
    """
    def f(x, y):
        if y.sum() > 0:
            a = np.exp(x)
        else:
            a = x
        b = a * y
        return b
    """,
    # may be a read-only view, or a mask
    """
    def f(x, y):
        a = filled(x * 2, shape(y))
        b = a * y
        return b
    """,
    """
    def f(x, y):
        m = x > 0
        b = m * y
        return b
    """,
    # scaling by a number stays as written
    """
    def f(x, dresult=1.0):
        a = np.exp(x)
        dz = dresult / size(x)
        b = 6 * dz * a
        c = b * 0.5
        return c
    """,
    # a number is never the buffer, even times an array
    """
    def f(x, dresult=1.0):
        dz = dresult / size(x)
        b = dz * np.exp(x)
        return b
    """,
    # in a loop: the checks would run on every trip
    """
    def f(x, y):
        d = 0.0
        for _ in range(3):
            d = d + x * y
        return d
    """,
])
def test_nothing_else_is_written_into(source):
    assert "_into" not in rewritten(source)


def test_a_name_that_took_over_an_array_may_be_written_once_the_first_is_not_read():
    src = rewritten("""
        def f(x, y):
            g = np.exp(x)
            d = unbroadcast(g, shape(x))
            e = -unbroadcast(g, shape(y))
            d = d + e
            return d
    """)
    assert "d = add_into(d, e)" in src


# -- whole gradients --------------------------------------------------------------

def softmax_xent(W, X, Y):
    logits = X @ W
    m = np.max(logits, axis=1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (logits - lse), axis=1))


def two_paths(x, w):
    a = np.exp(x * w)
    b = np.sin(a) * x
    c = a * w + b
    return np.sum(c * c)


def reused_in_loop(x, w):
    h = x
    for _ in range(3):
        h = np.tanh(h * w + x)
    return np.sum(h * h)


def directional_check(g, f, args, wrt, seed=0):
    """<grad, v> against a central difference of f along random v, for each wrt position."""
    rng = np.random.default_rng(seed)
    grads = g(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for i, grad in zip(wrt, grads):
        v = rng.standard_normal(np.shape(args[i]))
        expected = directional(lambda moved: f(*[moved if j == i else a for j, a in enumerate(args)]), args[i], v)
        np.testing.assert_allclose(np.sum(grad * v), expected, rtol=1e-5, atol=1e-8)


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_softmax_cross_entropy_writes_into_its_temporaries_and_keeps_the_callers_arrays():
    rng = np.random.default_rng(1)
    W = 0.1 * rng.standard_normal((60, 100))
    X = rng.standard_normal((128, 60))
    Y = np.eye(100)[rng.integers(0, 100, 128)]
    g = astgrad.grad(softmax_xent)
    assert "multiply_into(" in g.source and "dlogits = add_into(dlogits, " in g.source
    copies = [a.copy() for a in (W, X, Y)]
    directional_check(g, softmax_xent, (W, X, Y), (0,))
    for a, before in zip((W, X, Y), copies):
        np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("f", [two_paths, reused_in_loop])
def test_gradients_and_the_callers_arrays(f):
    rng = np.random.default_rng(2)
    x, w = rng.uniform(0.1, 0.9, BIG), rng.uniform(0.1, 0.9, BIG)
    copies = [x.copy(), w.copy()]
    g = astgrad.grad(f, wrt=(0, 1))
    directional_check(g, f, (x, w), (0, 1))
    first = g(x, w)
    np.testing.assert_array_equal(g(x, w)[0], first[0])  # nothing it saved was overwritten between calls
    np.testing.assert_array_equal(x, copies[0])
    np.testing.assert_array_equal(w, copies[1])


def test_a_vjp_leaves_the_seed_alone():
    rng = np.random.default_rng(3)
    x, w = rng.uniform(0.1, 0.9, BIG), rng.uniform(0.1, 0.9, BIG)
    seed = rng.standard_normal(BIG)
    kept = seed.copy()

    def f(x, w):
        return np.exp(x * w) * x + w

    vjp = astgrad.vjp(f, wrt=(0, 1))
    dx, dw = vjp(x, w, seed)
    np.testing.assert_array_equal(seed, kept)
    e = np.exp(x * w)
    np.testing.assert_allclose(dx, seed * (e * w * x + e))
    np.testing.assert_allclose(dw, seed * (e * x * x + 1))


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_mixed_precision_gives_the_float64_values_in_each_inputs_dtype():
    rng = np.random.default_rng(4)
    x = rng.uniform(0.1, 0.9, BIG).astype(np.float32)
    w = rng.uniform(0.1, 0.9, BIG)
    g = astgrad.grad(two_paths, wrt=(0, 1))
    assert "_into(" in g.source
    dx, dw = g(x, w)
    assert dx.dtype == np.float32 and dw.dtype == np.float64
    exact = g(x.astype(np.float64), w)
    np.testing.assert_allclose(dx, exact[0], rtol=1e-6)
    np.testing.assert_allclose(dw, exact[1], rtol=1e-12)


# -- every corpus function, with the helpers writing in place at any size ------

def _copies(values):
    return [np.copy(v) if isinstance(v, np.ndarray) else v for v in values]


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_writing_in_place_changes_no_value(case, monkeypatch):
    """The corpus arrays are small, so the helpers compute as written; with their size
    threshold at zero they write in place wherever the pass allowed it, and every
    gradient must come out bit for bit the same, the caller's arrays untouched."""
    seed = ()
    if np.ndim(case.f(*_copies(case.args))):  # grad refuses a non-scalar output: the vjp with ones
        seed = (np.ones(np.shape(case.f(*_copies(case.args)))),)
    g = (astgrad.vjp if seed else astgrad.grad)(case.f, wrt=case.wrt)
    expected = _as_tuple(g(*_copies(case.args), *seed))
    monkeypatch.setattr(runtime, "SMALL", 0)
    args = _copies(case.args)
    got = _as_tuple(g(*args, *seed))
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(args, case.args):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
