"""Generated gradients called with Dask arrays: run lazily, refuse what would compute, return lazy gradients.

The generated code is plain numpy calls, which Dask arrays dispatch (NEP
13/18), so it runs on them as written and builds a Dask graph.  Two things
are done only here, for a call with a Dask argument.  A numpy function that
Dask does not implement would compute its arguments whole and run in numpy
(Dask warns and carries on); here it is an error naming the function and
the user's line instead.  And each gradient is finished lazily: the dtype
and shape of its argument and, for a Dask argument, the same chunks.

Nothing here imports Dask at module level; it is called only with a Dask
array in hand (``rules._lazy.is_lazy``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import warnings

import numpy as np

from .trees import is_tree, leaves, rebuild
from ..rules._lazy import is_lazy

__all__ = ["any_lazy", "any_lazy_leaf", "is_lazy", "refusing_fallbacks", "finish", "jvp_lazily", "broadcast_to", "stack"]

#: the start of what Dask warns when a numpy function has no Dask implementation and it computes instead
_FALLBACK = "The `"
_NOT_IMPLEMENTED = "is not implemented by Dask array"
_UFUNC_METHOD = re.compile(r"NotImplemented from __array_ufunc__\(<ufunc '(\w+)'>, '(\w+)'")
_RULES = os.path.join(os.path.dirname(__file__), "rules") + os.sep
_PACKAGE = os.path.dirname(__file__) + os.sep
_NUMPY = os.path.dirname(np.__file__) + os.sep


def any_lazy(values) -> bool:
    return any(is_lazy(v) for v in values)


def any_lazy_leaf(values) -> bool:
    """Whether a Dask array is among ``values`` or inside one of them (a dict, list or tuple)."""
    return any(is_lazy(leaf) for v in values for _, leaf in leaves(v))


@contextlib.contextmanager
def refusing_fallbacks():
    """Turn Dask's "not implemented, computing in numpy" warning into a TypeError naming the function.

    A numpy ufunc method Dask lacks (``np.add.at``) raises a TypeError of its
    own; it is named the same way.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*" + _NOT_IMPLEMENTED, category=FutureWarning)
        try:
            yield
        except FutureWarning as warning:
            text = str(warning)
            if _NOT_IMPLEMENTED not in text:
                raise
            name = text[len(_FALLBACK):text.index("`", len(_FALLBACK))]
            raise _refusal(name, warning) from None
        except TypeError as error:
            found = _UFUNC_METHOD.search(str(error))
            if found is None:
                raise
            raise _refusal(f"numpy.{found[1]}.{found[2]}", error) from None


def _refusal(name, cause):
    return TypeError(f"astgrad: Dask does not implement {name}{_caller(cause)}; numpy would compute the whole "
                     f"Dask array to run it. Write the step with functions Dask implements, or compute that "
                     f"argument first (docs/scaling.md)").with_traceback(cause.__traceback__)


def _caller(cause) -> str:
    """``, which NAME (file:line) calls``: the innermost frame outside numpy and Dask, unless generated code.

    A rule the generated code inlines is named by the location note (the
    call whose gradient was running); one it calls is named here.
    """
    found, library = "", (_NUMPY, os.path.dirname(str(sys.modules["dask"].__file__)) + os.sep)
    tb = cause.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        filename = code.co_filename
        ours = filename.startswith(_PACKAGE) and not filename.startswith(_RULES)
        if not (ours or filename.startswith(library) or filename.startswith("<astgrad")):
            rule = f"the rule {code.co_name}" if filename.startswith(_RULES) else code.co_name
            found = f", which {rule} ({os.path.basename(filename)}:{tb.tb_lineno}) calls"
        tb = tb.tb_next
    return found


def finish(grad, original):
    """The gradient of ``original`` as a lazy Dask array of its shape and dtype (and chunks, for a Dask argument).

    A Python number's gradient is a 0-d Dask array: a float would compute it.
    """
    import dask.array as da
    if grad is None:
        grad = 0.0
    if not is_lazy(grad):
        grad = da.asarray(grad)
    if isinstance(original, (float, int)) and not isinstance(original, bool):
        return da.real(da.sum(grad)) if grad.ndim else da.real(grad)
    shape = np.shape(original)
    kind = np.result_type(original)
    dtype = kind if np.issubdtype(kind, np.inexact) else np.dtype(np.float64)
    if np.iscomplexobj(grad) and dtype.kind != "c":
        grad = da.real(grad)  # a real argument's gradient is the real part (docs/rules.md)
    if grad.dtype != dtype:
        grad = grad.astype(dtype)
    if grad.shape != shape:
        grad = da.broadcast_to(grad, shape)
    if is_lazy(original):
        if grad.chunks != original.chunks:
            grad = grad.rechunk(original.chunks)
        if grad is original:
            grad = grad.copy()  # a new Array: writing into one (x[i] = ...) leaves the other as it was
    return grad


def jvp_lazily(function, args, tangents, kwargs):
    """A generated jvp run with a Dask argument or tangent: ``(value, tangent)``, the tangent a lazy Dask array.

    Numpy functions Dask lacks are refused as for gradients; each output
    tangent gets its value's shape and dtype (and chunks, for a Dask value),
    in the value's structure when ``f`` returns a container.
    """
    with refusing_fallbacks():
        value, tangent = function(*args, *tangents, **kwargs)
    if not is_tree(value):
        return value, finish(tangent, value)
    values, found = leaves(value), leaves(tangent) if is_tree(tangent) else []
    if [path for path, _ in values] != [path for path, _ in found]:
        return value, tangent  # not one tangent per leaf: as the generated code returned it
    return value, rebuild(value, iter([finish(t, v) for (_, v), (_, t) in zip(values, found)]))


def broadcast_to(value, shape):
    """``value`` broadcast to ``shape``, lazily for a Dask array."""
    if is_lazy(value):
        import dask.array as da
        return da.broadcast_to(value, shape)
    return np.broadcast_to(np.asarray(value, dtype=np.float64), shape)


def stack(columns, axis):
    """``np.stack`` of float64 arrays; with a Dask array among them, a lazy Dask array."""
    if not any_lazy(columns):
        return np.stack([np.asarray(c, dtype=np.float64) for c in columns], axis=axis)
    import dask.array as da
    stacked = da.stack([da.asarray(c).astype(np.float64) for c in columns], axis=axis)
    return stacked.rechunk({axis % stacked.ndim: -1})  # one chunk across the columns, not one per column
