"""numpy functions the tape calls most, without numpy's Python-level wrappers.

On a small tensor, ``np.mean`` spends most of its time in Python before and
after the one ``np.add.reduce`` that does the work.  Each kernel here does
exactly numpy's arithmetic for the common call (same values, same dtype; a
0-d array may stand for numpy's scalar, as ``apply_op`` records one) and
hands every other call to numpy itself.  ``kernel(fn)`` is what ``apply_op``
runs for ``fn``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_ALL_AXES = frozenset({"axis", "keepdims"})
_FLOAT64 = np.dtype(np.float64)
_array = np.array
_ADD_REDUCE: Any = np.add.reduce  # Any: numpy's stubs have no overload for a keepdims known only at run time


def mean(a, *args, **kwargs):
    """``np.mean``; over every axis of a non-empty float array, ``_methods._mean``'s two steps."""
    if (type(a) is np.ndarray and not args and a.size and a.dtype.kind in "fc" and a.dtype.itemsize > 2
            and (not kwargs or kwargs.get("axis") is None and not kwargs.get("keepdims")
                 and kwargs.keys() <= _ALL_AXES)):
        total = np.add.reduce(a, None)
        if total.dtype == _FLOAT64:  # a float64 divided by an int or by an intp: the same float64
            return total / a.size
        return total.dtype.type(total / np.intp(a.size))
    return np.mean(a, *args, **kwargs)


def sum(a, *args, **kwargs):
    """``np.sum``; of an ndarray with at most ``axis`` and ``keepdims``, the ``np.add.reduce`` it makes."""
    if type(a) is np.ndarray and not args and kwargs.keys() <= _ALL_AXES:
        return _ADD_REDUCE(a, kwargs.get("axis"), None, None, keepdims=kwargs.get("keepdims", False))
    return np.sum(a, *args, **kwargs)


def norm(x, *args, **kwargs):
    """``np.linalg.norm``; the 2-norm of a real float array over every axis as ``linalg.norm`` computes it."""
    if type(x) is np.ndarray and not args and not kwargs and x.dtype.kind == "f":
        flat = x.ravel(order="K")
        if flat.dtype == _FLOAT64:  # both square roots are IEEE's, correctly rounded: the same value, as a
            return _array(math.sqrt(flat.dot(flat)))  # 0-d array, which apply_op would make of numpy's float64
        return np.sqrt(flat.dot(flat))
    return np.linalg.norm(x, *args, **kwargs)


_KERNELS = {np.mean: mean, np.sum: sum, np.linalg.norm: norm}


def mean_vjp(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    """The table's reverse rule of ``np.mean`` (rules/reductions.py), for the mean of an array over every axis
    without a ``dtype``: the same two steps, ``g / size`` spread over the shape, with the shape read once as an
    attribute where the rule calls ``np.shape`` twice (numpy's dispatch, the larger part of a small tensor's
    rule).  Every other call (an axis, a dtype, what a freed node keeps of its array) is the rule's."""
    if axis is None and dtype is None and type(a) is np.ndarray:
        return _filled(g / a.size, a.shape)  # reduced_count(np.shape(a), None) is a.size: the same int
    return _mean_vjp(g, ans, a, axis, dtype, out, keepdims)


def vjp_kernel(vjp):
    """What a node calls for the reverse rule ``vjp``: a kernel above, or ``vjp`` itself."""
    return _VJP_KERNELS.get(vjp, vjp)


from ..rules._support import filled as _filled  # noqa: E402  (the kernels above need numpy alone)
from ..rules.reductions import mean as _mean_vjp  # noqa: E402

_VJP_KERNELS = {_mean_vjp: mean_vjp}


def kernel(fn):
    """What to call for ``fn``: a kernel above, or ``fn`` itself."""
    try:
        return _KERNELS.get(fn, fn)
    except TypeError:  # an unhashable callable
        return fn
