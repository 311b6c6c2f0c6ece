"""Derivative rules for ``scipy.linalg``, registered once a program imports it (``_deferred``).

The math is numpy.linalg's (``rules.linalg``: ``T``, ``one_triangle``,
``symmetric_read``); what differs is what scipy reads.  ``cholesky`` gives
the upper factor unless ``lower=True`` and reads that triangle of ``a``;
``solve_triangular`` reads one triangle (without its diagonal when
``unit_diagonal``); ``cho_factor`` returns ``(c, lower)``, ``c`` holding the
factor in one triangle and ``a``'s own entries in the other, and
``cho_solve`` reads the factor's triangle of ``c``.  ``lu_factor`` returns
``(lu, piv)``, ``L`` (unit diagonal, not stored) below the diagonal of
``lu`` and ``U`` on and above it, with ``a[rows] = L U`` for the rows
LAPACK's swaps ``piv`` give; ``lu_solve`` is differentiated in ``lu``
through that matrix, never in the integer pivots.  The spectral
decompositions and matrix functions are in scipy_spectral.py.  Options that
change what is read or solved in ways these rules do not follow
(``assume_a`` other than general, ``transposed=True``) are refused when they
run, and so is an ``overwrite_*`` flag where the rule reads the array it
names (``unwritten``).

These are Python functions, so the taped Tensor cannot see them (they turn
a Tensor into an array first): on the tape call them through
``astgrad.rules.apply``.  ``cho_factor``, ``lu_factor`` and ``lu`` return
tuples, which only generated code differentiates.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._registry import defjvp, defvjp, sequence_outputs
from . import linalg
from .linalg import T, one_triangle, symmetric_read


def general(assume_a, transposed=False):
    """Raise unless ``scipy.linalg.solve`` solves the general system ``a x = b`` with all of ``a``."""
    if assume_a not in (None, "gen", "general") or transposed:
        raise ValueError("astgrad: the gradient of scipy.linalg.solve supports assume_a='gen' (the default) and "
                         "transposed=False only; solve a symmetric system with scipy.linalg.cho_solve or "
                         "numpy.linalg.solve")


def unwritten(name, **flags):
    """Raise where an ``overwrite_*`` flag is set: scipy may then have written into the array the gradient reads.

    Generated code never passes one on (it drops the flag for a new array and
    refuses it for a named one), so only a taped call, through
    ``rules.apply``, meets this.  A rule that does not read the array a flag
    names (``inv``, ``lu_factor``, ``lu_solve``'s ``b``) needs no check."""
    for flag, value in flags.items():
        if value:
            raise ValueError(f"astgrad: no gradient for scipy.linalg.{name}(..., {flag}=True) on the tape: scipy may "
                             f"have overwritten the array its gradient reads; drop {flag}= (scipy's result is the "
                             f"same)")


@defvjp(sla.inv)
def inv(g, ans, a, overwrite_a=False, check_finite=True, **kwargs):
    return -T(ans) @ g @ T(ans)


@defvjp(sla.det)
def det(g, ans, a, overwrite_a=False, check_finite=True):
    unwritten("det", overwrite_a=overwrite_a)
    return linalg.det(g, ans, a)  # numpy's: also where a is singular


@defvjp(sla.solve)
def solve(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
          transposed=False):
    unwritten("solve", overwrite_a=overwrite_a)  # b is read for its shape alone
    general(assume_a, transposed)
    g_b = np.linalg.solve(T(a), g)
    if np.ndim(b) == 1:
        return -np.outer(g_b, ans), g_b
    return -g_b @ T(ans), g_b


def triangle(m, lower, unit_diagonal=False):
    """The part of ``m`` a triangular solve reads: one triangle, without the diagonal when it is taken as ones."""
    if lower:
        return np.tril(m, -1 if unit_diagonal else 0)
    return np.triu(m, 1 if unit_diagonal else 0)


@defvjp(sla.solve_triangular)
def solve_triangular(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    transposed = trans in (1, "T", 2, "C")
    g_b = sla.solve_triangular(a, g, trans=0 if transposed else 1, lower=lower, unit_diagonal=unit_diagonal)
    rows, cols = (np.reshape(ans, (np.shape(ans)[0], -1)), np.reshape(g_b, (np.shape(g_b)[0], -1)))
    g_a = -(rows @ T(cols) if transposed else cols @ T(rows))
    return triangle(g_a, lower, unit_diagonal), g_b


@defvjp(sla.cholesky)
def cholesky(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    unwritten("cholesky", overwrite_a=overwrite_a)
    factor, g_factor = (ans, g) if lower else (T(ans), T(g))  # as the lower factor L, a = L L^T
    inner = T(factor) @ g_factor
    phi = np.tril(inner) - 0.5 * np.eye(np.shape(a)[-1]) * inner
    factor_inv = np.linalg.inv(factor)
    sym = T(factor_inv) @ phi @ factor_inv
    return one_triangle(0.5 * (sym + T(sym)), "L" if lower else "U")


@defvjp(sla.cho_factor)
def cho_factor(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    """``g`` is (gradient of ``c``, None); ``c`` is the factor in one triangle and ``a`` itself in the other."""
    unwritten("cho_factor", overwrite_a=overwrite_a)
    c, low = ans
    g_c = filled_like(g[0], c)  # the number 0.0 where a path gave c no gradient yet
    factor = triangle(c, low)
    g_factor = triangle(g_c, low)
    through_factor = cholesky(g_factor, factor, a, lower=low)
    return through_factor + _other_triangle(c, a, low, triangle(g_c, not low, unit_diagonal=True))


def _other_triangle(c, a, low, part):
    """``part`` (of a gradient or tangent) carried by the triangle of ``c`` that holds no factor: scipy up to 1.17
    leaves ``a``'s entries there (they move with ``a``: ``part``), scipy 1.18 zeroes them (they do not move: 0);
    anything else is data scipy calls arbitrary, whose derivative is not known: NaN where ``part`` is not zero,
    so a value that reads it shows it (cho_solve never reads it)."""
    rest_c = triangle(c, not low, unit_diagonal=True)
    if np.array_equal(rest_c, triangle(a, not low, unit_diagonal=True)):
        return part
    if not np.any(rest_c):
        return np.zeros_like(part)
    return np.where(part != 0, np.nan, 0.0)


def cho_solution(c_and_lower, b, g):
    """``(gradient of c, gradient of b)`` of ``x = cho_solve((c, lower), b)``, given the gradient ``g`` of ``x``."""
    c, lower = c_and_lower
    x = sla.cho_solve(c_and_lower, b)
    g_b = sla.cho_solve(c_and_lower, g)
    factor = np.tril(c) if lower else T(np.triu(c))  # L with a = L L^T
    x_rows, g_rows = np.reshape(x, (np.shape(x)[0], -1)), np.reshape(g_b, (np.shape(g_b)[0], -1))
    g_full = -(g_rows @ T(x_rows) + x_rows @ T(g_rows)) @ factor  # d/dL of b^T (L L^T)^-1 ... through a
    return (np.tril(g_full) if lower else np.triu(T(g_full))), g_b


@defvjp(sla.cho_solve)
def cho_solve(g, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    unwritten("cho_solve", overwrite_b=overwrite_b)
    g_c, g_b = cho_solution(c_and_lower, b, g)
    return [g_c, None], g_b


# ---------------------------------------------------------------- LU: lu_factor, lu_solve, lu


def lu_rows(piv):
    """The row order of ``lu_factor``'s pivots (LAPACK's swaps, one after another): ``a[rows] = L @ U``."""
    rows = np.arange(np.shape(piv)[-1])
    for i, p in enumerate(piv):
        rows[[i, p]] = rows[[p, i]]
    return rows


def real_square(m, name):
    """Raise unless ``m`` is one real square matrix, the LU rules' domain."""
    if np.ndim(m) != 2 or np.shape(m)[0] != np.shape(m)[1] or np.iscomplexobj(m):
        raise ValueError(f"astgrad: the gradient of scipy.linalg.{name} supports one real square matrix (2-D); "
                         f"got shape {np.shape(m)}")


def lu_checked(lu, name):
    """``lu`` itself, once it is a real square factor with a nonzero diagonal: its gradient divides by ``U``."""
    real_square(lu, name)
    if not np.all(np.diagonal(lu)):
        raise ValueError(f"astgrad: no gradient for scipy.linalg.{name} of a singular matrix (U has a zero on its "
                         f"diagonal)")
    return lu


def filled_like(g, value):
    """The gradient ``g`` of one output of a tuple at that output's shape: zeros for ``None`` (the output was not
    read), and the zero generated code writes where a path has no gradient yet (``0.0``) spread out."""
    if g is None:
        return np.zeros_like(value)
    return np.broadcast_to(g, np.shape(value))


def spread(g, ans):
    """The gradients of a tuple's outputs, each ``None`` (not read) or at its output's shape (``filled_like``).

    A list, built whole: the rules given it read its items, and a hessian differentiates them again (``tuple``
    of a generator of arrays has no derivative)."""
    return [None if part is None else filled_like(part, value) for part, value in zip(g, ans)]


def lu_factor_gradient(g_lu, lu, rows):
    """The gradient of ``a`` from that of the combined factor ``lu`` (``a[rows] = L U``, ``L`` unit lower).

    ``dL = L tril(X, -1)`` and ``dU = triu(X) U`` with ``X = L^-1 da[rows] U^-1``."""
    lower = np.tril(lu, -1) + np.eye(np.shape(lu)[-1], dtype=lu.dtype)
    g_x = np.tril(T(lower) @ g_lu, -1) + np.triu(g_lu @ T(np.triu(lu)))
    right = T(sla.solve_triangular(lu, T(g_x), lower=False))  # g_x U^-T
    return sla.solve_triangular(lu, right, trans=1, lower=True, unit_diagonal=True)[np.argsort(rows)]


def lu_factor_tangent(t, lu, rows):
    """The tangent of the combined factor ``lu`` along ``t``, the tangent of ``a``."""
    left = sla.solve_triangular(lu, t[rows], lower=True, unit_diagonal=True)  # L^-1 t[rows]
    x = T(sla.solve_triangular(lu, T(left), trans=1, lower=False))  # ... U^-1
    lower = np.tril(lu, -1) + np.eye(np.shape(lu)[-1], dtype=lu.dtype)
    return lower @ np.tril(x, -1) + np.triu(x) @ np.triu(lu)


@defvjp(sla.lu_factor)
def lu_factor(g, ans, a, overwrite_a=False, check_finite=True):
    """``g`` is (gradient of ``lu``, None): the pivots are integers, constant where the gradient exists.  Only
    ``ans`` is read, so ``overwrite_a`` may be set."""
    lu, piv = ans
    return lu_factor_gradient(filled_like(g[0], lu), lu_checked(lu, "lu_factor"), lu_rows(piv))


def transposed_solve(trans):
    """Whether ``lu_solve``'s ``trans`` solves with ``a``'s transpose (2, the conjugate one, is that for the real
    factors these rules take)."""
    if trans not in (0, 1, 2, "N", "T", "C"):
        raise ValueError(f"astgrad: scipy.linalg.lu_solve(trans={trans!r}) is not a known option")
    return trans in (1, 2, "T", "C")


def lu_solution_gradient(g_a, lu, rows):
    """The gradient of the factor ``lu`` from that of the matrix ``a = P L U`` it stands for."""
    moved = g_a[rows]  # P^T g_a
    lower = np.tril(lu, -1) + np.eye(np.shape(lu)[-1], dtype=lu.dtype)
    return np.tril(moved @ T(np.triu(lu)), -1) + np.triu(T(lower) @ moved)


@defvjp(sla.lu_solve)
def lu_solve(g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``(gradient of (lu, piv), gradient of b)``: ``lu`` through the matrix ``P L U`` it factors, none for ``piv``."""
    lu, piv = lu_and_piv
    transposed = transposed_solve(trans)
    g_b = sla.lu_solve(lu_and_piv, g, trans=0 if transposed else 1)
    x_rows, g_rows = np.reshape(ans, (np.shape(ans)[0], -1)), np.reshape(g_b, (np.shape(g_b)[0], -1))
    g_a = -(x_rows @ T(g_rows) if transposed else g_rows @ T(x_rows))
    return [lu_solution_gradient(g_a, lu_checked(lu, "lu_solve"), lu_rows(piv)), None], g_b


def lu_p_rows(p):
    """``lu``'s permutation as rows (``a[rows] = L U``), from its matrix (``a = p L U``) or indices (``a = L[p] U``)."""
    return np.argsort(p) if np.ndim(p) == 1 else np.argmax(p, axis=0)


@defvjp(sla.lu)
def lu(g, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """``g`` is (gradient of p, of l, of u), or (of p l, of u) for ``permute_l``: p is constant where it has one."""
    unwritten("lu", overwrite_a=overwrite_a)
    real_square(a, "lu")
    if permute_l:
        p = sla.lu(a, p_indices=True)[0]  # the same call again: the same pivots as ans
        rows = lu_p_rows(p)
        g_lower, g_upper, upper, lower = filled_like(g[0], ans[0])[rows], filled_like(g[1], ans[1]), ans[1], ans[0][rows]
    else:
        rows = lu_p_rows(ans[0])
        g_lower, g_upper, lower, upper = filled_like(g[1], ans[1]), filled_like(g[2], ans[2]), ans[1], ans[2]
    combined = lu_checked(np.tril(lower, -1) + np.triu(upper), "lu")
    return lu_factor_gradient(np.tril(g_lower, -1) + np.triu(g_upper), combined, rows)


sequence_outputs.update((sla.cho_factor, sla.lu_factor, sla.lu))


# ---------------------------------------------------------------- forward rules


@defjvp(sla.inv)
def inv_jvp(t, ans, a, overwrite_a=False, check_finite=True, **kwargs):
    return -ans @ t @ ans


@defjvp(sla.det)
def det_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    return linalg.det_jvp(t, ans, a)


def solve_jvp_a(t, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
                transposed=False):
    general(assume_a, transposed)
    return -np.linalg.solve(a, t @ ans)


def solve_jvp_b(t, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
                transposed=False):
    general(assume_a, transposed)
    return np.linalg.solve(a, t)


def solve_triangular_jvp_a(t, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                           check_finite=True):
    read = triangle(t, lower, unit_diagonal)
    moved = T(read) @ ans if trans in (1, "T", 2, "C") else read @ ans
    return -sla.solve_triangular(a, moved, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


def solve_triangular_jvp_b(t, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                           check_finite=True):
    return sla.solve_triangular(a, t, trans=trans, lower=lower, unit_diagonal=unit_diagonal)


@defjvp(sla.cholesky)
def cholesky_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    """``dL = L phi(L^-1 dA L^-T)`` with ``dA`` the symmetric matrix read from the triangle; ``dU = dL^T``."""
    factor = ans if lower else T(ans)
    factor_inv = np.linalg.inv(factor)
    inner = factor_inv @ symmetric_read(t, "L" if lower else "U") @ T(factor_inv)
    moved = factor @ (np.tril(inner) - 0.5 * np.eye(np.shape(a)[-1]) * inner)
    return moved if lower else T(moved)


@defjvp(sla.cho_factor)
def cho_factor_jvp(t, ans, a, lower=False, overwrite_a=False, check_finite=True):
    c, low = ans
    moved = cholesky_jvp(t, triangle(c, low), a, lower=low)
    return moved + _other_triangle(c, a, low, triangle(t, not low, unit_diagonal=True)), None


def cho_solve_jvp_c(t, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    c, lower = c_and_lower
    factor = np.tril(c) if lower else T(np.triu(c))
    moved = np.tril(t[0]) if lower else T(np.triu(t[0]))
    d_a = moved @ T(factor) + factor @ T(moved)
    return -sla.cho_solve(c_and_lower, d_a @ ans)


def cho_solve_jvp_b(t, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    return sla.cho_solve(c_and_lower, t)


defjvp(sla.solve, solve_jvp_a, solve_jvp_b)
defjvp(sla.solve_triangular, solve_triangular_jvp_a, solve_triangular_jvp_b)
defjvp(sla.cho_solve, cho_solve_jvp_c, cho_solve_jvp_b)


@defjvp(sla.lu_factor)
def lu_factor_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    lu, piv = ans
    return lu_factor_tangent(t, lu_checked(lu, "lu_factor"), lu_rows(piv)), None


def lu_solve_jvp_lu(t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """``t[0]`` moves ``L`` below the diagonal and ``U`` on and above it, so ``a = P L U`` moves by ``P dA``."""
    lu, piv = lu_and_piv
    lu_checked(lu, "lu_solve")
    lower = np.tril(lu, -1) + np.eye(np.shape(lu)[-1], dtype=lu.dtype)
    moved = (np.tril(t[0], -1) @ np.triu(lu) + lower @ np.triu(t[0]))[np.argsort(lu_rows(piv))]  # da
    if transposed_solve(trans):
        return -sla.lu_solve(lu_and_piv, T(moved) @ ans, trans=trans)
    return -sla.lu_solve(lu_and_piv, moved @ ans)


def lu_solve_jvp_b(t, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    transposed_solve(trans)
    return sla.lu_solve(lu_and_piv, t, trans=trans)


@defjvp(sla.lu)
def lu_jvp(t, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    """The tangent of the combined factor, split into ``l`` (below the diagonal) and ``u``; ``p`` does not move."""
    unwritten("lu", overwrite_a=overwrite_a)
    real_square(a, "lu")
    if permute_l:
        rows = lu_p_rows(sla.lu(a, p_indices=True)[0])
        lower, upper = ans[0][rows], ans[1]
    else:
        rows = lu_p_rows(ans[0])
        lower, upper = ans[1], ans[2]
    moved = lu_factor_tangent(t, lu_checked(np.tril(lower, -1) + np.triu(upper), "lu"), rows)
    d_lower, d_upper = np.tril(moved, -1), np.triu(moved)
    if permute_l:
        return d_lower[np.argsort(rows)], d_upper
    return None, d_lower, d_upper


defjvp(sla.lu_solve, lu_solve_jvp_lu, lu_solve_jvp_b)
