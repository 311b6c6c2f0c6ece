"""``np.squeeze`` and ``np.reshape`` for Numba, which lacks the one and reshapes only contiguous arrays.

``lower`` rewrites ``np.squeeze(x, 1)`` (an axis that is a constant in the
text: the rule of ``a @ b`` with a 1-d ``a`` writes ``np.squeeze(..., -2)``,
people write ``np.squeeze(out, axis=1)``) into ``squeeze_along(x, 1)``, which
is the numpy call in Python and, compiled, an index with 0 at the squeezed
axes after checking that each has length 1 (numpy's ValueError otherwise,
never a slice of a longer axis).  ``np.squeeze(x)`` without an axis is
refused where it is written (``compiled``): the rank of its result depends
on the lengths of ``x``'s axes, which Numba does not know when it compiles.

``np.reshape(g, shape)`` becomes ``reshaped(g, shape)``: a gradient is often
a broadcast view (``filled``), which Numba's reshape refuses; compiled, such
an array is copied into a contiguous one first.  The numbers are the same.
A reshaped array numpy would return as a view is a copy there only where it
was not contiguous, and compiled code writes into no array it did not make.

``np.roll(x, s, axis=k)`` (a constant axis) becomes ``rolled(x, s, k)`` and
``np.where(c, a, b)`` becomes ``chosen(c, a, b)``: compiled, each is loops
written for the ranks Numba sees, which compile in a fraction of the time
Numba's own take (its slice assignment and its broadcasting helpers).
"""

from __future__ import annotations

import numpy as np

from ...transform.ir import compat
from ...transform.ir.compat import gast
from .reductions import _constant


def squeeze_along(x, axis):
    """``np.squeeze(x, axis)``."""
    return np.squeeze(x, axis)


def reshaped(x, shape):
    """``np.reshape(x, shape)``."""
    return np.reshape(x, shape)


def chosen(condition, a, b):
    """``np.where(condition, a, b)``."""
    return np.where(condition, a, b)


def stacked(items):
    """``np.stack(items)``."""
    return np.stack(items)


def expanded(x, axis):
    """``np.expand_dims(x, axis)``."""
    return np.expand_dims(x, axis)


def rolled(x, shift, axis):
    """``np.roll(x, shift, axis)``."""
    return np.roll(x, shift, axis)


def helper_call(node, resolve, bound):
    """``squeeze_along(x, 1)`` for ``np.squeeze(x, 1)``, ``reshaped(g, s)`` for ``np.reshape(g, s)``,
    ``rolled(x, s, 1)`` for ``np.roll(x, s, axis=1)`` (an axis that is a constant), ``np.roll(x, s)`` for
    ``np.roll(x, s, None)`` (the same roll, which Numba takes only without an axis); else None."""
    if not isinstance(node, gast.Call):
        return None
    try:
        target = resolve(node.func)
        squeeze, reshape, roll = target is np.squeeze, target is np.reshape, target is np.roll
        where = target is np.where
        expand = target is np.expand_dims
        stack = target is np.stack
    except TypeError:  # an object whose comparison is not a bool
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if squeeze and len(node.args) + len(keywords) == 2 and (len(node.args) == 2 or set(keywords) == {"axis"}):
        axis = node.args[1] if len(node.args) == 2 else keywords["axis"]
        if not _is_axis(_constant(axis)):
            return None  # an axis known only when the code runs: Numba refuses np.squeeze, at the user's line
        return compat.call(compat.name(bound(squeeze_along)), [compat.clone(node.args[0]), compat.clone(axis)])
    if roll and len(node.args) + len(keywords) == 3 and (len(node.args) == 3 or set(keywords) == {"axis"}):
        axis = node.args[2] if len(node.args) == 3 else keywords["axis"]
        if isinstance(axis, gast.Constant) and axis.value is None:  # the flattened array rolled: Numba's np.roll(x, s)
            return compat.call(compat.clone(node.func), [compat.clone(a) for a in node.args[:2]])
        if type(_constant(axis)) is not int:
            return None  # several axes, or one known only when the code runs: Numba refuses np.roll at the line
        return compat.call(compat.name(bound(rolled)), [compat.clone(a) for a in node.args[:2]] + [compat.clone(axis)])
    if expand and len(node.args) == 2 and not keywords and isinstance(_constant(node.args[1]), tuple) \
            and _is_axis(_constant(node.args[1])):
        return compat.call(compat.name(bound(expanded)), [compat.clone(a) for a in node.args])
    if stack and len(node.args) == 1 and not keywords:  # Numba's np.stack takes no list
        return compat.call(compat.name(bound(stacked)), [compat.clone(node.args[0])])
    if reshape and len(node.args) == 2 and not keywords:
        return compat.call(compat.name(bound(reshaped)), [compat.clone(a) for a in node.args])
    if where and len(node.args) == 3 and not keywords:
        return compat.call(compat.name(bound(chosen)), [compat.clone(a) for a in node.args])
    return None


def squeeze_without_axis(node, resolve) -> bool:
    """Whether ``node`` calls ``np.squeeze`` with no axis (or ``axis=None``)."""
    if not isinstance(node, gast.Call):
        return False
    try:
        if resolve(node.func) is not np.squeeze:
            return False
    except TypeError:
        return False
    axis = node.args[1] if len(node.args) > 1 else {k.arg: k.value for k in node.keywords}.get("axis")
    return axis is None or _constant(axis) is None


def _is_axis(value) -> bool:
    return type(value) is int or isinstance(value, tuple) and bool(value) and all(type(v) is int for v in value)


def register(numba, overload, types, literal_axes) -> None:
    """Register the helpers' Numba implementations (``helpers.register`` passes its tools)."""

    @overload(squeeze_along, prefer_literal=True)
    def _squeeze_along(x, axis):
        if not isinstance(x, types.Array):
            return None
        rank = x.ndim
        if isinstance(axis, types.BaseTuple):
            given = [getattr(a, "literal_value", None) for a in axis]
        else:
            given = [getattr(axis, "literal_value", None)]
        axes = literal_axes(axis, rank, types)
        if axes is None or len(axes) != len(given):  # not constant, out of range, or an axis named twice
            return None
        checks = "".join(f"    if x.shape[{i}] != 1:\n        raise ValueError('cannot select an axis to squeeze out "
                         f"which has size not equal to one')\n" for i in sorted(axes))
        if len(axes) == rank:  # every axis goes: a 0-d array, as numpy gives (an index would give a number)
            result = "np.ascontiguousarray(x).reshape(())"
        else:
            result = "x[" + ", ".join("0" if i in axes else ":" for i in range(rank)) + "]"
        return _function(f"def squeeze(x, axis):\n{checks}    return {result}\n", "squeeze")

    @overload(reshaped)
    def _reshaped(x, shape):
        if isinstance(x, types.Array) and x.layout == "C":
            return lambda x, shape: x.reshape(shape)
        if isinstance(x, types.Array):
            return lambda x, shape: np.ascontiguousarray(x).reshape(shape)
        if isinstance(x, (types.Float, types.Complex)):
            def number(x, shape):
                out = np.full(shape, x)
                if out.size != 1:
                    raise ValueError("cannot reshape an array of size 1 into a shape of another size")
                return out
            return number


    @overload(expanded, prefer_literal=True)
    def _expanded(x, axis):  # several axes at once (Numba's np.expand_dims takes one), of an array or a number
        rank = (x.ndim if isinstance(x, types.Array) else 0) + (len(axis) if isinstance(axis, types.BaseTuple) else 1)
        axes = literal_axes(axis, rank, types)
        if axes is None or not isinstance(axis, types.BaseTuple) or len(axes) != len(axis):
            return None
        if isinstance(x, (types.Float, types.Complex, types.Integer)):
            return _function(f"def expand(x, axis):\n    return np.full(({'1, ' * rank}), x)\n", "expand")
        if not isinstance(x, types.Array):
            return None
        old = iter(range(x.ndim))
        shape = ", ".join("1" if i in axes else f"x.shape[{next(old)}]" for i in range(rank))
        return _function(f"def expand(x, axis):\n    return np.ascontiguousarray(x).reshape(({shape},))\n", "expand")

    @overload(chosen)
    def _chosen(condition, a, b):
        return _choosing(types, condition, a, b) or (lambda condition, a, b: np.where(condition, a, b))

    @overload(rolled, prefer_literal=True)
    def _rolled(x, shift, axis):
        if not isinstance(x, types.Array) or not isinstance(shift, types.Integer):
            return None  # a tuple of shifts: not written here, refused at the user's line
        axes = literal_axes(axis, x.ndim, types)
        if axes is None or len(axes) != 1 or x.ndim == 0:
            return None
        (k,) = axes
        core = _roll_along(numba, x.ndim, k)
        return lambda x, shift, axis: core(x, shift + 0)  # + 0: one compiled roll for every shift, not one each


#: (rank, axis) -> the Numba function rolling an array of that rank along that axis
_ROLLS: dict = {}


def _roll_along(numba, rank, k):
    """``np.roll(x, shift, k)`` for arrays of ``rank``: each element copied to its place, in loops.

    Numba's slice assignment would compile a formatter of shapes for its
    error message, longer to compile than the rest of the roll.
    """
    if (rank, k) not in _ROLLS:
        at = ", ".join("j" if axis == k else f"i{axis}" for axis in range(rank))
        lines = ["def roll(x, shift):", "    out = np.empty(x.shape, x.dtype)", f"    n = x.shape[{k}]",
                 "    if n == 0:", "        return out", "    s = shift % n"]
        for axis in range(rank):
            lines.append("    " * (axis + 1) + f"for i{axis} in range(x.shape[{axis}]):")
            if axis == k:
                lines.append("    " * (axis + 2) + f"j = i{axis} + s - n if i{axis} + s >= n else i{axis} + s")
        lines.append("    " * (rank + 1) + f"out[{at}] = x[{', '.join(f'i{axis}' for axis in range(rank))}]")
        lines.append("    return out")
        _ROLLS[rank, k] = numba.njit(_function("\n".join(lines) + "\n", "roll"))
    return _ROLLS[rank, k]


def _choosing(types, condition, a, b):
    """``np.where(condition, a, b)`` as loops over the broadcast shape, or None where numpy's is kept.

    Numba's np.where broadcasts through generic helpers that take seconds to
    compile for each new kind of arguments.  Written here for a boolean
    array condition and values whose result dtype is plain: two arrays of
    one dtype, or a float64 (complex128) array and a real number.  Shapes
    broadcast as numpy's do, with numpy's ValueError where they do not.
    """
    from numba.np.numpy_support import as_dtype
    operands = {"condition": condition, "a": a, "b": b}
    if not (isinstance(condition, types.Array) and isinstance(condition.dtype, types.Boolean)):
        return None
    arrays = [t for t in (a, b) if isinstance(t, types.Array)]
    real = (types.Float, types.Integer, types.Boolean)
    if len(arrays) == 2 and a.dtype == b.dtype:
        dtype = a.dtype
    elif len(arrays) == 1 and str(arrays[0].dtype) in ("float64", "complex128") \
            and isinstance(b if arrays[0] is a else a, real):
        dtype = arrays[0].dtype
    else:
        return None
    rank = max(t.ndim for t in operands.values() if isinstance(t, types.Array))
    if rank == 0:
        return None
    lines = ["def where(condition, a, b):"] + [f"    s{j} = 1" for j in range(rank)]
    for name, kind in operands.items():
        if not isinstance(kind, types.Array):
            continue
        for k in range(kind.ndim):
            j = rank - kind.ndim + k
            lines += [f"    if {name}.shape[{k}] != 1:",
                      f"        if s{j} != 1 and s{j} != {name}.shape[{k}]:",
                      "            raise ValueError('operands could not be broadcast together')",
                      f"        s{j} = {name}.shape[{k}]"]
    shape = ", ".join(f"s{j}" for j in range(rank))
    lines.append(f"    out = np.empty(({shape},), dtype)")

    def item(name):
        kind = operands[name]
        if not isinstance(kind, types.Array):
            return name
        if kind.ndim == 0:
            return f"{name}[()]"
        at = ", ".join(f"min(i{rank - kind.ndim + k}, {name}.shape[{k}] - 1)" for k in range(kind.ndim))
        return f"{name}[{at}]"
    for j in range(rank):
        lines.append("    " * (j + 1) + f"for i{j} in range(s{j}):")
    at = ", ".join(f"i{j}" for j in range(rank))
    lines.append("    " * (rank + 1) + f"out[{at}] = {item('a')} if {item('condition')} else {item('b')}")
    lines.append("    return out")
    return _function("\n".join(lines) + "\n", "where", dtype=as_dtype(dtype))


def _function(text, name, **names):
    """A small implementation written for one rank and its axes (Numba compiles it per call site's types)."""
    namespace = {"np": np, "__name__": __name__, **names}
    exec(compile(text, "<astgrad numba shaping>", "exec"), namespace)
    return namespace[name]
