"""Writes into a dict the caller keeps: ``bn_param["running_mean"] = v`` in the differentiated function.

The generated code runs such a write into the caller's dict, in place (``front/caller_state``), and
carries the gradients of the items the function reads back through the parameter, by key.  That is the
gradient of the code that runs while the function reaches the caller's dict by that one parameter only:
``caller_dict``, the function's first statement, refuses it when another argument, or a global or
closure variable the generated code reads, is that dict or holds it (a read through the other route
would not carry the written value's gradient).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import types

from .checks import _reachable

__all__ = ["caller_dict", "put_kept", "repeating"]

#: the name of a transformation running the function more than once for one call of its own (jacobian)
_REPEATING: contextvars.ContextVar = contextvars.ContextVar("astgrad_repeating", default=None)


@contextlib.contextmanager
def repeating(name):
    """While ``name`` (``jacobian``, ``jacfwd``, ...) runs generated code once per row or column, a write into
    the caller's dict is refused: one call of the function writes once."""
    token = _REPEATING.set(name)
    try:
        yield
    finally:
        _REPEATING.reset(token)


def caller_dict(obj, name, others, text):
    """Refuse ``obj``, the caller's ``name`` that ``text`` (``name["key"] = ...``) writes into, if it is a dict
    that ``others`` (the other arguments), what the generated module reads, or its own items also reach.
    Anything but a dict is left to ``put_kept``: the write may not run for these inputs."""
    if type(obj) is not dict:
        return
    outside = sys._getframe(1).f_globals
    routes = [(f"the argument {other_name}", value) for other_name, value in others.items()]
    routes += [(f"the global or closure variable {key}", value) for key, value in _outside(outside)]
    routes += [(f"{name} itself (an item holds it)", value) for value in obj.values()]
    for where, value in routes:
        if any(part is obj for part in _reachable(value)):
            raise TypeError(f"astgrad: `{text}` writes into {name}, which the function also reaches through "
                            f"{where}; the gradient follows the dict's items only through {name}, so a read or write "
                            f"the other way would be missed. Pass the dict once, and only as an argument")


def put_kept(items, index, value, name, text):
    """``items[index] = value`` (``text``) into the caller's ``name``, in place, as numpy runs it; refused for
    anything but a dict (a write into an array or another object is not run into the caller's)."""
    if type(items) is not dict:
        raise TypeError(f"astgrad: `{text}` writes into the {type(items).__name__!r} given as {name}; astgrad "
                        f"runs such writes into the caller's object for a dict only. Pass a dict, or return the "
                        f"value (has_aux=True returns it beside the gradient) and store it outside")
    repeated = _REPEATING.get()
    if repeated is not None:
        raise TypeError(f"astgrad: `{text}` writes into the caller's {name}, and astgrad.{repeated} runs the "
                        f"function once per row or column of its result, so the dict would be written that many "
                        f"times where one call writes once (and each run would read the last one's values). Take "
                        f"the derivative with grad, value_and_grad, vjp or jvp, or return the value (has_aux=True) "
                        f"instead of writing it")
    items[index] = value
    return items


def _outside(namespace):
    """``(name, value)`` of the data a generated module reads from outside: what it bound at transform time
    and the globals and closure variables it looks up live (``back/namespace.LiveGlobals``)."""
    for key, value in dict.items(namespace):
        if not key.startswith("__") and not callable(value) and not isinstance(value, types.ModuleType):
            yield key, value
    for key in getattr(namespace, "live", {}):
        try:
            yield key, namespace[key]
        except (KeyError, TypeError):
            continue
