"""A generated gradient called inside a differentiated function: its derivatives are hessian blocks.

``df = grad(f)`` then ``grad(lambda x: df(x)[0])`` is row 0 of f's hessian;
with more arguments the gradient of each is the mixed block.  Checked
against astgrad.hessian and against central differences of ``df`` itself.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import NoRuleTransformError
from tests._numeric import gradient


def f(x):
    return np.sum(np.sin(x) * x ** 2)


def f2(x, y):
    return np.sum(x * x * y) + np.sum(np.cos(x) * y ** 3)


def looped(x, steps):
    total = 0.0
    for _ in range(steps):
        x = np.tanh(x) * 1.1
        total = total + np.sum(x * x)
    return total + helper(x)


def helper(z):
    return np.sum(np.exp(-z))


DF = astgrad.grad(f)
D2 = astgrad.grad(f2)
D2_BOTH = astgrad.grad(f2, wrt=(0, 1))
DLOOP = astgrad.grad(looped)
X = np.array([0.3, 0.7, 1.1])
Y = np.array([1.2, -0.4, 0.5])


def test_a_component_of_the_gradient_is_a_hessian_row():
    row = astgrad.grad(lambda x: DF(x)[0])(X)
    np.testing.assert_allclose(row, astgrad.hessian(f)(X)[0], rtol=1e-12)
    np.testing.assert_allclose(row, gradient(lambda x: DF(x)[0], X), rtol=1e-6, atol=1e-8)


def squared_gradient(x, y):
    v = D2(x, y)
    return np.sum(v * v)


def test_mixed_blocks_for_the_arguments_not_differentiated_inside():
    gx, gy = astgrad.grad(squared_gradient, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, gradient(lambda x: squared_gradient(x, Y), X), rtol=1e-6)
    np.testing.assert_allclose(gy, gradient(lambda y: squared_gradient(X, y), Y), rtol=1e-6)


def both_parts(x, y):
    gx, gy = D2_BOTH(x, y)
    return np.sum(gx * y) + np.sum(gy ** 2)


def test_a_gradient_with_respect_to_two_arguments():
    gx, gy = astgrad.grad(both_parts, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(gx, gradient(lambda x: both_parts(x, Y), X), rtol=1e-6)
    np.testing.assert_allclose(gy, gradient(lambda y: both_parts(X, y), Y), rtol=1e-6)


def mixed(x, m):
    return np.sum(np.sin(m @ x) * x[0])


D_MIXED = astgrad.grad(mixed, wrt=(0, 1))
M = np.array([[0.5, -1.0, 0.2], [1.3, 0.4, -0.6]])


def items_of_the_gradient(x, m):
    g = D_MIXED(x, m)
    return np.sum(g[0] ** 2) + np.sum(g[1] * m)


def test_items_read_from_a_gradient_of_two_arguments_of_other_shapes():
    """g[0] and g[1] of a tuple whose arrays numpy cannot stack: the adjoint of each item is that item's, not
    a row of an array (numpy raised on the tuple's shape)."""
    gx, gm = astgrad.grad(items_of_the_gradient, wrt=(0, 1))(X, M)
    np.testing.assert_allclose(gx, gradient(lambda x: items_of_the_gradient(x, M), X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gm, gradient(lambda m: items_of_the_gradient(X, m), M), rtol=1e-6, atol=1e-8)


def loop_gradient_norm(x):
    g = DLOOP(x, 4)
    return np.sum(g * g)


def test_loops_callees_and_an_int_argument():
    found = astgrad.grad(loop_gradient_norm)(X)
    np.testing.assert_allclose(found, gradient(loop_gradient_norm, X), rtol=1e-6)
    hessian = astgrad.hessian(looped)(X, 4)
    np.testing.assert_allclose(found, 2 * hessian @ DLOOP(X, 4), rtol=1e-10)


def test_forward_mode_through_the_call():
    u = np.array([0.5, -1.0, 2.0])
    value, tangent = astgrad.jvp(lambda x: np.sum(DF(x) * x))(X, u)
    assert value == pytest.approx(np.sum(DF(X) * X))
    expected = (astgrad.hessian(f)(X) @ u) @ X + DF(X) @ u  # d/dx <df(x), x> along u
    np.testing.assert_allclose(tangent, expected, rtol=1e-10)


def test_a_scalar_argument():
    g = astgrad.grad(lambda t: t ** 4)
    assert astgrad.grad(lambda t: g(t) * t)(2.0) == pytest.approx(128.0, rel=1e-12)


@pytest.mark.parametrize("make, match", [
    (lambda: astgrad.value_and_grad(f), "differentiated only as grad"),
    (lambda: astgrad.grad(f, has_aux=False, preserve_result=True), "differentiated only as grad"),
    (lambda: astgrad.vjp(f), "differentiated only as grad"),
    (lambda: astgrad.grad(astgrad.grad(lambda t: t ** 4)), ""),  # a higher order than the code computes
])
def test_other_gradient_objects_are_refused_at_the_call(make, match):
    inner = make()

    def outer(x):
        return np.sum(inner(x)) if not isinstance(inner, astgrad.api.GradientFunction) or \
            inner._mode != "vjp" else np.sum(inner(x, 1.0))
    with pytest.raises(astgrad.TransformError, match=match or None):
        astgrad.grad(outer)(X if match else 0.5)


def test_a_keyword_argument_is_refused():
    with pytest.raises(astgrad.TransformError, match="every argument by position"):
        astgrad.grad(lambda x: np.sum(D2(x, y=Y)))(X)


def test_a_third_derivative_through_the_call_is_refused_not_guessed():
    first = astgrad.grad(lambda x: DF(x)[1])
    with pytest.raises(NoRuleTransformError, match="helper of astgrad's own"):
        astgrad.grad(lambda x: first(x)[0])(X)


def of_a_pair(x, pair):
    return np.sum(np.sin(x) * pair[0][:3]) + np.sum(x ** 2) * np.sum(pair[1])


D_PAIR = astgrad.grad(of_a_pair)


def calls_with_a_pair(x, pair):
    return np.sum(D_PAIR(x, pair) ** 2)


def test_a_tuple_argument_of_arrays_of_other_shapes_is_not_read_as_one_array():
    """The complex-argument check read every argument with np.iscomplexobj, which raised on a tuple numpy
    cannot stack; a container gets no block, so it is not checked there."""
    pair = (np.array([0.5, 1.5, -0.3, 2.0]), np.array([1.0, 2.0]))
    found = astgrad.grad(calls_with_a_pair)(X, pair)
    np.testing.assert_allclose(found, gradient(lambda x: calls_with_a_pair(x, pair), X), rtol=1e-6, atol=1e-8)
