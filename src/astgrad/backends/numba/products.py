"""Numba implementations of the rule helpers ``np.dot``'s gradient calls: ``gradient_tuple`` and ``matmul``.

The rule of ``a @ b`` is written into the generated code with its rank
tests folded away; ``np.dot``'s rule calls the rule of ``@`` as a function,
``gradient_tuple(matmul(g, ans, a, b), 2, (0,), 'numpy.dot')``.  Compiled,
``matmul`` is written for the ranks Numba sees, with the numpy rule's
operations (vectors and matrices; a stack of matrices is refused by Numba
at the user's line), and ``gradient_tuple`` picks the gradients out of the
tuple, refusing when Numba's types show a gradient the code needs is
missing (the numpy helper raises there too).
"""

from __future__ import annotations

import numpy as np

from ...rules import linalg
from ...transform import runtime


def register(overload, types, literal_value) -> None:
    """Register the implementations (``helpers.register`` passes its tools)."""

    @overload(linalg.matmul)
    def _matmul(g, ans, a, b):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
            return None
        if a.ndim == 1 and b.ndim == 1:
            return lambda g, ans, a, b: (g * b, g * a)
        if a.ndim == 2 and b.ndim == 1:
            return lambda g, ans, a, b: (np.expand_dims(g, -1) * b, a.T @ g)
        if a.ndim == 1 and b.ndim == 2:
            return lambda g, ans, a, b: ((np.expand_dims(g, 0) @ b.T)[0], np.expand_dims(a, -1) * np.expand_dims(g, 0))
        if a.ndim == 2 and b.ndim == 2:
            return lambda g, ans, a, b: (g @ b.T, a.T @ g)
        return None  # stacks of matrices: not written here

    @overload(runtime.gradient_tuple, prefer_literal=True)
    def _gradient_tuple(value, count, needed=(), rule="a rule"):
        count = literal_value(count, types)
        if type(count) is not int or count < 1:
            return None
        kinds = list(value.types) if isinstance(value, types.BaseTuple) else [value]
        kinds = (kinds + [types.none] * count)[:count]
        wanted = _needed(needed, literal_value, types)
        missing = [i for i, kind in enumerate(kinds) if isinstance(kind, types.NoneType) and (wanted is None
                                                                                               or i in wanted)]
        if missing:
            def refuse(value, count, needed=(), rule="a rule"):
                raise RuntimeError("a rule returned no gradient for an argument that requires grad")
            return refuse
        if isinstance(value, types.BaseTuple):
            items = [f"value[{i}]" if i < len(value.types) else "None" for i in range(count)]
        else:
            items = ["value"] + ["None"] * (count - 1)
        text = f"lambda value, count, needed=(), rule='a rule': ({', '.join(items)},)"
        return eval(compile(text, "<astgrad numba gradient_tuple>", "eval"), {"__name__": __name__})


def _needed(needed, literal_value, types):
    """The positions ``needed`` names, or None when Numba did not type them as constants."""
    value = literal_value(needed, types)
    if isinstance(value, tuple) and all(type(v) is int for v in value):
        return set(value)
    if isinstance(needed, types.BaseTuple):
        values = [literal_value(v, types) for v in needed]
        return set(values) if all(type(v) is int for v in values) else None
    return None
