"""jacobian(grad(f)) and jacfwd(grad(f)) run every row in one call of batched generated code, or the row loop.

``jacobian(grad(f))`` differentiates the gradient's generated code again by
reverse mode and batches that vjp over its seed, which holds every basis
vector (reverse over reverse, api/directions.py); where reverse mode does
not take the gradient's code again (a loop or a callee saves values on a
stack), it takes hessian's block, forward over reverse, batched over the
tangent; where neither is batched, one product per row, as before.  Each
test compares the batched result with that row loop (the batched path
turned off), with ``hessian(f)`` and with central differences of the
gradient, and pins which path ran.
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.directions import Directions
from _numeric import numeric_grad

RNG = np.random.default_rng(11)
LAM = 0.01


def looped(make):
    """``make()`` with the batched path turned off: one product per row, as before batching."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Directions, "run", lambda *args, **kwargs: None)
        return make()


def differences(f, i, j, args):
    """d grad(f, i) / d args[j] by central differences of astgrad's gradient."""
    gradient = astgrad.grad(f, i)
    rows = []
    for index in np.ndindex(*np.shape(args[i])):
        def component(*at, index=index):
            return np.asarray(gradient(*at))[index]
        rows.append(numeric_grad(component, args, j))
    return np.reshape(rows, np.shape(args[i]) + np.shape(args[j]))


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * LAM * np.sum(w * w)


def with_a_loop(x, W):
    h = x
    for _ in range(3):
        h = np.tanh(W @ h)
    return np.sum(h * h) + np.sum(x ** 3)


def mixed(x, W):
    return np.sum(np.sin(W @ x) * x[0]) + np.sum(W * W) * np.sum(x)


def with_a_default(x, rate=0.3):
    return np.sum(np.exp(x * rate) * x)


def appended(x):
    parts = []
    for i in range(3):
        parts.append(x * (i + 1))
    return np.sum(parts[0] * parts[2]) + np.sum(parts[1])


def first_line(source):
    return source.split("\n")[0]


@pytest.mark.parametrize("level", (0, 2))
def test_reverse_over_reverse_is_one_batched_call_with_the_closed_form(level):
    X = RNG.standard_normal((30, 6)) / np.sqrt(6)
    y = (RNG.uniform(size=30) < 0.5).astype(np.float64)
    w = RNG.standard_normal(6) * 0.1
    jacobian = astgrad.jacrev(astgrad.grad(logistic_loss), optimize=level)
    found = jacobian(w, X, y)
    assert jacobian.batched is True
    assert " vjp wrt w " in first_line(jacobian.source) and "batched over" in first_line(jacobian.source)
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    np.testing.assert_allclose(found, (X.T * (p * (1 - p))) @ X / len(y) + LAM * np.eye(len(w)), rtol=1e-12,
                               atol=1e-15)
    expected = looped(lambda: astgrad.jacrev(astgrad.grad(logistic_loss), optimize=level)(w, X, y))
    np.testing.assert_allclose(found, expected, rtol=1e-10, atol=1e-14)


def test_a_gradient_with_a_loop_takes_forward_over_reverse_batched():
    x, W = RNG.standard_normal(3), RNG.standard_normal((3, 3)) * 0.5
    jacobian = astgrad.jacrev(astgrad.grad(with_a_loop))
    found = jacobian(x, W)
    assert jacobian.batched is True  # reverse mode does not take the code with a stack again: forward over it
    assert " jvp wrt " in first_line(jacobian.source)
    np.testing.assert_allclose(found, looped(lambda: astgrad.jacrev(astgrad.grad(with_a_loop))(x, W)), rtol=1e-10,
                               atol=1e-13)
    np.testing.assert_allclose(found, differences(with_a_loop, 0, 0, (x, W)), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("jacobian", (astgrad.jacrev, astgrad.jacfwd))
def test_a_mixed_block_matches_hessians_and_differences(jacobian):
    x, W = RNG.standard_normal(3), RNG.standard_normal((2, 3))
    block = jacobian(astgrad.grad(mixed, 1), 0)
    found = block(x, W)
    assert block.batched is True
    assert found.shape == (2, 3, 3)
    np.testing.assert_allclose(found, looped(lambda: jacobian(astgrad.grad(mixed, 1), 0)(x, W)), rtol=1e-10,
                               atol=1e-13)
    np.testing.assert_allclose(found, astgrad.hessian(mixed, (0, 1))(x, W)[1][0], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(found, differences(mixed, 1, 0, (x, W)), rtol=1e-6, atol=1e-7)


def test_a_default_the_call_leaves_out():
    x = np.array([0.4, -0.2, 0.9])
    expected = np.diag(np.exp(0.3 * x) * (0.6 + 0.09 * x))
    jacobian = astgrad.jacrev(astgrad.grad(with_a_default))
    np.testing.assert_allclose(jacobian(x), expected, rtol=1e-12)
    assert jacobian.batched is True
    # the row loop, and grad of grad, bind the default too (the generated gradient's code has none of f's)
    np.testing.assert_allclose(looped(lambda: astgrad.jacrev(astgrad.grad(with_a_default))(x)), expected, rtol=1e-12)
    assert np.isclose(astgrad.grad(astgrad.grad(with_a_default))(0.4), np.exp(0.12) * (0.6 + 0.036))


def test_a_list_of_batched_values_the_code_also_indexes_is_batched():
    x = np.array([0.3, -0.7, 1.1])
    jacobian = astgrad.jacrev(astgrad.grad(appended))
    found = jacobian(x)
    assert jacobian.batched is True  # the list's gradient grown item by item, each item batched
    np.testing.assert_allclose(found, 6 * np.eye(3), rtol=1e-13)
    np.testing.assert_allclose(found, looped(lambda: astgrad.jacrev(astgrad.grad(appended))(x)), rtol=1e-13)


def cubed(x):
    return np.sum(np.linalg.matrix_power(np.outer(x, x) + np.eye(3), 3))


def test_code_the_batching_sweep_refuses_takes_the_row_loop():
    x = np.array([0.3, -0.7, 1.1])
    jacobian = astgrad.jacrev(astgrad.grad(cubed))
    found = jacobian(x)
    assert jacobian.batched is False  # matrix_power's rule gives a list of batched powers to np.matmul
    np.testing.assert_allclose(found, differences(cubed, 0, 0, (x,)), rtol=1e-5, atol=1e-6)


def cube_less_cosine(x):
    return x ** 3 - np.cos(x)


def test_a_float_argument_and_a_gradient_of_a_gradient():
    jacobian = astgrad.jacrev(astgrad.grad(cube_less_cosine))
    assert np.isclose(jacobian(0.7), 6 * 0.7 + np.cos(0.7), rtol=1e-12)
    assert jacobian.batched is True
    third = astgrad.jacrev(astgrad.grad(astgrad.grad(cube_less_cosine)))
    assert np.isclose(third(0.7), 6.0 - np.sin(0.7), rtol=1e-12)
    assert third.batched is True
    assert np.isclose(third(0.7), looped(lambda: astgrad.jacrev(astgrad.grad(astgrad.grad(cube_less_cosine)))(0.7)),
                      rtol=1e-10)


def dot_squared(x, y):
    return np.dot(x, y) ** 2


def test_reverse_over_a_rule_that_gives_one_of_two_gradients():
    # np.dot's gradient with respect to x alone is gradient_tuple(matmul(...), 2, (0,)): reverse over it read
    # the tuple's gradient as one gradient per argument and kept only its first item (1.02 off here)
    x, y = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.7, -0.4])
    np.testing.assert_allclose(astgrad.jacrev(astgrad.grad(dot_squared))(x, y), 2 * np.outer(y, y), rtol=1e-12)
    np.testing.assert_allclose(looped(lambda: astgrad.jacrev(astgrad.grad(dot_squared))(x, y)), 2 * np.outer(y, y),
                               rtol=1e-12)
