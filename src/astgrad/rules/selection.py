"""Derivative rules for choosing among values and for evenly spaced grids.

``np.select`` and ``np.nan_to_num`` pass the gradient to the values they
keep; ``np.partition`` moves elements like a sort; ``np.linspace`` is
linear in its end points and ``np.gradient`` in the values it differences.
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter_along_axis
from ._registry import defjvp, defvjp, primitive
from ._support import integral, unbroadcast


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
    g_spacings = [0.0] * len(spacings)
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


@defjvp(np.nan_to_num)
def nan_to_num_jvp(t, ans, x, copy=True, nan=0.0, posinf=None, neginf=None):
    return t * np.isfinite(x)


def linspace_jvp_start(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """Linear in the end points: the grid from ``t`` to 0 (from 0 to ``t`` for ``stop``)."""
    if retstep:
        raise ValueError("astgrad: no tangent for numpy.linspace(retstep=True); compute the step as "
                         "(stop - start) / (num - 1)")
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.linspace(t, np.zeros(np.shape(t)), num, endpoint=endpoint, axis=axis)


def linspace_jvp_stop(t, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    if retstep:
        raise ValueError("astgrad: no tangent for numpy.linspace(retstep=True); compute the step as "
                         "(stop - start) / (num - 1)")
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
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
