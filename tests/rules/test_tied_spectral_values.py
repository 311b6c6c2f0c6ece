"""numpy's eigenvalues and singular values where two are tied (or a singular value is 0): no silent number.

At a tie one eigenvalue alone has a kink: central differences average its two
sides (0.5 on the (0, 0) entry of ``eigvalsh(diag(1, 1, 2, 3))[0]``) and the
rule would return a number that depends on the eigenvectors LAPACK picked in
the eigenspace.  A loss that weighs the tied ones alike (their sum, the
trace, ``sum(w ** 2)``) is smooth there and keeps its gradient; one that
weighs them apart is refused, in every entry point and both engines, with
the name of the function called.  Forward mode refuses any tie: a tangent
cannot know the loss's weights.  Values close but not equal are no tie.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad import rules
from _numeric import directional, gradient

try:
    import scipy.linalg as scipy_linalg
except ImportError:  # scipy is optional
    scipy_linalg = None

ROTATION = np.linalg.qr(np.random.default_rng(5).standard_normal((4, 4)))[0]
DIAGONAL = np.diag([1.0, 1.0, 2.0, 3.0])
TIED = ROTATION @ DIAGONAL @ ROTATION.T
NEAR = ROTATION @ np.diag([1.0, 1.0 + 1e-6, 2.0, 3.0]) @ ROTATION.T
RIGHT = np.linalg.qr(np.random.default_rng(6).standard_normal((3, 3)))[0]
SINGULAR = ROTATION[:, :3] @ np.diag([3.0, 2.0, 0.0]) @ RIGHT  # 4 x 3, one singular value 0
EQUAL_SINGULAR = ROTATION[:, :3] @ np.diag([3.0, 2.0, 2.0]) @ RIGHT
NEAR_SINGULAR = ROTATION[:, :3] @ np.diag([3.0, 2.0, 2.0 + 1e-6]) @ RIGHT
WEIGHTS = np.array([1.0, 2.0, 3.0, 4.0])


def taped(f, a):
    leaf = astgrad.tensor(a, requires_grad=True)
    f(leaf).backward()
    return leaf.grad.numpy()


# -- eigenvalues: losses that weigh tied ones apart ----------------------------------------------------------------


def smallest_eigvalsh(a):
    return np.linalg.eigvalsh(a)[0]


def weighted_eigh_values(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * WEIGHTS)


def smallest_eigvalsh_upper(a):
    return np.linalg.eigvalsh(a, UPLO="U")[0]


@pytest.mark.parametrize("program, name", [(smallest_eigvalsh, "numpy.linalg.eigvalsh"),
                                           (smallest_eigvalsh_upper, "numpy.linalg.eigvalsh"),
                                           (weighted_eigh_values, "numpy.linalg.eigh")])
@pytest.mark.parametrize("a", [DIAGONAL, TIED], ids=["diagonal", "rotated"])
def test_a_loss_weighing_tied_eigenvalues_apart_is_refused_in_both_engines(program, name, a):
    with pytest.raises(ValueError, match=f"single repeated eigenvalues of {name}: two are equal"):
        astgrad.grad(program)(a)
    with pytest.raises(ValueError, match=f"single repeated eigenvalues of {name}"):
        taped(program, a)


def test_the_rule_would_have_returned_a_basis_dependent_number():
    """Why refuse: central differences see the kink's average, 0.5 on the (0, 0) entry, no one-sided slope."""
    assert gradient(smallest_eigvalsh, DIAGONAL)[0, 0] == pytest.approx(0.5, abs=1e-6)


def test_the_eigh_values_primitive_refuses_in_both_modes():
    entry = rules.lookup(rules.eigh_values)
    w = np.linalg.eigvalsh(TIED)
    with pytest.raises(ValueError, match="single repeated eigenvalues of numpy.linalg.eigh"):
        entry.vjp(WEIGHTS, w, TIED)
    with pytest.raises(ValueError, match="no tangent for the eigenvalues of numpy.linalg.eigh where two are equal"):
        entry.jvp_for(0)(np.ones((4, 4)), w, TIED)


# -- eigenvalues: symmetric losses of a tied group keep their gradient ---------------------------------------------


def sum_of_eigvalsh(a):
    return np.sum(np.linalg.eigvalsh(a))


def squares_of_eigh_values(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w ** 2)


def group_weighed_alike(a):
    return np.sum(np.linalg.eigvalsh(a) * np.array([1.0, 1.0, 2.0, 3.0]))


def upper_squares(a):
    return np.sum(np.linalg.eigvalsh(a, UPLO="U") ** 2)


@pytest.mark.parametrize("program", [sum_of_eigvalsh, squares_of_eigh_values, group_weighed_alike, upper_squares])
@pytest.mark.parametrize("a", [DIAGONAL, TIED], ids=["diagonal", "rotated"])
def test_a_symmetric_loss_of_tied_eigenvalues_matches_central_differences(program, a):
    expected = gradient(program, a)
    np.testing.assert_allclose(astgrad.grad(program)(a), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(taped(program, a), expected, rtol=1e-6, atol=1e-8)


def test_the_sum_of_eigenvalues_is_the_trace_read_from_one_triangle():
    np.testing.assert_allclose(astgrad.grad(sum_of_eigvalsh)(TIED), np.eye(4), atol=1e-12)


# -- eigenvalues: close is not tied --------------------------------------------------------------------------------


@pytest.mark.parametrize("program", [smallest_eigvalsh, weighted_eigh_values])
def test_eigenvalues_1_and_1_plus_1e_6_are_distinct(program):
    expected = gradient(program, NEAR, eps=1e-9)  # a step well inside the gap of 1e-6
    np.testing.assert_allclose(astgrad.grad(program)(NEAR), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(taped(program, NEAR), expected, rtol=1e-4, atol=1e-5)
    u = np.random.default_rng(1).standard_normal((4, 4))
    _, tangent = astgrad.jvp(program)(NEAR, u)
    assert tangent == pytest.approx(directional(program, NEAR, u, eps=1e-9), rel=1e-4, abs=1e-5)


def test_near_diagonal_tie_gets_the_closed_form():
    """``d w_0 / d a`` of a diagonal matrix with distinct entries is ``e_0 e_0^T``."""
    a = np.diag([1.0, 1.0 + 1e-6, 2.0, 3.0])
    np.testing.assert_allclose(astgrad.grad(smallest_eigvalsh)(a), np.diag([1.0, 0, 0, 0]), atol=1e-12)


# -- eigenvalues: forward mode refuses any tie ---------------------------------------------------------------------


@pytest.mark.parametrize("program, name", [(sum_of_eigvalsh, "numpy.linalg.eigvalsh"),
                                           (smallest_eigvalsh, "numpy.linalg.eigvalsh"),
                                           (squares_of_eigh_values, "numpy.linalg.eigh")])
def test_a_tangent_of_tied_eigenvalues_is_refused(program, name):
    with pytest.raises(ValueError, match=f"no tangent for the eigenvalues of {name} where two are equal"):
        astgrad.jvp(program)(TIED, np.ones((4, 4)))


# -- singular values -----------------------------------------------------------------------------------------------


def largest_svdvals(a):
    return np.linalg.svdvals(a)[-1]


def smallest_svd_values(a):
    return np.linalg.svd(a, compute_uv=False)[-1]


def weighted_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * WEIGHTS[:3])


def smallest_hermitian(a):
    return np.linalg.svd(a, compute_uv=False, hermitian=True)[-1]


def nuclear_svdvals(a):
    return np.sum(np.linalg.svdvals(a))


def nuclear_svd(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s)


def squares_of_svd_values(a):
    return np.sum(np.linalg.svd(a, compute_uv=False) ** 2)


def squares_of_svdvals(a):
    return np.sum(np.linalg.svdvals(a) ** 2)


SVD_APART = [(largest_svdvals, "numpy.linalg.svdvals"), (smallest_svd_values, "numpy.linalg.svd"),
             (weighted_svd, "numpy.linalg.svd")]


@pytest.mark.parametrize("program, name", SVD_APART)
def test_a_loss_weighing_equal_singular_values_apart_is_refused_in_both_engines(program, name):
    with pytest.raises(ValueError, match=f"no gradient for {name} where the loss weighs one of equal singular"):
        astgrad.grad(program)(EQUAL_SINGULAR)
    with pytest.raises(ValueError, match=f"no gradient for {name}"):
        taped(program, EQUAL_SINGULAR)


@pytest.mark.parametrize("program, name", [(nuclear_svdvals, "numpy.linalg.svdvals"), (nuclear_svd, "numpy.linalg.svd")])
def test_a_zero_singular_value_weighed_is_refused(program, name):
    """The nuclear norm at a rank-deficient matrix: ``|sigma|`` at 0."""
    with pytest.raises(ValueError, match=f"no gradient for {name} .*one that is zero"):
        astgrad.grad(program)(SINGULAR)
    with pytest.raises(ValueError, match="one that is zero"):
        taped(program, SINGULAR)


@pytest.mark.parametrize("program", [nuclear_svdvals, nuclear_svd, squares_of_svd_values])
def test_a_symmetric_loss_of_equal_singular_values_matches_central_differences(program):
    expected = gradient(program, EQUAL_SINGULAR)
    np.testing.assert_allclose(astgrad.grad(program)(EQUAL_SINGULAR), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(taped(program, EQUAL_SINGULAR), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("program", [squares_of_svd_values, squares_of_svdvals])
def test_a_zero_singular_value_weighed_zero_keeps_its_gradient(program):
    """``sum(s ** 2)`` is the squared Frobenius norm: its weight ``2 s`` is 0 at the zero singular value."""
    np.testing.assert_allclose(astgrad.grad(program)(SINGULAR), 2 * SINGULAR, atol=1e-12)


@pytest.mark.parametrize("program", [largest_svdvals, weighted_svd])
def test_singular_values_2_and_2_plus_1e_6_are_distinct(program):
    expected = gradient(program, NEAR_SINGULAR, eps=1e-9)
    np.testing.assert_allclose(astgrad.grad(program)(NEAR_SINGULAR), expected, rtol=1e-4, atol=1e-5)
    u = np.random.default_rng(2).standard_normal((4, 3))
    _, tangent = astgrad.jvp(program)(NEAR_SINGULAR, u)
    assert tangent == pytest.approx(directional(program, NEAR_SINGULAR, u, eps=1e-9), rel=1e-4, abs=1e-5)


def test_hermitian_svd_refuses_tied_singular_values_and_keeps_their_sum():
    """``svd(hermitian=True)`` of eigenvalues 1 and -1: singular values 1 and 1 (and 2, 3)."""
    a = ROTATION @ np.diag([1.0, -1.0, 2.0, 3.0]) @ ROTATION.T
    with pytest.raises(ValueError, match="no gradient for numpy.linalg.svd where the loss weighs one of equal"):
        astgrad.grad(smallest_hermitian)(a)
    with pytest.raises(ValueError, match="no gradient for numpy.linalg.svd"):
        taped(smallest_hermitian, a)

    def squares(a):
        return np.sum(np.linalg.svd(a, compute_uv=False, hermitian=True) ** 2)
    np.testing.assert_allclose(astgrad.grad(squares)(a), gradient(squares, a), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="no tangent for the singular values of numpy.linalg.svd where two are equal"):
        astgrad.jvp(squares)(a, np.ones((4, 4)))


@pytest.mark.parametrize("program, name", [(nuclear_svdvals, "numpy.linalg.svdvals"),
                                           (squares_of_svd_values, "numpy.linalg.svd"),
                                           (nuclear_svd, "numpy.linalg.svd")])
@pytest.mark.parametrize("a", [EQUAL_SINGULAR, SINGULAR], ids=["equal", "zero"])
def test_a_tangent_of_equal_or_zero_singular_values_is_refused(program, name, a):
    with pytest.raises(ValueError, match=f"no tangent for the singular values of {name} where two are equal or one"):
        astgrad.jvp(program)(a, np.ones((4, 3)))


def test_the_svd_values_primitive_refuses_in_both_modes():
    entry = rules.lookup(rules.svd_values)
    s = np.linalg.svd(EQUAL_SINGULAR, compute_uv=False)
    with pytest.raises(ValueError, match="no gradient for numpy.linalg.svd where"):
        entry.vjp(WEIGHTS[:3], s, EQUAL_SINGULAR)
    with pytest.raises(ValueError, match="no tangent for the singular values of numpy.linalg.svd"):
        entry.jvp_for(0)(np.ones((4, 3)), s, EQUAL_SINGULAR)


def scipy_squares(a):
    return np.sum(scipy_linalg.svdvals(a) ** 2)


def test_scipy_shares_the_rounding_of_a_zero_weight():
    """scipy.linalg's rules use the same helpers: ``sum(s ** 2)`` at a rank-deficient matrix is 2 a there too."""
    if scipy_linalg is None:
        pytest.skip("scipy is not installed")
    np.testing.assert_allclose(astgrad.grad(scipy_squares)(SINGULAR), 2 * SINGULAR, atol=1e-12)
