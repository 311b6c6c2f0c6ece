"""Batching rules (``astgrad.vmap``) of ``scipy.special``'s entries, registered with their derivative rules once a
program imports ``scipy.special`` (``_deferred``).

The table's scipy.special functions are ufuncs, or (``polygamma``, ``zeta``)
elementwise functions of them: they share the elementwise rule.
``logsumexp``, ``softmax`` and ``log_softmax`` shift their axes as numpy's
reductions do (``axis=None``: every axis of the example).
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._registry import defbatch, find
from .batching import aligned, batch_axis, elementwise, every_axis, unbatchable

__all__: list = []

for _fn in [f for f in vars(special).values() if isinstance(f, np.ufunc) and f.nout == 1] + [special.polygamma,
                                                                                              special.zeta]:
    if find(_fn) is not None:  # the ufuncs with an entry
        defbatch(_fn, elementwise)


@defbatch(special.logsumexp)
def logsumexp_batched(bdims, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        return unbatchable("scipy.special.logsumexp with return_sign=True, which returns two arrays where the rule "
                           "returns one")
    return weighted_logsumexp(a, axis, b, keepdims, bdims[0] is not None, len(bdims) > 2 and bdims[2] is not None)


def weighted_logsumexp(a, axis, b, keepdims, a_batched, b_batched):
    """``logsumexp`` of each example: ``a`` and the weights ``b`` (either batched) aligned to one example's rank
    of their broadcast, ``axis=None`` every axis of it."""
    rank = max(np.ndim(a) - a_batched, 0 if b is None else np.ndim(b) - b_batched)
    a = aligned(a, rank) if a_batched else a
    b = aligned(b, rank) if b_batched else b
    return special.logsumexp(a, tuple(range(1, rank + 1)) if axis is None else batch_axis(axis), b, keepdims)


@defbatch(special.softmax)
def softmax_batched(bdims, x, axis=None):
    return special.softmax(x, every_axis(np.ndim(x)) if axis is None else batch_axis(axis))


@defbatch(special.log_softmax)
def log_softmax_batched(bdims, x, axis=None):
    return special.log_softmax(x, every_axis(np.ndim(x)) if axis is None else batch_axis(axis))
