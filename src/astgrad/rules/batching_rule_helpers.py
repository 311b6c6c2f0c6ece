"""Batching rules of the functions the reverse rules call that take ``*args`` (what ``vmap(grad(f))`` meets).

A reverse rule is plain numpy code, and the batching sweep batches the
gradient code that calls it by transforming it (a ``vmap_`` variant), but
the sweep does not take ``*args`` apart: these functions have no table
entry of their own (they are transformed as user functions, so hessians
differentiate them), and get their batched form here instead
(:func:`~astgrad.rules.batching.defbatch_helper`), each against a loop of
the function over examples in tests/rules/test_batching_helpers.py.
``np.gradient``'s and the builtins' ``max``/``min`` run each example's
gradient in a Python loop (:func:`~.batching_linalg.looped`); the losses'
scale, ``np.meshgrid``'s and ``np.broadcast_arrays``' gradients are one
computation on the stack.
"""

from __future__ import annotations

import numpy as np

from ._support import reduced_count
from .batching import defbatch_helper, unbatchable
from .batching_linalg import looped
from .batching_shapes import batch_size, with_batch
from .grids import meshgrid as meshgrid_gradient, meshgrid_axis
from .losses import _per_element
from .selection import gradient as gradient_gradient
from .sequences import builtin_max, builtin_min
from .shapes import broadcast_arrays as broadcast_arrays_gradient

__all__: list = []


def _padded(bdims, count):
    return tuple(bdims) + (None,) * (count - len(bdims))


def _example_shape(x, batched):
    return np.shape(x)[1:] if batched is not None else np.shape(x)


@defbatch_helper(_per_element)
def per_element_batched(bdims, g, reduction, *operands):
    """The losses' gradient reaching each element: ``g``, divided by one example's count of elements for
    ``"mean"`` (every example has the same shape)."""
    bdims = _padded(bdims, 2 + len(operands))
    if bdims[1] is not None:
        unbatchable("a loss's reduction that differs from example to example")
    size = batch_size(bdims, g, reduction, *operands)
    if reduction != "mean":
        return with_batch(g, bdims[0], size)
    shape = np.broadcast_shapes(*(_example_shape(a, b) for a, b in zip(operands, bdims[2:]) if a is not None))
    return with_batch(g, bdims[0], size) / reduced_count(shape)


@defbatch_helper(meshgrid_gradient, items=True)
def meshgrid_gradient_batched(bdims, g, ans, *xi, copy=True, sparse=False, indexing="xy"):
    """Each vector's gradient sums its output's gradient over every axis of the example's grid but the
    vector's own (zeros where no gradient reached that output)."""
    bdims = _padded(bdims, 2 + len(xi))
    size = batch_size(bdims, g, ans, *xi)
    grads: list = []
    for i, (gi, x, batched) in enumerate(zip(g, xi, bdims[2:])):
        shape = (size,) + _example_shape(x, batched)
        if gi is None:
            grads.append(np.zeros(shape))
            continue
        gi = with_batch(gi, bdims[0], size)
        axis = meshgrid_axis(i, len(xi), indexing) + 1
        grads.append(np.reshape(np.sum(gi, axis=tuple(k for k in range(1, np.ndim(gi)) if k != axis)), shape))
    return tuple(grads)


@defbatch_helper(broadcast_arrays_gradient, items=True)
def broadcast_arrays_gradient_batched(bdims, g, ans, *args, subok=False):
    """Each output's gradient, zeros of its argument's example shape where none reached it."""
    bdims = _padded(bdims, 2 + len(args))
    size = batch_size(bdims, g, ans, *args)
    return tuple(np.zeros((size,) + _example_shape(a, b)) if gi is None else with_batch(gi, bdims[0], size)
                 for gi, a, b in zip(g, args, bdims[2:]))


@defbatch_helper(gradient_gradient, items=lambda kinds: len(kinds) > 3)
def gradient_gradient_batched(bdims, g, ans, f, *varargs, axis=None, edge_order=1):
    """np.gradient's reverse rule of each example, in a Python loop: an array, or with spacings given, a tuple
    of it and one gradient per spacing."""
    def each(g, ans, f, *varargs):
        return gradient_gradient(g, ans, f, *varargs, axis=axis, edge_order=edge_order)
    return looped(each, bdims, (g, ans, f, *varargs))


def _listed(kinds):
    """Whether ``max``/``min``'s reverse rule returns a list or tuple: for several items, or one list of them."""
    return len(kinds) > 3 or kinds[2] == "items"


def _extreme_batched(fn, bdims, g, ans, args, key, default):
    if key is not None or default is not None:
        unbatchable(f"{fn.__name__} given key= or default=")

    def each(g, ans, *args):
        return fn(g, ans, *args)
    return looped(each, bdims, (g, ans, *args))


@defbatch_helper(builtin_max, items=_listed)
def builtin_max_batched(bdims, g, ans, *args, key=None, default=None):
    """Python's ``max``'s reverse rule of each example, in a Python loop (all of ``g`` to the first largest)."""
    return _extreme_batched(builtin_max, bdims, g, ans, args, key, default)


@defbatch_helper(builtin_min, items=_listed)
def builtin_min_batched(bdims, g, ans, *args, key=None, default=None):
    """Python's ``min``'s reverse rule of each example, in a Python loop."""
    return _extreme_batched(builtin_min, bdims, g, ans, args, key, default)

