"""backend="numba": zero tests decided on Numba's types, and a velocity Verlet step called from another function.

A callee's backward function guards its rules with ``if is_zero(g):``;
compiled, the test is decided where ``g`` is typed an array (pruning.py),
and the gradient of a local its loop rebinds starts as zeros of it
(lower._callee_local_zeros).  Before, a Verlet step called with a literal
``dt`` was refused ("Cannot unify").  Where the proof fails (the seed a
number that may be 0.0, float32 meeting float64, int arrays, a view, a
subclass) the gradient is still numpy's, compiled or, refused, through
backend="auto".  Then a stencil's ``lap``, declared None, read as its array
by the loop that sums ``c``'s gradient; gradients that start as 0.0 where
the reverse sweep has put the value back (after a pop, a local's restore,
a loop or an ``if`` that only pops it), and only for names whose every
overwrite is saved; and a comparison of a name declared None.  Each
gradient compiles once: small sizes, the sweep over kinds and levels
marked slow.
"""

import warnings

import numpy as np
import pytest

import _numeric
from _compiled import agrees_with_numpy_and_differences
import astgrad

pytest.importorskip("numba")


def total_energy(pos, vel, mass):
    return 0.5 * np.sum(mass * vel ** 2) + 0.5 * np.sum(pos ** 2)


def verlet(vel0, pos0, mass, dt, steps):
    pos, vel = pos0.copy(), vel0.copy()
    e0 = total_energy(pos, vel, mass)
    acc = -pos / mass
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    return (total_energy(pos, vel, mass) - e0) ** 2 + np.sum(pos * vel)


def drift(vel0, pos0, mass):
    """The step dt a literal: the callee's pair is made for it."""
    return verlet(vel0, pos0, mass, 0.01, 5)


def drift_unread(vel0, pos0, mass):
    """The callee's seed the number 0.0 (its result times zero): its zero test is decided when it runs."""
    return 0.0 * verlet(vel0, pos0, mass, 0.1, 3) + np.sum(pos0 * vel0)


def _inputs(dtype=np.float64):
    vel = np.array([0.3, -0.2, 0.5, 0.1], dtype=dtype)
    pos = np.array([1.0, 0.4, -0.7, 0.2], dtype=dtype)
    return vel, pos, np.array([1.0, 2.0, 0.5, 1.5])


def _numpys(fn, args, optimize=None):
    return astgrad.grad(fn, wrt=(0, 1), optimize=optimize)(*args)


def test_a_verlet_step_called_with_a_literal_dt_compiles_and_gives_numpys_gradient():
    args = _inputs()
    got = astgrad.grad(drift, wrt=(0, 1), backend="numba")(*args)
    for position, a, b in zip((0, 1), got, _numpys(drift, args)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a, _numeric.numeric_grad(drift, args, position), rtol=1e-6, atol=1e-9)


def test_a_seed_that_is_the_number_zero_keeps_its_test_and_numpys_numbers():
    args = _inputs()
    got = astgrad.grad(drift_unread, wrt=(0, 1), backend="numba")(*args)
    for a, b in zip(got, _numpys(drift_unread, args)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(got[0], args[1])  # d sum(pos0 * vel0) / d vel0


class Tagged(np.ndarray):
    """A subclass of ndarray."""


def _kinds():
    vel, pos, mass = _inputs()
    wide = np.zeros(8)
    wide[::2] = pos
    return {
        "float32": _inputs(np.float32),
        "int masses": (vel, pos, np.array([1, 2, 1, 3])),
        "a view": (vel, wide[::2], mass),
        "a subclass": (vel.view(Tagged), pos, mass),
    }


@pytest.mark.slow
@pytest.mark.parametrize("optimize", [0, 1, 2])
@pytest.mark.parametrize("kind", sorted(_kinds()))
def test_where_the_kinds_differ_the_gradient_is_numpys_at_every_level(kind, optimize):
    args = _kinds()[kind]
    want = _numpys(drift, args, optimize)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a refusal falls back to numpy, with its warning
        got = astgrad.grad(drift, wrt=(0, 1), backend="auto", optimize=optimize)(*args)
    for a, b in zip(got, want):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-5 if kind == "float32" else 1e-12, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("optimize", [0, 1])
def test_the_literal_dt_at_the_other_levels(optimize):
    args = _inputs()
    got = astgrad.grad(drift, wrt=(0, 1), backend="numba", optimize=optimize)(*args)
    for a, b in zip(got, _numpys(drift, args, optimize)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def wave(c, u0, steps):
    """S4's step: ``lap`` is declared None before the loop, and read by the reverse loop's sum for ``c``."""
    u_prev = u0
    u = u0
    for _ in range(steps):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        u_next = 2 * u - u_prev + c * lap
        u_prev = u
        u = u_next
    return np.sum(u ** 2)


def test_a_value_declared_none_is_read_as_its_array_by_the_summing_loop():
    rng = np.random.default_rng(2)
    gradient = astgrad.grad(wave, wrt=(0, 1), backend="numba")
    for steps in (3, 0):
        args = (0.2, rng.standard_normal((4, 5)), steps)
        got = gradient(*args)
        for position, a, b in zip((0, 1), got, astgrad.grad(wave, wrt=(0, 1))(*args)):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
            np.testing.assert_allclose(a, _numeric.numeric_grad(wave, args, position), rtol=1e-6, atol=1e-8)
    assert "elementwise_sum('(_0 * _1)', (), du_next, saved_value(lap))" in gradient.source


# ------------------------------------------------------------------ a parameter the loop rebinds

def decay(x, w, n):  # x = x * 0.9: its gradient starts as 0.0 before the reverse loop, an array in it
    total = 0.0
    for _ in range(n):
        x = x * 0.9
        total = total + np.sum(w * x)
    return total


def shrinking(x, w, n):  # each trip drops an element: the gradient's start has the last value's shape
    total = 0.0
    for _ in range(n):
        x = x[1:] * 0.5
        total = total + np.sum(w[:len(x)] * x ** 2)
    return total


def spreading(x, m, n):  # the first trip broadcasts x into m's rank: one name of two ranks, which Numba refuses
    for _ in range(n):
        x = x * m
    return np.sum(np.sin(x))


def damped(c, k, n):  # numbers
    for _ in range(n):
        c = c - k * c * c
    return c


@pytest.mark.parametrize("fn, args", [
    (decay, (np.array([1.0, 2.0]), np.array([0.5, -1.0]), 3)),
    (decay, (np.array([1.0, 2.0]), np.array([0.5, -1.0]), 0)),  # no trip: zeros of the argument, as numpy's
    (shrinking, (np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.3, 1.0, -1.0, 2.0]), 2)),
    (damped, (0.3, 0.1, 4)),
])
def test_a_parameter_the_loop_rebinds_compiles_and_gives_numpys_gradient(fn, args):
    agrees_with_numpy_and_differences(fn, args)


def test_a_parameter_the_loop_gives_another_rank_is_refused_and_auto_gives_numpys():
    args = (np.array([0.4, -0.2]), np.array([[1.0, 0.5], [-0.3, 2.0], [0.1, 0.2]]), 2)
    with pytest.raises(astgrad.TransformError, match="Cannot unify"):
        astgrad.grad(spreading, wrt=(0, 1), backend="numba")(*args)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        got = astgrad.grad(spreading, wrt=(0, 1), backend="auto")(*args)
    for a, b in zip(got, astgrad.grad(spreading, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def fit(x, w):  # decay called twice: in the callee, x rebound in its loop, w read there and passed
    return decay(x, w, 3) * 2.0 + decay(x * 2.0, w, 2) + decay(w, x, 0)


def test_a_callees_parameters_read_or_rebound_in_its_loop_give_numpys_gradient():
    agrees_with_numpy_and_differences(fit, (np.array([1.0, 2.0]), np.array([0.5, -1.0])))


# ------------------------------------------------------------------ a value a branch overwrites

def clipped(x, y):  # one arm overwrites x: from there back, the gradient of the x it overwrote starts as 0.0
    if np.sum(x) > 0.5:
        x = np.maximum(np.where(y > 0, y, 0.5 * y), 0.1)
    else:
        y = y - np.exp(np.sin(x))
    return np.sum(y * y) + np.sum(x * y)


def relaxed(x, y, n):  # the overwrite inside a loop's branch, the value read again after
    total = 0.0
    for k in range(n):
        if k % 2 == 0:
            x = np.tanh(y) * 0.5
        total = total + np.sum(x * x * y)
    return total


def settled(x, y):  # a loop reads x, then x is overwritten: the reverse sweep puts it back from a local
    k = 0
    while np.sum(y * y) < 2.0 and k < 4:
        y = np.tanh(y) * 1.7 + (x * 0.7) * 0.1
        k = k + 1
    x = np.sqrt((y / (y * y + 1.0)) ** 2 + 1.0)
    return np.sum(x * x) + np.sum(x * y)


def settled_twice(x, y):  # between the loop that reads x and the sweep's 0.0, a reverse loop pops x back
    k = 0
    while np.sum(y * y) < 20.0 and k < 4:
        y = np.tanh(y) * 1.7 + (x * 0.7) * 0.1
        k = k + 1
    j = 0
    while np.sum(x * x) < 2.0 and j < 4:
        x = np.tanh(x) * 1.7 + np.clip(y, a_min=-0.83, a_max=0.87) * 0.1
        j = j + 1
    x = y * -1.5
    return np.sum(x * x) + np.sum(x * y)


def settled_in_an_arm(x, y):  # between the pop of y and its 0.0, an inner if that may pop y again
    if np.sum(np.tanh(x)) > -1.5:
        if np.sum(x * 0.25) > 0.25:
            x = np.dot(x, np.cos(x)) * 0.3 + 0.0 * np.cos(x)
            y = np.sqrt((np.sum(x) * y) ** 2 + 1.0)
        y = np.maximum(x + x, 0.1)
    else:
        x = x[0] * y - np.roll(y, 1)
    return np.sum(x * x) + np.sum(x * y)


@pytest.mark.parametrize("fn, args", [
    (settled_in_an_arm, (np.array([0.3, 0.2, 1.5]), np.array([0.1, 0.4, -0.3]))),  # both ifs' first arms
    (settled_in_an_arm, (np.array([0.3, -0.2, -0.5]), np.array([0.1, 0.4, -0.3]))),  # the inner if's other arm
    (settled_in_an_arm, (np.array([-3.0, -2.0, -1.5]), np.array([0.1, 0.4, -0.3]))),  # the outer if's other arm
    (settled, (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3]))),  # the loop runs
    (settled, (np.array([0.3, -0.2, 0.5]), np.array([1.1, 1.4, -1.3]))),  # it does not
    (settled_twice, (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3]))),  # both loops run
    (settled_twice, (np.array([1.3, -1.2, 0.5]), np.array([0.1, 0.4, -0.3]))),  # the second does not
    (settled_twice, (np.array([0.3, -0.2, 0.5]), np.array([3.1, 2.4, -3.3]))),  # the first does not
    (clipped, (np.array([0.3, 0.4, 0.5]), np.array([0.2, -0.4, 0.3]))),  # the arm that overwrites x
    (clipped, (np.array([0.1, -0.4, 0.2]), np.array([0.2, -0.4, 0.3]))),  # the other
    (relaxed, (np.array([0.3, -0.2]), np.array([0.7, 0.1]), 3)),
    (relaxed, (np.array([0.3, -0.2]), np.array([0.7, 0.1]), 0)),
])
def test_a_value_a_branch_overwrites_compiles_and_gives_numpys_gradient(fn, args):
    agrees_with_numpy_and_differences(fn, args)


def test_a_name_overwritten_without_a_save_is_never_taken_zeros_of():
    """The zeros written for a 0.0 after a restore read the name where the numpy backend did not: only names
    whose every overwrite is saved first (so that each restore gives the value the forward sweep had there)
    qualify. Here ``x`` is overwritten twice with one save, ``y`` and ``z`` in loops with none."""
    import textwrap

    from astgrad.backends.numba import lower
    from astgrad.transform import runtime
    from astgrad.transform.ir import compat

    fn_def = compat.parse(textwrap.dedent("""
        def df(x, y, dresult=1.0):
            _stack = []
            t = None
            for k in range(2):
                _stack.append(saved_value(t))
                t = y * 2.0
                y = y * 0.5 + x
            _saved1 = x
            x = np.exp(y)
            x = np.tanh(x)
            z = x * 2.0
            for k in range(2):
                z = z + 1.0
            w = z * 1.0
            _stack.append(only_shape(w))
            w = np.sin(w)
            x = _saved1
            dx = 0.0
        """)).body[0]
    namespace = {"saved_value": lower.saved_value, "only_shape": runtime.only_shape}
    kept = lower._saved_locals(fn_def, namespace)
    maintained = lower._every_overwrite_saved(fn_def, "_stack", namespace, kept)
    assert kept == {"_saved1": "x"}
    assert {"t", "w"} <= maintained
    assert not {"x", "y", "z"} & maintained


def clipped_in_nested_loops(x, y, n):  # the inner reverse loop compares the forward's last t > 0.1 before its pop
    for _ in range(n):
        for _ in range(2):
            x = np.maximum(np.exp(np.sin(x)), 0.1)
        y = y * np.tanh(x)
    return np.sum(x * y)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_a_comparison_of_a_value_a_loop_binds_reads_it_as_saved(n):
    """``maximum``'s gradient compares the value a nested loop binds (``t > 0.1``); Numba types that name "None
    or an array" where the reverse loop reads it before popping, and the comparison of None is the literal
    False, which does not unify with an array of booleans: the operand is read through ``saved_value``."""
    agrees_with_numpy_and_differences(clipped_in_nested_loops,
                                      (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3]), n))
