"""Code as people write it: validation raises and asserts run in the primal, anywhere.

A ``raise`` in a validation branch that never runs, or an ``assert`` in a
loop or a called function, has no gradient: it runs in the primal as
written, and the adjoint has nothing for it.  A branch that does raise
raises the user's own error from the gradient call.  Each gradient is
compared with a hand-written one and with finite differences.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

RNG = np.random.default_rng(3)
W = RNG.standard_normal((4, 3))
X = RNG.standard_normal((5, 4))


def affine_forward(x, w, b):
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"x has {x.shape[1]} columns, w has {w.shape[0]} rows")
    out = x @ w + b
    cache = (x, w, b)
    return out, cache


def relu_forward(x):
    assert x.ndim == 2, "a batch of rows"
    out = np.maximum(x, 0.0)
    return out, x


def loss(w, b, x, reduction="mean"):
    if reduction not in ("mean", "sum"):
        raise ValueError("reduction must be 'mean' or 'sum'")
    h, cache = affine_forward(x, w, b)
    a, _ = relu_forward(h)
    total = 0.0
    for i in range(a.shape[0]):
        assert np.all(a[i] >= 0.0)
        total = total + np.sum(a[i] ** 2)
    if reduction == "mean":
        return total / a.shape[0]
    return total


def loss_grad(w, b, x, reduction="mean"):
    h = x @ w + b
    a = np.maximum(h, 0.0)
    scale = 1.0 / a.shape[0] if reduction == "mean" else 1.0
    dh = 2.0 * a * scale * (h > 0)
    return x.T @ dh, dh.sum(axis=0)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_validation_raises_that_never_run(reduction):
    b = 0.1 * np.ones(3)
    dw, db = astgrad.grad(loss, wrt=(0, 1))(W, b, X, reduction)
    want_w, want_b = loss_grad(W, b, X, reduction)
    np.testing.assert_allclose(dw, want_w, rtol=1e-10)
    np.testing.assert_allclose(db, want_b, rtol=1e-10)
    np.testing.assert_allclose(dw, numeric_grad(lambda w: loss(w, b, X, reduction), (W,), 0), rtol=1e-5, atol=1e-7)


def test_a_raise_that_runs_raises_the_users_error():
    with pytest.raises(ValueError, match="reduction must be"):
        astgrad.grad(loss)(W, np.zeros(3), X, "max")
    with pytest.raises(ValueError, match="x has 3 columns"):
        astgrad.grad(loss)(W, np.zeros(3), X[:, :3])


def test_an_assert_that_fails_raises_assertion_error():
    with pytest.raises(AssertionError, match="a batch of rows"):
        astgrad.grad(lambda w: relu_forward(w[0])[0].sum())(W)
