"""A mean's or sum's seed stays a number through elementwise functions (sin, tanh, powers, maximum).

``np.mean(f(x))`` seeds the adjoint with ``dresult / x.size`` spread over
x's shape.  Through a function applied element by element, ``g * f'(x)``
has x's shape whether ``g`` is that array of one value or the value itself,
so the seed stays a number and no array of it is made.  It must not stay a
number into an operand of another shape: the gradient of an exponent or a
bound broadcast over the elements is the sum over them.  Every gradient is
checked against central differences and against the taped engine.
"""

import numpy as np
import pytest

import _numeric
import astgrad


def squared_error(x, y):
    return np.mean((x - y) ** 2)


def mean_sin_squared(x):
    return np.mean(np.sin(x) ** 2)


def mean_tanh(x, b):
    return np.mean(np.tanh(x * 2.0 + b))


def sum_exp_cos(x):
    return np.sum(np.exp(np.cos(x)))


def broadcast_exponent(x, p):
    return np.mean(x ** p)


def broadcast_bound(x, c):
    return np.mean(np.maximum(x, c))


def first_power(x):
    return np.mean(x ** 1.0)


def floored(x):
    return np.mean(np.floor(x) + x * x)


def powered_scalar_seed_feeds_a_matrix_product(w, x):
    return np.mean(np.square(x @ w))


def scaled_plus_row(x, y):
    return np.mean(2.0 * x + y)


def sin_plus_row(x, y):
    return np.sum(np.sin(x) + y)


def first_power_of_a_broadcast(x, y):
    return np.mean((x + y) ** 1.0)


def cubed_tanh_of_a_broadcast(x, y):
    return np.mean(np.tanh(x * y) ** 3)


CASES = [
    (scaled_plus_row, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (sin_plus_row, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (sin_plus_row, lambda r: (r.standard_normal(4), r.standard_normal((3, 4))), (0, 1)),
    (first_power_of_a_broadcast, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (first_power_of_a_broadcast, lambda r: (r.standard_normal((2, 1, 4)), r.standard_normal((3, 1))), (0, 1)),
    (cubed_tanh_of_a_broadcast, lambda r: (r.standard_normal((3, 1)), r.standard_normal(4)), (0, 1)),
    (squared_error, lambda r: (r.standard_normal(4), r.standard_normal((3, 4))), (0, 1)),
    (squared_error, lambda r: (r.standard_normal((3, 4)), r.standard_normal((3, 4))), (0, 1)),
    (squared_error, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (mean_sin_squared, lambda r: (r.standard_normal((2, 5)),), (0,)),
    (mean_tanh, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (sum_exp_cos, lambda r: (r.standard_normal(6),), (0,)),
    (broadcast_exponent, lambda r: (r.uniform(0.5, 2.0, (3, 4)), 1.7), (0, 1)),
    (broadcast_exponent, lambda r: (r.uniform(0.5, 2.0, (3, 4)), r.uniform(1.0, 2.0, 4)), (0, 1)),
    (broadcast_bound, lambda r: (r.standard_normal((3, 4)), r.standard_normal(4)), (0, 1)),
    (broadcast_bound, lambda r: (r.standard_normal((3, 4)), 0.1), (0, 1)),
    (first_power, lambda r: (r.standard_normal((2, 3)),), (0,)),
    (floored, lambda r: (r.uniform(0.1, 0.9, (2, 3)) + np.arange(3.0),), (0,)),
    (powered_scalar_seed_feeds_a_matrix_product, lambda r: (r.standard_normal((4, 3)), r.standard_normal((5, 4))),
     (0, 1)),
]


@pytest.mark.parametrize("optimize", [0, 1, 2])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_gradients_match_finite_differences_and_the_tape(case, optimize):
    f, make, wrt = CASES[case]
    args = make(np.random.default_rng(case))
    gradient = astgrad.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0], optimize=optimize)
    _numeric.assert_grad(gradient, f, *args, wrt=wrt, rtol=1e-6, atol=1e-8)
    leaves = [astgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in args]
    f(*leaves).backward()
    got = gradient(*args)
    for value, leaf in zip(got if len(wrt) > 1 else (got,), leaves):
        np.testing.assert_allclose(value, leaf.grad.numpy(), rtol=1e-12, atol=1e-14)


def test_the_seed_stays_a_number_through_a_power_and_a_difference():
    source = astgrad.grad(squared_error, wrt=(0, 1)).source
    assert "filled(" not in source  # no array of the one value is made
    assert "= dresult / size(t2)\n" in source  # the number itself, multiplied into x - y


def test_the_seed_is_spread_before_an_exponent_broadcast_over_the_elements():
    x = np.array([[0.5, 1.5], [2.0, 1.2]])
    got = astgrad.grad(broadcast_exponent, wrt=1)(x, 1.7)
    expected = np.mean(np.log(x) * x ** 1.7)  # the sum over the four elements, each a quarter
    assert got == pytest.approx(expected, rel=1e-12)
