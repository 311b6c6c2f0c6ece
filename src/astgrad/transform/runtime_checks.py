"""Checks generated code makes when a statement runs, before one it could not follow.

Each raises a ``TypeError`` naming the user's code and what to write
instead, where the transform cannot tell at transform time what a value
will be: a list joined by ``+``, a dict looped over, a write through an
item or into an object the function does not own, ``x op= v`` on what a
called function returned.  ``runtime_errors`` adds the user's file and line.
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["not_joined", "not_a_dict", "written_through", "a_number", "written_outside"]


def not_joined(value, line, symbol):
    """Refuse ``+`` or ``*`` on an item of a ``wrt`` container that is itself a list or tuple (containers)."""
    if isinstance(value, (list, tuple)):
        raise TypeError(f"astgrad: in `{line}`, {symbol} is given a {type(value).__name__}, which {symbol} "
                        f"{'joins' if symbol == '+' else 'repeats'}; that has no gradient rule. Take the arrays "
                        f"out of it first (a, b = item), or join arrays with np.concatenate")


def not_a_dict(value, line, symbol=""):
    """Refuse ``for v in d`` over a dict of a ``wrt`` container: Python gives its keys, not its values."""
    if isinstance(value, dict):
        raise TypeError(f"astgrad: in `{line}`, the loop iterates over a dict, which gives its keys; astgrad "
                        f"does not follow that for a dict that carries a gradient. Loop over d.items(), "
                        f"d.values() or d.keys() instead")


def written_through(items, item, text):
    """Refuse ``a[i][j] = v`` where ``item`` (``a[i]``) is not what ``items`` holds: the generated code
    writes ``a[i] = t`` back, which equals Python's write into ``a[i]`` only for an item of a list or
    dict and a view of an array (normalize.store_through)."""
    kind = type(items)
    if kind is dict or kind is list:
        return
    if kind is tuple:
        raise TypeError(f"astgrad: `{text}[...] = ...` writes into an item of a tuple, which astgrad writes back "
                        "into the tuple and cannot; keep the items in a list, or write into the array by its "
                        "own name before making the tuple")
    if not isinstance(items, np.ndarray):
        raise TypeError(f"astgrad: `{text}[...] = ...` writes into an item of a {kind.__name__}; astgrad follows "
                        "such writes into lists, dicts and numpy arrays only: name the item first")
    if not isinstance(item, np.ndarray):
        raise TypeError(f"'{type(item).__name__}' object does not support item assignment (in `{text}[...] = "
                        "...`: one index of each axis in one subscript, a[i, j] = v)")
    if not np.may_share_memory(items, item):
        raise TypeError(f"astgrad: `{text}` is a copy (numpy copies for an index array or a mask), so numpy's "
                        f"`{text}[...] = ...` changes only that copy and the array keeps its values, while "
                        "astgrad's would change the array; write the index in one subscript, a[idx, j] = v, "
                        "or drop the statement if the copy was meant")


def a_number(value, what, instead):
    """Refuse ``x op= v`` (``what``) unless ``x`` holds a number, which it only rebinds: ``x`` came from a
    user function, and an array there may share memory the generated code would not write."""
    if not isinstance(value, (int, float, complex, np.generic)):
        raise TypeError(f"astgrad: `{what}` writes into the {type(value).__name__} a called function returned, "
                        f"which other names may share; astgrad's writes to a copy. Write {instead} (a new "
                        "value; nothing else changes)")


def written_outside(items, text, attribute):
    """Refuse ``config[k] = v`` (``attribute``: ``state.k = v``) kept as written on an object the function
    does not own unless it is a dict or list (for an attribute: anything but an array): writing into an
    array changes memory the adjoint may read after the function ran.  Also refuse a write into any object
    inside a differentiated argument of a gradient running on this thread (``_ARGUMENTS``): the function would
    read the new value, while the gradient is counted for the argument's old one."""
    if type(items) is dict or type(items) is list or attribute and not isinstance(items, np.ndarray):
        name = _argument_holding(items)
        if name is None:
            return
        raise TypeError(f"astgrad: `{text}{'.' if attribute else '[...]'} = ...` writes into the differentiated "
                        f"argument {name} (the object written into is {name} or inside it), which astgrad cannot "
                        f"follow: the function reads the new value, while the gradient is counted for the old "
                        f"one. Don't write into the argument through a global: pass the object explicitly, or "
                        f"copy it first ({text}_copy = copy.deepcopy({text})) and write into the copy")
    raise TypeError(f"astgrad: `{text}{'.' if attribute else '[...]'} = ...` writes into a {type(items).__name__!r} "
                    "object the function does not own; astgrad runs such writes as written into dicts, lists and "
                    "attributes of objects other than arrays (the adjoint may read an array's values after the "
                    "function ran): copy it into a local name first")


# code object of a function that runs generated code -> arguments(frame locals): {name: differentiated argument}.
# written_outside walks the calling frames (this thread's, nested gradients and callees included) for them:
# nothing is set or reset per call, so a function that writes into no global pays nothing.
_ARGUMENTS: dict = {}


def arguments_in(code, arguments):
    """Record that a frame running ``code`` holds its differentiated arguments as ``arguments(f_locals)``."""
    _ARGUMENTS[code] = arguments


def _argument_holding(items):
    """The name of a differentiated argument of a running gradient that is ``items`` or holds it, or None."""
    frame = sys._getframe(2)
    while frame is not None:
        arguments = _ARGUMENTS.get(frame.f_code)
        if arguments is not None:
            for name, value in (arguments(frame.f_locals) or {}).items():
                if _inside(items, value):
                    return name
        frame = frame.f_back
    return None


def _inside(items, value):
    if value is items:
        return True
    if type(value) is dict:
        return any(_inside(items, v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_inside(items, v) for v in value)
    return False
