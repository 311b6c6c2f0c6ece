"""The forward transform reads generated code as it reads a user's: jvp of a generated gradient is H u.

``astgrad.api.forward._tangent_function`` is the hook for transformations built on
forward mode (forward-over-reverse): it takes a generated function, whose
text the transform finds in linecache, and returns ``(*args, *tangents) ->
(value, tangent)``.  Checked against central differences of the gradient,
on adjoints without a stack (a branch or loop adjoint pops ``_stack``,
which the front end refuses as an in-place call).
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.forward import _tangent_function

X = np.array([0.3, -0.2, 0.5])
U = np.array([1.0, 0.5, -1.0])


def quartic(x):
    return np.sum(x ** 4 * np.sin(x))


def layer(x, w):
    y = np.tanh(x * w)
    return np.sum(y * y) + np.sum(x * x * w) / np.sum(np.exp(x))


@pytest.mark.parametrize("f, args", [(quartic, (X,)), (layer, (X, X[::-1] + 1.0))])
def test_jvp_of_a_generated_gradient_is_the_hessian_times_u(f, args):
    gradient = astgrad.grad(f, optimize=1)
    hvp = _tangent_function(gradient._generated.function, ["x"], level=1)
    value, tangent = hvp(*args, U)
    np.testing.assert_allclose(value, gradient(*args), rtol=1e-12)
    eps = 1e-6
    numeric = (gradient(args[0] + eps * U, *args[1:]) - gradient(args[0] - eps * U, *args[1:])) / (2 * eps)
    np.testing.assert_allclose(tangent, numeric, rtol=1e-6, atol=1e-8)
