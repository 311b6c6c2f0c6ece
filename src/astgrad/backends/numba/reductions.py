"""Reductions along axes (``np.max(x, axis=1, keepdims=True)``) for Numba, whose numpy lacks them.

Numba's ``np.max``, ``np.min`` and ``np.mean`` take no ``axis``, and none of
its reductions takes ``keepdims``.  ``lower`` rewrites such a call, when its
axis and keepdims are constants in the text, into a call of the helper
below named after the reduction (``max_along(x, 1, True)``), which is the
numpy call itself in Python and, compiled, a loop written for the rank and
axes Numba sees: the reduced axes moved last, one reduction a row.  An axis
or a keepdims known only when the code runs is left to Numba, which refuses
it with a located error.
"""

from __future__ import annotations

import numpy as np

from ...transform.ir import compat
from ...transform.ir.compat import gast


def max_along(x, axis=None, keepdims=False):
    """``np.max(x, axis=axis, keepdims=keepdims)``."""
    return np.max(x, axis=axis, keepdims=keepdims)


def min_along(x, axis=None, keepdims=False):
    """``np.min(x, axis=axis, keepdims=keepdims)``."""
    return np.min(x, axis=axis, keepdims=keepdims)


def sum_along(x, axis=None, keepdims=False):
    """``np.sum(x, axis=axis, keepdims=keepdims)``."""
    return np.sum(x, axis=axis, keepdims=keepdims)


def mean_along(x, axis=None, keepdims=False):
    """``np.mean(x, axis=axis, keepdims=keepdims)``."""
    return np.mean(x, axis=axis, keepdims=keepdims)


def argmax_along(x, axis=None, keepdims=False):
    """``np.argmax(x, axis=axis, keepdims=keepdims)``."""
    return np.argmax(x, axis=axis, keepdims=keepdims)


def argmin_along(x, axis=None, keepdims=False):
    """``np.argmin(x, axis=axis, keepdims=keepdims)``."""
    return np.argmin(x, axis=axis, keepdims=keepdims)


#: numpy's reduction -> (its helper, the method that reduces one row in Numba)
_HELPERS = {np.max: (max_along, "max"), np.min: (min_along, "min"), np.sum: (sum_along, "sum"),
            np.mean: (mean_along, "mean"), np.argmax: (argmax_along, "argmax"),
            np.argmin: (argmin_along, "argmin")}
_HELPERS.update({np.amax: _HELPERS[np.max], np.amin: _HELPERS[np.min]})


def helper_call(node, resolve, bound):
    """``max_along(x, 1, True)`` for ``np.max(x, axis=1, keepdims=True)``; None for any other call.

    ``resolve`` gives the object an expression names (or None), ``bound``
    the module's global name for a helper.  Rewritten only when the axis and
    keepdims are constants and something is asked beyond a whole-array
    reduction (which Numba has).
    """
    if not isinstance(node, gast.Call) or len(node.args) not in (1, 2):
        return None
    try:
        target = _HELPERS.get(resolve(node.func))
    except TypeError:  # an unhashable object
        return None
    if target is None:
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if set(keywords) - {"axis", "keepdims"} or (len(node.args) == 2 and "axis" in keywords):
        return None
    axis = node.args[1] if len(node.args) == 2 else keywords.get("axis", compat.const(None))
    keepdims = keywords.get("keepdims", compat.const(False))
    axis_value, keep_value = _constant(axis), _constant(keepdims)
    if not (_is_axis(axis_value) and type(keep_value) is bool) or (axis_value is None and not keep_value):
        return None
    return compat.call(compat.name(bound(target[0])),
                       [compat.clone(node.args[0]), compat.clone(axis), compat.clone(keepdims)])


_NOT_CONSTANT = object()


def _constant(node):
    """The value of a constant expression (a number, -number, None, a tuple of them), else a marker."""
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and isinstance(node.operand, gast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    if isinstance(node, gast.Tuple):
        values = tuple(_constant(e) for e in node.elts)
        return _NOT_CONSTANT if any(v is _NOT_CONSTANT for v in values) else values
    return _NOT_CONSTANT


def _is_axis(value) -> bool:
    return value is None or type(value) is int or isinstance(value, tuple) and all(type(v) is int for v in value)


def register(numba, overload, types, literal_axes, literal_value) -> None:
    """Register each helper's Numba implementation (``helpers.register`` passes its tools)."""
    namespace = {"np": np, "__name__": __name__}
    namespace.update({f"_rows_{method}": _rows(numba, method) for _, method in _HELPERS.values()})

    def make_lambda(text):
        return eval(compile(text, "<astgrad numba reduction>", "eval"), namespace)
    for helper, method in _HELPERS.values():
        overload(helper, prefer_literal=True)(_implementation(method, types, literal_axes, literal_value,
                                                              make_lambda))


def _implementation(method, types, literal_axes, literal_value, make_lambda):
    def implementation(x, axis=None, keepdims=False):
        if not isinstance(x, types.Array) or x.ndim == 0:
            return None
        rank = x.ndim
        axes = literal_axes(axis, rank, types)
        keep = literal_value(keepdims, types)
        if axes is None or keep not in (True, False):
            return None  # an axis known only when the code runs: Numba says it cannot compile the call
        dtype = _result_dtype(method, x.dtype, types)
        if dtype is None:
            return None
        kept = [i for i in range(rank) if i not in axes]
        reduced = sorted(axes)
        signature = "lambda x, axis=None, keepdims=False: "
        if not kept and not keep:
            return make_lambda(f"{signature}np.ravel(x).{method}()")
        rows = " * ".join(f"x.shape[{i}]" for i in kept) or "1"
        length = " * ".join(f"x.shape[{i}]" for i in reduced) or "1"
        permutation = kept + reduced
        moved = "x" if permutation == list(range(rank)) else f"np.transpose(x, ({', '.join(map(str, permutation))},))"
        shape = [("1" if i in axes else f"x.shape[{i}]") for i in range(rank) if keep or i not in axes]
        return make_lambda(f"{signature}_rows_{method}(np.ascontiguousarray({moved}).reshape(({rows}, {length})), "
                           f"np.{dtype}).reshape(({', '.join(shape)},))")
    return implementation


def _result_dtype(method, dtype, types):
    """The name of numpy's result dtype for the reduction of ``dtype``, or None where it is not written here."""
    if method in ("argmax", "argmin"):
        return "int64"
    if isinstance(dtype, (types.Float, types.Complex)):
        return str(dtype)
    if not isinstance(dtype, (types.Integer, types.Boolean)) or isinstance(dtype, types.Integer) and not dtype.signed:
        return None
    if method == "mean":
        return "float64"
    if method == "sum":
        return "int64"
    return str(dtype) if isinstance(dtype, types.Integer) else None


def _rows(numba, method):
    reduce_row = {"max": lambda row: row.max(), "min": lambda row: row.min(), "sum": lambda row: row.sum(),
                  "mean": lambda row: row.mean(), "argmax": lambda row: row.argmax(),
                  "argmin": lambda row: row.argmin()}[method]
    one = numba.njit(reduce_row)

    @numba.njit(boundscheck=True)
    def rows(matrix, dtype):
        out = np.empty(matrix.shape[0], dtype)
        for i in range(matrix.shape[0]):
            out[i] = one(matrix[i])
        return out
    return rows
