"""Batching rules (``astgrad.vmap``): what a call becomes when its arguments carry a batch axis.

A batching rule is ``rule(bdims, *args, **kwargs)``: ``args`` are what the
primitive was called with, those that are batched holding every example
stacked along a new first axis, and ``bdims`` has one entry per positional
argument, ``0`` for a batched one and ``None`` for one all examples share
(a list or tuple argument's is ``0`` when its items are batched: vmap gives
every item the batch axis then).  It returns the
primitive's result for every example, stacked along a first axis.  The
batch axis is always first: ``vmap`` moves each argument's ``in_axes`` to
the front once, at the call, and the output's to ``out_axes`` at the end.

The transformer inlines a rule as it inlines a derivative rule: ``bdims``
and the ranks it knows fold the branches away, so ``np.sum(x, axis=0)``
of a batched ``x`` is written ``np.sum(x, axis=1)``.  A case a rule cannot
batch returns ``unbatchable(reason)``, which the transformer refuses at the
user's line (or which raises there, if only the run decides it).

Long: the batching rules of the table's primitives, grouped by kind as the
reverse and forward rules are, and the small helpers they share.

Elementwise functions (every ufunc, ``np.where``, ``np.clip``) share one
rule, :func:`elementwise`: numpy's broadcasting aligns trailing axes, so a
batched operand with fewer axes per example than another operand gets new
axes after its batch axis first; the operation is then applied unchanged.
"""

from __future__ import annotations

import builtins
import operator
from typing import NoReturn

import numpy as np

from ._registry import defbatch, find
from ._extra import (astype, first_extreme_mask, getitem, log_softmax, max_along, min_along, relu, scatter, setitem, sigmoid, softmax,
                     through_cast, written)
from .losses import leaky_relu
from ._subscripts import batched_einsum, dot_subscripts, matmul_subscripts
from ._support import filled, normalize_axis, reverse_cumsum, within

__all__ = ["elementwise", "rule_of", "masked", "shared", "listed", "batch_axis", "batch_shape", "batch_index",
           "broadcast_batch", "aligned", "gradients_of_items", "tangents_of_items", "unpacked_examples", "unbatchable",
           "Unbatchable"]


class Unbatchable(ValueError):
    """A call ``vmap`` has no batched form for (raised where only the run tells)."""


def unbatchable(reason) -> NoReturn:
    """What a rule returns for a case it cannot batch: refused at transform time where the transformer sees it."""
    raise Unbatchable(f"astgrad.vmap: {reason}")


# -- helpers of the rules (pure: with numbers for arguments, the transformer folds them) ----------

def batch_axis(axis):
    """An example's axis (or tuple of axes) as an axis of the batched array: one more where it counts from the front."""
    if isinstance(axis, (tuple, list)):
        return tuple(batch_axis(a) for a in axis)
    axis = operator.index(axis)
    return axis + 1 if axis >= 0 else axis


def every_axis(rank):
    """The axes of one example in a batched array of ``rank`` axes: all but the first."""
    return tuple(range(1, rank))


def transposed_axes(axes, rank):
    """``np.transpose``'s ``axes`` for one example (None: reversed) as the batched array's, of ``rank`` axes."""
    if axes is None:
        return (0,) + tuple(range(rank - 1, 0, -1))
    return (0,) + batch_axis(tuple(axes))


def batch_shape(x, shape):
    """``np.reshape``'s shape for one example as the batched array's: the batch size first."""
    return (np.shape(x)[0],) + (tuple(shape) if isinstance(shape, (tuple, list)) else (shape,))


def squeezed_axes(x):
    """The axes ``np.squeeze`` removes from each example of the batched ``x`` (never the batch axis)."""
    return tuple(i for i, size in enumerate(np.shape(x)) if i and size == 1)


def batch_index(index):
    """An example's index as the batched array's: every example's items, then the index.

    Basic indices (numbers, slices, ``None``, ``...``) and one array index
    keep their meaning; two array indices may move the indexed axes in
    front of the batch axis (numpy's rule for separated advanced indices),
    so they are refused.
    """
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [p for p in parts if not (p is None or p is Ellipsis or isinstance(p, (slice, int, np.integer)))]
    if len(arrays) > 1:
        unbatchable("an index with more than one array in it (take the items one index at a time)")
    if any(isinstance(p, (list, tuple)) for p in arrays):
        parts = tuple(np.asarray(p) if isinstance(p, (list, tuple)) else p for p in parts)
    return (slice(None),) + parts


def broadcast_batch(value, size):
    """``value``, which every example shares, stacked ``size`` times along a new first axis (a read-only view;
    item by item in a tuple or list)."""
    if isinstance(value, (tuple, list)):
        return type(value)(broadcast_batch(v, size) for v in value)
    return np.broadcast_to(value, (size,) + np.shape(value))


def aligned(x, rank):
    """The batched ``x`` with new axes after the batch axis, so that each example has ``rank`` axes.

    numpy aligns trailing axes: a batched operand of fewer axes per example
    than another operand would otherwise meet the other's axes with its
    batch axis.
    """
    missing = rank - (np.ndim(x) - 1)
    if missing <= 0:
        return x
    return np.reshape(x, np.shape(x)[:1] + (1,) * missing + np.shape(x)[1:])


def aligned_operands(axes, *args):
    """Each batched operand of ``args`` aligned (:func:`aligned`) to the largest rank of one example's operands."""
    rank = max(np.ndim(a) - (b is not None) for a, b in zip(args, axes))
    return tuple(aligned(a, rank) if b is not None else a for a, b in zip(args, axes))


def masked(test, taken, other, taken_batched, other_batched):
    """``taken`` where each example's ``test`` holds, else ``other`` (an ``if`` on a batched test whose two
    branches both ran): ``test`` holds one truth value per example, aligned to the values' axes."""
    if np.ndim(test) != 1:
        unbatchable("an if whose test is not one truth value per example")
    rank = max(np.ndim(taken) - taken_batched, np.ndim(other) - other_batched)
    return np.where(np.reshape(test, np.shape(test) + (1,) * rank), taken, other)


def shared(rule):
    """Mark a batching rule whose result every example shares (the shape of one example): not batched."""
    rule.shared = True
    return rule


def listed(rule):
    """Mark a batching rule whose result is a list or tuple of batched arrays (``np.split``, ``slogdet``)."""
    rule.items = True
    return rule


#: the batching rules of functions without a table entry that the reverse rules call with ``*args``
#: (rules/batching_rule_helpers.py): the sweep calls the rule where it would make the function's variant
HELPER_RULES: dict = {}


def defbatch_helper(fn, items=False):
    """Register the decorated ``rule(bdims, *args, **kwargs)`` as the batched form of ``fn``, a helper of the
    reverse rules transformed as a user function.  ``items``: whether it returns a list or tuple of batched
    arrays, or a function of the kinds of the call's positional arguments (``"array"``, ``"items"``, None
    for a value every example shares) saying so."""
    def register(rule):
        rule.items = items
        HELPER_RULES[fn] = rule
        return rule
    return register


def helper_rule(fn):
    """The batching rule :func:`defbatch_helper` registered for ``fn``, or None."""
    try:
        return HELPER_RULES.get(fn)
    except TypeError:  # an unhashable callable
        return None


def unbroadcast_examples(g, shape):
    """``unbroadcast`` of each example of the batched ``g`` to ``shape`` (never summing over the batch axis)."""
    shape = tuple(shape)
    have = np.shape(g)[1:]
    if have == shape:
        return g
    extra = len(have) - len(shape)
    if extra > 0:
        g = np.sum(g, axis=tuple(range(1, 1 + extra)))
        have = have[extra:]
    pad = max(-extra, 0)  # an example of lower rank lines up with shape's last axes
    axes = tuple(i - pad + 1 for i, n in enumerate(shape) if n == 1 and i >= pad and have[i - pad] != 1)
    if axes:
        g = np.sum(g, axis=axes, keepdims=True)
    if extra < 0:
        g = filled(aligned(g, len(shape)), np.shape(g)[:1] + shape)
    return g


def filled_examples(g, shape):
    """``filled`` of each example of the batched ``g`` over ``shape``."""
    shape = tuple(shape)
    return filled(aligned(g, len(shape)), np.shape(g)[:1] + shape)


def expand_reduced_examples(g, shape, axis=None, keepdims=False):
    """``expand_reduced`` of each example of the batched ``g`` (a reduction's gradient) over ``shape``."""
    shape = tuple(shape)
    if not keepdims and axis is not None and len(shape):
        g = np.expand_dims(g, batch_axis(normalize_axis(axis, len(shape))))
    return filled_examples(g, shape)


def scatter_examples(g, shape, index):
    """``scatter`` of each example of the batched ``g``: zeros of ``shape`` with it added at ``index``."""
    shape = tuple(shape)
    picked = np.broadcast_to(np.empty((), np.int8), shape)[index]  # no memory: the indexed shape
    return scatter(aligned(g, np.ndim(picked)), np.shape(g)[:1] + shape, batch_index(index))


def spread_examples(t, like, like_batched):
    """``tangent_of`` of each example of the batched ``t``: spread over ``like``'s shape (each example's, when
    ``like`` is batched too) and given its floating dtype."""
    if isinstance(like, (tuple, list)):  # the batching sweep keeps batched lists and tuples from here
        unbatchable("the tangent of a list or tuple")
    shape = tuple(np.shape(like)[1:] if like_batched else np.shape(like))
    dtype = getattr(like, "dtype", None)
    if dtype is not None and dtype.kind in "fc" and np.result_type(t) != dtype:
        t = np.asarray(np.real(t) if dtype.kind == "f" else t).astype(dtype)
    if np.shape(t)[1:] == shape:
        return t
    t = aligned(t, len(shape))
    return np.broadcast_to(t, np.shape(t)[:1] + shape)


def weighted_average_examples(a, axis, weights, a_batched, weights_batched, keepdims):
    """``np.average(a, axis, weights)`` of each example: weights of one example's shape, or (with one axis) a
    vector along it; numpy raises otherwise, and so does this."""
    example = np.shape(a)[1:] if a_batched else np.shape(a)
    given = np.shape(weights)[1:] if weights_batched else np.shape(weights)
    if given != example:
        if not isinstance(axis, (int, np.integer)) or not example or len(given) != 1 \
                or given[0] != example[axis % len(example)]:
            unbatchable("np.average with weights neither of one example's shape nor a vector along its one axis "
                        "(numpy refuses them)")
        trailing = (1,) * (len(example) - 1 - axis % len(example))  # the vector on that axis of the example
        weights = np.reshape(weights, np.shape(weights)[:1] + given + trailing) if weights_batched \
            else np.reshape(weights, given + trailing)
        weights = aligned(weights, len(example)) if weights_batched else weights
    total = a * weights
    axes = every_axis(np.ndim(total)) if axis is None else batch_axis(axis)
    scale = np.sum(np.broadcast_to(weights, np.shape(total)), axis=axes, keepdims=keepdims)
    if np.any(scale == 0.0):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")  # numpy's error, one example at a time
    return np.sum(total, axis=axes, keepdims=keepdims) / scale


def unpacked_examples(x):
    """What ``a, b = x`` unpacks from each example of the batched array ``x``: its items along the example's
    first axis, each batched (``x[:, 0]``, ``x[:, 1]``); an example without axes raises, as unpacking a number
    does."""
    if not isinstance(x, np.ndarray) or np.ndim(x) < 2:
        unbatchable("unpacking a value whose examples are numbers or not arrays")
    return np.moveaxis(x, 0, 1)


def gradients_of_items(value, count, needed=(), rule="a rule"):
    """``gradient_tuple`` of a rule's batched gradients: a tuple of one per argument, each batched, a None (no
    gradient, for an argument not differentiated) given the batch axis; one that returns a list is refused."""
    if isinstance(value, np.ndarray):
        value = (value,)
    if type(value) is not tuple:
        unbatchable(f"the gradients the rule of {rule} returns, which are not one array per argument")
    grads = tuple(value[:count]) + (None,) * (count - len(value))
    for i in needed:  # as gradient_tuple raises where a differentiated argument gets None
        if grads[i] is None:
            raise RuntimeError(f"the rule for {rule} returned no gradient for argument {i}, which requires grad; "
                               "return one gradient per positional argument, as a tuple")
    present = [g for g in grads if g is not None]
    if not present or any(not isinstance(g, np.ndarray) or not np.ndim(g) for g in present):
        unbatchable(f"the gradients the rule of {rule} returns, which are not one array per argument")
    return tuple(broadcast_batch(None, len(present[0])) if g is None else g for g in grads)  # None: no gradient


def tangents_of_items(t, like, like_batched):
    """``tangent_of`` of each item of ``t``, a tuple or list of batched tangents (a rule's of its tuple result
    ``like``, whose items are batched too where ``like_batched``): each spread over its item's shape."""
    if not isinstance(like, (tuple, list)) or len(like) != len(t):
        unbatchable("the tangent of a tuple or list spread over a value that is not one of its length")
    return type(t)(spread_examples(part, item, like_batched) for part, item in zip(t, like))


#: helpers the transformer evaluates when their arguments are numbers (``batch_axis(0)`` is ``1``)
FOLDABLE = {batch_axis, every_axis, transposed_axes}


# -- the generic rule of elementwise functions -------------------------------------------------------

def elementwise(bdims, *args):
    """The operands of an elementwise call, aligned: the call applied to them batches it.

    The transformer writes the operation itself on these operands (with the
    alignment spelled out where the ranks are known), so this rule returns
    the operands, not the result.
    """
    return aligned_operands(bdims, *args)


def rule_of(fn):
    """The batching rule of ``fn``: its table entry's, or the elementwise rule for a ufunc of one output (not a
    generalized one)."""
    entry = find(fn)
    if entry is not None and entry.batch is not None:
        return entry.batch
    if isinstance(fn, np.ufunc) and fn.nout == 1 and fn.signature is None or fn is builtins.abs:
        return elementwise  # a generalized ufunc (np.vecdot) has core axes: not elementwise
    return None


for _fn in (np.where, np.clip, relu, sigmoid, np.real, np.imag, np.angle, np.around, np.round, np.fix, np.sinc,
            np.nan_to_num, np.zeros_like, np.ones_like, np.empty_like, np.isclose, leaky_relu):
    defbatch(_fn, elementwise)


# -- what every example shares: the kind of values, not the values ---------------------------------

@defbatch(np.iscomplexobj)
@shared
def iscomplexobj_batched(bdims, x):
    return np.iscomplexobj(x)


@defbatch(np.isrealobj)
@shared
def isrealobj_batched(bdims, x):
    return np.isrealobj(x)


# -- reductions: the example's axis is one further along; None is every axis but the batch axis -------

@defbatch(np.sum)
def sum_batched(bdims, a, axis=None, dtype=None, keepdims=False):
    return np.sum(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype,
                  keepdims=keepdims)


@defbatch(np.mean)
def mean_batched(bdims, a, axis=None, dtype=None, keepdims=False):
    return np.mean(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype,
                   keepdims=keepdims)


@defbatch(np.prod)
def prod_batched(bdims, a, axis=None, dtype=None, keepdims=False):
    return np.prod(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype,
                   keepdims=keepdims)


@defbatch(np.max)
def max_batched(bdims, a, axis=None, keepdims=False, initial=np._NoValue):  # initial: a number every example shares
    return np.max(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims,
                  initial=initial)


@defbatch(np.min)
def min_batched(bdims, a, axis=None, keepdims=False, initial=np._NoValue):  # initial: a number every example shares
    return np.min(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims,
                  initial=initial)


@defbatch(np.std)
def std_batched(bdims, a, axis=None, dtype=None, ddof=0, keepdims=False):
    return np.std(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype, ddof=ddof,
                  keepdims=keepdims)


@defbatch(np.var)
def var_batched(bdims, a, axis=None, dtype=None, ddof=0, keepdims=False):
    return np.var(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype, ddof=ddof,
                  keepdims=keepdims)


@defbatch(np.nansum)
def nansum_batched(bdims, a, axis=None, dtype=None, keepdims=False):
    return np.nansum(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype,
                     keepdims=keepdims)


@defbatch(np.nanmean)
def nanmean_batched(bdims, a, axis=None, dtype=None, keepdims=False):
    return np.nanmean(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), dtype=dtype,
                      keepdims=keepdims)


@defbatch(np.nanmax)
def nanmax_batched(bdims, a, axis=None, keepdims=False):
    return np.nanmax(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims)


@defbatch(np.nanmin)
def nanmin_batched(bdims, a, axis=None, keepdims=False):
    return np.nanmin(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims)


@defbatch(np.ptp)
def ptp_batched(bdims, a, axis=None, keepdims=False):
    return np.ptp(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims)


@defbatch(np.all)
def all_batched(bdims, a, axis=None, keepdims=False):
    return np.all(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims)


@defbatch(np.any)
def any_batched(bdims, a, axis=None, keepdims=False):
    return np.any(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), keepdims=keepdims)


@defbatch(np.average)
def average_batched(bdims, a, axis=None, weights=None, returned=False, keepdims=False):
    if returned:
        return unbatchable("np.average with returned=True (divide np.sum(a * w) by np.sum(w))")
    if weights is not None:  # each example's weights, of its shape or along one axis
        return weighted_average_examples(a, axis, weights, bdims[0] is not None, len(bdims) > 2 and bdims[2] is not None,
                                         keepdims)
    return np.average(a, axis=every_axis(np.ndim(a)) if axis is None else batch_axis(axis), weights=weights,
                      keepdims=keepdims)


@defbatch(max_along)
def max_along_batched(bdims, a, axis, keepdims=False):
    return max_along(a, batch_axis(axis), keepdims)


@defbatch(min_along)
def min_along_batched(bdims, a, axis, keepdims=False):
    return min_along(a, batch_axis(axis), keepdims)


@defbatch(softmax)
def softmax_batched(bdims, x, axis):
    return softmax(x, batch_axis(axis))


@defbatch(log_softmax)
def log_softmax_batched(bdims, x, axis):
    return log_softmax(x, batch_axis(axis))


@defbatch(np.diff)
def diff_batched(bdims, a, n=1, axis=-1):
    return np.diff(a, n, axis=batch_axis(axis))


@defbatch(np.trace)
def trace_batched(bdims, a, offset=0, axis1=0, axis2=1):
    return np.trace(a, offset, batch_axis(axis1), batch_axis(axis2))


@defbatch(np.argmax)
def argmax_batched(bdims, a, axis=None):
    if axis is None:  # the index into the flattened example
        return np.argmax(np.reshape(a, (np.shape(a)[0], -1)), axis=1)
    return np.argmax(a, axis=batch_axis(axis))


@defbatch(np.argmin)
def argmin_batched(bdims, a, axis=None):
    if axis is None:
        return np.argmin(np.reshape(a, (np.shape(a)[0], -1)), axis=1)
    return np.argmin(a, axis=batch_axis(axis))


@defbatch(np.cumsum)
def cumsum_batched(bdims, a, axis=None):
    if axis is None:  # over the flattened example
        return np.cumsum(np.reshape(a, (np.shape(a)[0], -1)), axis=1)
    return np.cumsum(a, axis=batch_axis(axis))


@defbatch(np.cumprod)
def cumprod_batched(bdims, a, axis=None):
    if axis is None:
        return np.cumprod(np.reshape(a, (np.shape(a)[0], -1)), axis=1)
    return np.cumprod(a, axis=batch_axis(axis))


@defbatch(np.linalg.norm)
def norm_batched(bdims, x, ord=None, axis=None, keepdims=False):
    if axis is not None:
        return np.linalg.norm(x, ord, axis=batch_axis(axis), keepdims=keepdims)
    if keepdims:
        return unbatchable("np.linalg.norm over every axis with keepdims=True (give the axes)")
    if ord is None:  # the 2-norm of the flattened example
        return np.linalg.norm(np.reshape(x, (np.shape(x)[0], -1)), axis=1)
    return np.linalg.norm(x, ord, axis=every_axis(np.ndim(x)))


# -- one example's shape: shared by every example -----------------------------------------------------

@defbatch(np.shape)
@shared
def shape_batched(bdims, a):
    return np.shape(a)[1:]


@defbatch(np.ndim)
@shared
def ndim_batched(bdims, a):
    return np.ndim(a) - 1


@defbatch(np.size)
@shared
def size_batched(bdims, a, axis=None):
    if axis is None:
        return int(np.prod(np.shape(a)[1:]))
    return np.shape(a)[batch_axis(axis)]


# -- products ----------------------------------------------------------------------------------

@defbatch(np.matmul)
def matmul_batched(bdims, a, b):
    if np.ndim(a) - (bdims[0] is not None) == 0 or np.ndim(b) - (bdims[1] is not None) == 0:
        return unbatchable("a @ b of a number, which numpy refuses")
    if bdims[0] is not None and bdims[1] is not None:  # both batched: the ranks of one example decide
        if np.ndim(a) == 2 and np.ndim(b) == 2:
            return np.einsum("ni,ni->n", a, b)
        if np.ndim(a) == 2 and np.ndim(b) == 3:
            return np.einsum("ni,nij->nj", a, b)
        if np.ndim(a) == 3 and np.ndim(b) == 2:
            return np.einsum("nij,nj->ni", a, b)
        if np.ndim(a) == 3 and np.ndim(b) == 3:
            return a @ b
        return batched_einsum(matmul_subscripts(np.ndim(a) - 1, np.ndim(b) - 1), bdims, a, b)
    if bdims[0] is not None:  # a stack of rows or matrices times one matrix or vector
        if np.ndim(b) <= 2:
            return a @ b
        return batched_einsum(matmul_subscripts(np.ndim(a) - 1, np.ndim(b)), bdims, a, b)
    if np.ndim(b) == 2:  # one matrix or vector times a stack of vectors
        if np.ndim(a) == 1:
            return b @ a
        if np.ndim(a) == 2:
            return b @ np.transpose(a)
        return batched_einsum(matmul_subscripts(np.ndim(a), 1), bdims, a, b)
    if np.ndim(a) <= 2:
        return a @ b
    return batched_einsum(matmul_subscripts(np.ndim(a), np.ndim(b) - 1), bdims, a, b)


@defbatch(np.dot)
def dot_batched(bdims, a, b):
    if np.ndim(a) - (bdims[0] is not None) in (1, 2) and np.ndim(b) - (bdims[1] is not None) in (1, 2):
        return matmul_batched(bdims, a, b)  # np.dot is a @ b for vectors and matrices
    return batched_einsum(dot_subscripts(np.ndim(a) - (bdims[0] is not None), np.ndim(b) - (bdims[1] is not None)),
                          bdims, a, b)


# -- shapes ------------------------------------------------------------------------------------

@defbatch(np.ravel)
def ravel_batched(bdims, a):
    return np.reshape(a, (np.shape(a)[0], -1))


@defbatch(np.outer)
def outer_batched(bdims, a, b):  # np.outer flattens its operands
    if bdims[0] is not None and bdims[1] is not None:
        return np.einsum("ni,nj->nij", np.reshape(a, (np.shape(a)[0], -1)), np.reshape(b, (np.shape(b)[0], -1)))
    if bdims[0] is not None:
        return np.einsum("ni,j->nij", np.reshape(a, (np.shape(a)[0], -1)), np.ravel(b))
    return np.einsum("i,nj->nij", np.ravel(a), np.reshape(b, (np.shape(b)[0], -1)))


@defbatch(np.reshape)
def reshape_batched(bdims, a, shape=None):
    if bdims[1] is not None:
        return unbatchable("a shape that differs from example to example")
    return np.reshape(a, batch_shape(a, shape))


@defbatch(np.transpose)
def transpose_batched(bdims, a, axes=None):
    return np.transpose(a, transposed_axes(axes, np.ndim(a)))


@defbatch(np.swapaxes)
def swapaxes_batched(bdims, a, axis1, axis2):
    return np.swapaxes(a, batch_axis(axis1), batch_axis(axis2))


@defbatch(np.moveaxis)
def moveaxis_batched(bdims, a, source, destination):
    return np.moveaxis(a, batch_axis(source), batch_axis(destination))


@defbatch(np.expand_dims)
def expand_dims_batched(bdims, a, axis):
    return np.expand_dims(a, batch_axis(axis))


@defbatch(np.squeeze)
def squeeze_batched(bdims, a, axis=None):
    return np.squeeze(a, squeezed_axes(a) if axis is None else batch_axis(axis))


@defbatch(np.concatenate)
def concatenate_batched(bdims, arrays, axis=0):
    if axis is None:
        return unbatchable("np.concatenate with axis=None (flatten each part first)")
    return np.concatenate(arrays, axis=batch_axis(axis))


@defbatch(np.stack)
def stack_batched(bdims, arrays, axis=0):
    return np.stack(arrays, axis=batch_axis(axis))


@defbatch(np.split)
@listed
def split_batched(bdims, ary, indices_or_sections, axis=0):
    if bdims[1] is not None:
        return unbatchable("split points that differ from example to example")
    return np.split(ary, indices_or_sections, axis=batch_axis(axis))


@defbatch(np.array_split)
@listed
def array_split_batched(bdims, ary, indices_or_sections, axis=0):
    if bdims[1] is not None:
        return unbatchable("split points that differ from example to example")
    return np.array_split(ary, indices_or_sections, axis=batch_axis(axis))


@defbatch(np.flip)
def flip_batched(bdims, m, axis=None):
    return np.flip(m, every_axis(np.ndim(m)) if axis is None else batch_axis(axis))


@defbatch(np.fliplr)
def fliplr_batched(bdims, m):
    return np.flip(m, 2)


@defbatch(np.flipud)
def flipud_batched(bdims, m):
    return np.flip(m, 1)


@defbatch(np.roll)
def roll_batched(bdims, a, shift, axis=None):
    if bdims[1] is not None:
        return unbatchable("a shift that differs from example to example")
    if axis is None:  # over the flattened example
        return np.reshape(np.roll(np.reshape(a, (np.shape(a)[0], -1)), shift, axis=1), np.shape(a))
    return np.roll(a, shift, axis=batch_axis(axis))


@defbatch(np.repeat)
def repeat_batched(bdims, a, repeats, axis=None):
    if bdims[1] is not None:
        return unbatchable("repeats that differ from example to example")
    if axis is None:  # over the flattened example
        return np.repeat(np.reshape(a, (np.shape(a)[0], -1)), repeats, axis=1)
    return np.repeat(a, repeats, axis=batch_axis(axis))


@defbatch(np.tile)
def tile_batched(bdims, A, reps):
    if bdims[1] is not None:
        return unbatchable("repetitions that differ from example to example")
    return tiled_examples(A, reps)


def tiled_examples(A, reps):
    """``np.tile`` of each example of the batched ``A``: ``reps`` and the example's axes padded with ones in
    front to one length, as numpy pads them, and the batch axis repeated once."""
    reps = tuple(reps) if isinstance(reps, (tuple, list)) else (reps,)
    rank = max(np.ndim(A) - 1, len(reps))
    return np.tile(aligned(A, rank), (1,) + (1,) * (rank - len(reps)) + reps)


@defbatch(np.diagonal)
def diagonal_batched(bdims, a, offset=0, axis1=0, axis2=1):
    return np.diagonal(a, offset, batch_axis(axis1), batch_axis(axis2))


@defbatch(np.diag)
def diag_batched(bdims, v, k=0):
    if np.ndim(v) == 2:  # a vector per example: the matrix holding it on diagonal k
        return diagonal_matrices(v, k)
    if np.ndim(v) == 3:
        return np.diagonal(v, k, 1, 2)
    return unbatchable("np.diag of an example that is not a vector or a matrix, which numpy refuses")


def diagonal_matrices(v, k):
    """Each row of ``v`` on diagonal ``k`` of a square matrix of zeros: ``np.diag`` of each example."""
    n, size = np.shape(v)[0], np.shape(v)[1] + abs(k)
    out = np.zeros((n, size, size), dtype=np.result_type(v))
    rows = np.arange(np.shape(v)[1]) + max(-k, 0)
    out[:, rows, rows + k] = v
    return out


@defbatch(np.tril)
def tril_batched(bdims, m, k=0):
    if np.ndim(m) < 3:
        return unbatchable("np.tril of an example of fewer than two axes (write np.tril(np.broadcast_to(v, ...)))")
    return np.tril(m, k)


@defbatch(np.triu)
def triu_batched(bdims, m, k=0):
    if np.ndim(m) < 3:
        return unbatchable("np.triu of an example of fewer than two axes (write np.triu(np.broadcast_to(v, ...)))")
    return np.triu(m, k)


@defbatch(np.broadcast_to)
def broadcast_to_batched(bdims, array, shape):
    if bdims[1] is not None:
        return unbatchable("a shape that differs from example to example")
    return np.broadcast_to(aligned(array, len(shape) if isinstance(shape, (tuple, list)) else 1),
                           batch_shape(array, shape))


@defbatch(np.take)
def take_batched(bdims, a, indices, axis=None):
    if bdims[1] is not None:
        return unbatchable("indices that differ from example to example (np.take_along_axis takes them)")
    if axis is None:  # from the flattened example
        return np.take(np.reshape(a, (np.shape(a)[0], -1)), indices, axis=1)
    return np.take(a, indices, axis=batch_axis(axis))


@defbatch(np.sort)
def sort_batched(bdims, a, axis=-1, kind=None):
    if axis is None:
        return np.sort(np.reshape(a, (np.shape(a)[0], -1)), axis=1, kind=kind)
    return np.sort(a, axis=batch_axis(axis), kind=kind)


@defbatch(np.argsort)
def argsort_batched(bdims, a, axis=-1, kind=None):
    if axis is None:
        return np.argsort(np.reshape(a, (np.shape(a)[0], -1)), axis=1, kind=kind)
    return np.argsort(a, axis=batch_axis(axis), kind=kind)


@defbatch(np.hstack)
def hstack_batched(bdims, tup):  # each example's parts with at least one axis, joined along their first, or second
    parts = [aligned(x, 1) for x in tup]
    return np.concatenate(parts, axis=1 if np.ndim(parts[0]) == 2 else 2)


@defbatch(np.vstack)
def vstack_batched(bdims, tup):  # each example's parts with at least two axes (a vector is a row), joined
    return np.concatenate([aligned(x, 2) for x in tup], axis=1)


#: the functions whose batching rule takes a list or tuple of batched arrays (vmap gives every item the batch axis)
JOINS = {np.concatenate, np.stack, np.hstack, np.vstack}


@defbatch(first_extreme_mask)
def first_extreme_mask_batched(bdims, a, axis, largest):
    if axis is None:
        return unbatchable("first_extreme_mask over every axis")
    return first_extreme_mask(a, batch_axis(axis), largest)


@defbatch(getitem)
def getitem_batched(bdims, a, index):
    if bdims[1] is not None:
        return unbatchable("an index that differs from example to example")
    return a[batch_index(index)]


@defbatch(scatter)
def scatter_batched(bdims, g, shape, index):
    # the gradient of indexing, in generated code batched over its tangents (hessian, jacfwd)
    if bdims[1] is not None or bdims[2] is not None:
        return unbatchable("scatter over a shape or at an index that differs from example to example")
    return scatter_examples(g, shape, index)


@defbatch(astype)
def astype_batched(bdims, x, dtype):
    return astype(x, dtype)


@defbatch(np.copy)
def copy_batched(bdims, a):
    return np.copy(a)


# -- item writes (``y[i] = v`` is ``y = setitem(y, i, v)``) --------------------------------------------

def setitem_examples(a, index, value, a_batched, size):
    """Each example's copy of ``a`` with ``[index] = value`` written into it, ``value`` batched (its examples'
    axes aligned after the batch axis to the part each example writes) or shared; ``a`` shared gets the batch
    axis first (a new array, of its dtype)."""
    if type(a) is list or type(a) is dict:
        unbatchable("an item written into a list or dict with a value that differs from example to example")
    out = np.array(a if a_batched else np.broadcast_to(a, (size,) + np.shape(a)), copy=True)
    where = batch_index(index)
    if size is not None and np.ndim(value) and np.shape(value)[0] == size and value is not None:
        value = aligned(value, np.ndim(out[where]) - 1)
    out[where] = value
    return out


@defbatch(setitem)
def setitem_batched(bdims, a, index, value):
    if bdims[1] is not None:
        return unbatchable("an item written at an index that differs from example to example")
    if bdims[2] is None:
        return setitem_examples(a, index, value, True, None)
    return setitem_examples(a, index, value, bdims[0] is not None, np.shape(value)[0])


@defbatch(written)
def written_batched(bdims, g, index):
    if bdims[1] is not None:
        return unbatchable("an item written at an index that differs from example to example")
    return written(g, batch_index(index))


@defbatch(through_cast)
def through_cast_batched(bdims, g, into):
    if bdims[0] is None:  # shared, unless into's dtype made it zeros: the same for every example
        return broadcast_batch(through_cast(g, into), np.shape(into)[0])
    return through_cast(g, into)


# -- helpers of the rules, which generated gradients call (vmap(grad(f))); registered with the helpers'
# own rules (transform/runtime/helper_rules.py), where their entries are made ---------------------------

def unbroadcast_batched(bdims, g, shape):
    if bdims[1] is not None:
        return unbatchable("unbroadcast to a shape that differs from example to example")
    return unbroadcast_examples(g, shape)


def filled_batched(bdims, g, shape):
    if bdims[1] is not None:
        return unbatchable("filled over a shape that differs from example to example")
    return filled_examples(g, shape)


def within_batched(bdims, a, lo, hi):
    """``within`` of each example: the bounds (None, a number, or arrays batched or shared) aligned to ``a``."""
    return within(*aligned_operands(bdims, a, lo, hi))  # a shared a: the batched bounds give the mask its axis


def tangent_of_batched(bdims, t, like):
    if bdims[0] is None:
        return unbatchable("a tangent every example shares, spread over values with a batch axis")
    return spread_examples(t, like, bdims[1] is not None)


def reverse_cumsum_batched(bdims, x, axis):
    return reverse_cumsum(x, batch_axis(axis))


def expand_reduced_batched(bdims, g, shape, axis=None, keepdims=False):
    if bdims[1] is not None:
        return unbatchable("expand_reduced over a shape that differs from example to example")
    return expand_reduced_examples(g, shape, axis, keepdims)
