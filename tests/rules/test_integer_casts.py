"""A cast to an integer or boolean dtype held in a variable carries no gradient.

``x.astype(dt)`` with ``dt = int`` rounds: a piecewise constant function whose
derivative is 0 wherever it exists.  A dtype written as a literal is seen when
the source is transformed; one passed in as an argument is only known when the
code runs, so the rules ask the result's dtype.  The reference is finite
differences at points away from the integers (where rounding is locally
constant), and the taped Tensor must give the same numbers.
"""

import numpy as np
import pytest

import astgrad

from _numeric import gradient

X = np.array([1.3, 2.6, -0.4])
M = np.array([[1.3, 0.2], [0.7, 2.6]])


def astype_times(x, dt):
    return np.sum(x.astype(dt) * x)


def sum_times(x, dt):
    return np.sum(x, dtype=dt) * np.sum(x)


def method_sum_times(x, dt):
    return x.sum(dtype=dt) * x.sum()


def cumsum_times(x, dt):
    return np.sum(np.cumsum(x, dtype=dt) * x)


def prod_plus(x, dt):
    return np.prod(x, dtype=dt) * 1.0 + np.sum(x * x)


def mean_times(x, dt):
    return np.mean(x, dtype=dt) * np.sum(x)


def var_plus(x, dt):
    return np.var(x, dtype=dt) + np.std(x, dtype=dt) + np.sum(x)


def trace_times(m, dt):
    return np.trace(m, dtype=dt) * np.sum(m)


def asarray_times(x, dt):
    return np.sum(np.asarray(x, dtype=dt) * x)


def array_times(x, dt):
    return np.sum(np.array(x, dt) * x)


def concatenate_times(x, dt):
    return np.sum(np.concatenate([x, 2 * x], dtype=dt, casting="unsafe") * np.concatenate([x, x]))


def linspace_times(x, dt):
    return np.sum(np.linspace(x[0], x[1] * 3, 4, dtype=dt)) * x[2]


CASES = [astype_times, sum_times, method_sum_times, cumsum_times, prod_plus, mean_times, var_plus,
         trace_times, asarray_times, array_times, concatenate_times, linspace_times]
# the tape refuses np.array/np.asarray of a Tensor (numpy converts it) and np.concatenate's dtype
TAPED = [astype_times, sum_times, method_sum_times, cumsum_times, prod_plus, mean_times, trace_times]
DTYPES = [int, np.int64, np.int32, "i4", bool, np.uint8]


def _point(f, dt):
    point = M if f is trace_times else X
    # numpy leaves a negative float cast to an unsigned integer undefined
    return np.abs(point) if np.dtype(dt).kind == "u" else point


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_an_integer_dtype_in_a_variable_gives_the_derivative_of_the_rounded_code(f, dt):
    x = _point(f, dt)
    expected = gradient(lambda v: f(v, dt), x)
    np.testing.assert_allclose(astgrad.grad(f)(x.copy(), dt), expected, atol=1e-6)


@pytest.mark.parametrize("dt", DTYPES, ids=str)
@pytest.mark.parametrize("f", TAPED, ids=lambda f: f.__name__)
def test_the_tape_agrees(f, dt):
    x = _point(f, dt)
    t = astgrad.tensor(x.copy(), requires_grad=True)
    f(t, dt).backward()
    # the tape's x.sum(dtype=bool) counts, as torch's does: the reference runs the taped code itself
    expected = gradient(lambda v: f(astgrad.tensor(v), dt).item(), x)
    np.testing.assert_allclose(t.grad.numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("dt", [float, np.float64, "f8"], ids=str)
@pytest.mark.parametrize("f", [astype_times, sum_times, cumsum_times, asarray_times], ids=lambda f: f.__name__)
def test_a_float_dtype_in_a_variable_keeps_the_gradient(f, dt):
    expected = gradient(lambda v: f(v, dt), X)
    np.testing.assert_allclose(astgrad.grad(f)(X.copy(), dt), expected, rtol=1e-5, atol=1e-5)
    t = astgrad.tensor(X.copy(), requires_grad=True)
    f(t, dt).backward() if f is not asarray_times else None
    if f is not asarray_times:
        np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-5, atol=1e-5)


def test_the_tape_reads_a_string_given_to_astype_as_a_dtype():
    t = astgrad.tensor(X.copy(), requires_grad=True)
    cast = t.astype("i4")
    assert cast.numpy().dtype == np.int32
    np.testing.assert_array_equal(cast.numpy(), [1, 2, 0])
    assert not cast.requires_grad


def test_a_dtype_left_out_costs_no_run_time_test_in_the_generated_source():
    source = astgrad.grad(lambda x: np.sum(np.cumsum(x) * x)).source
    assert "integral" not in source
