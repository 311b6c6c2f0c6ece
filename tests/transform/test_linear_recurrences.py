"""A reverse loop whose steps are affine in one adjoint is solved with cumulative products, exactly.

The adjoint of ``x = f(x)`` repeated is ``dx = dx * f'(x_t)`` each step:
transform/passes/recurrences.py writes it as ``linear_recurrence`` over the saved
values, beside the loop itself, chosen at run time.  Every gradient here is
checked against central differences and against the loop (optimize=0): the
vectorised form must give the loop's number, and where the recognition
must not apply (a break, two coupled adjoints, a division, arrays at run
time, integers, values that are not plain numbers) the loop runs.
"""

import math

import numpy as np
import pytest

import astgrad
from _numeric import gradient
from astgrad.transform import runtime


def _check(fn, *args, solved=True, rtol=1e-9):
    """The gradient in x (first argument) against the loop at optimize=0 and central differences."""
    g = astgrad.grad(fn)
    if solved is not None:
        assert ("linear_recurrence(" in g.source) is solved, g.source
    got = g(*args)
    loop = astgrad.grad(fn, optimize=0)(*args)
    np.testing.assert_allclose(got, loop, rtol=rtol, atol=1e-12)
    numeric = gradient(lambda x: fn(x, *args[1:]), args[0])
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)
    return got


# ---------------------------------------------------------------- recognised

def scalar_loop(x, n):
    total = 0.0
    for _ in range(n):
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
        total = total + x
    return total


def self_times_cos(x):
    for i in range(7):
        x = x * np.cos(x)  # the step reads a value the previous step saved (carried)
    return x


def while_loop(x):
    while x < 10.0:
        x = x * 1.5 + np.sin(x)
    return x


def shift_and_scale(x, n, c):
    for _ in range(n):
        x = np.tanh(x) * c - x
    return x * 3.0


@pytest.mark.parametrize("x0,n", [(0.5, 1000), (0.5, 1), (-1.3, 40), (2.0, 25)])
def test_the_scalar_loop_is_solved_and_agrees_with_the_loop(x0, n):
    _check(scalar_loop, x0, n)


def test_a_loop_of_no_steps_returns_the_seed_unchanged():
    assert astgrad.grad(scalar_loop)(0.5, 0) == 0.0
    assert astgrad.grad(shift_and_scale)(0.5, 0, 2.0) == 3.0


def test_a_value_carried_from_the_previous_step():
    g = astgrad.grad(self_times_cos)
    assert "shifted(" in g.source
    _check(self_times_cos, 0.4)
    _check(self_times_cos, -1.1)


def test_a_while_loop():
    _check(while_loop, 0.3)
    _check(while_loop, 12.0)  # no trip: the seed itself


def two_updates(x, y, n):
    for _ in range(n):
        x = np.sin(np.cos(x) * x)  # the step pops x twice and reads a temporary of the step before
        x = np.sin(x) * y
    return x * y


def test_a_name_popped_twice_a_step_reads_each_pop():
    g = astgrad.grad(two_updates)
    assert "x_2 = saved[0]" in g.source and "x_3 = saved[1]" in g.source and "shifted(" in g.source
    for n in (0, 1, 6):
        _check(two_updates, 0.4, 0.7, n)


def test_an_invariant_read_by_every_step():
    _check(shift_and_scale, 0.2, 30, 0.7)
    g = astgrad.grad(shift_and_scale, wrt=(0, 2))
    dx, dc = g(0.2, 30, 0.7)
    np.testing.assert_allclose(dx, gradient(lambda x: shift_and_scale(x, 30, 0.7), 0.2), rtol=1e-6)
    np.testing.assert_allclose(dc, gradient(lambda c: shift_and_scale(0.2, 30, c), 0.7), rtol=1e-6)


def test_an_integer_start_is_a_number_too():
    assert astgrad.grad(scalar_loop)(1, 20) == pytest.approx(astgrad.grad(scalar_loop, optimize=0)(1.0, 20))


def test_complex_values():
    def rotate(z, n):
        for _ in range(n):
            z = z * np.exp(z * 0.1)
        return z
    g = astgrad.grad(rotate, optimize=1)
    assert "linear_recurrence(" in g.source
    z = 0.3 + 0.2j
    np.testing.assert_allclose(astgrad.vjp(rotate)(z, 9, 1.0 + 0j),
                               astgrad.vjp(rotate, optimize=0)(z, 9, 1.0 + 0j), rtol=1e-12)


def test_an_array_adjoint_scaled_by_numbers():
    def doubling(x):
        y = x * 2
        while np.linalg.norm(y) < 1000:
            y = y * 2
        return y
    x, seed = np.array([0.3, -1.2, 0.01]), np.array([0.1, 1.0, 1e-4])
    g = astgrad.vjp(doubling)
    assert "linear_recurrence(" in g.source
    np.testing.assert_array_equal(g(x, seed), astgrad.vjp(doubling, optimize=0)(x, seed))  # powers of 2: exact

    def halving_sum(x, n):
        s = 0.0
        for _ in range(n):
            x = x * 0.5 + 1.0
            s = s + np.sum(x)
        return s
    _check(halving_sum, np.array([0.3, -1.2]), 6, solved=False)  # ds, dt2, dx: more than one adjoint


scale = 0.25


def test_names_of_the_users_are_not_taken():
    def hygiene(x, n):
        saved = 1.5
        linear_recurrence = 0.25  # a helper's name
        for _ in range(n):
            x = np.sin(x) * saved + x * linear_recurrence
        return x
    _check(hygiene, 0.4, 12, solved=None)
    source = astgrad.grad(hygiene).source
    assert "saved_2 = pop_numbers(" in source and "linear_recurrence_2(" in source


def test_a_global_the_steps_read_keeps_the_loop():
    def reads_global(x, n):
        for _ in range(n):
            x = np.sin(x) * scale + x  # a global may be unbound when the loop runs no step
        return x
    _check(reads_global, 0.4, 12, solved=False)


def test_level_zero_keeps_the_loop():
    assert "linear_recurrence(" not in astgrad.grad(scalar_loop, optimize=0).source
    assert "linear_recurrence(" in astgrad.grad(scalar_loop, optimize=1).source


# ------------------------------------------------- left alone at transform time

def with_break(x, n):
    for _ in range(n):
        x = np.sin(x) * 1.1
        if x > 0.8:
            break
    return x


def break_mid_step(x, n):
    for _ in range(n):
        x = np.sin(x) * 1.1
        if x > 0.8:
            break
        x = x * 1.2  # the last step stops before this: its reverse step has a branch
    return x


def coupled(x, n):
    y = 0.5
    for _ in range(n):
        x, y = np.sin(y) * x, np.cos(x) + y * 0.5  # two adjoints, one on the other
    return x + y


def divides(x, n):
    for _ in range(n):
        x = x / (1.0 + x * x)  # the adjoint divides: a Python float raises where an array gives inf
    return x


def with_math(x, n):
    for _ in range(n):
        x = math.sin(x) * 0.9  # math.sin is not a ufunc
    return x


def squares(x, n):
    for _ in range(n):
        x = x * x * 0.5  # the step's derivative reads x: still linear in dx
    return x


def reads_step_index(x, n):
    for t in range(n):
        x = np.sin(x) * t * 0.3 + x
    return x


@pytest.mark.parametrize("fn,args", [(break_mid_step, (0.3, 20)), (coupled, (0.3, 6)), (divides, (0.7, 9)),
                                     (with_math, (0.7, 9)), (reads_step_index, (0.2, 8))])
def test_loops_outside_the_pattern_keep_the_loop(fn, args):
    _check(fn, *args, solved=False)


def test_a_step_whose_derivative_reads_the_value_is_still_linear_in_the_adjoint():
    _check(squares, 0.9, 12)


@pytest.mark.parametrize("n", [0, 3, 20])
def test_a_break_at_the_end_of_a_step_counts_the_steps_taken(n):
    _check(with_break, 0.3, n)  # 0.3 breaks at the fourth step


# ------------------------------------------------------ left alone at run time

def test_arrays_at_run_time_run_the_loop():
    def elementwise(x, n):
        for _ in range(n):
            x = np.sin(x) * 0.9 + 0.1 * x * x
        return np.sum(x)
    g = astgrad.grad(elementwise)
    x = np.array([0.3, -0.5, 1.2])
    np.testing.assert_allclose(g(x, 15), astgrad.grad(elementwise, optimize=0)(x, 15), rtol=1e-12)
    np.testing.assert_allclose(g(x, 15), gradient(lambda v: elementwise(v, 15), x), rtol=1e-6)


def test_pop_numbers_takes_only_plain_numbers():
    stack = [np.array([1.0]), 0.5, np.float64(0.25)]
    assert [list(v) for v in runtime.pop_numbers(stack, range(2), 'n', 0.0)] == [[0.5, 0.25]]
    assert len(stack) == 1

    class Loud(float):
        def __mul__(self, other):
            return 7.0
    for bad in ([0.5, Loud(0.25)], [0.5, np.array([0.25])], [1, 2], [True, 0.5], [0.5, None], [2 ** 80, 0.5]):
        stack = list(bad)
        assert runtime.pop_numbers(stack, range(2), 'n', 0.0) is None
        assert stack == bad or stack is not bad and len(stack) == 2
    stack = [0.5, 0.25]
    assert runtime.pop_numbers(stack, range(2), 'n', 0.0, 1.0, np.ones(1)) is None  # a read value that is an array
    assert runtime.pop_numbers(stack, range(2), 'n', 0.0, 1.0, Loud(2.0)) is None
    assert runtime.pop_numbers(stack, range(2), 'n', np.zeros(2, dtype=int)) is None  # the adjoint: floats
    assert runtime.pop_numbers(stack, range(2), 'n', [0.0]) is None
    assert stack == [0.5, 0.25]
    assert runtime.pop_numbers(None, range(4), '', np.zeros(2)) == ()  # steps that pop nothing
    assert stack == [0.5, 0.25]


def test_pop_numbers_splits_several_pops_a_step_in_pop_order():
    stack = ["below", 1.0, 10.0, 2.0, 20.0, 3.0, 30.0]  # each step pushed (first, second)
    second, first = runtime.pop_numbers(stack, range(3), 'nn', 0.0)  # a step pops second, then first
    assert list(first) == [1.0, 2.0, 3.0] and list(second) == [10.0, 20.0, 30.0]
    assert stack == ["below"]
    stack = [None, 1.0, 2.0, 10.0, 3.0, 20.0]  # the first step pushed the None its carried name held
    current, carried = runtime.pop_numbers(stack, range(3), 'nc', np.zeros(3))  # popped second, and carried
    assert list(carried) == [0.0, 2.0, 3.0] and list(current) == [1.0, 10.0, 20.0] and stack == []
    stack = [np.ones(2), 1.0, np.ones(2), 2.0]  # arrays nothing reads need not be numbers
    assert [None if v is None else list(v) for v in runtime.pop_numbers(stack, range(2), 'n-', 0.0)] == \
        [[1.0, 2.0], None]
    assert stack == []


# ------------------------------------------------------------- the solver itself

def _loop(d, a, b):
    for t in range(len(a) - 1, -1, -1):
        d = a[t] * d + b[t]
    return d


@pytest.mark.parametrize("seed", range(5))
def test_linear_recurrence_is_the_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    a, b, d = rng.standard_normal(n), rng.standard_normal(n), float(rng.standard_normal())
    np.testing.assert_allclose(runtime.linear_recurrence(d, a, b, n), _loop(d, a, b), rtol=1e-10)
    np.testing.assert_allclose(runtime.linear_recurrence(d, a, 0.5, n), _loop(d, a, [0.5] * n), rtol=1e-10)
    assert runtime.linear_recurrence(d, a, b, 0) == d


def test_linear_recurrence_runs_the_loop_where_the_products_overflow():
    a = np.array([1e300, 1e300, -1.0])  # prefix products overflow; the loop's partial sums do not
    assert _loop(0.0, a, a) == 1e300
    assert runtime.linear_recurrence(0.0, a, a, 3) == 1e300
    a = np.array([0.5, np.nan, 2.0])
    assert math.isnan(runtime.linear_recurrence(1.0, a, a, 3))


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_linear_recurrence_with_integer_constants_never_wraps():
    assert runtime.linear_recurrence(1.0, 2, None, 2000) == _loop(1.0, [2] * 2000, [0] * 2000) == math.inf
    assert runtime.linear_recurrence(1.0, 2, None, 70) == 2.0 ** 70
    assert runtime.linear_recurrence(1.0, 3, 1, 70) == pytest.approx(_loop(1.0, [3] * 70, [1] * 70), rel=1e-12)
    np.testing.assert_array_equal(runtime.linear_recurrence(np.ones(2), 2, None, 9), [512.0, 512.0])


# --------------------------------------- a constant factor after the loop, folded

def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def test_the_factor_after_a_solved_loop_is_one_multiplication():
    """W5: ``dx = dy * 2`` after the loop of ``dy = dy * 2`` is the recurrence's factor, not a second
    multiplication of the array; the loop as written (an integer seed) still runs it after the loop."""
    x, seed = np.array([0.3, -1.2, 2.0]), np.array([0.1, 1.0, 1e-4])
    v = astgrad.vjp(doubling)
    got = v(x, seed)
    assert "linear_recurrence(dy, 2, None, len(range(_trips)), 2)" in v.source, v.source
    assert "pop_numbers" not in v.source and "for _ in" not in v.source  # a seed of floats: no test, no loop
    general = v.sources["any"]
    assert "saved = pop_numbers(None, range(_trips), '', dy)" in general and "dx = dy * 2" in general
    trips = 0
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y, trips = y * 2, trips + 1
    np.testing.assert_array_equal(got, seed * 2.0 ** (trips + 1))  # powers of two: exact
    np.testing.assert_array_equal(v(x, np.array([1, 2, 3])), np.array([1, 2, 3]) * 2 ** (trips + 1))
    assert "pop_numbers" in v.source  # an integer seed: the adjoint that tests it, and runs the loop as written
    np.testing.assert_array_equal(v(x, seed), seed * 2.0 ** (trips + 1))
    assert "pop_numbers" not in v.source
    np.testing.assert_array_equal(v(x, seed + 1j), seed * 2.0 ** (trips + 1))  # complex: tested, solved; x's real part
    loop = astgrad.vjp(doubling, optimize=0)
    np.testing.assert_array_equal(got, loop(x, seed))


def three_times_before(x, n):
    x = x * 3.0
    for _ in range(n):
        x = x * 1.5
    return x


def read_again_before(x, n):
    y = x * 3.0
    for _ in range(n):
        y = y * 1.5
    return y * x


def test_the_factor_is_folded_only_where_nothing_else_reads_the_adjoint():
    _check(three_times_before, 0.7, 20)
    assert ", 3.0)" in astgrad.grad(three_times_before).source
    _check(read_again_before, 0.7, 20)
    assert ", 3.0)" not in astgrad.grad(read_again_before).source


@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_linear_recurrence_times_a_factor_is_the_two_multiplications():
    """The two numbers are multiplied first only where their product stays a normal float: a product that
    overflows or underflows where ``(d * scale) * then`` does not gives the two multiplications' number."""
    for d, a, steps, then in [(1e-20, 2, 1000, 1e10), (1e30, 0.5, 1020, 1e-20), (3.0, 1.5, 40, 3),
                              (np.array([1e-20, 2.0]), 2, 1000, 1e10), (2.0, 2, 2000, 0.5), (0.0, 2, 2000, 0.5),
                              (1.0, 0, 5, 7.0), (1.0, 2.0, 0, 3)]:
        with np.errstate(over="ignore"):
            want = runtime.linear_recurrence(d, a, None, steps) * then
        got = runtime.linear_recurrence(d, a, None, steps, then)
        np.testing.assert_allclose(got, want, rtol=1e-15)
        assert np.all(np.isfinite(got) == np.isfinite(want))
    a, b = np.array([0.5, 1.5, -2.0]), np.array([1.0, -1.0, 0.25])
    np.testing.assert_allclose(runtime.linear_recurrence(0.7, a, b, 3, 3), _loop(0.7, a, b) * 3, rtol=1e-14)
