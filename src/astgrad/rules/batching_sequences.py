"""Batching rules (``astgrad.vmap``) of numpy's grids, polynomials, convolutions, lookups and counts.

Functions numpy defines on vectors only (``np.convolve``, ``np.polyval``'s
coefficients, ``np.vander``, ``np.bincount``) are written for a stack of
vectors with numpy's own operations, in numpy's order: a loop over the
examples is never needed.  Where each example's result would have its own
length (``np.bincount`` of examples with different largest values, a
product of polynomials with leading zeros), the rule raises when it runs
rather than pad some examples.
"""

from __future__ import annotations

import operator

import numpy as np

from ._registry import defbatch
from .batching import JOINS, aligned, unbatchable
from .batching_shapes import batch_size, example_axis, example_rank, flat_examples, settings_batched, with_batch

__all__: list = []


def _rank(x, batched):
    return example_rank(x, batched)


def _given(bdims, k):
    return len(bdims) > k and bdims[k] is not None


# -- grids ------------------------------------------------------------------------------------

def _end_points(bdims, *points):
    """The batched end points (and base) aligned to the largest rank of one example's; shared ones as given."""
    rank = max(_rank(p, b) for p, b in zip(points, bdims))
    return rank, [aligned(np.asarray(p), rank) if b is not None else p for p, b in zip(points, bdims)]


@defbatch(np.linspace)
def linspace_batched(bdims, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if any(_given(bdims, k) for k in (2, 3, 4, 5, 6)):
        return unbatchable("a number of points or a setting that differs from example to example")
    if retstep:
        return unbatchable("np.linspace with retstep=True (compute the step as (stop - start) / (num - 1))")
    rank, (start, stop) = _end_points(bdims, start, stop)
    return np.linspace(start, stop, num, endpoint, dtype=dtype, axis=example_axis(axis, rank + 1))


@defbatch(np.logspace)
def logspace_batched(bdims, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    if any(_given(bdims, k) for k in (2, 3, 5, 6)):
        return unbatchable("a number of points or a setting that differs from example to example")
    rank, (start, stop, base) = _end_points(bdims[:2] + ((bdims[4] if len(bdims) > 4 else None),), start, stop, base)
    return np.logspace(start, stop, num, endpoint, base, dtype=dtype, axis=example_axis(axis, rank + 1))


@defbatch(np.geomspace)
def geomspace_batched(bdims, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    if any(_given(bdims, k) for k in (2, 3, 4, 5)):
        return unbatchable("a number of points or a setting that differs from example to example")
    rank, (start, stop) = _end_points(bdims, start, stop)
    return np.geomspace(start, stop, num, endpoint, dtype=dtype, axis=example_axis(axis, rank + 1))


@defbatch(np.vander)
def vander_batched(bdims, x, N=None, increasing=False):
    """numpy's own steps on a stack of vectors: ones, then ``x`` accumulated by products along the powers."""
    if _given(bdims, 1) or _given(bdims, 2):
        return unbatchable("a number of columns that differs from example to example")
    x = np.asarray(x)
    if np.ndim(x) != 2:
        return unbatchable("np.vander of an example that is not a vector, which numpy refuses")
    size, length = np.shape(x)
    columns = length if N is None else operator.index(N)
    out = np.empty((size, length, columns), dtype=np.promote_types(x.dtype, int))
    powers = out if increasing else out[:, :, ::-1]
    if columns > 0:
        powers[:, :, 0] = 1
    if columns > 1:
        powers[:, :, 1:] = x[:, :, None]
        np.multiply.accumulate(powers[:, :, 1:], out=powers[:, :, 1:], axis=2)
    return out


@defbatch(np.kron)
def kron_batched(bdims, a, b):
    """Each example's blocks ``a[i] * b``: the axes of the two interleaved, then merged pairwise."""
    size = batch_size(bdims, a, b)
    a, b = np.asarray(a), np.asarray(b)
    ra, rb = _rank(a, bdims[0]), _rank(b, bdims[1])
    if ra == 0 or rb == 0:
        rank = max(ra, rb)
        return np.multiply(aligned(a, rank) if bdims[0] is not None else a,
                           aligned(b, rank) if bdims[1] is not None else b)
    rank = max(ra, rb)
    a = aligned(a, rank) if bdims[0] is not None else np.reshape(a, (1,) * (rank - ra + 1) + np.shape(a))
    b = aligned(b, rank) if bdims[1] is not None else np.reshape(b, (1,) * (rank - rb + 1) + np.shape(b))
    product = np.multiply(np.expand_dims(a, tuple(range(2, 2 * rank + 1, 2))),
                          np.expand_dims(b, tuple(range(1, 2 * rank, 2))))
    merged = tuple(np.shape(a)[1 + k] * np.shape(b)[1 + k] for k in range(rank))
    return np.reshape(product, (size,) + merged)


# -- polynomials: coefficients along each example's one axis --------------------------------------

def _coefficients(p, batched, what, number=True):
    """Each example's coefficient vector (a number is one coefficient, where ``number``): batched ``(n, m)``, or
    one shared."""
    p = np.asarray(p)
    rank = _rank(p, batched)
    if rank > 1 or rank == 0 and not number:
        unbatchable(f"{what} of coefficients that are not a vector")
    if rank == 0:
        return np.reshape(p, (-1, 1)) if batched is not None else np.reshape(p, (1,))
    return p


@defbatch(np.polyval)
def polyval_batched(bdims, p, x):
    """Horner's rule as numpy runs it, ``y = y * x + c`` from zeros of ``x``'s kind, over the coefficients (a
    loop over the coefficients, not the examples)."""
    coefficients = _coefficients(p, bdims[0], "np.polyval", number=False)
    x = np.asanyarray(x)
    if bdims[0] is not None:
        shape = (np.shape(coefficients)[0],) + (1,) * _rank(x, bdims[1])
        terms = [np.reshape(coefficients[:, k], shape) for k in range(np.shape(coefficients)[1])]
    else:
        terms = list(coefficients)
    y = np.zeros_like(x)
    for c in terms:
        y = y * x + c
    return y


def _padded_front(p, batched, length):
    """Coefficients with zeros in front up to ``length``, as ``np.polyadd`` lines them up."""
    missing = length - np.shape(p)[-1]
    if missing <= 0:
        return p
    return np.concatenate((np.zeros(np.shape(p)[:-1] + (missing,), p.dtype), p), axis=-1)


@defbatch(np.polyadd)
def polyadd_batched(bdims, a1, a2):
    a1, a2 = _coefficients(a1, bdims[0], "np.polyadd"), _coefficients(a2, bdims[1], "np.polyadd")
    length = max(np.shape(a1)[-1], np.shape(a2)[-1])
    return _padded_front(a1, bdims[0], length) + _padded_front(a2, bdims[1], length)


@defbatch(np.polysub)
def polysub_batched(bdims, a1, a2):
    a1, a2 = _coefficients(a1, bdims[0], "np.polysub"), _coefficients(a2, bdims[1], "np.polysub")
    length = max(np.shape(a1)[-1], np.shape(a2)[-1])
    return _padded_front(a1, bdims[0], length) - _padded_front(a2, bdims[1], length)


@defbatch(np.polymul)
def polymul_batched(bdims, a1, a2):
    """The convolution of the coefficients; numpy first drops leading zeros, which would give each example its
    own length: an example whose leading coefficient is zero raises."""
    size = batch_size(bdims, a1, a2)
    a1, a2 = _coefficients(a1, bdims[0], "np.polymul"), _coefficients(a2, bdims[1], "np.polymul")
    for p in (a1, a2):
        if np.any(np.asarray(p)[..., 0] == 0):
            unbatchable("np.polymul of coefficients with a leading zero, which numpy drops: each example's "
                        "product could have its own length")
    return _full_correlation(with_batch(a1, bdims[0], size), with_batch(a2, bdims[1], size)[:, ::-1])


@defbatch(np.polyder)
def polyder_batched(bdims, p, m=1):
    if _given(bdims, 1):
        return unbatchable("an order that differs from example to example")
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = _coefficients(p, bdims[0], "np.polyder", number=False)
    for _ in range(m):
        degree = np.shape(p)[-1] - 1
        p = p[:, :-1] * np.arange(degree, 0, -1)
    return p


@defbatch(np.polyint)
def polyint_batched(bdims, p, m=1, k=None):
    """numpy's steps: each integration divides by the powers and appends its constant, one of ``k`` (each
    example's own, where batched)."""
    if _given(bdims, 1):
        return unbatchable("an order that differs from example to example")
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    size = batch_size(bdims, p, m, k)
    k = np.zeros(m, float) if k is None else np.asarray(k)
    if _given(bdims, 2):
        if np.ndim(k) > 2:
            return unbatchable("np.polyint with constants k that are not a vector per example")
        k = np.reshape(k, (size, -1))
    else:
        k = np.broadcast_to(np.ravel(k), (size, np.size(k)))
    if np.shape(k)[1] == 1 and m > 1:
        k = k[:, :1] * np.ones(m, float)
    if np.shape(k)[1] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = with_batch(_coefficients(p, bdims[0], "np.polyint", number=False), bdims[0], size)
    for j in range(m):
        p = np.concatenate((p.__truediv__(np.arange(np.shape(p)[-1], 0, -1)), k[:, j:j + 1]), axis=1)
    return p


# -- convolutions of vectors -------------------------------------------------------------------

def _vectors(bdims, a, v, what):
    a, v = np.asarray(a), np.asarray(v)
    for x, batched in ((a, bdims[0]), (v, bdims[1])):
        if _rank(x, batched) > 1:
            unbatchable(f"{what} of an example that is not a vector, which numpy refuses")
    a = aligned(a, 1) if bdims[0] is not None else np.atleast_1d(a)
    v = aligned(v, 1) if bdims[1] is not None else np.atleast_1d(v)
    if np.shape(a)[-1] == 0 or np.shape(v)[-1] == 0:
        raise ValueError(f"{'a' if np.shape(a)[-1] == 0 else 'v'} cannot be empty")
    return a, v


def _full_correlation(a, v):
    """``sum_j a[k + j - (m - 1)] * v[j]`` for each shift ``k`` (``a`` zero outside): every example's full
    correlation of the last axes (without conjugation), by windows of the zero-padded ``a``."""
    m = np.shape(v)[-1]
    zeros = np.zeros(np.shape(a)[:-1] + (m - 1,), np.result_type(a))
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate((zeros, a, zeros), axis=-1), m, axis=-1)
    return np.einsum("...kj,...j->...k", windows, v)


def _cut(full, n, m, mode, swapped_offset):
    """numpy's part of the full correlation for ``mode`` (``"same"`` centred as numpy centres it)."""
    shorter, longer = min(n, m), max(n, m)
    if mode == "full":
        return full
    if mode == "valid":
        return full[..., shorter - 1:longer]
    if mode == "same":
        start = shorter // 2 if swapped_offset and n < m else (shorter - 1) // 2
        return full[..., start:start + longer]
    raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")


@defbatch(np.convolve)
def convolve_batched(bdims, a, v, mode="full"):
    a, v = _vectors(bdims, a, v, "np.convolve")
    return _cut(_full_correlation(a, v[..., ::-1]), np.shape(a)[-1], np.shape(v)[-1], mode, False)


@defbatch(np.correlate)
def correlate_batched(bdims, a, v, mode="valid"):
    a, v = _vectors(bdims, a, v, "np.correlate")
    return _cut(_full_correlation(a, np.conj(v)), np.shape(a)[-1], np.shape(v)[-1], mode, True)


# -- lookups along sorted values ---------------------------------------------------------------

@defbatch(np.digitize)
def digitize_batched(bdims, x, bins, right=False):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if bdims[1] is not None:
        return unbatchable("bins that differ from example to example")
    return np.digitize(x, bins, right)


@defbatch(np.searchsorted)
def searchsorted_batched(bdims, a, v, side="left", sorter=None):
    if settings_batched(bdims, 2):
        return unbatchable("a setting (an axis, a count, an order) that differs from example to example")
    if bdims[0] is not None or _given(bdims, 3):
        return unbatchable("np.searchsorted in a sorted array that differs from example to example")
    return np.searchsorted(a, v, side, sorter)


@defbatch(np.interp)
def interp_batched(bdims, x, xp, fp, left=None, right=None, period=None):
    """Shared ``xp`` and ``fp``: numpy's call itself, on every example's points.  Otherwise each point's interval
    among its example's ``xp`` (how many lie at or below it), then numpy's own arithmetic (compiled_base.c's
    ``arr_interp``): the slope from the interval's ends, the value at the interval's left end where the point
    is there, the ends' values or ``left``/``right`` (a number each) outside.  Each example's ``xp`` must increase strictly
    (numpy's result for others depends on its search: this raises)."""
    if _given(bdims, 5):
        return unbatchable("np.interp with a period that differs from example to example")
    if not any(_given(bdims, k) for k in (1, 2, 3, 4)):
        return np.interp(x, xp, fp, left, right, period)
    if period is not None:
        return unbatchable("np.interp with a period and points xp or values fp that differ from example to example")
    size = batch_size(bdims, x, xp, fp)
    fp = np.asarray(fp)
    kind = np.complex128 if np.iscomplexobj(fp) else np.float64
    xp = with_batch(np.asarray(xp, dtype=np.float64), bdims[1], size)
    fp = with_batch(np.asarray(fp, dtype=kind), bdims[2], size)
    points = with_batch(np.asarray(x, dtype=np.float64), bdims[0], size)
    if np.ndim(xp) != 2 or np.ndim(fp) != 2:
        raise ValueError("Data points must be 1-D sequences")
    if np.shape(xp)[1] != np.shape(fp)[1]:
        raise ValueError("fp and xp are not of the same length.")
    if np.shape(xp)[1] == 0:
        raise ValueError("array of sample points is empty")
    if np.any(np.diff(xp, axis=1) <= 0):
        unbatchable("np.interp with points xp that do not increase strictly, which numpy reads through its search")
    flat = np.reshape(points, (size, -1))
    count = np.shape(xp)[1]
    j = np.clip(np.sum(xp[:, None, :] <= flat[:, :, None], axis=2) - 1, 0, max(count - 2, 0))
    x0, f0 = np.take_along_axis(xp, j, 1), np.take_along_axis(fp, j, 1)
    if count > 1:
        x1, f1 = np.take_along_axis(xp, j + 1, 1), np.take_along_axis(fp, j + 1, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = (f1 - f0) / (x1 - x0)
            value = slope * (flat - x0) + f0
            again = np.isnan(value)  # NaN one way: numpy tries from the other end, then takes equal ends
            value = np.where(again, slope * (flat - x1) + f1, value)
        value = np.where(np.isnan(value) & again & (f0 == f1), f0, value)
        value = np.where(flat == x0, f0, value)
    else:
        value = f0 + 0 * flat
    first, last = xp[:, :1], xp[:, -1:]
    value = np.where(flat == last, fp[:, -1:], value)
    outside = [fp[:, :1], fp[:, -1:]]
    for k, given in ((0, left), (1, right)):
        if given is not None:
            outside[k] = np.reshape(given, (size, 1)) if _given(bdims, 3 + k) else given
    value = np.where(flat < first, outside[0], value)
    value = np.where(flat > last, outside[1], value)
    value = np.where(np.isnan(flat), flat, value)
    return np.reshape(value.astype(kind, copy=False), np.shape(points))


# -- counts -------------------------------------------------------------------------------------

@defbatch(np.bincount)
def bincount_batched(bdims, x, weights=None, minlength=0):
    """Each example's counts in one call: example ``k``'s values moved ``k`` lengths along.  Every example's
    count has its own length (its largest value + 1, at least ``minlength``): they must agree, else it raises."""
    if _given(bdims, 2):
        return unbatchable("a minlength that differs from example to example")
    size = batch_size(bdims, x, weights)
    x = with_batch(np.asarray(x), bdims[0], size)
    if np.ndim(x) != 2:
        return unbatchable("np.bincount of an example that is not a vector, which numpy refuses")
    if minlength < 0:
        raise ValueError("'minlength' must not be negative")
    if np.shape(x)[1] and np.any(x < 0):
        raise ValueError("'list' argument must have no negative elements")
    lengths = np.maximum(np.max(x, axis=1) + 1, minlength) if np.shape(x)[1] else np.full(size, minlength)
    length = int(lengths[0]) if size else minlength
    if np.any(lengths != length):
        unbatchable("np.bincount of examples whose counts have different lengths (their largest values differ; "
                    "give minlength above every value)")
    flat = np.ravel(x + np.arange(size)[:, None] * length)
    w = None if weights is None else np.ravel(flat_examples(weights, bdims[1] if len(bdims) > 1 else None, size))
    return np.reshape(np.bincount(flat, w, minlength=size * length), (size, length))


@defbatch(np.select)
def select_batched(bdims, condlist, choicelist, default=0):
    """Every batched condition, choice and default aligned to the largest rank of one example's: numpy's
    broadcasting then lines each example's up."""
    parts = [(c, bdims[0]) for c in condlist] + [(c, bdims[1]) for c in choicelist] + \
        [(default, bdims[2] if len(bdims) > 2 else None)]
    rank = max(_rank(np.asarray(p), b) for p, b in parts)

    def line_up(value, batched):
        return aligned(np.asarray(value), rank) if batched is not None else value

    default_batched = bdims[2] if len(bdims) > 2 else None
    return np.select([line_up(c, bdims[0]) for c in condlist], [line_up(c, bdims[1]) for c in choicelist],
                     line_up(default, default_batched))


JOINS.add(np.select)
