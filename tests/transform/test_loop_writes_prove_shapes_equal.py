"""A loop's ``x op= v`` on a numpy array proves shapes equal: its reverse sweep un-broadcasts nothing.

``vel += 0.5 * dt * acc`` keeps ``vel``'s shape or numpy raises, so on
every trip the reverse sweep reverses, ``acc``'s shape broadcasts into
``vel``'s; with ``pos += dt * vel`` and ``acc = -pos / mass`` the three
are one shape, and the adjoints of the step need no ``unbroadcast``
(passes/trip_shapes.py).  Where the proof must fail (an operand that
broadcasts, a float32 velocity, integer positions, a number rebound to an
array, a loop that breaks, a view, one array passed twice, a subclass) the
gradient is still the derivative, or numpy's error: each against central
differences at every level.  What the Verlet step generates is pinned by
tests/golden/specialised_leapfrog.py.
"""

import re

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(32)


def verlet(vel0, pos0, mass, dt, steps):
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    return np.sum(pos * vel) + np.sum(np.sin(pos))


def drift(x0, a, steps):
    x = x0.copy()
    for _ in range(steps):
        x += a * 0.5  # a broadcasts into x: a's gradient is summed back
        x += np.sin(x)
    return np.sum(x ** 2)


def rebound(x0, v):
    x = x0 + 0.0  # a number: the first += rebinds it to an array
    for _ in range(3):
        x += v * x
    return np.sum(x ** 2)


def breaking(x0, a, n):
    x = x0.copy()
    s = 0.0
    for i in range(5):
        s = s + np.sum(x * a)
        if i == n:
            break  # before the write: a trip that proves nothing (a may be wider than x)
        x += a * 0.5
    return s + np.sum(x ** 2)


def two_sources(a, b, c):
    if c > 0:
        x = a.copy()
    else:
        x = b.copy()  # x holds a's kind or b's: its array_kind is read on every trip
    for _ in range(3):
        x += np.sin(x) * 0.5
    return np.sum(x ** 2)


def rows(vel0, pos0, mass):
    return verlet(vel0, pos0, mass, 0.1, 4)


def _check(fn, args, wrt, level, rtol=1e-5, atol=1e-6):
    g = astgrad.grad(fn, wrt=wrt, optimize=level)
    got = g(*args)
    got = got if len(wrt) > 1 else (got,)
    for value, i in zip(got, wrt):
        expected = numeric_grad(fn, args, i)
        assert np.shape(value) == np.shape(expected)
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol)
    return g


def _reverse_loop(source):
    """The body of the reverse loop of ``source``'s first function."""
    lines = source.split("\n")
    start = next(i for i, line in enumerate(lines) if "for _ in reversed(" in line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    body = []
    for line in lines[start + 1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return "\n".join(body)


@pytest.mark.parametrize("level", LEVELS)
def test_verlet_gradient_is_the_derivative(level):
    args = (RNG.normal(size=5), RNG.normal(size=5), RNG.uniform(0.5, 2.0, 5), 0.05, 6)
    g = _check(verlet, args, (0, 1, 2), level)
    loop = _reverse_loop(g.source.split("\n\n\n")[0])
    if level >= 1:  # mass's gradient is summed back (it may broadcast); vel's and pos's are not
        assert loop.count("unbroadcast(") == 1 and "mass" in re.search(r".*unbroadcast\(.*", loop).group()
        # the kinds the three += keep are read once, from the parameters vel and pos copy
        forward = g.source[:g.source.index("for _ in reversed(")]
        assert forward.count("array_kind(") == 2 and "array_kind(vel0)" in forward and "array_kind(pos0)" in forward
        assert "array_kind(" not in forward[forward.index("for _ in range("):]


@pytest.mark.parametrize("level", LEVELS)
def test_an_operand_that_broadcasts_into_the_state_is_summed_back(level):
    for a in (RNG.normal(size=1), RNG.normal(size=(2, 1)), RNG.normal(size=3)):
        _check(drift, (RNG.normal(size=(2, 3)), a, 3), (0, 1), level)


@pytest.mark.parametrize("level", LEVELS)
def test_masses_of_one_column_broadcast(level):
    vel, pos, mass = RNG.normal(size=(4, 3)), RNG.normal(size=(4, 3)), RNG.uniform(1, 2, size=(4, 1))
    _check(verlet, (vel, pos, mass, 0.05, 3), (0, 1, 2), level)


@pytest.mark.parametrize("level", LEVELS)
def test_a_state_that_would_grow_raises_numpys_error(level):
    vel, pos, mass = RNG.normal(size=(4, 1)), RNG.normal(size=(4, 3)), RNG.uniform(1, 2, size=3)
    with pytest.raises(ValueError) as expected:
        verlet(vel, pos, mass, 0.05, 3)
    with pytest.raises(ValueError) as got:
        astgrad.grad(verlet, wrt=(0, 1), optimize=level)(vel, pos, mass, 0.05, 3)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("level", LEVELS)
def test_no_trip_proves_nothing(level):
    vel, pos, mass = RNG.normal(size=(4, 1)), RNG.normal(size=(4, 3)), RNG.uniform(1, 2, size=3)
    _check(verlet, (vel, pos, mass, 0.05, 0), (0, 1, 2), level)


@pytest.mark.parametrize("level", LEVELS)
def test_a_float32_velocity_is_cast_back_on_every_trip(level):
    vel = RNG.normal(size=5).astype(np.float32)
    args = (vel, RNG.normal(size=5), RNG.uniform(0.5, 2.0, 5), 0.05, 6)
    g = astgrad.grad(verlet, wrt=(0, 1), optimize=level)
    got = g(*args)
    for value, i in zip(got, (0, 1)):
        expected = numeric_grad(verlet, args, i, eps=1e-3)
        np.testing.assert_allclose(value, expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("level", LEVELS)
def test_integer_positions_raise_numpys_error(level):
    args = (RNG.normal(size=5), np.arange(5), RNG.uniform(0.5, 2.0, 5), 0.05, 2)
    with pytest.raises(TypeError) as expected:
        verlet(*args)
    with pytest.raises(TypeError) as got:
        astgrad.grad(verlet, wrt=(0,), optimize=level)(*args)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("level", LEVELS)
def test_a_name_of_two_parameters_reads_its_kind_on_every_trip(level):
    a, b = RNG.normal(size=4).astype(np.float32), RNG.normal(size=1)  # two dtypes, two shapes
    for c in (1.0, -1.0):
        g = astgrad.grad(two_sources, wrt=(0, 1), optimize=level)
        got = g(a, b, c)
        for value, i in zip(got, (0, 1)):
            np.testing.assert_allclose(value, numeric_grad(two_sources, (a, b, c), i, eps=1e-3), rtol=2e-3, atol=2e-3)
        loop = g.source[g.source.index("for _ in range("):g.source.index("for _ in reversed(")]
        assert "array_kind(x)" in loop
        assert got[0].dtype == np.float32


@pytest.mark.parametrize("level", LEVELS)
def test_a_number_rebound_to_an_array(level):
    _check(rebound, (0.7, RNG.normal(size=3)), (0, 1), level)


@pytest.mark.parametrize("level", LEVELS)
def test_a_loop_that_breaks(level):
    _check(breaking, (RNG.normal(size=3), RNG.normal(size=(2, 3)), 0), (0, 1), level)
    for n in (2, 7):
        _check(breaking, (RNG.normal(size=(2, 3)), RNG.normal(size=3), n), (0, 1), level)


@pytest.mark.parametrize("level", LEVELS)
def test_views_one_array_twice_and_a_subclass(level):
    state = RNG.normal(size=(6, 4))
    mass = RNG.uniform(0.5, 2.0, 4)
    _check(rows, (state[::2], state[1::2], mass), (0, 1, 2), level)  # views of one array
    same = RNG.normal(size=4)
    g = astgrad.grad(rows, wrt=(0, 1), optimize=level)
    got = g(same, same, mass)
    for value, i in zip(got, (0, 1)):
        np.testing.assert_allclose(value, numeric_grad(rows, (same, same.copy(), mass), i), rtol=1e-5, atol=1e-6)

    class Sub(np.ndarray):
        pass

    args = (RNG.normal(size=4).view(Sub), RNG.normal(size=4).view(Sub), mass)
    got = astgrad.grad(rows, wrt=(0, 1), optimize=level)(*args)
    plain = astgrad.grad(rows, wrt=(0, 1), optimize=level)(*(np.asarray(a) for a in args))
    for value, expected in zip(got, plain):
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)


def log_ratio(spot, vol):
    d1 = np.log(spot) / vol
    return np.sum(d1 * d1)


def test_a_function_without_loop_writes_asks_no_ranks():
    g = astgrad.grad(log_ratio, wrt=(0, 1))
    g(RNG.uniform(1, 2, size=3), 0.3)
    assert "1-d" not in g.source.splitlines()[0]  # the proofs ask nothing where no loop writes x op= v


def states(vel0, pos0, mass):
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass
    for _ in range(4):
        vel += 0.05 * acc
        pos += 0.1 * vel
        acc = -pos / mass
        vel += 0.05 * acc
    return pos * vel + np.sin(pos)


@pytest.mark.parametrize("level", LEVELS)
def test_vjps_and_pullbacks_of_the_steps(level):
    vel, pos, mass = RNG.normal(size=(3, 2)), RNG.normal(size=(3, 2)), RNG.uniform(1, 2, size=(3, 1))
    seeds = [RNG.normal(size=(3, 2)) for _ in range(2)]
    _, pullback = astgrad.vjp(states, vel, pos, mass, optimize=level)
    for seed in seeds:
        def weighted(v, p, m):
            return np.sum(states(v, p, m) * seed)
        expected = [numeric_grad(weighted, (vel, pos, mass), i) for i in range(3)]
        got = astgrad.vjp(states, wrt=(0, 1, 2), optimize=level)(vel, pos, mass, seed)
        for value, want in zip(got, expected):
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
        for value, want in zip(pullback(seed), expected):
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)
