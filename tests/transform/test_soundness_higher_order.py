"""Composition never yields a lower-order derivative.

``grad(grad(f))`` used to unwrap the generated gradient back to ``f`` and
return the first derivative (32 for x**4 at 2, where the second is 48).
The generated engine differentiates the generated code of the object
``grad(f)`` returns (48); every other way of handing it a generated
gradient (value_and_grad, preserve_result, vjp, wrapped, partially applied,
called inside the function) must raise, and the tape the error recommends
must give the true higher derivatives.
"""

import functools

import numpy as np
import pytest

import astgrad
from astgrad import autograd

from _numeric import numeric_grad


def quartic(x):
    return x ** 4


def wave(x):
    return np.sin(x) * np.exp(x)


MAKERS = [
    pytest.param(lambda f: astgrad.grad(f, preserve_result=True), id="grad-preserve"),
    pytest.param(lambda f: astgrad.value_and_grad(f), id="value_and_grad"),
    pytest.param(lambda f: astgrad.vjp(f), id="vjp"),
]
OUTER = [
    pytest.param(lambda g: astgrad.grad(g), id="grad"),
    pytest.param(lambda g: astgrad.grad(wrt=0)(g), id="grad-decorator"),
    pytest.param(lambda g: astgrad.grad(g, preserve_result=True), id="grad-preserve"),
    pytest.param(lambda g: astgrad.value_and_grad(g), id="value_and_grad"),
    pytest.param(lambda g: astgrad.vjp(g), id="vjp"),
]


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("inner", MAKERS)
def test_differentiating_a_generated_gradient_is_refused(inner, outer):
    g = inner(quartic)
    with pytest.raises(TypeError, match="higher derivative") as info:
        outer(g)
    message = str(info.value)
    assert "create_graph=True" in message and "quartic" in message and "lower-order" in message


@pytest.mark.parametrize("outer, args, expected", [
    (lambda g: astgrad.grad(g), (2.0,), 48.0),
    (lambda g: astgrad.grad(wrt=0)(g), (2.0,), 48.0),
    (lambda g: astgrad.grad(g, preserve_result=True), (2.0,), (48.0, 32.0)),
    (lambda g: astgrad.value_and_grad(g), (2.0,), (32.0, 48.0)),
    (lambda g: astgrad.vjp(g), (2.0, 1.0), 48.0),
], ids=["grad", "grad-decorator", "grad-preserve", "value_and_grad", "vjp"])
def test_differentiating_grad_itself_gives_the_second_derivative(outer, args, expected):
    assert outer(astgrad.grad(quartic))(*args) == expected


def test_the_refusal_does_not_spoil_the_first_derivative():
    g = astgrad.grad(quartic, preserve_result=True)
    with pytest.raises(TypeError):
        astgrad.grad(g)
    assert g(2.0) == (32.0, 16.0)
    assert astgrad.grad(quartic)(2.0) == 32.0
    assert astgrad.grad(astgrad.grad(quartic))(2.0) == 48.0
    assert astgrad.grad(quartic)(2.0) == 32.0


def test_a_wrapper_made_with_functools_wraps_is_refused():
    g = astgrad.grad(quartic)

    @functools.wraps(g)
    def wrapper(x):
        return g(x)
    # inspect.getsource follows __wrapped__ to quartic's source: transforming it would give 32
    with pytest.raises(TypeError, match="which wraps"):
        astgrad.grad(wrapper)


def test_a_partial_of_a_generated_gradient_is_refused():
    with pytest.raises(TypeError, match="higher derivative"):
        astgrad.grad(functools.partial(astgrad.grad(quartic)))


G_QUARTIC = astgrad.grad(quartic)


def calls_generated_gradient(x):
    return G_QUARTIC(x) * x


def test_a_generated_gradient_called_inside_is_differentiated():
    """G_QUARTIC(x) * x is 4 x^4, whose derivative is 16 x^3 (a hessian block of quartic, not a lower order)."""
    assert astgrad.grad(calls_generated_gradient)(2.0) == pytest.approx(128.0, rel=1e-12)


def test_a_generated_gradient_called_in_a_lambda_is_differentiated():
    g = astgrad.grad(quartic)
    assert astgrad.grad(lambda x: g(x) + x)(1.5) == pytest.approx(12 * 1.5 ** 2 + 1, rel=1e-12)


def test_a_value_and_grad_called_inside_is_refused_at_its_line():
    vg = astgrad.value_and_grad(quartic)

    def calls_value_and_grad(x):
        return vg(x)[1] * x
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(calls_value_and_grad)
    message = str(info.value)
    assert "test_soundness_higher_order.py" in message and "vg(x)[1] * x" in message
    assert "value_and_grad" in message and "create_graph=True" in message


def _tape_derivatives(f, x0, order):
    x = astgrad.tensor(x0, dtype=np.float64, requires_grad=True)
    out, found = f(x), []
    for k in range(order):
        (out,) = autograd.grad(out, x, create_graph=k < order - 1)
        found.append(float(out.detach().numpy()))
    return found


@pytest.mark.parametrize("x0", [2.0, -0.5, 1.3])
def test_the_recommended_tape_gives_true_higher_derivatives_of_a_power(x0):
    assert _tape_derivatives(quartic, x0, 3) == pytest.approx([4 * x0 ** 3, 12 * x0 ** 2, 24 * x0], rel=1e-12)


@pytest.mark.parametrize("x0", [0.7, -1.1])
def test_the_recommended_tape_gives_true_higher_derivatives_of_a_product(x0):
    e, s, c = np.exp(x0), np.sin(x0), np.cos(x0)
    closed = [e * (s + c), 2 * e * c, 2 * e * (c - s)]
    assert _tape_derivatives(wave, x0, 3) == pytest.approx(closed, rel=1e-12)
    # and the generated engine's first derivative agrees with finite differences
    assert astgrad.grad(wave)(x0) == pytest.approx(numeric_grad(wave, [x0], 0), rel=1e-7)
