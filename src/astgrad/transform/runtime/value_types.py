"""Values numpy gives other meanings than an ndarray's or a float's: told apart from those that mean the same.

``np.matrix`` makes ``*`` a matrix product and keeps two dimensions
through reductions; a masked array leaves its masked entries out of sums
and products; a subclass of ndarray may override any operator or method;
``fractions.Fraction`` and ``decimal.Decimal`` compute as Python objects
(numpy makes object arrays of them, or refuses them).  Both engines compute
with the meanings of plain arrays and floats, so such a value would get the
derivative of other code.  Where the generated engine meets one (an
argument, a global or closure variable the code reads) it is refused with
a ``TypeError`` that names the type and what to pass instead.  A subclass
that defines nothing but construction and printing (``__new__``,
``__array_finalize__``, ``__repr__``...) changes no meaning: it is computed
with as the plain ndarray it views, and so is ``np.memmap``.
"""

from __future__ import annotations

import numbers

import numpy as np

from ...values import trees as _trees

#: what a subclass of ndarray may define and still mean what ndarray means
_BOOKKEEPING = frozenset({
    "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__", "__firstlineno__",
    "__static_attributes__", "__annotations__", "__annotate__", "__orig_bases__", "__parameters__",
    "__new__", "__init__", "__array_finalize__", "__repr__", "__str__", "__format__", "__reduce__",
    "__setstate__", "__init_subclass__", "__class_getitem__"})
#: subclasses of numpy's own whose arithmetic is ndarray's
_SAME_MEANING = (np.memmap,)


def other_meaning(value, x="x") -> str | None:
    """Why ``value`` means something else to numpy than the engines compute, or None; ``x`` names it in the advice."""
    kind = type(value)
    if kind is np.ndarray:
        return None
    if kind is float or kind is int or kind is bool or kind is complex or value is None or isinstance(value, np.generic):
        return None
    if isinstance(value, np.matrix):
        return ("a numpy.matrix: with it * is a matrix product and ** a matrix power, and reductions keep two "
                f"dimensions, where both engines compute with ndarray's meanings. Pass np.asarray({x}) "
                "(and write @ where a matrix product is meant)")
    if isinstance(value, np.ma.MaskedArray):
        return ("a numpy.ma.MaskedArray: numpy leaves its masked entries out of sums, products and means, "
                f"which the engines would count. Pass the unmasked values ({x}.compressed()) or a filled array "
                f"({x}.filled(0.0), or np.where(np.ma.getmaskarray({x}), 0.0, {x}.data))")
    if isinstance(value, np.ndarray):
        if _same_meaning(kind):
            return None
        defined = sorted({name for cls in kind.__mro__[:kind.__mro__.index(np.ndarray)]
                          for name in vars(cls) if name not in _BOOKKEEPING})
        return (f"a {kind.__module__}.{kind.__qualname__}, a subclass of numpy.ndarray that defines "
                f"{', '.join(defined[:6])}{', ...' if len(defined) > 6 else ''}: its operators and methods may "
                f"not mean what ndarray's do, and the engines compute with ndarray's. Pass np.asarray({x})")
    if isinstance(value, numbers.Number):
        return (f"a {kind.__module__}.{kind.__qualname__}: numpy computes with it as a Python object (or refuses "
                f"it), where the engines compute with floats. Pass float({x}) (or complex({x}))")
    return None


def other_meaning_inside(value, name):
    """``(where, why)`` for ``value``, or the first leaf of it (a dict, list, tuple, dataclass, registered
    class), that means something else to numpy (``other_meaning``); None if none does.

    ``name`` names ``value`` (``D``, ``Holder.M``); ``where`` adds the leaf's path (``D['M']``).
    """
    kind = type(value)
    if kind is np.ndarray or kind is float or kind is int:
        return None
    items = _trees.leaves(value) if _trees.is_tree(value) else (((), value),)
    for path, leaf in items:
        where = f"{name}{_trees.path_text(path)}"
        why = other_meaning(leaf, where)
        if why is not None:
            return where, why
    return None


def held_data(obj) -> bool:
    """Whether ``obj``, the value of ``module.name``, is data (an array, a container, a value of another
    meaning) that generated code should read at each call as a field (``attributes.field``), and not a
    number, a function, a class or a module it may name directly."""
    return isinstance(obj, (np.ndarray, dict, list, tuple)) or other_meaning_inside(obj, "") is not None


def viewed_as_plain(value) -> bool:
    """Whether ``value`` is a subclass of ndarray that changes no meaning, to be computed with as its ndarray."""
    return type(value) is not np.ndarray and isinstance(value, np.ndarray) and _same_meaning(type(value))


def _same_meaning(kind) -> bool:
    if kind in _SAME_MEANING:
        return True
    own = kind.__mro__[:kind.__mro__.index(np.ndarray)]
    return all(name in _BOOKKEEPING for cls in own for name in vars(cls))
