"""A rule a user registers reaches both engines, or the registration says it cannot.

The rules here are deliberately not the derivative (``g * 10``), so a
gradient shows which engine used the rule and which ran the body.
"""

import warnings

import numpy as np
import pytest

import astgrad


@astgrad.primitive
def cube(x):
    return x ** 3


@astgrad.defvjp(cube)
def cube_vjp(g, ans, x):
    return g * 10 * x


def square(x):
    return x * x


def test_a_primitive_rule_is_used_by_the_generated_code_and_the_tape():
    x = np.array([1.0, 2.0, -0.5])

    def loss(x):
        return np.sum(cube(x))

    expected = 10 * x
    np.testing.assert_allclose(astgrad.grad(loss)(x), expected, rtol=1e-15)
    t = astgrad.tensor(x, requires_grad=True)
    loss(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-15)


def test_registering_a_rule_for_a_plain_function_warns_that_the_tape_cannot_see_it():
    with pytest.warns(UserWarning, match=r"square is a plain Python function, so only generated code uses this "
                                         r"rule.*@astgrad.primitive") as caught:
        astgrad.defvjp(square, lambda g, ans, x: g * 10 * x)
    assert caught[0].filename == __file__  # pointed at the registration, not inside astgrad
    x = np.array([1.0, 2.0])

    def loss(x):
        return np.sum(square(x))

    np.testing.assert_allclose(astgrad.grad(loss)(x), 10 * x)  # generated code: the rule
    t = astgrad.tensor(x, requires_grad=True)
    loss(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * x)  # the tape: the body, as the warning said


def test_no_warning_for_a_primitive():
    @astgrad.primitive
    def wrapped(x):
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        astgrad.defvjp(wrapped, lambda g, ans, x: g)
