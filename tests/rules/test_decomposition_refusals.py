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


def qr_of(a):
    q, r = np.linalg.qr(a)
    return np.sum(q ** 3) + np.sum(r)


def least_squares(a):
    x, residuals, rank, s = np.linalg.lstsq(a, np.array([1.0, 2.0, 3.0]))
    return np.sum(x)


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_qr_and_lstsq_refuse_dependent_columns(engine):
    dependent = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    for f, message in ((qr_of, "linearly dependent"), (least_squares, "rank-deficient")):
        run = astgrad.grad(f) if engine == "generated" else (lambda a, f=f: taped(f, a))
        with pytest.raises(ValueError, match=message):
            run(dependent)


def test_matrix_power_closed_form():
    # d sum(A^2 * W) / dA = W A^T + A^T W
    a = np.array([[1.0, 2.0], [-0.5, 3.0]])
    w = np.array([[0.5, -1.0], [2.0, 1.5]])

    def f(a):
        return np.sum(np.linalg.matrix_power(a, 2) * w)

    np.testing.assert_allclose(astgrad.grad(f)(a), w @ a.T + a.T @ w)
    np.testing.assert_allclose(taped(f, a), w @ a.T + a.T @ w)


def eig_vectors_used(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.abs(v) ** 2 * np.arange(9.0).reshape(3, 3))


def eig_values_weighted(a):
    return np.sum(np.real(np.linalg.eigvals(a)) * np.array([1.0, 2.0, 3.0]))


def eig_values_summed(a):
    return np.sum(np.real(np.linalg.eigvals(a)))


@pytest.mark.parametrize("engine", ["generated", "tape"])
def test_eig_refuses_complex_vectors_and_single_repeated_values_but_not_their_sum(engine):
    rotation = np.array([[0.0, -2.0, 0.3], [1.5, 0.1, 0.2], [0.1, 0.4, 3.0]])  # a complex pair
    run = (lambda f, a: astgrad.grad(f)(a)) if engine == "generated" else taped
    with pytest.raises(ValueError, match="complex"):
        run(eig_vectors_used, rotation)
    with pytest.raises(ValueError, match="repeated eigenvalues"):
        run(eig_values_weighted, np.diag([2.0, 2.0, 1.0]))
    # the trace is the sum of the eigenvalues: its gradient is the identity, repeated or not
    np.testing.assert_allclose(run(eig_values_summed, np.diag([2.0, 2.0, 1.0])), np.eye(3), atol=1e-12)
