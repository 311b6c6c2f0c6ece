"""Derivative rules for choosing among values and for evenly spaced grids.

``np.select`` and ``np.nan_to_num`` pass the gradient to the values they
keep; ``np.partition`` and ``np.sort_complex`` move elements like a sort;
``np.unique``'s values are elements of its input; ``np.full_like`` spreads
its fill value; ``np.histogram``'s counts are linear in its weights and its
bin edges move with the data's range; ``np.linspace`` is linear in its end
points and ``np.gradient`` in the values it differences.
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter, scatter_along_axis
from ._registry import defjvp, defvjp, primitive
from ._support import integral, tie_weights, unbroadcast


@defvjp(np.select)
def select(g, ans, condlist, choicelist, default=0):
    """Each choice gets ``g`` where its condition is the first one true; ``default`` where none is."""
    taken = np.zeros(np.shape(ans), dtype=bool)
    grads = []
    for condition, choice in zip(condlist, choicelist):
        first = np.logical_and(condition, np.logical_not(taken))
        grads.append(unbroadcast(np.where(first, g, 0), np.shape(choice)))
        taken = np.logical_or(taken, condition)
    return None, grads, np.where(taken, 0, g)


@defvjp(np.partition)
def partition(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    if axis is None:
        return np.reshape(partition(g, ans, np.ravel(a), kth, -1), np.shape(a))
    order = np.argpartition(a, kth, axis=axis)
    if not np.array_equal(np.take_along_axis(np.asarray(a), order, axis), np.asarray(ans)):
        raise ValueError("astgrad: cannot tell where numpy.partition moved each element; use np.sort")
    return scatter_along_axis(g, order, axis, np.shape(a))


def _unique_flagged(return_index, return_inverse, return_counts) -> bool:
    """Whether ``np.unique`` returns a tuple (its values first), not the values alone."""
    return bool(return_index or return_inverse or return_counts)


def _unique_groups(ar, axis, equal_nan):
    """For each element (each slice along ``axis``) of ``ar``, the position of its value among the unique
    values; and how many elements hold each unique value."""
    _, inverse, counts = np.unique(ar, return_inverse=True, return_counts=True, axis=axis, equal_nan=equal_nan)
    return np.reshape(inverse, -1), counts


@defvjp(np.unique)
def unique(g, ans, ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, sorted=True):
    """Each unique value is an element of ``ar``: its gradient goes there, shared evenly where several
    elements hold the value (a tie, as for ``np.max``).  Only the values (the first output) carry one:
    a gradient that reached only the indices or counts (``x * inverse``) gives ``ar`` zeros."""
    if _unique_flagged(return_index, return_inverse, return_counts):
        g = g[0]
        if g is None:
            return np.zeros(np.shape(ar))
        g = np.broadcast_to(g, np.shape(ans[0]))  # the number 0.0 where a path gave the values no gradient yet
    if not sorted:
        raise ValueError("astgrad: no gradient for numpy.unique(sorted=False); leave sorted= out")
    inverse, counts = _unique_groups(ar, axis, equal_nan)
    if axis is None:
        return np.reshape(np.take(g, inverse) / counts[inverse], np.shape(ar))
    layout = [1] * np.ndim(ar)
    layout[axis] = -1
    return np.take(g, inverse, axis=axis) / np.reshape(counts[inverse], layout)


@defvjp(np.sort_complex)
def sort_complex(g, ans, a):
    """A sort along the last axis (real parts, then imaginary): each element gets its place's gradient."""
    spread = scatter_along_axis(g, np.argsort(a, axis=-1, kind="stable"), -1, np.shape(a))
    return spread if np.iscomplexobj(a) else np.real(spread)


@defvjp(np.full_like)
def full_like(g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """The fill value is every element of the result (``a`` gives only its shape and dtype)."""
    if integral(ans.dtype):  # an integer or boolean result: the fill value is rounded, piecewise constant
        return np.zeros(np.shape(a)), np.zeros(np.shape(fill_value))
    return np.zeros(np.shape(a)), g  # the engines sum g to the fill value's shape


def histogram_gradients(g_hist, g_edges, hist, edges, a, bins, range, density, weights):
    """The gradients of ``a``, ``bins`` and ``weights`` of ``np.histogram`` from those of its counts and edges.

    The counts move with the weights only (an element's bin is piecewise constant in its value); with
    ``density`` they are divided by the total and the bin widths, which move too.  The edges are ``bins``
    when it is an array; computed from the data (``bins`` a number or a rule's name, no ``range``) they
    are ``min(a) + (max(a) - min(a)) * k / n``.
    """
    if np.iscomplexobj(a) or np.iscomplexobj(bins) or np.iscomplexobj(weights):
        raise ValueError("astgrad: numpy.histogram of complex values has no derivative (bins order real numbers)")
    n = len(edges) - 1
    moved = np.zeros(n + 1) if g_edges is None else g_edges  # the gradient of each edge
    d_weights = None
    if g_hist is not None and (weights is not None or density):
        inside = (a >= edges[0]) & (a <= edges[-1])
        index = np.clip(np.searchsorted(edges, a, side="right") - 1, 0, n - 1)
        if density:
            widths = np.diff(edges)
            total = np.sum(inside) if weights is None else np.sum(np.where(inside, weights, 0))
            d_weights = np.where(inside, (g_hist / (total * widths))[index] - np.sum(g_hist * hist) / total, 0)
            d_width = -g_hist * hist / widths
            moved = moved + np.concatenate([[0.0], d_width]) - np.concatenate([d_width, [0.0]])
        else:
            d_weights = np.where(inside, g_hist[index], 0)
    d_a, d_bins = np.zeros(np.shape(a)), None
    if np.ndim(bins) == 1:
        d_bins = moved
    elif range is None:
        share = np.arange(n + 1) / n
        d_a = np.sum(moved * (1 - share)) * tie_weights(a, np.min(a)) + np.sum(moved * share) * tie_weights(a, np.max(a))
    if weights is not None and d_weights is None:  # the edges do not move with the weights
        d_weights = np.zeros(np.shape(weights))
    return d_a, d_bins, None, None, d_weights


@defvjp(np.histogram)
def histogram(g, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_gradients(g[0], g[1], ans[0], ans[1], a, bins, range, density, weights)


@primitive
def histogram_counts(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram(...)[0]``: the tape records each output of ``np.histogram`` as its own node."""
    return np.histogram(a, bins, range, density, weights)[0]


@primitive
def histogram_edges(a, bins=10, range=None, density=None, weights=None):
    """``np.histogram(...)[1]``."""
    return np.histogram(a, bins, range, density, weights)[1]


@defvjp(histogram_counts)
def histogram_counts_vjp(g, ans, a, bins=10, range=None, density=None, weights=None):
    edges = np.histogram_bin_edges(a, bins, range, weights)
    return histogram_gradients(g, None, ans, edges, a, bins, range, density, weights)


@defvjp(histogram_edges)
def histogram_edges_vjp(g, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_gradients(None, g, None, ans, a, bins, range, density, weights)


@defvjp(np.nan_to_num)
def nan_to_num(g, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return g * np.isfinite(x)


@defvjp(np.linspace)
def linspace(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``start + (stop - start) * t`` for ``t`` from 0 to 1 along ``axis``."""
    if retstep:
        raise ValueError("astgrad: no gradient for numpy.linspace(retstep=True); compute the step as "
                         "(stop - start) / (num - 1)")
    if dtype is not None and integral(ans.dtype):
        g = np.zeros(np.shape(g))
    steps = num - 1 if endpoint else num
    t = np.arange(num) / steps if steps > 0 else np.zeros(num)
    g = np.moveaxis(g, axis, 0)
    t = np.reshape(t, (num,) + (1,) * (np.ndim(g) - 1))
    return np.sum(g * (1 - t), axis=0), np.sum(g * t, axis=0)


@primitive
def gradient_along(f, spacing, axis, edge_order=1):
    """``np.gradient(f, spacing, axis=axis, edge_order=edge_order)``: one output of ``np.gradient``."""
    return np.gradient(f, spacing, axis=axis, edge_order=edge_order)


def _difference_matrix(n, spacing, edge_order):
    """The matrix ``d`` with ``np.gradient(v, spacing) == d @ v`` for every ``v`` of length ``n``: numpy's own stencil."""
    return np.gradient(np.eye(n), spacing, axis=0, edge_order=edge_order)


@defvjp(gradient_along)
def gradient_along_vjp(g, ans, f, spacing, axis, edge_order=1):
    if np.ndim(spacing) != 0:
        raise ValueError("astgrad: no gradient for numpy.gradient with coordinate arrays; pass one number "
                         "(the uniform spacing) per axis")
    d = _difference_matrix(np.shape(f)[axis], 1.0, edge_order)
    g_f = np.moveaxis(np.tensordot(d.T, np.moveaxis(g, axis, 0), axes=1), 0, axis) / spacing
    return g_f, -np.sum(g * ans) / spacing


def gradient_axes(f, varargs, axis):
    """Each differenced axis with its spacing, as ``np.gradient`` pairs them."""
    axes = list(range(np.ndim(f))) if axis is None else [axis] if np.ndim(axis) == 0 else list(axis)
    axes = [a % np.ndim(f) for a in axes]
    spacings = list(varargs) if len(varargs) > 1 else list(varargs) * len(axes) if varargs else [1.0] * len(axes)
    return axes, spacings


@defvjp(np.gradient)
def gradient(g, ans, f, *varargs, axis=None, edge_order=1):
    """``g`` holds one gradient per output (``None`` where none flowed), or is the only output's."""
    axes, spacings = gradient_axes(f, varargs, axis)
    parts = g if isinstance(ans, (tuple, list)) else [g]
    outputs = ans if isinstance(ans, (tuple, list)) else [ans]
    g_f = np.zeros(np.shape(f), np.result_type(f, 1.0))
    g_spacings: list = [0.0] * len(spacings)
    for k, (a, h) in enumerate(zip(axes, spacings)):
        if parts[k] is None:
            continue
        g_k, g_h = gradient_along_vjp(parts[k], outputs[k], f, h, a, edge_order)
        g_f = g_f + g_k
        g_spacings[k if len(varargs) > 1 else 0] = g_spacings[k if len(varargs) > 1 else 0] + g_h
    if not varargs:
        return g_f
    if len(varargs) > 3:
        raise ValueError("astgrad: no gradient for numpy.gradient with more than three spacings; pass one "
                         "number for every axis")
    g_spacings += [None] * 3
    return g_f, g_spacings[0], g_spacings[1], g_spacings[2]  # entries past the arguments given are cut off


# ------------------------------------------------------------ forward rules


def select_jvp_choices(t, ans, condlist, choicelist, default=0):
    return np.select(condlist, t, 0)


def select_jvp_default(t, ans, condlist, choicelist, default=0):
    return np.select(condlist, [0] * len(condlist), t)


defjvp(np.select, None, select_jvp_choices, select_jvp_default)


@defjvp(np.partition)
def partition_jvp(t, ans, a, kth, axis=-1, kind="introselect", order=None):
    if axis is None:
        return partition_jvp(np.ravel(t), ans, np.ravel(a), kth, -1)
    order = np.argpartition(a, kth, axis=axis)
    if not np.array_equal(np.take_along_axis(np.asarray(a), order, axis), np.asarray(ans)):
        raise ValueError("astgrad: cannot tell where numpy.partition moved each element; use np.sort")
    return np.take_along_axis(t, order, axis)


@defjvp(np.unique)
def unique_jvp(t, ans, ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
               equal_nan=True, sorted=True):
    """The mean of the tangents of the elements holding each unique value (the reverse rule's even share)."""
    if not sorted:
        raise ValueError("astgrad: no tangent for numpy.unique(sorted=False); leave sorted= out")
    inverse, counts = _unique_groups(ar, axis, equal_nan)
    if axis is None:
        tangent = scatter(np.ravel(t), (len(counts),), inverse) / counts
    else:
        moved = np.moveaxis(t, axis, 0)
        summed = scatter(moved, (len(counts),) + np.shape(moved)[1:], inverse)
        tangent = np.moveaxis(summed / np.reshape(counts, (-1,) + (1,) * (np.ndim(moved) - 1)), 0, axis)
    if _unique_flagged(return_index, return_inverse, return_counts):
        return (tangent,) + (None,) * (len(ans) - 1)
    return tangent


@defjvp(np.sort_complex)
def sort_complex_jvp(t, ans, a):
    return np.take_along_axis(t, np.argsort(a, axis=-1, kind="stable"), -1) + 0j


def full_like_jvp_a(t, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """``a`` gives the result's shape and dtype only: its values move nothing."""
    return None


def full_like_jvp(t, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    if integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return t  # the engines spread it over the result's shape


defjvp(np.full_like, full_like_jvp_a, full_like_jvp)


def histogram_tangents(t, ans, a, bins=10, range=None, density=None, weights=None, along="a"):
    """The tangents of ``np.histogram``'s counts and edges along ``a``, ``bins`` or ``weights``: the reverse
    rule's gradients, read row by row (the histogram is small beside its data)."""
    hist, edges = ans
    n = len(edges) - 1
    t_hist, t_edges = np.zeros(n), np.zeros(n + 1)
    for k in np.arange(n):
        g = np.zeros(n)
        g[k] = 1.0
        grads = histogram_gradients(g, None, hist, edges, a, bins, range, density, weights)
        chosen = grads[{"a": 0, "bins": 1, "weights": 4}[along]]
        t_hist[k] = 0.0 if chosen is None else np.sum(chosen * t)
    for k in np.arange(n + 1):
        g = np.zeros(n + 1)
        g[k] = 1.0
        grads = histogram_gradients(None, g, None, edges, a, bins, range, density, weights)
        chosen = grads[{"a": 0, "bins": 1, "weights": 4}[along]]
        t_edges[k] = 0.0 if chosen is None else np.sum(chosen * t)
    return t_hist, t_edges


def histogram_jvp_a(t, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_tangents(t, ans, a, bins, range, density, weights, "a")


def histogram_jvp_bins(t, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_tangents(t, ans, a, bins, range, density, weights, "bins")


def histogram_jvp_weights(t, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_tangents(t, ans, a, bins, range, density, weights, "weights")


defjvp(np.histogram, histogram_jvp_a, histogram_jvp_bins, None, None, histogram_jvp_weights)


def histogram_counts_jvp_a(t, ans, a, bins=10, range=None, density=None, weights=None):
    ans = (ans, np.histogram_bin_edges(a, bins, range, weights))
    return histogram_tangents(t, ans, a, bins, range, density, weights, "a")[0]


def histogram_counts_jvp_bins(t, ans, a, bins=10, range=None, density=None, weights=None):
    ans = (ans, np.histogram_bin_edges(a, bins, range, weights))
    return histogram_tangents(t, ans, a, bins, range, density, weights, "bins")[0]


def histogram_counts_jvp_weights(t, ans, a, bins=10, range=None, density=None, weights=None):
    ans = (ans, np.histogram_bin_edges(a, bins, range, weights))
    return histogram_tangents(t, ans, a, bins, range, density, weights, "weights")[0]


defjvp(histogram_counts, histogram_counts_jvp_a, histogram_counts_jvp_bins, None, None, histogram_counts_jvp_weights)


def histogram_edges_jvp_a(t, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_tangents(t, (np.zeros(len(ans) - 1), ans), a, bins, range, density, weights, "a")[1]


def histogram_edges_jvp_bins(t, ans, a, bins=10, range=None, density=None, weights=None):
    return histogram_tangents(t, (np.zeros(len(ans) - 1), ans), a, bins, range, density, weights, "bins")[1]


defjvp(histogram_edges, histogram_edges_jvp_a, histogram_edges_jvp_bins)


@defjvp(np.nan_to_num)
def nan_to_num_jvp(t, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return t * np.isfinite(x)


def linspace_jvp_start(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Linear in the end points: the grid from ``t`` to 0 (from 0 to ``t`` for ``stop``), ``t`` first given the
    shape numpy broadcasts the two ends to (a number beside an array of ends is laid like them)."""
    if retstep:
        raise ValueError("astgrad: no tangent for numpy.linspace(retstep=True); compute the step as "
                         "(stop - start) / (num - 1)")
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    t = np.broadcast_to(t, np.broadcast_shapes(np.shape(start), np.shape(stop)))
    return np.linspace(t, np.zeros(np.shape(t)), num, endpoint=endpoint, axis=axis)


def linspace_jvp_stop(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if retstep:
        raise ValueError("astgrad: no tangent for numpy.linspace(retstep=True); compute the step as "
                         "(stop - start) / (num - 1)")
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    t = np.broadcast_to(t, np.broadcast_shapes(np.shape(start), np.shape(stop)))
    return np.linspace(np.zeros(np.shape(t)), t, num, endpoint=endpoint, axis=axis)


defjvp(np.linspace, linspace_jvp_start, linspace_jvp_stop)


def gradient_along_jvp_f(t, ans, f, spacing, axis, edge_order=1):
    if np.ndim(spacing) != 0:
        raise ValueError("astgrad: no tangent for numpy.gradient with coordinate arrays; pass one number "
                         "(the uniform spacing) per axis")
    return gradient_along(t, spacing, axis, edge_order)


def gradient_along_jvp_spacing(t, ans, f, spacing, axis, edge_order=1):
    return -t * ans / spacing


defjvp(gradient_along, gradient_along_jvp_f, gradient_along_jvp_spacing)


def gradient_jvp_f(t, ans, f, *varargs, axis=None, edge_order=1):
    """The differences of the tangent: ``np.gradient`` is linear in ``f``."""
    if any(np.ndim(h) != 0 for h in varargs):
        raise ValueError("astgrad: no tangent for numpy.gradient with coordinate arrays; pass one number "
                         "(the uniform spacing) per axis")
    return np.gradient(t, *varargs, axis=axis, edge_order=edge_order)


def gradient_jvp_spacing(t, ans, f, *varargs, argnum, axis=None, edge_order=1):
    """Spacing ``argnum - 1`` divides the outputs along its axis (along every axis when it is the only one)."""
    if np.ndim(varargs[argnum - 1]) != 0:
        raise ValueError("astgrad: no tangent for numpy.gradient with coordinate arrays; pass one number "
                         "(the uniform spacing) per axis")
    outputs = list(ans) if isinstance(ans, (tuple, list)) else [ans]
    h = varargs[argnum - 1]
    tangents = [-t * out / h if len(varargs) == 1 or k == argnum - 1 else None for k, out in enumerate(outputs)]
    return type(ans)(tangents) if isinstance(ans, (tuple, list)) else tangents[0]


defjvp(np.gradient, gradient_jvp_f, rest=gradient_jvp_spacing)
