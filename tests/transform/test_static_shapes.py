"""Shapes the transformer knows statically: values read only for their shape
are not computed, and a full reduction's seed stays a number while every
rule it meets is elementwise.  Each case is checked against finite
differences, and the generated source is checked for what should be gone."""

import numpy as np
import pytest

import astgrad

from _numeric import assert_grad

pytestmark = pytest.mark.optimize(2)  # the source of the passes of level 2

W = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])


def chain(x):
    y = x + 2
    z = y * y * 3
    return np.mean(z)


def broadcast_partner(x):
    z = (x - 1.0) * W  # x (3,) against W (2, 3): z is larger than x
    return np.mean(z)


def two_arguments(x, b):
    z = x * 2.0 + b  # b (3,) broadcast over x (2, 3)
    return np.sum(z / 4.0)


def seed_into_matmul(x):
    z = -(x @ W.T)
    return np.mean(z)


def seed_into_loop(x, n):
    z = x * 0.5
    total = np.sum(z)
    for _ in range(n):
        total = total * 1.5
    return total


def scalar_input(x):
    y = np.sin(x) * 2.0
    return np.mean(y * y)


def test_shape_only_values_are_not_computed():
    source = astgrad.grad(chain).source
    assert "    t1 = y * y" not in source and "z = t1 * 3" not in source
    assert "dz = dresult / size(x)" in source


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_chain(dtype):
    x = np.array([[0.5, -1.0], [2.0, 0.25]], dtype=dtype)
    got = astgrad.grad(chain)(x)
    assert got.dtype == dtype and got.shape == x.shape
    np.testing.assert_allclose(got, (x.astype(np.float64) + 2) * 6 / x.size, rtol=1e-5)


def test_broadcast_partner():
    assert_grad(astgrad.grad(broadcast_partner), broadcast_partner, np.array([0.2, -0.4, 1.5]))


def test_two_arguments():
    x, b = np.array([[0.1, 0.2, 0.3], [1.0, -1.0, 2.0]]), np.array([0.5, -0.5, 1.0])
    assert_grad(astgrad.grad(two_arguments, wrt=(0, 1)), two_arguments, x, b, wrt=(0, 1))


def test_seed_into_matmul():
    assert_grad(astgrad.grad(seed_into_matmul), seed_into_matmul, np.array([[0.2, -0.4, 1.5]]))


def test_seed_into_loop():
    assert_grad(astgrad.grad(seed_into_loop), seed_into_loop, np.array([0.2, -0.4, 1.5]), 3)


def test_scalar_input():
    got = astgrad.grad(scalar_input)(0.7)
    assert isinstance(got, float)
    np.testing.assert_allclose(got, 8 * np.sin(0.7) * np.cos(0.7), rtol=1e-9)


def test_vjp_seed_of_a_reduction():
    df = astgrad.vjp(chain)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(df(x, np.float64(2.0)), 2.0 * (x + 2) * 6 / x.size, rtol=1e-12)


def loop_broadcast(W, b, x, n):
    h = x
    for _ in range(n):
        h = np.tanh(h @ W + b)  # b (3,) broadcast over h @ W (2, 3); h @ W saved for its shape only
    return np.mean(h ** 2)


def test_values_saved_for_their_shape_keep_only_the_shape():
    rng = np.random.default_rng(3)
    W, b, x = rng.standard_normal((3, 3)), rng.standard_normal(3), rng.standard_normal((2, 3))
    g = astgrad.grad(loop_broadcast, wrt=(0, 1))
    assert "only_shape(" in g.source
    assert_grad(g, loop_broadcast, W, b, x, 3, wrt=(0, 1))


def accumulated(x, n):
    total = 0.0
    for _ in range(n):
        total = total + x * x  # total: the number 0.0, then arrays of x's shape
    return np.sum(total * x)


def test_an_accumulator_that_starts_as_a_number():
    g = astgrad.grad(accumulated)
    assert "unbroadcast" not in g.source
    assert_grad(g, accumulated, np.array([[0.5, -1.0, 2.0], [0.1, 0.2, -0.3]]), 3)
    assert_grad(g, accumulated, np.array([0.5, -1.0]), 0)
    np.testing.assert_allclose(g(0.5, 2), 3 * 2 * 0.5 ** 2, rtol=1e-12)


def weighted_rows(Z, Y, c, axis, keepdims):
    t = Y * (Z - c)  # read for nothing but its shape once summed
    s = np.sum(t, axis=axis, keepdims=keepdims)
    return -np.mean(s * 1.0)


SHAPES = [((4, 3), (4, 3), (4, 1)), ((4, 3), (3,), (4, 1)), ((2, 4, 3), (4, 3), ())]


@pytest.mark.parametrize("axis", [0, 1, -1, None, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("shapes", SHAPES)
def test_a_broadcast_and_its_reduction_compute_only_their_shapes(axis, keepdims, shapes):
    rng = np.random.default_rng(5)
    Z, Y, c = (rng.standard_normal(s) for s in shapes)
    g = astgrad.grad(weighted_rows, wrt=(0, 2))
    assert "Shaped(broadcast_shape(shape(Y), shape(Z), shape(c)))" in g.source
    assert "Shaped(reduced_shape(shape(t), " in g.source
    assert "    t = Y * (Z - c)\n" not in g.source
    assert_grad(g, weighted_rows, Z, Y, c, axis, keepdims, wrt=(0, 2))


def test_the_value_is_still_computed_when_it_is_returned():
    rng = np.random.default_rng(6)
    Z, Y, c = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
    value, (dZ, dc) = astgrad.value_and_grad(weighted_rows, wrt=(0, 2))(Z, Y, c, 1, False)
    assert value == weighted_rows(Z, Y, c, 1, False)
    np.testing.assert_allclose(dZ, -Y / 4)


def test_shape_errors_are_numpys():
    g = astgrad.grad(weighted_rows, wrt=(0, 2))
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds for array of dimension 2"):
        g(np.ones((4, 3)), np.ones((4, 3)), np.ones((4, 1)), 2, False)
    with pytest.raises(ValueError, match="broadcast"):
        g(np.ones((4, 3)), np.ones((5, 3)), np.ones((4, 1)), 1, False)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        g(np.ones((4, 3)), np.ones((4, 3)), np.ones((4, 1)), (1, -1), False)
