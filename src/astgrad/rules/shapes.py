"""Derivative rules for numpy's shape, layout, joining and indexing functions.

These move elements around without changing them, so each gradient moves
the incoming gradient back: reshape it, transpose it back, split it, or add
it into zeros at the positions that were read.  They are linear, so each
forward rule is the function itself applied to the tangent (zeros standing
in for the tangent of the other values joined or chosen).
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter, scatter_along_axis
from ._registry import defjvp, defvjp, sequence_outputs
from ._support import integral, split_at, within


@defvjp(np.reshape)
def reshape(g, ans, a, shape=None, order="C", *, newshape=None, copy=None):
    if order == "C":
        return np.reshape(g, a.shape)
    return np.reshape(g, a.shape, order=fortran_order(order))


@defvjp(np.ravel)
def ravel(g, ans, a, order="C"):
    if order == "C":
        return np.reshape(g, a.shape)
    return np.reshape(g, a.shape, order=fortran_order(order))


def fortran_order(order):
    """``"F"``; numpy's ``"A"`` and ``"K"`` follow the memory layout, which a gradient does not share."""
    if order != "F":
        raise ValueError(f"astgrad: no gradient for a reshape with order={order!r}, which depends on memory "
                         "layout; write order='C' or 'F'")
    return order


@defvjp(np.squeeze)
def squeeze(g, ans, a, axis=None):
    return np.reshape(g, a.shape)


@defvjp(np.expand_dims)
def expand_dims(g, ans, a, axis):
    return np.reshape(g, a.shape)


@defvjp(np.atleast_1d)
def atleast_1d(g, ans, a):
    return np.reshape(g, a.shape)


@defvjp(np.atleast_2d)
def atleast_2d(g, ans, a):
    return np.reshape(g, a.shape)


@defvjp(np.broadcast_to)
def broadcast_to(g, ans, array, shape, subok=False):
    return g


@defvjp(np.copy)
def copy(g, ans, a, order="K", subok=False):
    return g


@defvjp(np.transpose)
def transpose(g, ans, a, axes=None):
    return np.transpose(g, None if axes is None else np.argsort(axes))


@defvjp(np.swapaxes)
def swapaxes(g, ans, a, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@defvjp(np.moveaxis)
def moveaxis(g, ans, a, source, destination):
    return np.moveaxis(g, destination, source)


@defvjp(np.flip)
def flip(g, ans, m, axis=None):
    return np.flip(g, axis)


@defvjp(np.fliplr)
def fliplr(g, ans, m):
    return np.fliplr(g)


@defvjp(np.flipud)
def flipud(g, ans, m):
    return np.flipud(g)


@defvjp(np.roll)
def roll(g, ans, a, shift, axis=None):
    back = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return np.roll(g, back, axis)


@defvjp(np.rot90)
def rot90(g, ans, m, k=1, axes=(0, 1)):
    return np.rot90(g, -k, axes)


# ------------------------------------------------------------------- joining


def _split_like(g, arrays, axis):
    """Pieces of ``g`` along ``axis`` with the sizes of ``arrays``."""
    ends = np.cumsum([np.shape(x)[axis] for x in arrays])
    return split_at(g, ends[:-1], axis)


@defvjp(np.concatenate)
def concatenate(g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return [np.zeros(np.shape(x)) for x in arrays]
    if axis is None:  # the arrays flattened, one after the other
        pieces = split_at(np.ravel(g), np.cumsum([np.size(x) for x in arrays])[:-1])
        return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, arrays)]
    return _split_like(g, arrays, axis)


@defvjp(np.stack)
def stack(g, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return [np.zeros(np.shape(x)) for x in arrays]
    return list(np.moveaxis(g, axis, 0))


@defvjp(np.hstack)
def hstack(g, ans, tup, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return [np.zeros(np.shape(x)) for x in tup]
    # numpy joins along the first axis when the first item is a number or a vector
    axis = 0 if np.ndim(tup[0]) <= 1 else 1
    pieces = _split_like(g, [np.atleast_1d(x) for x in tup], axis)
    return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, tup)]


@defvjp(np.vstack)
def vstack(g, ans, tup, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return [np.zeros(np.shape(x)) for x in tup]
    pieces = _split_like(g, [np.atleast_2d(x) for x in tup], 0)
    return [np.reshape(piece, np.shape(x)) for piece, x in zip(pieces, tup)]


@defvjp(np.split)
def split(g, ans, ary, indices_or_sections, axis=0):
    """``g`` holds one gradient per piece (``None`` for pieces that got none)."""
    pieces = [np.zeros(np.shape(a)) if gi is None else gi for gi, a in zip(g, ans)]
    return np.concatenate(pieces, axis=axis)


defvjp(np.array_split, split)


@defvjp(np.tile)
def tile(g, ans, A, reps):
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    shape = (1,) * (len(reps) - np.ndim(A)) + np.shape(A)
    reps = (1,) * (len(shape) - len(reps)) + reps
    interleaved = np.reshape(g, [n for pair in zip(reps, shape) for n in pair])
    return np.reshape(np.sum(interleaved, axis=tuple(range(0, 2 * len(shape), 2))), np.shape(A))


@defvjp(np.repeat)
def repeat(g, ans, a, repeats, axis=None):
    if axis is None:
        return np.reshape(repeat(np.ravel(g), None, np.ravel(a), repeats, 0), np.shape(a))
    if np.ndim(repeats) == 0:
        axis = axis % np.ndim(a)
        split = np.shape(a)[:axis] + (np.shape(a)[axis], repeats) + np.shape(a)[axis + 1:]
        return np.sum(np.reshape(g, split), axis=axis + 1)
    starts = np.concatenate([[0], np.cumsum(repeats)[:-1]])
    return np.add.reduceat(g, starts, axis=axis) * (np.asarray(repeats) > 0).reshape(
        [-1 if i == axis % np.ndim(a) else 1 for i in range(np.ndim(a))])


@defvjp(np.pad)
def pad(g, ans, array, pad_width, mode="constant", **kwargs):
    if mode != "constant":
        raise ValueError(f"astgrad: no gradient for numpy.pad(mode={mode!r}); only mode='constant' is supported")
    widths = np.broadcast_to(np.asarray(pad_width), (np.ndim(array), 2))
    return g[tuple(slice(int(before), np.shape(g)[i] - int(after)) for i, (before, after) in enumerate(widths))]


# -------------------------------------------------------- selecting elements


@defvjp(np.where)
def where(g, ans, condition, x=None, y=None):
    return None, np.where(condition, g, 0), np.where(condition, 0, g)


@defvjp(np.clip)
def clip(g, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    lo = a_min if min is None else min  # numpy 2: np.clip(x, min=0) is np.clip(x, 0, None)
    hi = a_max if max is None else max
    below = 0 if lo is None else a < lo
    above = 0 if hi is None else a > hi
    if lo is not None and hi is not None:  # a_min > a_max: numpy gives a_max everywhere
        below = below & (lo <= hi)
        above = above | (hi < lo)
    return g * within(a, lo, hi), g * below, g * above


@defvjp(np.take)
def take(g, ans, a, indices, axis=None, out=None, mode=None):
    if mode in ("clip", "wrap"):  # the positions numpy read: clip makes -1 the first, wrap makes n the first
        n = np.size(a) if axis is None else np.shape(a)[axis]
        indices = np.clip(indices, 0, n - 1) if mode == "clip" else np.mod(indices, n)
    if axis is None:
        return np.reshape(scatter(g, (np.size(a),), indices), np.shape(a))
    return scatter(g, np.shape(a), (slice(None),) * (axis % np.ndim(a)) + (indices,))


@defvjp(np.take_along_axis)
def take_along_axis(g, ans, arr, indices, axis):
    return scatter_along_axis(g, indices, axis, np.shape(arr))


@defvjp(np.sort)
def sort(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    if axis is None:  # numpy sorts the flattened array
        return np.reshape(sort(g, ans, np.ravel(a), -1), np.shape(a))
    return scatter_along_axis(g, np.argsort(a, axis=axis, kind="stable"), axis, np.shape(a))


@defvjp(np.diag)
def diag(g, ans, v, k=0):
    if np.ndim(v) == 1:
        return np.diag(g, k)
    return _embed_diagonal(g, np.shape(v), k)


def _embed_diagonal(g, shape, k):
    """Zeros of ``shape`` (2-D) with ``g`` on diagonal ``k``."""
    rows = np.arange(np.shape(g)[-1]) + max(-k, 0)
    return scatter(g, shape, (rows, rows + k))



@defvjp(np.diagflat)
def diagflat(g, ans, v, k=0):
    return np.reshape(np.diagonal(g, k), np.shape(v))

@defvjp(np.diagonal)
def diagonal(g, ans, a, offset=0, axis1=0, axis2=1):
    moved_shape = tuple(n for i, n in enumerate(np.shape(a)) if i not in (axis1 % np.ndim(a), axis2 % np.ndim(a)))
    moved_shape += (np.shape(a)[axis1], np.shape(a)[axis2])
    rows = np.arange(np.shape(g)[-1]) + max(-offset, 0)
    spread = scatter(g, moved_shape, (Ellipsis, rows, rows + offset))
    return np.moveaxis(spread, (-2, -1), (axis1, axis2))


@defvjp(np.triu)
def triu(g, ans, m, k=0):
    return np.triu(g, k)


@defvjp(np.tril)
def tril(g, ans, m, k=0):
    return np.tril(g, k)


# ------------------------------------------------------------ forward rules


@defjvp(np.reshape)
def reshape_jvp(t, ans, a, shape=None, order="C", *, newshape=None, copy=None):
    if order == "C":
        return np.reshape(t, ans.shape)
    return np.reshape(t, ans.shape, order=fortran_order(order))


@defjvp(np.ravel)
def ravel_jvp(t, ans, a, order="C"):
    if order == "C":
        return np.reshape(t, ans.shape)
    return np.reshape(t, ans.shape, order=fortran_order(order))


@defjvp(np.squeeze)
def squeeze_jvp(t, ans, a, axis=None):
    return np.reshape(t, np.shape(ans))


for _fn in (np.expand_dims, np.atleast_1d, np.atleast_2d):
    defjvp(_fn, squeeze_jvp)



@defvjp(np.broadcast_arrays)
def broadcast_arrays(g, ans, *args, subok=False):
    """``g`` holds one gradient per output, ``None`` for outputs that got none (zeros of the argument's shape
    then); the engines sum each back."""
    return tuple(np.zeros(np.shape(a)) if gi is None else gi for gi, a in zip(g, args))


def broadcast_arrays_jvp(t, ans, *args, argnum, subok=False):
    """Argument ``argnum``'s tangent moves its own output only."""
    return tuple(np.broadcast_to(t, np.shape(out)) if i == argnum else np.zeros(np.shape(out))
                 for i, out in enumerate(ans))


defjvp(np.broadcast_arrays, rest=broadcast_arrays_jvp)


def unstack(g, ans, x, axis=0):
    """``g`` holds one gradient per slice (``None`` for slices that got none): stacked back along ``axis``."""
    return np.stack([np.zeros(np.shape(a)) if gi is None else gi for gi, a in zip(g, ans)], axis=axis)


def unstack_jvp(t, ans, x, axis=0):
    return np.unstack(t, axis=axis)


if hasattr(np, "unstack"):  # numpy 2.1 on
    defvjp(np.unstack, unstack)
    defjvp(np.unstack, unstack_jvp)
    sequence_outputs.add(np.unstack)  # a tuple of slices: generated code reads each one's gradient apart

@defjvp(np.broadcast_to)
def broadcast_to_jvp(t, ans, array, shape, subok=False):
    return np.broadcast_to(t, shape)


@defjvp(np.copy)
def copy_jvp(t, ans, a, order="K", subok=False):
    return t


@defjvp(np.transpose)
def transpose_jvp(t, ans, a, axes=None):
    return np.transpose(t, axes)


@defjvp(np.moveaxis)
def moveaxis_jvp(t, ans, a, source, destination):
    return np.moveaxis(t, source, destination)


# Their own transposes: the reverse rule, given a tangent, is the forward rule.
defjvp(np.swapaxes, swapaxes)
defjvp(np.flip, flip)
defjvp(np.fliplr, fliplr)
defjvp(np.flipud, flipud)


@defjvp(np.roll)
def roll_jvp(t, ans, a, shift, axis=None):
    return np.roll(t, shift, axis)


@defjvp(np.rot90)
def rot90_jvp(t, ans, m, k=1, axes=(0, 1)):
    return np.rot90(t, k, axes)


@defjvp(np.concatenate)
def concatenate_jvp(t, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.concatenate(t, axis=axis)


@defjvp(np.stack)
def stack_jvp(t, ans, arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.stack(t, axis=axis)


@defjvp(np.hstack)
def hstack_jvp(t, ans, tup, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.hstack(t)


@defjvp(np.vstack)
def vstack_jvp(t, ans, tup, dtype=None, casting="same_kind"):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.vstack(t)


if hasattr(np, "row_stack"):  # numpy's deprecated alias of vstack: a library function needs its own entry
    defvjp(np.row_stack, vstack)
    defjvp(np.row_stack, vstack_jvp)


@defjvp(np.split)
def split_jvp(t, ans, ary, indices_or_sections, axis=0):
    return np.split(t, indices_or_sections, axis)


@defjvp(np.array_split)
def array_split_jvp(t, ans, ary, indices_or_sections, axis=0):
    return np.array_split(t, indices_or_sections, axis)


@defjvp(np.tile)
def tile_jvp(t, ans, A, reps):
    return np.tile(t, reps)


@defjvp(np.repeat)
def repeat_jvp(t, ans, a, repeats, axis=None):
    return np.repeat(t, repeats, axis)


@defjvp(np.pad)
def pad_jvp(t, ans, array, pad_width, mode="constant", **kwargs):
    if mode != "constant":
        raise ValueError(f"astgrad: no tangent for numpy.pad(mode={mode!r}); only mode='constant' is supported")
    return np.pad(t, pad_width)  # the padding is a constant: its tangent is 0


def where_jvp_x(t, ans, condition, x=None, y=None):
    return np.where(condition, t, 0)


def where_jvp_y(t, ans, condition, x=None, y=None):
    return np.where(condition, 0, t)


defjvp(np.where, None, where_jvp_x, where_jvp_y)


def clip_jvp_a(t, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    return t * within(a, a_min if min is None else min, a_max if max is None else max)


def clip_jvp_min(t, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    below = a < a_min
    if a_max is not None:  # a_min > a_max: numpy gives a_max everywhere
        below = below & (a_min <= a_max)
    return t * below


def clip_jvp_max(t, ans, a, a_min=None, a_max=None, out=None, *, min=None, max=None, **kwargs):
    above = a > a_max
    if a_min is not None:
        above = above | (a_max < a_min)
    return t * above


defjvp(np.clip, clip_jvp_a, clip_jvp_min, clip_jvp_max)


@defjvp(np.take)
def take_jvp(t, ans, a, indices, axis=None, out=None, mode=None):
    return np.take(t, indices, axis, mode=mode)


@defjvp(np.take_along_axis)
def take_along_axis_jvp(t, ans, arr, indices, axis):
    return np.take_along_axis(t, indices, axis)


@defjvp(np.sort)
def sort_jvp(t, ans, a, axis=-1, kind=None, order=None, stable=None):
    if axis is None:  # numpy sorts the flattened array
        return sort_jvp(np.ravel(t), ans, np.ravel(a), -1)
    return np.take_along_axis(t, np.argsort(a, axis=axis, kind="stable"), axis)  # ties as the reverse rule


@defjvp(np.diag)
def diag_jvp(t, ans, v, k=0):
    return np.diag(t, k)


@defjvp(np.diagonal)
def diagonal_jvp(t, ans, a, offset=0, axis1=0, axis2=1):
    return np.diagonal(t, offset, axis1, axis2)



@defjvp(np.diagflat)
def diagflat_jvp(t, ans, v, k=0):
    return np.diagflat(t, k)

@defjvp(np.triu)
def triu_jvp(t, ans, m, k=0):
    return np.triu(t, k)


@defjvp(np.tril)
def tril_jvp(t, ans, m, k=0):
    return np.tril(t, k)
