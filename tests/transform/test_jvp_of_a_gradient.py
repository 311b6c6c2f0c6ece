"""``jvp(grad(f))``: forward mode over the code ``grad(f)`` generated, as ``jax.jvp(jax.grad(f), ...)``.

The value is the gradient and the tangent its directional derivative,
``H u``: checked against central differences of the gradient along ``u``
(the lower derivative), for arrays, containers, a tuple ``wrt`` and a
second gradient.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from _numeric import directional

RNG = np.random.default_rng(11)


def loss(w, X, y):
    z = X @ w
    return np.sum(np.log(1.0 + np.exp(-y * z))) + 0.1 * np.sum(w ** 4)


def looped(x, n):
    y = x
    for _ in range(n):
        y = np.sin(y) * x
    return np.sum(y)


def of_a_dict(p, x):
    return np.sum(np.sin(p["a"]) * x) * p["b"]


def _moved(tree, u, s):
    if isinstance(tree, dict):
        return {k: _moved(v, u[k], s) for k, v in tree.items()}
    return tree + s * u


def _check(gradient, args, position, u, value, tangent):
    def along(s, i):
        moved = list(args)
        moved[position] = _moved(args[position], u, s)
        return np.ravel(gradient(*moved))[i]
    np.testing.assert_allclose(value, gradient(*args), rtol=1e-12)
    for i in range(np.size(value)):
        np.testing.assert_allclose(np.ravel(tangent)[i], directional(lambda s: along(s, i), 0.0, 1.0),
                                   rtol=1e-5, atol=1e-6)


def test_jvp_of_a_gradient_is_the_hessian_along_u():
    w, X, y = RNG.standard_normal(3), RNG.standard_normal((5, 3)), np.sign(RNG.standard_normal(5))
    u = RNG.standard_normal(3)
    g = astgrad.grad(loss)
    value, tangent = astgrad.jvp(g)(w, X, y, u)
    _check(g, (w, X, y), 0, u, value, tangent)
    np.testing.assert_allclose(tangent, astgrad.hessian(loss)(w, X, y) @ u, rtol=1e-10)
    assert "def jvp_dloss" in astgrad.jvp(g).source or astgrad.jvp(g).source == ""


def test_jvp_of_a_gradient_along_another_argument_and_through_a_loop():
    x, u = RNG.standard_normal(3), RNG.standard_normal(3)
    g = astgrad.grad(looped)
    value, tangent = astgrad.jvp(g)(x, 3, u)
    _check(g, (x, 3), 0, u, value, tangent)
    w, X, y = RNG.standard_normal(3), RNG.standard_normal((5, 3)), np.sign(RNG.standard_normal(5))
    V = RNG.standard_normal((5, 3))
    gw = astgrad.grad(loss)
    value, tangent = astgrad.jvp(gw, wrt=1)(w, X, y, V)  # d(grad_w)/dX along V
    _check(gw, (w, X, y), 1, V, value, tangent)


def test_jvp_of_a_gradient_of_a_dict_keeps_its_structure():
    p, x = {"a": RNG.standard_normal(2), "b": 1.5}, RNG.standard_normal(2)
    u = {"a": RNG.standard_normal(2), "b": 0.5}
    value, tangent = astgrad.jvp(astgrad.grad(of_a_dict))(p, x, u)
    assert list(tangent) == ["a", "b"]
    for key in p:
        for i in range(np.size(p[key])):
            expected = directional(lambda s: np.ravel(astgrad.grad(of_a_dict)(_moved(p, u, s), x)[key])[i], 0.0, 1.0)
            np.testing.assert_allclose(np.ravel(tangent[key])[i], expected, rtol=1e-5, atol=1e-6)
    hv = astgrad.hvp(of_a_dict)(p, x, u)
    np.testing.assert_allclose(tangent["a"], hv["a"], rtol=1e-12)


def test_jvp_of_a_second_gradient_is_a_third_derivative():
    value, tangent = astgrad.jvp(astgrad.grad(astgrad.grad(lambda t: t ** 4)))(2.0, 1.0)
    assert value == pytest.approx(48.0) and tangent == pytest.approx(48.0)


def test_jvp_of_value_and_grad_or_a_wrapper_is_refused():
    with pytest.raises(TypeError, match="a function astgrad generated"):
        astgrad.jvp(astgrad.value_and_grad(loss))


def test_jacfwd_of_a_gradient_is_the_hessian():
    w, X, y = RNG.standard_normal(3), RNG.standard_normal((5, 3)), np.sign(RNG.standard_normal(5))
    H = astgrad.jacfwd(astgrad.grad(loss))(w, X, y)
    np.testing.assert_allclose(H, astgrad.hessian(loss)(w, X, y), rtol=1e-12)
    np.testing.assert_allclose(H, astgrad.jacobian(astgrad.grad(loss))(w, X, y), rtol=1e-10)
    g = astgrad.grad(loss)
    for j in range(3):
        e = np.eye(3)[j]
        np.testing.assert_allclose(H[:, j], [directional(lambda s: g(w + s * e, X, y)[i], 0.0, 1.0) for i in range(3)],
                                   rtol=1e-5, atol=1e-6)


def fifth_power(x):
    y = 1.0
    for _ in range(5):
        y = y * x
    return y


def calls_its_own(x):
    return fifth_power(x) * 2.0


@pytest.mark.parametrize("f", [fifth_power, calls_its_own], ids=lambda f: f.__name__)
def test_a_third_derivative_through_loops_or_callees_is_refused_not_zero(f):
    """hessian(grad(f)) of such f gave 0.0 (reverse mode over code whose callees pass values on a stack)."""
    second = astgrad.grad(f)
    for third in (lambda: astgrad.hessian(second)(1.5), lambda: astgrad.hvp(second)(1.5, 1.0),
                  lambda: astgrad.jvp(astgrad.grad(second))(1.5, 1.0)):
        with pytest.raises(TypeError, match="use the tape"):
            third()
    assert astgrad.jvp(second)(1.5, 1.0)[1] == pytest.approx(20 * 1.5 ** 3 * (1 if f is fifth_power else 2))


def test_a_tuple_wrt_of_one_argument_gives_its_whole_gradient_and_tangent():
    """grad(f, wrt=(0,)) returns (g,) where its code returns g: jvp and vjp of it read g whole (the jvp's value
    and tangent were g's first row, broadcast)."""
    x, y, u = RNG.standard_normal((3, 4)), RNG.uniform(0.5, 1.5, (3, 4)), RNG.standard_normal((3, 4))

    def f(x, y):
        return np.sum(np.sin(x) * y)

    g = astgrad.grad(f, wrt=(0,))
    (value,), (tangent,) = astgrad.jvp(g, wrt=(0,))(x, y, (u,))
    np.testing.assert_allclose(value, np.cos(x) * y, rtol=1e-12)
    np.testing.assert_allclose(tangent, -np.sin(x) * y * u, rtol=1e-12)
    (pulled,) = astgrad.vjp(g, wrt=(0,))(x, y, (u,))
    np.testing.assert_allclose(pulled, -np.sin(x) * y * u, rtol=1e-12)
