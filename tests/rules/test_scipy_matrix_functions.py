"""scipy.linalg.sqrtm and logm: their derivatives against the equations they solve, and where they have none."""

import numpy as np
import pytest

sla = pytest.importorskip("scipy.linalg")

import astgrad  # noqa: E402
import astgrad.torch as torch  # noqa: E402

RNG = np.random.default_rng(3)
A = np.eye(3) + RNG.standard_normal((3, 3)) * 0.2
E = RNG.standard_normal((3, 3))


def sqrt_along(t):
    return sla.sqrtm(A + t * E)


def log_along(t):
    return sla.logm(A + t * E)


def test_the_tangent_of_sqrtm_solves_sylvesters_equation():
    """S = sqrtm(A) means S S = A, so its tangent X satisfies X S + S X = E."""
    _, X = astgrad.jvp(sqrt_along)(0.0, 1.0)
    S = sla.sqrtm(A)
    np.testing.assert_allclose(X @ S + S @ X, E, atol=1e-10)


def test_the_tangent_of_logm_is_the_inverse_of_expms():
    """expm(logm(A)) = A: moving logm(A) by its tangent moves expm by E (expm's own derivative, checked apart)."""
    _, X = astgrad.jvp(log_along)(0.0, 1.0)
    L = sla.logm(A)
    _, back = astgrad.jvp(lambda t: sla.expm(L + t * X))(0.0, 1.0)
    np.testing.assert_allclose(back, E, atol=1e-9)


def test_a_diagonal_matrix_gives_the_scalar_derivatives():
    d = np.array([0.5, 2.0, 4.0])
    g_sqrt = astgrad.grad(lambda a: np.sum(sla.sqrtm(a)))(np.diag(d))
    g_log = astgrad.grad(lambda a: np.sum(sla.logm(a)))(np.diag(d))
    np.testing.assert_allclose(np.diag(g_sqrt), 0.5 / np.sqrt(d), rtol=1e-10)
    np.testing.assert_allclose(np.diag(g_log), 1.0 / d, rtol=1e-10)


def test_the_tape_and_generated_code_agree():
    W = RNG.standard_normal((3, 3))
    generated = astgrad.grad(lambda a: np.sum(W * sla.sqrtm(a)) + np.sum(W * sla.logm(a)))(A)
    t = torch.tensor(A.copy(), requires_grad=True)
    loss = (torch.tensor(W) * astgrad.rules.apply(sla.sqrtm, t)).sum() + \
        (torch.tensor(W) * astgrad.rules.apply(sla.logm, t)).sum()
    loss.backward()
    np.testing.assert_allclose(t.grad.numpy(), generated, rtol=1e-9)


@pytest.mark.parametrize("function", [sla.sqrtm, sla.logm], ids=["sqrtm", "logm"])
def test_a_negative_eigenvalue_is_refused_not_differentiated(function):
    """The principal root and logarithm of diag(-1, 2) are complex: no real gradient to give."""
    with pytest.raises(ValueError, match="complex result|negative real axis"):
        astgrad.grad(lambda a: np.real(np.sum(function(a))))(np.diag([-1.0, 2.0]))


@pytest.mark.parametrize("function", [sla.sqrtm, sla.logm], ids=["sqrtm", "logm"])
def test_a_singular_matrix_is_refused(function):
    with pytest.raises(ValueError, match="no derivative at this matrix"):
        astgrad.grad(lambda a: np.sum(function(a)))(np.diag([0.0, 2.0]))
