"""backend="numba" on scientific programs as people write them: compiled, or refused at the user's line.

Each program compiled is checked against the numpy backend's gradient (1e-10)
and central differences; the suite of benchmarks/scientific.py is imported
from there.  What Numba cannot call (scipy) or run (a call the gradient runs
as written, such as a draw from a generator) is refused at the line before
anything compiles, and backend="auto" runs numpy with one warning.  Module
numbers are compiled in, and rebinding one compiles again.  Small sizes:
each gradient compiles once.
"""

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import _numeric
import astgrad

pytest.importorskip("numba")
pytest.importorskip("scipy")


def _scientific():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "scientific.py"
    spec = importlib.util.spec_from_file_location("_scientific_benchmark_numba", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


scientific = _scientific()


def _check(fn, wrt, args):
    """The compiled gradient against the numpy backend's and central differences."""
    got = astgrad.grad(fn, wrt=wrt, backend="numba")(*args)
    numpy = astgrad.grad(fn, wrt=wrt)(*args)
    for position, a, b in zip(wrt, got, numpy):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(a, _numeric.numeric_grad(fn, args, position), rtol=1e-5, atol=1e-7)


def wave(c, u0):
    """A local rebound in the loop (prev = u): its gradient starts as 0.0 before the reverse loop."""
    prev = u0
    u = u0
    for _ in range(4):
        lap = np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1) + np.roll(u, -1, axis=1) - 4 * u
        nxt = 2 * u - prev + c * c * lap
        prev = u
        u = nxt
    return np.sum(u ** 2)


def test_a_local_rebound_in_a_loop_compiles_and_gives_numpys_gradient():
    _check(wave, (0, 1), (0.3, np.random.default_rng(0).standard_normal((5, 5))))


def burgers(u0, nu):
    """Upwind differences chosen by np.where, the interior written in place (numbers, masks and arrays saved)."""
    u = u0.copy()
    for _ in range(5):
        flux = np.where(u[1:-1] > 0, u[1:-1] * (u[1:-1] - u[:-2]), u[1:-1] * (u[2:] - u[1:-1])) / 0.1
        u[1:-1] = u[1:-1] - 0.01 * flux + nu * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


@pytest.mark.slow  # the suite's S14 is an upwind Burgers solver too (the benchmark programs above)
def test_an_upwind_burgers_solver_compiles_and_gives_numpys_gradient():
    _check(burgers, (0, 1), (np.sin(np.linspace(0.0, 3.0, 9)) - 0.3, 0.05))


def nbody(pos0, vel0, mass):
    """Pairwise forces in nested loops behind an if, acc[i] += ..., then velocity and position updated with +=."""
    pos = pos0.copy()
    vel = vel0.copy()
    for _ in range(2):
        acc = np.zeros_like(pos)
        for i in range(pos.shape[0]):
            for j in range(pos.shape[0]):
                if i != j:
                    d = pos[j] - pos[i]
                    acc[i] += mass[j] * d / (np.sum(d * d) + 0.01) ** 1.5
        vel += 0.01 * acc
        pos += 0.01 * vel
    return np.sum(pos ** 2) + 0.5 * np.sum(mass[:, None] * vel ** 2)


def test_an_n_body_step_with_branches_in_nested_loops_compiles_and_gives_numpys_gradient():
    rng = np.random.default_rng(1)
    _check(nbody, (0, 1), (rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.uniform(0.5, 2.0, 3)))


def option(spot, vol, z):
    return np.mean(np.maximum(spot * np.exp(-0.5 * vol ** 2 + vol * z) - 100.0, 0.0))


def test_a_monte_carlo_pricer_with_its_draws_passed_in_compiles():
    _check(option, (0, 1), (101.0, 0.2, np.random.default_rng(2).standard_normal(40)))


def drawing(spot, vol, n):
    rng = np.random.default_rng(0)
    z = rng.standard_normal(n)
    return np.mean(np.maximum(spot * np.exp(-0.5 * vol ** 2 + vol * z) - 100.0, 0.0))


def test_a_draw_inside_the_function_is_refused_at_its_line_and_auto_runs_numpy():
    with pytest.raises(astgrad.TransformError, match="rng.standard_normal") as info:
        astgrad.grad(drawing, wrt=(0, 1), backend="numba")
    assert "z = rng.standard_normal(n)" in str(info.value) and "pass it as an argument" in str(info.value)
    with pytest.warns(RuntimeWarning, match="backend='auto' runs the numpy backend"):
        auto = astgrad.grad(drawing, wrt=(0, 1), backend="auto")
    got = auto(101.0, 0.2, 40)
    for a, b in zip(got, astgrad.grad(drawing, wrt=(0, 1))(101.0, 0.2, 40)):
        assert a == b


@pytest.mark.parametrize("key, line, name", [("S5", "cho_factor(K)", "cho_factor"),
                                             ("S7", "norm.cdf(d1)", "cdf"),
                                             ("S8", "gammaln(counts + r)", "gammaln"),
                                             ("S9", "logsumexp(logits)", "logsumexp")])
def test_scipy_calls_are_refused_at_their_line_and_auto_gives_numpys_gradient(key, line, name):
    program = scientific.PROGRAMS[key]
    with pytest.raises(astgrad.TransformError, match=f"calls `[A-Za-z_.]*{name}`") as info:
        astgrad.grad(program.fn, wrt=program.wrt, backend="numba")
    assert line in str(info.value) and "Numba cannot call" in str(info.value)
    args = program.make_inputs("test")
    with pytest.warns(RuntimeWarning, match="Numba cannot call"):
        got = astgrad.grad(program.fn, wrt=program.wrt, backend="auto")(*args)
    for a, b in zip(got, astgrad.grad(program.fn, wrt=program.wrt)(*args)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.sweep(3)
@pytest.mark.parametrize("key", ["S1", "S3", "S4", "S10", "S11", "S12", "S13", "S14"])
def test_the_benchmark_programs_numba_compiles_give_numpys_gradient(key):
    program = scientific.PROGRAMS[key]
    _check(program.fn, program.wrt, program.make_inputs("test"))


def test_a_verlet_run_of_no_steps_gives_numpys_zeros():
    """The gradient of acc starts as zeros of acc there (not 0.0): the same numbers when the loop never runs."""
    args = list(scientific.PROGRAMS["S3"].make_inputs("test"))
    args[-1] = 0
    got = astgrad.grad(scientific.verlet, wrt=(0, 1), backend="numba")(*args)
    for a, b in zip(got, astgrad.grad(scientific.verlet, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


RATE = 0.5
STEPS = 3


def decay(x):
    total = 0.0
    for _ in range(STEPS):
        total = total + np.sum(np.sin(x) * RATE)
    return total


def test_module_numbers_are_compiled_in_and_rebinding_one_compiles_again():
    global RATE, STEPS
    x = np.array([0.1, 0.7])
    gradient = astgrad.grad(decay, backend="numba")
    try:
        np.testing.assert_allclose(gradient(x), 3 * 0.5 * np.cos(x), rtol=1e-14)
        RATE = 2.0
        np.testing.assert_allclose(gradient(x), 3 * 2.0 * np.cos(x), rtol=1e-14)
        STEPS = 1
        np.testing.assert_allclose(gradient(x), 2.0 * np.cos(x), rtol=1e-14)
        RATE = np.ones(2)  # no longer a number: transformed again, and refused as a global read at each call
        with pytest.raises(astgrad.TransformError, match="reads the global `RATE`"):
            gradient(x)
    finally:
        RATE, STEPS = 0.5, 3


def pendulum(theta0, length):
    theta, omega, t = theta0, 0.0, 0.0
    while t < 1.0:
        omega = omega - 0.01 * 9.81 / length * math.sin(theta)
        theta = theta + 0.01 * omega
        t = t + 0.01
    return theta


def test_a_while_loop_simulation_compiles():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(pendulum, (0, 1), (0.5, 1.2))


def local_products(x, W):
    n = W.shape[0]
    A = np.eye(n) + W
    v = np.zeros(n) + x
    return np.sum(A @ v) + v @ (A.T @ v)


def test_products_of_local_arrays_compile():
    """The ranks of np.eye(n) and np.zeros(n) (n = W.shape[0]) are known: the rule of @ folds to the branch of a
    matrix and a vector (Numba types every branch of the ladder it would otherwise keep), and vector @ vector is
    a number."""
    _check(local_products, (0, 1), (np.array([0.3, -0.2, 0.5]), np.arange(9.0).reshape(3, 3) / 10))


def decay_rhs(t, y, p):
    return np.array([-p[0] * y[0], p[1] * y[0] - p[2] * y[1]])


@pytest.mark.parametrize("key", [
    # RK4 compiles in 15-20 s of CPU (its callees' forward and backward inlined): behind --runslow
    pytest.param("S2", marks=pytest.mark.slow), "S6"])
def test_rk4_and_the_kalman_filter_compile_and_give_numpys_gradient(key):
    """RK4 taking its right-hand side as an argument (a list of states grown by appends, np.stack, np.array of
    numbers in the callee) and the Kalman filter (slogdet's tuple, solve, inv, np.eye): compiled, against the
    numpy backend and central differences, with no warning."""
    program = scientific.PROGRAMS[key]
    args = program.make_inputs("test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(program.fn, program.wrt, args)
    if key == "S2":  # another right-hand side: the function passed is not compiled in, the gradient is made again
        other = (args[0][:3],) + (decay_rhs,) + args[2:]
        _check(program.fn, program.wrt, other)
