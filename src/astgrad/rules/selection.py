"""Derivative rules for choosing among values and for evenly spaced grids.

``np.select`` and ``np.nan_to_num`` pass the gradient to the values they
keep; ``np.partition`` moves elements like a sort; ``np.linspace`` is
linear in its end points.
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter_along_axis
from ._registry import defvjp
from ._support import unbroadcast


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
    steps = num - 1 if endpoint else num
    t = np.arange(num) / steps if steps > 0 else np.zeros(num)
    g = np.moveaxis(g, axis, 0)
    t = np.reshape(t, (num,) + (1,) * (np.ndim(g) - 1))
    return np.sum(g * (1 - t), axis=0), np.sum(g * t, axis=0)
