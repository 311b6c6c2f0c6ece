"""scipy.linalg's LU pair, eigh, eigvalsh and svd: gradients and tangents in both engines, and what they refuse.

The references are central differences of the same program, and the
gradient of the numpy program it stands for (``lu_factor`` then ``lu_solve``
is ``np.linalg.solve``; scipy's eigh and svd are numpy's).  The pivots of
``lu_factor`` are integers, constant where a gradient exists: samples pivot
for real (a permutation that is not its own inverse), so a wrong row order
shows.  ``overwrite_*`` flags let scipy write into the array a gradient reads:
generated code refuses them on a name and drops them on a new array; the
tape, which cannot drop them, refuses them when it differentiates.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad import rules
from _numeric import directional, gradient

sla = pytest.importorskip("scipy.linalg")

RNG = np.random.default_rng(11)
#: rows 0, 1, 2, 3 of a diagonally dominant matrix moved to 2, 0, 3, 1: partial pivoting undoes a 4-cycle
PIVOTED = (RNG.standard_normal((4, 4)) * 0.3 + 2 * np.eye(4))[[1, 3, 0, 2]]
B = RNG.standard_normal((4, 2))
W = RNG.uniform(0.5, 1.5, (4, 2))
SYMMETRIC = RNG.standard_normal((4, 4))
WIDE = RNG.standard_normal((3, 5))


def _rows_of(piv):
    rows = np.arange(len(piv))
    for i, p in enumerate(piv):
        rows[[i, p]] = rows[[p, i]]
    return rows


def test_the_sample_pivots_with_a_permutation_that_is_not_its_own_inverse():
    rows = _rows_of(sla.lu_factor(PIVOTED)[1])
    assert not np.array_equal(rows, np.arange(4)) and not np.array_equal(rows[rows], np.arange(4))


# -- lu_factor, lu_solve ---------------------------------------------------------------------------------------


def factor_once_solve(a, b):
    lu, piv = sla.lu_factor(a)
    return np.sum(W * np.sin(sla.lu_solve((lu, piv), b)))


def factor_once_solve_transposed(a, b):
    factor = sla.lu_factor(a, check_finite=False)
    return np.sum(W * np.sin(sla.lu_solve(factor, b, trans=1, check_finite=False)))


def factor_once_solve_conjugate_transposed(a, b):
    return np.sum(W * np.sin(sla.lu_solve(sla.lu_factor(a), b, 2)))


def numpy_solve(a, b):
    return np.sum(W * np.sin(np.linalg.solve(a, b)))


def numpy_solve_transposed(a, b):
    return np.sum(W * np.sin(np.linalg.solve(a.T, b)))


@pytest.mark.parametrize("program, numpy_program", [
    (factor_once_solve, numpy_solve), (factor_once_solve_transposed, numpy_solve_transposed),
    (factor_once_solve_conjugate_transposed, numpy_solve_transposed)])
def test_factor_then_solve_matches_finite_differences_and_numpy_solve(program, numpy_program):
    got = astgrad.grad(program, wrt=(0, 1))(PIVOTED, B)
    want = astgrad.grad(numpy_program, wrt=(0, 1))(PIVOTED, B)
    numeric = (gradient(lambda a: program(a, B), PIVOTED), gradient(lambda b: program(PIVOTED, b), B))
    for g, w, n in zip(got, want, numeric):
        np.testing.assert_allclose(g, n, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_factor_then_solve_forward_mode_matches_finite_differences():
    ua, ub = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 2))
    value, tangent = astgrad.jvp(factor_once_solve, wrt=(0, 1))(PIVOTED, B, (ua, ub))
    assert value == pytest.approx(factor_once_solve(PIVOTED, B))
    numeric = directional(lambda s: factor_once_solve(PIVOTED + s * ua, B + s * ub), 0.0, 1.0)
    assert tangent == pytest.approx(numeric, rel=1e-6)


def test_a_vector_right_hand_side():
    def program(a, b):
        return np.sum(sla.lu_solve(sla.lu_factor(a), b) ** 2)
    b = B[:, 0].copy()
    got = astgrad.grad(program, wrt=(0, 1))(PIVOTED, b)
    np.testing.assert_allclose(got[0], gradient(lambda a: program(a, b), PIVOTED), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[1], gradient(lambda v: program(PIVOTED, v), b), rtol=1e-6, atol=1e-8)


LU, PIV = sla.lu_factor(PIVOTED)


@pytest.mark.parametrize("trans", [0, 1])
def test_the_gradient_of_the_factor_itself_with_its_pivots_held(trans):
    """lu_solve's gradient in ``lu`` alone: ``L`` below the diagonal, ``U`` on and above it, ``piv`` fixed."""
    def loss(lu):
        return np.sum(W * sla.lu_solve((lu, PIV), B, trans=trans))
    ans = sla.lu_solve((LU, PIV), B, trans=trans)
    (g_lu, g_piv), _ = rules.lookup(sla.lu_solve).vjp(W, ans, (LU, PIV), B, trans=trans)
    assert g_piv is None
    np.testing.assert_allclose(g_lu, gradient(loss, LU), rtol=1e-6, atol=1e-8)
    u = RNG.standard_normal((4, 4))
    tangent = rules.lookup(sla.lu_solve).jvp_for(0)((u, None), ans, (LU, PIV), B, trans=trans)
    np.testing.assert_allclose(np.sum(W * tangent), directional(loss, LU, u), rtol=1e-6)


def test_lu_factor_alone_in_both_modes():
    def program(a):
        lu, piv = sla.lu_factor(a)
        return np.sum(np.cos(lu)) + np.sum(piv * 0.5)
    np.testing.assert_allclose(astgrad.grad(program)(PIVOTED), gradient(program, PIVOTED), rtol=1e-6, atol=1e-8)
    u = RNG.standard_normal((4, 4))
    _, tangent = astgrad.jvp(program)(PIVOTED, u)
    assert tangent == pytest.approx(directional(program, PIVOTED, u), rel=1e-6)


def lu_program(a):
    p, lower, upper = sla.lu(a)
    return np.sum(np.sin(lower) * W[:, :1]) + np.sum(upper ** 3) + np.sum(p)


def lu_permuted_program(a):
    permuted, upper = sla.lu(a, permute_l=True, check_finite=False)
    return np.sum(np.sin(permuted) * W[:, :1]) + np.sum(upper ** 3)


def lu_indices_program(a):
    p, lower, upper = sla.lu(a, p_indices=True)
    return np.sum(np.sin(lower[p]) * W[:, :1]) + np.sum(upper ** 3)


def lu_upper_program(a):
    return np.sum(sla.lu(a)[2] ** 3)


@pytest.mark.parametrize("program", [lu_program, lu_permuted_program, lu_indices_program, lu_upper_program])
def test_lu_in_both_modes(program):
    np.testing.assert_allclose(astgrad.grad(program)(PIVOTED), gradient(program, PIVOTED), rtol=1e-6, atol=1e-8)
    u = RNG.standard_normal((4, 4))
    _, tangent = astgrad.jvp(program)(PIVOTED, u)
    assert tangent == pytest.approx(directional(program, PIVOTED, u), rel=1e-6)


def test_a_singular_matrix_is_refused():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(ValueError, match="singular"):
        rules.lookup(sla.lu_factor).vjp((np.ones((2, 2)), None), sla.lu_factor(singular), singular)


def test_a_non_square_factor_is_refused():
    with pytest.raises(ValueError, match="square"):
        rules.lookup(sla.lu).vjp((None, np.ones((3, 3)), np.ones((3, 5))), sla.lu(WIDE), WIDE)


# -- overwrite flags -------------------------------------------------------------------------------------------


def factor_overwriting_a_name(a, b):
    lu, piv = sla.lu_factor(a, overwrite_a=True)
    return np.sum(sla.lu_solve((lu, piv), b) * W) + np.sum(a)


def solve_overwriting_a_name(a, b):
    lu, piv = sla.lu_factor(a)
    c = b * 2.0
    x = sla.lu_solve((lu, piv), c, overwrite_b=True)
    return np.sum(x * c)


def eigh_overwriting_a_name(a):
    w = sla.eigh(a, eigvals_only=True, overwrite_a=True)
    return np.sum(w) + np.sum(a * a)


@pytest.mark.parametrize("program, args, flag", [
    (factor_overwriting_a_name, (PIVOTED, B), "overwrite_a=True"),
    (solve_overwriting_a_name, (PIVOTED, B), "overwrite_b=True"),
    (eigh_overwriting_a_name, (SYMMETRIC,), "overwrite_a=True")])
def test_an_overwrite_flag_on_a_name_is_refused_by_generated_code(program, args, flag):
    with pytest.raises(astgrad.TransformError, match=flag):
        astgrad.grad(program)(*args)


def test_an_overwrite_flag_on_a_new_array_is_dropped():
    def program(a, b):
        lu, piv = sla.lu_factor(a * 1.0, overwrite_a=True)
        return np.sum(W * sla.lu_solve((lu, piv), b + 0.0, overwrite_b=True))
    got = astgrad.grad(program, wrt=(0, 1))(PIVOTED, B)
    np.testing.assert_allclose(got[0], gradient(lambda a: program(a, B), PIVOTED), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got[1], gradient(lambda b: program(PIVOTED, b), B), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("fn", [sla.eigvalsh, sla.svdvals])
def test_the_tape_refuses_an_overwrite_flag_it_cannot_drop(fn):
    # a Fortran-ordered float64 array is one LAPACK writes into in place
    a = astgrad.tensor(np.asfortranarray(SYMMETRIC + SYMMETRIC.T), requires_grad=True)
    out = rules.apply(fn, a, overwrite_a=True)
    with pytest.raises(ValueError, match="overwrite_a"):
        out.sum().backward()


def test_the_tape_refuses_an_overwrite_flag_of_the_existing_solvers():
    # found writing these tests: solve(..., overwrite_a=True) on the tape gave the gradient of the overwritten a
    a = astgrad.tensor(np.asfortranarray(PIVOTED), requires_grad=True)
    x = rules.apply(sla.solve, a, B[:, 0], overwrite_a=True)
    with pytest.raises(ValueError, match="overwrite_a"):
        x.sum().backward()


# -- eigh, eigvalsh --------------------------------------------------------------------------------------------


def eigh_program(a):
    w, v = sla.eigh(a)
    return np.sum(w * np.arange(1.0, 5.0)) + np.sum(v ** 2 * W[:, :1])


def eigh_upper_program(a):
    w, v = sla.eigh(a, lower=False, driver="evr", check_finite=False)
    return np.sum(w * np.arange(1.0, 5.0)) + np.sum(v ** 2 * W[:, :1])


def numpy_eigh_program(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * np.arange(1.0, 5.0)) + np.sum(v ** 2 * W[:, :1])


def numpy_eigh_upper_program(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return np.sum(w * np.arange(1.0, 5.0)) + np.sum(v ** 2 * W[:, :1])


def eigvalsh_program(a):
    return np.sum(sla.eigvalsh(a, lower=False) ** 2) + np.sum(sla.eigh(a, eigvals_only=True) * np.arange(4.0))


@pytest.mark.parametrize("program, numpy_program", [(eigh_program, numpy_eigh_program),
                                                    (eigh_upper_program, numpy_eigh_upper_program),
                                                    (eigvalsh_program, None)])
def test_eigh_matches_finite_differences_and_numpy(program, numpy_program):
    """The matrix need not be symmetric: scipy reads one triangle, and the gradient is zero on the other."""
    got = astgrad.grad(program)(SYMMETRIC)
    np.testing.assert_allclose(got, gradient(program, SYMMETRIC), rtol=1e-6, atol=1e-8)
    if numpy_program is not None:
        np.testing.assert_allclose(got, astgrad.grad(numpy_program)(SYMMETRIC), rtol=1e-9, atol=1e-12)
    u = RNG.standard_normal((4, 4))
    _, tangent = astgrad.jvp(program)(SYMMETRIC, u)
    assert tangent == pytest.approx(directional(program, SYMMETRIC, u), rel=1e-6)


def test_the_upper_triangle_read_gets_the_whole_gradient():
    got = astgrad.grad(eigh_upper_program)(SYMMETRIC)
    assert np.all(np.tril(got, -1) == 0) and np.any(np.triu(got, 1) != 0)


DEGENERATE = np.diag([1.0, 1.0, 2.0, 3.0])


def eigenvectors_and_trace(a):
    w, v = sla.eigh(a)
    return np.sum(w) + np.sum(v ** 2 * W[:, :1])


def test_eigenvectors_of_a_repeated_eigenvalue_are_refused_in_both_modes():
    with pytest.raises(ValueError, match="no gradient for the eigenvectors .* two eigenvalues are equal"):
        astgrad.grad(eigenvectors_and_trace)(DEGENERATE)
    with pytest.raises(ValueError, match="where two are equal"):
        astgrad.jvp(eigenvectors_and_trace)(DEGENERATE, np.ones((4, 4)))


def squares_of_eigenvalues(a):
    return np.sum(sla.eigvalsh(a) ** 2)


ROTATION = np.linalg.qr(RNG.standard_normal((4, 4)))[0]


def test_a_symmetric_function_of_repeated_eigenvalues_has_its_gradient():
    """``sum(w ** 2)`` is the squared norm: smooth across the tie, rounding apart in the computed w."""
    np.testing.assert_allclose(astgrad.grad(squares_of_eigenvalues)(DEGENERATE), 2 * DEGENERATE, atol=1e-12)
    rotated = ROTATION @ DEGENERATE @ ROTATION.T
    np.testing.assert_allclose(astgrad.grad(squares_of_eigenvalues)(rotated), gradient(squares_of_eigenvalues, rotated),
                               rtol=1e-6, atol=1e-8)


def smallest_eigenvalue(a):
    return sla.eigvalsh(a)[0]


def weighted_eigenvalues(a):
    w, v = sla.eigh(a)
    return np.sum(w * np.arange(4.0))


def test_one_of_repeated_eigenvalues_alone_is_refused():
    """At the tie the smallest eigenvalue has a kink: central differences give 0.5 on the diagonal, one basis 1."""
    for program in (smallest_eigenvalue, weighted_eigenvalues):
        with pytest.raises(ValueError, match="single repeated eigenvalues"):
            astgrad.grad(program)(DEGENERATE)
    leaf = astgrad.tensor(DEGENERATE, requires_grad=True)
    with pytest.raises(ValueError, match="single repeated eigenvalues"):
        (rules.apply(sla.eigvalsh, leaf) * np.arange(4.0)).sum().backward()


def test_a_tangent_of_repeated_eigenvalues_is_refused():
    with pytest.raises(ValueError, match="no tangent for the eigenvalues"):
        astgrad.jvp(squares_of_eigenvalues)(DEGENERATE, np.ones((4, 4)))


def eigh_generalized(a):
    return np.sum(sla.eigh(a, np.eye(4), eigvals_only=True))


def eigh_by_index(a):
    return np.sum(sla.eigh(a, eigvals_only=True, subset_by_index=[0, 1]))


def eigvalsh_by_value(a):
    return np.sum(sla.eigvalsh(a, subset_by_value=[-10.0, 0.0]))


@pytest.mark.parametrize("program, message", [
    (eigh_generalized, "generalized"), (eigh_by_index, "subset_by_index"), (eigvalsh_by_value, "subset_by_value")])
def test_what_eigh_does_not_differentiate_is_refused(program, message):
    with pytest.raises(ValueError, match=message):
        astgrad.grad(program)(SYMMETRIC - 5 * np.eye(4))


def test_the_tape_refuses_it_too():
    a = astgrad.tensor(SYMMETRIC - 5 * np.eye(4), requires_grad=True)
    with pytest.raises(ValueError, match="subset_by_index"):
        rules.apply(sla.eigvalsh, a, subset_by_index=[0, 1]).sum().backward()


def test_an_eigvals_only_flag_that_is_not_a_literal_is_refused():
    def program(a, only):
        w = sla.eigh(a, eigvals_only=only)
        return np.sum(w[1:3]) + np.sum(w[0] ** 2)
    with pytest.raises(ValueError, match="as a literal"):
        astgrad.grad(program)(SYMMETRIC, True)


# -- svd ---------------------------------------------------------------------------------------------------------


def svd_program(a):
    u, s, vh = sla.svd(a, full_matrices=False, lapack_driver="gesvd")
    return np.sum(u ** 2 * np.arange(3.0)) + np.sum(s * np.arange(1.0, 4.0)) + np.sum(vh ** 2 * W[:3, :1])


def numpy_svd_program(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u ** 2 * np.arange(3.0)) + np.sum(s * np.arange(1.0, 4.0)) + np.sum(vh ** 2 * W[:3, :1])


def svd_values_program(a):
    return np.sum(sla.svd(a, compute_uv=False) ** 3) + np.sum(sla.svdvals(a) * np.arange(3.0))


def svd_square_full_program(a):
    u, s, vh = sla.svd(a)
    return np.sum(u ** 2 * W[:3, :1]) + np.sum(s) + np.sum(vh ** 2 * W[1:4, :1])


@pytest.mark.parametrize("program, numpy_program, x", [
    (svd_program, numpy_svd_program, WIDE), (svd_program, numpy_svd_program, WIDE.T.copy()),
    (svd_values_program, None, WIDE), (svd_square_full_program, None, WIDE[:, :3].copy())])
def test_svd_matches_finite_differences_and_numpy(program, numpy_program, x):
    got = astgrad.grad(program)(x)
    np.testing.assert_allclose(got, gradient(program, x), rtol=1e-6, atol=1e-8)
    if numpy_program is not None:
        np.testing.assert_allclose(got, astgrad.grad(numpy_program)(x), rtol=1e-9, atol=1e-12)
    u = RNG.standard_normal(x.shape)
    _, tangent = astgrad.jvp(program)(x, u)
    assert tangent == pytest.approx(directional(program, x, u), rel=1e-6)


def test_the_arbitrary_columns_of_full_matrices_are_refused():
    def program(a):
        u, s, vh = sla.svd(a)
        return np.sum(vh ** 2 * np.arange(5.0))
    with pytest.raises(ValueError, match="full_matrices=True on a non-square matrix"):
        astgrad.grad(program)(WIDE)


def test_singular_vectors_of_repeated_singular_values_are_refused():
    def program(a):
        u, s, vh = sla.svd(a)
        return np.sum(u ** 2 * np.arange(3.0))
    with pytest.raises(ValueError, match="two singular values are equal"):
        astgrad.grad(program)(np.diag([2.0, 2.0, 1.0]))


def largest_singular_value(a):
    return sla.svdvals(a)[0]


def nuclear_norm(a):
    return np.sum(sla.svd(a, compute_uv=False))


def test_one_of_equal_singular_values_alone_is_refused():
    with pytest.raises(ValueError, match="one of equal singular values"):
        astgrad.grad(largest_singular_value)(np.diag([2.0, 2.0, 1.0]))


def test_a_zero_singular_value_weighed_is_refused_and_a_sum_of_equal_ones_is_not():
    with pytest.raises(ValueError, match="one that is zero"):
        astgrad.grad(nuclear_norm)(np.diag([2.0, 1.0, 0.0]))
    rotated = np.linalg.qr(ROTATION[:3, :3])[0] @ np.diag([2.0, 2.0, 1.0])
    np.testing.assert_allclose(astgrad.grad(nuclear_norm)(rotated), gradient(nuclear_norm, rotated), rtol=1e-6,
                               atol=1e-8)
    with pytest.raises(ValueError, match="no tangent for the singular values"):
        astgrad.jvp(nuclear_norm)(rotated, np.ones((3, 3)))


# -- the tape, through rules.apply -------------------------------------------------------------------------------


def eigvalsh_upper(a):
    return np.sum(sla.eigvalsh(a, lower=False) ** 2 * np.arange(1.0, 5.0))


def eigh_values_by_evd(a):
    return np.sum(sla.eigh(a, eigvals_only=True, driver="evd") ** 2 * np.arange(1.0, 5.0))


def svd_values(a):
    return np.sum(sla.svd(a, compute_uv=False) ** 2 * np.arange(1.0, 4.0))


def svdvals_unchecked(a):
    return np.sum(sla.svdvals(a, check_finite=False) ** 2 * np.arange(1.0, 4.0))


@pytest.mark.parametrize("program, fn, keywords, x", [
    (eigvalsh_upper, sla.eigvalsh, {"lower": False}, SYMMETRIC),
    (eigh_values_by_evd, sla.eigh, {"eigvals_only": True, "driver": "evd"}, SYMMETRIC),
    (svd_values, sla.svd, {"compute_uv": False}, WIDE), (svdvals_unchecked, sla.svdvals, {"check_finite": False}, WIDE)])
def test_the_tape_matches_finite_differences_and_generated_code(program, fn, keywords, x):
    weights = np.arange(1.0, 1.0 + min(x.shape))
    leaf = astgrad.tensor(x, requires_grad=True)
    (rules.apply(fn, leaf, **keywords) ** 2 * weights).sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), gradient(program, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(leaf.grad.numpy(), astgrad.grad(program)(x), rtol=1e-10, atol=1e-12)


# -- a tuple's outputs given the zero generated code writes where a path has no gradient yet ----------------------


def eigh_in_a_loop(a, last):
    total = 0.0
    for k in range(2):
        w, v = sla.eigh(a)
        if k < last:
            total = total + np.sum(v ** 2 * W[:, :1]) + np.sum(w)
    return total


def svd_in_a_loop(a, last):
    total = 0.0
    for k in range(2):
        u, s, vh = sla.svd(a)
        if k < last:
            total = total + np.sum(u ** 2 * W[:, :1]) + np.sum(s)
    return total


def lu_in_a_loop(a, last):
    total = 0.0
    for k in range(2):
        p, lower, upper = sla.lu(a)
        if k < last:
            total = total + np.sum(np.sin(lower)) + np.sum(upper ** 2)
    return total


@pytest.mark.parametrize("program", [eigh_in_a_loop, svd_in_a_loop, lu_in_a_loop])
def test_the_last_step_reading_nothing(program):
    """On the last step the outputs' gradients are the number 0.0 generated code writes at a join."""
    x = SYMMETRIC if program is eigh_in_a_loop else PIVOTED
    got = astgrad.grad(program)(x, 1)
    np.testing.assert_allclose(got, gradient(lambda a: program(a, 1), x), rtol=1e-6, atol=1e-8)
