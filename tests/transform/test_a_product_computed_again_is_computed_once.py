"""A product computed again from the same operands is computed once (passes/shared_products.py).

The Monte-Carlo step's reverse sweep computes ``dt13 * t3`` for ``ds`` and
again at the head of ``dt13 * t3 * s``; it is bound once where nothing
between can change its operands.  The rewrite itself is checked on
generated-style code (shared, or left where an operand is rebound, an
array written between, the product read as a value, or something else
computed first) with the numbers of both versions compared bit for bit;
and programs against central differences at every level: the Asian call,
float32 meeting float64, an int array, a view argument, a subclass.
"""

import textwrap

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(3)
Z = RNG.standard_normal((6, 4))


def asian(spot, vol, z):
    n_paths, n_steps = z.shape
    dt = 1.0 / n_steps
    s = spot * np.ones(n_paths)
    total = np.zeros(n_paths)
    for j in range(n_steps):
        s = s * np.exp((0.03 - 0.5 * vol ** 2) * dt + vol * np.sqrt(dt) * z[:, j])
        total = total + s
    return np.mean(np.maximum(total / n_steps - 95.0, 0.0))


def growth(a, x):
    s = x.copy()
    for _ in range(3):
        s = s * np.exp(a * s)  # its gradient multiplies by the same factor twice
    return np.sum(s)


@pytest.mark.parametrize("level", LEVELS)
def test_asian_call_matches_central_differences(level):
    got = astgrad.grad(asian, wrt=(0, 1), optimize=level)(100.0, 0.25, Z)
    np.testing.assert_allclose(got[0], gradient(lambda s: asian(s, 0.25, Z), 100.0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[1], gradient(lambda v: asian(100.0, v, Z), 0.25), rtol=1e-6, atol=1e-8)


def test_the_asian_call_computes_the_product_once():
    g = astgrad.grad(asian, wrt=(0, 1))
    g(100.0, 0.25, Z)
    loop = g.source[g.source.index("reversed(range"):]
    assert loop.count("dt13 * t3") == 0 or loop.count("dt13 * t3") == 1, loop
    assert any(line.strip().endswith(" * t3") and line.strip().split(" = ")[0].startswith("t")
               for line in loop.splitlines()), loop


X = np.linspace(0.1, 0.9, 5)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", ["float64", "float32", "view", "subclass"])
def test_growth_at_every_level(case, level):
    class Marked(np.ndarray):
        pass
    x = {"float64": X.copy(), "float32": X.astype(np.float32), "view": np.repeat(X, 2)[::2],
         "subclass": X.copy().view(Marked)}[case]
    got = astgrad.grad(growth, wrt=(0, 1), optimize=level)(0.3, x)
    reference = np.asarray(x, dtype=np.float64)
    eps = 1e-3 if case == "float32" else 1e-6
    tol = 2e-2 if case == "float32" else 1e-6
    np.testing.assert_allclose(got[0], gradient(lambda a: growth(a, np.asarray(x).astype(x.dtype)), 0.3, eps=eps),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], gradient(lambda v: growth(0.3, v.astype(x.dtype)), reference, eps=eps),
                               rtol=tol, atol=tol)
    assert np.array_equal(x, X.astype(x.dtype))  # the argument is not written into


@pytest.mark.parametrize("level", LEVELS)
def test_an_int_array_beside(level):
    m = np.arange(1, 6)

    def f(a, x):
        s = x * m
        for _ in range(2):
            s = s * np.exp(a * m) + m
        return np.sum(s)
    got = astgrad.grad(f, wrt=(0, 1), optimize=level)(0.1, X.copy())
    np.testing.assert_allclose(got[0], gradient(lambda a: f(a, X.copy()), 0.1), rtol=1e-6)
    np.testing.assert_allclose(got[1], gradient(lambda v: f(0.1, v), X.copy()), rtol=1e-6)


# ---- the rewrite on generated-style code, both versions run and compared bit for bit

def _rewritten(source):
    from astgrad.transform import runtime
    from astgrad.transform.back.namespace import Namespace
    from astgrad.transform.front.naming import Names
    from astgrad.transform.ir import compat
    from astgrad.transform.passes.shared_products import share_products
    tree = compat.parse(textwrap.dedent(source))
    names = Names()
    ns = Namespace(names)
    assert ns.bind(np, "np") == "np"
    for fn in (runtime.shape, runtime.unbroadcast, runtime.summed):
        assert ns.helper(fn) == fn.__name__
    changed = share_products(tree.body[0], ns, names)
    return changed, compat.to_source(tree), ns


def _run(source, ns, *args):
    scope = {name: ns.globals[name] for name in ns.order}
    exec(compile(textwrap.dedent(source), "<test>", "exec"), scope)
    return scope["f"](*args)


SHARED = """
def f(a, b, c):
    x = unbroadcast(a * b, shape(c))
    y = unbroadcast(a * b * c, ())
    return x, y
"""


def test_a_product_computed_again_is_bound_once():
    changed, out, ns = _rewritten(SHARED)
    assert changed and out.count("a * b") == 1, out
    a, b, c = RNG.standard_normal(4), RNG.standard_normal(4), RNG.standard_normal(4)
    for got, expected in zip(_run(out, ns, a, b, c), _run(SHARED, ns, a, b, c)):
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("source", [
    # an operand rebound by the first statement
    "def f(a, b, c):\n    a = unbroadcast(a * b, shape(c))\n    y = a * b * c\n    return a, y\n",
    # an array written between (in place, and through a ufunc's positional out)
    "def f(a, b, c):\n    x = a * b\n    a[0] = 5.0\n    y = a * b * c\n    return x, y\n",
    "def f(a, b, c):\n    x = a * b\n    z = np.add(a, c, a)\n    y = a * b * c\n    return x, y\n",
    "def f(a, b, c):\n    x = a * b\n    np.add(a, c, out=a)\n    y = a * b * c\n    return x, y\n",
    # the product read again as a value of its own: two names would hold one array
    "def f(a, b, c):\n    x = a * b\n    y = unbroadcast(a * b, shape(c))\n    return x, y\n",
    # something else computed first
    "def f(a, b, c):\n    x = np.exp(c) + a * b\n    y = a * b * c\n    return x, y\n",
    "def f(a, b, c):\n    x = -a * b\n    y = a * b * c\n    return x, y\n",
], ids=["rebound", "item write", "positional out", "out keyword", "read as a value", "exp first", "negation first"])
def test_where_the_proof_fails_the_code_stays(source):
    changed, out, ns = _rewritten(source)
    assert not changed, out
    a, b, c = RNG.standard_normal(4), RNG.standard_normal(4), RNG.standard_normal(4)
    for got, expected in zip(_run(out, ns, a.copy(), b, c), _run(source, ns, a.copy(), b, c)):
        assert np.array_equal(got, expected)
