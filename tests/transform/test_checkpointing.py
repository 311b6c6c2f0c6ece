"""Checkpointed calls and loops: the gradient of the code as written, whatever is recomputed instead of saved.

Each function comes twice, with and without ``astgrad.checkpoint`` /
``astgrad.checkpointed``; both gradients must agree to 1e-12 and with
central differences, at every optimisation level and for step counts that
do and do not divide into segments.
"""

import random

import numpy as np
import pytest

import astgrad
from _memory import peak as _peak
from astgrad import checkpointed
from _numeric import numeric_grad

LEVELS = (0, 1, 2)
X = np.array([0.3, -0.2, 0.5, 0.1])
P = np.array([1.1, 0.7, -0.4, 0.9])


def step(y, p):
    z = np.tanh(y * p)
    return y + 0.1 * z


def sin_step(y, p):
    z = np.sin(y) * p
    return y * 0.9 + 0.1 * z


decorated_step = astgrad.checkpoint(sin_step)  # as @astgrad.checkpoint would


def two_level(y, p):
    return step(step(y, p), p * 0.5)


def call_marked(x, p, n):
    for _ in range(n):
        x = astgrad.checkpoint(step)(x, p)
    return np.sum(x * x)


def call_plain(x, p, n):
    for _ in range(n):
        x = step(x, p)
    return np.sum(x * x)


def call_decorated(x, p, n):
    for _ in range(n):
        x = decorated_step(x, p)
    return np.sum(x * x)


def call_decorated_plain(x, p, n):
    for _ in range(n):
        x = sin_step(x, p)
    return np.sum(x * x)


def call_nested_marked(x, p, n):
    y = astgrad.checkpoint(two_level)(x, p)  # its own callees recomputed with it
    p = p * 2.0  # the argument rebound after the call: the adjoint must rerun with the old one
    return np.sum(y * p) + n


def call_nested_plain(x, p, n):
    y = two_level(x, p)
    p = p * 2.0
    return np.sum(y * p) + n


def same_argument_twice_marked(x, p, n):
    for _ in astgrad.checkpointed(range(n)):
        x = step(x, x) * p  # the callee's pair first made where the adjoint sweeps the body again
    return np.sum(x * x)


def same_argument_twice_plain(x, p, n):
    for _ in range(n):
        x = step(x, x) * p
    return np.sum(x * x)


def loop_marked(x, p, n):
    for _ in astgrad.checkpointed(range(n)):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x)


def loop_plain(x, p, n):
    for _ in range(n):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x)


def trajectory_marked(x, p, n):
    out = np.zeros((n, x.shape[0]))
    acc = 0.0
    for t in astgrad.checkpointed(range(n), every=3):
        x = np.sin(x) * p + 0.05 * t
        out[t] = x * x
        acc = acc + out[t - 1, 0] * x[1] if t > 0 else acc
    return np.sum(out) + acc


def trajectory_plain(x, p, n):
    out = np.zeros((n, x.shape[0]))
    acc = 0.0
    for t in range(n):
        x = np.sin(x) * p + 0.05 * t
        out[t] = x * x
        acc = acc + out[t - 1, 0] * x[1] if t > 0 else acc
    return np.sum(out) + acc


def in_place_marked(x, p, n):
    state = x * 1.0
    for t in astgrad.checkpointed(range(n)):
        state[t % 4] = np.cos(state[(t + 1) % 4]) * p[t % 4] + state[t % 4]
        state[:] = state * 0.95
    return np.sum(state * state)


def in_place_plain(x, p, n):
    state = x * 1.0
    for t in range(n):
        state[t % 4] = np.cos(state[(t + 1) % 4]) * p[t % 4] + state[t % 4]
        state[:] = state * 0.95
    return np.sum(state * state)


def branches_marked(x, p, n):
    total = 0.0
    for t in astgrad.checkpointed(range(n)):
        if np.sum(x) > 0.5:
            x = x * p
        else:
            x = step(x, p)
        total = total + np.sum(x) * t
    return total + np.sum(x)


def branches_plain(x, p, n):
    total = 0.0
    for t in range(n):
        if np.sum(x) > 0.5:
            x = x * p
        else:
            x = step(x, p)
        total = total + np.sum(x) * t
    return total + np.sum(x)


def inner_loops_marked(x, p, n):
    for _ in astgrad.checkpointed(range(n), every=2):
        k = 0
        while k < 2:
            x = np.sin(x + p)
            k = k + 1
        for j in range(3):
            if j == 2:
                break
            x = x * 0.9 + p * 0.01
    return np.sum(x)


def inner_loops_plain(x, p, n):
    for _ in range(n):
        k = 0
        while k < 2:
            x = np.sin(x + p)
            k = k + 1
        for j in range(3):
            if j == 2:
                break
            x = x * 0.9 + p * 0.01
    return np.sum(x)


def rebound_after_marked(x, p, n):
    q = p * 1.0
    for _ in astgrad.checkpointed(range(n)):
        x = np.sin(x) + q  # q rebound after the loop: each segment must run with the q of its time
    q = q * 3.0
    return np.sum(x * q)


def rebound_after_plain(x, p, n):
    q = p * 1.0
    for _ in range(n):
        x = np.sin(x) + q
    q = q * 3.0
    return np.sum(x * q)


def overwritten_marked(x, p, n):
    z = np.sin(x)
    w = z * p  # its adjoint reads the z of before the loop, which the loop overwrites
    for t in astgrad.checkpointed(range(n), every=2):
        z = np.cos(x) * 2.0
        x = x + z * 0.1 * t
    return np.sum(x) + np.sum(w * w)


def overwritten_plain(x, p, n):
    z = np.sin(x)
    w = z * p
    for t in range(n):
        z = np.cos(x) * 2.0
        x = x + z * 0.1 * t
    return np.sum(x) + np.sum(w * w)


def over_rows_marked(x, p, n):
    rows = np.outer(np.arange(1.0, n + 1.0), p)
    for row in astgrad.checkpointed(rows):
        x = np.cos(x) * row
    return np.sum(x)


def over_rows_plain(x, p, n):
    rows = np.outer(np.arange(1.0, n + 1.0), p)
    for row in rows:
        x = np.cos(x) * row
    return np.sum(x)


def enumerate_zip_marked(x, p, n):
    rows = np.outer(np.linspace(0.1, 1.0, n), p)
    for i, r in checkpointed(enumerate(rows), every=2):  # the marker imported by name
        x = np.sin(x) * r + i
    for a, b in astgrad.checkpointed(zip(rows, rows[::-1])):
        x = np.cos(x) * a + b
    return np.sum(x)


def enumerate_zip_plain(x, p, n):
    rows = np.outer(np.linspace(0.1, 1.0, n), p)
    for i, r in enumerate(rows):
        x = np.sin(x) * r + i
    for a, b in zip(rows, rows[::-1]):
        x = np.cos(x) * a + b
    return np.sum(x)


def augmented_marked(x, p, n):
    x = x * 1.0
    for _ in astgrad.checkpointed(range(n), every=2):
        x += np.sin(x) * p  # writes into x's memory in numpy: astgrad's normal form makes a new array
        x *= 1.1
        np.multiply(x, 0.9, out=x)
    return np.sum(x * x)


def augmented_plain(x, p, n):
    x = x * 1.0
    for _ in range(n):
        x += np.sin(x) * p
        x *= 1.1
        np.multiply(x, 0.9, out=x)
    return np.sum(x * x)


def dict_marked(x, p, n):
    d = {"v": x, "p": p}
    for _ in astgrad.checkpointed(range(n), every=3):
        d["v"] = np.sin(d["v"]) * d["p"]  # generated code writes the dict in place
    return np.sum(d["v"])


def dict_plain(x, p, n):
    d = {"v": x, "p": p}
    for _ in range(n):
        d["v"] = np.sin(d["v"]) * d["p"]
    return np.sum(d["v"])


def nested_marked(x, p, n):
    for _ in astgrad.checkpointed(range(n)):
        for _ in astgrad.checkpointed(range(3)):
            x = astgrad.checkpoint(step)(x, p)
    return np.sum(x * x)


def nested_plain(x, p, n):
    for _ in range(n):
        for _ in range(3):
            x = step(x, p)
    return np.sum(x * x)


PAIRS = [(call_marked, call_plain), (call_decorated, call_decorated_plain), (call_nested_marked, call_nested_plain),
         (loop_marked, loop_plain), (trajectory_marked, trajectory_plain), (in_place_marked, in_place_plain),
         (branches_marked, branches_plain), (inner_loops_marked, inner_loops_plain),
         (rebound_after_marked, rebound_after_plain), (overwritten_marked, overwritten_plain),
         (over_rows_marked, over_rows_plain), (enumerate_zip_marked, enumerate_zip_plain),
         (augmented_marked, augmented_plain), (dict_marked, dict_plain), (same_argument_twice_marked, same_argument_twice_plain),
         (nested_marked, nested_plain)]


@pytest.mark.sweep(4)
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [1, 2, 7, 9])
@pytest.mark.parametrize("marked, plain", PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_checkpointed_gradient_equals_the_saved_one_and_differences(marked, plain, n, level):
    got = astgrad.grad(marked, wrt=("x", "p"), optimize=level)(X.copy(), P.copy(), n)
    want = astgrad.grad(plain, wrt=("x", "p"), optimize=level)(X.copy(), P.copy(), n)
    for g, w, i in zip(got, want, (0, 1)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, numeric_grad(plain, (X.copy(), P.copy(), n), i), rtol=1e-5, atol=1e-7)
    assert float(marked(X.copy(), P.copy(), n)) == float(plain(X.copy(), P.copy(), n))  # the markers run as written


def test_no_steps():
    g = astgrad.grad(loop_marked, wrt=("x", "p"))(X, P, 0)
    np.testing.assert_allclose(g[0], 2 * X)
    np.testing.assert_allclose(g[1], 0.0)


@pytest.mark.parametrize("every", [1, 4, 100])
def test_every_sets_the_segment_length(every):
    def f(x, n):
        for _ in astgrad.checkpointed(range(n), every=every):
            x = np.sin(x) * 1.1
        return np.sum(x)

    def plain(x, n):
        for _ in range(n):
            x = np.sin(x) * 1.1
        return np.sum(x)

    np.testing.assert_allclose(astgrad.grad(f)(X, 10), astgrad.grad(plain)(X, 10), rtol=1e-12)


def test_value_and_grad_and_vjp_of_checkpointed_code():
    value, g = astgrad.value_and_grad(loop_marked, wrt=("x", "p"))(X, P, 5)
    assert value == loop_plain(X, P, 5)
    np.testing.assert_allclose(g[0], astgrad.grad(loop_plain)(X, P, 5), rtol=1e-12)


def test_checkpoint_in_a_callee_of_the_entry():
    def inner(x, p):
        for _ in astgrad.checkpointed(range(6)):
            x = astgrad.checkpoint(step)(x, p)
        return x

    def f(x, p):
        return np.sum(inner(x, p) ** 2)

    def plain(x, p):
        for _ in range(6):
            x = step(x, p)
        return np.sum(x ** 2)

    for level in LEVELS:
        got = astgrad.grad(f, wrt=("x", "p"), optimize=level)(X, P)
        want = astgrad.grad(plain, wrt=("x", "p"), optimize=level)(X, P)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)


# -- what would give other numbers when run again is refused --------------------

def noisy(y):
    return y + np.random.normal(size=y.shape)


def test_a_checkpointed_call_that_draws_random_numbers_is_refused():
    def f(x):
        return np.sum(astgrad.checkpoint(noisy)(x))

    with pytest.raises(astgrad.TransformError, match="draws random numbers"):
        astgrad.grad(f)(X)


def test_a_checkpointed_loop_that_draws_random_numbers_is_refused():
    def f(x, n):
        for _ in astgrad.checkpointed(range(n)):
            x = x + np.random.rand(4)
        return np.sum(x)

    with pytest.raises(astgrad.TransformError, match="draws random numbers"):
        astgrad.grad(f)(X, 3)


def test_a_checkpointed_loop_that_calls_python_random_is_refused():
    def f(x, n):
        for _ in astgrad.checkpointed(range(n)):
            x = x * random.random()
        return np.sum(x)

    with pytest.raises(astgrad.TransformError, match="random"):
        astgrad.grad(f)(X, 3)


def test_a_generator_passed_to_a_checkpointed_call_is_refused_when_it_runs():
    def draw(y, rng):
        return y * 2.0 + rng

    def f(x, rng):
        return np.sum(astgrad.checkpoint(draw)(x, rng))

    np.testing.assert_allclose(astgrad.grad(f)(X, 1.0), 2.0)
    with pytest.raises(TypeError, match="random generator"):
        astgrad.grad(f)(X, np.random.default_rng(0))


def test_a_checkpointed_loop_that_breaks_is_refused():
    def f(x, n):
        for t in astgrad.checkpointed(range(n)):
            if t == 3:
                break
            x = np.sin(x)
        return np.sum(x)

    with pytest.raises(astgrad.TransformError, match="cannot break"):
        astgrad.grad(f)(X, 5)


def test_a_checkpointed_loop_that_appends_is_refused():
    def f(x, n):
        seen = []
        for _ in astgrad.checkpointed(range(n)):
            x = np.sin(x)
            seen.append(x)
        return np.sum(seen[-1])

    with pytest.raises(astgrad.TransformError, match="appends to a list"):
        astgrad.grad(f)(X, 3)


@pytest.mark.parametrize("every", [0, -2, 1.5, True])
def test_every_must_be_a_positive_int(every):
    def f(x, n):
        for _ in astgrad.checkpointed(range(n), every=every):
            x = np.sin(x)
        return np.sum(x)

    with pytest.raises(ValueError, match="every="):
        astgrad.grad(f)(X, 3)
    with pytest.raises(ValueError, match="every="):
        f(X, 3)


def test_checkpoint_outside_a_gradient_is_the_function():
    assert astgrad.checkpoint(step)(1.0, 2.0) == step(1.0, 2.0)
    assert astgrad.checkpoint(decorated_step) is decorated_step
    assert list(astgrad.checkpointed(range(3))) == [0, 1, 2]
    with pytest.raises(TypeError, match="expected a function"):
        astgrad.checkpoint(3)


# -- memory: loose bounds only (benchmarks/checkpointing.py measures) ----------------


def test_checkpointed_loop_memory_grows_as_the_square_root_of_the_steps():
    x, p = np.linspace(-1.0, 1.0, 200), np.linspace(0.5, 1.5, 200)
    marked, plain = astgrad.grad(loop_marked, wrt=("x", "p")), astgrad.grad(loop_plain, wrt=("x", "p"))
    small, large = 400, 6400  # 16 times the steps: 4 times the memory for sqrt(n), 16 for n
    grown = _peak(lambda: marked(x, p, large)) / _peak(lambda: marked(x, p, small))
    saved = _peak(lambda: plain(x, p, large)) / _peak(lambda: plain(x, p, small))
    assert grown < 8, grown
    assert saved > 10, saved
    assert _peak(lambda: marked(x, p, large)) < _peak(lambda: plain(x, p, large)) / 5


def test_a_second_derivative_through_checkpointed_code_raises():
    def f(x, n):
        for _ in astgrad.checkpointed(range(n)):
            x = astgrad.checkpoint(step)(x, x)
        return np.sum(x * x)

    with pytest.raises(astgrad.TransformError):
        astgrad.hessian(f)(X, 3)


def test_forward_mode_runs_the_marked_code_as_written():
    tangent = astgrad.jvp(nested_marked, wrt=(0, 1))(X, P, 3, (X, P))
    want = astgrad.jvp(nested_plain, wrt=(0, 1))(X, P, 3, (X, P))
    np.testing.assert_allclose(tangent, want, rtol=1e-12)


def test_a_name_the_loop_binds_on_its_first_step_only():
    def f(x, n):
        for t in astgrad.checkpointed(range(n)):
            if t == 0:
                first = np.cos(x)
            x = np.sin(x) + first  # first: bound in step 0, read in every step (its adjoint does not read it)
        return np.sum(x)

    def plain(x, n):
        for t in range(n):
            if t == 0:
                first = np.cos(x)
            x = np.sin(x) + first
        return np.sum(x)

    for level in LEVELS:
        np.testing.assert_allclose(astgrad.grad(f, optimize=level)(X, 5), astgrad.grad(plain, optimize=level)(X, 5),
                                   rtol=1e-12)


def test_a_checkpointed_loop_the_adjoint_does_not_need():
    def f(x, n):
        k = 0
        for _ in astgrad.checkpointed(range(n)):
            k = k + 1
        y = x
        for _ in range(n):
            y = np.sin(y) * 2.0
        return np.sum(y) * k

    def plain(x, n):
        k = 0
        for _ in range(n):
            k = k + 1
        y = x
        for _ in range(n):
            y = np.sin(y) * 2.0
        return np.sum(y) * k

    for level in LEVELS:
        np.testing.assert_allclose(astgrad.grad(f, optimize=level)(X, 4), astgrad.grad(plain, optimize=level)(X, 4),
                                   rtol=1e-12)


def test_a_generator_in_a_checkpointed_loop_state_is_refused_when_it_runs():
    def f(x, rng, n):
        for _ in astgrad.checkpointed(range(n)):
            x = x + rng.normal(size=4)
        return np.sum(x)

    with pytest.raises(TypeError, match="random generator"):
        astgrad.grad(f)(X, np.random.default_rng(0), 3)


def test_the_gradient_of_a_checkpointed_function_is_its_gradient():
    marked = astgrad.checkpoint(step)
    for got, want in zip(astgrad.grad(lambda x, p: np.sum(marked(x, p)), wrt=(0, 1))(X, P),
                         astgrad.grad(lambda x, p: np.sum(step(x, p)), wrt=(0, 1))(X, P)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(astgrad.grad(marked, wrt=0)(X[0], P[0]), astgrad.grad(step, wrt=0)(X[0], P[0]),
                               rtol=1e-12)


class Noisy:
    def __init__(self):
        self.rng = np.random.default_rng(0)

    def jitter(self, y):
        return y + self.rng.normal(size=y.shape)

    def step(self, y):
        return np.sin(self.jitter(y))


NOISY = Noisy()


def noisy_method(y):
    return NOISY.step(y) * 2.0


def test_a_generator_reached_through_an_object_is_refused():
    def f(x):
        return np.sum(astgrad.checkpoint(noisy_method)(x))

    def g(x, n):
        for _ in astgrad.checkpointed(range(n)):
            x = noisy_method(x)
        return np.sum(x)

    with pytest.raises(astgrad.TransformError, match="random"):
        astgrad.grad(f)(X)
    with pytest.raises(astgrad.TransformError, match="random"):
        astgrad.grad(g)(X, 3)


def test_library_functions_named_like_draws_are_not_refused():
    special = pytest.importorskip("scipy.special")

    def gamma_step(y, p):  # np.power and special.gamma: attributes of modules, named as draws are
        return np.power(np.abs(y) + 1.0, p) + special.gamma(y + 2.0)

    def f(x, p):
        return np.sum(astgrad.checkpoint(gamma_step)(x, p))

    def plain(x, p):
        return np.sum(gamma_step(x, p))

    for got, want in zip(astgrad.grad(f, wrt=(0, 1))(X, P), astgrad.grad(plain, wrt=(0, 1))(X, P)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _loop_writing_the_callers_dict(x, state):
    for t in astgrad.checkpointed(range(4)):
        x = np.tanh(x) * 1.1
        state["last"] = x.sum()
    return np.sum(x)


def _step_writing_the_callers_dict(x, state):
    state["m"] = 0.5 * x.sum()
    return np.tanh(x)


def _checkpointed_call_writing_the_callers_dict(x, state):
    y = astgrad.checkpoint(_step_writing_the_callers_dict)(x, state)
    return np.sum(y)


@pytest.mark.parametrize("fn, where", [(_loop_writing_the_callers_dict, 'state["last"] = x.sum()'),
                                       (_checkpointed_call_writing_the_callers_dict, "astgrad.checkpoint(")])
def test_a_write_into_the_callers_dict_under_checkpointing_is_refused(fn, where):
    """Run again in the reverse sweep, the write would happen twice, the second time reading what the first wrote
    (a caller's dict after the call that plain Python would not leave): refused at the line, the dict untouched."""
    state: dict = {}
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)(np.linspace(0.1, 1.0, 3), state)
    refusals = ("writes into a dict or object its caller keeps", "may write state its call does not return")
    assert any(r in str(info.value) for r in refusals) and where in str(info.value)
    assert state == {}
