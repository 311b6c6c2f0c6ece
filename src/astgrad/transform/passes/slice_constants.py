"""``np.s_[1:-1]`` of literal slices and ints is made once, a constant of the module: not on every trip.

A stencil's step names its slices in every write, read of a written
slice's gradient and add into a gradient's slice (``setitem_into(u,
np.s_[1:-1], v)``, ``du[np.s_[1:-1]]``, ``add_at(du, g, s, np.s_[:-2])``):
each ``np.s_[...]`` reads ``np`` and its attribute and calls a Python
``__getitem__``, about 0.1 µs, five times a step of S1.  The value of
``np.s_[...]`` of literal slices and ints is that slice (or tuple of
slices and ints), an immutable object the same on every evaluation, so
the module binds it once (``s_1_to_m1`` for ``np.s_[1:-1]``) and the code
in loops reads the name.  An index with a name in it (``np.s_[i:j]``)
stays, and so does the code outside loops, which runs once.

It runs last, so no pass that reads ``np.s_[...]`` for what it proves
(written_items.py, fixed_shapes.py, the shapes of slices) sees a name
instead; and for the numpy backend only (Numba's reads ``np.s_`` as it is
written).
"""

from __future__ import annotations

from ..ir import compat
from ..ir.compat import gast
from ..ir.trees import rewrite
from .written_items import _slices

#: the repr of ``np.s_[...]``'s value -> the one object the modules bind for it (slices are immutable)
_MADE: dict = {}


def bind_slices(fn_def, ns) -> None:
    """Replace each ``np.s_[...]`` of literal slices and ints in a loop of ``fn_def`` by a module constant's
    name (outside loops, run once, the code stays as it reads best)."""

    def replace(node):
        if isinstance(node, gast.Subscript) and _slices(node, ns):
            parts = [_value(p) for p in (node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice])]
            made = tuple(parts) if isinstance(node.slice, gast.Tuple) else parts[0]
            if type(made) is int:  # np.s_[3] is the literal 3 already
                return None
            value = _MADE.setdefault(repr(made), made)
            return compat.name(ns.bind(value, _preferred(value)))
        return None
    for loop in [n for n in compat.walk(fn_def) if isinstance(n, (gast.For, gast.While))]:
        loop.body = [rewrite(stmt, replace) for stmt in loop.body]


def _value(node):
    """The slice or int a part of the index names (written_items._slices proved it literal)."""
    if isinstance(node, gast.Slice):
        return slice(*(None if b is None else _value(b) for b in (node.lower, node.upper, node.step)))
    if isinstance(node, gast.UnaryOp):
        return -node.operand.value
    return node.value


def _preferred(value) -> str:
    """``s_1_to_m1`` for ``slice(1, -1)``, ``s_2_on`` for ``slice(2, None)``, ``s_1_on__by_2`` for
    ``(slice(1, None), slice(None, None, 2))``, ``s_2__1_to_m1`` for ``(2, slice(1, -1))``."""
    parts = value if type(value) is tuple else (value,)
    return "s_" + "__".join(_part(p) for p in parts)


def _part(p) -> str:
    if type(p) is not slice:
        return _int(p)
    words = [] if p.start is None else [_int(p.start)]
    words += ["on"] if p.stop is None and p.start is not None else []
    words += [] if p.stop is None else ["to", _int(p.stop)]
    words += [] if p.step is None else ["by", _int(p.step)]
    return "_".join(words) or "all"


def _int(n: int) -> str:
    return f"m{-n}" if n < 0 else str(n)
