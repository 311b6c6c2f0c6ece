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


# -- forward code the gradient does not need still raises ---------------------

def _unused_sum(x, v):
    y = x + v
    return np.sum(x * x)


def _unused_product(x, m):
    y = x @ m
    return np.sum(x * x)


def _unused_reduction(x, axis):
    y = np.sum(x, axis=axis)
    return np.sum(x * x)


def _unused_index(x):
    y = x[5]
    return np.sum(x * x)


def _unused_reshape(x):
    y = np.reshape(x, (7,))
    return np.sum(x * x)


def _unused_in_a_branch(x, v):
    if np.sum(x) > 0:
        y = np.sin(x) * v
    return np.sum(x * x)


@pytest.mark.parametrize("f, args, error", [
    (_unused_sum, (np.ones(3), np.ones(2)), ValueError),
    (_unused_product, (np.ones(3), np.ones((2, 2))), ValueError),
    (_unused_product, (np.ones((2, 3)), np.ones((4, 3, 5, 1))), ValueError),
    (_unused_reduction, (np.ones((2, 3)), 2), np.exceptions.AxisError),
    (_unused_index, (np.ones(3),), IndexError),
    (_unused_reshape, (np.ones(3),), ValueError),
    (_unused_in_a_branch, (np.ones(3), np.ones(2)), ValueError),
], ids=["broadcast", "matmul", "matmul-batch", "axis", "index", "reshape", "branch"])
def test_the_gradient_raises_what_the_function_raises(f, args, error):
    with pytest.raises(error):
        f(*args)
    with pytest.raises(error):
        astgrad.grad(f)(*args)
    with pytest.raises(error):
        astgrad.value_and_grad(f)(*args)


def test_matmul_shape_check_gives_numpys_message():
    with pytest.raises(ValueError) as numpy_error:
        np.ones(3) @ np.ones((2, 2))
    with pytest.raises(ValueError) as ours:
        astgrad.grad(_unused_product)(np.ones(3), np.ones((2, 2)))
    assert str(ours.value) == str(numpy_error.value)


@pytest.mark.parametrize("f, args", [
    (_unused_sum, (np.arange(3.0), np.ones(3))),
    (_unused_sum, (np.arange(3.0), 2.0)),
    (_unused_product, (np.arange(3.0), np.ones((3, 2)))),
    (_unused_product, (np.ones((2, 3)), np.ones((4, 3, 5)))),
    (_unused_reduction, (np.arange(6.0).reshape(2, 3), -1)),
    (_unused_index, (np.arange(6.0),)),
    (_unused_reshape, (np.arange(7.0),)),
    (_unused_in_a_branch, (np.arange(1.0, 4.0), np.ones(3))),
])
def test_valid_arguments_still_get_the_closed_form(f, args):
    np.testing.assert_allclose(astgrad.grad(f)(*args), 2 * args[0])


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_the_unused_value_is_checked_by_shape_on_floats_not_computed():
    # on other operands numpy may raise on dtypes and values: the value is computed there (the else); the
    # general adjoint ("any") guards it, the one for float arguments (the last called here) needs no guard
    source = astgrad.grad(_unused_sum).sources["any"]
    assert "broadcast_shape(shape(x), shape(v)) if floats(x, v) else x + v" in source
    product = astgrad.grad(_unused_product)
    assert "matmul_shape(shape(x), shape(m)) if floats(x, m) else x @ m" in product.sources["any"]
    product(np.ones(3), np.ones((3, 2)))
    assert "    matmul_shape(shape(x), shape(m))\n" in product.source


def test_vjp_of_matmul_with_mismatched_operands_raises():
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        astgrad.vjp(_matmul)(np.ones(1), np.ones((2, 2)), np.ones(2))
