"""Helpers for the taped-engine tests: a float64 central-difference checker, printed addresses masked."""

import re

import numpy as np

import astgrad.torch as torch
from _numeric import gradient

ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def mask_addresses(text: str) -> str:
    """Object addresses differ on every run; compare everything else."""
    return ADDRESS.sub("0x...", text)


def numeric_vjp(f, arrays, weight, eps=1e-6):
    """Central differences of ``sum(f(*arrays) * weight)`` for each array (``f`` runs on tensors, untaped)."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    grads = []
    for k, a in enumerate(arrays):
        def value(moved, k=k):
            point = [moved if j == k else x for j, x in enumerate(arrays)]
            return _evaluate(f, point, weight)
        grads.append(gradient(value, a, eps))
    return grads


def _evaluate(f, arrays, weight):
    with torch.no_grad():
        out = f(*[torch.tensor(a) for a in arrays])
    return float(np.sum(np.asarray(out._data, dtype=np.float64) * weight))


def check_grad(f, *arrays, seed=0, rtol=1e-6, atol=1e-7):
    """Compare the taped vector-Jacobian product of ``f`` with central differences (float64).

    The output is weighted by a fixed random tensor, so the test checks a
    vector-Jacobian product and not only the gradient of a plain sum.
    Returns the analytic gradients.
    """
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = f(*leaves)
    weight = np.random.default_rng(seed).uniform(0.5, 1.5, size=out.shape)
    (out * torch.tensor(weight)).sum().backward()
    expected = numeric_vjp(f, arrays, weight)
    for leaf, num in zip(leaves, expected):
        assert leaf.grad is not None
        assert leaf.grad.dtype == torch.float64
        assert leaf.grad.shape == leaf.shape
        np.testing.assert_allclose(leaf.grad.numpy(), num, rtol=rtol, atol=atol)
    return [leaf.grad for leaf in leaves]


def grad_of(values, f, dtype=None):
    """``repr`` of the gradient of ``f(x).sum()`` at a leaf made from ``values``."""
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    f(x).sum().backward()
    return repr(x.grad)
