"""jacfwd / jacobian (jacrev) with holomorphic=True: the complex matrix d f_i / d z_j, or a refusal.

The reference is a central difference along the real axis of each input
element (for a holomorphic function, the complex derivative), a closed form,
and JAX's holomorphic Jacobians where JAX is installed.
"""

import numpy as np
import pytest

import astgrad


def sin_times(z):
    return np.sin(z) * z


def mixed(z, w):
    return np.exp(z[:2]) * w + z[1:] ** 2 / (1.0 + w)


def cubes(z):
    return np.sum(z ** 3)


def modulus_squared(z):
    return np.conj(z) * z


def real_part(z):
    return np.real(z) * z


def absolute(z):
    return np.abs(z) + 0j


Z = np.array([1 + 2j, 0.5 - 1j, 0.3 + 0.1j])
W = np.array([2 - 1j, 0.5j])


def complex_differences(f, args, k, h=1e-6):
    """d f / d args[k], one column per element, by central differences along the real axis."""
    x = np.asarray(args[k])
    columns = []
    for index in np.ndindex(*x.shape):
        up, down = [np.array(a) for a in args], [np.array(a) for a in args]
        up[k][index] += h
        down[k][index] -= h
        columns.append((np.asarray(f(*up)) - np.asarray(f(*down))) / (2 * h))
    out = np.shape(f(*args))
    return np.stack(columns, axis=-1).reshape(out + x.shape)


@pytest.mark.parametrize("transform", [astgrad.jacfwd, astgrad.jacobian, astgrad.jacrev])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_elementwise_holomorphic_function_gives_its_derivative_on_the_diagonal(transform, level):
    jac = transform(sin_times, holomorphic=True, optimize=level)(Z)
    np.testing.assert_allclose(jac, np.diag(np.cos(Z) * Z + np.sin(Z)), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("transform", [astgrad.jacfwd, astgrad.jacobian])
def test_two_complex_arguments_match_central_differences(transform):
    blocks = transform(mixed, wrt=(0, 1), holomorphic=True)(Z, W)
    for k, block in enumerate(blocks):
        np.testing.assert_allclose(block, complex_differences(mixed, [Z, W], k), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("transform", [astgrad.jacfwd, astgrad.jacobian])
def test_a_complex_number_output_gives_a_row(transform):
    np.testing.assert_allclose(transform(cubes, holomorphic=True)(Z), 3 * Z ** 2, rtol=1e-12)


@pytest.mark.parametrize("transform", [astgrad.jacfwd, astgrad.jacobian])
def test_the_same_as_jax(transform):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    with jax.enable_x64(True):
        expected = jax.jacfwd(lambda z, w: jnp.exp(z[:2]) * w + z[1:] ** 2 / (1.0 + w), argnums=(0, 1),
                              holomorphic=True)(Z, W)
    for ours, theirs in zip(transform(mixed, wrt=(0, 1), holomorphic=True)(Z, W), expected):
        np.testing.assert_allclose(ours, np.asarray(theirs), rtol=1e-12)


@pytest.mark.parametrize("transform", [astgrad.jacfwd, astgrad.jacobian])
@pytest.mark.parametrize("fn", [modulus_squared, real_part, absolute])
def test_a_function_that_is_not_holomorphic_there_is_refused(transform, fn):
    """JAX returns a matrix for these (its holomorphic=True is a promise); no complex Jacobian exists."""
    with pytest.raises(ValueError, match="is not holomorphic in 'z' at this point"):
        transform(fn, holomorphic=True)(Z)


def test_real_inputs_and_outputs_are_refused():
    with pytest.raises(TypeError, match="needs complex inputs, but the argument 'z' has dtype float64"):
        astgrad.jacfwd(sin_times, holomorphic=True)(Z.real)
    with pytest.raises(TypeError, match="needs a complex array or number as the output"):
        astgrad.jacobian(lambda z: np.abs(z), holomorphic=True)(Z)
    with pytest.raises(TypeError, match="holomorphic=True with has_aux=True"):
        astgrad.jacfwd(sin_times, holomorphic=True, has_aux=True)
    with pytest.raises(TypeError, match="holomorphic is True or False"):
        astgrad.jacobian(sin_times, holomorphic="yes")


def test_without_holomorphic_a_complex_input_is_still_refused():
    with pytest.raises(TypeError, match="is complex; jacfwd is for real inputs"):
        astgrad.jacfwd(sin_times)(Z)
