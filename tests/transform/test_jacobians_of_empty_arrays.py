"""Jacobians and hessians where the output or the input has no elements: arrays with a zero axis, as JAX gives.

``jax.jacobian(lambda v: v[:0] * 2)(jnp.ones(3)).shape == (0, 3)``,
``jax.jacfwd(lambda v: jnp.sum(v) * jnp.ones(2))(jnp.zeros(0)).shape == (2, 0)``,
``jax.hessian(lambda v: jnp.sum(v ** 2))(jnp.zeros(0)).shape == (0, 0)``.
"""

import numpy as np
import pytest

import astgrad


def nothing_out(v):
    return v[:0] * 2


def two_out(v):
    return np.sum(v) * np.ones(2)


def squares(v):
    return np.sum(v ** 2)


def squares_of_two(v, w):
    return np.sum(v ** 2) + np.sum(w ** 3) + np.sum(v) * np.sum(w)


@pytest.mark.parametrize("jac", [astgrad.jacobian, astgrad.jacfwd], ids=["jacrev", "jacfwd"])
def test_output_without_elements(jac):
    out = jac(nothing_out)(np.ones(3))
    assert out.shape == (0, 3)


@pytest.mark.parametrize("jac", [astgrad.jacobian, astgrad.jacfwd], ids=["jacrev", "jacfwd"])
def test_input_without_elements(jac):
    out = jac(two_out)(np.zeros(0))
    assert out.shape == (2, 0)


def test_hessian_of_an_input_without_elements():
    assert astgrad.hessian(squares)(np.zeros(0)).shape == (0, 0)


def test_hessian_blocks_with_one_empty_input():
    w = np.array([0.5, -1.0])
    blocks = astgrad.hessian(squares_of_two, wrt=(0, 1))(np.zeros(0), w)
    assert blocks[0][0].shape == (0, 0) and blocks[0][1].shape == (0, 2) and blocks[1][0].shape == (2, 0)
    np.testing.assert_allclose(blocks[1][1], np.diag(6 * w))
