"""Tensor methods with numpy's meaning, used inside ``numpy_methods()``.

``check_grads`` runs a function written for numpy arrays on Tensors.  Where
an ndarray method and a PyTorch method of the same name compute different
things, the tape must compute numpy's, or the cross-check blames correct
code:

========================  ======================================  ==============================
method                    PyTorch                                 numpy
========================  ======================================  ==============================
``var``, ``std``          unbiased (``ddof=1``)                   ``ddof=0``
``max(0)``, ``min(0)``    ``(values, indices)``                   values
``sum``, ``mean``,        ``(dim, keepdim, dtype)``               ``(axis, dtype, out, keepdims)``
``prod`` positionally
``transpose(i, j)``       swaps two axes                          the permutation ``(i, j)``
``.T`` of 1-D or 3-D      reverses with a deprecation warning     reverses
``flatten()``             the tensor itself when 1-D (an alias)   always a copy
``size``                  a method                                the element count
========================  ======================================  ==============================

Each function here takes the tensor first and numpy's parameters after.
Arguments the tape cannot honour (``out=``, ``where=``, ``initial=``) are
refused with a ``TypeError`` rather than ignored.
"""

from __future__ import annotations

import numpy as np

from . import _kernels
from ._record import apply_op

_UNSET = object()


def _refuse(method: str, **given) -> None:
    for name, value in given.items():
        if value is not None and value is not _UNSET:
            raise TypeError(f"Tensor.{method}({name}=...) is not supported on the tape; compute without {name}=")


def _axis(axis):
    return tuple(axis) if isinstance(axis, list) else axis


def _reduce(t, name: str, fn, axis, dtype, keepdims, impl=None):
    source = t if dtype is None else t._cast(dtype)
    axis = _axis(axis)
    kind = name + ("0" if axis is None else "1")
    return apply_op(kind, fn, (source,), {"axis": axis, "keepdims": bool(keepdims)}, impl=impl)


def sum(t, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=None):
    _refuse("sum", out=out, initial=initial, where=where)
    return _reduce(t, "SumBackward", np.sum, axis, dtype, keepdims)


def mean(t, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _refuse("mean", out=out, where=where)
    if dtype is None and t._data.dtype.kind not in "fc":
        dtype = np.float64  # numpy's mean of integers is float64
    return _reduce(t, "MeanBackward", np.mean, axis, dtype, keepdims, impl=_kernels.mean)


def prod(t, axis=None, dtype=None, out=None, keepdims=False, initial=_UNSET, where=None):
    _refuse("prod", out=out, initial=initial, where=where)
    source = t if dtype is None else t._cast(dtype)
    return apply_op("ProdBackward0", np.prod, (source,), {"axis": _axis(axis), "keepdims": bool(keepdims)})


def _spread(t, name, fn, axis, dtype, out, ddof, keepdims, where, mean, correction):
    _refuse(fn.__name__, out=out, where=where, mean=mean)
    if correction is not None:
        ddof = correction
    source = t if dtype is None else t._cast(dtype)
    return apply_op(name, fn, (source,), {"axis": _axis(axis), "ddof": ddof, "keepdims": bool(keepdims)})


def var(t, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    return _spread(t, "VarBackward0", np.var, axis, dtype, out, ddof, keepdims, where, mean, correction)


def std(t, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    return _spread(t, "StdBackward0", np.std, axis, dtype, out, ddof, keepdims, where, mean, correction)


def extreme(t, largest: bool, axis=None, out=None, keepdims=False, initial=_UNSET, where=None):
    name = "max" if largest else "min"
    _refuse(name, out=out, initial=initial, where=where)
    fn = np.max if largest else np.min
    if axis is None:
        return apply_op(f"{name.capitalize()}Backward1", fn, (t,), {"keepdims": bool(keepdims)})
    return apply_op(f"A{name}Backward0", fn, (t,), {"axis": _axis(axis), "keepdims": bool(keepdims)})


def transpose(t, *axes):
    if not axes or axes == (None,):
        return t._view_op("PermuteBackward0", np.transpose, (t,))
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    if sorted(int(a) % max(t._data.ndim, 1) for a in axes) != list(range(t._data.ndim)):
        raise ValueError("axes don't match array")
    return t._view_op("PermuteBackward0", np.transpose, (t, tuple(int(a) for a in axes)), slots=((0,),))


def flatten(t, order="C"):
    flat = t.reshape(-1, order=order)
    return flat.clone() if np.shares_memory(flat._data, t._data) else flat
