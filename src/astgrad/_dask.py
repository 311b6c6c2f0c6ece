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

from .rules._lazy import is_lazy

__all__ = ["any_lazy", "is_lazy", "refusing_fallbacks", "finish"]

#: the start of what Dask warns when a numpy function has no Dask implementation and it computes instead
_FALLBACK = "The `"
_NOT_IMPLEMENTED = "is not implemented by Dask array"
_UFUNC_METHOD = re.compile(r"NotImplemented from __array_ufunc__\(<ufunc '(\w+)'>, '(\w+)'")
_RULES = os.path.join(os.path.dirname(__file__), "rules") + os.sep
_PACKAGE = os.path.dirname(__file__) + os.sep
_NUMPY = os.path.dirname(np.__file__) + os.sep


def any_lazy(values) -> bool:
    return any(is_lazy(v) for v in values)


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
