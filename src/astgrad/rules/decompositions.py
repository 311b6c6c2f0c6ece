"""Derivative rules for matrix decompositions: SVD, QR, eigenvalues, least squares.

Matrices are the last two axes; leading axes are a batch.  The formulas are
the adjoints published in M. Seeger et al., "Auto-differentiating linear
algebra" (2017), J. Townsend, "Differentiating the singular value
decomposition" (2016) and M. Giles, "An extended collection of matrix
derivative results" (2008), written for numpy here.

Where a decomposition has no derivative (repeated singular values for the
singular vectors, the arbitrary extra columns of ``full_matrices=True``, a
rank-deficient QR), the rule raises instead of returning a number.
"""

from __future__ import annotations

import numpy as np

from ._registry import defvjp, primitive
from .linalg import T

__all__ = ["svd_values", "svd_u", "svd_vh"]


def _eye(n, like):
    return np.eye(n, dtype=np.result_type(like, np.float32))


def _tolerance(s):
    """Below this, two singular values (or one and zero) count as equal."""
    return np.finfo(np.result_type(s, np.float32)).eps * 16 * np.max(s, initial=0.0)


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
    if not compute_uv:
        if isinstance(g, (list, tuple)):
            raise ValueError("astgrad: pass compute_uv=False to numpy.linalg.svd as a literal, or call "
                             "np.linalg.svdvals, so the transformer knows it returns one array")
        u, _, vh = np.linalg.svd(a, full_matrices=False)
        return _svd_gradient(a, u, ans, vh, None, g, None, False)
    u, s, vh = ans
    g_u, g_s, g_vh = g
    return _svd_gradient(a, u, s, vh, g_u, g_s, g_vh, full_matrices)


@defvjp(np.linalg.svdvals)
def svdvals(g, ans, x):
    u, _, vh = np.linalg.svd(x, full_matrices=False)
    return _svd_gradient(x, u, ans, vh, None, g, None, False)


# The tape records each output of np.linalg.svd as its own node; the gradient is
# linear in (g_u, g_s, g_vh), so the three nodes' gradients add up to svd's.


@primitive
def svd_values(a):
    """The singular values (second output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, compute_uv=False)


@primitive
def svd_u(a, full_matrices=True):
    """The left singular vectors (first output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, full_matrices)[0]


@primitive
def svd_vh(a, full_matrices=True):
    """The right singular vectors, transposed (third output of ``np.linalg.svd``)."""
    return np.linalg.svd(a, full_matrices)[2]


@defvjp(svd_values)
def svd_values_vjp(g, ans, a):
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return _svd_gradient(a, u, ans, vh, None, g, None, False)


@defvjp(svd_u)
def svd_u_vjp(g, ans, a, full_matrices=True):
    _, s, vh = np.linalg.svd(a, full_matrices)
    return _svd_gradient(a, ans, s, vh, g, None, None, full_matrices)


@defvjp(svd_vh)
def svd_vh_vjp(g, ans, a, full_matrices=True):
    u, s, _ = np.linalg.svd(a, full_matrices)
    return _svd_gradient(a, u, s, ans, None, None, g, full_matrices)
