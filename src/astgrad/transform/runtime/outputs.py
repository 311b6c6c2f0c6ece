"""Checks of a differentiated function's output, made when the generated code runs.

``grad`` needs one number; ``has_aux=True`` needs a ``(loss, aux)`` pair.
front/returns.py decides where the generated code calls these (only where
the output's type cannot be seen when transforming).
"""

from __future__ import annotations

import numpy as np

from ...rules._lazy import is_lazy

_NUMBER_KINDS = frozenset("iufc")


def scalar_output(value, where):
    """Raise unless ``value`` is one real or complex number (a Python or numpy scalar, a 0-d array)."""
    kind = type(value)
    if kind is float or kind is int or kind is np.float64:
        return
    if (isinstance(value, (np.generic, np.ndarray)) or is_lazy(value)) and value.ndim == 0 \
            and value.dtype.kind in _NUMBER_KINDS:
        return  # a 0-d Dask array too: its value is not computed here
    if isinstance(value, (float, int, complex)) and not isinstance(value, bool):
        return
    raise TypeError(f"grad requires a scalar output; {where} returned {_describe(value)}: {_advice(value)}")


def not_scalar(shape, where, parameter=None):
    """Raise: the output's shape (or the shape of the parameter it has) is ``shape``, not ``()``."""
    what = f"a value of the shape of its parameter {parameter}, which is {shape} here" if parameter else \
        f"an array of shape {shape}"
    raise TypeError(f"grad requires a scalar output; {where} returns {what}: use vjp, or reduce it, e.g. np.sum")


def aux_pair(value, where):
    """Raise unless ``value`` is the ``(loss, aux)`` pair ``has_aux=True`` asks for."""
    if type(value) in (tuple, list) and len(value) == 2:
        return
    raise TypeError(f"has_aux=True requires the function to return a pair (loss, aux); {where} returned "
                    f"{_describe(value)}. Write `return loss, aux`.")


def _describe(value) -> str:
    if isinstance(value, np.ndarray) or is_lazy(value):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    if isinstance(value, (tuple, list)):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__module__ + '.' if type(value).__module__ not in ('builtins',) else ''}" \
           f"{type(value).__name__}"


def _advice(value) -> str:
    if isinstance(value, (tuple, list)):
        return ("to return auxiliary values, pass has_aux=True and return (loss, aux); "
                "for the gradient of several outputs, use vjp")
    if (isinstance(value, np.ndarray) or is_lazy(value)) and value.dtype.kind in _NUMBER_KINDS:
        return "use vjp, or reduce it, e.g. np.sum"
    return "return the number to differentiate (a float or a 0-d array)"
