"""Batching rules (``astgrad.vmap``) of numpy's shape, joining, splitting and padding functions.

Beside rules/batching.py, whose conventions these follow: each rule gets
its function's arguments, the batched ones with every example stacked along
a new first axis, and returns every example's result stacked the same way.
An axis of one example is checked against the example's rank before it is
moved one along (:func:`example_axis`): a negative axis past the example's
first would otherwise name the batch axis and give numbers for a call numpy
refuses.

Long: the rules of many small functions, each a few lines, grouped by kind
(shapes, joining, splitting, padding, building arrays), and the helpers the
other modules of numpy's rules (batching_reductions.py,
batching_sequences.py, batching_layers.py) share.
"""

from __future__ import annotations

import operator

import numpy as np

from ._extra import scatter_along_axis
from ._registry import defbatch
from .batching import FOLDABLE, JOINS, aligned, broadcast_batch, diagonal_matrices, listed, shared, unbatchable
from .joining import as_column

__all__: list = []


# -- helpers ------------------------------------------------------------------------------------

def example_rank(x, batched):
    """The rank of one example of ``x`` (batched when ``batched`` is not None)."""
    return np.ndim(x) - (batched is not None)


def example_axis(axis, rank):
    """One example's ``axis`` (of ``rank`` axes) as the batched array's, non-negative; numpy's AxisError where
    the example has no such axis (a negative one past it would name the batch axis)."""
    axis = operator.index(axis)
    if not -rank <= axis < rank:
        raise np.exceptions.AxisError(axis, rank)
    return axis % rank + 1


def example_axes(axis, rank):
    """:func:`example_axis` of an int or of each of a tuple of axes; every example axis for None."""
    if axis is None:
        return tuple(range(1, rank + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(example_axis(a, rank) for a in axis)
    return example_axis(axis, rank)


def batch_size(bdims, *args):
    """The number of examples: the first axis of the first batched argument (a list's first item's)."""
    for value, batched in zip(args, bdims):
        if batched is not None:
            if isinstance(value, (list, tuple)):
                return np.shape(value[0])[0]
            return np.shape(value)[0]
    return unbatchable("a call without an argument that has a batch axis")


def settings_batched(bdims, first):
    """Whether a positional argument from ``first`` on (an axis, a count, a ddof) has a batch axis: numpy would
    broadcast it against the batch, not read one per example, so the rules refuse it."""
    return any(b is not None for b in bdims[first:])


def with_batch(value, batched, size):
    """``value`` with the batch axis: as it is when batched, else every example's copy (a read-only view)."""
    return value if batched is not None else broadcast_batch(value, size)


def flat_examples(a, batched, size):
    """Each example of ``a`` flattened: an array of ``size`` rows (a view of the shared ``a`` repeated)."""
    if batched is not None:
        return np.reshape(a, (size, -1))
    return np.broadcast_to(np.ravel(a), (size, np.size(a)))


FOLDABLE.update({example_axis, example_axes, settings_batched})  # folded where their arguments are numbers


# -- shapes -------------------------------------------------------------------------------------

@defbatch(np.atleast_1d)
def atleast_1d_batched(bdims, ary):  # one array; several give a tuple, which this rule does not give
    return aligned(np.asarray(ary), 1)


@defbatch(np.atleast_2d)
def atleast_2d_batched(bdims, ary):  # axes in front of one example's: a vector is a row
    return aligned(np.asarray(ary), 2)


@defbatch(np.atleast_3d)
def atleast_3d_batched(bdims, ary):
    return examples_at_least_3d(np.asarray(ary))


def examples_at_least_3d(x):
    """``np.atleast_3d`` of each example of ``x``: a number as (1, 1, 1), a vector (m,) as (1, m, 1), a matrix
    (m, k) as (m, k, 1)."""
    rank = np.ndim(x) - 1
    if rank == 0:
        return np.reshape(x, (np.shape(x)[0], 1, 1, 1))
    if rank == 1:
        return x[:, None, :, None]
    if rank == 2:
        return x[:, :, :, None]
    return x


@defbatch(as_column)
def as_column_batched(bdims, a):
    return examples_as_columns(np.asarray(a))


def examples_as_columns(x):
    """Each example of ``x`` as ``np.column_stack`` and ``np.c_`` read it: a number as (1, 1), a vector as a
    column, anything else as it is."""
    rank = np.ndim(x) - 1
    if rank == 0:
        return np.reshape(x, (np.shape(x)[0], 1, 1))
    if rank == 1:
        return x[:, :, None]
    return x


@defbatch(np.matrix_transpose)
def matrix_transpose_batched(bdims, x):
    if np.ndim(x) < 3:
        return unbatchable("np.matrix_transpose of an example of fewer than two axes, which numpy refuses")
    return np.swapaxes(x, -1, -2)


@defbatch(np.rot90)
def rot90_batched(bdims, m, k=1, axes=(0, 1)):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if len(axes) != 2:
        return unbatchable("np.rot90 with axes that are not two, which numpy refuses")
    rank = np.ndim(m) - 1
    return np.rot90(m, k, (example_axis(axes[0], rank), example_axis(axes[1], rank)))


@defbatch(np.rollaxis)
def rollaxis_batched(bdims, a, axis, start=0):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    rank = np.ndim(a) - 1
    start = operator.index(start)
    if not -rank <= start <= rank:
        raise np.exceptions.AxisError(f"start arg requires {-rank} <= start < {rank + 1}, but {start} was passed in")
    return np.rollaxis(a, example_axis(axis, rank), (start + rank if start < 0 else start) + 1)


@defbatch(np.diagflat)
def diagflat_batched(bdims, v, k=0):
    if len(bdims) > 1 and bdims[1] is not None:
        return unbatchable("a diagonal that differs from example to example")
    return diagonal_matrices(np.reshape(v, (np.shape(v)[0], -1)), k)


@defbatch(np.unstack)
@listed
def unstack_batched(bdims, x, axis=0):
    return np.unstack(x, axis=example_axis(axis, np.ndim(x) - 1))


@defbatch(np.broadcast_arrays)
@listed
def broadcast_arrays_batched(bdims, *args):
    """Each example's arrays broadcast together: every one to the batch size and one example's shape."""
    size = batch_size(bdims, *args)
    shape = np.broadcast_shapes(*(np.shape(a)[1:] if b is not None else np.shape(a) for a, b in zip(args, bdims)))
    return tuple(np.broadcast_to(aligned(a, len(shape)) if b is not None else a, (size,) + shape)
                 for a, b in zip(args, bdims))


@defbatch(np.meshgrid)
@listed
def meshgrid_batched(bdims, *xi, copy=True, sparse=False, indexing="xy"):
    """Each example's flattened vectors laid along their axes of the grid (the first two swapped for ``"xy"``),
    then broadcast to the grid (``sparse=False``) or to the batch size only."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    size = batch_size(bdims, *xi)
    count = len(xi)
    places = list(range(count))
    if indexing == "xy" and count > 1:
        places[0], places[1] = 1, 0
    grids = []
    for x, batched, place in zip(xi, bdims, places):
        flat = np.reshape(x, (size, -1)) if batched is not None else np.reshape(x, (1, -1))
        grids.append(np.reshape(flat, (np.shape(flat)[0],) + (1,) * place + (-1,) + (1,) * (count - 1 - place)))
    if sparse:
        grids = [np.broadcast_to(g, (size,) + np.shape(g)[1:]) for g in grids]
    else:
        grids = list(np.broadcast_arrays(*(np.broadcast_to(g, (size,) + np.shape(g)[1:]) for g in grids)))
    return tuple(np.copy(g) for g in grids) if copy else tuple(grids)


# -- joining: lists whose every item has the batch axis (vmap gives it to each) --------------------

@defbatch(np.column_stack)
def column_stack_batched(bdims, tup):
    return np.concatenate([examples_as_columns(np.asarray(x)) for x in tup], axis=2)


@defbatch(np.dstack)
def dstack_batched(bdims, tup):
    return np.concatenate([examples_at_least_3d(np.asarray(x)) for x in tup], axis=3)


def row_stack_batched(bdims, tup):  # np.vstack's: each example's parts with at least two axes, joined
    return np.concatenate([aligned(np.asarray(x), 2) for x in tup], axis=1)


if hasattr(np, "row_stack"):  # numpy's deprecated alias of vstack, gone from numpy 2.5 (rules/shapes.py)
    defbatch(np.row_stack, row_stack_batched)


@defbatch(np.block)
def block_batched(bdims, arrays):
    """A flat list (nested lists of batched arrays are refused where they are built): each example's parts
    given the same number of axes, at least one, and joined along the last."""
    if type(arrays) is not list:
        return unbatchable("np.block of a tuple, which numpy refuses (pass a list)")
    parts = [np.asarray(x) for x in arrays]
    rank = max([np.ndim(x) - 1 for x in parts] + [1])
    return np.concatenate([aligned(x, rank) for x in parts], axis=-1)


JOINS.update({np.column_stack, np.dstack, np.block} | ({np.row_stack} if hasattr(np, "row_stack") else set()))


@defbatch(np.append)
def append_batched(bdims, arr, values, axis=None):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    size = batch_size(bdims, arr, values)
    if axis is None:  # each example's two flattened
        return np.concatenate((flat_examples(arr, bdims[0], size), flat_examples(values, bdims[1], size)), axis=1)
    arr, values = with_batch(arr, bdims[0], size), with_batch(values, bdims[1], size)
    return np.concatenate((arr, values), axis=example_axis(axis, np.ndim(arr) - 1))


# -- splitting --------------------------------------------------------------------------------

@defbatch(np.hsplit)
@listed
def hsplit_batched(bdims, ary, indices_or_sections):
    if bdims[1] is not None:
        return unbatchable("split points that differ from example to example")
    if np.ndim(ary) < 2:
        return unbatchable("np.hsplit of an example without axes, which numpy refuses")
    return np.split(ary, indices_or_sections, axis=2 if np.ndim(ary) > 2 else 1)


@defbatch(np.vsplit)
@listed
def vsplit_batched(bdims, ary, indices_or_sections):
    if bdims[1] is not None:
        return unbatchable("split points that differ from example to example")
    if np.ndim(ary) < 3:
        return unbatchable("np.vsplit of an example of fewer than two axes, which numpy refuses")
    return np.split(ary, indices_or_sections, axis=1)


@defbatch(np.dsplit)
@listed
def dsplit_batched(bdims, ary, indices_or_sections):
    if bdims[1] is not None:
        return unbatchable("split points that differ from example to example")
    if np.ndim(ary) < 4:
        return unbatchable("np.dsplit of an example of fewer than three axes, which numpy refuses")
    return np.split(ary, indices_or_sections, axis=3)


# -- padding ---------------------------------------------------------------------------------

@defbatch(np.pad)
def pad_batched(bdims, array, pad_width, mode="constant", **kwargs):
    """numpy pads one axis at a time from that axis's own values: each example's widths and values per axis,
    with nothing added along the batch axis, pad every example as it alone would be padded."""
    if bdims[1] is not None:
        return unbatchable("padding that differs from example to example")
    if callable(mode):
        return unbatchable("np.pad with a function for mode, which numpy also calls along the batch axis")
    rank = np.ndim(array) - 1
    widths = np.asarray(pad_width)
    if widths.dtype.kind not in "iu":
        raise TypeError("`pad_width` must be of integral type.")
    widths = np.concatenate([np.zeros((1, 2), widths.dtype), np.broadcast_to(widths, (rank, 2))])
    given = {key: value if value is None or isinstance(value, str) else per_axis_pairs(value, rank)
             for key, value in kwargs.items()}
    return np.pad(array, widths, mode, **given)


def per_axis_pairs(value, rank):
    """One example's ``(before, after)`` pairs of an ``np.pad`` setting, one per axis, with a first pair (its
    own first, unused: nothing is added along the batch axis) for the batch axis."""
    pairs = np.broadcast_to(np.asarray(value), (rank, 2))
    return np.concatenate([pairs[:1] if rank else np.zeros((1, 2), pairs.dtype), pairs])


# -- indexing along an axis --------------------------------------------------------------------

@defbatch(np.take_along_axis)
def take_along_axis_batched(bdims, arr, indices, axis=-1):
    """Each example's indices into its own array: a shared one gets a batch axis of one, which numpy's
    indexing broadcasts."""
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if axis is None:
        return taken_along_flat_examples(bdims, arr, indices)
    return np.take_along_axis(arr if bdims[0] is not None else np.asarray(arr)[None],
                              indices if bdims[1] is not None else np.asarray(indices)[None],
                              axis=example_axis(axis, np.ndim(arr) - (bdims[0] is not None)))


def taken_along_flat_examples(bdims, arr, indices):
    """``np.take_along_axis(arr, indices, None)`` of each example: into the flattened example, with a vector of
    indices."""
    arr = arr if bdims[0] is not None else np.asarray(arr)[None]
    indices = indices if bdims[1] is not None else np.asarray(indices)[None]
    if np.ndim(indices) != 2:
        unbatchable("np.take_along_axis with axis=None and indices that are not a vector, which numpy refuses")
    return np.take_along_axis(np.reshape(arr, (np.shape(arr)[0], -1)), indices, axis=1)


@defbatch(scatter_along_axis)
def scatter_along_axis_batched(bdims, g, indices, axis, shape):
    # the gradient of np.take_along_axis, in generated code batched over its tangents (hessian, jacfwd)
    if bdims[2] is not None or bdims[3] is not None:
        return unbatchable("scatter_along_axis along an axis or into a shape that differs from example to example")
    size = batch_size(bdims, g, indices)
    g, indices = with_batch(g, bdims[0], size), with_batch(indices, bdims[1], size)
    return scatter_along_axis(g, indices, example_axis(axis, len(shape)), (size,) + tuple(shape))


# -- building arrays ---------------------------------------------------------------------------

@defbatch(np.array)
def array_batched(bdims, object, dtype=None, *, copy=True, ndmin=0):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if isinstance(object, (list, tuple)):  # a list of batched items: each example's items stacked
        out = np.array(np.stack(object, axis=1), dtype=dtype, copy=copy)
    else:
        out = np.array(object, dtype=dtype, copy=copy)
    return aligned(out, ndmin)


@defbatch(np.asarray)
def asarray_batched(bdims, a, dtype=None):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if isinstance(a, (list, tuple)):
        return np.asarray(np.stack(a, axis=1), dtype=dtype)
    return np.asarray(a, dtype=dtype)


JOINS.update({np.array, np.asarray})


@defbatch(np.full)
def full_batched(bdims, shape, fill_value, dtype=None, order="C"):
    if bdims[0] is not None:
        return unbatchable("a shape that differs from example to example")
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (operator.index(shape),)
    fill = np.asarray(fill_value)
    out = np.empty((np.shape(fill)[0],) + shape, dtype=fill.dtype if dtype is None else dtype)
    np.copyto(out, aligned(fill, len(shape)), casting="unsafe")
    return out


@defbatch(np.full_like)
def full_like_batched(bdims, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    size = batch_size(bdims, a, fill_value)
    like = np.asarray(a)
    if shape is None:
        shape = np.shape(like)[1:] if bdims[0] is not None else np.shape(like)
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (operator.index(shape),)
    out = np.empty((size,) + shape, dtype=like.dtype if dtype is None else dtype)
    fill = aligned(np.asarray(fill_value), len(shape)) if bdims[1] is not None else fill_value
    np.copyto(out, fill, casting="unsafe")
    return out


@defbatch(np.result_type)
@shared
def result_type_batched(bdims, *arrays_and_dtypes):
    return np.result_type(*arrays_and_dtypes)  # an example's dtype is its stack's
