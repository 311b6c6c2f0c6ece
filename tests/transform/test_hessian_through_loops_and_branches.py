"""hessian and hvp of functions with loops and branches: forward mode through the gradient's stack.

The gradient of a loop saves values on a stack and pops them in its reverse
loop.  Forward mode over that code pushes each tangent beside its value and
pops it beside it, so the i-th tangent belongs to the i-th value whatever
path ran.  The adversarial cases: a push whose value has no tangent among
pushes that have one (the stacks must stay in step), a branch taken on some
steps only, a break on some inputs only, a loop the first gradient solved as
a recurrence.  References: central differences of the generated gradient
(tests/_numeric.py) and the tape's ``torch.autograd.functional.hessian``.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from astgrad.torch.autograd import functional
from _numeric import gradient

X = np.array([0.3, 0.7, -0.2])
V = np.array([1.0, -2.0, 0.5])


def _moved(x, i, t):
    y = x.copy()
    y[i] += t
    return y


def _column(g, x, j, eps=1e-6):
    """Column j of the hessian: the central difference of the generated gradient ``g`` along x[j]."""
    return (g(_moved(x, j, eps)) - g(_moved(x, j, -eps))) / (2 * eps)


def loop(x):
    s = 0.0
    for i in range(4):
        s = s + np.sum(np.sin(x) * i)
        x = x * 1.1 + 0.1 * x ** 2
    return s


def while_loop(x):
    s = 0.0
    k = 0
    while k < 4:
        s = s + np.sum(np.cos(x) * x) * k
        x = np.tanh(x) + 0.5 * x
        k = k + 1
    return s


def branches(x):
    s = 0.0
    for i in range(5):
        if np.sum(x) > 0.6:  # taken on some steps only: x shrinks
            s = s + np.sum(x * x * x)
        else:
            s = s + np.sum(np.sin(x))
        x = x * 0.8
    return s


def early_exit(x):
    s = 0.0
    for i in range(6):
        s = s + np.sum(x ** 3) / (i + 1)
        if s > 2.0:
            break
        x = np.sin(x) * 1.3
    return s


def unused_pushes(x):
    """Pushes of values without tangents (an int, a bool) between pushes of values with tangents."""
    s = 0.0
    n = 0
    for i in range(3):
        n = n + i
        flag = n > 1
        if flag:
            s = s + np.sum(np.exp(0.3 * x) * n)
        x = x * x * 0.5 + x
    return s


def nested(x):
    s = 0.0
    for i in range(3):
        for j in range(2):
            s = s + np.sum(np.sin(x * (i + j)))
        x = np.cos(x) + x
    return s


FUNCTIONS = [loop, while_loop, branches, early_exit, unused_pushes, nested]
SCALES = [0.5, 1.0, 3.0]


@pytest.mark.sweep(2)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scale", SCALES)
def test_the_hessian_is_the_derivative_of_the_gradient(f, scale):
    x = X * scale
    expected = np.stack([_column(astgrad.grad(f), x, j) for j in range(x.size)], axis=-1)
    np.testing.assert_allclose(astgrad.hessian(f)(x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(astgrad.hvp(f)(x, V), expected @ V, rtol=1e-5, atol=1e-5)


def _steps_before_break(x):
    s = 0.0
    for i in range(6):
        s = s + np.sum(x ** 3) / (i + 1)
        if s > 2.0:
            return i
        x = np.sin(x) * 1.3
    return None


def test_both_paths_of_the_branch_and_the_break_run():
    taken = [np.sum(X * 0.8 ** i) > 0.6 for i in range(5)]
    assert any(taken) and not all(taken)  # branches at X: the then path on two steps, the else on three
    assert [_steps_before_break(X * scale) for scale in SCALES] == [None, 5, 0]


def test_loops_and_branches_agree_with_the_tape():
    def taped(x):
        s = 0.0
        for i in range(5):
            if float(torch.sum(x).item()) > 0.6:
                s = s + torch.sum(x * x * x)
            else:
                s = s + torch.sum(torch.sin(x))
            x = x * 0.8
        return s

    for x in (X, 3 * X):
        np.testing.assert_allclose(astgrad.hessian(branches)(x), functional.hessian(taped, torch.tensor(x)).numpy(),
                                   rtol=1e-12, atol=1e-12)


def scalar_loop(x):
    for i in range(5):
        x = 0.9 * np.sin(x) + 0.1 * x
    return x


def test_a_loop_the_gradient_solves_as_a_recurrence_is_differentiated_as_a_loop():
    assert "linear_recurrence" in astgrad.grad(scalar_loop, optimize=1).source
    for x in (0.4, -1.1):
        expected = gradient(astgrad.grad(scalar_loop), x)
        assert float(astgrad.hessian(scalar_loop)(x)) == pytest.approx(expected, rel=1e-6)
        assert float(astgrad.hvp(scalar_loop)(x, 2.0)) == pytest.approx(2 * expected, rel=1e-6)


def test_a_second_gradient_of_a_loop_is_the_hessian():
    for x in (0.4, -1.1):
        assert astgrad.grad(astgrad.grad(scalar_loop))(x) == pytest.approx(float(astgrad.hessian(scalar_loop)(x)),
                                                                          rel=1e-12)


def helper(x):
    s = 0.0
    for i in range(2):
        s = s + np.sum(np.sin(x) * x)
    return s


def calls_a_loop(x):
    return helper(x) + np.sum(x)


def bump(x, i):
    if i > 1:
        return np.tanh(x) * x
    return x * x


def calls_in_a_loop(x):
    s = 0.0
    for i in range(4):
        s = s + np.sum(bump(x, i))  # forward_ and backward_ pairs share the stack with the loop
        x = x * 0.9
    return s


@pytest.mark.parametrize("f", [calls_a_loop, calls_in_a_loop], ids=lambda f: f.__name__)
def test_callees_push_and_pop_their_tangents_on_the_shared_stack(f):
    expected = np.stack([_column(astgrad.grad(f), X, j) for j in range(X.size)], axis=-1)
    np.testing.assert_allclose(astgrad.hessian(f)(X), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(astgrad.hvp(f)(X, V), expected @ V, rtol=1e-5, atol=1e-5)


def test_a_second_gradient_of_a_function_with_callees():
    with pytest.raises(TypeError, match="scalar output"):  # the gradient wrt an array is an array
        astgrad.grad(astgrad.grad(calls_a_loop))(X)
    for x in (0.4, -1.1):
        assert astgrad.grad(astgrad.grad(calls_in_a_loop))(x) == pytest.approx(
            float(astgrad.hessian(calls_in_a_loop)(x)), rel=1e-12)


def test_a_users_list_called_like_the_stack_is_a_list():
    def f(x):
        _stack = [x]
        _stack.append(x * 2.0)
        y = _stack.pop()
        return np.sum(y * x)

    with pytest.raises(astgrad.TransformError, match=r"_stack\.pop"):
        astgrad.jvp(f)(X, V)


def test_a_parameter_without_a_tangent_that_gets_one_in_a_loop():
    def f(x, y):
        for i in range(3):
            y = y * x + 1.0
        return y

    value, tangent = astgrad.jvp(f)(0.7, 2.0, 1.0)
    assert value == pytest.approx(f(0.7, 2.0))
    assert tangent == pytest.approx(gradient(lambda x: f(x, 2.0), 0.7), rel=1e-7)
