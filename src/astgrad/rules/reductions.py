"""Derivative rules for numpy's reductions and scans.

A reduction's gradient is the incoming gradient broadcast back over the
reduced axes (``expand_reduced``), weighted by how each element entered the
result.  A forward rule reduces the tangent the same way: a reduction is
linear in its input, or a weighted sum of it near the input.
"""

from __future__ import annotations

import numpy as np

from ._extra import vector_norm_jvp, vector_norm_vjp
from .decompositions import matrix_norm_jvp, matrix_norm_vjp
from ._registry import defjvp, defvjp
from ._support import expand_reduced, integral, product_of_others, reduced_count, reverse_cumsum, split_at, tie_weights


@defvjp(np.sum)
def np_sum(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):  # an integer or boolean result: piecewise constant
        return np.zeros(a.shape)
    return expand_reduced(g, a.shape, axis, keepdims)


@defvjp(np.nansum)
def nansum(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return np.where(np.isnan(a), 0, expand_reduced(g, a.shape, axis, keepdims))


@defvjp(np.mean)
def mean(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return expand_reduced(g / reduced_count(np.shape(a), axis), np.shape(a), axis, keepdims)


@defvjp(np.nanmean)
def nanmean(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    present = ~np.isnan(a)
    return expand_reduced(g, a.shape, axis, keepdims) * present / np.sum(present, axis=axis, keepdims=True)


def _weights_along(weights, shape, axis):
    """np.average's 1-D weights reshaped to broadcast along ``axis``."""
    if np.ndim(weights) == len(shape):
        return weights
    layout = [1] * len(shape)
    layout[axis % len(shape)] = -1
    return np.reshape(weights, layout)


@defvjp(np.average)
def average(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    if weights is None:
        return mean(g, ans, a, axis, keepdims=keepdims)
    w = _weights_along(weights, a.shape, axis)
    total = np.sum(w, axis=axis, keepdims=True)
    g = expand_reduced(g, a.shape, axis, keepdims)
    g_weights = g * (a - expand_reduced(ans, a.shape, axis, keepdims)) / total
    if np.ndim(weights) != a.ndim:
        g_weights = np.reshape(np.sum(g_weights, axis=tuple(i for i in range(a.ndim) if i != axis % a.ndim)),
                               np.shape(weights))
    return g * w / total, None, g_weights


@defvjp(np.max)
def np_max(g, ans, a, axis=None, out=None, keepdims=False):
    # tied extremes share g evenly; dividing g before spreading it leaves one full-size product
    hits = a == expand_reduced(ans, a.shape, axis, keepdims)
    return expand_reduced(g / np.sum(hits, axis=axis, keepdims=keepdims), a.shape, axis, keepdims) * hits


@defvjp(np.min)
def np_min(g, ans, a, axis=None, out=None, keepdims=False):
    hits = a == expand_reduced(ans, a.shape, axis, keepdims)
    return expand_reduced(g / np.sum(hits, axis=axis, keepdims=keepdims), a.shape, axis, keepdims) * hits


defvjp(np.amax, np_max)
defvjp(np.amin, np_min)


@defvjp(np.ptp)
def ptp(g, ans, a, axis=None, out=None, keepdims=False):
    highest = np.max(a, axis=axis, keepdims=True)
    lowest = np.min(a, axis=axis, keepdims=True)
    spread = tie_weights(a, highest, axis, True) - tie_weights(a, lowest, axis, True)
    return expand_reduced(g, a.shape, axis, keepdims) * spread


@defvjp(np.prod)
def prod(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return expand_reduced(g, a.shape, axis, keepdims) * product_of_others(a, axis)


@defvjp(np.var)
def var(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return expand_reduced(np.real(g), a.shape, axis, keepdims) * 2 * np.conj(centered) / (reduced_count(a.shape, axis) - ddof)


@defvjp(np.std)
def std(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    centered = a - np.mean(a, axis=axis, keepdims=True)
    spread = expand_reduced(ans, a.shape, axis, keepdims)
    # equal values (one value, or all alike): std is not differentiable there; 0 is its smallest subgradient
    scaled = np.conj(centered) / (np.where(spread == 0, 1, spread) * (reduced_count(a.shape, axis) - ddof))
    return expand_reduced(np.real(g), a.shape, axis, keepdims) * np.where(spread == 0, 0, scaled)


@defvjp(np.cumsum)
def cumsum(g, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    if axis is None:
        return np.reshape(np.flip(np.cumsum(np.flip(g))), a.shape)
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


@defvjp(np.cumprod)
def cumprod(g, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    if axis is None:
        return np.reshape(cumprod(np.ravel(g), np.ravel(ans), np.ravel(a), 0), a.shape)
    # before the first zero along axis, ans / a is exact; at the first zero, the products that skip it;
    # after it, every product holds that zero: 0
    zeros_so_far = np.cumsum(a == 0, axis)
    first_zero = (a == 0) & (zeros_so_far == 1)
    before = reverse_cumsum(g * ans, axis) / np.where(zeros_so_far == 0, a, 1)
    skipping = reverse_cumsum(g * np.cumprod(np.where(first_zero, 1, a), axis), axis)
    return np.where(zeros_so_far == 0, before, np.where(first_zero, skipping, 0))


@defvjp(np.trace)
def trace(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    eye = np.eye(a.shape[axis1], a.shape[axis2], k=offset)
    spread = np.expand_dims(eye, tuple(range(2, a.ndim))) * g
    return np.moveaxis(spread, (0, 1), (axis1, axis2))


@defvjp(np.diff)
def diff(g, ans, a, n=1, axis=-1, *, prepend=None, append=None):
    """``prepend`` and ``append`` are constants here: keyword-only, so a differentiated one is refused."""
    along = axis % np.ndim(a)  # built whole, not written into: a rule's code is differentiated again (hessians)
    widths = [(1, 1) if k == along else (0, 0) for k in range(np.ndim(a))]
    for _ in range(n):
        g = -np.diff(np.pad(g, widths), axis=axis)
    # g is the gradient of prepend, a and append joined along axis (a number joins as one slice)
    before = 0 if prepend is None else 1 if np.ndim(prepend) == 0 else np.shape(prepend)[axis]
    return split_at(g, [before, before + np.shape(a)[axis]], axis)[1]


@defvjp(np.nanvar)
def nanvar(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """var's rule over the values that are not NaN; a NaN gets 0."""
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    present = ~np.isnan(a)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    count = np.sum(present, axis=axis, keepdims=True) - ddof
    return expand_reduced(np.real(g), a.shape, axis, keepdims) * 2 * np.conj(centered) / count


@defvjp(np.nanstd)
def nanstd(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """std's rule over the values that are not NaN: 0 where they are all equal, as std's."""
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    spread = expand_reduced(ans, a.shape, axis, keepdims)
    scaled = nanvar(g, ans, a, axis, None, None, ddof, keepdims) / (2 * np.where(spread == 0, 1, spread))
    return np.where(spread == 0, 0, scaled)


@defvjp(np.nanprod)
def nanprod(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    """prod's rule (exact at zeros) with NaNs read as 1; a NaN gets 0."""
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return np.where(np.isnan(a), 0, prod(g, ans, np.where(np.isnan(a), 1, a), axis, None, None, keepdims))


@defvjp(np.nancumsum)
def nancumsum(g, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return np.where(np.isnan(a), 0, cumsum(g, ans, a, axis))


@defvjp(np.nancumprod)
def nancumprod(g, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(a.shape)
    return np.where(np.isnan(a), 0, cumprod(g, ans, np.where(np.isnan(a), 1, a), axis))


def _without_initial(g, include_initial, axis):
    """The part of a cumulative_* output past its initial slice (all of it without ``include_initial``)."""
    return split_at(g, [1], 0 if axis is None else axis)[1] if include_initial else g


def cumulative_sum(g, ans, x, axis=None, dtype=None, include_initial=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(x))
    return cumsum(_without_initial(g, include_initial, axis), ans, x, 0 if axis is None else axis)


def cumulative_prod(g, ans, x, axis=None, dtype=None, include_initial=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(x))
    axis = 0 if axis is None else axis
    return cumprod(_without_initial(g, include_initial, axis), _without_initial(ans, include_initial, axis), x, axis)


@defvjp(np.ediff1d)
def ediff1d(g, ans, ary, to_end=None, to_begin=None):
    """``to_begin``, the differences of the flattened ``ary``, ``to_end``: each gets its part of ``g``."""
    before = 0 if to_begin is None else np.size(to_begin)
    inner = np.size(ary) - 1 if np.size(ary) else 0
    g_inner = g[before:before + inner]
    g_ary = -np.diff(np.pad(g_inner, (1, 1))) if np.size(ary) else np.zeros(0)
    g_end = None if to_end is None else np.reshape(g[before + inner:], np.shape(to_end))
    g_begin = None if to_begin is None else np.reshape(g[:before], np.shape(to_begin))
    return np.reshape(g_ary, np.shape(ary)), g_end, g_begin


@defvjp(np.linalg.norm)
def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    matrix_norm = isinstance(axis, tuple) or (axis is None and np.ndim(x) == 2 and ord is not None)
    if matrix_norm and ord not in (None, "fro"):
        return matrix_norm_vjp(g, ans, x, ord, axis, keepdims)
    return vector_norm_vjp(g, ans, x, 2 if ord in (None, "fro") else ord, axis, keepdims)


# ------------------------------------------------------------ forward rules


@defjvp(np.sum)
def np_sum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.sum(t, axis=axis, keepdims=keepdims)


@defjvp(np.nansum)
def nansum_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.sum(np.where(np.isnan(a), 0, t), axis=axis, keepdims=keepdims)


@defjvp(np.mean)
def mean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.mean(t, axis=axis, keepdims=keepdims)


@defjvp(np.nanmean)
def nanmean_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    present = ~np.isnan(a)
    return np.sum(np.where(present, t, 0), axis=axis, keepdims=keepdims) / np.sum(present, axis=axis, keepdims=keepdims)


def average_jvp_a(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    return np.average(t, axis=axis, weights=weights, keepdims=keepdims)


def average_jvp_weights(t, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    w = _weights_along(weights, a.shape, axis)
    centered = a - expand_reduced(ans, a.shape, axis, keepdims)
    moved = np.sum(_weights_along(t, a.shape, axis) * centered, axis=axis, keepdims=keepdims)
    return moved / np.sum(w * np.ones(a.shape), axis=axis, keepdims=keepdims)


defjvp(np.average, average_jvp_a, None, average_jvp_weights)


@defjvp(np.max)
def np_max_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    hits = a == expand_reduced(ans, a.shape, axis, keepdims)  # tied extremes share evenly, as in reverse
    return np.sum(t * hits, axis=axis, keepdims=keepdims) / np.sum(hits, axis=axis, keepdims=keepdims)


defjvp(np.min, np_max_jvp)  # both read where ``a`` equals ``ans``
defjvp(np.amax, np_max_jvp)
defjvp(np.amin, np_max_jvp)


@defjvp(np.ptp)
def ptp_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    highest = np.max(a, axis=axis, keepdims=True)
    lowest = np.min(a, axis=axis, keepdims=True)
    spread = tie_weights(a, highest, axis, True) - tie_weights(a, lowest, axis, True)
    return np.sum(t * spread, axis=axis, keepdims=keepdims)


@defjvp(np.prod)
def prod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.sum(t * product_of_others(a, axis), axis=axis, keepdims=keepdims)


@defjvp(np.var)
def var_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return 2 * np.real(np.sum(np.conj(centered) * t, axis=axis, keepdims=keepdims)) / (reduced_count(a.shape, axis) - ddof)


@defjvp(np.std)
def std_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    centered = a - np.mean(a, axis=axis, keepdims=True)
    moved = np.real(np.sum(np.conj(centered) * t, axis=axis, keepdims=keepdims)) / (reduced_count(a.shape, axis) - ddof)
    return np.where(ans == 0, 0, moved / np.where(ans == 0, 1, ans))  # 0 at equal values, as the reverse rule


@defjvp(np.cumsum)
def cumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.cumsum(t, axis=axis)


@defjvp(np.cumprod)
def cumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    if axis is None:
        return cumprod_jvp(np.ravel(t), ans, np.ravel(a), 0)
    # before the first zero, ans * cumsum(t / a) is exact; from it on, only the zero's own tangent
    # moves the product (times the others), until a second zero holds it at 0
    zeros_so_far = np.cumsum(a == 0, axis)
    first_zero = (a == 0) & (zeros_so_far == 1)
    before = ans * np.cumsum(t / np.where(zeros_so_far == 0, a, 1), axis)
    at_zero = np.sum(np.where(first_zero, t, 0), axis=axis, keepdims=True) * np.cumprod(np.where(first_zero, 1, a), axis)
    return np.where(zeros_so_far == 0, before, np.where(zeros_so_far == 1, at_zero, 0))


@defjvp(np.trace)
def trace_jvp(t, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.trace(t, offset, axis1, axis2)


@defjvp(np.diff)
def diff_jvp(t, ans, a, n=1, axis=-1, *, prepend=None, append=None):
    """``prepend`` and ``append`` are constants: zeros join the tangent where they join ``a``."""
    if prepend is not None and append is not None:
        return np.diff(t, n, axis, prepend=np.zeros_like(prepend), append=np.zeros_like(append))
    if prepend is not None:
        return np.diff(t, n, axis, prepend=np.zeros_like(prepend))
    if append is not None:
        return np.diff(t, n, axis, append=np.zeros_like(append))
    return np.diff(t, n, axis)


@defjvp(np.linalg.norm)
def norm_jvp(t, ans, x, ord=None, axis=None, keepdims=False):
    matrix_norm = isinstance(axis, tuple) or (axis is None and np.ndim(x) == 2 and ord is not None)
    if matrix_norm and ord not in (None, "fro"):
        return matrix_norm_jvp(t, ans, x, ord, axis, keepdims)
    return vector_norm_jvp(t, ans, x, 2 if ord in (None, "fro") else ord, axis, keepdims)


@defjvp(np.nanvar)
def nanvar_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    present = ~np.isnan(a)
    centered = np.where(present, a - np.nanmean(a, axis=axis, keepdims=True), 0)
    moved = np.real(np.sum(np.conj(centered) * np.where(present, t, 0), axis=axis, keepdims=keepdims))
    return 2 * moved / (np.sum(present, axis=axis, keepdims=keepdims) - ddof)


@defjvp(np.nanstd)
def nanstd_jvp(t, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    moved = nanvar_jvp(t, ans, a, axis, None, None, ddof, keepdims) / 2
    return np.where(ans == 0, 0, moved / np.where(ans == 0, 1, ans))  # 0 at equal values, as the reverse rule


@defjvp(np.nanprod)
def nanprod_jvp(t, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    filled = np.where(np.isnan(a), 1, a)
    return np.sum(np.where(np.isnan(a), 0, t) * product_of_others(filled, axis), axis=axis, keepdims=keepdims)


@defjvp(np.nancumsum)
def nancumsum_jvp(t, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.cumsum(np.where(np.isnan(a), 0, t), axis=axis)


@defjvp(np.nancumprod)
def nancumprod_jvp(t, ans, a, axis=None, dtype=None, out=None):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return cumprod_jvp(np.where(np.isnan(a), 0, t), ans, np.where(np.isnan(a), 1, a), axis)


def _with_initial(t, include_initial, axis):
    """A tangent with the zero initial slice of a cumulative_* output put in front."""
    if not include_initial:
        return t
    first = list(np.shape(t))
    first[axis] = 1
    return np.concatenate([np.zeros(first, np.result_type(t)), t], axis=axis)


def cumulative_sum_jvp(t, ans, x, axis=None, dtype=None, include_initial=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.cumulative_sum(t, axis=axis, include_initial=include_initial)


def cumulative_prod_jvp(t, ans, x, axis=None, dtype=None, include_initial=False):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    axis = 0 if axis is None else axis
    inner = cumprod_jvp(t, _without_initial(ans, include_initial, axis), x, axis)
    return _with_initial(inner, include_initial, axis)


def ediff1d_jvp_ary(t, ans, ary, to_end=None, to_begin=None):
    before = 0 if to_begin is None else np.size(to_begin)
    after = 0 if to_end is None else np.size(to_end)
    dtype = np.result_type(t)
    return np.concatenate([np.zeros(before, dtype), np.diff(np.ravel(t)), np.zeros(after, dtype)])


def ediff1d_jvp_to_end(t, ans, ary, to_end=None, to_begin=None):
    return np.concatenate([np.zeros(np.size(ans) - np.size(t), np.result_type(t)), np.ravel(t)])


def ediff1d_jvp_to_begin(t, ans, ary, to_end=None, to_begin=None):
    return np.concatenate([np.ravel(t), np.zeros(np.size(ans) - np.size(t), np.result_type(t))])


defjvp(np.ediff1d, ediff1d_jvp_ary, ediff1d_jvp_to_end, ediff1d_jvp_to_begin)


if hasattr(np, "cumulative_sum"):  # numpy 2.1 on
    defvjp(np.cumulative_sum, cumulative_sum)
    defjvp(np.cumulative_sum, cumulative_sum_jvp)
    defvjp(np.cumulative_prod, cumulative_prod)
    defjvp(np.cumulative_prod, cumulative_prod_jvp)
