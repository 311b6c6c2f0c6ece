"""HIPS autograd's rule convention, ``defvjp(f, lambda ans, x: lambda g: ...)``, in both engines.

astgrad's own rule is ``rule(g, ans, *args)``; a maker ``(ans, *args)``
returns the function of ``g``.  ``defvjp`` tells them apart by counting
parameters.  What must never happen is a mis-read that gives a number: each
case checks the gradient against central differences (the rules here are the
true derivatives) in the generated code and on the tape, and the
ambiguous and broken cases raise.
"""

import warnings

import numpy as np
import pytest

import astgrad
from astgrad.rules._registry import find
from _numeric import numeric_grad

X = np.array([1.0, 2.0, -0.5])
Y = np.array([3.0, -1.0, 0.25])

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # primitives below: both engines see the rules

    @astgrad.primitive
    def cube(x):
        return x ** 3

    astgrad.defvjp(cube, lambda ans, x: lambda g: g * 3 * x ** 2)

    @astgrad.primitive
    def times(x, y):
        return x * y

    astgrad.defvjp(times, lambda ans, x, y: lambda g: g * y, lambda ans, x, y: lambda g: g * x)

    @astgrad.primitive
    def first_only(x, y):
        return x * y

    astgrad.defvjp(first_only, lambda ans, x, y: lambda g: g * y)

    @astgrad.primitive
    def scaled(x, k=2.0):
        return x * k

    astgrad.defvjp(scaled, lambda g, ans, x, k=2.0: g * k)  # astgrad's form, leaving fn's default optional

    @astgrad.primitive
    def scaled_maker(x, k=2.0):
        return x * k

    astgrad.defvjp(scaled_maker, lambda ans, x, k=2.0: lambda g: g * k)  # a maker with the default

    @astgrad.primitive
    def doubled_star(*xs):
        return xs[0] * 2

    astgrad.defvjp(doubled_star, lambda ans, *xs: lambda g: g * 2)

    @astgrad.primitive
    def not_a_maker(x):
        return np.sin(x)

    astgrad.defvjp(not_a_maker, lambda ans, x: np.cos(x))  # a maker returning the derivative, not a function


def both_engines(loss, *args, wrt=0):
    """The gradient of ``loss`` by generated code and by the tape."""
    generated = astgrad.grad(loss, wrt=wrt)(*args)
    tensors = [astgrad.tensor(a, requires_grad=(i == wrt)) for i, a in enumerate(args)]
    loss(*tensors).backward()
    return generated, tensors[wrt].grad.numpy()


@pytest.mark.parametrize("loss, wrt", [
    (lambda x, y: np.sum(cube(x) * y), 0),
    (lambda x, y: np.sum(np.sin(times(x, y))), 0),
    (lambda x, y: np.sum(np.sin(times(x, y))), 1),
    (lambda x, y: np.sum(first_only(x, y) ** 2), 0),
    (lambda x, y: np.sum(scaled(x) * y) + np.sum(scaled(y, 3.0)), 0),
    (lambda x, y: np.sum(scaled(x) * y) + np.sum(scaled(y, 3.0)), 1),
    (lambda x, y: np.sum(scaled_maker(x) * y) + np.sum(scaled_maker(y, 3.0)), 1),
    (lambda x, y: np.sum(doubled_star(x) * y), 0),
], ids=["one-maker", "two-makers-x", "two-makers-y", "maker-for-x-only", "astgrad-rule-with-default-x",
        "astgrad-rule-with-default-y", "maker-with-default", "star-args-maker"])
def test_each_form_gives_the_derivative_in_both_engines(loss, wrt):
    expected = numeric_grad(loss, (X, Y), wrt)
    for got in both_engines(loss, X, Y, wrt=wrt):
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_an_argument_without_a_maker_is_an_error_where_it_needs_a_gradient():
    def loss(x, y):
        return np.sum(first_only(x, y))

    with pytest.raises(RuntimeError, match="no gradient for argument 1"):
        astgrad.grad(loss, wrt=1)(X, Y)


def test_a_maker_that_returns_no_function_is_refused_when_called():
    def loss(x):
        return np.sum(not_a_maker(x))

    with pytest.raises(TypeError, match="not a function of g"):
        astgrad.grad(loss)(X)
    t = astgrad.tensor(X, requires_grad=True)
    with pytest.raises(TypeError, match="not a function of g"):
        loss(t).backward()


def test_astgrad_rules_are_registered_as_they_are():
    @astgrad.primitive
    def quartic(x):
        return x ** 4

    @astgrad.defvjp(quartic)
    def quartic_vjp(g, ans, x):
        return g * 4 * x ** 3

    def loss(x):
        return np.sum(quartic(x))

    gradient = astgrad.grad(loss)
    np.testing.assert_allclose(gradient(X), 4 * X ** 3)
    assert find(quartic).vjp is quartic_vjp  # not wrapped as a maker


def test_a_rule_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="must be callable"):
        astgrad.defvjp(cube, lambda ans, x: lambda g: g, 3.0)
