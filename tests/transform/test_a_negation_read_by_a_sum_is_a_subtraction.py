"""A negation read by a sum is a subtraction, where its operand surely holds floats (passes/negations.py).

``ddamping + -dt9 * omega * dt`` is ``ddamping - dt9 * omega * dt`` and
``dt4 = -dahead`` read once by ``dt9 + dt4 + dback`` is ``dt9 - dahead +
dback``: IEEE rounding is symmetric, so the numbers are the same bit for
bit.  The rewrite on generated-style code is compared bit for bit with the
code as written (signed zeros, infinities); it is refused where the operand
is not proven floats (a parameter, which may hold unsigned integers whose
negation wraps, or booleans, whose negation raises; a pop), where the
negated array may be written or reached by another name before the sum
reads it, or where the negation is read twice.  Programs against central
differences at every level: the pendulum, the upwind step, float32 meeting
float64, an int array, a view argument, a subclass.
"""

import textwrap

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.sin(np.linspace(0.0, 6.0, 9)) + 0.2


def pendulum(length, theta0, damping, dt=0.01):
    t = 0.0
    theta, omega = theta0, 0.0
    while t < 0.05:
        omega = omega - dt * (9.81 / length * np.sin(theta) + damping * omega)
        theta = theta + dt * omega
        t = t + dt
    return theta ** 2 + 0.1 * omega ** 2


def burgers(nu, u0):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / 0.3
        u[1:-1] = u[1:-1] - 0.05 * advect + nu * 0.1 / 0.3 ** 2 * (ahead - back)
    return np.sum(u ** 2) * 0.3


@pytest.mark.parametrize("level", LEVELS)
def test_pendulum_matches_central_differences(level):
    got = astgrad.grad(pendulum, wrt=(0, 1, 2), optimize=level)(1.2, 0.8, 0.1)
    for i, x in enumerate((1.2, 0.8, 0.1)):
        def f(v, i=i):
            args = [1.2, 0.8, 0.1]
            args[i] = v
            return pendulum(*args)
        np.testing.assert_allclose(got[i], gradient(f, x), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", ["float64", "float32", "view", "subclass"])
def test_burgers_at_every_level(case, level):
    class Marked(np.ndarray):
        pass
    u = {"float64": U.copy(), "float32": U.astype(np.float32), "view": np.repeat(U, 2)[::2],
         "subclass": U.copy().view(Marked)}[case]
    got_nu, got_u = astgrad.grad(burgers, wrt=(0, 1), optimize=level)(0.7, u)
    eps, tol = (1e-3, 2e-2) if case == "float32" else (1e-6, 1e-6)
    np.testing.assert_allclose(got_u, gradient(lambda v: burgers(0.7, v.astype(u.dtype) if case == "float32" else v),
                                                np.asarray(u, dtype=np.float64), eps=eps), rtol=tol, atol=tol)
    np.testing.assert_allclose(got_nu, gradient(lambda nu: burgers(nu, np.asarray(u).copy()), 0.7, eps=eps),
                               rtol=tol, atol=tol)


M = np.arange(9) % 3 - 1


def with_ints(nu, u0):
    u = u0.copy()
    for _ in range(3):
        ahead = u[2:] - u[1:-1]
        u[1:-1] = u[1:-1] - 0.05 * (M[1:-1] * ahead) * u[1:-1] + nu * 0.1 * (ahead - (u[1:-1] - u[:-2]))
    return np.sum(u ** 2)


@pytest.mark.parametrize("level", LEVELS)
def test_an_int_array_beside(level):
    got_nu, got_u = astgrad.grad(with_ints, wrt=(0, 1), optimize=level)(0.7, U.copy())
    np.testing.assert_allclose(got_u, gradient(lambda v: with_ints(0.7, v), U.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_nu, gradient(lambda nu: with_ints(nu, U.copy()), 0.7), rtol=1e-6, atol=1e-7)


def test_the_pendulum_and_the_upwind_step_subtract():
    g = astgrad.grad(pendulum, wrt=(0, 1, 2))
    g(1.2, 0.8, 0.1)
    assert "+ -d" not in g.source and " - dt" in g.source, g.source
    g = astgrad.grad(burgers, wrt=(0, 1))
    g(0.7, U.copy())
    assert "= -dahead" not in g.source and "- dahead" in g.source, g.source


# ---- the rewrite on generated-style code, both versions run and compared bit for bit

def _rewritten(source):
    from astgrad.transform import runtime
    from astgrad.transform.back.namespace import Namespace
    from astgrad.transform.front.naming import Names
    from astgrad.transform.ir import compat
    from astgrad.transform.passes.negations import fold_negations
    tree = compat.parse(textwrap.dedent(source))
    names = Names()
    ns = Namespace(names)
    assert ns.bind(np, "np") == "np"
    for fn in (runtime.shape, runtime.unbroadcast, runtime.summed, runtime.add_at):
        assert ns.helper(fn) == fn.__name__
    changed = fold_negations(tree.body[0], ns)
    return changed, compat.to_source(tree), ns


def _run(source, ns, *args):
    scope = {name: ns.globals[name] for name in ns.order}
    scope["_stack"] = []
    exec(compile(textwrap.dedent(source), "<test>", "exec"), scope)
    return scope["f"](*args)


A = np.array([1.5, -0.0, 0.0, np.inf, -2.25, 1e-300])
B = np.array([0.5, 3.0, -0.0, 2.0, np.inf, 1e-300])

FOLDED = {
    "chain": "def f(a, b):\n    g = b * 0.5\n    s = a + -g * b / 3.0\n    return s\n",
    "name read once": ("def f(a, b):\n    z = np.zeros(6)\n    sl = slice(None)\n    g = b / 3.0\n    n = -g\n    c = np.exp(b) * g\n"
                       "    d = add_at(z, g, (6,), sl)\n    s = a + n\n    return s, c, d\n"),
    "accumulated, a copy between": ("def f(a, b):\n    g = b / 3.0\n    h = g\n    n = -g\n    h = h + a\n"
                                    "    n = n + a * 2.0\n    return n, h\n"),
}


@pytest.mark.parametrize("source", FOLDED.values(), ids=FOLDED.keys())
def test_a_negation_of_floats_is_folded(source):
    changed, out, ns = _rewritten(source)
    assert changed and "-g" not in out, out
    with np.errstate(all="ignore"):
        for got, expected in zip(np.atleast_1d(_run(out, ns, A, B)), np.atleast_1d(_run(source, ns, A, B))):
            assert np.array_equal(np.signbit(got), np.signbit(expected)) and np.array_equal(got, expected)


@pytest.mark.parametrize("source", [
    # a parameter: unsigned integers would wrap, booleans raise
    "def f(a, b):\n    s = a + -b * 2.0\n    return s\n",
    "def f(a, b):\n    n = -b\n    return a + n\n",
    # a pop from the stack
    "def f(a, b):\n    _stack.append(b / 2.0)\n    g = _stack.pop()\n    return a + -g * 2.0\n",
    # written in place between, through an add_at into it or a name made its alias
    "def f(a, b):\n    g = b / 3.0\n    n = -g\n    g = add_at(g, b, (6,), slice(None))\n    return a + n\n",
    "def f(a, b):\n    g = b / 3.0\n    n = -g\n    h = unbroadcast(g, shape(g))\n    h = add_at(h, b, (6,), slice(None))\n"
    "    return a + n\n",
    # a copy of the negated value written into (add_at into it)
    "def f(a, b):\n    sl = slice(None)\n    g = b / 3.0\n    h = g\n    n = -g\n    h = add_at(h, a, (6,), sl)\n"
    "    s = a + n\n    return s, h\n",
    # added to itself, or to the operand written between
    "def f(a, b):\n    g = b / 3.0\n    n = -g\n    n = n + n * 2.0\n    return n\n",
    # read twice, or after the sum itself
    "def f(a, b):\n    g = b / 3.0\n    n = -g\n    return a + n, n\n",
    "def f(a, b):\n    g = b / 3.0\n    n = -g\n    return n + a\n",
    # not made in the block: a copy of a parameter's product is, but the copy's name came from outside
    "def f(a, b, c):\n    g = c\n    n = -g\n    return a + n\n",
], ids=["parameter chain", "parameter name", "pop", "add_at into it", "alias written", "copy written",
        "added to itself", "read twice", "left operand",
        "copied parameter"])
def test_where_the_proof_fails_the_code_stays(source):
    changed, out, ns = _rewritten(source)
    assert not changed, out
    args = (A.copy(), B.copy()) + ((np.arange(6, dtype=np.uint8),) if "c)" in source else ())
    with np.errstate(all="ignore"):
        got, expected = _run(out, ns, *args), _run(source, ns, *args)
    for x, y in zip(np.atleast_1d(got), np.atleast_1d(expected)):
        assert np.array_equal(x, y, equal_nan=True)


def test_an_unsigned_parameter_keeps_its_wrapping_negation():
    source = "def f(a, b):\n    s = a + -b * 2.0\n    return s\n"
    changed, out, ns = _rewritten(source)
    b = np.arange(4, dtype=np.uint8)
    assert not changed
    np.testing.assert_array_equal(_run(out, ns, 0.0, b), 0.0 + (-b) * 2.0)  # as numpy computes it: wrapped


ADDED = "def f(a, b):\n    z = a * 1.0\n    sl = SLICE\n    g = b / 3.0\n    n = -g\n    z = add_at(z, n, (6,), sl)\n    return z\n"


@pytest.mark.parametrize("index", ["slice(1, None)", "slice(None, None, 2)", "2", "[0, 0, 1]"])
def test_a_negation_added_at_an_index_is_subtracted_there(index):
    source = ADDED.replace("SLICE", index)
    g_len = {"slice(1, None)": 5, "slice(None, None, 2)": 3, "2": 1, "[0, 0, 1]": 3}[index]
    changed, out, ns = _rewritten(source)
    assert changed and "subtract_at(z, g," in out and "-g" not in out, out
    b = B[:g_len] if index != "2" else B[3]
    with np.errstate(all="ignore"):
        got, expected = _run(out, ns, A.copy(), b), _run(source, ns, A.copy(), b)
    assert np.array_equal(np.signbit(got), np.signbit(expected)) and np.array_equal(got, expected, equal_nan=True)


def test_subtract_at_where_the_dtypes_differ_adds_the_negation():
    from astgrad.transform.runtime import add_at, subtract_at
    total = np.array([1.0, -0.0, 2.0], dtype=np.float32)
    g = np.array([0.5, 0.0], dtype=np.float64)  # float64 into float32: add_at's general path, upcast
    got = subtract_at(total.copy(), g, (3,), slice(1, None))
    expected = add_at(total.copy(), -g, (3,), slice(1, None))
    assert got.dtype == expected.dtype and np.array_equal(np.signbit(got), np.signbit(expected))
    assert np.array_equal(got, expected)
