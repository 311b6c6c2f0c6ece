"""What generated forward-mode code calls besides the rules: zeros of a value's structure, a rule's tangent made whole.

A tangent has its value's structure: an array of its shape and floating
dtype, a number, or a list, tuple or dict of tangents.  The forward sweep
knows statically where a tangent is zero and writes nothing there; where
control flow joins a path with a tangent and one without, it writes
``zero_tangent(y)``.
"""

from __future__ import annotations

import numpy as np

from ...rules._forward import add_tangents, broadcast_tangent

__all__ = ["zero_tangent", "tangent_of", "add_tangents", "stack_pop", "jvp_tangent"]

#: the global of a generated module naming the stack its functions save values on (``ns.stack``)
STACK_MARK = "__astgrad_stack__"


def generated_stack(fn):
    """The name of the stack in ``fn``'s body when astgrad generated ``fn`` itself (an adjoint), else None.

    Only that list is read as a stack: a user's list called ``_stack`` is a
    list like any other.
    """
    module = getattr(fn, "__globals__", None)
    return module.get(STACK_MARK) if isinstance(module, dict) else None


def stack_pop(items):
    """``items.pop()`` as a call: the forward sweep of generated code pops a value and, beside it, its tangent."""
    return items.pop()


def zero_tangent(value):
    """The zero tangent of ``value``: zeros of its shape and floating dtype, item by item in a container; ``None`` for ``None``."""
    kind = type(value)
    if kind is float or kind is int or kind is bool:
        return 0.0
    if value is None:  # no gradient (generated code's zero of unknown shape): no tangent either
        return None
    if kind is complex:
        return 0j
    if isinstance(value, (list, tuple)):
        return type(value)(zero_tangent(v) for v in value)
    if isinstance(value, dict):
        return {k: zero_tangent(v) for k, v in value.items()}
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        value = np.asarray(value)
        dtype = value.dtype
    return np.zeros_like(value, dtype=dtype if dtype.kind in "fc" else np.float64)


def tangent_of(t, ans):
    """A rule's tangent ``t`` of the result ``ans`` made whole: broadcast to its shape and dtype, ``None`` as zeros."""
    if t is None:
        return zero_tangent(ans)
    if isinstance(ans, (tuple, list)) and isinstance(t, (tuple, list)):
        return type(t)(tangent_of(part, out) for part, out in zip(t, ans))
    return broadcast_tangent(t, ans)


def jvp_tangent(value, tangent, what):
    """``tangent``, checked as a generated jvp checks it, where a differentiated function calls that jvp.

    The caller's gradient runs the jvp's generated code itself (reverse over
    forward, transform/front/generated_calls.py), so the checks ``jvp(f)(x, u)``
    makes on ``u`` are made here: a direction of ``value``'s shape, a number
    made an array where ``value`` is one.  Containers are refused: the code
    called is the jvp's code for arrays.  ``what`` says which argument of
    which jvp, for the messages.  Linear in ``tangent``: its rules pass the
    gradient and the tangent through.
    """
    if isinstance(value, (dict, list, tuple)) or isinstance(tangent, (dict, list, tuple)):
        given = value if isinstance(value, (dict, list, tuple)) else tangent
        raise TypeError(f"astgrad: {what} is given a {type(given).__name__}; a jvp called inside a differentiated "
                        f"function takes arrays and numbers for the arguments it varies and their tangents "
                        f"(write np.array(...), or differentiate the function of the containers itself)")
    if np.shape(tangent) != np.shape(value):
        raise ValueError(f"astgrad.jvp: {what} has a tangent of shape {np.shape(tangent)} and the argument has "
                         f"shape {np.shape(value)}; a tangent is a direction of its argument's shape")
    if isinstance(value, np.ndarray) and not isinstance(tangent, np.ndarray):
        return np.asarray(tangent, dtype=np.result_type(tangent, 1.0))
    return tangent
