"""backend="numba": gradients added into in place, and elementwise chains written as one expression.

The compiled ``add_at`` adds into the gradient itself where the transformer
proved that nothing else reaches it (``added_at`` copies it first); the
fusing pass (backends/numba/fuse.py) puts a temporary's expression where it
is read once.  Each compiled gradient is compared with the numpy backend's
(1e-12) and with central differences, on programs where the proof holds and
where it must fail (a view of the written array read afterwards, a name
rebound between the two lines).  The pass itself is tested on text, without
Numba.
"""

import textwrap

import numpy as np
import pytest

import _numeric
import astgrad
from astgrad.backends.numba.fuse import fuse
from astgrad.transform.ir import compat
from astgrad.transform import runtime


def items_in_a_loop(x, n):
    """``dx`` made whole by the reverse sweep, then added into at items and a slice: in place."""
    total = 0.0
    for i in range(n):
        total = total + x[i] * x[i + 1]
    w = x[2:]
    return total + np.sum(w * w)


def written_then_viewed(x, n):
    """Items added into ``y``, then a view of ``y`` and a second name of it read: the gradient's parts alias."""
    y = x * 2.0
    for i in range(n):
        y[i] += x[i] * x[i + 1]
    z = y[1:]
    d = y
    return np.sum(y[:-1] * z) + np.sum(d * d)


def rebound_in_a_loop(x, steps):
    """A slice written each step after ``u`` is rebound: the gradient of ``u`` is not owned (copies)."""
    u = x.copy()
    for _ in range(steps):
        a = u * 2.0
        b = a + 1.0
        u = u * 0.5
        c = b * u
        u[1:-1] = u[1:-1] + 0.1 * c[:-2]
    return np.sum(np.sin(u) * u)


def chained(x, z):
    """A chain of elementwise operations in a loop, one of them read twice (not fused there)."""
    s = x * 1.0
    total = np.zeros_like(x)
    for j in range(z.shape[1]):
        s = s * np.exp(0.1 - 0.02 * x ** 2 + 0.3 * z[:, j])
        total = total + s
    return np.sum(np.maximum(total - 2.0, 0.0) ** 2)


def broadcast_chain(x, y):
    """Temporaries whose shapes the reverse sweep reads (broadcast ones): fused, their shapes kept."""
    total = 0.0
    for _ in range(2):
        a = x[:, None] * 2.0 - y[None, :]
        c = np.exp(a) * y + x[:, None] ** 2
        total = total + np.sum(c * c)
    return total


CASES = {
    "items_in_a_loop": (items_in_a_loop, (np.linspace(0.1, 1.2, 7), 5), {"add_at"}),
    "written_then_viewed": (written_then_viewed, (np.linspace(0.1, 1.2, 7), 5), {"add_at", "setitem("}),
    "rebound_in_a_loop": (rebound_in_a_loop, (np.linspace(0.1, 1.2, 7), 3), {"added_at("}),
    "chained": (chained, (np.linspace(0.5, 1.5, 4), np.linspace(-1.0, 1.0, 12).reshape(4, 3)),
                {"= exp_of(0.1 - 0.02 * x ** 2 + 0.3 * z[:, j])"}),
    "broadcast_chain": (broadcast_chain, (np.linspace(0.5, 1.5, 4), np.linspace(-1.0, 1.0, 3)),
                        {"fused_shape(", "held_shape("}),
}


@pytest.mark.parametrize("key", list(CASES))
def test_in_place_adds_and_fused_chains_give_numpys_gradient_and_central_differences(key):
    pytest.importorskip("numba")
    fn, args, helpers = CASES[key]
    gradient = astgrad.grad(fn, backend="numba")
    got = gradient(*args)
    np.testing.assert_allclose(got, astgrad.grad(fn)(*args), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, _numeric.numeric_grad(fn, args, 0), rtol=1e-6, atol=1e-8)
    again = gradient(*args)  # an add in place must not reach the next call (nor the arguments)
    np.testing.assert_array_equal(again, got)
    source = gradient.source if hasattr(gradient, "source") else ""
    for helper in helpers:
        assert helper in source, (helper, source)


def _fused(text):
    fn_def = compat.parse(textwrap.dedent(text).strip() + "\n").body[0]
    fuse(fn_def, {"np": np, "add_at": runtime.add_at, "add_item": runtime.add_item, "shape": runtime.shape})
    return compat.to_source(fn_def).strip()


def test_a_chain_read_once_becomes_one_expression():
    assert _fused("""
        def f(x, z):
            t1 = x * 2.0
            t2 = np.exp(t1 + 1.0)
            t3 = -t2
            return np.sum(t3 * z)
    """) == "def f(x, z):\n    return np.sum(-np.exp(x * 2.0 + 1.0) * z)"


def test_a_temporary_whose_shape_is_read_holds_the_shape_of_its_operands():
    assert _fused("""
        def f(x, z):
            t1 = x * 2.0
            t2 = t1 - z[0]
            g = unbroadcast(t2, shape(t1))
            return g
    """) == ("def f(x, z):\n    t1 = fused_shape(x)\n    t2 = x * 2.0 - z[0]\n"
             "    g = unbroadcast(t2, held_shape(t1))\n    return g")


@pytest.mark.parametrize("between", [
    "x = z",  # an operand rebound
    "x[0] = 1.0",  # an item written
    "x += 1.0",  # changed in place
    "z = add_at(x, 1.0, shape(x), 0)",  # added into in place
    "for i in range(2):\n    z = z + 1.0",  # a block
    "x.pop()",  # a list whose item the expression reads, changed by a method
    "z = add_item(x, 1.0, z, 0)",  # or by a helper
])
def test_a_chain_does_not_move_past_what_may_change_its_operands(between):
    text = "def f(x, z):\n    t1 = x[0] * 2.0\n    " + between.replace("\n", "\n    ") + "\n    return np.sum(t1 * z)\n"
    assert "t1 = x[0] * 2.0" in _fused(text)


@pytest.mark.parametrize("reader", [
    "return np.sum(t1 * z) + np.sum(t1)",  # read twice
    "return shape(t1)",  # its shape read: not an operand of arithmetic
    "for i in range(2):\n    z = z + t1",  # read in a loop: it would run each trip
    "return [z + t1 for z in x]",  # read in a comprehension
])
def test_a_temporary_read_twice_or_not_as_an_operand_keeps_its_line(reader):
    text = "def f(x, z):\n    t1 = x * 2.0\n    " + reader.replace("\n", "\n    ") + "\n"
    assert "t1 = x * 2.0" in _fused(text)


def test_a_temporary_bound_twice_or_a_parameter_keeps_its_line():
    assert "t1 = x * 2.0" in _fused("""
        def f(x, z):
            t1 = x * 2.0
            z = t1 + 1.0
            t1 = z * 3.0
            return z
    """)
    assert "x = z * 2.0" in _fused("""
        def f(x, z):
            x = z * 2.0
            return x + 1.0
    """)


def test_slices_with_negative_bounds_and_rolls_of_names_fuse():
    from astgrad.backends.numba import shaping
    fn_def = compat.parse(textwrap.dedent("""
        def f(u, s):
            t5 = u[2:] - 2 * u[1:-1]
            t6 = shaping_rolled(u, s, 0)
            u = u * 2.0
            t7 = shaping_rolled(u, -1, 1)
            return np.sum(t5 + u[:-2] + t7)
    """).strip() + "\n").body[0]
    fuse(fn_def, {"np": np, "shape": runtime.shape, "shaping_rolled": shaping.rolled})
    assert compat.to_source(fn_def).strip() == (
        "def f(u, s):\n    t5 = u[2:] - 2 * u[1:-1]\n    t6 = shaping_rolled(u, s, 0)\n    u = u * 2.0\n"
        "    return np.sum(t5 + u[:-2] + shaping_rolled(u, -1, 1))")  # t5 is read after u is rebound
    assert _fused("""
        def f(u, z):
            t5 = u[2:] - 2 * u[1:-1]
            return np.sum(t5 + u[:-2] * z)
    """) == "def f(u, z):\n    return np.sum(u[2:] - 2 * u[1:-1] + u[:-2] * z)"


# ------------------------------------------------------------------ setitem_into: the write in place

def test_a_write_the_transformer_proved_alone_is_made_in_place_unless_the_value_reaches_the_array():
    """``setitem_into`` writes into a writeable array itself; a value that is a view of it (overlapping,
    so that the loop would read what it wrote), a read-only array and an array index go through
    ``setitem``'s copy: numpy's numbers in each case."""
    numba = pytest.importorskip("numba")
    from astgrad.backends.numba import helpers
    helpers.register()

    @numba.njit
    def written(a, v):
        b = a.copy()
        return runtime.setitem_into(b, slice(1, -1), v), b

    @numba.njit
    def shifted(a, back):
        b = a.copy()
        return runtime.setitem_into(b, slice(1, None), b[:-1] if back else b[::-1][1:]), b

    @numba.njit
    def into(a, v):
        return runtime.setitem_into(a, slice(1, -1), v)

    a = np.arange(6.0)
    out, b = written(a, np.ones(4))
    assert np.shares_memory(out, b) and np.array_equal(out, [0, 1, 1, 1, 1, 5])
    out, b = written(a, 2.5)  # a number
    assert np.shares_memory(out, b) and np.array_equal(out, [0, 2.5, 2.5, 2.5, 2.5, 5])
    for back in (True, False):
        out, b = shifted(a, back)  # overlapping: a copy, the value read before any write
        want = a.copy()
        want[1:] = want[:-1] if back else want[::-1][1:]
        assert not np.shares_memory(out, b) and np.array_equal(out, want)
    frozen = np.arange(6.0)
    frozen.flags.writeable = False  # typed read-only: a copy
    out = into(frozen, np.ones(4))
    assert np.array_equal(out, [0, 1, 1, 1, 1, 5]) and np.array_equal(frozen, np.arange(6.0))
    with pytest.raises(ValueError):  # 3 values into 4 places: numpy's error
        written(a, np.ones(3))


def heat_steps(kappa, u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[1:] = u[:-1] * 0.5 + u[1:]  # the value reads u shifted (a view overlapping the part written)
    return np.sum(u ** 2)


@pytest.mark.parametrize("u0", [np.sin(np.linspace(0.0, 3.0, 8)), np.sin(np.linspace(0.0, 3.0, 16))[::2]],
                         ids=["array", "view argument"])
def test_writes_in_place_in_a_loop_give_numpys_gradient_and_central_differences(u0):
    args = (0.2, u0)
    gradient = astgrad.grad(heat_steps, wrt=(0, 1), backend="numba")
    got = gradient(*args)
    assert "setitem_into(" in gradient.source
    for position, a, b in zip((0, 1), got, astgrad.grad(heat_steps, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(a, _numeric.numeric_grad(heat_steps, args, position), rtol=1e-6, atol=1e-8)


# ------------------------------------------------------------------ x op= v: the kind read before, kept after

def _updated_in_a_loop(x, v):
    y = x.copy()
    for i in range(3):
        y += v * i
    return np.sum(y ** 2)


def test_an_update_in_a_loop_keeps_its_arrays_kind_or_is_refused_where_numpy_would_cast_or_raise():
    """``array_kind(y)`` (shape and dtype) read before ``y += ...`` and ``in_place`` after: the same dtype
    compiles and agrees; a float32 ``y`` given float64 values (numpy casts into it) and a ``v`` that would grow
    ``y`` are refused at the user's line, never computed another way."""
    x, v = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    got = astgrad.grad(_updated_in_a_loop, wrt=(0, 1), backend="numba")(x, v)
    want = astgrad.grad(_updated_in_a_loop, wrt=(0, 1))(x, v)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got[1], _numeric.numeric_grad(_updated_in_a_loop, [x, v], 1), rtol=1e-6)
    first = _updated_in_a_loop.__code__.co_firstlineno
    for xs, vs in ((x.astype(np.float32), v), (x, np.ones((2, 3)))):
        with pytest.raises(astgrad.TransformError, match="backend='numba': Numba cannot compile") as refused:
            astgrad.grad(_updated_in_a_loop, wrt=(0, 1), backend="numba")(xs, vs)
        where = str(refused.value).split(": backend=")[0]
        assert where.startswith(__file__) and first <= int(where.split(":")[-2]) <= first + 4, where
