"""Derivative rules for ``scipy.linalg``'s spectral decompositions and matrix functions.

``eigh``, ``eigvalsh``, ``svd`` and ``svdvals`` are numpy's rules
(``rules.linalg``, ``rules.decompositions``) with numpy's refusals, among
them a loss that weighs one of equal eigenvalues (or singular values)
apart, named for the scipy function called.  ``expm``, ``sqrtm`` and ``logm`` are
differentiated through their Frechet derivative, the top right block of
the function of ``[[A, E], [0, A]]`` (at ``A^T`` for the gradient, since
they are real primary functions).  Each entry's reverse and forward rules
sit side by side.  Beside scipy_linalg.py (the solves and factorisations):
both register when a program imports ``scipy.linalg`` (``_deferred``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._registry import defjvp, defvjp, sequence_outputs
from . import decomposition_tangents, decompositions, linalg
from .decomposition_tangents import singular_values_tangent
from .decompositions import singular_values_apart, singular_values_gradient, singular_values_weighed
from .linalg import T, distinct, eigenvalues_gradient, eigenvalues_tangent, weighed_alike
from .scipy_linalg import spread, unwritten

# ---------------------------------------------------------------- eigh, eigvalsh, svd: numpy's rules


def standard_symmetric(name, b, subset_by_index, subset_by_value):
    """Raise unless ``scipy.linalg.eigh`` (or ``eigvalsh``) solves the standard problem for every eigenvalue."""
    if b is not None:
        raise ValueError(f"astgrad: no gradient for scipy.linalg.{name} of the generalized problem (b=...); solve "
                         f"the standard one, a = L^-1 A L^-T with L = cholesky(b, lower=True)")
    if subset_by_index is not None or subset_by_value is not None:
        raise ValueError(f"astgrad: no gradient for scipy.linalg.{name} with subset_by_index= or subset_by_value=; "
                         f"compute every eigenvalue and select them (w[lo:hi + 1])")


def one_output(name, flag, instead, g):
    """Raise where generated code took a flag it could not read (not a literal) for a tuple of outputs."""
    if isinstance(g, (list, tuple)):
        raise ValueError(f"astgrad: pass {flag} to scipy.linalg.{name} as a literal, or call {instead}, so the "
                         f"transformer knows it returns one array")


def uplo(lower):
    return "L" if lower else "U"


@defvjp(sla.eigh)
def eigh(g, ans, a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
         check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    """numpy.linalg.eigh's rule on the triangle ``lower`` names: ``g`` is (of w, of v), or of w for ``eigvals_only``."""
    unwritten("eigh", overwrite_a=overwrite_a)
    standard_symmetric("eigh", b, subset_by_index, subset_by_value)
    if eigvals_only:
        one_output("eigh", "eigvals_only=True", "scipy.linalg.eigvalsh", g)
        return eigenvalues_gradient("scipy.linalg.eigh", g, ans, a, uplo(lower))
    weighed_alike("scipy.linalg.eigh", ans[0], g[0])
    return linalg.eigh(spread(g, ans), ans, a, uplo(lower))


@defjvp(sla.eigh)
def eigh_jvp(t, ans, a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False, type=1,
             check_finite=True, subset_by_index=None, subset_by_value=None, driver=None):
    unwritten("eigh", overwrite_a=overwrite_a)
    standard_symmetric("eigh", b, subset_by_index, subset_by_value)
    if eigvals_only:
        return eigenvalues_tangent("scipy.linalg.eigh", t, ans, a, uplo(lower))
    distinct("scipy.linalg.eigh", ans[0])
    return linalg.eigh_jvp(t, ans, a, uplo(lower))


@defvjp(sla.eigvalsh)
def eigvalsh(g, ans, a, b=None, lower=True, overwrite_a=False, overwrite_b=False, type=1, check_finite=True,
             subset_by_index=None, subset_by_value=None, driver=None):
    unwritten("eigvalsh", overwrite_a=overwrite_a)
    standard_symmetric("eigvalsh", b, subset_by_index, subset_by_value)
    return eigenvalues_gradient("scipy.linalg.eigvalsh", g, ans, a, uplo(lower))


@defjvp(sla.eigvalsh)
def eigvalsh_jvp(t, ans, a, b=None, lower=True, overwrite_a=False, overwrite_b=False, type=1, check_finite=True,
                 subset_by_index=None, subset_by_value=None, driver=None):
    unwritten("eigvalsh", overwrite_a=overwrite_a)
    standard_symmetric("eigvalsh", b, subset_by_index, subset_by_value)
    return eigenvalues_tangent("scipy.linalg.eigvalsh", t, ans, a, uplo(lower))


@defvjp(sla.svd)
def svd(g, ans, a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
    """numpy.linalg.svd's rule: ``g`` is (of u, of s, of vh), or of s for ``compute_uv=False``."""
    unwritten("svd", overwrite_a=overwrite_a)
    if not compute_uv:
        one_output("svd", "compute_uv=False", "scipy.linalg.svdvals", g)
        return singular_values_gradient("scipy.linalg.svd", g, ans, a)
    singular_values_weighed("scipy.linalg.svd", ans[1], g[1])
    return decompositions.svd(spread(g, ans), ans, a, full_matrices, compute_uv)


@defjvp(sla.svd)
def svd_jvp(t, ans, a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
            lapack_driver="gesdd"):
    unwritten("svd", overwrite_a=overwrite_a)
    if not compute_uv:
        return singular_values_tangent("scipy.linalg.svd", t, ans, a)
    singular_values_apart("scipy.linalg.svd", ans[1])
    return decomposition_tangents.svd_jvp(t, ans, a, full_matrices, compute_uv)


@defvjp(sla.svdvals)
def svdvals(g, ans, a, overwrite_a=False, check_finite=True):
    unwritten("svdvals", overwrite_a=overwrite_a)
    return singular_values_gradient("scipy.linalg.svdvals", g, ans, a)


@defjvp(sla.svdvals)
def svdvals_jvp(t, ans, a, overwrite_a=False, check_finite=True):
    unwritten("svdvals", overwrite_a=overwrite_a)
    return singular_values_tangent("scipy.linalg.svdvals", t, ans, a)


sequence_outputs.update((sla.eigh, sla.svd))


# ---------------------------------------------------------------- matrix functions: expm, sqrtm, logm


@defvjp(sla.expm)
def expm(g, ans, A):
    """The Frechet derivative of expm at ``A^T`` in the direction ``g``: a block of one larger expm (Najfeld, Havel)."""
    n = np.shape(A)[-1]
    block = np.block([[T(A), g], [np.zeros((n, n)), T(A)]])
    return sla.expm(block)[:n, n:]


@defjvp(sla.expm)
def expm_jvp(t, ans, A):
    n = np.shape(A)[-1]
    return sla.expm(np.block([[A, t], [np.zeros((n, n)), A]]))[:n, n:]


def primary_function_derivative(f, name, A, ans, direction):
    """``L_f(A, direction)``, the Frechet derivative of the matrix function ``f`` (``sqrtm``, ``logm``), as the
    top right block of ``f`` of the block matrix ``[[A, direction], [0, A]]`` (Higham, Functions of Matrices,
    3.2).  Only real results are covered: a real matrix whose principal root or logarithm is complex (a negative
    real eigenvalue), or a singular one (no derivative), is refused."""
    if np.ndim(A) != 2 or np.iscomplexobj(A) or np.iscomplexobj(ans) or np.iscomplexobj(direction):
        raise ValueError(f"astgrad: the gradient of scipy.linalg.{name} covers one real matrix (2-D) with a real "
                         f"result; got shape {np.shape(A)}" + (" and a complex result (a negative real eigenvalue)"
                                                               if np.iscomplexobj(ans) else ""))
    n = np.shape(A)[-1]
    eigenvalues = np.linalg.eigvals(A)
    scale = np.finfo(float).eps * n * max(1.0, float(np.abs(A).max(initial=0.0)))
    if np.any(np.abs(eigenvalues) <= scale) or np.any((eigenvalues.real < 0) & (np.abs(eigenvalues.imag) <= scale)):
        raise ValueError(f"astgrad: scipy.linalg.{name} has no derivative at this matrix (singular, or an "
                         f"eigenvalue on the negative real axis)")
    with np.errstate(all="ignore"):
        found = f(np.block([[A, direction], [np.zeros((n, n)), A]]))
    if np.iscomplexobj(found):
        found = found.real if np.allclose(found.imag, 0.0, atol=1e-12 * max(1.0, float(np.abs(found).max()))) else found
    if np.iscomplexobj(found) or not np.all(np.isfinite(found)):
        raise ValueError(f"astgrad: scipy.linalg.{name} has no derivative at this matrix (singular, or an "
                         f"eigenvalue on the negative real axis)")
    return found[:n, n:]


@defvjp(sla.sqrtm)
def sqrtm(g, ans, A):
    """The adjoint of the Frechet derivative of sqrtm at ``A`` is the derivative at ``A^T`` (a real primary function)."""
    return primary_function_derivative(sla.sqrtm, "sqrtm", T(A), ans, g)


@defjvp(sla.sqrtm)
def sqrtm_jvp(t, ans, A):
    return primary_function_derivative(sla.sqrtm, "sqrtm", A, ans, t)


@defvjp(sla.logm)
def logm(g, ans, A):
    """As sqrtm's: the Frechet derivative of logm at ``A^T`` in the direction ``g``."""
    return primary_function_derivative(sla.logm, "logm", T(A), ans, g)


@defjvp(sla.logm)
def logm_jvp(t, ans, A):
    return primary_function_derivative(sla.logm, "logm", A, ans, t)
