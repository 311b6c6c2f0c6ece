"""A callee's seed tested once, its items from ``np.array`` computed, its item adds in place.

``backward_f`` of a right-hand side ``np.array([p[0] * y[0] - ..., ...])``
tested every gradient it derived from its seed with ``is_zero`` (sixteen
tests a call) and built ``dy`` and ``dp`` by ten ``scatter``/``add_at``
calls.  At optimize=2 (numpy backend) the seed is tested once, after the
pop, where the forward half pushes nothing else (passes/computed_seeds.py),
every gradient derived from it runs without a test, and a run of adds into
one array is ``d[i] += g`` behind one test of ``d`` (passes/chained_adds.py).
Each case against central differences at every level: float32 meeting
float64, an int array, a strided view, a subclass, a longer parameter; the
cases where the proof fails (the forward half pushes in a loop, a tuple
result, a list parameter) keep their tests and give the same numbers.  A
computed zero meeting an infinity now gives PyTorch's NaN; the placeholder
of a branch not taken, an unused result or a loop of no trip still gives
exactly 0.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def rhs(y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def looping(y, p):
    total = p[0] * y[0]
    for i in range(2):
        total = total * y[i] + p[i + 1]
    return np.array([total, p[3] * y[1]])


def pair(y, p):
    return p[0] * y[0] * y[1], p[2] * y[1] - p[3] * y[0]


def rk4_like(f):
    def program(p, y):
        k1 = f(y, p)
        k2 = f(y + 0.5 * k1, p)
        return np.sum(f(y + 0.25 * k2, p) * k1 + k2)
    return program


def through_pair(p, y):
    a, b = pair(y, p)
    c, d = pair(y * a, p)
    return a * c + b * d


def summed(items, p):
    return p[0] * items[0] * items[1] + p[1] * items[1]


def through_list(p, y):
    return summed([y[0], y[1] * p[2]], p) * summed([y[1], p[3]], p)


class Marked(np.ndarray):
    pass


STATES = {
    "float64": np.array([1.0, 0.5]),
    "float32": np.array([1.0, 0.5], dtype=np.float32),
    "int": np.array([2, 1]),
    "view": np.array([1.0, 7.0, 0.5, 7.0])[::2],
    "subclass": np.array([1.0, 0.5]).view(Marked),
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [rhs, looping])
@pytest.mark.parametrize("state", sorted(STATES))
def test_callee_gradients_against_central_differences(level, f, state):
    y = STATES[state]
    p = np.array([1.1, 0.4, 0.3, 0.9])
    program = rk4_like(f)
    got = astgrad.grad(program, wrt=(0, 1), optimize=level)(p, y)
    wide = np.asarray(y, dtype=np.float64)
    for i, g in enumerate(got):
        want = numeric_grad(program, (p, wide), i)
        np.testing.assert_allclose(g, want, rtol=1e-3 if y.dtype == np.float32 else 1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_gradients_dtypes_are_the_unoptimised_adjoint_s(dtype):
    p, y = np.array([1.1, 0.4, 0.3, 0.9], dtype=dtype), np.array([1.0, 0.5], dtype=dtype)
    program = rk4_like(rhs)
    want = astgrad.grad(program, wrt=(0, 1), optimize=0)(p, y)
    got = astgrad.grad(program, wrt=(0, 1))(p, y)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6 if dtype == np.float64 else 1e-4)


@pytest.mark.parametrize("level", LEVELS)
def test_a_longer_parameter_than_the_callee_reads(level):
    p, y = np.array([1.1, 0.4, 0.3, 0.9, 5.0, -2.0]), np.array([1.0, 0.5])
    program = rk4_like(rhs)
    got = astgrad.grad(program, wrt=(0, 1), optimize=level)(p, y)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, numeric_grad(program, (p, y), i), rtol=1e-6, atol=1e-6)
    assert got[0][4] == 0.0 and got[0][5] == 0.0


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("program", [through_pair, through_list])
def test_where_the_proof_fails_the_numbers_stay(level, program):
    p, y = np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.0, 0.5])
    got = astgrad.grad(program, wrt=(0, 1), optimize=level)(p, y)
    for i, g in enumerate(got):
        np.testing.assert_allclose(g, numeric_grad(program, (p, y), i), rtol=1e-6, atol=1e-6)


def _backward(gradient, name):
    source = gradient.source
    start = source.index(f"def backward_{name}")
    end = source.find("\ndef ", start + 1)
    return source[start:end if end > 0 else None]


def test_the_seed_is_tested_once_and_the_items_added_in_place():
    p, y = np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.0, 0.5])
    gradient = astgrad.grad(rk4_like(rhs), wrt=(0, 1))
    gradient(p, y)
    backward = _backward(gradient, "rhs")
    assert backward.count("is_zero(") == 1 and "return 0.0, 0.0" in backward, backward
    assert "backward_rhs(_stack, dt" in gradient.source and ", True)" in gradient.source  # computed seeds said so
    assert "dp[0] +=" in backward and "dy = zeros(" in backward and "number_scalars(dresult, 2)" in backward, backward
    for level in (0, 1):  # below 2: every gradient tested, as before
        gradient = astgrad.grad(rk4_like(rhs), wrt=(0, 1), optimize=level)
        gradient(p, y)
        assert _backward(gradient, "rhs").count("is_zero(") > 1


def test_where_the_forward_half_pushes_in_a_loop_or_the_result_is_a_tuple_every_test_stays():
    p, y = np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.0, 0.5])
    gradient = astgrad.grad(rk4_like(looping), wrt=(0, 1))
    gradient(p, y)
    assert "return 0.0" not in _backward(gradient, "looping")
    gradient = astgrad.grad(through_pair, wrt=(0, 1))
    gradient(p, y)
    assert "return 0.0" not in _backward(gradient, "pair")


def second_item(x):
    h = np.array([x[0] * x[1] * x[2], x[1]])
    return h[1]


def entry_of_second_item(x):
    return second_item(x)


def test_a_computed_zero_meeting_an_infinity_gives_pytorch_s_nan():
    torch = pytest.importorskip("torch")
    x = np.array([1.0, 2.0, np.inf])
    got = astgrad.grad(entry_of_second_item)(x)
    t = torch.tensor(x, requires_grad=True)
    h = torch.stack([t[0] * t[1] * t[2], t[1]])
    h[1].backward()
    np.testing.assert_array_equal(got, t.grad.numpy())
    assert np.isnan(got[0]) and np.isnan(got[1])


def test_a_computed_zero_meeting_an_infinity_on_the_tape():
    x = np.array([1.0, 2.0, np.inf])
    got = astgrad.grad(entry_of_second_item)(x)
    t = astgrad.tensor(x, requires_grad=True)
    np.stack([t[0] * t[1] * t[2], t[1]])[1].backward()  # the tape's np.array refuses Tensors: np.stack
    np.testing.assert_array_equal(got, np.asarray(t.grad))


def inner(a, b):
    return a * np.exp(b)


def zero_times_callee(x):
    return 0.0 * inner(x, x) + x * x


@pytest.mark.parametrize("level", LEVELS)
def test_a_computed_zero_seed_runs_the_callee_s_rules(level):
    """0.0 * inner(x, x): the callee's seed is a computed zero, which the caller says is computed (not the
    placeholder), so exp(800) = inf meets it in NaN, as on PyTorch."""
    torch = pytest.importorskip("torch")
    t = torch.tensor(800.0, dtype=torch.float64, requires_grad=True)
    (0.0 * (t * torch.exp(t)) + t * t).backward()
    with np.errstate(over="ignore", invalid="ignore"):
        got = astgrad.grad(zero_times_callee, optimize=level)(800.0)
        assert astgrad.grad(zero_times_callee, optimize=level)(1.5) == 3.0
    assert np.isnan(got) and np.isnan(t.grad.item())


def branch(x, flag):
    h = rhs(x, x)
    if flag:
        s = h[0]
    else:
        s = x[0]
    return s


def unused(x):
    rhs(x, x)
    return x[0] * 2.0


def no_trip(x, n):
    h = rhs(x, x)
    total = x[0]
    for _ in range(n):
        total = total + h[0]
    return total


@pytest.mark.parametrize("level", LEVELS)
def test_the_placeholder_still_contributes_exactly_zero(level):
    x = np.array([3.0, np.inf, 1.0, 2.0])
    want = np.array([1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(astgrad.grad(branch, optimize=level)(x, False), want)
    np.testing.assert_array_equal(astgrad.grad(unused, optimize=level)(x), 2.0 * want)
    np.testing.assert_array_equal(astgrad.grad(no_trip, optimize=level)(x, 0), want)


@pytest.mark.parametrize("level", LEVELS)
def test_a_pullback_with_a_zero_cotangent(level):
    p, y = np.array([1.1, 0.4, 0.3, 0.9]), np.array([1.0, 0.5])
    out, pullback = astgrad.vjp(rhs, y, p, optimize=level)
    np.testing.assert_allclose(out, rhs(y, p))
    for seed in (np.zeros(2), np.array([1.0, -2.0])):
        dy, dp = pullback(seed)
        want_y = numeric_grad(lambda y, p: np.sum(rhs(y, p) * seed), (y, p), 0)
        want_p = numeric_grad(lambda y, p: np.sum(rhs(y, p) * seed), (y, p), 1)
        np.testing.assert_allclose(dy, want_y, atol=1e-6)
        np.testing.assert_allclose(dp, want_p, atol=1e-6)


class _Names:
    def __init__(self):
        self.count = 0

    def temp(self):
        self.count += 1
        return f"t{self.count}"


class _Namespace:
    def __init__(self):
        from astgrad import rules
        from astgrad.transform import runtime
        self.globals = {"add_at": runtime.add_at, "scatter": rules.scatter, "other": tuple}

    def helper(self, fn):
        self.globals[fn.__name__] = fn
        return fn.__name__

    def bind(self, obj, name):
        self.globals[name] = obj
        return name


RUNS = {
    "plain": """
def f(s, g, h):
    d = scatter(g, s, 1)
    d = add_at(d, g, s, 0)
    d = add_at(d, h + g, s, 1)
    return d
""",
    "shape_bound_again": """
def f(s, g, h):
    d = scatter(g, s, 1)
    s = other(s)
    d = add_at(d, g, s, 0)
    d = add_at(d, h, s, 2)
    return d
""",
    "read_between": """
def f(s, g, h):
    d = scatter(g, s, 1)
    d = add_at(d, g, s, 0)
    e = d
    d = add_at(d, h, s, 1)
    return d + e
""",
}


def _run_pass(source):
    import gast
    from astgrad.transform.ir import compat
    from astgrad.transform.passes.chained_adds import chain_item_adds
    tree = gast.parse(source)
    ns = _Namespace()
    changed = chain_item_adds(tree.body[0], ns, _Names(), lambda name: None)
    code = compat.to_source(tree)
    namespace = dict(ns.globals)
    exec(compile(code, "<chained>", "exec"), namespace)
    original = dict(ns.globals)
    exec(compile(source, "<original>", "exec"), original)
    return changed, code, namespace["f"], original["f"]


@pytest.mark.parametrize("name", sorted(RUNS))
@pytest.mark.parametrize("g", [np.float64(1.5), np.float32(1.5), 1.5, np.float64(0.0)], ids=str)
def test_a_run_of_adds_gives_add_at_s_numbers_and_dtypes(name, g):
    changed, code, rewritten, original = _run_pass(RUNS[name])
    assert changed == (name == "plain"), code
    want = original((3,), g, np.float64(2.0))
    got = rewritten((3,), g, np.float64(2.0))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
