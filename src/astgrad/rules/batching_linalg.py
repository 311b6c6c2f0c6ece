"""Batching rules (``astgrad.vmap``) of ``numpy.linalg``'s other entries and of the primitives that take one
output of a decomposition (rules/decompositions.py, rules/_extra.py), beside rules/batching_products.py.

``numpy.linalg``'s decompositions work on stacks of matrices along leading
axes, one LAPACK call per matrix, so their batched form is the call itself,
once each example is known to hold matrices: an example of fewer axes is
refused, since numpy refuses it and the stack would read as one matrix.
The array-API names (``np.linalg.trace``, ``vecdot``, ``cross``...) act on
their last axes, or on one axis each operand counts for itself, which the
rules move last.  ``np.linalg.lstsq`` takes one matrix only: its rule loops
over the examples (:func:`lstsq_examples`).

A real matrix's ``eig`` and ``eigvals`` are real where every eigenvalue is,
and complex otherwise: batched, every example shares one dtype, complex
where any example's spectrum is, as the examples' results stacked are.  A flag, a mode or an order given a
batch axis is not checked: numpy raises for an array there.
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from ._extra import eigh_values, eigh_vectors, logabsdet, slogdet_sign, vector_norm
from .batching import aligned, batch_axis, every_axis, listed, matmul_batched, outer_batched, unbatchable
from .batching_products import cross_batched, tensordot_batched
from .linalg import einsum as einsum_gradient
from .decompositions import (eig_values, eig_vectors, lstsq_residuals, lstsq_solution, qr_q, qr_r, svd_u, svd_values,
                             svd_vh)

__all__: list = []


def matrices(a, what):
    """``a``, a batched value whose examples must be matrices (or stacks of them): refused otherwise."""
    if np.ndim(a) < 3:
        unbatchable(f"{what} of an example of fewer than two axes, which numpy refuses")
    return a


def vectors(a, batched, what):
    """``a``, whose examples (``batched``) or self must hold one axis: np.linalg.outer refuses others."""
    if np.ndim(a) - (batched is not None) != 1:
        unbatchable(f"{what} of an operand that is not a vector, which numpy refuses")
    return a


def last(x, batched, axis):
    """``x`` with the example's ``axis`` (the value's own, when it is not ``batched``) moved last."""
    return np.moveaxis(x, batch_axis(axis) if batched is not None else axis, -1)


def joined(bdims, x1, x2):
    """The two operands, each with the axis of the product last, batched ones aligned to the larger rank."""
    rank = max(np.ndim(x1) - (bdims[0] is not None), np.ndim(x2) - (bdims[1] is not None))
    return (aligned(x1, rank) if bdims[0] is not None else x1, aligned(x2, rank) if bdims[1] is not None else x2)


def looped(fn, bdims, args, kwargs=None):
    """``fn(*args, **kwargs)`` of each example, in a Python loop, its results stacked (item by item, for a
    tuple or list, which it stays): the batched form of a function that takes one example only.  ``bdims`` says
    which of ``args`` are batched (a tuple's or list's items each, where it is; a ``None`` item stays ``None``);
    an item of the results that is ``None`` for every example stays ``None``; examples whose results differ in
    shape, or are ``None`` for some examples only, are refused."""
    bdims = tuple(bdims) + (None,) * (len(args) - len(bdims))  # arguments left to their defaults: shared
    arrays = [x for a, b in zip(args, bdims) if b is not None for x in (a if isinstance(a, (tuple, list)) else [a])]
    size = next((np.shape(x)[0] for x in arrays if x is not None), None)
    if size is None:  # the batch axis is on a flag or an option the loop passes on as it is
        unbatchable(f"{getattr(fn, '__name__', fn)} given a batch axis on an argument other than its arrays")

    def example(a, b, k):
        if b is None:
            return a
        return type(a)(None if x is None else x[k] for x in a) if isinstance(a, (tuple, list)) else a[k]
    results = [fn(*[example(a, b, k) for a, b in zip(args, bdims)], **(kwargs or {})) for k in range(size)]
    several = isinstance(results[0], (tuple, list))
    parts = [[r[i] for r in results] for i in range(len(results[0]))] if several else [results]
    if any(len({np.shape(x) for x in part}) > 1 or len({x is None for x in part}) > 1 for part in parts):
        unbatchable(f"{getattr(fn, '__name__', fn)} of examples whose results differ in shape")
    stacked = [None if part[0] is None else np.stack([np.asarray(x) for x in part]) for part in parts]
    return (tuple(stacked) if isinstance(results[0], tuple) else stacked) if several else stacked[0]


# -- decompositions: the call, on a stack ------------------------------------------------------------

@defbatch(np.linalg.eig)
@listed
def eig_batched(bdims, a):
    return np.linalg.eig(matrices(a, "np.linalg.eig"))


@defbatch(np.linalg.eigvals)
def eigvals_batched(bdims, a):
    return np.linalg.eigvals(matrices(a, "np.linalg.eigvals"))


@defbatch(np.linalg.qr)
@listed
def qr_batched(bdims, a, mode="reduced"):
    if mode == "r":
        return unbatchable("np.linalg.qr with mode='r', which returns one array where the rule returns a tuple "
                           "(write np.linalg.qr(a)[1])")
    return np.linalg.qr(matrices(a, "np.linalg.qr"), mode)


@defbatch(np.linalg.lstsq)
@listed
def lstsq_batched(bdims, a, b, rcond=None):
    return lstsq_examples(a, b, bdims[0] is not None, bdims[1] is not None, rcond)


def lstsq_examples(a, b, a_batched, b_batched, rcond):
    """``np.linalg.lstsq`` of each example, in a Python loop (numpy solves one matrix at a time), its four
    results each stacked; examples whose residuals differ in shape (one of full rank, one not) are refused."""
    return looped(np.linalg.lstsq, (0 if a_batched else None, 0 if b_batched else None), (a, b), {"rcond": rcond})


@defbatch(einsum_gradient)
def einsum_gradient_batched(bdims, g, value, subscripts, *operands, **kwargs):
    """np.einsum's reverse rule (which generated gradients call) of each example, in a Python loop: the
    subscripts it builds for each operand's gradient are one example's; None stays in the place of the
    subscripts."""
    bdims = tuple(bdims) + (None,) * (3 + len(operands) - len(bdims))
    if bdims[2] is not None:
        unbatchable("np.einsum's gradient with subscripts that differ from example to example")

    def gradients(g, value, *operands):
        return tuple(einsum_gradient(g, value, subscripts, *operands, **kwargs)[1:])
    return (None, *looped(gradients, (bdims[0], bdims[1], *bdims[3:]), (g, value, *operands)))


@defbatch(eig_values)
def eig_values_batched(bdims, a):
    return eig_values(matrices(a, "np.linalg.eig"))


@defbatch(eig_vectors)
def eig_vectors_batched(bdims, a):
    return eig_vectors(matrices(a, "np.linalg.eig"))


@defbatch(eigh_values)
def eigh_values_batched(bdims, a, UPLO="L"):
    return eigh_values(matrices(a, "np.linalg.eigh"), UPLO)


@defbatch(eigh_vectors)
def eigh_vectors_batched(bdims, a, UPLO="L"):
    return eigh_vectors(matrices(a, "np.linalg.eigh"), UPLO)


@defbatch(logabsdet)
def logabsdet_batched(bdims, a):
    return logabsdet(matrices(a, "np.linalg.slogdet"))


@defbatch(slogdet_sign)
def slogdet_sign_batched(bdims, a):
    return slogdet_sign(matrices(a, "np.linalg.slogdet"))


@defbatch(svd_values)
def svd_values_batched(bdims, a, hermitian=False):
    return svd_values(matrices(a, "np.linalg.svd"), hermitian)


@defbatch(svd_u)
def svd_u_batched(bdims, a, full_matrices=True, hermitian=False):
    return svd_u(matrices(a, "np.linalg.svd"), full_matrices, hermitian)


@defbatch(svd_vh)
def svd_vh_batched(bdims, a, full_matrices=True, hermitian=False):
    return svd_vh(matrices(a, "np.linalg.svd"), full_matrices, hermitian)


@defbatch(qr_q)
def qr_q_batched(bdims, a, mode="reduced"):
    return qr_q(matrices(a, "np.linalg.qr"), mode)


@defbatch(qr_r)
def qr_r_batched(bdims, a, mode="reduced"):
    return qr_r(matrices(a, "np.linalg.qr"), mode)


@defbatch(lstsq_solution)
def lstsq_solution_batched(bdims, a, b, rcond=None):
    return lstsq_examples(a, b, bdims[0] is not None, bdims[1] is not None, rcond)[0]


@defbatch(lstsq_residuals)
def lstsq_residuals_batched(bdims, a, b, rcond=None):
    return lstsq_examples(a, b, bdims[0] is not None, bdims[1] is not None, rcond)[1]


@defbatch(vector_norm)
def vector_norm_batched(bdims, x, ord=2, axis=None, keepdims=False):
    return vector_norm(x, ord, every_axis(np.ndim(x)) if axis is None else batch_axis(axis), keepdims)


# -- the array-API names: the last axes, or one axis of each operand ----------------------------------

@defbatch(np.linalg.matmul)
def linalg_matmul_batched(bdims, x1, x2):
    return matmul_batched(bdims, x1, x2)


@defbatch(np.linalg.tensordot)
def linalg_tensordot_batched(bdims, x1, x2, axes=2):
    return tensordot_batched(bdims, x1, x2, axes)


@defbatch(np.linalg.outer)
def linalg_outer_batched(bdims, x1, x2):
    return outer_batched(bdims, vectors(x1, bdims[0], "np.linalg.outer"), vectors(x2, bdims[1], "np.linalg.outer"))


@defbatch(np.linalg.matrix_transpose)
def linalg_matrix_transpose_batched(bdims, x):
    return np.swapaxes(matrices(x, "np.linalg.matrix_transpose"), -1, -2)


@defbatch(np.linalg.trace)
def linalg_trace_batched(bdims, x, offset=0, dtype=None):
    return np.linalg.trace(matrices(x, "np.linalg.trace"), offset=offset, dtype=dtype)


@defbatch(np.linalg.diagonal)
def linalg_diagonal_batched(bdims, x, offset=0):
    return np.linalg.diagonal(matrices(x, "np.linalg.diagonal"), offset=offset)


@defbatch(np.linalg.vecdot)
def linalg_vecdot_batched(bdims, x1, x2, axis=-1):
    x1, x2 = joined(bdims, last(x1, bdims[0], axis), last(x2, bdims[1], axis))
    return np.linalg.vecdot(x1, x2)


@defbatch(np.linalg.cross)
def linalg_cross_batched(bdims, x1, x2, axis=-1):
    if np.shape(last(x1, bdims[0], axis))[-1] != 3 or np.shape(last(x2, bdims[1], axis))[-1] != 3:
        return unbatchable("np.linalg.cross of vectors that do not have three items, which numpy refuses")
    return cross_batched(bdims, x1, x2, axis=axis)
