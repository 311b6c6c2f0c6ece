"""Forward (tangent) rules of the matrix decompositions whose reverse rules are in ``decompositions``.

The same entries, the same refusals: where a decomposition has no
derivative (repeated singular values or eigenvalues for the vectors, the
arbitrary extra columns of ``full_matrices=True``, a rank-deficient QR or
least-squares problem), the forward rule raises as the reverse rule does.
The formulas are the perturbation results behind the reverse rules
(Townsend 2016 for the SVD, Walter and Lehmann for QR, Giles 2008).
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp
from .decompositions import (
    _complex_vectors, _read_by_hermitian, _tolerance, eig_values, eig_vectors, lstsq_residuals, lstsq_solution, qr_q, qr_r, svd_u,
    singular_values_apart, svd_values, svd_vh,
)
from .linalg import T, eigenvalues_tangent, pinv_jvp, symmetric_read

# ---------------------------------------------------------------- SVD


def _svd_tangent(a, u, s, vh, t, vectors, full_matrices):
    """The tangents of ``u``, ``s`` and ``vh`` along ``t`` (``None`` for the vectors unless ``vectors``)."""
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if np.iscomplexobj(a) or np.iscomplexobj(t):
        raise ValueError("astgrad: no tangent for numpy.linalg.svd of a complex matrix "
                         "(its singular vectors have an arbitrary phase)")
    u, v = u[..., :, :k], T(vh[..., :k, :])
    moved = T(u) @ t @ v
    ds = np.diagonal(moved, axis1=-2, axis2=-1)
    if not vectors:
        return None, ds, None
    if full_matrices and m != n:
        raise ValueError("astgrad: no tangent for the singular vectors of numpy.linalg.svd with "
                         "full_matrices=True on a non-square matrix: the extra vectors are arbitrary; "
                         "pass full_matrices=False")
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    gaps = s_row ** 2 - s_col ** 2
    diagonal = np.eye(k, dtype=bool)
    tol = _tolerance(s)
    if np.any((np.abs(gaps) <= tol * (s_row + s_col)) & ~diagonal) or (m != n and np.any(s <= tol)):
        raise ValueError("astgrad: no tangent for the singular vectors of numpy.linalg.svd: two singular "
                         "values are equal (or one is zero), so the vectors are not determined; a function "
                         "of the singular values alone (np.linalg.svdvals) has one")
    f = np.where(diagonal, 0, 1 / np.where(diagonal, 1, gaps))
    du = u @ (f * (moved * s_row + s_col * T(moved)))
    dv = v @ (f * (s_col * moved + T(moved) * s_row))
    if m > k:
        du = du + (t @ v - u @ moved) / s_row
    if n > k:
        dv = dv + (T(t) @ u - v @ T(moved)) / s_row
    return du, ds, T(dv)


@defjvp(np.linalg.svd)
def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    if hermitian:  # numpy decomposes the symmetric matrix it reads from the lower triangle
        return svd_jvp(symmetric_read(t, "L"), ans, _read_by_hermitian(a), full_matrices, compute_uv)
    if not compute_uv:
        return singular_values_tangent("numpy.linalg.svd", t, ans, a)
    u, s, vh = ans
    singular_values_apart("numpy.linalg.svd", s)
    return _svd_tangent(a, u, s, vh, t, True, full_matrices)


def singular_values_tangent(name, t, s, a):
    """The tangent of the singular values ``s`` of ``a`` along ``t``, refused where two are equal or one is 0."""
    singular_values_apart(name, s)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return _svd_tangent(a, u, s, vh, t, False, False)[1]


@defjvp(np.linalg.svdvals)
def svdvals_jvp(t, ans, x):
    return singular_values_tangent("numpy.linalg.svdvals", t, ans, x)


@defjvp(svd_values)
def svd_values_jvp(t, ans, a, hermitian=False):
    if hermitian:
        return svd_values_jvp(symmetric_read(t, "L"), ans, _read_by_hermitian(a))
    return singular_values_tangent("numpy.linalg.svd", t, ans, a)


@defjvp(svd_u)
def svd_u_jvp(t, ans, a, full_matrices=True, hermitian=False):
    _, s, vh = np.linalg.svd(a, full_matrices, hermitian=hermitian)  # the vectors numpy paired with ans
    if hermitian:
        return _svd_tangent(_read_by_hermitian(a), ans, s, vh, symmetric_read(t, "L"), True, full_matrices)[0]
    return _svd_tangent(a, ans, s, vh, t, True, full_matrices)[0]


@defjvp(svd_vh)
def svd_vh_jvp(t, ans, a, full_matrices=True, hermitian=False):
    u, s, _ = np.linalg.svd(a, full_matrices, hermitian=hermitian)
    if hermitian:
        return _svd_tangent(_read_by_hermitian(a), u, s, ans, symmetric_read(t, "L"), True, full_matrices)[2]
    return _svd_tangent(a, u, s, ans, t, True, full_matrices)[2]


# ---------------------------------------------------------------- QR


def _qr_tangent(a, q, r, t, mode):
    """The tangents of ``q`` and ``r``: ``C = Q^T dA R^-1`` splits into a skew part (Q's) and an upper one (R's)."""
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if np.iscomplexobj(a) or np.iscomplexobj(t):
        raise ValueError("astgrad: no tangent for numpy.linalg.qr of a complex matrix")
    if mode == "complete" and m > n:
        raise ValueError("astgrad: no tangent for numpy.linalg.qr(mode='complete') on a tall matrix: the extra "
                         "columns of Q are arbitrary; use mode='reduced'")
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(f"astgrad: no tangent for numpy.linalg.qr(mode={mode!r})")
    diagonal = np.abs(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1))
    if np.any(diagonal <= np.finfo(np.result_type(r, np.float32)).eps * 16 * np.max(np.abs(r), initial=0.0)):
        raise ValueError("astgrad: no tangent for numpy.linalg.qr of a matrix whose first min(m, n) columns "
                         "are linearly dependent: Q is not determined there")
    q = q[..., :, :k]
    square_r = r[..., :k, :k]
    t_x = t[..., :, :k]
    c = T(np.linalg.solve(T(square_r), T(T(q) @ t_x)))  # Q^T dX R^-1
    lower = np.tril(c, -1)
    omega = lower - T(lower)
    dq = q @ omega + (t_x - q @ (T(q) @ t_x)) @ np.linalg.inv(square_r)
    dr = (c - omega) @ square_r
    if n > m:  # a = [x | y], y = q rest_r
        dr = np.concatenate([dr, T(q) @ (t[..., :, k:] - dq @ r[..., :, k:])], axis=-1)
    return dq, dr


@defjvp(np.linalg.qr)
def qr_jvp(t, ans, a, mode="reduced"):
    if mode == "r":
        return _qr_tangent(a, np.linalg.qr(a)[0], ans, t, mode)[1]
    return _qr_tangent(a, ans[0], ans[1], t, mode)


@defjvp(qr_q)
def qr_q_jvp(t, ans, a, mode="reduced"):
    return _qr_tangent(a, ans, np.linalg.qr(a, mode)[1], t, mode)[0]


@defjvp(qr_r)
def qr_r_jvp(t, ans, a, mode="reduced"):
    return _qr_tangent(a, np.linalg.qr(a)[0], ans, t, mode)[1]


# ------------------------------------------------- least squares, eigvalsh, powers


def _lstsq_tangent(a, b, x, t_a, t_b, rank):
    """Tangents of ``x = pinv(a) @ b`` and of the residuals ``|a x - b|^2`` (``t_a`` or ``t_b`` is ``None``)."""
    if np.any(rank < min(np.shape(a)[-2:])):
        raise ValueError("astgrad: no tangent for numpy.linalg.lstsq of a rank-deficient matrix: the "
                         "solution jumps with the rank")
    p = np.linalg.pinv(a)
    r = a @ x - b
    if t_a is not None:
        dx = pinv_jvp(t_a, p, a) @ b
        moved = t_a @ x  # at the minimum, d|a x - b|^2 is its partial derivative
    else:
        dx = p @ t_b
        moved = -t_b
    return dx, 2 * np.real(np.sum(np.conj(r) * moved, axis=0))


def _residual_tangent(residuals, tangent):
    """numpy gives residuals only for a tall full-rank ``a``; otherwise an empty array, whose tangent is empty."""
    return np.reshape(tangent, np.shape(residuals)) if np.size(residuals) else np.zeros(np.shape(residuals))


def lstsq_jvp_a(t, ans, a, b, rcond=None):
    """(x, residuals, rank, singular values): the rank has no tangent."""
    x, residuals, rank, s = ans
    dx, dres = _lstsq_tangent(a, b, x, t, None, rank)
    return dx, _residual_tangent(residuals, dres), None, singular_values_tangent("numpy.linalg.lstsq", t, s, a)


def lstsq_jvp_b(t, ans, a, b, rcond=None):
    x, residuals, rank, s = ans
    dx, dres = _lstsq_tangent(a, b, x, None, t, rank)
    return dx, _residual_tangent(residuals, dres), None, None


defjvp(np.linalg.lstsq, lstsq_jvp_a, lstsq_jvp_b)


def lstsq_solution_jvp_a(t, ans, a, b, rcond=None):
    rank = np.linalg.lstsq(a, b, rcond)[2]
    return _lstsq_tangent(a, b, ans, t, None, rank)[0]


def lstsq_solution_jvp_b(t, ans, a, b, rcond=None):
    rank = np.linalg.lstsq(a, b, rcond)[2]
    return _lstsq_tangent(a, b, ans, None, t, rank)[0]


def lstsq_residuals_jvp_a(t, ans, a, b, rcond=None):
    x, _, rank, _ = np.linalg.lstsq(a, b, rcond)
    return _residual_tangent(ans, _lstsq_tangent(a, b, x, t, None, rank)[1])


def lstsq_residuals_jvp_b(t, ans, a, b, rcond=None):
    x, _, rank, _ = np.linalg.lstsq(a, b, rcond)
    return _residual_tangent(ans, _lstsq_tangent(a, b, x, None, t, rank)[1])


defjvp(lstsq_solution, lstsq_solution_jvp_a, lstsq_solution_jvp_b)
defjvp(lstsq_residuals, lstsq_residuals_jvp_a, lstsq_residuals_jvp_b)


@defjvp(np.linalg.eigvalsh)
def eigvalsh_jvp(t, ans, a, UPLO="L"):
    return eigenvalues_tangent("numpy.linalg.eigvalsh", t, ans, a, UPLO)


@defjvp(np.linalg.matrix_power)
def matrix_power_jvp(t, ans, a, n):
    """``sum over k of a^k t a^(n-1-k)``; a negative power is a power of the inverse, whose tangent is ``-b t b``."""
    if n < 0:
        b = np.linalg.inv(a)
        return matrix_power_jvp(-b @ t @ b, None, b, -n)
    powers = [np.broadcast_to(np.eye(np.shape(a)[-1]), np.shape(a))]
    for _ in range(n - 1):
        powers.append(powers[-1] @ a)
    total = np.zeros(np.broadcast_shapes(np.shape(a), np.shape(t)), np.result_type(a, t))
    for k in range(n):
        total = total + powers[k] @ t @ powers[n - 1 - k]
    return total


# ------------------------------------------------------ general eigenproblem


def _eig_tangent(a, w, v, t, vectors):
    """Tangents of the eigenvalues and (if ``vectors``) the unit eigenvectors: ``P = v^-1 t v``, ``dw = diag(P)``."""
    n = np.shape(a)[-1]
    diagonal = np.eye(n, dtype=bool)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)  # gaps[i, j] = w_j - w_i
    tol = np.finfo(np.result_type(a, np.float32)).eps * 64 * np.max(np.abs(w), initial=1.0)
    tied = (np.abs(gaps) <= tol) & ~diagonal
    if np.linalg.cond(v) * np.finfo(np.result_type(a, np.float32)).eps > 1e-2:
        raise ValueError("astgrad: no tangent for numpy.linalg.eig of a matrix that is not diagonalizable "
                         "(its eigenvectors are dependent)")
    if np.any(tied):
        raise ValueError("astgrad: no tangent for numpy.linalg.eig where eigenvalues repeat: each one alone "
                         "is not differentiable there; use eigh for a symmetric matrix")
    moved = np.linalg.solve(v, t @ v)
    dw = np.diagonal(moved, axis1=-2, axis2=-1)
    if not vectors:
        return dw, None
    if _complex_vectors(a, v):
        raise ValueError("astgrad: no tangent for the eigenvectors of numpy.linalg.eig where they are complex "
                         "(their phase is arbitrary); use eigh for a symmetric matrix, or the eigenvalues")
    f = np.where(diagonal, 0, 1 / np.where(diagonal, 1, gaps))
    dv = v @ (f * moved)
    return dw, dv - v * np.sum(v * dv, axis=-2, keepdims=True)  # numpy's vectors keep unit length


@defjvp(np.linalg.eig)
def eig_jvp(t, ans, a):
    return _eig_tangent(a, ans[0], ans[1], t, True)


@defjvp(np.linalg.eigvals)
def eigvals_jvp(t, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_tangent(a, w, v, t, False)[0]


@defjvp(eig_values)
def eig_values_jvp(t, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_tangent(a, w, v, t, False)[0]


@defjvp(eig_vectors)
def eig_vectors_jvp(t, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_tangent(a, w, v, t, True)[1]
