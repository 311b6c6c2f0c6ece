"""Numba implementations of the runtime helpers generated code calls.

Each is registered with ``numba.extending.overload`` on the helper itself
(``transform.runtime.shape``, ``rules.filled``, ...), so the generated text
is the same for both backends and Numba, meeting the global ``shape`` in
compiled code, types the call with the implementation below for the
argument types it sees.  Python calls of the helpers are not touched.

An implementation gives the same values as the numpy helper for the types
it accepts and raises where that one raises (with a shorter message: the
wrapper reruns the numpy adjoint to say which line, see ``compiled``).  For
types it does not accept it returns nothing, and Numba reports the call as
one it cannot compile: a located error, never a different number.

Numba is imported by ``register()``, when the first numba gradient is built.

Long: one Numba implementation per runtime helper the generated code can
call, each a few lines written against Numba's types; they are registered
together by ``register()``, the one place that imports Numba, and the
larger families (reductions, shaping, products) live in modules of their own.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import rules
from ...rules import _extra, _support, sequences
from ...transform.runtime import outputs
from ...transform import runtime
from ...transform.runtime import attributes, structural
from . import exponential, fuse, kept_helpers, loops, lower, products, reductions, shaping, shared_impls

_registered = False


def register() -> None:
    """Register the implementations with Numba (once)."""
    global _registered
    if _registered:
        return
    import numba  # the optional dependency, imported only here and in compiled.py
    import numba.extending
    from numba.core.imputils import impl_ret_borrowed
    from numba import types
    from numba.extending import overload as numba_overload

    kept_helpers.keep_helpers()  # their machine code read from disk after the first gradient on the machine
    shared_impls.share_impls()  # one implementation per kind of arguments, whether the entry or a callee calls it

    def overload(func, **options):
        """``numba.extending.overload`` for an implementation only compiled code calls: without the wrappers Numba
        writes for calls from Python and from C (the arguments boxed and unboxed, for every compiled signature),
        which took a fifth of a second of RK4's first compile (S2) and are never run."""
        jit_options: Any = {**options.pop("jit_options", {}), "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
        return numba_overload(func, jit_options=jit_options, **options)

    overload(_reduce_to)(lambda g, to: _reducing(g.ndim, len(to), g.dtype))

    def number(t) -> bool:
        return isinstance(t, (types.Number, types.Boolean))

    @overload(runtime.shape)
    def _shape(value):
        if isinstance(value, types.Array):
            return lambda value: value.shape
        if number(value):
            return lambda value: ()

    @overload(runtime.size)
    def _size(value):
        if isinstance(value, types.Array):
            return lambda value: value.size
        if number(value):
            return lambda value: 1

    @overload(runtime.ndim)
    def _ndim(value):
        if isinstance(value, types.Array):
            rank = value.ndim
            return lambda value: rank
        if number(value):
            return lambda value: 0

    @overload(runtime.only_shape)
    def _only_shape(value):
        if isinstance(value, types.Array) or number(value):
            return lambda value: value  # memory work of the numpy backend; Numba frees by reference counts

    @overload(runtime.array_kind)
    def _array_kind(x):
        if number(x):
            return lambda x: None
        if isinstance(x, types.Array):
            return lambda x: (x.shape, x.dtype)  # the dtype is a type: nothing computed, nothing compiled

    @overload(runtime.in_place)
    def _in_place(new, kind, op):
        if isinstance(kind, types.NoneType):
            return lambda new, kind, op: new  # a number is rebound, as Python does
        if isinstance(new, types.Array) and isinstance(kind, types.BaseTuple) and new.dtype == kind[1].dtype:  # type: ignore[index]
            def keeps_the_shape(new, kind, op):
                if new.shape != kind[0]:
                    raise ValueError("non-broadcastable output operand")
                return new
            return keeps_the_shape
        # another dtype (numpy casts into the array's, or raises): not compiled

    # the numpy backend saves what a write overwrote; here the array is saved whole, as written
    overload(runtime.overwritten)(lambda a, index: lambda a, index: a)
    overload(runtime.restored)(lambda current, saved: lambda current, saved: saved)

    @overload(runtime.Shaped)
    def _shaped(shape):
        if isinstance(shape, (types.UniTuple, types.Tuple)):
            return lambda shape: np.empty(shape)  # read only for its shape and size, never its values

    overload(runtime.stand_in)(lambda value: lambda value: value)  # no shape is kept for a value here
    overload(runtime.checked)(lambda value: lambda value: None)
    overload(attributes.item)(lambda value, where: lambda value, where: value)  # compiled: numbers and arrays

    @overload(runtime.broadcast_shape)
    def _broadcast_shape(*shapes):
        return lambda *shapes: np.broadcast_shapes(*shapes)

    @overload(fuse.fused_shape)
    def _fused_shape(*operands):
        if operands and isinstance(operands[0], types.StarArgTuple):
            operands = tuple(operands[0])
        ranks = []
        for kind in operands:
            kind = kind.type if isinstance(kind, types.Optional) else kind
            if isinstance(kind, types.Array):
                ranks.append(kind.ndim)
            elif number(kind):
                ranks.append(0)
            else:
                return None
        rank = max(ranks, default=0)
        lines = [f"    s{j} = 1" for j in range(rank)]
        for p, n in enumerate(ranks):
            for k in range(n):
                j = rank - n + k
                lines += [f"    d = shape(operands[{p}])[{k}]",
                          "    if d != 1:",
                          f"        if s{j} != 1 and s{j} != d:",
                          "            raise ValueError('operands could not be broadcast together')",
                          f"        s{j} = d"]
        items = "".join(f"s{j}, " for j in range(rank))
        return _implementation("*operands", "\n".join(lines + [f"    return ({items})"]) + "\n",
                               shape=runtime.shape)

    @overload(fuse.held_shape)
    def _held_shape(value):
        if isinstance(value, types.Optional) and isinstance(value.type, types.BaseTuple):
            return lambda value: unwrapped(value)  # type: ignore[call-arg]  # bound wherever it is read
        if isinstance(value, types.BaseTuple):
            return lambda value: value

    @overload(runtime.T)
    def _transpose(x):
        if isinstance(x, types.Array) and x.ndim == 2:
            return lambda x: x.T
        if isinstance(x, types.Array) and x.ndim > 2:
            last = x.ndim - 1
            return lambda x: np.swapaxes(x, last, last - 1)

    @overload(_support.filled)
    def _filled(g, shape):
        if isinstance(g, (types.Integer, types.Boolean)):
            return lambda g, shape: np.full(shape, float(g))
        if isinstance(g, types.Float):
            return lambda g, shape: np.full(shape, g)
        if isinstance(g, types.Array) and g.ndim == 0:
            return lambda g, shape: np.full(shape, g[()])
        if isinstance(g, types.Array):
            return lambda g, shape: np.broadcast_to(g, shape)

    @overload(_support.within)
    def _within(a, lo, hi):
        """np.clip's mask: 1 where lo <= a <= hi, a bound of None unbounded (the shape a and the bounds broadcast
        to; a comparison with NaN is False, as numpy's is)."""
        def bound(t):
            return isinstance(t, types.NoneType) or number(t) or isinstance(t, types.Array)
        if not (isinstance(a, types.Array) and bound(lo) and bound(hi)):
            return None
        low, high = not isinstance(lo, types.NoneType), not isinstance(hi, types.NoneType)
        if low and high:
            return lambda a, lo, hi: (a >= lo) & (a <= hi)
        if low:
            return lambda a, lo, hi: a >= lo
        if high:
            return lambda a, lo, hi: a <= hi
        return lambda a, lo, hi: np.ones(a.shape, dtype=np.bool_)

    _unbroadcast_overloads(overload, types, number)
    reductions.register(numba, overload, types, _literal_axes, _literal_value)
    shaping.register(numba, overload, types, _literal_axes)
    products.register(overload, types, _literal_value)
    # the numpy backend's results written into a buffer nothing reads again: computed anew here
    overload(runtime.add_into)(lambda buffer, other: lambda buffer, other: buffer + other)
    overload(runtime.subtract_into)(lambda buffer, other: lambda buffer, other: buffer - other)
    overload(runtime.multiply_into)(lambda buffer, other: lambda buffer, other: buffer * other)
    overload(runtime.divide_into)(lambda buffer, other: lambda buffer, other: buffer / other)
    _accumulation_overloads(overload, types)
    _item_add_overloads(overload, types)
    # an item write the numpy backend proved into an array no other name reaches: the copy, as written

    @overload(runtime.reduced_shape, prefer_literal=True)
    def _reduced_shape(shape, axis=None, keepdims=False, identity=None):
        rank = len(shape)
        axes = _literal_axes(axis, rank, types)
        keep = _literal_value(keepdims, types)
        if axes is None or keep not in (True, False):
            return None  # an axis or keepdims known only when the code runs: the shape's length would be too
        items = ", ".join("1" if i in axes and keep else f"shape[{i}]" for i in range(rank)
                          if keep or i not in axes)
        return _lambda(f"lambda shape, axis=None, keepdims=False, identity=None: ({items}{',' if items else ''})")

    @overload(_support.reduced_count, prefer_literal=True)
    def _reduced_count(shape, axis=None):
        rank = len(shape)
        axes = _literal_axes(axis, rank, types)
        if axes is None:
            return None
        product = " * ".join(f"shape[{i}]" for i in sorted(axes)) or "1"
        return _lambda(f"lambda shape, axis=None: {product}")

    @overload(_support.expand_reduced, prefer_literal=True)
    def _expand_reduced(g, shape, axis=None, keepdims=False):
        rank = len(shape)
        axes = _literal_axes(axis, rank, types)
        keep = _literal_value(keepdims, types)
        if axes is None or keep not in (True, False):
            return None
        if number(g) or isinstance(g, types.Array) and g.ndim == 0:
            return lambda g, shape, axis=None, keepdims=False: _support.filled(g, shape)
        if not isinstance(g, types.Array):
            return None
        if keep or g.ndim == rank:
            return lambda g, shape, axis=None, keepdims=False: np.broadcast_to(g, shape)
        kept = ", ".join("1" if i in axes else f"shape[{i}]" for i in range(rank))
        return _lambda(f"lambda g, shape, axis=None, keepdims=False: "
                       f"broadcast_to(ascontiguousarray(g).reshape(({kept},)), shape)")

    @overload(_extra.scatter)
    def _scatter(g, shape, index):
        basic = (types.Integer, types.SliceType, types.NoneType)  # None: a new axis (q[:, None])
        if isinstance(index, types.Array) and index.ndim == 1 and isinstance(index.dtype, types.Integer) \
                and isinstance(g, types.Array) and isinstance(g.dtype, (types.Float, types.Complex)) \
                and isinstance(shape, types.BaseTuple) and g.ndim == len(shape) >= 1:
            return _scattered_rows(g.dtype)
        if not (isinstance(index, basic) or isinstance(index, types.BaseTuple) and
                all(isinstance(i, basic) for i in index)):  # type: ignore[attr-defined]
            return None  # another array index (booleans, several axes): not written here
        if isinstance(g, types.Array):
            dtype = g.dtype
        elif isinstance(g, (types.Float, types.Complex)):
            dtype = types.complex128 if isinstance(g, types.Complex) else types.float64
        else:
            return None
        add = _assignment(len(shape), index, g, types, "out", "g", "+=")  # numpy's np.add.at: 0.0 + g
        if add is None:
            return None
        # np.zeros(shape, <a dtype class>) as zeros_like_gradient writes it: Numba compiles np.zeros once per
        # kind of arguments (a keyword, a dtype object, a class each apart)
        return _implementation("g, shape, index", f"    out = np.zeros(shape, dtype)\n{add}    return out\n",
                               dtype=dtype)

    _write_overloads(overload, types)

    @overload(lower.checked_math, prefer_literal=True)
    def _checked_math(name, x):
        name = _literal_value(name, types)
        if name not in lower.MATH_DOMAINS or not number(x) or isinstance(x, types.Complex):
            return None
        text = (f"def checked(name, x):\n    if {lower.MATH_DOMAINS[name]}:\n"
                f"        raise ValueError('math domain error')\n    return math.{name}(x)\n")
        namespace = {"math": math, "__name__": __name__}
        exec(compile(text, "<astgrad numba math>", "exec"), namespace)
        return namespace["checked"]

    @overload(rules.linalg.tensordot)
    def _tensordot(g, ans, a, b, axes=2):
        """Typed, never run, where it is np.dot's rule's branch for ``b`` of rank above 2 and ``b`` has rank 2 or
        less (Numba types every branch; the rule takes ``matmul``'s): raises if run, so a direct np.tensordot's
        gradient is an error, not a number.  Refused (untyped) for ``b`` of rank above 2."""
        if not (isinstance(a, types.Array) and isinstance(b, types.Array) and b.ndim <= 2
                and isinstance(a.dtype, types.Float) and isinstance(b.dtype, types.Float)):
            return None

        def untaken(g, ans, a, b, axes=2):
            if a.size >= 0:  # always: a test Numba cannot fold, so the line after it is typed (one type per name)
                raise NotImplementedError("astgrad: the Numba backend does not compile np.tensordot's gradient")
            return np.zeros_like(a), np.zeros_like(b)
        return untaken

    @overload(lower.index_array)
    def _index_array(items):
        if isinstance(items, types.List) and isinstance(items.dtype, types.Integer):
            return lambda items: np.array(items, dtype=np.intp)

    @overload(lower.last_of_range)
    def _last_of_range(start, stop, step, count=None):
        if count is None or isinstance(count, (types.NoneType, types.Omitted)):
            return lambda start, stop, step, count=None: start + (len(range(start, stop, step)) - 1) * step

        def first_items(start, stop, step, count=None):
            items = len(range(start, stop, step))
            taken = min(items, count) if count >= 0 else max(items + count, 0)  # range(...)[:count]'s length
            return start + (taken - 1) * step
        return first_items

    @overload(lower.zeros_like_gradient)
    def _zeros_like_gradient(x):
        if isinstance(x, types.Array):
            dtype = x.dtype if isinstance(x.dtype, (types.Float, types.Complex)) else types.float64
            return lambda x: np.zeros(x.shape, dtype)  # type: ignore[call-overload]
        if not isinstance(x, (types.Optional, types.NoneType)):  # a number, or a value no array's: numpy's 0.0
            return lambda x: 0.0
        # None (or "None or an array") may be a name a loop has yet to bind while Numba types it: no answer yet

    @overload(lower.saved_value)
    def _saved_value(value):
        if isinstance(value, types.NoneType):
            return None  # typed again once a loop joins the name's other value ("None or an array", below)
        if not isinstance(value, types.Optional):
            return lambda value: value
        kind = value.type
        names: dict = {}
        if isinstance(kind, types.Array) and kind.layout in "CAF":  # "F": a transpose (t = F.T in a loop)
            names.update(empty=(0,) * kind.ndim, dtype=kind.dtype)  # float64's np.empty is the loops' (loops.py)
            placeholder = ("np.empty(empty)" if kind.dtype == types.float64 else "np.empty(empty, dtype)") \
                + (".T" if kind.layout == "F" else "")
        elif isinstance(kind, (types.Float, types.Integer, types.Boolean, types.Complex)):
            names.update(zero=kind.cast_python_value(0))
            placeholder = "zero"
        elif isinstance(kind, types.BaseTuple) and all(isinstance(k, (types.Float, types.Integer, types.Boolean))
                                                        for k in list(kind)):  # type: ignore[call-overload]
            names.update(zero=tuple(k.cast_python_value(0) for k in list(kind)))  # type: ignore[call-overload]  # slogdet's
            placeholder = "zero"
        else:
            return None
        # the placeholder written inline: a function of its own was one more compiled per kind (0.03-0.05 s each)
        return _implementation("value", f"    if value is None:\n        return {placeholder}\n"
                                        "    return unwrapped(value)\n", unwrapped=unwrapped, **names)

    @numba.extending.intrinsic
    def unwrapped(typingctx, value):
        """The value of an "array or None" as the array (Numba raises TypeError for None, never read here)."""
        if not isinstance(value, types.Optional):
            return None

        def codegen(context, builder, signature, args):  # the argument is borrowed: the result is a new reference
            return impl_ret_borrowed(context, builder, value.type, context.cast(builder, args[0], value, value.type))
        return value.type(value), codegen

    loops.register(overload, types)
    exponential.register(numba, overload, types)

    # structural zeros (transform/runtime/structural.py): an all-False mask where numpy's helper gives None.
    # Written with shaping.chosen's loops: numpy's broadcast_shapes, broadcast_to and where compile for
    # seconds at each new kind of arguments.
    @overload(structural.unselected)
    def _unselected(grad, condition, taken, before=None):
        if not isinstance(grad, types.Array):
            return None
        joined = not isinstance(before, (types.NoneType, types.Omitted)) and before is not None
        rank = condition.ndim if isinstance(condition, types.Array) else 0
        if rank > grad.ndim:  # numpy's helper: None (no mask) where the condition does not broadcast to grad
            fits = "False"
        else:
            lead = grad.ndim - rank
            fits = " and ".join([f"(cond.shape[{k}] == 1 or cond.shape[{k}] == grad.shape[{lead + k}])"
                                 for k in range(rank)]) or "True"
        body = ""
        if not joined and isinstance(condition, types.Array) and isinstance(condition.dtype, types.Boolean) \
                and condition.ndim == grad.ndim and condition.layout == "C":
            # numpy's helper's shortcut: a mask of the operand's shape is the condition (or its negation)
            body = ("    if condition.shape == grad.shape:\n"
                    "        return np.logical_not(condition) if taken else condition\n")
        body += ("    mask = np.zeros(grad.shape, dtype=np.bool_)\n"
                "    cond = np.asarray(condition)\n"
                f"    if {fits}:\n"
                "        mask = chosen(cond, np.logical_not(mask), mask)\n"
                "        if taken:\n"
                "            mask = np.logical_not(mask)\n")
        if joined:
            body += ("    if before.shape == mask.shape:\n"
                     "        return np.logical_or(mask, before)\n")
        return _implementation("grad, condition, taken, before=None", body + "    return mask\n",
                               chosen=shaping.chosen)

    @overload(structural.cleaned)
    def _cleaned(mask, grad):
        if isinstance(mask, types.NoneType):
            return lambda mask, grad: grad
        if isinstance(mask, types.Optional) and isinstance(mask.type, types.Array):  # a mask a loop may not make
            def cleaned_or_not(mask, grad):
                if mask is None:
                    return grad
                return structural.cleaned(lower.saved_value(mask), grad)
            return cleaned_or_not
        if not isinstance(mask, types.Array) or not isinstance(grad, types.Array):
            return None  # numpy zeroes a number's gradient at a mask of its shape too: not written here
        if mask.ndim != grad.ndim:  # shapes that cannot agree: numpy's helper gives the gradient itself
            return lambda mask, grad: grad
        zero = grad.dtype.cast_python_value(0) if isinstance(grad.dtype, (types.Float, types.Complex)) else None

        def cleaned(mask, grad):
            if mask.shape != grad.shape:
                return grad
            return shaping.chosen(mask, zero, grad)
        if zero is not None and str(grad.dtype) in ("float64", "complex128"):
            return cleaned

        def cleaned_by_where(mask, grad):
            if mask.shape != grad.shape:
                return grad
            return np.where(mask, np.zeros((), grad.dtype)[()], grad)
        return cleaned_by_where

    @overload(runtime.sequence_gradient, prefer_literal=True)
    def _sequence_gradient(g, items, index):
        """The gradient of a tuple (``np.linalg.slogdet``'s) from one item's: None at the others, as numpy's."""
        at = _literal_value(index, types)
        if not isinstance(items, types.BaseTuple) or type(at) is not int or not -len(items) <= at < len(items):
            return None  # a list's gradient, or an index known only when the code runs: not written here
        at %= len(items)
        parts = ", ".join("g" if i == at else "None" for i in range(len(items)))
        return _lambda(f"lambda g, items, index: ({parts},)")

    @overload(runtime.getitem_gradient)
    def _getitem_gradient(g, items, index):
        """``items[index]``'s gradient where the transform did not know ``items`` an array: for an array, the
        item's gradient put back at its place (``scatter``, which refuses the index kinds it does not write);
        for a list or a tuple, not written here (refused at the user's line)."""
        if isinstance(items, types.Array):
            return lambda g, items, index: _extra.scatter(g, items.shape, index)

    _list_overloads(overload, types)

    @overload(runtime.accumulate)
    def _accumulate(total, grad):  # numbers and arrays: the sum (None, lists and dicts are the numpy helper's)
        if isinstance(total, types.NoneType):
            return lambda total, grad: grad
        if isinstance(grad, types.NoneType):
            return lambda total, grad: total
        if all(number(t) or isinstance(t, types.Array) for t in (total, grad)):
            return lambda total, grad: total + grad

    @overload(runtime.is_zero)
    def _is_zero(g):
        if isinstance(g, types.NoneType):
            return lambda g: True
        if isinstance(g, types.Optional):
            return lambda g: g is None
        if isinstance(g, types.List):
            return lambda g: False
        if number(g):
            return lambda g: g == 0.0
        if isinstance(g, types.Array):
            return lambda g: False

    @overload(outputs.not_scalar)
    def _not_scalar(shape, where, parameter=None):
        def refuse(shape, where, parameter=None):
            raise TypeError("grad requires a scalar output")
        return refuse

    @overload(outputs.scalar_output)
    def _scalar_output(value, where):
        if number(value) and not isinstance(value, types.Boolean) or \
                isinstance(value, types.Array) and value.ndim == 0 and isinstance(value.dtype, types.Number):
            return lambda value, where: None

        def refuse(value, where):
            raise TypeError("grad requires a scalar output")
        return refuse

    @overload(runtime.check_seed)
    def _check_seed(seed, out_shape, name):
        rank = seed.ndim if isinstance(seed, types.Array) else 0 if number(seed) else None
        if rank is None:
            return None
        if rank != len(out_shape):
            def refuse(seed, out_shape, name):
                raise ValueError("vjp: the seed does not have the output's shape")
            return refuse

        def check(seed, out_shape, name):
            if np.shape(seed) != out_shape:
                raise ValueError("vjp: the seed does not have the output's shape")
        return check

    _registered = True


def _list_overloads(overload, types) -> None:
    """Lists of arrays as RK4 builds them (``ys.append(y)`` in a loop, ``np.stack(ys)``) and their gradients.

    Compiled, the gradient of such a list is a list of arrays, one per item
    (every item read gets one: the list is made from the rows of
    ``np.stack``'s gradient), and the gradient of a list display of numbers
    read by ``np.array`` (written as a tuple, ``lower``) is the array's own
    gradient, whose rows are the items'.  A list gradient the generated code
    made is changed in place, as the numpy helpers change a ``GradientList``.
    """
    from .shaping import stacked

    @overload(sequences.grow)
    def _grow(items, item):
        if isinstance(items, types.List):
            def grow(items, item):
                items.append(item)
                return items
            return grow

    @overload(sequences._like)
    def _like(g, obj):  # np.array's gradient cut into the tuple it read: the rows of g are the items'
        if isinstance(g, types.Array) and g.ndim >= 1 and isinstance(obj, types.BaseTuple) and all(
                isinstance(t, (types.Number, types.Boolean)) for t in list(obj)):  # type: ignore[call-overload]
            count = len(obj)

            def like(g, obj):
                if g.shape[0] != count:
                    raise ValueError("the gradient does not have the length of the sequence")
                return g
            return like

    @overload(sequences.part)
    def _part(grad, i):
        if isinstance(grad, types.Array) and grad.ndim == 1:
            return lambda grad, i: grad[i]
        if isinstance(grad, types.Optional) and isinstance(grad.type, types.Array) and grad.type.ndim == 1:
            def part(grad, i):
                if grad is None:
                    return 0.0
                return grad[i]
            return part
        if isinstance(grad, types.NoneType):
            return lambda grad, i: 0.0

    def a_list(g):
        return isinstance(g, types.List) or isinstance(g, types.Optional) and isinstance(g.type, types.List)

    @overload(lower.rows)
    def _rows(g):  # list(g); a C-contiguous array's rows as C-contiguous arrays (Numba's list(g) types them "A")
        if isinstance(g, types.Array) and g.ndim >= 2 and g.layout == "C":
            def rows(g):
                out = []
                for k in range(g.shape[0]):
                    out.append(g[k])
                return out
            return rows
        return lambda g: list(g)

    @overload(sequences.split_last)
    def _split_last(g):
        if isinstance(g, types.Array) and g.ndim >= 1:
            return lambda g: (g[:-1], g[-1])
        if a_list(g):
            def split_last(g):
                if g is None:
                    raise ValueError("no gradient reached the list")
                last = g.pop()
                return g, last
            return split_last

    @overload(runtime.add_item)
    def _add_item(total, g, items, index):
        if a_list(total) and isinstance(items, types.List) and isinstance(index, types.Integer):
            def add_item(total, g, items, index):
                if total is None or len(total) != len(items):
                    raise ValueError("the list's gradient does not have the list's length")
                total[index] = total[index] + g
                return total
            return add_item

    @overload(stacked)
    def _stacked(items):
        if isinstance(items, types.List) and isinstance(items.dtype, types.Array):
            rank = items.dtype.ndim
            if rank == 1:  # RK4's states: rows copied by index, which compiles in a fraction of .flat's time
                def stack_rows(items):
                    if len(items) == 0:
                        raise ValueError("need at least one array to stack")
                    first = items[0]
                    size = first.shape[0]
                    out = np.empty((len(items), size), first.dtype)
                    for k in range(len(items)):
                        item = items[k]
                        if item.shape[0] != size:
                            raise ValueError("all input arrays must have the same shape")
                        for j in range(size):
                            out[k, j] = item[j]
                    return out
                return stack_rows

            def stack(items):
                if len(items) == 0:
                    raise ValueError("need at least one array to stack")
                first = items[0]
                out = np.empty((len(items),) + first.shape, first.dtype)
                rows = out.reshape((len(items), first.size))  # each item copied element by element: an
                for k in range(len(items)):  # assignment of arrays compiles Numba's broadcasting and its message
                    if items[k].shape != first.shape:
                        raise ValueError("all input arrays must have the same shape")
                    for j, value in enumerate(items[k].flat):
                        rows[k, j] = value
                return out
            return stack if rank >= 1 else None
        return lambda items: np.stack(items)


def _item_add_overloads(overload, types) -> None:
    """``added_item(total, g, shape, index)`` (lower.py ``_items_added_in_place``): ``total[index] += g``, where
    the lowering proved ``total`` an array of ``shape`` that this function made and nothing else reads.

    What is decided from the types alone: a writeable 1-d float array, a
    number whose dtype does not widen the array's, an integer index (in
    bounds, else numpy's IndexError).  Anything else is ``add_at`` as written.
    """
    from numba.np.numpy_support import as_dtype

    @overload(lower.added_item)
    def _added_item(total, g, shape, index):
        if isinstance(total, types.Array) and total.ndim == 1 and total.mutable \
                and isinstance(total.dtype, (types.Float, types.Complex)) and isinstance(index, types.Integer) \
                and isinstance(g, (types.Float, types.Complex, types.Integer, types.Boolean)) \
                and np.result_type(as_dtype(total.dtype), as_dtype(g)) == as_dtype(total.dtype):
            def added_item(total, g, shape, index):
                size = total.shape[0]
                if index < -size or index >= size:
                    raise IndexError("index out of bounds")
                total[index] += g
                return total
            return added_item
        return lambda total, g, shape, index: runtime.add_at(total, g, shape, index)


def _scattered_rows(dtype):
    """``scatter(g, shape, index)`` for a 1-d array of integers indexing the first axis (``x[[2, 0, 2]]``):
    each of ``g``'s rows added at its position, a position named twice getting both (numpy's ``np.add.at``),
    a negative one counted from the end, one out of bounds raising numpy's IndexError."""
    def scattered_rows(g, shape, index):
        if g.shape[0] != index.shape[0] or g.shape[1:] != shape[1:]:
            raise ValueError("shape mismatch: value array could not be broadcast to indexing result")
        out = np.zeros(shape, dtype)
        size = shape[0]
        for k in range(index.shape[0]):
            i = index[k]
            if i < -size or i >= size:
                raise IndexError("index out of bounds")
            out[i if i >= 0 else i + size] += g[k]
        return out
    return scattered_rows


def _accumulation_overloads(overload, types) -> None:
    """The gradient of indexing added at its index (passes/accumulate.py): ``dx[i] += dt`` as a person writes it.

    ``add_at`` adds into ``total`` itself: the transformer proved that
    ``total`` holds an array the code made and no other name reaches, so
    ``copied`` (which gives a name such an array before a loop) copies here
    as in numpy.  ``added_at`` copies ``total`` once and adds into the copy.
    Both do so only where ``total + scatter(g, shape, index)`` would have
    ``total``'s type (a writeable float array of ``shape``'s rank whose dtype
    ``g`` does not widen) and, at run time, ``shape`` itself; otherwise, and
    for an array index (which may repeat a position), they compute
    ``total + scatter(g, shape, index)`` as written.
    """
    from numba.np.numpy_support import as_dtype

    def keeps_type(total, g, shape) -> bool:
        if not (isinstance(total, types.Array) and total.mutable and total.ndim == len(shape)
                and isinstance(total.dtype, (types.Float, types.Complex))):
            return False
        kind = g.dtype if isinstance(g, types.Array) else g
        if not isinstance(kind, (types.Float, types.Complex, types.Integer, types.Boolean)):
            return False
        return np.result_type(as_dtype(total.dtype), as_dtype(kind)) == as_dtype(total.dtype)

    def adding(total, g, shape, index, copy, proven=False):
        as_written = lambda total, g, shape, index: total + _extra.scatter(g, shape, index)  # noqa: E731
        if not keeps_type(total, g, shape) or not _basic(index, types):
            return as_written
        add = _assignment(total.ndim, index, g, types, "out", "g", "+=")
        if add is None:
            return as_written
        start = "out = total.copy()" if copy else "out = total"
        other = f"raise ValueError({loops._UNPROVEN!r})" if proven else "return total + scatter(g, shape, index)"
        body = f"if total.shape != shape:\n        {other}\n    {start}\n{add}    return out"
        return _checked(index, types, "total", body, "total, g, shape, index", scatter=_extra.scatter)

    overload(runtime.add_at)(lambda total, g, shape, index: adding(total, g, shape, index, False))
    overload(runtime.added_at)(lambda total, g, shape, index: adding(total, g, shape, index, True))
    overload(loops.add_at_proven)(lambda total, g, shape, index: adding(total, g, shape, index, False, True))

    @overload(runtime.copied)
    def _copied(value):
        if isinstance(value, types.Array):
            return lambda value: value.copy()
        return lambda value: value


def _basic(index, types) -> bool:
    """Whether Numba typed ``index`` as an integer, a slice or a tuple of them: it names each element once."""
    basic = (types.Integer, types.SliceType)
    return isinstance(index, basic) or isinstance(index, types.BaseTuple) and all(isinstance(i, basic) for i in index)


def _write_overloads(overload, types) -> None:
    """``a[index] = value`` as the generated code writes it (``setitem``, a copy) and the gradients it passes back.

    Written for an index of integers and slices only: an array index may
    name one element twice, where numpy keeps the last write (``written``
    gives the earlier ones no gradient); Numba refuses the others at the
    user's line.  The target is a float (or complex) array, the value of a
    kind numpy writes without losing part of it: an integer target truncates
    the value (the numpy rule's ``through_cast``), a complex value written
    into a float array drops its imaginary part, and both are left to numpy.
    """
    def fits(a, value) -> bool:
        if not isinstance(a, types.Array) or not isinstance(a.dtype, (types.Float, types.Complex)):
            return False
        kind = value.dtype if isinstance(value, types.Array) else value
        allowed = (types.Float, types.Integer, types.Boolean) + ((types.Complex,) if isinstance(a.dtype, types.Complex)
                                                                  else ())
        return isinstance(kind, allowed)

    def mask_of(a, index) -> bool:  # a boolean array of a's rank: names each element at most once
        return isinstance(a, types.Array) and isinstance(index, types.Array) \
            and isinstance(index.dtype, types.Boolean) and index.ndim == a.ndim

    @overload(_extra.setitem)
    def _setitem(a, index, value):
        if mask_of(a, index) and fits(a, value) and not isinstance(value, types.Array):
            def masked(a, index, value):
                if index.shape != a.shape:
                    raise IndexError("boolean index did not match indexed array")
                out = a.copy()
                flat, chosen = out.reshape(-1), np.ascontiguousarray(index).reshape(-1)
                for i in range(flat.size):
                    if chosen[i]:
                        flat[i] = value
                return out
            return masked
        if not (_basic(index, types) and fits(a, value)):
            return None
        assign = _assignment(a.ndim, index, value, types, "out", "value")
        if assign is None:
            return None
        return _checked(index, types, "a", f"out = a.copy()\n{assign}    return out", "a, index, value")

    @overload(runtime.setitem_into)
    def _setitem_into(a, index, value):
        """Written into ``a`` itself (the transformer proved no other name reaches it) where Numba typed it
        writeable (a read-only argument or a broadcast is typed read-only) and, at run time, the value is no
        view reaching ``a``'s memory (the loop below would read an element it had written); else ``setitem``'s
        copy, as numpy's ``setitem_into`` does for an array it may not write."""
        written = lambda a, index, value: _extra.setitem(a, index, value)  # noqa: E731
        if not (isinstance(a, types.Array) and a.mutable and _basic(index, types) and fits(a, value)):
            return written
        assign = _assignment(a.ndim, index, value, types, "out", "value")
        if assign is None:
            return written
        check = ""
        if isinstance(value, types.Array):
            check = ("if a.size > 0 and value.size > 0 and low_a < high_value and low_value < high_a:\n"
                     "        return setitem(a, index, value)\n    ")
            check = _spans("a", a.ndim) + _spans("value", value.ndim) + check
        return _checked(index, types, "a", f"{check}out = a\n{assign}    return out", "a, index, value",
                        setitem=_extra.setitem)

    @overload(_extra.through_cast)
    def _through_cast(g, into):  # into a float or complex target the value's gradient passes as it is
        kind = into.dtype if isinstance(into, types.Array) else into
        if isinstance(kind, (types.Float, types.Complex)):
            return lambda g, into: g
        return None  # an integer or boolean target cuts it: left to numpy, refused at the user's line

    @overload(_extra.written)
    def _written(g, index):
        if mask_of(g, index):  # the elements the mask chose, in numpy's order
            def chosen(g, index):
                if index.shape != g.shape:
                    raise IndexError("boolean index did not match indexed array")
                return np.ascontiguousarray(g).reshape(-1)[np.ascontiguousarray(index).reshape(-1)]
            return chosen
        if isinstance(g, types.Array) and _basic(index, types):  # each element written once: g's part
            return _checked(index, types, "g", "return g[index]", "g, index")

    @overload(structural.written)
    def _written_mask(grad, index, before=None):
        if mask_of(grad, index):
            def by_mask(grad, index, before=None):
                if index.shape != grad.shape:
                    raise IndexError("boolean index did not match indexed array")
                return index.copy()
            if not (isinstance(before, types.Array) and before.ndim == grad.ndim):
                return by_mask

            def by_mask_joined(grad, index, before=None):
                mask = by_mask(grad, index)
                return np.logical_or(mask, before) if before.shape == mask.shape else mask
            return by_mask_joined
        if not (isinstance(grad, types.Array) and _basic(index, types)):
            return None
        body = "mask = np.zeros(grad.shape, dtype=np.bool_)\n    mask[index] = True\n"
        if isinstance(before, types.Array) and before.ndim == grad.ndim:
            body += "    if before.shape == mask.shape:\n        return np.logical_or(mask, before)\n"
        return _checked(index, types, "grad", body + "    return mask", "grad, index, before=None")


def _spans(name, rank) -> str:
    """Lines (the first unindented, the rest indented once) binding ``low_<name>`` and ``high_<name>``, the
    first byte ``name`` reads and one past its last, whatever the signs of its strides."""
    lines = [f"low_{name} = np.intp({name}.ctypes.data)", f"high_{name} = low_{name} + {name}.itemsize"]
    for axis in range(rank):
        lines += [f"extent = ({name}.shape[{axis}] - 1) * {name}.strides[{axis}]",
                  f"if extent < 0:\n        low_{name} += extent\n    else:\n        high_{name} += extent"]
    return "\n    ".join(lines) + "\n    "


def _checked(index, types, array, body, parameters, **names):
    """A function of ``parameters`` that raises IndexError where an integer of ``index`` is past ``array``'s end
    (numpy's check: compiled code in a helper is not bounds-checked), then runs ``body`` (which may read
    ``names``)."""
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    checks = ""
    for axis, part in enumerate(parts):
        if isinstance(part, types.Integer):
            at = "index" if not isinstance(index, types.BaseTuple) else f"index[{axis}]"
            checks += (f"    if {axis} >= {array}.ndim or {at} < -{array}.shape[{axis}] or {at} >= {array}.shape[{axis}]:"
                       f"\n        raise IndexError('index out of bounds')\n")
    return _implementation(parameters, f"{checks}    {body}\n", **names)


def _implementation(parameters, body, **names):
    """``def implementation(<parameters>):`` with ``body`` (indented), numpy as ``np`` and ``names``."""
    text = f"def implementation({parameters}):\n{body}"
    namespace = {"np": np, "__name__": __name__, **names}
    exec(compile(text, "<astgrad numba helper>", "exec"), namespace)
    return namespace["implementation"]


def _assignment(rank, index, value, types, target, source, op="="):
    """The lines (indented once) of ``<target>[index] <op> <source>`` as loops over the part written, or None.

    Numba's own assignment of an array into a slice compiles, for its error
    message, a formatter of shapes that takes longer than the rest of a
    small gradient (a second or more at each new rank): written as loops it
    compiles in a fraction of that.  The loops broadcast the value to the
    part written and raise where it does not broadcast, as numpy's
    assignment does; a value of higher rank than the part (numpy drops its leading 1s)
    is left to numpy, refused at the user's line.
    """
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    kept = rank - sum(isinstance(p, types.Integer) for p in parts) + sum(isinstance(p, types.NoneType) for p in parts)
    array = isinstance(value, types.Array)
    if array and value.ndim > kept:
        return None
    if kept == 0:
        return f"    {target}[index] {op} {source}{'[()]' if array else ''}\n"
    at = ", ".join(f"i{axis}" for axis in range(kept))
    lines = [f"    part = {target}[index]"]
    if not array:
        return "\n".join(lines + _nested(kept, "    ", f"part[{at}] {op} {source}")) + "\n"
    # numpy's broadcasting of the value to the part, written out: each axis of the value (the part's last
    # ones) of the part's length or 1, read at index 0 where it is 1 (np.broadcast_to compiled Numba's own,
    # 0.1 s of a first call); the same loop reading each element where every length is the part's
    offset = kept - value.ndim
    lines.append("    same = True")
    for axis in range(value.ndim):
        lines += [f"    if {source}.shape[{axis}] != part.shape[{axis + offset}]:",
                  f"        if {source}.shape[{axis}] != 1:",
                  "            raise ValueError('could not broadcast the value to the part written')",
                  "        same = False"]
    read = ", ".join(f"i{axis + offset}" for axis in range(value.ndim))
    spread = ", ".join(f"0 if {source}.shape[{axis}] == 1 else i{axis + offset}" for axis in range(value.ndim))
    lines.append("    if same:")
    lines += _nested(kept, "        ", f"part[{at}] {op} {source}[{read}]" if value.ndim else f"part[{at}] {op} {source}[()]")
    lines.append("    else:")
    lines += _nested(kept, "        ", f"part[{at}] {op} {source}[{spread}]" if value.ndim else f"part[{at}] {op} {source}[()]")
    return "\n".join(lines) + "\n"


def _nested(rank, indent, statement) -> list:
    """``statement`` inside loops over the axes of ``part``, ``i0`` outermost."""
    lines = [indent + "    " * axis + f"for i{axis} in range(part.shape[{axis}]):" for axis in range(rank)]
    return lines + [indent + "    " * rank + statement]


def _unbroadcast_overloads(overload, types, number):
    """``rules.unbroadcast`` and the runtime's fast variant: ``g`` summed (or spread) to the shape ``to``.

    A gradient of its value's rank nearly always has its value's shape; where
    it does not, the sum over the axes where the value has a 1 is numpy's, run
    in object mode.  Compiled as loops, that sum took a quarter to a third of
    a second of each first compile, per rank, for code that seldom runs;
    ``objmode`` compiles in a third of that.
    """
    from numba import objmode

    def implementation(g, to):
        rank = len(to)
        if number(g):
            if rank == 0:
                return lambda g, to: g
            if isinstance(g, (types.Integer, types.Boolean)):
                return lambda g, to: np.full(to, float(g))
            return lambda g, to: np.full(to, g)
        if not isinstance(g, types.Array):
            return None
        if rank == 0:
            return lambda g, to: g.sum()
        if g.ndim < rank:  # a lower-rank gradient lines up with the last axes, and is spread over the others
            lead = rank - g.ndim

            def spread(g, to):
                return np.broadcast_to(_reduce_to(g, to[lead:]), to).copy()
            return spread
        if g.ndim == rank:  # the shape it has, or (seldom) 1s where g has more: that sum run by numpy
            def same_rank(g, to):
                if g.shape == to:
                    return g
                return _summed_in_numpy(g, to)
            return same_rank
        return lambda g, to: _reduce_to(g, to)

    @overload(_summed_in_numpy)
    def in_numpy(g, to):  # a function of its own: code holding object mode is never kept on disk, its callers are
        if isinstance(g, types.Array) and g.ndim == len(to):
            summed = types.Array(g.dtype, g.ndim, "C")

            def summed_in_numpy(g, to):
                with objmode(out=summed):
                    out = _summed_to(g, to)
                return out
            return summed_in_numpy

    overload(runtime.unbroadcast)(implementation)
    overload(_support.unbroadcast)(implementation)

    @overload(runtime.summed)
    def summed(g):  # unbroadcast(g, ()): a number as it is, an array's entries added up
        if number(g):
            return lambda g: g
        if isinstance(g, types.Array):
            return lambda g: g.sum()
        return None

    if rules.unbroadcast is not _support.unbroadcast:
        overload(rules.unbroadcast)(implementation)


def _literal_value(t, types):
    """The value of an argument Numba typed as a literal (or omitted, or None), else a marker that matches nothing."""
    if isinstance(t, types.Omitted):
        return t.value
    if isinstance(t, types.NoneType) or t is None:
        return None
    if isinstance(t, types.Literal):
        return t.literal_value
    return _UNKNOWN


_UNKNOWN = object()


def _literal_axes(axis, rank, types):
    """The axes (non-negative) an ``axis`` argument names: all for None; None when not known at compile time."""
    if isinstance(axis, types.BaseTuple):
        values = [_literal_value(a, types) for a in axis]
    else:
        value = _literal_value(axis, types)
        if value is None:
            return set(range(rank))
        values = [value]
    if not all(type(v) is int and -rank <= v < rank for v in values):
        return None
    return {v % rank for v in values}


def _lambda(text):
    """A small implementation written for one rank and axis (Numba compiles it per call site's types)."""
    return eval(compile(text, "<astgrad numba helper>", "eval"),
                {"broadcast_to": np.broadcast_to, "ascontiguousarray": np.ascontiguousarray, "__name__": __name__})


def _summed_in_numpy(g, to):
    """``_summed_to(g, to)`` called in object mode from compiled code (``same_rank``; compiled code only)."""
    raise NotImplementedError("compiled code only")


def _summed_to(g, to):
    """``g`` summed over the axes where the shape ``to`` (of ``g``'s rank) has a 1, those kept as 1s: the check
    and the sum of ``_reducing``'s loops, run by numpy in object mode (``same_rank`` above)."""
    if any(want != 1 and want != have for have, want in zip(g.shape, to)):
        raise ValueError("unbroadcast: the gradient's shape does not broadcast to the argument's")
    axes = tuple(axis for axis, want in enumerate(to) if want == 1)
    return np.ascontiguousarray(np.add.reduce(g, axis=axes, keepdims=True), dtype=g.dtype)


def _reduce_to(g, to):
    """``g`` (of rank at least ``len(to)``) summed over the axes broadcasting added or stretched from 1.

    Called only from compiled code, where it is ``_reducing``'s loops (an overload, not a Numba function
    held in a global: compiled code that holds one cannot be cached, see diskcache).
    """
    raise NotImplementedError("compiled code only")


def _reducing(rank, kept, dtype):
    """``_reduce_to`` for a ``g`` of ``rank`` axes (of Numba's ``dtype``) and a shape of ``kept``: nested loops adding each element
    of ``g`` where it came from (index 0 along an axis of length 1 in the shape), after numpy's check that
    ``g``'s shape broadcasts from it.  Written per pair of ranks: a loop nest compiles in a fraction of the
    time of one function for every rank (which cost a second or more of each first compile).
    """
    extra = rank - kept
    lines = ["def reduce_to(g, to):"]
    for axis in range(kept):
        lines += [f"    if to[{axis}] != 1 and to[{axis}] != g.shape[{axis + extra}]:",
                  "        raise ValueError(\"unbroadcast: the gradient's shape does not broadcast to the argument's\")",
                  f"    s{axis} = 1 if to[{axis}] != 1 else 0"]
    lines.append("    out = np.zeros(to, dtype)")  # written as zeros_like_gradient's: one compile of np.zeros
    for axis in range(rank):
        lines.append("    " * (axis + 1) + f"for i{axis} in range(g.shape[{axis}]):")
    at = ", ".join(f"i{axis + extra} * s{axis}" for axis in range(kept)) or "()"
    lines.append("    " * (rank + 1) + f"out[{at}] += g[{', '.join(f'i{axis}' for axis in range(rank)) or '()'}]")
    return _implementation("g, to", "\n".join(lines[1:]) + "\n    return out\n", dtype=dtype)
