"""A gradient of code that raises, raises: wrong-shaped vjp seeds and forward code the gradient does not need."""

import numpy as np
import pytest

import astgrad


def _elementwise(x):
    return np.sin(x) * 2


def _matmul(x, m):
    return x @ m


def _scalar(x):
    return np.sum(x * x)


# -- the seed of a vjp has the output's shape ---------------------------------

def test_broadcastable_seed_of_wrong_shape_is_refused():
    # np.ones(3) broadcasts against (2, 3): without the check the vjp of the broadcast seed comes back
    with pytest.raises(ValueError, match=r"the seed has shape \(3,\) but _elementwise's output has shape \(2, 3\)"):
        astgrad.vjp(_elementwise)(np.ones((2, 3)), np.ones(3))


def test_seed_with_an_extra_axis_is_refused():
    with pytest.raises(ValueError, match=r"seed has shape \(1, 3\)"):
        astgrad.vjp(_elementwise)(np.ones(3), np.ones((1, 3)))


def test_seed_of_right_shape_gives_the_closed_form():
    x, seed = np.linspace(-1, 1, 6).reshape(2, 3), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(astgrad.vjp(_elementwise)(x, seed), 2 * np.cos(x) * seed)


def test_python_float_seed_for_a_scalar_output():
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(astgrad.vjp(_scalar)(x, 3.0), 6 * x)
    np.testing.assert_allclose(astgrad.vjp(_scalar)(x, np.float64(3.0)), 6 * x)


def test_matmul_seed_is_checked_against_the_product_shape():
    x, m = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=r"seed has shape \(4,\) but _matmul's output has shape \(2, 4\)"):
        astgrad.vjp(_matmul)(x, m, np.ones(4))
    np.testing.assert_allclose(astgrad.vjp(_matmul)(x, m, np.ones((2, 4))), np.ones((2, 4)) @ m.T)
