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
    widths = [(0, 0)] * np.ndim(a)
    widths[axis] = (1, 1)
    for _ in range(n):
        g = -np.diff(np.pad(g, widths), axis=axis)
    # g is the gradient of prepend, a and append joined along axis (a number joins as one slice)
    before = 0 if prepend is None else 1 if np.ndim(prepend) == 0 else np.shape(prepend)[axis]
    return split_at(g, [before, before + np.shape(a)[axis]], axis)[1]


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
