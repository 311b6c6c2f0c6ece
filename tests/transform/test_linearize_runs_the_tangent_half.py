"""``out, jvp_fn = astgrad.linearize(f, *primals)``: the primal half runs once, ``jvp_fn`` the tangent half alone.

Each ``jvp_fn(u)`` must be ``J u`` at the primals linearize was given:
against the generated jvp (which runs f again) and central differences,
through loops (with a break), a while loop, branches, callees, recursion,
item writes, list appends and dict primals.  The adversarial cases: the
caller writes into the primals, into what ``jvp_fn`` returned, or into a
global f reads, after linearize; a tangent of another shape.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import astgrad
from _numeric import directional
from corpus.functions import CASES as CORPUS
from corpus.programs import fresh_run, load, programs
from corpus.test_programs import X as PX, Y as PY

X = np.array([0.3, -0.2, 0.5])
W = np.array([[0.4, -1.1, 0.7], [0.2, 0.9, -0.3]])
SCALE = np.array([1.5, -0.5])


def inner(z, w):
    return np.tanh(w @ z) * 2.0


def callees_in_a_while_loop(x, w):
    s = inner(x, w)
    k = 0
    while k < 5:
        s = np.sin(s) + inner(x * s[0], w)
        if s[1] > 10.0:
            break
        k = k + 1
    return s


def grows_a_list(x):
    ys = []
    for i in range(3):
        ys.append(np.sin(x) * i)
    total = ys[0]
    for y in ys:
        total = total + y * x
    return total


def writes_items(x):
    z = x * 2
    for i in range(2):
        z[i] = np.sin(x[i + 1]) * z[i]
    return z * x


def of_a_dict(p, x):
    return np.tanh(p["w"] @ x + p["b"])


def leaves_early(x):
    t = x
    for i in range(10):
        t = t * 1.5
        if np.sum(t) > 3:
            break
        t = np.cos(t)
    return t


def branches(x, a):
    if np.sum(x) > 0:
        y = np.exp(x) * a
    else:
        y = np.log1p(x * x) / a
    return y * np.mean(y)


def recursive(x, n):
    if n == 0:
        return x
    return recursive(np.sin(x), n - 1) * x


def three_deep(x):
    return recursive(x, 3)


def scaled_by_global(x):
    return SCALE * np.tanh(W @ x)


CASES = {
    "callees in a while loop": (callees_in_a_while_loop, (X, W)),
    "list appends": (grows_a_list, (X,)),
    "item writes": (writes_items, (X,)),
    "a dict primal": (of_a_dict, ({"w": W, "b": np.array([0.1, -0.2])}, X)),
    "a loop left early": (leaves_early, (X,)),
    "both branches": (branches, (X, 1.3)),
    "the other branch": (branches, (-X - 1.0, 1.3)),
    "recursion": (three_deep, (X,)),
}


def _direction(value, rng):
    if isinstance(value, dict):
        return {k: _direction(v, rng) for k, v in value.items()}
    return rng.normal(size=np.shape(value)) if np.ndim(value) else float(rng.normal())


def _moved(value, direction, t):
    if isinstance(value, dict):
        return {k: _moved(value[k], direction[k], t) for k in value}
    return value + t * direction


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_fn_is_the_jvp_and_the_difference_quotient(name):
    f, args = CASES[name]
    out, jvp_fn = astgrad.linearize(f, *args)
    assert "def tangent_" in jvp_fn.source  # the tangent half, not the whole jvp again
    np.testing.assert_allclose(out, f(*args), rtol=1e-12)
    jvp = astgrad.jvp(f, wrt=tuple(range(len(args))))
    rng = np.random.default_rng(0)
    for _ in range(3):
        u = tuple(_direction(a, rng) for a in args)
        got = jvp_fn(*u)
        np.testing.assert_allclose(got, jvp(*args, u)[1], rtol=1e-12, atol=1e-14)
        for k in range(np.size(out)):
            expected = directional(lambda t: np.ravel(f(*(_moved(a, v, t) for a, v in zip(args, u))))[k], 0.0, 1.0)
            assert np.ravel(got)[k] == pytest.approx(expected, rel=1e-6, abs=1e-8)


def test_the_tangent_half_runs_none_of_the_primal_operations():
    _, jvp_fn = astgrad.linearize(callees_in_a_while_loop, X, W)
    tangent = jvp_fn.source[jvp_fn.source.index("def tangent_callees_in_a_while_loop"):]
    tangent = "\n".join(line for line in tangent[:tangent.index("def primal_inner")].splitlines()
                        if not line.strip().startswith("#"))
    assert "np.sin(" not in tangent and "np.cos(" not in tangent and "inner(" not in tangent.replace("tangent_inner(", "")



def accumulates(x, w):
    y = np.tanh(w @ x)
    s = 0.0
    for i in range(3):
        s = s + y * x[i]
    if s[0] > 0:
        s = s * 2
    return np.sin(s) * 2


def test_a_value_is_recorded_only_where_the_tangent_half_reads_it():
    # s is rebound on every trip and in the branch; the tangent half reads only its first value (the zeros of
    # its tangent) and its last through np.cos(s), computed in the primal half
    out, jvp_fn = astgrad.linearize(accumulates, X, W)
    tangent = jvp_fn.source[jvp_fn.source.index("def tangent_accumulates"):]
    assert tangent.count("s = take()") == 1 and "np.cos" not in tangent.split("return np.sin(s) * 2")[1]
    u, v = np.array([1.0, 0.5, -1.0]), np.full((2, 3), 0.3)
    np.testing.assert_allclose(jvp_fn(u, v), astgrad.jvp(accumulates, wrt=(0, 1))(X, W, (u, v))[1], rtol=1e-12)

def test_writes_into_the_primals_and_the_results_after_linearize_change_nothing():
    x, w = X.copy(), W.copy()
    _, jvp_fn = astgrad.linearize(callees_in_a_while_loop, x, w)
    u, v = np.array([1.0, -1.0, 0.5]), np.ones((2, 3))
    first = jvp_fn(u, v)
    expected = first.copy()
    x[:] = 7.0
    w *= -3.0
    first[:] = 100.0
    np.testing.assert_array_equal(jvp_fn(u, v), expected)
    _, jvp_fn = astgrad.linearize(lambda y: y, x)  # the tangent returned is the tangent given
    u = np.array([1.0, 2.0, 3.0])
    jvp_fn(u)[:] = 0.0
    np.testing.assert_array_equal(jvp_fn(np.array([1.0, 2.0, 3.0])), [1.0, 2.0, 3.0])


def test_a_global_changed_after_linearize_is_refused():
    global SCALE
    saved = SCALE
    _, jvp_fn = astgrad.linearize(scaled_by_global, X)
    u = np.array([0.5, 1.0, -1.0])
    expected = jvp_fn(u)
    np.testing.assert_allclose(expected, SCALE * (1 - np.tanh(W @ X) ** 2) * (W @ u), rtol=1e-12)
    try:
        SCALE[0] = 9.0
        with pytest.raises(RuntimeError, match="changed since linearize ran it"):
            jvp_fn(u)
        SCALE[0] = 1.5
        np.testing.assert_array_equal(jvp_fn(u), expected)
        SCALE = np.array([1.5, -0.5])  # rebound, equal values: not the array linearize read
        with pytest.raises(RuntimeError, match="changed since linearize ran it"):
            jvp_fn(u)
    finally:
        SCALE = saved


def test_a_tangent_of_another_shape_is_refused_not_broadcast():
    _, jvp_fn = astgrad.linearize(writes_items, X)
    for u in (np.ones(1), np.ones((3, 3)), 1.0):
        with pytest.raises(ValueError, match="tangent of x has shape"):
            jvp_fn(u)
    with pytest.raises(TypeError, match="one tangent per primal"):
        jvp_fn(X, X)


def test_has_aux_gives_the_aux_once_and_the_outputs_tangent():
    def with_aux(x):
        y = np.sin(x)
        return y * 3, {"y": y}

    out, jvp_fn, aux = astgrad.linearize(with_aux, X, has_aux=True)
    np.testing.assert_allclose(aux["y"], np.sin(X))
    u = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(jvp_fn(u), 3 * np.cos(X) * u, rtol=1e-12)


def test_writing_into_the_aux_changes_no_later_tangent():
    def squared_with_aux(x):
        y = np.sin(x)
        return y * y, y  # the tangent half reads y, which the aux is

    out, jvp_fn, aux = astgrad.linearize(squared_with_aux, X, has_aux=True)
    u = np.array([1.0, -2.0, 0.5])
    expected = jvp_fn(u)
    np.testing.assert_allclose(expected, 2 * np.sin(X) * np.cos(X) * u, rtol=1e-12)
    aux[:] = 0.0
    np.testing.assert_array_equal(jvp_fn(u), expected)

def test_a_generated_gradient_is_linearized_by_rerunning_its_jvp():
    def loss(x):
        return np.sum(np.sin(x) ** 2)

    out, jvp_fn = astgrad.linearize(astgrad.grad(loss), X)
    u = np.array([1.0, 0.0, -1.0])
    np.testing.assert_allclose(jvp_fn(u), 2 * np.cos(2 * X) * u, rtol=1e-10)


def check_program(source, tmp_path_factory):
    """jvp_fn of a random program (loops, branches, item writes, callees) is its generated jvp's tangent."""
    note(source)
    module = load(source, tmp_path_factory.mktemp("linearize_programs", numbered=True),
                  f"astgrad_linearize_{next(_counter)}")
    with np.errstate(all="ignore"):
        value = module.f(PX, PY)
    assume(bool(np.all(np.isfinite(value))))
    try:
        jvp = astgrad.jvp(module.f, (0, 1))
    except astgrad.TransformError as exc:
        assert "shares memory" in str(exc), f"{exc}\n\nprogram:\n{source}"
        return
    with np.errstate(all="ignore"):
        out, jvp_fn = astgrad.linearize(module.f, PX, PY)
        assert "def tangent_" in jvp_fn.source, source
        for u, v in ((np.array([0.6, -0.3, 0.74]), np.array([-0.2, 0.5, 0.3])), (np.ones(3), -np.ones(3))):
            value, tangent = jvp(PX, PY, (u, v))
            np.testing.assert_allclose(out, value, rtol=1e-13, atol=1e-13, err_msg=source)
            np.testing.assert_allclose(jvp_fn(u, v), tangent, rtol=1e-12, atol=1e-13, err_msg=source)


_counter = itertools.count()
_SETTINGS = dict(deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@settings(max_examples=10, derandomize=True, **_SETTINGS)
@given(source=programs())
def test_random_programs_linearized(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=300, **fresh_run(**_SETTINGS))
@given(source=programs())
def test_many_random_programs_linearized(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


def _corpus_direction(value, rng):
    if np.iscomplexobj(value):
        return rng.standard_normal(np.shape(value)) + 1j * rng.standard_normal(np.shape(value))
    return _direction(value, rng)


@pytest.mark.sweep(4)
@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_corpus_functions_linearized(case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    wrt = case.wrt if isinstance(case.wrt, tuple) else (case.wrt,)
    assert list(wrt) == list(range(len(args)))  # every corpus case differentiates all its arguments
    rng = np.random.default_rng(5)
    u = [_corpus_direction(a, rng) for a in args]
    _, expected = astgrad.jvp(case.f, case.wrt)(*args, tuple(u) if isinstance(case.wrt, tuple) else u[0])
    out, jvp_fn = astgrad.linearize(case.f, *args)
    assert "def tangent_" in jvp_fn.source
    for _ in range(2):  # the record read again from its start
        np.testing.assert_allclose(jvp_fn(*u), expected, rtol=1e-10, atol=1e-12)
