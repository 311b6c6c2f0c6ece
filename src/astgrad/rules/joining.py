"""Derivative rules for more joining, splitting and axis moves.

``np.append``, ``np.column_stack``, ``np.dstack``, ``np.hsplit``/``vsplit``/``dsplit``,
``np.atleast_3d`` and ``np.rollaxis`` only move elements, so each gradient
moves the incoming one back, as the rules in ``shapes`` do; each forward
rule moves the tangent forward with the function itself.
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp, primitive
from ._support import split_at
from .shapes import split


@defvjp(np.append)
def append(g, ans, arr, values, axis=None):
    if axis is None:
        head = np.size(arr)
        return np.reshape(g[:head], np.shape(arr)), np.reshape(g[head:], np.shape(values))
    cut = np.shape(arr)[axis]
    g_arr, g_values = split_at(g, [cut], axis)
    return g_arr, g_values


@defvjp(np.column_stack)
def column_stack(g, ans, tup):
    widths = [np.shape(x)[1] if np.ndim(x) == 2 else 1 for x in tup]
    pieces = split_at(g, np.cumsum(widths)[:-1], 1)
    return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, tup)]


@defvjp(np.hsplit)
def hsplit(g, ans, ary, indices_or_sections):
    return split(g, ans, ary, indices_or_sections, 1 if np.ndim(ary) > 1 else 0)


@defvjp(np.vsplit)
def vsplit(g, ans, ary, indices_or_sections):
    return split(g, ans, ary, indices_or_sections, 0)


@defvjp(np.dsplit)
def dsplit(g, ans, ary, indices_or_sections):
    return split(g, ans, ary, indices_or_sections, 2)


@defvjp(np.atleast_3d)
def atleast_3d(g, ans, ary):
    return np.reshape(g, np.shape(ary))



@defvjp(np.dstack)
def dstack(g, ans, tup):
    depths = [np.shape(np.atleast_3d(x))[2] for x in tup]
    pieces = split_at(g, np.cumsum(depths)[:-1], 2)
    return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, tup)]


def block_depth(arrays):
    return 1 + block_depth(arrays[0]) if isinstance(arrays, list) else 0


def block_ndim(arrays):
    return max(block_ndim(a) for a in arrays) if isinstance(arrays, list) else np.ndim(arrays)


def _block_pieces(g, arrays, ndim, depth):
    """``np.block``'s gradient: ``g`` cut as the nested lists joined it (innermost along the last axis)."""
    if not isinstance(arrays, list):
        return np.reshape(g, np.shape(arrays))
    axis = ndim - depth
    sizes = [_block_extent(a, ndim, axis) for a in arrays]
    parts = split_at(g, np.cumsum(sizes)[:-1], axis)
    return [_block_pieces(part, a, ndim, depth - 1) for part, a in zip(parts, arrays)]


def _block_extent(arrays, ndim, axis):
    """How far one entry of ``np.block``'s nested lists reaches along ``axis`` of the result."""
    if isinstance(arrays, list):
        inner_axis = ndim - block_depth(arrays)
        if inner_axis == axis:
            return sum(_block_extent(a, ndim, axis) for a in arrays)
        return _block_extent(arrays[0], ndim, axis)
    shape = (1,) * (ndim - np.ndim(arrays)) + np.shape(arrays)
    return shape[axis]


@defvjp(np.block)
def block(g, ans, arrays):
    depth = block_depth(arrays)
    return _block_pieces(g, arrays, max(depth, block_ndim(arrays)), depth)

def _rolled_axes(ndim, axis, start):
    """The permutation ``np.rollaxis(a, axis, start)`` applies, as numpy computes it."""
    axis = axis % ndim
    start = start + ndim if start < 0 else start
    if axis < start:
        start -= 1
    axes = [i for i in range(ndim) if i != axis]
    axes.insert(start, axis)
    return axes


@defvjp(np.rollaxis)
def rollaxis(g, ans, a, axis, start=0):
    return np.transpose(g, np.argsort(_rolled_axes(np.ndim(a), axis, start)))


def append_jvp_arr(t, ans, arr, values, axis=None):
    return np.append(t, np.zeros(np.shape(values), np.result_type(t)), axis=axis)


def append_jvp_values(t, ans, arr, values, axis=None):
    return np.append(np.zeros(np.shape(arr), np.result_type(t)), t, axis=axis)


defjvp(np.append, append_jvp_arr, append_jvp_values)


@defjvp(np.column_stack)
def column_stack_jvp(t, ans, tup):
    return np.column_stack(t)



@defjvp(np.block)
def block_jvp(t, ans, arrays):
    return np.block(t)


@defjvp(np.dstack)
def dstack_jvp(t, ans, tup):
    return np.dstack(t)

@defjvp(np.hsplit)
def hsplit_jvp(t, ans, ary, indices_or_sections):
    return np.hsplit(t, indices_or_sections)


@defjvp(np.vsplit)
def vsplit_jvp(t, ans, ary, indices_or_sections):
    return np.vsplit(t, indices_or_sections)


@defjvp(np.dsplit)
def dsplit_jvp(t, ans, ary, indices_or_sections):
    return np.dsplit(t, indices_or_sections)


@defjvp(np.atleast_3d)
def atleast_3d_jvp(t, ans, ary):
    return np.reshape(t, np.shape(ans))


@defjvp(np.rollaxis)
def rollaxis_jvp(t, ans, a, axis, start=0):
    return np.rollaxis(t, axis, start)


# -- a primitive the transformer introduces ---------------------------------

@primitive
def as_column(a):
    """An item of ``np.c_[...]``: a number as a 1x1 array, a vector as a column, anything else as it is."""
    a = np.asarray(a)
    if a.ndim == 0:
        return np.reshape(a, (1, 1))
    if a.ndim == 1:
        return np.reshape(a, (-1, 1))
    return a


@defvjp(as_column)
def as_column_vjp(g, ans, a):
    return np.reshape(g, np.shape(a))


@defjvp(as_column)
def as_column_jvp(t, ans, a):
    return np.reshape(t, np.shape(ans))
