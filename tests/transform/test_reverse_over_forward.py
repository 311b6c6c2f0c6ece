"""Reverse over forward: grad of a function that calls a generated jvp differentiates the jvp's generated code.

For ``f`` from R^n to R^m, ``J = jvp(f)`` and ``h(x, u) = <J(x) u, w>``:
d h / dx is the hessian contraction ``sum_i w_i H_i(x) u`` (compared with
``astgrad.hessian`` of ``<f, w>``, forward over reverse, and with central
differences of the jvp itself), and d h / du is ``J(x)^T w`` (compared with
``astgrad.jacobian``, reverse mode, and closed forms).  Straight-line code, a
loop whose trip count depends on x, a branch, a user callee and recursion;
scalar and array points; the value output as well as the tangent; tuple
``wrt``.  The adversarial cases: the tangent is the point itself, the
direction has the wrong shape (an error, as the jvp raises, never a sum of
columns), a callee of ``f`` rebound after the gradient was built, and the
calls whose binding the transform cannot see, refused at their line.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.3, -0.4, 0.8])
U = np.array([1.0, -2.0, 0.5])
W = np.array([0.3, 0.7, -1.1])


def straight(x):
    return np.sin(x) * x ** 2


def looped(x):
    y = x
    for i in range(2 + int(np.sum(x) > 0.5)):
        y = y * x + np.sin(y)
    return y


def branched(x):
    if np.sum(x) > 0:
        return np.exp(x) * x
    return x ** 3


def squash(a):
    return np.tanh(a) * a


def called(x):
    return squash(x) + squash(2.0 * x)


def recursive(x, n):
    if n == 0:
        return x
    return np.sin(recursive(x, n - 1)) * x


def recursed(x):
    return recursive(x, 3)


FUNCTIONS = [straight, looped, branched, called, recursed]
JVPS = {f.__name__: astgrad.jvp(f) for f in FUNCTIONS}
LOOPED_JVP, CALLED_JVP = JVPS["looped"], JVPS["called"]


def tangent_along(name):
    jvp = JVPS[name]

    def h(x, u):
        return np.sum(jvp(x, u)[1] * W)
    return h


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [X, -X], ids=["x", "minus-x"])
def test_the_gradient_of_a_jvp_tangent_is_the_hessian_contraction(f, x):
    h = tangent_along(f.__name__)
    found = astgrad.grad(h)(x, U)
    by_hessian = astgrad.hessian(lambda x: np.sum(f(x) * W))(x) @ U
    np.testing.assert_allclose(found, by_hessian, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(found, gradient(lambda x: h(x, U), x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_the_gradient_along_the_direction_is_the_transposed_jacobian(f):
    found = astgrad.grad(tangent_along(f.__name__), 1)(X, U)
    np.testing.assert_allclose(found, astgrad.jacobian(f)(X).T @ W, rtol=1e-10, atol=1e-12)


def test_closed_forms_of_straight_line_code():
    dx, du = astgrad.grad(tangent_along("straight"), (0, 1))(X, U)
    second = -np.sin(X) * X ** 2 + 4 * X * np.cos(X) + 2 * np.sin(X)  # d2/dx2 of sin(x) x^2, elementwise
    first = np.cos(X) * X ** 2 + 2 * X * np.sin(X)
    np.testing.assert_allclose(dx, W * second * U, rtol=1e-12)
    np.testing.assert_allclose(du, W * first, rtol=1e-12)


def scalar_cubic(x):
    y = 1.0
    for i in range(3):
        y = y * x
    return y * np.sin(x)


SCALAR_JVP = astgrad.jvp(scalar_cubic)


def scalar_tangent(x, u):
    return SCALAR_JVP(x, u)[1]


def test_a_scalar_point_and_direction():
    x, u = 0.7, 1.5
    d2 = 6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x)
    assert astgrad.grad(scalar_tangent)(x, u) == pytest.approx(d2 * u, rel=1e-12)
    assert astgrad.grad(scalar_tangent, 1)(x, u) == pytest.approx(3 * x ** 2 * np.sin(x) + x ** 3 * np.cos(x),
                                                                rel=1e-12)
    assert astgrad.grad(scalar_tangent)(x, u) == pytest.approx(astgrad.grad(astgrad.grad(scalar_cubic))(x) * u)


def wavy(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x * (i + 1)) * x)
    return s


WAVY_JVP = astgrad.jvp(wavy)


def wavy_tangent(x):
    return WAVY_JVP(x, U)[1]


def test_for_a_scalar_function_it_is_the_hessian_vector_product():
    np.testing.assert_allclose(astgrad.grad(wavy_tangent)(X), astgrad.hvp(wavy)(X, U), rtol=1e-10)


def value_and_tangent(x, u):
    value, tangent = LOOPED_JVP(x, u)
    return np.sum(value * W) + np.sum(tangent * tangent)


def test_the_value_and_the_tangent_are_both_differentiated():
    found = astgrad.grad(value_and_tangent)(X, U)
    np.testing.assert_allclose(found, gradient(lambda x: value_and_tangent(x, U), X), rtol=1e-6, atol=1e-7)
    J = astgrad.jacobian(looped)(X)
    tangent = J @ U
    by_hessian = astgrad.hessian(lambda x: np.sum(looped(x) * 2 * tangent))(X) @ U  # d <t, t> = 2 <t, dt>
    np.testing.assert_allclose(found, J.T @ W + by_hessian, rtol=1e-9, atol=1e-12)


def along_itself(x):
    return np.sum(CALLED_JVP(x, x)[1] * W)


def test_the_point_as_its_own_direction():
    found = astgrad.grad(along_itself)(X)  # d/dx <J(x) x, w> = (sum_i w_i H_i) x + J^T w
    expected = astgrad.hessian(lambda x: np.sum(called(x) * W))(X) @ X + astgrad.jacobian(called)(X).T @ W
    np.testing.assert_allclose(found, expected, rtol=1e-9)
    np.testing.assert_allclose(found, gradient(along_itself, X), rtol=1e-6, atol=1e-7)


def mixed(x, y):
    return np.sin(x) * y ** 2 + x * y


MIXED_BOTH = astgrad.jvp(mixed, wrt=(0, 1))
MIXED_SECOND = astgrad.jvp(mixed, wrt=1)
Y = np.array([1.5, -0.5, 2.0])
V = np.array([0.2, 0.4, -1.0])


def both_tangents(x, y, u, v):
    return np.sum(MIXED_BOTH(x, y, (u, v))[1] * W)


def second_tangent(x, y, v):
    return np.sum(MIXED_SECOND(x, y, v)[1] * W)


def test_a_jvp_with_respect_to_several_arguments_and_to_the_second():
    grads = astgrad.grad(both_tangents, (0, 1, 2, 3))(X, Y, U, V)
    for i, arg in enumerate((X, Y, U, V)):
        def one(a, i=i):
            args = [X, Y, U, V]
            args[i] = a
            return both_tangents(*args)
        np.testing.assert_allclose(grads[i], gradient(one, arg), rtol=1e-6, atol=1e-7)
    dx, dv = astgrad.grad(second_tangent, (0, 2))(X, Y, V)
    np.testing.assert_allclose(dx, W * (2 * Y * np.cos(X) + 1) * V, rtol=1e-12)  # d/dx of (2 y sin x + x) v
    np.testing.assert_allclose(dv, W * (2 * Y * np.sin(X) + X), rtol=1e-12)


def with_aux(x):
    value, tangent = CALLED_JVP(x, U)
    return np.sum(tangent * W), value


def test_value_and_grad_vjp_and_has_aux():
    h = tangent_along("called")
    loss, found = astgrad.value_and_grad(h)(X, U)
    assert loss == pytest.approx(h(X, U))
    expected = astgrad.hessian(lambda x: np.sum(called(x) * W))(X) @ U
    np.testing.assert_allclose(found, expected, rtol=1e-9)
    np.testing.assert_allclose(astgrad.vjp(h)(X, U, 2.0), 2.0 * expected, rtol=1e-9)
    found, aux = astgrad.grad(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(found, expected, rtol=1e-9)
    np.testing.assert_allclose(aux, called(X))


def test_the_source_shows_the_jvp_code_it_differentiates():
    source = astgrad.grad(tangent_along("called")).source
    assert "forward_jvp_called" in source and "backward_jvp_squash" in source
    assert "jvp_tangent(x, u, " in source


def test_a_direction_of_the_wrong_shape_raises_as_the_jvp_does():
    h = astgrad.grad(tangent_along("straight"))
    with pytest.raises(ValueError, match=r"tangent of shape \(\).*shape \(3,\)"):
        h(X, 1.0)  # broadcast, it would be the sum of the hessian's columns
    with pytest.raises(ValueError, match=r"tangent of x has shape \(\)"):
        JVPS["straight"](X, 1.0)


def test_containers_are_refused_when_it_runs():
    with pytest.raises(TypeError, match="takes arrays and numbers"):
        astgrad.grad(tangent_along("straight"), 1)(X, [1.0, 2.0, 3.0])


def stretch(x):
    return x * 2.0


def stretched(x):
    return stretch(x) * x


STRETCHED_JVP = astgrad.jvp(stretched)


def stretched_tangent(x):
    return np.sum(STRETCHED_JVP(x, U)[1] * W)


def test_a_callee_rebound_after_the_gradient_was_built_is_followed():
    global stretch
    h = astgrad.grad(stretched_tangent)
    np.testing.assert_allclose(h(X), W * 4.0 * U)  # d/dx of (4 x u)
    saved = stretch
    try:
        stretch = np.sin  # noqa: F811
        expected = W * (-np.sin(X) * X + 2 * np.cos(X)) * U  # d/dx of (cos(x) x + sin(x)) u
        np.testing.assert_allclose(h(X), expected, rtol=1e-12)
        np.testing.assert_allclose(stretched_tangent(X + 0.0), np.sum((np.cos(X) * X + np.sin(X)) * U * W))
    finally:
        stretch = saved


def with_default(x, scale=2.0):
    return np.sin(x) * scale


DEFAULT_JVP = astgrad.jvp(with_default)


def default_left_out(x):
    return np.sum(DEFAULT_JVP(x, U)[1])


def by_keyword(x):
    return np.sum(DEFAULT_JVP(x, U, scale=3.0)[1])


def tangents_in_one_name(x, y):
    both = (U, V)
    return np.sum(MIXED_BOTH(x, y, both)[1])


@pytest.mark.parametrize("h, text, advice", [
    (default_left_out, "DEFAULT_JVP(x, U)[1]", r"2 arguments.*with_default\(x, scale, dx\)"),
    (by_keyword, "scale=3.0", r"keywords.*Write the arguments in order"),
    (tangents_in_one_name, "MIXED_BOTH(x, y, both)", r"tangents in one value.*mixed\(x, y, \(dx, dy\)\)"),
], ids=["default", "keyword", "tangent-tuple"])
def test_calls_whose_binding_is_not_seen_are_refused_at_their_line(h, text, advice):
    with pytest.raises(astgrad.TransformError, match=f"(?s){advice}") as info:
        astgrad.grad(h)
    assert "test_reverse_over_forward.py" in str(info.value) and text in str(info.value)


def bessel_like(x):
    return np.i0(x)


astgrad.defvjp(bessel_like, lambda g, ans, x: g * 0.5 * np.i0(x))
astgrad.defjvp(bessel_like, lambda t, ans, x: t * 0.5 * np.i0(x))  # a forward rule reverse mode cannot read


def through_bessel(x):
    return bessel_like(x) * x


BESSEL_JVP = astgrad.jvp(through_bessel)


def bessel_tangent(x):
    return np.sum(BESSEL_JVP(x, U[:2])[1])


def test_a_forward_rule_without_a_reverse_rule_is_refused_at_its_line():
    with pytest.raises(astgrad.TransformError, match=r"(?s)no gradient rule for numpy\.i0.*astgrad\.defvjp") as info:
        astgrad.grad(bessel_tangent)
    assert "test_reverse_over_forward.py" in str(info.value)


def holomorphic(z):
    return z ** 2 * np.sin(z)


HOLOMORPHIC_JVP = astgrad.jvp(holomorphic)
ZU = np.array([1.0 + 0.5j, -0.3j])
ZW = np.array([0.2 - 1j, 0.7 + 0.1j])


def complex_tangent(z):
    return np.real(np.sum(HOLOMORPHIC_JVP(z, ZU)[1] * ZW))


def complex_by_hand(z):
    return np.real(np.sum((2 * z * np.sin(z) + z ** 2 * np.cos(z)) * ZU * ZW))


def test_a_complex_point_gets_the_gradient_of_the_tangent_written_by_hand():
    z = np.array([0.3 + 0.2j, -0.5 + 0.4j])
    assert complex_tangent(z) == pytest.approx(complex_by_hand(z), rel=1e-12)
    np.testing.assert_allclose(astgrad.grad(complex_tangent)(z), astgrad.grad(complex_by_hand)(z), rtol=1e-12)
    step = 1e-6  # and the real and imaginary parts by central differences (docs/rules.md: d/dre - i d/dim)
    for k in range(2):
        e = np.zeros(2)
        e[k] = step
        d_re = (complex_tangent(z + e) - complex_tangent(z - e)) / (2 * step)
        d_im = (complex_tangent(z + 1j * e) - complex_tangent(z - 1j * e)) / (2 * step)
        assert astgrad.grad(complex_tangent)(z)[k] == pytest.approx(d_re - 1j * d_im, rel=1e-6)
