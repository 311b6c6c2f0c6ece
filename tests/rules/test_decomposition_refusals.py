"""Decompositions refuse where the derivative does not exist, in both engines, and still differentiate
what is defined there (the singular values of a matrix whose singular vectors are not determined)."""

from __future__ import annotations

import numpy as np
import pytest

import astgrad


def uses_vectors(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u ** 2 * np.arange(u.shape[-1]))


def uses_full_vectors(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(vh[-1] ** 2 * np.arange(a.shape[-1]))


def uses_values(a):
    u, s, vh = np.linalg.svd(a)
    return np.sum(s)


def taped(f, a):
    t = astgrad.tensor(a, requires_grad=True)
    f(t).backward()
    return t.grad.numpy()


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_svd_refuses_vectors_of_repeated_singular_values(engine):
    a = np.diag([2.0, 2.0, 1.0])
    run = astgrad.grad(uses_vectors) if engine == "generated" else (lambda a: taped(uses_vectors, a))
    with pytest.raises(ValueError, match="two singular values are equal"):
        run(a)


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_svd_refuses_the_arbitrary_vectors_of_full_matrices(engine):
    a = np.arange(6.0).reshape(2, 3) + np.eye(2, 3)
    run = astgrad.grad(uses_full_vectors) if engine == "generated" else (lambda a: taped(uses_full_vectors, a))
    with pytest.raises(ValueError, match="full_matrices=False"):
        run(a)


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_singular_values_of_the_identity_still_have_their_gradient(engine):
    # d sum(s) / dA = U V^T, the identity for A = I (any U = V the decomposition picks gives the same)
    a = np.eye(3)
    run = astgrad.grad(uses_values) if engine == "generated" else (lambda a: taped(uses_values, a))
    np.testing.assert_allclose(run(a), np.eye(3), atol=1e-12)
