"""Helpers that rules call, and the central un-broadcasting.

Every function here is written with numpy calls that taped Tensors also
dispatch (``np.sum``, ``np.reshape``, ``np.expand_dims``, ``np.broadcast_to``),
so a rule that uses them runs on arrays and, for higher-order derivatives on
the tape, on Tensors.
"""

from __future__ import annotations

import numpy as np

from . import _lazy
from ._lazy import ChunkedShape

__all__ = [
    "unbroadcast",
    "expand_reduced",
    "reduced_count",
    "normalize_axis",
    "tie_weights",
    "within",
    "product_of_others",
    "reverse_cumsum",
    "filled",
    "split_at",
    "integral",
    "SMALL",
]


def unbroadcast(g, shape):
    """Sum ``g`` down to ``shape``, undoing numpy broadcasting.

    The one place where a gradient is reduced to its argument's shape; both
    engines call it after every rule.  Returns ``g`` itself when the shapes
    already match, so it costs nothing in the common case.
    """
    shape = tuple(shape)
    kind = type(g)
    if kind is np.ndarray:
        g_shape = g.shape
    elif kind is float or kind is int:
        g_shape = ()
    else:
        g_shape = np.shape(g)
    if g_shape == shape:
        return g
    extra = len(g_shape) - len(shape)
    if extra > 0:
        g = np.sum(g, axis=tuple(range(extra)))
        g_shape = g_shape[extra:]
    pad = max(-extra, 0)  # a lower-rank g lines up with shape's last axes
    axes = tuple(i - pad for i, n in enumerate(shape) if n == 1 and i >= pad and g_shape[i - pad] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    if extra < 0:  # a gradient of lower rank than its argument
        g = filled(g, shape)
    return g


def normalize_axis(axis, ndim):
    """``axis`` as a tuple of non-negative ints (all axes for ``None``)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % ndim if ndim else 0 for a in axis))
    return (axis % ndim if ndim else 0,)


def expand_reduced(g, shape, axis=None, keepdims=False):
    """Broadcast the gradient of a reduction back to the reduced input's shape."""
    if not keepdims and axis is not None and len(shape):
        g = np.expand_dims(g, normalize_axis(axis, len(shape)))
    return filled(g, shape)


#: up to this many elements a new array costs less than a view or ``out=``:
#: a gradient spread from one value is a new array (as ``np.full`` makes it, a
#: fraction of ``np.broadcast_to``'s cost), and the transformer's ``add_into``
#: family computes a new result rather than writing into an operand.
SMALL = 4096


def filled(g, shape):
    """``np.broadcast_to(g, shape)``: the same values, cheaper for a single value.

    The one helper that spreads a gradient over a shape (the gradient of a
    reduction over every axis; generated code calls it by this name).  A
    Python float or int, or a 0-d floating array or numpy scalar, over a
    small shape becomes a new (writeable) array filled with it (a Python
    number as float64, anything else keeping its dtype); everything else,
    tensors included, goes through ``np.broadcast_to`` (a read-only view).
    Over the shape of a Dask array (a ``ChunkedShape``) it is a Dask array
    with that array's chunks.
    """
    kind = type(g)
    if kind is float or kind is int:
        dtype = _FLOAT64
    elif (kind is np.ndarray or isinstance(g, np.generic)) and g.ndim == 0 and g.dtype.kind in "fc":
        dtype = g.dtype
    elif type(shape) is ChunkedShape:  # the shape of a Dask array: a Dask array chunked as it was
        return _lazy.spread(g, shape)
    else:
        return np.broadcast_to(g, shape)
    count = 1
    for n in shape:
        count *= n
    if count > SMALL:
        if type(shape) is ChunkedShape:
            return _lazy.spread(g, shape)
        return np.broadcast_to(float(g) if kind is int else g, shape)  # float64 on both sides of SMALL
    spread = np.empty(shape, dtype)  # np.full's two steps, without its Python wrapper
    spread.fill(g)
    return spread


_FLOAT64 = np.dtype(np.float64)


def reduced_count(shape, axis=None):
    """How many elements each output of a reduction over ``axis`` combined."""
    count = 1
    if axis is None:
        for n in shape:
            count *= n
        return count
    for a in normalize_axis(axis, len(shape)):
        if len(shape):
            count *= shape[a]
    return count


def tie_weights(a, ans, axis=None, keepdims=False):
    """Where ``a`` attains the reduced extreme ``ans``, an even share of 1.

    Used by max/min reductions: tied extremes split the gradient evenly, as
    PyTorch's ``max()``/``amax`` do.
    """
    hits = a == expand_reduced(ans, np.shape(a), axis, keepdims)
    return hits / np.sum(hits, axis=axis, keepdims=True)


def within(a, lo, hi):
    """1 where ``lo <= a <= hi`` (bounds inclusive; ``None`` is unbounded)."""
    inside = np.ones(np.shape(a), dtype=bool)
    if lo is not None:
        inside = inside & (a >= lo)
    if hi is not None:
        inside = inside & (a <= hi)
    return inside


def product_of_others(a, axis=None):
    """Per element of ``a``, the product of the other elements reduced with it over ``axis``.

    The gradient of ``np.prod``, exact where ``a`` has zeros (``ans / a`` is
    0/0 there): with one zero in a reduction, the zero's entry is the product
    of the rest and every other entry is 0; with two or more, all are 0.
    """
    zero = a == 0
    zeros = np.sum(zero, axis=axis, keepdims=True)
    rest = np.prod(np.where(zero, 1, a), axis=axis, keepdims=True)
    at_nonzero = np.where(zeros == 0, rest, 0) / np.where(zero, 1, a)
    return np.where(zero, np.where(zeros == 1, rest, 0), at_nonzero)


def split_at(g, cuts, axis=0):
    """``np.split(g, cuts, axis)`` by slicing: the same views, and Dask arrays (which lack np.split) stay lazy."""
    before = (slice(None),) * (axis % np.ndim(g))
    bounds = [0] + [int(cut) for cut in cuts] + [None]  # no *cuts: hessians transform this helper
    return [g[before + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:])]


def reverse_cumsum(x, axis):
    """Sums of ``x`` from each position to the end along ``axis``."""
    return np.flip(np.cumsum(np.flip(x, axis), axis), axis)


def integral(dtype) -> bool:
    """Whether a result of ``dtype`` holds integers or booleans: piecewise constant, so its gradient is zero.

    Rules whose callable takes a ``dtype`` ask this of their result's dtype at
    run time, where a dtype held in a variable (``x.astype(dt)``) is known.
    """
    return dtype is not None and np.dtype(dtype).kind in "biu"
