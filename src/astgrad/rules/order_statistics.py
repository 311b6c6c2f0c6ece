"""Derivative rules for medians, quantiles and percentiles (``nan`` variants included).

numpy's default ``method="linear"`` interpolates between two order
statistics: at ``p = q (n - 1)`` the value is ``(1 - f) v[lo] + f v[lo + 1]``
with ``lo = floor(p)`` and ``f = p - lo``.  The gradient goes to those two
order statistics with the weights ``1 - f`` and ``f``; in ``q`` it is the
slope ``(v[lo + 1] - v[lo]) (n - 1)`` of the segment numpy interpolates on.
The conventions at the kinks (docs/rules.md, "where a function has an edge"):

* an order statistic held by several equal elements shares its weight
  evenly among them, as tied maxima do (``quantile(a, 1)`` is ``max(a)``
  and gets ``max``'s gradient);
* at a knot (``p`` a whole number, the median of an even count is not one)
  the segment is the one to the right, as numpy brackets it, and at ``q = 1``
  the last one, so the gradient in ``q`` is one-sided from inside;
* the ``nan`` variants skip NaNs (they get 0), and a slice of NaNs only
  gives 0 everywhere.

Only ``method="linear"`` is differentiated; other methods, ``weights=`` and
``overwrite_input=True`` (which reorders the input in place, so the rule
could not tell which element held which value) are refused, as are
complex values (numpy orders them by real part first, a comparison that
has no derivative).
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp
from ._support import expand_reduced, normalize_axis


def _checked(a, name, method="linear", weights=None, interpolation=None, overwrite_input=False):
    if np.iscomplexobj(a):
        raise ValueError(f"astgrad: no gradient for numpy.{name} of complex values, which numpy orders by their real "
                         "parts first; take the quantile of the real and imaginary parts separately")
    chosen = interpolation if interpolation is not None else method
    if chosen != "linear":
        raise ValueError(f"astgrad: numpy.{name} is differentiated with method='linear' (numpy's default) only, "
                         f"not {chosen!r}")
    if weights is not None:
        raise ValueError(f"astgrad: no gradient for numpy.{name} with weights=; leave weights= out")
    if overwrite_input:
        raise ValueError(f"astgrad: no gradient for numpy.{name}(overwrite_input=True), which reorders its input in "
                         "place so that the gradient cannot tell which element held which value; leave "
                         "overwrite_input out")


def reduced_layout(shape, axis):
    """``(rest, order)`` for an array of ``shape`` reduced along ``axis``: the shape of the axes not reduced, and
    the order that moves the reduced ones last.  Of the shape, not the array: what a helper returns from an
    array counts as carrying its derivative, and a hessian differentiates these rules again."""
    ndim = len(shape)
    reduced = list(normalize_axis(axis, ndim))
    order = [k for k in range(ndim) if k not in reduced] + reduced
    return tuple([shape[k] for k in order[:ndim - len(reduced)]]), order


def reduced_last(a, axis):
    """``a`` with the reduced axes moved last and made one (:func:`reduced_layout`)."""
    rest, order = reduced_layout(np.shape(a), axis)
    return np.reshape(np.transpose(a, order), rest + (-1,))


def placed_back(flat, shape, order):
    """The inverse of :func:`reduced_last`: an array of ``a``'s ``shape`` from its reduced-last form."""
    moved = np.reshape(flat, tuple(shape[k] for k in order))
    return np.transpose(moved, np.argsort(order))


def quantile_weights(a, q, axis, skip_nan):
    """The weight of each element in each quantile, shape ``q.shape + rest + (n,)``, and d value / d q.

    ``q`` is in [0, 1]; ``rest`` is the shape of the axes not reduced.
    """
    flat, rest = reduced_last(a, axis), reduced_layout(np.shape(a), axis)[0]
    q = np.asarray(q)
    values = np.sort(flat, axis=-1)  # NaNs last
    count = np.sum(~np.isnan(flat), axis=-1) if skip_nan else np.full(rest, np.shape(flat)[-1])
    position = np.reshape(q, np.shape(q) + (1,) * len(rest)) * (count - 1)
    lo = np.clip(np.floor(position), 0, np.maximum(count - 2, 0)).astype(np.intp)
    hi = np.minimum(lo + 1, np.maximum(count - 1, 0))
    share = position - lo
    spread = np.broadcast_to(values, np.shape(lo) + np.shape(values)[-1:])
    low = np.take_along_axis(spread, lo[..., None], -1)
    high = np.take_along_axis(spread, hi[..., None], -1)
    at_low, at_high = flat == low, flat == high
    weights = ((1 - share)[..., None] * at_low / np.maximum(np.sum(at_low, -1, keepdims=True), 1)
               + share[..., None] * at_high / np.maximum(np.sum(at_high, -1, keepdims=True), 1))
    slope = (high[..., 0] - low[..., 0]) * np.maximum(count - 1, 0)
    return weights, slope


def quantile_gradients(g, ans, a, q, axis, skip_nan, scale):
    """The gradients of ``a`` and ``q`` (``q`` in units of ``1 / scale``: 100 for percentiles)."""
    if np.size(a) == 0:
        return np.zeros(np.shape(a)), np.zeros(np.shape(q))
    weights, slope = quantile_weights(a, np.asarray(q) / scale, axis, skip_nan)
    q_axes = tuple(range(np.ndim(q)))
    g = np.reshape(g, np.shape(slope))
    d_a = np.sum(g[..., None] * weights, axis=q_axes)
    order = reduced_layout(np.shape(a), axis)[1]
    d_q = np.sum(g * slope, axis=tuple(range(np.ndim(q), np.ndim(slope)))) / scale
    return placed_back(d_a, np.shape(a), order), d_q


def quantile_tangent_a(t, ans, a, q, axis, skip_nan, scale):
    if np.size(a) == 0:
        return np.zeros(np.shape(ans))
    weights, _ = quantile_weights(a, np.asarray(q) / scale, axis, skip_nan)
    flat = reduced_last(t, axis)
    return np.reshape(np.sum(weights * flat, axis=-1), np.shape(ans))


def quantile_tangent_q(t, ans, a, q, axis, skip_nan, scale):
    if np.size(a) == 0:
        return np.zeros(np.shape(ans))
    _, slope = quantile_weights(a, np.asarray(q) / scale, axis, skip_nan)
    t = np.reshape(t, np.shape(t) + (1,) * (np.ndim(slope) - np.ndim(t)))
    return np.reshape(t * slope / scale, np.shape(ans))


# ---------------------------------------------------------------- the entries


@defvjp(np.median)
def median(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _checked(a, "median", overwrite_input=overwrite_input)
    return quantile_gradients(g, ans, a, 0.5, axis, False, 1.0)[0]


@defvjp(np.nanmedian)
def nanmedian(g, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _checked(a, "nanmedian", overwrite_input=overwrite_input)
    return quantile_gradients(g, ans, a, 0.5, axis, True, 1.0)[0]


@defvjp(np.quantile)
def quantile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    _checked(a, "quantile", method, weights, interpolation, overwrite_input)
    return quantile_gradients(g, ans, a, q, axis, False, 1.0)


@defvjp(np.nanquantile)
def nanquantile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    _checked(a, "nanquantile", method, weights, interpolation, overwrite_input)
    return quantile_gradients(g, ans, a, q, axis, True, 1.0)


@defvjp(np.percentile)
def percentile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    _checked(a, "percentile", method, weights, interpolation, overwrite_input)
    return quantile_gradients(g, ans, a, q, axis, False, 100.0)


@defvjp(np.nanpercentile)
def nanpercentile(g, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None, interpolation=None):
    _checked(a, "nanpercentile", method, weights, interpolation, overwrite_input)
    return quantile_gradients(g, ans, a, q, axis, True, 100.0)


# ---------------------------------------------------------------- forward rules


def median_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _checked(a, "median", overwrite_input=overwrite_input)
    return quantile_tangent_a(t, ans, a, 0.5, axis, False, 1.0)


def nanmedian_jvp(t, ans, a, axis=None, out=None, overwrite_input=False, keepdims=False):
    _checked(a, "nanmedian", overwrite_input=overwrite_input)
    return quantile_tangent_a(t, ans, a, 0.5, axis, True, 1.0)


defjvp(np.median, median_jvp)
defjvp(np.nanmedian, nanmedian_jvp)


def _quantile_jvps(name, skip_nan, scale):
    """The forward rules of ``a`` and ``q`` of one of the four quantile functions."""
    def jvp_a(t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
              weights=None, interpolation=None):
        _checked(a, name, method, weights, interpolation, overwrite_input)
        return quantile_tangent_a(t, ans, a, q, axis, skip_nan, scale)

    def jvp_q(t, ans, a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
              weights=None, interpolation=None):
        _checked(a, name, method, weights, interpolation, overwrite_input)
        return quantile_tangent_q(t, ans, a, q, axis, skip_nan, scale)

    jvp_a.__name__, jvp_q.__name__ = f"{name}_jvp_a", f"{name}_jvp_q"
    return jvp_a, jvp_q


defjvp(np.quantile, *_quantile_jvps("quantile", False, 1.0))
defjvp(np.nanquantile, *_quantile_jvps("nanquantile", True, 1.0))
defjvp(np.percentile, *_quantile_jvps("percentile", False, 100.0))
defjvp(np.nanpercentile, *_quantile_jvps("nanpercentile", True, 100.0))


# ---------------------------------------------------------------- nanmax, nanmin: the extremes of the values that are not NaN


@defvjp(np.nanmax)
def nanmax(g, ans, a, axis=None, out=None, keepdims=False):
    """As ``max``: tied extremes share ``g`` evenly; NaNs (never equal to the extreme) and slices of NaNs only get 0."""
    hits = a == expand_reduced(ans, np.shape(a), axis, keepdims)
    count = np.maximum(np.sum(hits, axis=axis, keepdims=keepdims), 1)
    return expand_reduced(g / count, np.shape(a), axis, keepdims) * hits


defvjp(np.nanmin, nanmax)  # both read where ``a`` equals ``ans``


@defjvp(np.nanmax)
def nanmax_jvp(t, ans, a, axis=None, out=None, keepdims=False):
    hits = a == expand_reduced(ans, np.shape(a), axis, keepdims)
    count = np.maximum(np.sum(hits, axis=axis, keepdims=keepdims), 1)
    return np.sum(np.where(hits, t, 0), axis=axis, keepdims=keepdims) / count


defjvp(np.nanmin, nanmax_jvp)
