"""np.dot on tensors keeps its inputs, as @ does, so writing into its output is allowed.

``h = np.dot(W1, x); h[h < 0] = 0`` (a ReLU written in place, as numpy
courses write it) raised PyTorch's version-counter error in ``backward()``
because the dot node kept its output, which the write changed; PyTorch's mm
keeps only its inputs.  The gradient is compared with the hand-written one
and with central differences.  The refusals PyTorch shares (a tensor that
requires grad written into an ``np.zeros`` array or summed as a list by
``np.sum``) keep PyTorch's message.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from tests._numeric import gradient


def _relu_layer(W1, x, dot):
    h = dot(W1, x)
    h[h < 0] = 0
    return h


@pytest.mark.parametrize("dot", [np.dot, np.matmul, lambda a, b: a.dot(b)], ids=["np.dot", "np.matmul", "method"])
def test_relu_written_into_a_dot_output(dot):
    rng = np.random.default_rng(3)
    W1_value, x = rng.standard_normal((5, 4)), rng.standard_normal((4, 3))
    upstream = rng.standard_normal((5, 3))
    W1 = astgrad.tensor(W1_value, requires_grad=True)
    out = _relu_layer(W1, astgrad.tensor(x), dot)
    (out * astgrad.tensor(upstream)).sum().backward()
    hand = ((W1_value @ x > 0) * upstream) @ x.T  # dL/dh masked by the ReLU, times x^T
    np.testing.assert_allclose(W1.grad.numpy(), hand, rtol=1e-12)
    numeric = gradient(lambda w: np.sum(_relu_layer(w, x, np.dot) * upstream), W1_value)
    np.testing.assert_allclose(W1.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_dot_output_written_then_read_by_a_later_node():
    # the dot's output, changed in place, is read by tanh: tanh keeps its own output, not dot's
    rng = np.random.default_rng(4)
    a_value, b = rng.standard_normal((3, 3)), rng.standard_normal(3)
    a = astgrad.tensor(a_value, requires_grad=True)
    h = np.dot(a, astgrad.tensor(b))
    h[0] = 0.5
    np.tanh(h).sum().backward()
    h_value = a_value @ b
    h_value[0] = 0.5
    upstream = 1 - np.tanh(h_value) ** 2
    upstream[0] = 0.0
    np.testing.assert_allclose(a.grad.numpy(), np.outer(upstream, b), rtol=1e-12)


def test_a_grad_tensor_written_into_a_numpy_array_is_refused_as_pytorch_refuses():
    W = astgrad.tensor(np.ones(3), requires_grad=True)
    h = np.zeros((2, 3))
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        h[0] = W * 2
    h = torch.zeros((2, 3), dtype=torch.float64)  # what docs/tape.md says to write instead
    h[0] = W * 2
    h[1] = W * 3
    h.sum().backward()
    np.testing.assert_allclose(W.grad.numpy(), [5.0, 5.0, 5.0])


def test_np_sum_of_a_list_of_grad_tensors_is_refused_as_pytorch_refuses():
    W = astgrad.tensor(np.arange(3.0), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        np.sum([W * 2, W * 3])
    total = np.sum(np.stack([W * 2, W * 3]))  # what docs/tape.md says to write instead
    total.backward()
    np.testing.assert_allclose(W.grad.numpy(), [5.0, 5.0, 5.0])
