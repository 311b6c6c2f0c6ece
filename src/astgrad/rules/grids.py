"""Derivative rules for values on grids: ``np.interp``, ``np.meshgrid``, ``np.full``, ``np.bincount``, ``np.trapezoid``.

``np.interp`` is piecewise linear: inside segment ``[xp[i], xp[i+1]]`` the
value is ``(1 - s) fp[i] + s fp[i+1]`` with ``s = (x - xp[i]) / (xp[i+1] -
xp[i])``, so the gradient in ``fp`` is ``1 - s`` and ``s``, in ``x`` the
segment's slope and in ``xp`` minus the slope times those weights.  At a
knot (``x == xp[i]``) the segment is the one to the right, as numpy
brackets it, and at ``x == xp[-1]`` the last one (docs/rules.md, "where a
function has an edge"); outside the knots the value is ``left``/``right``
(``fp[0]``/``fp[-1]`` by default) and moves with nothing else.
``meshgrid`` repeats each vector along the other axes, so each vector's
gradient sums its output's gradient over them; ``full`` spreads its fill
value (summed back by the engines' un-broadcasting); ``bincount`` sums its
weights into bins, so each weight gets its bin's gradient; ``trapezoid`` is
linear in the samples, in the widths between the points and in ``dx``.
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter
from ._registry import defjvp, defvjp
from ._support import integral
from .convolution import real_for


# ---------------------------------------------------------------- interp


def interp_segments(x, xp, left, right, period):
    """For each ``x``: its segment's ends ``lo``, ``lo + 1``, its place ``s`` in it, inside/below/above the knots."""
    if period is not None:
        raise ValueError("astgrad: no gradient for numpy.interp with period=; wrap x into one period with np.mod "
                         "and pass periodic knots")
    if np.iscomplexobj(x) or np.iscomplexobj(xp):
        raise ValueError("astgrad: numpy.interp's x and xp are real (numpy refuses complex ones)")
    n = np.shape(xp)[0]
    if n > 1 and np.any(np.diff(xp) <= 0):
        raise ValueError("astgrad: no gradient for numpy.interp with knots xp that are not strictly increasing "
                         "(numpy does not check them, and its value there is not a function of them)")
    lo = np.clip(np.searchsorted(xp, x, side="right") - 1, 0, max(n - 2, 0))
    hi = np.minimum(lo + 1, n - 1)
    width = np.where(hi > lo, xp[hi] - xp[lo], 1.0)
    s = np.where(hi > lo, (x - xp[lo]) / width, 0.0)
    below, above = x < xp[0], x > xp[n - 1]
    return lo, hi, s, width, below, above, ~(below | above)


@defvjp(np.interp)
def interp(g, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, s, width, below, above, inside = interp_segments(x, xp, left, right, period)
    n = np.shape(xp)[0]
    slope = (fp[hi] - fp[lo]) / width
    inner = np.where(inside, g, 0)
    d_x = real_for(inner * slope, x)
    d_xp = real_for(scatter(-inner * slope * (1 - s), (n,), lo) + scatter(-inner * slope * s, (n,), hi), xp)
    d_fp = scatter(inner * (1 - s), (n,), lo) + scatter(inner * s, (n,), hi)
    if left is None:
        d_fp = d_fp + scatter(np.where(below, g, 0), (n,), np.zeros(np.shape(x), dtype=np.intp))
    if right is None:
        d_fp = d_fp + scatter(np.where(above, g, 0), (n,), np.full(np.shape(x), n - 1))
    d_left = None if left is None else np.sum(np.where(below, g, 0))
    d_right = None if right is None else np.sum(np.where(above, g, 0))
    return d_x, d_xp, real_for(d_fp, fp), d_left, d_right


def interp_jvp_x(t, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, s, width, below, above, inside = interp_segments(x, xp, left, right, period)
    return np.where(inside, t * (fp[hi] - fp[lo]) / width, 0)


def interp_jvp_xp(t, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, s, width, below, above, inside = interp_segments(x, xp, left, right, period)
    return np.where(inside, -(fp[hi] - fp[lo]) / width * ((1 - s) * t[lo] + s * t[hi]), 0)


def interp_jvp_fp(t, ans, x, xp, fp, left=None, right=None, period=None):
    lo, hi, s, width, below, above, inside = interp_segments(x, xp, left, right, period)
    out = np.where(inside, (1 - s) * t[lo] + s * t[hi], 0)
    if left is None:
        out = out + np.where(below, t[0], 0)
    if right is None:
        out = out + np.where(above, t[-1], 0)
    return out


def interp_jvp_left(t, ans, x, xp, fp, left=None, right=None, period=None):
    return np.where(x < xp[0], t, 0)


def interp_jvp_right(t, ans, x, xp, fp, left=None, right=None, period=None):
    return np.where(x > xp[-1], t, 0)


defjvp(np.interp, interp_jvp_x, interp_jvp_xp, interp_jvp_fp, interp_jvp_left, interp_jvp_right)


# ---------------------------------------------------------------- meshgrid


def meshgrid_axis(i, count, indexing):
    """The output axis along which input ``i`` of ``meshgrid`` varies."""
    if indexing == "xy" and count > 1 and i < 2:
        return 1 - i
    return i


@defvjp(np.meshgrid)
def meshgrid(g, ans, *xi, copy=True, sparse=False, indexing="xy"):
    """Each output repeats its vector along the other axes: the vector's gradient sums them (zeros where the
    output is unused, ``None`` in ``g``)."""
    grads: list = []
    for i, (gi, out, x) in enumerate(zip(g, ans, xi)):
        if gi is None:
            grads.append(np.zeros(np.shape(x)))
            continue
        axis = meshgrid_axis(i, len(xi), indexing)
        others = tuple(k for k in range(len(np.shape(out))) if k != axis)
        grads.append(np.reshape(np.sum(gi, axis=others), np.shape(x)))
    return tuple(grads)


def meshgrid_jvp(t, ans, *xi, argnum, copy=True, sparse=False, indexing="xy"):
    """The tangent of output ``argnum`` alone: its vector's tangent laid along its axis."""
    out = ans[argnum]
    layout = [1] * np.ndim(out)
    layout[meshgrid_axis(argnum, len(xi), indexing)] = -1
    tangents: list = [None] * len(ans)
    tangents[argnum] = np.broadcast_to(np.reshape(t, layout), np.shape(out))
    return tangents


defjvp(np.meshgrid, rest=meshgrid_jvp)


# ---------------------------------------------------------------- full, bincount


@defvjp(np.full)
def full(g, ans, shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    """The fill value is every element (the engines sum ``g`` back to its shape); an integer result is constant."""
    if integral(ans.dtype):
        return None, np.zeros(np.shape(fill_value))
    return None, g


def full_jvp(t, ans, shape, fill_value, dtype=None, order="C", *, device=None, like=None):
    if integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return t  # the engines spread it over the result's shape


defjvp(np.full, None, full_jvp)


@defvjp(np.bincount)
def bincount(g, ans, x, weights=None, minlength=0):
    """Each weight is added into its bin ``x[j]``: it gets that bin's gradient (the counts ``x`` are integers)."""
    return None, None if weights is None else np.take(g, x)


def bincount_jvp_weights(t, ans, x, weights=None, minlength=0):
    return np.bincount(x, t, len(ans))


defjvp(np.bincount, None, bincount_jvp_weights)


# ---------------------------------------------------------------- trapezoid: the integral of samples on a grid


def trapezoid_parts(y, x, dx, axis):
    """``y`` with ``axis`` last, the mean of each pair of neighbours, and the widths between them."""
    moved = np.moveaxis(y, axis, -1)
    middle = (moved[..., 1:] + moved[..., :-1]) / 2
    if x is None:
        return moved, middle, dx
    return moved, middle, np.diff(x if np.ndim(x) == 1 else np.moveaxis(x, axis, -1), axis=-1)


@defvjp(np.trapezoid)
def trapezoid(g, ans, y, x=None, dx=1.0, axis=-1):
    """Linear in ``y`` (each sample weighs half of its two widths), in ``x`` (through the widths) and in ``dx``."""
    moved, middle, widths = trapezoid_parts(y, x, dx, axis)
    g = np.expand_dims(g, -1)
    spread = np.broadcast_to(widths, np.shape(middle))
    edge = np.zeros(np.shape(middle)[:-1] + (1,))
    d_y = np.moveaxis(g * (np.concatenate([edge, spread], -1) + np.concatenate([spread, edge], -1)) / 2, -1, axis)
    d_x = d_dx = None
    if x is not None:
        pushed = g * middle
        d_x = np.concatenate([edge, pushed], -1) - np.concatenate([pushed, edge], -1)
        if np.ndim(x) == 1:
            d_x = np.reshape(np.sum(d_x, axis=tuple(range(np.ndim(d_x) - 1))), np.shape(x))
        else:
            d_x = np.moveaxis(d_x, -1, axis)
    else:
        d_dx = g[..., 0] * np.sum(middle, axis=-1)
    return d_y, d_x, d_dx


def trapezoid_jvp_y(t, ans, y, x=None, dx=1.0, axis=-1):
    return np.trapezoid(t, x, dx, axis)


def trapezoid_jvp_x(t, ans, y, x=None, dx=1.0, axis=-1):
    return np.trapezoid(y, t, dx, axis)  # linear in x: the widths of the tangent


def trapezoid_jvp_dx(t, ans, y, x=None, dx=1.0, axis=-1):
    return np.trapezoid(y, None, t, axis)


defjvp(np.trapezoid, trapezoid_jvp_y, trapezoid_jvp_x, trapezoid_jvp_dx)


# ---------------------------------------------------------------- logspace, geomspace: exponentials of a linspace


def _fractions(ans, num, endpoint, axis):
    """How far along from start to stop each point of a ``num``-point grid is, laid along ``axis`` of ``ans``."""
    layout = [1] * np.ndim(ans)
    layout[axis] = -1
    return np.reshape(np.linspace(0.0, 1.0, num, endpoint=endpoint), layout)


def _along(t, ans, axis):
    """A start's or stop's tangent as it enters every point of the grid ``ans``."""
    return np.expand_dims(t * np.ones(np.delete(np.shape(ans), axis % np.ndim(ans))), axis)


def _padded(x, rank):
    """``x`` with leading axes of length 1 up to ``rank`` (numpy's ``ndmin``)."""
    return np.reshape(x, (1,) * (rank - np.ndim(x)) + np.shape(x))


def _base_along(base, ans, axis):
    """logspace's ``base`` (or a value of its shape) as numpy lays it over the grid ``ans``: padded to the rank
    of the ends and base broadcast together, with a new axis at ``axis``."""
    return np.expand_dims(_padded(base, np.ndim(ans) - 1), axis)


def _real_ends(name, *values):
    if any(np.iscomplexobj(v) for v in values):
        raise ValueError(f"astgrad: no gradient for numpy.{name} of complex numbers; write the exponential of a "
                         f"numpy.linspace yourself")


def _scalar_base(base):
    if np.ndim(base):
        raise ValueError("astgrad: no gradient for numpy.logspace with an array base; write "
                         "base ** np.linspace(start, stop, num, axis=axis) with base shaped to broadcast")


@defvjp(np.logspace)
def logspace(g, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    _real_ends("logspace", start, stop, base)
    _scalar_base(base)
    if dtype is not None and integral(ans.dtype):
        g = np.zeros(np.shape(g))
    s = _fractions(ans, num, endpoint, axis)
    moved = g * ans * np.log(base)  # the slope of base ** u in u
    exponents = np.linspace(start, stop, num, endpoint, axis=axis)
    return (np.sum(moved * (1 - s), axis=axis), np.sum(moved * s, axis=axis), None, None,
            np.sum(g * ans * exponents) / base)


def logspace_jvp_start(t, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    log_base = np.log(_base_along(base, ans, axis))
    return ans * log_base * (1 - _fractions(ans, num, endpoint, axis)) * _along(t, ans, axis)


def logspace_jvp_stop(t, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    return ans * np.log(_base_along(base, ans, axis)) * _fractions(ans, num, endpoint, axis) * _along(t, ans, axis)


def logspace_jvp_base(t, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``ans = base ** u``, ``u`` the linspace of the ends padded to the rank numpy pads them to."""
    rank = np.ndim(ans) - 1
    exponents = np.linspace(_padded(start, rank), _padded(stop, rank), num, endpoint, axis=axis)
    return ans * exponents * _base_along(t / base, ans, axis)


defjvp(np.logspace, logspace_jvp_start, logspace_jvp_stop, None, None, logspace_jvp_base)


@defvjp(np.geomspace)
def geomspace(g, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``start (stop / start) ** s``: the slope in ``start`` is ``ans (1 - s) / start``, in ``stop`` ``ans s / stop``."""
    _real_ends("geomspace", start, stop)
    if dtype is not None and integral(ans.dtype):
        g = np.zeros(np.shape(g))
    s = _fractions(ans, num, endpoint, axis)
    return np.sum(g * ans * (1 - s), axis=axis) / start, np.sum(g * ans * s, axis=axis) / stop


def geomspace_jvp_start(t, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return ans * (1 - _fractions(ans, num, endpoint, axis)) * _along(t / start, ans, axis)


def geomspace_jvp_stop(t, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
    return ans * _fractions(ans, num, endpoint, axis) * _along(t / stop, ans, axis)


defjvp(np.geomspace, geomspace_jvp_start, geomspace_jvp_stop)
