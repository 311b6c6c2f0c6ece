"""Derivative rules for ``scipy.linalg``, registered once a program imports it (``_deferred``).

The math is numpy.linalg's (``rules.linalg``: ``T``, ``one_triangle``,
``symmetric_read``); what differs is what scipy reads.  ``cholesky`` gives
the upper factor unless ``lower=True`` and reads that triangle of ``a``;
``solve_triangular`` reads one triangle (without its diagonal when
``unit_diagonal``); ``cho_factor`` returns ``(c, lower)``, ``c`` holding the
factor in one triangle and ``a``'s own entries in the other, and
``cho_solve`` reads the factor's triangle of ``c``.  Options that change
what is read or solved in ways these rules do not follow (``assume_a``
other than general, ``transposed=True``) are refused when they run.

These are Python functions, so the taped Tensor cannot see them (they turn
a Tensor into an array first): on the tape call them through
``astgrad.rules.apply``.  ``cho_factor`` returns a tuple, which only
generated code differentiates.
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


@defvjp(sla.inv)
def inv(g, ans, a, overwrite_a=False, check_finite=True, **kwargs):
    return -T(ans) @ g @ T(ans)


@defvjp(sla.det)
def det(g, ans, a, overwrite_a=False, check_finite=True):
    return linalg.det(g, ans, a)  # numpy's: also where a is singular


@defvjp(sla.solve)
def solve(g, ans, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True, assume_a=None,
          transposed=False):
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
    factor, g_factor = (ans, g) if lower else (T(ans), T(g))  # as the lower factor L, a = L L^T
    inner = T(factor) @ g_factor
    phi = np.tril(inner) - 0.5 * np.eye(np.shape(a)[-1]) * inner
    factor_inv = np.linalg.inv(factor)
    sym = T(factor_inv) @ phi @ factor_inv
    return one_triangle(0.5 * (sym + T(sym)), "L" if lower else "U")


@defvjp(sla.cho_factor)
def cho_factor(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    """``g`` is (gradient of ``c``, None); ``c`` is the factor in one triangle and ``a`` itself in the other."""
    c, low = ans
    g_c = g[0]
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
    g_c, g_b = cho_solution(c_and_lower, b, g)
    return [g_c, None], g_b


@defvjp(sla.expm)
def expm(g, ans, A):
    """The Frechet derivative of expm at ``A^T`` in the direction ``g``: a block of one larger expm (Najfeld, Havel)."""
    n = np.shape(A)[-1]
    block = np.block([[T(A), g], [np.zeros((n, n)), T(A)]])
    return sla.expm(block)[:n, n:]


sequence_outputs.add(sla.cho_factor)


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


@defjvp(sla.expm)
def expm_jvp(t, ans, A):
    n = np.shape(A)[-1]
    return sla.expm(np.block([[A, t], [np.zeros((n, n)), A]]))[:n, n:]


defjvp(sla.solve, solve_jvp_a, solve_jvp_b)
defjvp(sla.solve_triangular, solve_triangular_jvp_a, solve_triangular_jvp_b)
defjvp(sla.cho_solve, cho_solve_jvp_c, cho_solve_jvp_b)
