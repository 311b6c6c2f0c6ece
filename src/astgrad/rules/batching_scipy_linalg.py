"""Batching rules (``astgrad.vmap``) of ``scipy.linalg``'s entries, registered with their derivative rules once
a program imports ``scipy.linalg`` (``_deferred``).

Where numpy computes the same thing on a stack of matrices (``inv``,
``det``, a general ``solve``, ``cholesky``, ``eigvalsh`` and ``svdvals`` of
the standard problem), the batched form is numpy's call, after scipy's
check for infinities and NaNs where ``check_finite`` asks for it.  The
others loop over the examples in Python (:func:`looped`, as scipy's own
batch support does): scipy's drivers choose the signs of eigen- and
singular vectors, and ``lu``'s pivots, which numpy's need not match.
``eigh(eigvals_only=True)`` and ``svd(compute_uv=False)`` return one array
where the rule returns a tuple: refused (``eigvalsh`` and ``svdvals`` batch).
``cho_solve`` and ``lu_solve`` take their factorisation as a tuple, whose
items (``(c, lower)``, ``(lu, piv)``) may each hold every example's.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._registry import defbatch
from .batching import JOINS, listed, unbatchable
from .batching_linalg import looped, matrices
from .batching_products import solve_batched

__all__: list = []


def finite(a, check_finite):
    """``a``, checked as scipy checks it where ``check_finite`` asks: infinities and NaNs raise."""
    if check_finite and not np.all(np.isfinite(a)):
        raise ValueError("array must not contain infs or NaNs")
    return a


@defbatch(sla.inv)
def inv_batched(bdims, a, overwrite_a=False, check_finite=True, assume_a=None, lower=False):
    if assume_a is not None:
        return looped(sla.inv, bdims[:1], (a,), {"check_finite": check_finite, "assume_a": assume_a, "lower": lower})
    return np.linalg.inv(finite(matrices(a, "scipy.linalg.inv"), check_finite))


@defbatch(sla.det)
def det_batched(bdims, a, overwrite_a=False, check_finite=True):
    return np.linalg.det(finite(matrices(a, "scipy.linalg.det"), check_finite))


@defbatch(sla.solve)
def solve_batched_scipy(bdims, a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                        assume_a=None, transposed=False):
    if assume_a not in (None, "gen", "general") or transposed:  # one triangle read, or a^T solved: scipy's
        return looped(sla.solve, bdims[:2], (a, b), {"lower": lower, "check_finite": check_finite,
                                                      "assume_a": assume_a, "transposed": transposed})
    return solve_batched(bdims[:2], finite(a, check_finite), finite(b, check_finite))


@defbatch(sla.solve_triangular)
def solve_triangular_batched(bdims, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                             check_finite=True):
    return looped(sla.solve_triangular, bdims[:2], (a, b), {"trans": trans, "lower": lower,
                                                             "unit_diagonal": unit_diagonal,
                                                             "check_finite": check_finite})


@defbatch(sla.cholesky)
def cholesky_batched(bdims, a, lower=False, overwrite_a=False, check_finite=True):
    return np.linalg.cholesky(finite(matrices(a, "scipy.linalg.cholesky"), check_finite), upper=not lower)


@defbatch(sla.cho_factor)
@listed
def cho_factor_batched(bdims, a, lower=False, overwrite_a=False, check_finite=True):
    return looped(sla.cho_factor, bdims[:1], (a,), {"lower": lower, "check_finite": check_finite})


JOINS.update((sla.cho_solve, sla.lu_solve))  # given a tuple of batched arrays: (c, lower), (lu, piv)


@defbatch(sla.cho_solve)
def cho_solve_batched(bdims, c_and_lower, b, overwrite_b=False, check_finite=True):
    return looped(sla.cho_solve, bdims[:2], (c_and_lower, b), {"check_finite": check_finite})


@defbatch(sla.lu_factor)
@listed
def lu_factor_batched(bdims, a, overwrite_a=False, check_finite=True):
    return looped(sla.lu_factor, bdims[:1], (a,), {"check_finite": check_finite})


@defbatch(sla.lu_solve)
def lu_solve_batched(bdims, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    return looped(sla.lu_solve, bdims[:2], (lu_and_piv, b), {"trans": trans, "check_finite": check_finite})


@defbatch(sla.lu)
@listed
def lu_batched(bdims, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    return looped(sla.lu, bdims[:1], (a,), {"permute_l": permute_l, "check_finite": check_finite,
                                            "p_indices": p_indices})


@defbatch(sla.eigh)
@listed
def eigh_batched(bdims, a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
                 check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    if eigvals_only:
        return unbatchable("scipy.linalg.eigh with eigvals_only=True, which returns one array where the rule "
                           "returns two (write scipy.linalg.eigvalsh(a))")
    return looped(sla.eigh, bdims[:2], (a, b), {"lower": lower, "type": type, "check_finite": check_finite,
                                                "subset_by_index": subset_by_index,
                                                "subset_by_value": subset_by_value, "driver": driver})


@defbatch(sla.eigvalsh)
def eigvalsh_batched(bdims, a, b=None, lower=True, overwrite_a=False, overwrite_b=False, type=1, check_finite=True,
                     subset_by_index=None, subset_by_value=None, driver=None):
    if b is None and subset_by_index is None and subset_by_value is None and driver is None:
        return np.linalg.eigvalsh(finite(matrices(a, "scipy.linalg.eigvalsh"), check_finite), "L" if lower else "U")
    return looped(sla.eigvalsh, bdims[:2], (a, b), {"lower": lower, "type": type, "check_finite": check_finite,
                                                    "subset_by_index": subset_by_index,
                                                    "subset_by_value": subset_by_value, "driver": driver})


@defbatch(sla.svd)
@listed
def svd_batched(bdims, a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
                lapack_driver="gesdd"):
    if not compute_uv:
        return unbatchable("scipy.linalg.svd with compute_uv=False, which returns one array where the rule "
                           "returns three (write scipy.linalg.svdvals(a))")
    return looped(sla.svd, bdims[:1], (a,), {"full_matrices": full_matrices, "check_finite": check_finite,
                                             "lapack_driver": lapack_driver})


@defbatch(sla.svdvals)
def svdvals_batched(bdims, a, overwrite_a=False, check_finite=True):
    return np.linalg.svd(finite(matrices(a, "scipy.linalg.svdvals"), check_finite), compute_uv=False)


@defbatch(sla.expm)
def expm_batched(bdims, A):
    return looped(sla.expm, bdims, (A,))


@defbatch(sla.sqrtm)
def sqrtm_batched(bdims, A):
    return looped(sla.sqrtm, bdims, (A,))


@defbatch(sla.logm)
def logm_batched(bdims, A):
    return looped(sla.logm, bdims, (A,))
