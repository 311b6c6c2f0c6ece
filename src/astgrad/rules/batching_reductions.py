"""Batching rules (``astgrad.vmap``) of numpy's reductions, cumulative functions, order statistics and tests
of whole arrays, beside those of rules/batching.py.

A reduction over one example's axes is the same reduction over those axes
one further along (every axis but the batch axis for ``axis=None``); a
function of the flattened example (``axis=None`` of a cumulative sum)
flattens each example first.  A result whose shape leads with another
argument's (``np.quantile``'s ``q``) gets the batch axis moved in front.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._extra import vector_norm
from ._registry import defbatch
from .batching import aligned, aligned_operands, every_axis, unbatchable
from .batching_shapes import batch_size as batch_size_of, example_axes, example_axis, example_rank, settings_batched
from .batching_shapes import with_batch as with_batch_of
from .selection import gradient_along

__all__: list = []


def _given(bdims, k):
    return len(bdims) > k and bdims[k] is not None


# -- reductions --------------------------------------------------------------------------------

@defbatch(np.amax)
def amax_batched(bdims, a, axis=None, out=None, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.amax(a, axis=example_axes(axis, np.ndim(a) - 1), keepdims=keepdims)


@defbatch(np.amin)
def amin_batched(bdims, a, axis=None, out=None, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.amin(a, axis=example_axes(axis, np.ndim(a) - 1), keepdims=keepdims)


@defbatch(np.nanvar)
def nanvar_batched(bdims, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.nanvar(a, axis=example_axes(axis, np.ndim(a) - 1), dtype=dtype, ddof=ddof, keepdims=keepdims)


@defbatch(np.nanstd)
def nanstd_batched(bdims, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.nanstd(a, axis=example_axes(axis, np.ndim(a) - 1), dtype=dtype, ddof=ddof, keepdims=keepdims)


@defbatch(np.nanprod)
def nanprod_batched(bdims, a, axis=None, dtype=None, out=None, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.nanprod(a, axis=example_axes(axis, np.ndim(a) - 1), dtype=dtype, keepdims=keepdims)


@defbatch(np.count_nonzero)
def count_nonzero_batched(bdims, a, axis=None, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    return np.count_nonzero(a, axis=example_axes(axis, np.ndim(a) - 1), keepdims=keepdims)


@defbatch(vector_norm)
def vector_norm_batched(bdims, x, ord=2, axis=None, keepdims=False):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if len(bdims) > 1 and bdims[1] is not None:
        return unbatchable("an order that differs from example to example")
    return vector_norm(x, ord, example_axes(axis, np.ndim(x) - 1), keepdims)


# -- order statistics: the batch axis moved in front of q's ---------------------------------------

@defbatch(np.median)
def median_batched(bdims, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.median(a, axis=example_axes(axis, np.ndim(a) - 1), overwrite_input=overwrite_input, keepdims=keepdims)


@defbatch(np.nanmedian)
def nanmedian_batched(bdims, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.nanmedian(a, axis=example_axes(axis, np.ndim(a) - 1), overwrite_input=overwrite_input,
                        keepdims=keepdims)


def quantiles_of_examples(fn, bdims, a, q, axis, out, overwrite_input, method, keepdims):
    """``fn(a, q, ...)`` (``np.quantile`` and its kin) of each example: numpy puts q's axes first, then the
    batch axis, which moves in front.  Quantiles ``q`` that differ from example to example: a loop over the
    examples, one call each (numpy has no form taking a q per row)."""
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if bdims[1] is not None:
        size = np.shape(q)[0]
        a = a if bdims[0] is not None else np.broadcast_to(a, (size,) + np.shape(a))
        return np.stack([fn(a[k], q[k], axis=axis, overwrite_input=False, method=method, keepdims=keepdims)
                         for k in range(size)])
    value = fn(a, q, axis=example_axes(axis, np.ndim(a) - 1), overwrite_input=overwrite_input, method=method,
               keepdims=keepdims)
    return np.moveaxis(value, np.ndim(q), 0) if np.ndim(q) else value


@defbatch(np.quantile)
def quantile_batched(bdims, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return quantiles_of_examples(np.quantile, bdims, a, q, axis, out, overwrite_input, method, keepdims)


@defbatch(np.nanquantile)
def nanquantile_batched(bdims, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return quantiles_of_examples(np.nanquantile, bdims, a, q, axis, out, overwrite_input, method, keepdims)


@defbatch(np.percentile)
def percentile_batched(bdims, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False):
    return quantiles_of_examples(np.percentile, bdims, a, q, axis, out, overwrite_input, method, keepdims)


@defbatch(np.nanpercentile)
def nanpercentile_batched(bdims, a, q, axis=None, out=None, overwrite_input=False, method="linear",
                          keepdims=False):
    return quantiles_of_examples(np.nanpercentile, bdims, a, q, axis, out, overwrite_input, method, keepdims)


@defbatch(np.partition)
def partition_batched(bdims, a, kth, axis=-1, kind="introselect", order=None):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if bdims[1] is not None:
        return unbatchable("a kth that differs from example to example")
    if axis is None:  # of the flattened example
        return np.partition(np.reshape(a, (np.shape(a)[0], -1)), kth, axis=1, kind=kind, order=order)
    return np.partition(a, kth, axis=example_axis(axis, np.ndim(a) - 1), kind=kind, order=order)


@defbatch(np.sort_complex)
def sort_complex_batched(bdims, a):  # sorts along the last axis
    if np.ndim(a) < 2:
        return unbatchable("np.sort_complex of an example without axes, which numpy refuses")
    return np.sort_complex(a)


# -- cumulative -------------------------------------------------------------------------------

@defbatch(np.nancumsum)
def nancumsum_batched(bdims, a, axis=None, dtype=None, out=None):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    if axis is None:  # over the flattened example
        return np.nancumsum(np.reshape(a, (np.shape(a)[0], -1)), axis=1, dtype=dtype)
    return np.nancumsum(a, axis=example_axis(axis, np.ndim(a) - 1), dtype=dtype)


@defbatch(np.nancumprod)
def nancumprod_batched(bdims, a, axis=None, dtype=None, out=None):
    if settings_batched(bdims, 1):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    if axis is None:
        return np.nancumprod(np.reshape(a, (np.shape(a)[0], -1)), axis=1, dtype=dtype)
    return np.nancumprod(a, axis=example_axis(axis, np.ndim(a) - 1), dtype=dtype)


def cumulative_axis(x, axis):
    """The batched axis of ``np.cumulative_sum``'s ``axis`` (None only for an example that is a vector)."""
    if axis is None:
        if np.ndim(x) != 2:
            unbatchable("np.cumulative_sum or np.cumulative_prod without axis of an example that is not a vector, "
                        "which numpy refuses")
        return 1
    return example_axis(axis, np.ndim(x) - 1)


@defbatch(np.cumulative_sum)
def cumulative_sum_batched(bdims, x, axis=None, dtype=None, out=None, include_initial=False):
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.cumulative_sum(x, axis=cumulative_axis(x, axis), dtype=dtype, include_initial=include_initial)


@defbatch(np.cumulative_prod)
def cumulative_prod_batched(bdims, x, axis=None, dtype=None, out=None, include_initial=False):
    if out is not None:
        return unbatchable("an out= array, which would hold one example's result")
    return np.cumulative_prod(x, axis=cumulative_axis(x, axis), dtype=dtype, include_initial=include_initial)


# -- differences and integrals -------------------------------------------------------------------

@defbatch(np.ediff1d)
def ediff1d_batched(bdims, ary, to_end=None, to_begin=None):
    """numpy's steps on each flattened example: the ends cast to its dtype (same_kind, else numpy's error)."""
    size = _size(bdims, ary, to_end, to_begin)
    flat = np.reshape(ary, (size, -1)) if bdims[0] is not None else np.broadcast_to(np.ravel(ary), (size, np.size(ary)))
    ends: list = []
    for k, end in ((2, to_begin), (1, to_end)):
        if end is None:
            ends.append(None)
            continue
        end = np.asarray(end)
        if not np.can_cast(end, flat.dtype, casting="same_kind"):
            raise TypeError("dtype of `to_begin` or `to_end` must be compatible with input `ary` under the "
                            "`same_kind` rule.")
        batched = len(bdims) > k and bdims[k] is not None
        ends.append(np.reshape(end, (size, -1)) if batched else np.broadcast_to(np.ravel(end), (size, np.size(end))))
    begin, end = ends
    steps = max(np.shape(flat)[1] - 1, 0)
    before = 0 if begin is None else np.shape(begin)[1]
    after = 0 if end is None else np.shape(end)[1]
    out = np.empty((size, before + steps + after), dtype=flat.dtype)
    if before:
        out[:, :before] = begin
    if after:
        out[:, before + steps:] = end
    np.subtract(flat[:, 1:], flat[:, :-1], out[:, before:before + steps])
    return out


def _size(bdims, *args):
    for value, batched in zip(args, bdims):
        if batched is not None:
            return np.shape(value)[0]
    return unbatchable("a call without an argument that has a batch axis")


@defbatch(np.trapezoid)
def trapezoid_batched(bdims, y, x=None, dx=1.0, axis=-1):
    """numpy's sum of ``d * (y[1:] + y[:-1]) / 2`` along ``axis``, with each example's steps ``d``: from ``dx``,
    from coordinates ``x`` along the axis, or from ``x`` of ``y``'s shape differenced along it."""
    if settings_batched(bdims, 3):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    y_batched = bdims[0] is not None
    x_batched = len(bdims) > 1 and bdims[1] is not None
    dx_batched = len(bdims) > 2 and bdims[2] is not None
    size = _size(bdims, y, x, dx)
    y = np.asarray(y) if y_batched else np.broadcast_to(y, (size,) + np.shape(y))
    rank = np.ndim(y) - 1
    at = example_axis(axis, rank)
    if x is None:
        d = np.reshape(dx, (size,) + (1,) * rank) if dx_batched else dx
    elif example_rank(x, bdims[1]) == 1:  # coordinates along the axis
        steps = np.diff(x, axis=-1)
        shape = [1] * rank
        shape[at - 1] = np.shape(steps)[-1]
        d = np.reshape(steps, (size,) + tuple(shape)) if x_batched else np.reshape(steps, shape)
    elif x_batched:
        d = aligned(np.diff(x, axis=example_axis(axis, np.ndim(x) - 1)), rank)
    else:
        if np.ndim(x) > rank:
            return unbatchable("np.trapezoid with x of more axes than y")
        d = np.diff(x, axis=axis)
    first = [slice(None)] * (rank + 1)
    second = [slice(None)] * (rank + 1)
    first[at], second[at] = slice(1, None), slice(None, -1)
    return np.add.reduce(d * (y[tuple(first)] + y[tuple(second)]) / 2.0, axis=at)


def _per_example_spacing(h, batched, size, rank):
    """A spacing every example has its own number of, as a divisor of each example's differences."""
    if np.ndim(h) != 1:
        unbatchable("np.gradient with coordinates that differ from example to example (pass one number per "
                    "example, the uniform spacing)")
    return np.reshape(h, (size,) + (1,) * rank)


@defbatch(np.gradient)
def gradient_batched(bdims, f, *varargs, axis=None, edge_order=1):
    """One axis of each example (a vector's, or ``axis`` an int): several give a list, which this rule does
    not give.  A spacing that differs from example to example (one number each) divides the differences of
    unit spacing."""
    rank = np.ndim(f) - (bdims[0] is not None)
    if axis is None and rank != 1 or isinstance(axis, (tuple, list)) and len(axis) != 1:
        return unbatchable("np.gradient along more than one axis, which returns one array per axis (give axis "
                           "as one int and call it once per axis)")
    along = 0 if axis is None else axis[0] if isinstance(axis, (tuple, list)) else axis
    batched = [k for k, b in enumerate(bdims[1:]) if b is not None]
    if not batched:
        return np.gradient(f, *varargs, axis=example_axis(along, rank), edge_order=edge_order)
    if len(varargs) != 1:
        return unbatchable("np.gradient with spacings that differ from example to example, not one number")
    size = np.shape(varargs[0])[0]
    unit = np.gradient(f, 1.0, axis=example_axis(along, rank) if bdims[0] is not None else along,
                       edge_order=edge_order)
    return unit / _per_example_spacing(varargs[0], 0, size, rank)


@defbatch(gradient_along)
def gradient_along_batched(bdims, f, spacing, axis, edge_order=1):
    if bdims[2] is not None:
        return unbatchable("np.gradient along an axis that differs from example to example")
    rank = np.ndim(f) - (bdims[0] is not None)
    at = example_axis(axis, rank) if bdims[0] is not None else axis
    if bdims[1] is None:
        return gradient_along(f, spacing, at, edge_order)
    unit = gradient_along(f, 1.0, at, edge_order)
    return unit / _per_example_spacing(spacing, 0, np.shape(spacing)[0], rank)


# -- tests of whole arrays: one truth value per example -------------------------------------------

@defbatch(np.array_equal)
def array_equal_batched(bdims, a1, a2, equal_nan=False):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    a1, a2 = np.asarray(a1), np.asarray(a2)
    size = _size(bdims, a1, a2)
    if (np.shape(a1)[1:] if bdims[0] is not None else np.shape(a1)) != \
            (np.shape(a2)[1:] if bdims[1] is not None else np.shape(a2)):
        return np.zeros(size, dtype=bool)  # shapes differ: False for every example
    same = a1 == a2
    if equal_nan:
        same = same | (np.isnan(a1) & np.isnan(a2))
    return np.all(same, axis=every_axis(np.ndim(same)))


@defbatch(np.allclose)
def allclose_batched(bdims, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if any(x is not None for x in bdims[2:]):
        return unbatchable("tolerances that differ from example to example")
    a, b = aligned_operands(bdims[:2], a, b)
    close = np.isclose(a, b, rtol, atol, equal_nan)
    return np.all(close, axis=every_axis(np.ndim(close)))


# -- covariance --------------------------------------------------------------------------------

def _sample_weights(weights, batched, size, samples, integral):
    """``np.cov``'s fweights (``integral``) or aweights of each example, with numpy's checks: ``(size, samples)``
    or one shared vector."""
    w = np.asarray(weights, dtype=float)
    if integral and not np.all(w == np.around(w)):
        raise TypeError("fweights must be integer")
    if np.ndim(w) - (batched is not None) > 1:
        raise RuntimeError(f"cannot handle multidimensional {'fweights' if integral else 'aweights'}")
    if np.shape(w)[-1] != samples:
        raise RuntimeError(f"incompatible numbers of samples and {'fweights' if integral else 'aweights'}")
    if np.any(w < 0):
        raise ValueError(f"{'fweights' if integral else 'aweights'} cannot be negative")
    return w


@defbatch(np.cov)
def cov_batched(bdims, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """numpy's steps on each example's variables (rows, after ``rowvar``), every example's at once: the
    weighted means, the normalisation, the product of the centred rows, each example's axes of one dropped."""
    if any(_given(bdims, k) for k in (2, 3, 4)):
        return unbatchable("rowvar, bias or ddof that differ from example to example")
    size = batch_size_of(bdims, m, y, rowvar, bias, ddof, fweights, aweights)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = np.asarray(m)
    if np.ndim(m) - (bdims[0] is not None) > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = np.asarray(y)
        if np.ndim(y) - _given(bdims, 1) > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m, np.float64) if y is None else np.result_type(m, y, np.float64)
    X = aligned(np.array(with_batch_of(m, bdims[0], size), dtype=dtype), 2)
    if not rowvar and np.ndim(m) - (bdims[0] is not None) != 1:
        X = np.swapaxes(X, 1, 2)
    if np.shape(X)[1] == 0:
        return np.zeros((size, 0, 0))
    if y is not None:
        Y = aligned(np.array(with_batch_of(y, bdims[1] if _given(bdims, 1) else None, size), dtype=dtype), 2)
        if not rowvar and np.shape(Y)[1] != 1:
            Y = np.swapaxes(Y, 1, 2)
        X = np.concatenate((X, Y), axis=1)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    samples = np.shape(X)[2]
    w = None
    if fweights is not None:
        w = _sample_weights(fweights, bdims[5] if _given(bdims, 5) else None, size, samples, True)
    if aweights is not None:
        aweights = _sample_weights(aweights, bdims[6] if _given(bdims, 6) else None, size, samples, False)
        w = aweights if w is None else w * aweights
    if w is None:
        avg = np.mean(X, axis=2)
        fact = samples - ddof
    else:
        avg, w_sum = np.average(X, axis=2, weights=np.broadcast_to(w[..., None, :], np.shape(X)), returned=True)
        w_sum = w_sum[:, 0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aweights, axis=-1) / w_sum
    if np.any(np.asarray(fact) <= 0):
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = np.where(np.asarray(fact) <= 0, 0.0, fact)
    X = X - avg[:, :, None]
    X_T = np.swapaxes(X if w is None else X * w[..., None, :], 1, 2)
    c = np.matmul(X, np.conj(X_T))
    c = c * np.reshape(np.true_divide(1, fact), (-1, 1, 1))
    return np.squeeze(c, axis=tuple(i for i in (1, 2) if np.shape(c)[i] == 1))


@defbatch(np.corrcoef)
def corrcoef_batched(bdims, x, y=None, rowvar=True, *, dtype=None):
    """Each example's covariance (``np.cov``'s rule) divided by its standard deviations, clipped to [-1, 1]."""
    if _given(bdims, 2):
        return unbatchable("a rowvar that differs from example to example")
    c = cov_batched(bdims[:2], x, y, rowvar, dtype=dtype)
    if np.ndim(c) == 1:  # one variable: nan where its variance is nan, inf or 0, else 1
        return c / c
    d = np.diagonal(c, axis1=1, axis2=2)
    stddev = np.sqrt(d.real)
    c = c / stddev[:, :, None]
    c = c / stddev[:, None, :]
    if np.iscomplexobj(c):
        return np.clip(c.real, -1, 1) + 1j * np.clip(c.imag, -1, 1)
    return np.clip(c, -1, 1)
