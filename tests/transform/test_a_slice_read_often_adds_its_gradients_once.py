"""A slice read several times adds its summed gradients once (passes/scatter_sums.py).

``du = du + scatter(g1, shape(u), np.s_[1:-1])`` and a later one of ``g2``
at the same index become one add of ``g1 + g2`` where nothing between
rebinds or reads ``du`` (other adds into it aside), ``g1``'s names, the
shape or the index; and ``np.where(c, 0, x) + np.where(c, y, 0)`` (an
upwind step's two products) is ``np.where(c, y, x)``.  Where the proof
fails the code stays.  Every program against central differences at every
level: the upwind Burgers step (the rewrite), a slice read again after a
write into it (the gradient is rebound between: no merge), overlapping
slices of different lengths, arguments that are views of one array,
float32 meeting float64, an int array, and infinities and NaN in the
branches np.where does not take (their gradient stays 0 there, not NaN).
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient, numeric_grad

LEVELS = (0, 1, 2)
U = np.sin(np.linspace(0.0, 6.0, 9)) + 0.2


def burgers(nu, u0):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / 0.3
        u[1:-1] = u[1:-1] - 0.05 * advect + nu * 0.1 * (ahead - back)
    return np.sum(u ** 2)


def written_between(u0):
    u = u0.copy()
    for _ in range(2):
        a = u[1:-1] * u[2:]
        u[1:-1] = a
        b = u[1:-1] * u[:-2]  # u[1:-1] again, after the write
        u[1:-1] = u[1:-1] + 0.1 * b + 0.2 * a
    return np.sum(u ** 2)


def overlapping(u0):
    u = u0.copy()
    for _ in range(3):
        flux = u[1:] * u[:-1]  # overlaps u[1:-1], one longer
        u[1:-1] = u[1:-1] - 0.1 * (flux[1:] - flux[:-1]) + 0.05 * u[1:-1] * u[2:]
    return np.sum(u ** 2)


def two_arguments(x, y):
    return np.sum(np.where(y[1:-1] > 0.3, y[1:-1] * x[2:], y[1:-1] * x[:-2]) + y[1:-1] ** 2 * x[1:-1])


def with_ints(x, m):
    return np.sum(x[1:-1] * m[1:-1] + x[1:-1] * m[2:] + np.where(m[1:-1] > 1, x[1:-1], 2.0 * x[1:-1]))


def upwind_factors(u, a, b):
    return np.sum(np.where(u[1:-1] > 0, u[1:-1] * a, u[1:-1] * b) + u[1:-1])


@pytest.mark.parametrize("level", LEVELS)
def test_burgers_matches_central_differences(level):
    got_nu, got_u = astgrad.grad(burgers, wrt=(0, 1), optimize=level)(0.7, U.copy())
    np.testing.assert_allclose(got_u, gradient(lambda u: burgers(0.7, u), U.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_nu, gradient(lambda nu: burgers(nu, U.copy()), 0.7), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [written_between, overlapping], ids=lambda f: f.__name__)
def test_where_the_proof_fails_the_numbers_stay_right(f, level):
    got = astgrad.grad(f, optimize=level)(U.copy())
    np.testing.assert_allclose(got, gradient(f, U.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_arguments_that_are_views_of_one_array(level):
    x = np.cos(np.linspace(0.0, 4.0, 10)) + 0.4
    got = astgrad.grad(two_arguments, wrt=(0, 1), optimize=level)(x, x[:])  # y a view of x
    for value, index in zip(got, (0, 1)):
        np.testing.assert_allclose(value, numeric_grad(two_arguments, (x.copy(), x.copy()), index),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_float32_meets_float64(level):
    u = U.astype(np.float32)
    got_nu, got_u = astgrad.grad(burgers, wrt=(0, 1), optimize=level)(0.7, u)
    expected = gradient(lambda v: burgers(0.7, v.astype(np.float32)), u.astype(np.float64), eps=1e-3)
    np.testing.assert_allclose(got_u, expected, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("level", LEVELS)
def test_an_int_array_beside(level):
    x, m = U.copy(), np.array([0, 3, 1, 2, 5, 1, 0, 2, 4])
    got = astgrad.grad(with_ints, optimize=level)(x, m)
    np.testing.assert_allclose(got, numeric_grad(with_ints, (x, m), 0), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_infinities_and_nan_where_np_where_does_not_take_them(level):
    u = U.copy()
    taken = u[1:-1] > 0
    a = np.where(taken, np.linspace(1.0, 2.0, 7), np.inf)
    b = np.where(taken, np.nan, np.linspace(-1.0, -3.0, 7))
    with np.errstate(invalid="ignore"):
        du, da, db = astgrad.grad(upwind_factors, wrt=(0, 1, 2), optimize=level)(u, a, b)
    expected = np.zeros_like(u)
    expected[1:-1] = np.where(taken, a, 0.0) + np.where(taken, 0.0, b) + 1.0
    np.testing.assert_array_equal(du, expected)
    np.testing.assert_array_equal(da, np.where(taken, u[1:-1], 0.0))
    np.testing.assert_array_equal(db, np.where(taken, 0.0, u[1:-1]))


def _source(f, *args, wrt=(0,)):
    g = astgrad.grad(f, wrt=wrt)
    g(*args)
    return g.source


def _adds_into_the_middle(source):
    # np.s_[1:-1] is read in a loop from a constant of the module, s_1_to_m1 (passes/slice_constants.py)
    return sum("s_1_to_m1)" in line and "add_at(" in line for line in source.splitlines())


def test_burgers_adds_into_u_s_middle_once_a_step():
    source = _source(burgers, 0.7, U.copy(), wrt=(0, 1))
    assert _adds_into_the_middle(source) == 1
    assert any("np.where(" in line and "* back, " in line and "* ahead)" in line for line in source.splitlines())


def test_a_write_between_the_reads_keeps_two_adds():
    assert _adds_into_the_middle(_source(written_between, U.copy())) >= 2


# ---- one view for a slice read again (passes/slice_views.py)

def written_in_place_between(x):
    u = x.copy()
    a = u[1:-1] * u[1:-1]
    u[2:4] = u[2:4] * 3.0  # u's memory written between its reads of u[1:-1]
    b = u[1:-1] * u[1:-1]
    return np.sum(a * b)


def rebound_between(x):
    u = x * 1.0
    a = u[1:-1] * u[1:-1]
    u = u * u
    b = u[1:-1] * u[1:-1] + a
    return np.sum(a * b)


class Marked(np.ndarray):
    pass


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [written_in_place_between, rebound_between], ids=lambda f: f.__name__)
def test_a_write_or_rebinding_between_two_reads(f, level):
    got = astgrad.grad(f, optimize=level)(U.copy())
    np.testing.assert_allclose(got, gradient(f, U.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_a_subclass_of_ndarray(level):
    got_nu, got_u = astgrad.grad(burgers, wrt=(0, 1), optimize=level)(0.7, U.copy().view(Marked))
    np.testing.assert_allclose(got_u, gradient(lambda u: burgers(0.7, u), U.copy()), rtol=1e-6, atol=1e-7)


def test_burgers_makes_one_view_of_u_s_middle_a_step():
    source = _source(burgers, 0.7, U.copy(), wrt=(0, 1))
    forward = source.split("for _ in range(")[1].split("reversed(")[0]
    assert forward.count("u[1:-1]") == 1
