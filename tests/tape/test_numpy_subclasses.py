"""np.matrix and masked arrays given to the tape: a matrix is read for its numbers, as PyTorch reads one
(``*`` stays elementwise, also in backward); a masked array is refused, never its masked entries counted."""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from tests._numeric import gradient

M = np.matrix([[1.0, 2.0], [3.0, 5.0]])
A = np.asarray(M)
X = np.array([[0.5, -1.0], [2.0, 0.25]])


def _leaf():
    return astgrad.tensor(X.copy(), dtype=np.float64, requires_grad=True)


@pytest.mark.parametrize("op, reference", [
    (lambda t: M * t, lambda x: A * x),
    (lambda t: t * M, lambda x: x * A),
    (lambda t: np.multiply(M, t), lambda x: A * x),
    (lambda t: M @ t, lambda x: A @ x),
    (lambda t: t @ M, lambda x: x @ A),
    (lambda t: t / M, lambda x: x / A),
    (lambda t: M - t ** 2, lambda x: A - x ** 2),
    (lambda t: np.maximum(t, M), lambda x: np.maximum(x, A)),
])
def test_a_matrix_operand_is_read_for_its_numbers(op, reference):
    t = _leaf()
    out = op(t)
    np.testing.assert_allclose(out.detach().numpy(), reference(X))
    out.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), gradient(lambda x: np.sum(reference(x)), X), rtol=1e-6, atol=1e-8)


def test_a_tensor_made_from_a_matrix_holds_a_plain_array():
    for make in (lambda m: astgrad.tensor(m, requires_grad=True), torch.as_tensor, torch.from_numpy):
        t = make(M)
        assert type(t.detach().numpy()) is np.ndarray
    t = astgrad.tensor(M, requires_grad=True)
    (t * t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), 2 * A)  # elementwise, as torch.tensor(m) * itself


def test_a_masked_array_is_refused():
    masked = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    t = astgrad.tensor([1.0, 1.0, 1.0], requires_grad=True)
    for make in (astgrad.tensor, torch.as_tensor, torch.from_numpy, lambda m: t * m, lambda m: t + m,
                 lambda m: np.add(t, m), lambda m: np.where(m > 1, t, m)):
        with pytest.raises(TypeError, match="MaskedArray"):
            make(masked)
