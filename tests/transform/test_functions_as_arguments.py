"""A parameter holding a function is called as that function.

``rk4(f, y0, t, p)`` calling ``f(t[i], y, p)``: the gradient is made for
the function ``f`` holds at the call (a Python function, a lambda, a
``functools.partial``, a bound method, an object with ``__call__``, a numpy
function, a generated gradient), transformed as a callee, and made again
for another function; the same for ``jvp``.  A function passed on from the differentiated
function to a callee (``integrate(rhs, y0)``) specialises the callee the
same way.  Each gradient is compared with central differences of the same
call; the adversarial cases are the ones a cache keyed wrongly would get
wrong without an error: another function, an edited one, a closure whose
cell changed, a partial whose keywords changed.
"""

import functools

import numpy as np
import pytest

import astgrad
from _numeric import gradient

T = np.linspace(0.0, 1.0, 5)
Y0 = np.array([1.0, 0.5])


def rk4(f, y0, t, p):
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        k1 = f(t[i], y, p)
        k2 = f(t[i] + h / 2, y + h / 2 * k1, p)
        k3 = f(t[i] + h / 2, y + h / 2 * k2, p)
        k4 = f(t[i] + h, y + h * k3, p)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def decay(t, y, p):
    return -p * y


def oscillator(t, y, p):
    return np.array([y[1], -p * y[0] - 0.1 * t * y[1]])


def final_state_loss(p, f, t):
    """The function passed on to a callee that calls it."""
    return np.sum(rk4(f, Y0, t, p) ** 2)


def euler_loss(p, f, t):
    """The function called here, in a loop."""
    y = Y0
    for i in range(len(t) - 1):
        y = y + (t[i + 1] - t[i]) * f(t[i], y, p)
    return np.sum(y ** 2)


def _expected(fn, p, *rest):
    return gradient(lambda q: fn(q, *rest), p)


class Stiffness:
    def __init__(self, k):
        self.k = k

    def rhs(self, t, y, p):
        return -self.k * p * y

    def __call__(self, t, y, p):
        return -self.k * p * y * y


def _scaled(t, y, p, scale):
    return -scale * p * y


FUNCTIONS = {
    "function": decay,
    "another function": oscillator,
    "lambda": lambda t, y, p: -p * p * y,
    "partial": functools.partial(_scaled, scale=2.0),
    "bound method": Stiffness(1.5).rhs,
    "callable object": Stiffness(0.5),
}


@pytest.mark.parametrize("fn", [final_state_loss, euler_loss])
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_a_parameter_is_called_as_the_function_it_holds(fn, name):
    f = FUNCTIONS[name]
    got = astgrad.grad(fn)(0.7, f, T)
    np.testing.assert_allclose(got, _expected(fn, 0.7, f, T), rtol=1e-6)


def test_one_gradient_called_with_one_function_then_another_gives_each_its_derivative():
    df = astgrad.grad(final_state_loss)
    for f in (decay, oscillator, decay, FUNCTIONS["lambda"], oscillator):
        np.testing.assert_allclose(df(0.7, f, T), _expected(final_state_loss, 0.7, f, T), rtol=1e-6)
    assert {"f holding decay", "f holding oscillator"} <= set(df.sources)  # one per function, kept


def test_one_jvp_called_with_one_function_then_another_gives_each_its_derivative():
    jvp = astgrad.jvp(final_state_loss)
    for f in (decay, oscillator, decay, FUNCTIONS["partial"], oscillator):
        np.testing.assert_allclose(jvp(0.7, f, T, 1.0)[1], _expected(final_state_loss, 0.7, f, T), rtol=1e-6)
    assert "oscillator" in jvp.source or "decay" in jvp.source


def _edited(t, y, p):
    return -3.0 * p * y


def test_a_function_edited_after_its_gradient_was_made_is_transformed_again():
    def rhs(t, y, p):
        return -p * y
    df = astgrad.grad(euler_loss)
    before = df(0.7, rhs, T)
    np.testing.assert_allclose(before, _expected(euler_loss, 0.7, rhs, T), rtol=1e-6)
    rhs.__code__ = _edited.__code__
    after = df(0.7, rhs, T)
    np.testing.assert_allclose(after, _expected(euler_loss, 0.7, rhs, T), rtol=1e-6)
    assert not np.isclose(before, after)


def _closing_over(k):
    def rhs(t, y, p):
        return -k * p * y
    return rhs


def test_a_closure_whose_cell_changed_and_a_partial_whose_keyword_changed_are_read_as_they_are_now():
    df = astgrad.grad(final_state_loss)
    rhs = _closing_over(2.0)
    first = df(0.7, rhs, T)
    rhs.__closure__[0].cell_contents = 5.0
    np.testing.assert_allclose(df(0.7, rhs, T), _expected(final_state_loss, 0.7, rhs, T), rtol=1e-6)
    assert not np.isclose(first, df(0.7, rhs, T))
    scaled = functools.partial(_scaled, scale=2.0)
    df(0.7, scaled, T)
    scaled.keywords["scale"] = 4.0
    np.testing.assert_allclose(df(0.7, scaled, T), _expected(final_state_loss, 0.7, scaled, T), rtol=1e-6)


def applied(p, f):
    return np.sum(f(p * np.array([1.0, 2.0])))


def _potential(x):
    return np.sum(x ** 3)


def gradient_step(p, g):
    x = p * np.array([1.0, 2.0])
    return np.sum(x - 0.1 * g(x))


@pytest.mark.parametrize("fn, f", [(applied, np.sin), (applied, np.linalg.norm),
                                   (gradient_step, astgrad.grad(_potential))],
                         ids=["ufunc", "numpy function", "generated gradient"])
def test_a_numpy_function_or_a_gradient_held_by_a_parameter(fn, f):
    np.testing.assert_allclose(astgrad.grad(fn)(0.7, f), _expected(fn, 0.7, f), rtol=1e-6)


def integrate(p, t):
    return np.sum(rk4(decay, Y0, t, p)) + np.sum(rk4(oscillator, Y0, t, p))


def test_a_global_function_passed_to_a_callee_specialises_it():
    np.testing.assert_allclose(astgrad.grad(integrate)(0.7, T), _expected(integrate, 0.7, T), rtol=1e-6)


def a_lambda_made_here_passed_on(p, t):
    rhs = lambda s, y, q: -p * y  # noqa: E731 (captures p, which the callee would not see)
    return np.sum(rk4(rhs, Y0, t, 1.0))


def rebinding_the_parameter(p, f, t):
    f = oscillator
    return np.sum(f(0.0, Y0, p))


def test_what_cannot_be_followed_is_refused_where_it_is():
    with pytest.raises(astgrad.TransformError, match="the lambda rhs made in the function can only be called"):
        astgrad.grad(a_lambda_made_here_passed_on)
    with pytest.raises(astgrad.TransformError, match=r"calling a local variable \(f\)"):
        astgrad.grad(rebinding_the_parameter)(0.7, decay, T)
    df = astgrad.grad(final_state_loss)
    with pytest.raises(astgrad.TransformError, match=r"calling a local variable \(f\)"):
        df(0.7, 3.0, T)  # no function: the code calling f is refused, as it was without one
    with pytest.raises(astgrad.TransformError, match=r"calling a local variable \(f\)"):
        astgrad.grad(final_state_loss, wrt=1)(0.7, decay, T)
