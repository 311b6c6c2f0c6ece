"""numpy code called with Tensors records on the tape (issue 2, numpy interoperability)."""

import numpy as np
import pytest

import astgrad.torch as torch
from _numeric import gradient


def numpy_loss(w, x):
    """Plain numpy, no torch names: this is what both engines run."""
    h = np.tanh(np.dot(x, w))
    return np.sum(h * h, axis=0).mean() + np.linalg.norm(w)


def test_plain_numpy_function_on_tensors_gives_the_numpy_gradient():
    rng = np.random.default_rng(5)
    w0, x0 = rng.normal(size=(3, 2)), rng.normal(size=(4, 3))
    w = torch.tensor(w0, requires_grad=True)
    out = numpy_loss(w, torch.tensor(x0))
    assert type(out).__name__ == "Tensor" and out.grad_fn is not None
    out.backward()
    expected = gradient(lambda moved: numpy_loss(moved, x0), w0)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6, atol=1e-8)
    assert float(out.detach()) == pytest.approx(numpy_loss(w0, x0), rel=1e-12)


def test_mixing_arrays_and_tensors():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    a = np.array([3.0, 4.0])
    for y in (x * a, a * x, np.multiply(a, x), x + a, a - x):
        assert type(y).__name__ == "Tensor" and y.requires_grad
    (a * x).sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_np_asarray_refuses_a_tensor_that_requires_grad_while_grad_mode_is_on():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^Can't call numpy\(\) on Tensor that requires grad\. "
                                           r"Use tensor\.detach\(\)\.numpy\(\) instead\.$"):
        np.asarray(x)
    with torch.no_grad():
        assert np.asarray(x).tolist() == [1.0, 1.0]
    assert x.numpy(force=True).tolist() == [1.0, 1.0]
    assert np.asarray(torch.ones(2)).dtype == np.float32


def test_numpy_shares_memory():
    x = torch.ones(2, requires_grad=True)
    arr = x.detach().numpy()
    arr[0] = 5.0
    assert repr(x) == "tensor([5., 1.], requires_grad=True)"


def test_nondifferentiable_numpy_calls_return_plain_results():
    x = torch.tensor([3.0, 1.0, 2.0], requires_grad=True)
    assert np.argmax(x).item() == 0
    assert np.shape(x) == (3,)
    assert (np.all(x > 0)).item() is True


def test_unknown_numpy_function_names_itself():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="numpy.*defvjp"):
        np.unwrap(x)
