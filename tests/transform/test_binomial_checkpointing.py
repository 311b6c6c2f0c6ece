"""``checkpointed(iterable, snapshots=s)``: Griewank's binomial schedule, the gradient of the code as written.

The schedule is checked on its own against a dynamic program over every
split (the fewest steps run again for n steps and s states), and the
gradients of loops marked with it against the same loops unmarked, to
1e-12, for every n in 0..60 and s in 1..6, and against central differences.
"""

import functools
import inspect
import math

import numpy as np
import pytest

import astgrad
from _memory import peak as _peak
from astgrad.transform.runtime.checkpoints import Binomial
from _numeric import numeric_grad

X = np.array([0.3, -0.2, 0.5, 0.1])
P = np.array([1.1, 0.7, -0.4, 0.9])


@functools.lru_cache(maxsize=None)
def fewest_runs(length, states):
    """The fewest steps run without saving to reverse ``length`` steps from a kept state, with ``states``
    kept at once (that one among them), each step reversed right after it runs with saves: every split."""
    if length == 1:
        return 0
    if states == 1:
        return length * (length - 1) // 2
    return min(m + fewest_runs(length - m, states - 1) + fewest_runs(m, states) for m in range(1, length))


def replay(n, s):
    """Run the schedule on positions: (steps run without saves, most states kept at once); checks it as it goes."""
    schedule = Binomial(range(n), s)
    kept, at, ran = [], 0, 0
    for run in schedule:  # the forward sweep: the state kept before each run
        kept.append(at)
        assert list(run) == list(range(at, at + len(run)))
        at += len(run)
        ran += len(run)
    assert at == n
    most, reversed_steps = len(kept), []
    for drops, runs, step in schedule.backward():
        del kept[len(kept) - drops:]
        at = kept[-1]
        for run, keep in runs:
            assert list(run) == list(range(at, at + len(run)))
            at += len(run)
            ran += len(run)
            if keep:
                kept.append(at)
                most = max(most, len(kept))
        assert step == at
        reversed_steps.append(step)
    assert reversed_steps == list(range(n - 1, -1, -1))
    return ran, most, schedule.chain[-1] if n else 0


def most_runs_of_a_step(n, s):
    """How many times the step run most often runs: forward sweep, runs without saves, the run with saves."""
    schedule, count = Binomial(range(n), s), [0] * n
    for run in schedule:
        for step in run:
            count[step] += 1
    for _, runs, step in schedule.backward():
        for run, _ in runs:
            for i in run:
                count[i] += 1
        count[step] += 1
    return max(count)


@pytest.mark.parametrize("s", range(1, 7))
def test_the_schedule_reverses_every_step_with_s_states_and_the_fewest_runs(s):
    for n in range(1, 61):
        t = next(t for t in range(n + 1) if math.comb(s + t, s) >= n)
        assert most_runs_of_a_step(n, s) <= t + 2
        ran, most, last = replay(n, s)
        assert most <= s
        # the forward sweep runs all n steps; the recursion's first descent stops at `last` and would run on to
        # n - 1 only: the rest of the forward sweep is the one step more, nothing else
        assert ran - n == fewest_runs(n, s) - last, (n, s)


@pytest.mark.parametrize("n, s", [(20000, 8), (5000, 2), (100000, 20), (3003, 8), (3004, 8)])
def test_long_loops_take_griewanks_closed_form(n, s):
    """With t the least repetitions for which C(s + t, s) >= n, the fewest runs are t n - C(s + 1 + t - 1, s + 1)."""
    t = next(t for t in range(n + 1) if math.comb(s + t, s) >= n)
    ran, most, last = replay(n, s)
    assert most <= s
    assert ran - n == t * n - math.comb(s + t, s + 1) - last


def loop(x, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x)


def loop_plain(x, p, n, s):
    for _ in range(n):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x)


def dict_state(x, p, n, s):
    d = {"v": x, "p": p}
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        d["v"] = np.sin(d["v"]) * d["p"]  # written in place by generated code: a state taken back twice is copied
    return np.sum(d["v"])


def dict_state_plain(x, p, n, s):
    d = {"v": x, "p": p}
    for _ in range(n):
        d["v"] = np.sin(d["v"]) * d["p"]
    return np.sum(d["v"])


def branches(x, p, n, s):
    total = 0.0
    for t in astgrad.checkpointed(range(n), snapshots=s):
        if np.sum(x) > 0.5:
            x = x * p
        else:
            x = astgrad.checkpoint(np.sin)(x) + p * 0.1
        total = total + np.sum(x) * t
    return total + np.sum(x)


def branches_plain(x, p, n, s):
    total = 0.0
    for t in range(n):
        if np.sum(x) > 0.5:
            x = x * p
        else:
            x = np.sin(x) + p * 0.1
        total = total + np.sum(x) * t
    return total + np.sum(x)


def trajectory(x, p, n, s):
    out = np.zeros((n, x.shape[0]))
    z = np.sin(x)
    w = z * p  # its adjoint reads the z of before the loop, which the loop overwrites
    for t in astgrad.checkpointed(range(n), snapshots=s):
        z = np.cos(x) * p + 0.05 * t
        x = x * 0.9 + z * 0.1
        out[t] = x * x
    return np.sum(out) + np.sum(w * w)


def trajectory_plain(x, p, n, s):
    out = np.zeros((n, x.shape[0]))
    z = np.sin(x)
    w = z * p
    for t in range(n):
        z = np.cos(x) * p + 0.05 * t
        x = x * 0.9 + z * 0.1
        out[t] = x * x
    return np.sum(out) + np.sum(w * w)


def over_rows(x, p, n, s):
    rows = np.outer(np.arange(1.0, n + 1.0) / n, p)
    for i, row in astgrad.checkpointed(enumerate(rows), snapshots=s):
        x = np.cos(x) * row + 0.01 * i
    return np.sum(x)


def over_rows_plain(x, p, n, s):
    rows = np.outer(np.arange(1.0, n + 1.0) / n, p)
    for i, row in enumerate(rows):
        x = np.cos(x) * row + 0.01 * i
    return np.sum(x)


def nested(x, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        for _ in astgrad.checkpointed(range(3), snapshots=2):
            x = x + 0.1 * np.tanh(x * p)
    return np.sum(x * x)


def nested_plain(x, p, n, s):
    for _ in range(n):
        for _ in range(3):
            x = x + 0.1 * np.tanh(x * p)
    return np.sum(x * x)


PAIRS = [(loop, loop_plain), (dict_state, dict_state_plain), (branches, branches_plain),
         (trajectory, trajectory_plain), (over_rows, over_rows_plain), (nested, nested_plain)]


def _same(got, want):
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)


@pytest.mark.sweep(3)
@pytest.mark.parametrize("level", (0, 1, 2))
@pytest.mark.parametrize("marked, plain", PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_the_gradient_is_the_saved_one_for_every_length_and_number_of_states(marked, plain, level):
    got = astgrad.grad(marked, wrt=("x", "p"), optimize=level)
    want = astgrad.grad(plain, wrt=("x", "p"), optimize=level)
    for n in range(61) if level == 2 else (0, 1, 2, 5, 13, 60):
        for s in range(1, 7):
            _same(got(X.copy(), P.copy(), n, s), want(X.copy(), P.copy(), n, s))


@pytest.mark.parametrize("marked, plain", PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_the_gradient_matches_central_differences(marked, plain):
    got = astgrad.grad(marked, wrt=("x", "p"))(X.copy(), P.copy(), 9, 3)
    for g, i in zip(got, (0, 1)):
        np.testing.assert_allclose(g, numeric_grad(plain, (X.copy(), P.copy(), 9, 3), i), rtol=1e-5, atol=1e-7)
    assert float(marked(X.copy(), P.copy(), 9, 3)) == float(plain(X.copy(), P.copy(), 9, 3))


@pytest.mark.parametrize("snapshots", [0, -1, 1.5, True, "2"])
def test_snapshots_must_be_a_positive_int(snapshots):
    with pytest.raises(ValueError, match="snapshots="):
        astgrad.grad(loop, wrt=("x", "p"))(X, P, 5, snapshots)
    with pytest.raises(ValueError, match="snapshots="):
        loop(X, P, 5, snapshots)


def test_every_and_snapshots_together_are_refused():
    def f(x, n):
        for _ in astgrad.checkpointed(range(n), every=2, snapshots=3):
            x = np.sin(x)
        return np.sum(x)

    with pytest.raises(ValueError, match="pass one of them"):
        astgrad.grad(f)(X, 4)
    with pytest.raises(ValueError, match="pass one of them"):
        f(X, 4)


def test_what_segments_refuse_binomial_refuses():
    def breaks(x, n):
        for t in astgrad.checkpointed(range(n), snapshots=2):
            if t == 3:
                break
            x = np.sin(x)
        return np.sum(x)

    def draws(x, n):
        for _ in astgrad.checkpointed(range(n), snapshots=2):
            x = x + np.random.rand(4)
        return np.sum(x)

    def appends(x, n):
        kept = []
        for _ in astgrad.checkpointed(range(n), snapshots=2):
            x = np.sin(x)
            kept.append(x)
        return np.sum(x) + np.sum(kept[0])

    with pytest.raises(astgrad.TransformError, match="cannot break"):
        astgrad.grad(breaks)(X, 5)
    with pytest.raises(astgrad.TransformError, match="draws random numbers"):
        astgrad.grad(draws)(X, 5)
    with pytest.raises(astgrad.TransformError, match="appends to a list"):
        astgrad.grad(appends)(X, 5)


def test_an_unknown_keyword_is_refused_at_the_users_line():
    def f(x, n):
        for _ in astgrad.checkpointed(range(n), snaps=2):
            x = np.sin(x)
        return np.sum(x)

    with pytest.raises(astgrad.TransformError, match=r"takes the iterable, every= and snapshots=") as caught:
        astgrad.grad(f)(X, 4)
    assert "test_binomial_checkpointing.py" in str(caught.value)


def test_memory_does_not_grow_with_the_steps():
    """s states and one step's saves, whatever n: 16 times the steps, about the same peak (loose bound)."""
    x, p = np.linspace(-1.0, 1.0, 200), np.linspace(0.5, 1.5, 200)
    marked, plain = astgrad.grad(loop, wrt=("x", "p")), astgrad.grad(loop_plain, wrt=("x", "p"))
    marked(x, p, 6400, 4), plain(x, p, 2, 4)  # transformed, and the first long run's one-off costs paid
    grown = _peak(lambda: marked(x, p, 6400, 4)) / _peak(lambda: marked(x, p, 400, 4))
    assert grown < 3, grown  # square-root segments: 4
    assert _peak(lambda: marked(x, p, 1600, 4)) < _peak(lambda: plain(x, p, 1600, 4)) / 20


# -- derivatives of derivatives -------------------------------------------------------

def inner_loop(x, p):
    for _ in astgrad.checkpointed(range(4), snapshots=2):
        x = x + 0.1 * np.tanh(x * p)
    return x


def callee_marked(x, p):
    return np.sum(inner_loop(x, p) ** 2)


def sin_times(y, p):
    return np.sin(y) * p


def call_marked(x, p):
    y = x
    for _ in range(3):
        y = astgrad.checkpoint(sin_times)(y, p)
    return np.sum(y * y)


def sqrt_marked(x, p):
    for _ in astgrad.checkpointed(range(4)):
        x = x + 0.1 * np.tanh(x * p)
    return np.sum(x * x)


def binomial_marked(x, p):
    for _ in astgrad.checkpointed(range(4), snapshots=2):
        x = x + 0.1 * np.tanh(x * p)
    return np.sum(x * x)


def _line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


HIGHER = {"hessian": lambda f: astgrad.hessian(f)(X, P), "hvp": lambda f: astgrad.hvp(f)(X, P, X)}


@pytest.mark.parametrize("how", ["hessian", "hvp"])
@pytest.mark.parametrize("fn, where, text", [(sqrt_marked, sqrt_marked, "checkpointed("),
                                             (binomial_marked, binomial_marked, "checkpointed("),
                                             (call_marked, call_marked, "checkpoint("),
                                             (callee_marked, inner_loop, "checkpointed(")])
def test_a_second_derivative_through_checkpointed_code_names_the_marker(how, fn, where, text):
    with pytest.raises(astgrad.TransformError, match="through checkpointed code is not supported") as caught:
        HIGHER[how](fn)
    assert caught.value.filename == __file__
    assert caught.value.lineno == _line_of(where, text)


def test_grad_of_grad_through_checkpointed_code_names_the_marker():
    with pytest.raises(astgrad.TransformError, match="through checkpointed code") as caught:
        astgrad.grad(astgrad.grad(binomial_marked))(X, P)
    assert caught.value.lineno == _line_of(binomial_marked, "checkpointed(")


@pytest.mark.parametrize("fn", [sqrt_marked, binomial_marked, call_marked, callee_marked])
def test_forward_mode_through_checkpointed_code_is_the_directional_derivative(fn):
    value, tangent = astgrad.jvp(fn, wrt=(0, 1))(X, P, (P, X))
    assert value == fn(X, P)
    eps = 1e-6
    numeric = (fn(X + eps * P, P + eps * X) - fn(X - eps * P, P - eps * X)) / (2 * eps)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6)
    g = astgrad.grad(fn, wrt=(0, 1))(X, P)
    np.testing.assert_allclose(tangent, g[0] @ P + g[1] @ X, rtol=1e-12)
