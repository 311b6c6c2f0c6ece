"""Programs ``kind_programs.py`` found that astgrad gets wrong, each reduced to its smallest form.

Each is checked as the generator checks it: numpy's value and the central-difference gradient, or a
refusal by astgrad naming the line.  An internal error (a crash, not a located refusal) is a failure.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.37, -0.65, 1.13, 0.21])


class Sub(np.ndarray):
    pass


def _exact_or_refused(f):
    try:
        got = astgrad.grad(f)(X.copy())
    except (astgrad.TransformError, TypeError) as error:
        assert str(error).startswith("astgrad:") or isinstance(error, astgrad.TransformError), error
        assert __file__ in str(error) + "\n".join(getattr(error, "__notes__", [])), error
        return
    np.testing.assert_allclose(got, gradient(f, X), rtol=1e-6, atol=1e-8)


def test_unique_inverse_indices_as_a_factor():  # the gradient reached only the indices: x's is zero there
    def f(x):
        _, i = np.unique(np.round(x), return_inverse=True)
        return np.sum(x * i)

    _exact_or_refused(f)


def test_a_view_as_an_ndarray_subclass():  # numpy's view: Sub changes no meaning, x * x
    def f(x):
        return np.sum(x.view(Sub) * x)

    _exact_or_refused(f)


def test_unique_values_and_indices_both_used():
    def f(x):
        u, i = np.unique(x, return_inverse=True)
        return np.sum(u * u) + np.sum(x * i)

    _exact_or_refused(f)


class Doubling(np.ndarray):
    def __mul__(self, other):
        return np.multiply(self, other) * 2.0


def test_a_view_as_a_subclass_of_another_meaning_is_refused_at_the_line():
    def f(x):
        return np.sum(x.view(Doubling) * x)

    with pytest.raises(astgrad.TransformError, match=r"x\.view\(Doubling\) makes a .*Doubling, a subclass") as error:
        astgrad.grad(f)(X.copy())
    assert __file__ in str(error.value)


def test_a_view_as_another_dtype_is_refused_at_the_line():
    def f(x):
        return np.sum(x.view(np.int64) * x)

    with pytest.raises(astgrad.TransformError, match="reads the bytes of the array") as error:
        astgrad.grad(f)(X.copy())
    assert __file__ in str(error.value)


def test_a_view_without_arguments_and_the_tensor_style_reshape():
    def plain(x):
        return np.sum(x.view() * x)

    def tensor_style(x):
        return np.sum(x.view(2, 2) @ x.view(2, 2))

    _exact_or_refused(plain)
    np.testing.assert_allclose(astgrad.grad(tensor_style)(X.copy()),
                               gradient(lambda v: np.sum(v.reshape(2, 2) @ v.reshape(2, 2)), X), rtol=1e-6)
