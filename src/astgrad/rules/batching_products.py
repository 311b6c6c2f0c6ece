"""Batching rules of products and linear algebra (``astgrad.vmap``), beside those of rules/batching.py.

Products move axes by their operands' ranks, so most are written as one
``np.einsum`` (:func:`batched_einsum`): the product's subscripts for one
example, with a letter of the batch axis in front of each batched operand
and of the result.  ``np.linalg``'s matrix functions already work on
stacks of matrices along leading axes, so their batched form is the call
itself, once each example is known to hold matrices (an example of fewer
axes is refused: numpy refuses it, and the stack would read as one matrix).
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from ._subscripts import batched_einsum, dot_subscripts, tensordot_subscripts
from .batching import aligned, batch_axis, every_axis, listed, unbatchable

__all__: list = []


def _rank(x, batched):
    return np.ndim(x) - (batched is not None)


# -- products ----------------------------------------------------------------------------------

@defbatch(np.einsum)
def einsum_batched(bdims, subscripts, *operands, **kwargs):
    if not isinstance(subscripts, str) or bdims[0] is not None:
        return unbatchable("np.einsum without subscripts in one string every example shares")
    return batched_einsum(subscripts, bdims[1:], *operands)


@defbatch(np.tensordot)
def tensordot_batched(bdims, a, b, axes=2):
    return batched_einsum(tensordot_subscripts(_rank(a, bdims[0]), _rank(b, bdims[1]), axes), bdims, a, b)


@defbatch(np.inner)
def inner_batched(bdims, a, b):
    ra, rb = _rank(a, bdims[0]), _rank(b, bdims[1])
    subscripts = dot_subscripts(ra, rb) if ra == 0 or rb == 0 else tensordot_subscripts(ra, rb, ([ra - 1], [rb - 1]))
    return batched_einsum(subscripts, bdims, a, b)


@defbatch(np.vdot)
def vdot_batched(bdims, a, b):  # np.vdot flattens its operands and conjugates the first
    a = np.reshape(np.conj(a), (np.shape(a)[0], -1)) if bdims[0] is not None else np.ravel(np.conj(a))
    b = np.reshape(b, (np.shape(b)[0], -1)) if bdims[1] is not None else np.ravel(b)
    return batched_einsum("i,i->", bdims, a, b)


@defbatch(np.cross)
def cross_batched(bdims, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa, axisb, axisc = axis, axis, axis
    a = np.moveaxis(a, batch_axis(axisa) if bdims[0] is not None else axisa, -1)
    b = np.moveaxis(b, batch_axis(axisb) if bdims[1] is not None else axisb, -1)
    rank = max(_rank(a, bdims[0]), _rank(b, bdims[1]))
    out = np.cross(aligned(a, rank) if bdims[0] is not None else a, aligned(b, rank) if bdims[1] is not None else b)
    if np.shape(a)[-1] == 2 and np.shape(b)[-1] == 2:
        return out  # two 2-vectors: a number each, no axis of the result's to move
    return np.moveaxis(out, -1, batch_axis(axisc))


# -- numpy.linalg: the call itself, on stacks of matrices ------------------------------------------

def _matrices(a, what):
    if np.ndim(a) < 3:
        unbatchable(f"{what} of an example of fewer than two axes, which numpy refuses")
    return a


@defbatch(np.linalg.inv)
def inv_batched(bdims, a):
    return np.linalg.inv(_matrices(a, "np.linalg.inv"))


@defbatch(np.linalg.det)
def det_batched(bdims, a):
    return np.linalg.det(_matrices(a, "np.linalg.det"))


@defbatch(np.linalg.slogdet)
@listed
def slogdet_batched(bdims, a):
    return np.linalg.slogdet(_matrices(a, "np.linalg.slogdet"))


@defbatch(np.linalg.cholesky)
def cholesky_batched(bdims, a, upper=False):
    return np.linalg.cholesky(_matrices(a, "np.linalg.cholesky"), upper=upper)


@defbatch(np.linalg.eigvalsh)
def eigvalsh_batched(bdims, a, UPLO="L"):
    return np.linalg.eigvalsh(_matrices(a, "np.linalg.eigvalsh"), UPLO)


@defbatch(np.linalg.eigh)
@listed
def eigh_batched(bdims, a, UPLO="L"):
    return np.linalg.eigh(_matrices(a, "np.linalg.eigh"), UPLO)


@defbatch(np.linalg.svd)
@listed
def svd_batched(bdims, a, full_matrices=True, compute_uv=True, hermitian=False):
    if not compute_uv:
        return unbatchable("np.linalg.svd with compute_uv=False (write np.linalg.svdvals(a))")
    return np.linalg.svd(_matrices(a, "np.linalg.svd"), full_matrices, hermitian=hermitian)


@defbatch(np.linalg.svdvals)
def svdvals_batched(bdims, x):
    return np.linalg.svdvals(_matrices(x, "np.linalg.svdvals"))


@defbatch(np.linalg.pinv)
def pinv_batched(bdims, a, rcond=None, hermitian=False):
    if len(bdims) > 1 and bdims[1] is not None:
        return unbatchable("an rcond that differs from example to example")
    return np.linalg.pinv(_matrices(a, "np.linalg.pinv"), rcond, hermitian)


@defbatch(np.linalg.matrix_power)
def matrix_power_batched(bdims, a, n):
    if bdims[1] is not None:
        return unbatchable("a power that differs from example to example")
    return np.linalg.matrix_power(_matrices(a, "np.linalg.matrix_power"), n)


@defbatch(np.linalg.solve)
def solve_batched(bdims, a, b):
    a = _matrices(a, "np.linalg.solve") if bdims[0] is not None else a
    rb = _rank(b, bdims[1])
    if rb == 1:  # one right-hand side per example: a column
        return np.linalg.solve(a, np.expand_dims(b, -1))[..., 0]
    rank = max(_rank(a, bdims[0]), rb)
    return np.linalg.solve(aligned(a, rank) if bdims[0] is not None else a,
                           aligned(b, rank) if bdims[1] is not None else b)


@defbatch(np.linalg.matrix_norm)
def matrix_norm_batched(bdims, x, keepdims=False, ord="fro"):
    return np.linalg.matrix_norm(_matrices(x, "np.linalg.matrix_norm"), keepdims=keepdims, ord=ord)


@defbatch(np.linalg.vector_norm)
def vector_norm_batched(bdims, x, axis=None, keepdims=False, ord=2):
    if axis is None and keepdims:
        return unbatchable("np.linalg.vector_norm over every axis with keepdims=True (give the axes)")
    return np.linalg.vector_norm(x, axis=every_axis(np.ndim(x)) if axis is None else batch_axis(axis),
                                 keepdims=keepdims, ord=ord)
