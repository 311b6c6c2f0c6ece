"""Writing a recorded value into an integer or boolean tensor rounds it: no gradient comes back through it."""

import numpy as np

import astgrad
from tests._numeric import gradient

X = np.array([1.13, 2.26, 3.34])  # ten times each is away from an integer


def _leaf():
    return astgrad.tensor(X.copy(), dtype=np.float64, requires_grad=True)


def test_item_assignment_into_an_integer_tensor():
    def f(x):
        y = np.zeros(3, int)
        y[0] = x[2] * 10
        return np.sum(y * x)
    x = _leaf()
    y = astgrad.tensor([0, 0, 0])
    y[0] = x[2] * 10
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gradient(f, X), atol=1e-6)


def test_copy_into_a_boolean_tensor():
    def f(x):
        y = np.zeros(3, bool)
        y[...] = x - 2
        return np.sum(y * x)
    x = _leaf()
    y = astgrad.tensor([False, False, False])
    y.copy_(x - 2)
    (y * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), gradient(f, X), atol=1e-6)
