"""grad(grad(f)) of functions with loops, branches and callees: forward mode over the generated gradient.

The gradient of such ``f`` saves values on a stack (or its functions pass
them to each other on one), which reverse mode does not differentiate again.
``grad`` of that gradient runs its generated jvp instead, one per element of
the ``wrt`` arguments (the stack's tangents pushed and popped beside its
values, as hessian does).  Each value is checked against a closed form and
against central differences of the generated first derivative.  The
adversarial cases: a trip count and a branch that depend on x (so the path
differs between nearby points), a callee called twice, a callee with a loop
of its own, recursion, item assignment in a loop, and an array argument where
the forward route must not mistake a sum of columns for a derivative.
"""

import math

import numpy as np
import pytest

import astgrad
from _numeric import gradient

grad = astgrad.grad


def power(x):
    y = 1.0
    for i in range(5):
        y = y * x
    return y


def taylor_sin(x):
    """sin(x) by its Taylor series, each term from the one before (a recursion in the loop)."""
    term = x
    s = x
    for k in range(1, 12):
        term = -term * x * x / ((2 * k) * (2 * k + 1))
        s = s + term
    return s


def grows_past_ten(x):
    """The trip count depends on x: it changes between x = 1.5 and x = 2."""
    y = x
    while y < 10.0:
        y = y * x + 1.0
    return y


def branch(x):
    if x > 0:
        return x ** 3
    return np.sin(x) * 2.0


def looped_branch(x):
    s = 0.0
    for i in range(4):
        if s < 1.0:
            s = s + x * x
        else:
            s = s * x
    return s


def cube(x):
    return x ** 3


def twice(x):
    return cube(x) + cube(2.0 * x)


def looping_callee(x):
    s = 0.0
    for i in range(3):
        s = s + np.sin(x) * x
    return s


def calls_a_loop(x):
    return looping_callee(x) * x


def power_by_recursion(x, n):
    if n == 0:
        return 1.0
    return x * power_by_recursion(x, n - 1)


def scaled_items(x):
    v = np.array([1.0, 2.0, 3.0])
    for i in range(3):
        v[i] = v[i] * x ** (i + 1)
    return np.sum(v)


CASES = [
    # f, x, second derivative in closed form
    (power, 1.5, lambda x: 20 * x ** 3),
    (power, -0.7, lambda x: 20 * x ** 3),
    (taylor_sin, 0.9, lambda x: -math.sin(x)),
    (grows_past_ten, 1.5, lambda x: 20 * x ** 3 + 6 * x + 2),  # four trips: x^5 + x^3 + x^2 + x + 1
    (grows_past_ten, 2.0, lambda x: 6 * x),  # two trips: x^3 + x + 1
    (branch, 0.5, lambda x: 6 * x),
    (branch, -0.5, lambda x: -2 * math.sin(x)),
    (looped_branch, 0.6, lambda x: 18 * x),
    (looped_branch, 1.3, lambda x: 20 * x ** 3),
    (twice, 0.8, lambda x: 6 * x + 48 * x),
    (calls_a_loop, 0.7, lambda x: 3 * (2 * math.sin(x) + 4 * x * math.cos(x) - x * x * math.sin(x))),
    (scaled_items, 0.9, lambda x: 4.0 + 18 * x),
]


@pytest.mark.parametrize("f, x, closed", CASES, ids=lambda c: getattr(c, "__name__", None))
def test_the_second_derivative_is_the_derivative_of_the_gradient(f, x, closed):
    second = grad(grad(f))(x)
    assert type(second) is float
    assert second == pytest.approx(gradient(grad(f), x), rel=1e-6, abs=1e-6)
    if closed is not None:
        assert second == pytest.approx(closed(x), rel=1e-10)


def test_the_paths_differ_between_the_points_tested():
    def trips(x):
        y, n = x, 0
        while y < 10.0:
            y, n = y * x + 1.0, n + 1
        return n
    assert (trips(1.5), trips(2.0)) == (4, 2)
    assert looped_branch(0.6) == pytest.approx(3 * 0.6 ** 3)  # then, then, then, else
    assert looped_branch(1.3) == pytest.approx(1.3 ** 5)  # then, else, else, else


@pytest.mark.parametrize("n", [0, 1, 3, 5])
def test_recursion(n):
    x = 1.3
    second = grad(grad(power_by_recursion))(x, n)
    assert second == pytest.approx(n * (n - 1) * x ** (n - 2) if n > 1 else 0.0, rel=1e-12, abs=1e-12)
    assert second == pytest.approx(gradient(lambda t: grad(power_by_recursion)(t, n), x), rel=1e-6, abs=1e-6)


def mixed(x, y):
    s = 0.0
    for i in range(3):
        s = s + x ** 2 * y ** i
    return s


def test_mixed_partials_of_several_scalar_arguments():
    x, y = 1.5, 2.0
    assert grad(grad(mixed, 0), 1)(x, y) == pytest.approx(2 * x * (1 + 2 * y), rel=1e-12)
    assert grad(grad(mixed, 1), 0)(x, y) == pytest.approx(2 * x * (1 + 2 * y), rel=1e-12)
    dxx, dxy = grad(grad(mixed, 0), (0, 1))(x, y)
    assert (dxx, dxy) == pytest.approx((2 * (1 + y + y * y), 2 * x * (1 + 2 * y)), rel=1e-12)
    assert dxy == pytest.approx(gradient(lambda t: grad(mixed, 0)(x, t), y), rel=1e-6)


def weighted(x, w):
    s = 0.0
    for i in range(3):
        s = s + np.sum(w * x ** i)
    return s


def test_an_array_argument_gets_an_array_of_partials():
    w = np.array([1.0, -2.0, 0.5])
    found = grad(grad(weighted, 0), 1)(1.5, w)
    assert isinstance(found, np.ndarray) and found.shape == (3,)
    np.testing.assert_allclose(found, np.full(3, 1 + 2 * 1.5), rtol=1e-12)
    np.testing.assert_allclose(found, gradient(lambda v: grad(weighted, 0)(1.5, v), w), rtol=1e-6)


def test_an_array_gradient_is_not_differentiated_as_if_it_were_a_number():
    w = np.array([1.0, -2.0, 0.5])
    with pytest.raises(TypeError, match="scalar output.*shape \\(3,\\)"):
        grad(grad(weighted, 1), 0)(1.5, w)
    with pytest.raises(TypeError, match="scalar output"):
        grad(grad(looping_callee))(w)


def test_value_and_grad_vjp_and_preserve_result():
    x, y = 1.5, 2.0
    first, second = 2 * x * (1 + y + y * y), 2 * (1 + y + y * y)
    assert astgrad.value_and_grad(grad(mixed, 0))(x, y) == pytest.approx((first, second))
    assert astgrad.vjp(grad(mixed, 0))(x, y, 3.0) == pytest.approx(3 * second)
    assert grad(grad(mixed, 0), preserve_result=True)(x, y) == pytest.approx((second, first))


def test_the_source_is_the_jvp_of_the_generated_gradient():
    second = grad(grad(power))
    assert second(2.0) == pytest.approx(160.0)
    assert "Jacobian-vector product of dpower" in second.source and "stack_pop(d_stack)" in second.source
    assert second.wrt == ("x",)


THIRD = [
    (power, 1.5, lambda x: 60 * x ** 2),
    (taylor_sin, 0.9, lambda x: -math.cos(x)),
    (grows_past_ten, 1.5, lambda x: 60 * x ** 2 + 6),
    (grows_past_ten, 2.0, lambda x: 6.0),
    (branch, 0.5, lambda x: 6.0),
    (branch, -0.5, lambda x: -2 * math.cos(x)),
    (looped_branch, 0.6, lambda x: 18.0),
    (twice, 0.8, lambda x: 54.0),
    (calls_a_loop, 0.7, lambda x: 3 * (6 * math.cos(x) - 6 * x * math.sin(x) - x * x * math.cos(x))),
    (scaled_items, 0.9, lambda x: 18.0),
]


@pytest.mark.parametrize("f, x, closed", THIRD, ids=lambda c: getattr(c, "__name__", None))
def test_the_third_derivative_is_the_derivative_of_the_second(f, x, closed):
    third = grad(grad(grad(f)))(x)
    assert third == pytest.approx(closed(x), rel=1e-10)
    assert third == pytest.approx(gradient(grad(grad(f)), x, eps=1e-5), rel=1e-5, abs=1e-5)


def test_fourth_derivatives_and_recursion_and_defaults():
    assert grad(grad(grad(grad(taylor_sin))))(0.9) == pytest.approx(math.sin(0.9), rel=1e-10)
    assert grad(grad(grad(grad(power))))(1.5) == pytest.approx(120 * 1.5, rel=1e-12)
    assert grad(grad(grad(power_by_recursion)))(1.3, 4) == pytest.approx(24 * 1.3, rel=1e-12)

    def defaults(x, n=4, *, c=1.0):
        y = c
        for i in range(n):
            y = y * x
        return y
    assert grad(grad(grad(defaults)))(1.3) == pytest.approx(24 * 1.3, rel=1e-12)
    assert grad(grad(grad(defaults)))(1.3, n=5, c=2.0) == pytest.approx(120 * 1.3 ** 2, rel=1e-12)


def test_third_order_mixed_partials():
    x, y = 1.5, 2.0
    assert grad(grad(grad(mixed, 0), 1), 1)(x, y) == pytest.approx(4 * x, rel=1e-12)
    assert grad(grad(grad(mixed, 0), 1), (0, 1))(x, y) == pytest.approx((2 * (1 + 2 * y), 4 * x), rel=1e-12)
    w = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(grad(grad(grad(weighted, 0), 0), 1)(1.5, w), np.full(3, 2.0), rtol=1e-12)


def test_a_third_derivative_of_an_array_gradient_is_refused_not_summed():
    with pytest.raises(TypeError, match="scalar output.*shape \\(2,\\)"):
        grad(grad(grad(power)))(np.array([1.0, 2.0]))
    with pytest.raises(TypeError, match="scalar output.*tuple of 2"):
        grad(grad(grad(mixed, 0), (0, 1)))(1.5, 2.0)
    assert grad(grad(grad(power)))(1.5) == pytest.approx(60 * 1.5 ** 2)  # the refusals spoil nothing


def test_the_third_derivative_source_is_forward_mode_three_times():
    third = grad(grad(grad(power)))
    assert third(1.5) == pytest.approx(135.0)
    assert "def jvp_jvp_jvp_power" in third.source


def test_straight_line_code_still_goes_by_reverse_mode():
    second = grad(grad(cube))
    assert second(2.0) == 12.0 and "def ddcube" in second.source


def wavy(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x * (i + 1)) * x)
    return s


V = np.array([1.0, -2.0, 0.5])
WAVY_JVP = astgrad.jvp(wavy)


def tangent_along_v(x):
    return WAVY_JVP(x, V)[1]


def test_reverse_over_forward_differentiates_the_jvp_code_and_is_the_hvp():
    x = np.array([0.3, -0.4, 0.8])  # the jvp's generated code (a loop) differentiated as a callee
    found = grad(tangent_along_v)(x)
    np.testing.assert_allclose(found, astgrad.hvp(wavy)(x, V), rtol=1e-10)
    np.testing.assert_allclose(found, gradient(tangent_along_v, x), rtol=1e-6, atol=1e-6)


def test_a_vjp_seed_of_the_wrong_shape_is_refused_not_broadcast():
    with pytest.raises(ValueError, match="seed has shape \\(2,\\)"):
        astgrad.vjp(grad(power))(1.5, np.ones(2))
    assert astgrad.vjp(grad(power))(1.5, 2.0) == pytest.approx(2 * 20 * 1.5 ** 3)


def looped_pair(a, b):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(np.sin(a * b) * b)
    return s


def test_vjp_of_a_looped_gradient_of_two_arguments_takes_a_tuple_seed():
    """The gradient of (a, b) is a tuple: its vjp's seed is a tuple of two arrays (refused before), and the
    result is H u by forward mode over the gradient's code, as jvp gives it (H is symmetric)."""
    rng = np.random.default_rng(5)
    a, b, u, v = (rng.standard_normal(3) for _ in range(4))
    g = grad(looped_pair, wrt=(0, 1))
    pulled = astgrad.vjp(g, wrt=(0, 1))(a, b, (u, v))
    pushed = astgrad.jvp(g, wrt=(0, 1))(a, b, (u, v))[1]
    for p, q in zip(pulled, pushed):
        np.testing.assert_allclose(p, q, rtol=1e-10, atol=1e-12)
    eps = 1e-6
    along = [(p - m) / (2 * eps) for p, m in zip(g(a + eps * u, b + eps * v), g(a - eps * u, b - eps * v))]
    for p, n in zip(pulled, along):
        np.testing.assert_allclose(p, n, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="tuple of 2 arrays"):
        astgrad.vjp(g, wrt=(0, 1))(a, b, u)
