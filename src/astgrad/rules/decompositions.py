"""Derivative rules for matrix decompositions: SVD, QR, eigenvalues, least squares.

Matrices are the last two axes; leading axes are a batch.  The formulas are
the adjoints published in M. Seeger et al., "Auto-differentiating linear
algebra" (2017), J. Townsend, "Differentiating the singular value
decomposition" (2016) and M. Giles, "An extended collection of matrix
derivative results" (2008), written for numpy here.

Where a decomposition has no derivative (repeated singular values for the
singular vectors, a loss weighing one of equal singular values apart or a
zero one, the arbitrary extra columns of ``full_matrices=True``, a
rank-deficient QR), the rule raises instead of returning a number.
"""

from __future__ import annotations

import numpy as np

from ._registry import defvjp, primitive
from .linalg import T, eigenvalues_gradient, equal_pairs, largest, one_triangle, pinv, weighed_apart

__all__ = ["svd_values", "svd_u", "svd_vh", "qr_q", "qr_r", "lstsq_solution", "lstsq_residuals", "eig_values",
           "eig_vectors"]


def _eye(n, like):
    return np.eye(n, dtype=np.result_type(like, np.float32))


def _tolerance(s):
    """Below this, two singular values (or one and zero) count as equal (``largest``, not ``np.max(s,
    initial=0.0)``: np.max's rules take no initial=, and generated gradients calling this are transformed again)."""
    return np.finfo(np.result_type(s, np.float32)).eps * 16 * largest(s, 0.0)


def singular_kinks(s):
    """Pairs of equal singular values, and singular values at zero (``|sigma|``), within numpy's tolerance."""
    tol = _tolerance(s)
    return equal_pairs(s, tol), s <= tol


def singular_values_weighed(name, s, g):
    """Raise where ``g`` weighs equal singular values apart, or weighs one at zero: no derivative there (the
    rule would return a number that depends on the vectors LAPACK picked); ``name`` is the function called.
    A weight within rounding of 0 (``2 s`` of ``sum(s ** 2)`` at a computed zero) weighs nothing."""
    if g is None:
        return
    tied, zero = singular_kinks(s)
    g = np.broadcast_to(g, np.shape(s))
    if np.any(tied & weighed_apart(g, s)) or np.any(zero & (np.abs(g) > 1e-8 * largest(g, 0.0))):
        raise ValueError(f"astgrad: no gradient for {name} where the loss weighs one of equal singular values "
                         f"apart, or one that is zero (a kink, as |x| at 0); a symmetric function of equal ones "
                         f"(their sum) has one")


def singular_values_apart(name, s):
    """Raise where two singular values are equal or one is zero: each alone has no tangent there."""
    tied, zero = singular_kinks(s)
    if np.any(tied) or np.any(zero):
        raise ValueError(f"astgrad: no tangent for the singular values of {name} where two are equal or one is "
                         f"zero: each alone has no derivative there")


def singular_values_gradient(name, g, s, a):
    """The gradient of a loss of the singular values ``s`` of ``a``, refused at their kinks."""
    singular_values_weighed(name, s, g)
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return _svd_gradient(a, u, s, vh, None, g, None, False)


def _svd_gradient(a, u, s, vh, g_u, g_s, g_vh, full_matrices):
    """The gradient of ``a`` from those of ``u``, ``s`` and ``vh`` (any of them ``None``)."""
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if np.iscomplexobj(a):
        raise ValueError("astgrad: no gradient for numpy.linalg.svd of a complex matrix "
                         "(its singular vectors have an arbitrary phase)")
    u, vh = u[..., :, :k], vh[..., :k, :]
    total = 0
    if g_s is not None:
        total = (u * np.expand_dims(g_s, -2)) @ vh
    if g_u is None and g_vh is None:
        return total
    if full_matrices and m != n:
        raise ValueError("astgrad: no gradient for the singular vectors of numpy.linalg.svd with "
                         "full_matrices=True on a non-square matrix: the extra vectors are arbitrary; "
                         "pass full_matrices=False")
    s_row, s_col = np.expand_dims(s, -2), np.expand_dims(s, -1)
    gaps = s_row ** 2 - s_col ** 2
    diagonal = np.eye(k, dtype=bool)
    tol = _tolerance(s)
    if np.any((np.abs(gaps) <= tol * (s_row + s_col)) & ~diagonal) or (m != n and np.any(s <= tol)):
        raise ValueError("astgrad: no gradient for the singular vectors of numpy.linalg.svd: two singular "
                         "values are equal (or one is zero), so the vectors are not determined; a loss "
                         "of the singular values alone (np.linalg.svdvals) has a gradient")
    f = np.where(diagonal, 0, 1 / np.where(diagonal, 1, gaps))
    v = T(vh)
    inner = 0
    if g_u is not None:
        g_u = g_u[..., :, :k]
        inner = (f * (T(u) @ g_u - T(g_u) @ u)) * s_row
        if m > k:
            total = total + (g_u - u @ (T(u) @ g_u)) / s_row @ vh
    if g_vh is not None:
        g_v = T(g_vh[..., :k, :])
        inner = inner + s_col * (f * (T(v) @ g_v - T(g_v) @ v))
        if n > k:
            total = total + u @ ((T(g_v) - (T(g_v) @ v) @ vh) / s_col)
    return total + u @ inner @ vh


@defvjp(np.linalg.svd)
def svd(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """``g`` is (gradient of u, of s, of vh), or that of s alone when ``compute_uv=False``."""
    if hermitian:  # numpy decomposes the symmetric matrix it reads from the lower triangle (ans pairs with it)
        return one_triangle(svd(g, ans, _read_by_hermitian(a), full_matrices, compute_uv), "L")
    if not compute_uv:
        if isinstance(g, (list, tuple)):
            raise ValueError("astgrad: pass compute_uv=False to numpy.linalg.svd as a literal, or call "
                             "np.linalg.svdvals, so the transformer knows it returns one array")
        return singular_values_gradient("numpy.linalg.svd", g, ans, a)
    u, s, vh = ans
    g_u, g_s, g_vh = g
    singular_values_weighed("numpy.linalg.svd", s, g_s)
    return _svd_gradient(a, u, s, vh, g_u, g_s, g_vh, full_matrices)


@defvjp(np.linalg.svdvals)
def svdvals(g, ans, x):
    return singular_values_gradient("numpy.linalg.svdvals", g, ans, x)


# The tape records each output of np.linalg.svd as its own node; the gradient is
# linear in (g_u, g_s, g_vh), so the three nodes' gradients add up to svd's.


@primitive
def svd_values(a, hermitian=False):
    """The singular values (second output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)


@primitive
def svd_u(a, full_matrices=True, hermitian=False):
    """The left singular vectors (first output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, full_matrices, hermitian=hermitian)[0]


@primitive
def svd_vh(a, full_matrices=True, hermitian=False):
    """The right singular vectors, transposed (third output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, full_matrices, hermitian=hermitian)[2]


def _read_by_hermitian(a):
    """The symmetric matrix ``svd(hermitian=True)`` decomposes: its lower triangle mirrored."""
    if np.iscomplexobj(a):
        raise ValueError("astgrad: no gradient for numpy.linalg.svd(hermitian=True) of a complex matrix; "
                         "pass hermitian=False")
    return np.tril(a) + T(np.tril(a, -1))


@defvjp(svd_values)
def svd_values_vjp(g, ans, a, hermitian=False):
    if hermitian:
        return one_triangle(svd_values_vjp(g, ans, _read_by_hermitian(a)), "L")
    return singular_values_gradient("numpy.linalg.svd", g, ans, a)


@defvjp(svd_u)
def svd_u_vjp(g, ans, a, full_matrices=True, hermitian=False):
    _, s, vh = np.linalg.svd(a, full_matrices, hermitian=hermitian)  # the vectors numpy paired with ans
    if hermitian:
        return one_triangle(_svd_gradient(_read_by_hermitian(a), ans, s, vh, g, None, None, full_matrices), "L")
    return _svd_gradient(a, ans, s, vh, g, None, None, full_matrices)


@defvjp(svd_vh)
def svd_vh_vjp(g, ans, a, full_matrices=True, hermitian=False):
    u, s, _ = np.linalg.svd(a, full_matrices, hermitian=hermitian)
    if hermitian:
        return one_triangle(_svd_gradient(_read_by_hermitian(a), u, s, ans, None, None, g, full_matrices), "L")
    return _svd_gradient(a, u, s, ans, None, None, g, full_matrices)


# ---------------------------------------------------------------- QR


def _qr_gradient(a, q, r, g_q, g_r, mode):
    """The gradient of ``a`` from those of ``q`` and ``r`` (either ``None``), after Walter & Lehmann."""
    m, n = np.shape(a)[-2:]
    k = min(m, n)
    if np.iscomplexobj(a):
        raise ValueError("astgrad: no gradient for numpy.linalg.qr of a complex matrix")
    if mode == "complete" and m > n and g_q is not None:
        raise ValueError("astgrad: no gradient for Q of numpy.linalg.qr(mode='complete') on a tall matrix: "
                         "its extra columns are arbitrary; use mode='reduced'")
    q = q[..., :, :k]
    g_q = np.zeros(np.shape(q)) if g_q is None else g_q[..., :, :k]
    g_r = np.zeros(np.shape(r)) if g_r is None else g_r
    diagonal = np.abs(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1))
    if np.any(diagonal <= np.finfo(np.result_type(r, np.float32)).eps * 16 * np.max(np.abs(r), initial=0.0)):
        raise ValueError("astgrad: no gradient for numpy.linalg.qr of a matrix whose first min(m, n) columns "
                         "are linearly dependent: Q is not determined there")
    square_r = r[..., :, :k]
    g_square_r, g_rest_r = g_r[..., :, :k], g_r[..., :, k:]
    if n > m:  # a = [x | y] with x = q square_r and y = q rest_r
        g_q = g_q + a[..., :, k:] @ T(g_rest_r)
    m_ = square_r @ T(g_square_r) - T(g_q) @ q
    copied = np.tril(m_) + T(np.tril(m_, -1))
    g_x = T(np.linalg.solve(square_r, T(g_q + q @ copied)))
    if n > m:
        return np.concatenate([g_x, q @ g_rest_r], axis=-1)
    return g_x


@defvjp(np.linalg.qr)
def qr(g, ans, a, mode="reduced"):
    """``g`` is (gradient of q, gradient of r), or that of r alone for ``mode='r'``."""
    if mode == "r":
        if isinstance(g, (list, tuple)):
            raise ValueError("astgrad: pass mode='r' to numpy.linalg.qr as a literal, so the transformer "
                             "knows it returns one array")
        return _qr_gradient(a, np.linalg.qr(a)[0], ans, None, g, mode)
    if mode not in ("reduced", "complete"):
        raise ValueError(f"astgrad: no gradient for numpy.linalg.qr(mode={mode!r})")
    return _qr_gradient(a, ans[0], ans[1], g[0], g[1], mode)


@primitive
def qr_q(a, mode="reduced"):
    """Q of ``np.linalg.qr`` (its first output)."""
    return np.linalg.qr(a, mode)[0]


@primitive
def qr_r(a, mode="reduced"):
    """R of ``np.linalg.qr`` (its second output, or its only one for ``mode='r'``)."""
    return np.linalg.qr(a, mode) if mode == "r" else np.linalg.qr(a, mode)[1]


@defvjp(qr_q)
def qr_q_vjp(g, ans, a, mode="reduced"):
    return _qr_gradient(a, ans, np.linalg.qr(a, mode)[1], g, None, mode)


@defvjp(qr_r)
def qr_r_vjp(g, ans, a, mode="reduced"):
    return _qr_gradient(a, np.linalg.qr(a)[0], ans, None, g, mode)


# ------------------------------------------------- least squares, eigvalsh, powers


def _lstsq_gradient(a, b, x, g_x, g_res, rank):
    """Gradients of ``a`` and ``b`` for ``x = pinv(a) @ b`` and the residuals ``|a x - b|^2``."""
    if np.any(rank < min(np.shape(a)[-2:])):
        raise ValueError("astgrad: no gradient for numpy.linalg.lstsq of a rank-deficient matrix: the "
                         "solution jumps with the rank")
    vector = np.ndim(b) == 1
    g_a, g_b = 0, 0
    if g_x is not None:
        p = np.linalg.pinv(a)
        g_p = np.outer(g_x, b) if vector else g_x @ T(b)
        g_a = pinv(g_p, p, a)
        g_b = T(p) @ g_x
    if g_res is not None and np.size(g_res):  # at the minimum, d|a x - b|^2 is its partial derivative
        r = np.conj(a @ x - b)  # |r|^2 is real: 2 Re(conj(r) dr)
        g_res = np.real(g_res)
        g_a = g_a + 2 * (np.outer(r, x) * g_res if vector else (r * g_res) @ T(x))
        g_b = g_b - 2 * r * g_res
    return g_a, g_b


@defvjp(np.linalg.lstsq)
def lstsq(g, ans, a, b, rcond=None):
    """``g`` is (gradient of x, of the residuals, of the rank, of the singular values)."""
    x, residuals, rank, s = ans
    g_x, g_res, g_rank, g_s = g
    g_a, g_b = _lstsq_gradient(a, b, x, g_x, g_res, rank)
    if g_s is not None:
        g_a = g_a + singular_values_gradient("numpy.linalg.lstsq", g_s, s, a)
    return g_a, g_b


@primitive
def lstsq_solution(a, b, rcond=None):
    """x of ``np.linalg.lstsq`` (its first output)."""
    return np.linalg.lstsq(a, b, rcond)[0]


@primitive
def lstsq_residuals(a, b, rcond=None):
    """The residuals of ``np.linalg.lstsq`` (its second output)."""
    return np.linalg.lstsq(a, b, rcond)[1]


@defvjp(lstsq_solution)
def lstsq_solution_vjp(g, ans, a, b, rcond=None):
    _, _, rank, _ = np.linalg.lstsq(a, b, rcond)
    g_a, g_b = _lstsq_gradient(a, b, ans, g, None, rank)
    return g_a, g_b


@defvjp(lstsq_residuals)
def lstsq_residuals_vjp(g, ans, a, b, rcond=None):
    x, _, rank, _ = np.linalg.lstsq(a, b, rcond)
    g_a, g_b = _lstsq_gradient(a, b, x, None, g, rank)
    return g_a, g_b


@defvjp(np.linalg.eigvalsh)
def eigvalsh(g, ans, a, UPLO="L"):
    return eigenvalues_gradient("numpy.linalg.eigvalsh", g, ans, a, UPLO)


@defvjp(np.linalg.matrix_power)
def matrix_power(g, ans, a, n):
    """``sum over k of (a^T)^k g (a^T)^(n-1-k)``; a negative power is a power of the inverse."""
    if n < 0:
        b = np.linalg.inv(a)
        return -T(b) @ matrix_power(g, None, b, -n) @ T(b)
    powers = [np.broadcast_to(np.eye(np.shape(a)[-1]), np.shape(a))]
    for _ in range(n - 1):
        powers.append(powers[-1] @ T(a))
    total = np.zeros(np.shape(a), np.result_type(a, g))
    for k in range(n):
        total = total + powers[k] @ g @ powers[n - 1 - k]
    return total


# ------------------------------------------------------------- matrix norms


def _even_share(values, extreme, tol):
    """1 / (how many) where ``values`` is within ``tol`` of ``extreme`` along the last axis, else 0."""
    hits = np.abs(values - np.expand_dims(extreme, -1)) <= np.expand_dims(tol, -1)
    return hits / np.sum(hits, axis=-1, keepdims=True)


def matrix_norm_vjp(g, ans, x, ord, axis=None, keepdims=False):
    """The gradient of ``np.linalg.norm(x, ord, axis)`` for a matrix ``ord`` (2, -2, 'nuc', 1, -1, inf, -inf).

    Where the norm has no derivative, the gradient is a documented
    subgradient: tied extremes (singular values, column or row sums) share
    it evenly, and the nuclear norm gives zero singular values none.
    """
    rows, cols = (-2, -1) if axis is None else axis
    rows, cols = rows % np.ndim(x), cols % np.ndim(x)
    m = np.moveaxis(x, (rows, cols), (-2, -1))
    if keepdims:
        g = np.squeeze(g, (rows, cols))
    if np.iscomplexobj(m):
        raise ValueError(f"astgrad: no gradient for the matrix norm numpy.linalg.norm(ord={ord!r}) of a "
                         "complex matrix")
    if ord in (2, -2, "nuc"):
        u, s, vh = np.linalg.svd(m, full_matrices=False)
        tol = _tolerance(s) * np.ones(np.shape(s)[:-1])
        if ord == "nuc":
            weights = s > np.expand_dims(tol, -1)
        else:
            weights = _even_share(s, np.max(s, axis=-1) if ord == 2 else np.min(s, axis=-1), tol)
        g_m = (u * np.expand_dims(np.expand_dims(g, -1) * weights, -2)) @ vh
    elif ord in (1, -1, np.inf, -np.inf):
        along = -2 if ord in (1, -1) else -1  # 1: largest column sum; inf: largest row sum
        sums = np.sum(np.abs(m), axis=along)
        extreme = np.max(sums, axis=-1) if ord > 0 else np.min(sums, axis=-1)
        tol = np.finfo(np.result_type(m, np.float32)).eps * 16 * np.max(sums, axis=-1)
        share = np.expand_dims(_even_share(sums, extreme, tol), along)
        g_m = np.expand_dims(np.expand_dims(g, -1), -1) * share * np.sign(m)
    else:
        raise ValueError(f"astgrad: no gradient for the matrix norm numpy.linalg.norm(ord={ord!r})")
    return np.moveaxis(g_m, (-2, -1), (rows, cols))


def matrix_norm_jvp(t, ans, x, ord, axis=None, keepdims=False):
    """One number per matrix: the tangent is the reverse rule's gradient (for a unit weight) dotted with ``t``."""
    rows, cols = (-2, -1) if axis is None else axis
    gradient = matrix_norm_vjp(np.ones(np.shape(ans)), ans, x, ord, axis, keepdims)
    return np.sum(gradient * t, axis=(rows % np.ndim(x), cols % np.ndim(x)), keepdims=keepdims)


# ------------------------------------------------------ general eigenproblem


def _complex_vectors(a, v):
    """Whether eig's unit eigenvectors are complex numbers, whose phase is arbitrary.

    numpy 2.5 returns eig's results as complex arrays always: a real matrix's
    real spectrum then has real vectors with zero imaginary parts, which are
    differentiated as before (with complex arithmetic; a real ``a`` takes the
    real part).  A complex matrix's vectors are complex whatever their values.
    """
    return np.iscomplexobj(a) or np.any(np.imag(v))


def _eig_gradient(a, w, v, g_w, g_v):
    """The gradient of ``a`` from those of the eigenvalues ``w`` and the unit eigenvectors ``v``.

    ``a = v diag(w) v^-1``: the eigenvalues are holomorphic in ``a`` (no
    conjugation, as for every holomorphic rule); a real ``a`` gets the real
    part.  Eigenvectors are differentiated only where they are real and
    the eigenvalues distinct: a complex eigenvector has an arbitrary phase.
    """
    n = np.shape(a)[-1]
    diagonal = np.eye(n, dtype=bool)
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)  # gaps[i, j] = w_j - w_i
    tol = np.finfo(np.result_type(a, np.float32)).eps * 64 * np.max(np.abs(w), initial=1.0)
    tied = (np.abs(gaps) <= tol) & ~diagonal
    values = np.linalg.svdvals(v)  # np.linalg.cond(v) = largest / smallest, compared without the division
    if np.any(values[..., 0] * np.finfo(np.result_type(a, np.float32)).eps > 1e-2 * values[..., -1]):
        raise ValueError("astgrad: no gradient for numpy.linalg.eig of a matrix that is not diagonalizable "
                         "(its eigenvectors are dependent)")
    inner = 0
    if g_w is not None:
        if np.any(tied & (np.expand_dims(g_w, -2) != np.expand_dims(g_w, -1))):
            raise ValueError("astgrad: no gradient for single repeated eigenvalues of numpy.linalg.eig; a "
                             "symmetric function of them (their sum) has one")
        inner = g_w[..., None] * diagonal
    if g_v is not None:
        if _complex_vectors(a, v) or np.any(tied):
            raise ValueError("astgrad: no gradient for the eigenvectors of numpy.linalg.eig where they are "
                             "complex (their phase is arbitrary) or their eigenvalues repeat; use eigh for a "
                             "symmetric matrix, or a loss of the eigenvalues")
        f = np.where(diagonal, 0, 1 / np.where(diagonal, 1, gaps))
        vg = T(v) @ g_v
        h = vg - (T(v) @ v) * np.expand_dims(np.diagonal(vg, axis1=-2, axis2=-1), -2)
        inner = inner + f * h
    g_a = np.linalg.solve(T(v), inner @ T(v))
    return g_a if np.iscomplexobj(a) else np.real(g_a)


@defvjp(np.linalg.eig)
def eig(g, ans, a):
    """``g`` is (gradient of the eigenvalues, gradient of the eigenvectors)."""
    return _eig_gradient(a, ans[0], ans[1], g[0], g[1])


@defvjp(np.linalg.eigvals)
def eigvals(g, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_gradient(a, w, v, g, None)


@primitive
def eig_values(a):
    """The eigenvalues (first output of ``np.linalg.eig``)."""
    return np.linalg.eig(a)[0]


@primitive
def eig_vectors(a):
    """The unit eigenvectors (second output of ``np.linalg.eig``)."""
    return np.linalg.eig(a)[1]


@defvjp(eig_values)
def eig_values_vjp(g, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_gradient(a, w, v, g, None)


@defvjp(eig_vectors)
def eig_vectors_vjp(g, ans, a):
    w, v = np.linalg.eig(a)
    return _eig_gradient(a, w, v, None, g)
