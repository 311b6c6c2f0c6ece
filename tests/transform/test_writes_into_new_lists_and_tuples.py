"""A write into a list or tuple just made (``[1] * n``, ``tuple(...)``, ``s + (1,)``) reaches no other name.

``layout = [1] * np.ndim(a); layout[axis] = -1`` and ``shape = tuple(...);
shape += (n,)`` were refused as writes into memory another array may share,
in user code and in the reverse rules' own code (np.diagonal's, np.average's,
the Fourier transforms'), whose second derivatives differentiate that code
again.  A new list or tuple is nobody else's: accepted, with numpy's first
and second derivatives (central differences).  Lists of arrays joined or
repeated stay refused (no gradient rule), and an item written through stays
checked.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([[0.7, -1.2, 0.4], [1.1, 0.3, -0.8]])


def layout_written(a):
    layout = [1] * np.ndim(a)
    layout[0] = -1
    return np.sum(np.reshape(a[:, 0], layout) * a ** 2)


def shape_extended(a):
    shape = tuple(n for n in np.shape(a))
    shape += (1,)
    return np.sum(np.reshape(a, shape) ** 3)


def shape_joined(a):
    shape = (1,) + np.shape(a)
    widths = [(0, 0)] * np.ndim(shape)
    widths[0] = (1, 1)
    return np.sum(np.pad(np.reshape(a, shape), widths[:1] + [(0, 0)] * 2) ** 3)


@pytest.mark.parametrize("f", [layout_written, shape_extended, shape_joined], ids=lambda f: f.__name__)
def test_first_and_second_derivatives_match_differences(f):
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X.copy()), gradient(f, X), rtol=1e-6, atol=1e-6)
    expected = np.array([gradient(lambda p, i=i: g(p).ravel()[i], X).ravel() for i in range(X.size)])
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()).reshape(X.size, X.size), expected, rtol=1e-5, atol=1e-5)


def repeated_arrays_written_through(a):
    b = a * 1.0
    rows = [b] * 2
    rows[0][0] = 5.0
    return np.sum(a * rows[1])


def test_a_list_of_arrays_repeated_stays_refused():
    with pytest.raises(astgrad.TransformError, match="holds the items of what it was made from"):
        astgrad.grad(repeated_arrays_written_through)(X[0].copy())
