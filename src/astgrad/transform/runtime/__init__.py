"""Helpers the generated code calls.

Only what cannot be written inline: accumulating gradients of sequences
and splitting a rule's return value into per-argument gradients when the
rule does not return a literal tuple.  The primitives the transformer
introduces (``append``, ``as_column``) live with their rules in ``rules``.

Long: every helper generated code may call sits in one namespace on purpose
(the generated module imports it whole); the run-time checks already moved out
to runtime/checks.py.
"""

from __future__ import annotations

import math

import numpy as np

from ...values import trees as _trees
from ... import rules
from ...rules import linalg
from ...rules.joining import as_column
from ...rules.sequences import GradientDict, GradientList, append, grow, part, split_last
from ...rules._extra import may_repeat
from ...rules._support import SMALL, filled
from ...rules._lazy import chunked_shape, is_lazy, rows as lazy_rows

__all__ = ["append", "grow", "split_last", "add_item", "is_zero", "as_column", "accumulate", "part",
           "sequence_gradient", "replaced_gradient",
           "replacing_gradient", "unpacked_gradient", "gradient_tuple", "no_gradient",
           "shape", "size", "ndim", "unbroadcast", "T", "only_shape",
           "add_into", "subtract_into", "multiply_into", "divide_into", "broadcast_shape", "reduced_shape", "floats", "stand_in", "checked",
           "check_seed", "check_seeds", "matmul_shape",
           "added_at", "add_at", "number_items", "number_scalars",
           "copied", "pop_numbers", "shifted", "linear_recurrence", "set_item_gradients", "put"]


def is_zero(g) -> bool:
    """Whether ``g`` is the number zero (or a list's None) standing for a gradient of unknown shape.

    Where control flow joins a path without a gradient for a name, the
    adjoint writes ``0.0`` (the shape is not known there); a rule that
    indexes or reshapes its gradient skips its work for that number, every
    contribution it would make being zero.
    """
    return g is None or isinstance(g, float) and g == 0.0 or type(g) is tuple and all(part is None for part in g)


def accumulate(total, grad):
    """``total + grad`` for gradients that may be sequences or missing (None)."""
    if total is None:
        return grad
    if grad is None:
        return total
    if isinstance(total, dict) or isinstance(grad, dict):  # a dict's gradient: the keys that got one
        if not isinstance(total, dict):
            return _dict_gradient(grad, total)
        if not isinstance(grad, dict):
            return _dict_gradient(total, grad)
        out = GradientDict(total)
        for key, value in grad.items():
            out[key] = accumulate(out[key], value) if key in out else value
        return out
    if isinstance(total, (list, tuple)) or isinstance(grad, (list, tuple)):
        count = len(total) if isinstance(total, (list, tuple)) else len(grad)
        kind = type(total) if isinstance(total, (list, tuple)) else type(grad)
        return kind(accumulate(a, b) for a, b in zip(_items(total, count), _items(grad, count)))
    return total + grad


def _dict_gradient(grad, other):
    """A dict's gradient plus ``other``, which must be the 0.0 a join writes for no gradient yet."""
    if not is_zero(other):
        raise TypeError(f"astgrad: a dict's gradient cannot be added to {type(other).__name__} {other!r}")
    return grad


def _items(grad, count):
    """A list's gradient item by item: an array gradient (``np.sum(items)`` read the list as one) by rows."""
    if isinstance(grad, (list, tuple)):
        return grad
    if (type(grad) is np.ndarray or is_lazy(grad)) and grad.ndim:
        return list(grad)
    return [None] * count


def sequence_gradient(g, items, index):
    """The gradient of ``items`` (a list, tuple or dict) from ``g`` flowing into ``items[index]``.

    A dict's gradient holds the keys read; the others are zero (``None``) and
    filled in when the gradient is returned.
    """
    if isinstance(items, dict):
        return GradientDict({index: g})
    if _trees.is_object(items):  # a dataclass or registered class: its gradient is by its children
        not_by_position(items, "[...]")
    out = GradientList([None] * len(items))  # a list, a tuple, or an array unpacked by rows (a Dask array's too)
    if isinstance(index, slice):
        for position, value in zip(range(*index.indices(len(items))), g):
            out[position] = value
    else:
        out[index] = g
    return out


def not_by_position(obj, how):
    raise TypeError(f"astgrad: {how} on a {type(obj).__qualname__}, whose gradient is kept by its children "
                    f"(dataclass fields, or what its registered flatten returns), not by what indexing or iterating "
                    f"it gives; read its parts as attributes (obj.w) instead")


def add_item(total, g, items, index):
    """``accumulate(total, sequence_gradient(g, items, index))``, in place where that is safe.

    ``total`` is the gradient of the list ``items`` so far.  When the
    generated code made it (a ``GradientList`` of the list's length), ``g``
    is added to its item: reading ``items[t]`` in a loop of n steps costs n,
    not n copies of the list.  Anything else is copied once, as before.
    """
    if type(total) is GradientList and type(items) is list and len(total) == len(items) \
            and not isinstance(index, slice):
        total[index] = accumulate(total[index], g)
        return total
    if type(total) is GradientDict and isinstance(items, dict):
        total[index] = accumulate(total.get(index), g)
        return total
    out = accumulate(total, sequence_gradient(g, items, index))
    return GradientList(out) if type(out) is list else out


def keys_of(d):
    """``list(d)``: the keys a ``for k, v in d.items()`` loop goes over, read once before it (they carry no
    gradient; a helper of its own, so a second derivative of the generated code reads it as such)."""
    return list(d)


def put(items, index, value):
    """``items[index] = value`` as the generated code runs it: a dict in place (its adjoint asks a dict only
    what it is, never for its old values), anything else copied (``rules.setitem``)."""
    if type(items) is dict:
        items[index] = value
        return items
    return rules.setitem(items, index, value)


def replaced_gradient(g, index):
    """The gradient of a list or dict before ``items[index] = value``: ``g`` without what flowed into ``value``."""
    if g is None:
        return None
    if isinstance(g, dict):  # the keys that got a gradient; the generated code's own in place
        kept = g if type(g) is GradientDict else GradientDict(g)
        kept.pop(index, None)
        return kept
    if type(g) is np.ndarray or is_lazy(g):  # numpy read the list as one array: rows
        rows = g.copy()
        rows[index] = 0.0
        return rows
    out = list(g)
    if isinstance(index, slice):
        for position in range(*index.indices(len(out))):
            out[position] = None
    else:
        out[index] = None
    return out


def replacing_gradient(g, index):
    """The gradient of ``value`` in ``items[index] = value`` (``items`` a list or dict): what flowed into that item."""
    if isinstance(index, slice):
        if g is None:
            return None
        return g[index] if type(g) is np.ndarray or is_lazy(g) else list(g[index])
    return part(g, index)


def set_item_gradients(g, items, index, value):
    """The gradients of ``items`` and ``value`` in ``items[index] = value``, ``items`` a list, dict or array."""
    if is_zero(g):
        return g, 0.0
    if type(items) is list or type(items) is dict:
        value_gradient = replacing_gradient(g, index)  # first: replaced_gradient may change g
        return replaced_gradient(g, index), value_gradient
    return rules.setitem(g, index, 0), unbroadcast(rules.through_cast(rules.written(g, index), items), shape(value))


def getitem_gradient(g, items, index):
    """The gradient of ``items[index]`` for a value that may be an array or a sequence."""
    if isinstance(items, (list, tuple, dict)):
        return sequence_gradient(g, items, index)
    if _trees.is_object(items):
        not_by_position(items, "[...]")
    return rules.scatter(g, shape(items), index)


def unpacked_gradient(parts, value):
    """The gradient of ``value`` from those of the names it was unpacked into (``a, b = value``).

    An array gets an array (rows without a gradient are zero); a tuple or
    list gets a tuple that keeps ``None`` for parts without one.
    """
    if isinstance(value, dict):  # a, b = d unpacks the keys, which carry no gradient
        return None
    if _trees.is_object(value):
        not_by_position(value, "unpacking")
    if is_lazy(value):
        return lazy_rows(parts, shape(value))
    if not isinstance(value, np.ndarray):  # the 0.0 a join wrote is no gradient: None, which rules test for
        return tuple(None if is_zero(g) else g for g in parts)
    grad = np.zeros(np.shape(value))
    for i, g in enumerate(parts):
        if g is not None:
            grad[i] = g
    return grad


def gradient_tuple(value, count, needed=(), rule="a rule"):
    """A rule's return value as one gradient per positional argument, as the tape reads it.

    A tuple is one gradient per parameter: entries past the call's
    arguments are cut off (``np.select(c, v)`` has no ``default``), missing
    ones are ``None``.  Anything else (an array, a list for a sequence
    argument) is the first argument's gradient.  A ``None`` where an
    argument in ``needed`` takes a gradient is an error, never a zero.
    """
    if isinstance(value, tuple):
        grads = tuple(value[:count]) + (None,) * (count - len(value))
    else:
        grads = (value,) + (None,) * (count - 1)
    for i in needed:
        if grads[i] is None:
            no_gradient(rule, i, f" (it returned {type(value).__name__} {_brief(value)})")
    return grads


def no_gradient(rule, index, returned=""):
    """Raise: the rule for ``rule`` gives argument ``index``, which is differentiated, no gradient."""
    raise RuntimeError(f"the rule for {rule} returned no gradient for argument {index}, which requires grad"
                       f"{returned}; return one gradient per positional argument, as a tuple")


def _brief(value):
    if isinstance(value, tuple):
        return f"of length {len(value)}"
    return f"of shape {np.shape(value)}" if value is not None else ""


def zeros_for(value):
    """A zero gradient shaped like ``value``."""
    if isinstance(value, (list, tuple)):
        return type(value)(zeros_for(v) for v in value)
    if isinstance(value, float):
        return 0.0
    return np.zeros(np.shape(value))


# -- fast equivalents of numpy and rule helpers ------------------------------
# The same values as ``np.shape``, ``np.size``, ``rules.unbroadcast`` and ``linalg.T``,
# without numpy's conversion of Python numbers or its dispatch: on a number
# or a small array the call is most of the cost of the statement.

def shape(value):
    """``np.shape(value)``: ``()`` for a Python number, ``.shape`` for an array."""
    kind = type(value)
    if kind is np.ndarray or kind is np.float64 or kind is Shaped:
        return value.shape
    if kind is float or kind is int:
        return ()
    if isinstance(value, dict):  # np.shape gives (), as for a number: a vjp seed 1.0 would pass for one
        raise TypeError("astgrad: a dict stands where an array is read (numpy would see one object, not its "
                        "values), or a vjp's function returns one: pass or return its arrays, as a tuple or list")
    if is_lazy(value):
        return chunked_shape(value)
    if kind is tuple or kind is list:
        try:
            return ItemsShape(np.shape(value))
        except ValueError:  # parts numpy cannot stack: a vjp's output (v * 2, np.sum(v)) and its seed
            return Parts(shape(part) for part in value)
    return np.shape(value)


class ItemsShape(tuple):
    """``np.shape`` of a tuple or list, equal to the shape of the array numpy would make of it, and marked as a
    sequence's: a vjp tells a list seed given for an array output from one for a list output (``check_seed``)."""


class Parts(ItemsShape):
    """The shapes of a tuple's or list's parts, where numpy cannot stack them into one array.

    A vjp compares its seed's with its output's (``check_seed``); anything that
    reads it as one array's shape fails, as numpy would have.
    """


def size(value):
    """``np.size(value)``: the number of elements."""
    kind = type(value)
    if kind is np.ndarray:
        return value.size
    if kind is Shaped or is_lazy(value):  # np.size would compute a Dask array
        return math.prod(value.shape)
    return np.size(value)


def ndim(value):
    """``np.ndim(value)``: the number of axes."""
    kind = type(value)
    if kind is np.ndarray or kind is Shaped:
        return len(value.shape)
    if kind is float or kind is int:
        return 0
    return np.ndim(value)


def unbroadcast(g, to):
    """``rules.unbroadcast(g, to)``, returning ``g`` at once when it already has the shape ``to``.

    An array that broadcasting only gave leading axes (a bias: (32, 64) to
    (64,)) is summed over them by ``np.add.reduce``, what ``np.sum`` calls
    after its Python-level dispatch.
    """
    if type(g) is np.ndarray:
        have = g.shape
        if have == to:
            return g
        extra = len(have) - len(to)
        if extra > 0 and have[extra:] == to:
            return np.add.reduce(g, axis=tuple(range(extra)))
    elif shape(g) == to:
        return g
    return rules.unbroadcast(g, to)


def summed(g):
    """``unbroadcast(g, shape(x))`` for an ``x`` of shape ``()`` (passes/number_unbroadcasts.py): every entry of
    an array ``g`` added up, as ``unbroadcast`` adds them; anything else as ``unbroadcast(g, ())`` gives it."""
    if type(g) is np.ndarray and g.shape:
        return np.add.reduce(g, axis=None)
    return unbroadcast(g, ())


def T(x):
    """``linalg.T(x)``, the transpose of the last two axes: ``x.T`` for a matrix."""
    if type(x) is np.ndarray and x.ndim == 2:
        return x.T
    return linalg.T(x)


FASTER: dict = {rules.unbroadcast: unbroadcast, linalg.T: T}


class Shaped:
    """What is kept of an array that the adjoint reads only for its shape.

    ``dtype``: the kind of numbers it held (``floats`` and ``stand_in`` read
    it); a value the optimiser leaves uncomputed is one of real floats, or
    booleans for a comparison.
    """

    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype=np.float64):
        self.shape = shape
        self.dtype = np.dtype(dtype)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"Shaped({self.shape})"


#: numpy's real floating scalars that compute as arrays do (a Python float raises ZeroDivisionError)
_FLOAT_SCALARS = (np.float64, np.float32, np.float16)


def floats(*values) -> bool:
    """Whether numpy, computing elementwise with ``values``, can raise nothing but its shape errors.

    True for arrays and numpy scalars of real floats (up to 64 bits, which
    every ufunc the optimiser leaves uncomputed has a loop for) and for
    what stands for one (``Shaped``): on them numpy's arithmetic warns
    instead of raising.  Integers (``k ** -1``), booleans (``a - b``),
    Python numbers (``1.0 / 0.0``), ``None``, lazy arrays: False, and the
    generated code computes the value as written.
    """
    for value in values:
        kind = type(value)
        if kind is np.ndarray or kind is Shaped:
            if value.dtype.kind != "f" or value.dtype.itemsize > 8:
                return False
        elif kind not in _FLOAT_SCALARS:
            return False
    return True


def checked(value) -> None:
    """Nothing: the generated code evaluates ``value`` for what numpy raises (``checked(... if floats(x) else x ** k)``).

    A value nothing reads is dropped, but where it could raise its check
    stays, as a call (the code is itself differentiated by ``grad(grad(f))``).
    """


def stand_in(value):
    """``value``, or for a shape kept instead of a value (``Shaped``) an array of ones of its shape and dtype.

    Where ``floats`` is false the generated code computes a value as written,
    and an operand that was left uncomputed stands in by this array (no
    memory: a broadcast view), so numpy raises on the other operands' dtypes
    and values; the result is read only for its shape.
    """
    if type(value) is Shaped:
        return np.broadcast_to(np.ones((), value.dtype), value.shape)
    return value


def broadcast_shape(*shapes):
    """``np.broadcast_shapes(*shapes)``, at once when they are all equal."""
    first = shapes[0]
    for other in shapes[1:]:
        if other != first:
            return np.broadcast_shapes(*shapes)
    return first


def reduced_shape(shape, axis=None, keepdims=False, identity=None):
    """The shape of a reduction (``np.sum``, ``np.max``, ...) of an array of ``shape`` over ``axis``.

    ``identity``: the name of a reduction without one (``'maximum'``), which
    numpy refuses over an axis of length 0.
    """
    ndim = len(shape)
    if not ndim and not isinstance(axis, (tuple, list)) and axis in (0, -1):
        return ()  # numpy reduces a 0-d array along axis 0 (or -1), not along (0,)
    for a in (axis if isinstance(axis, (tuple, list)) else () if axis is None else (axis,)):
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
    axes = rules.normalize_axis(axis, ndim)
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    if identity is not None and any(shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {identity} which has no identity")
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def check_seed(seed, out_shape, name):
    """Refuse a vjp seed whose shape is not the output's: numpy would broadcast it, silently; and a list or tuple
    seed where the output is an array or a number, which the code would read as a Python list (``[1.0] * -1`` is
    ``[]``)."""
    if type(seed) in (list, tuple) and not isinstance(out_shape, ItemsShape):
        raise TypeError(f"vjp: the seed is a {type(seed).__name__} where {name} returns an array (or a number); "
                        f"pass the seed as an array of the output's shape, np.asarray(seed)")
    seed_shape = shape(seed)
    if seed_shape != out_shape:
        raise ValueError(f"vjp: the seed has shape {seed_shape} but {name}'s output has shape {out_shape}; "
                         f"pass a seed of the output's shape")


def check_seeds(seeds, out_shape, name):
    """``check_seed`` of each seed of ``seeds``, stacked along a first axis (a vjp batched over its seed)."""
    seed_shape = shape(seeds)
    if not seed_shape or seed_shape[1:] != out_shape:
        raise ValueError(f"vjp: the seeds have shape {seed_shape[1:]} but {name}'s output has shape {out_shape}; "
                         f"pass seeds of the output's shape")


def matmul_shape(a, b):
    """The shape of ``x @ y`` for ``x`` of shape ``a`` and ``y`` of shape ``b``; numpy's ValueError where it raises."""
    if not a or not b:
        raise ValueError("matmul: Input operand %d does not have enough dimensions (has 0, gufunc core with "
                         "signature (n?,k),(k,m?)->(n?,m?) requires 1)" % (0 if not a else 1))
    k_a = a[-1]
    k_b = b[-2] if len(b) > 1 else b[0]
    if k_a != k_b:
        raise ValueError("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(n?,k),(k,m?)->(n?,m?) (size {k_b} is different from {k_a})")
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return batch + a[-2:-1] + b[-1:] if len(b) > 1 else batch + a[-2:-1]


#: the ufunc numpy runs for each augmented assignment ``x op= v`` on an array
_IN_PLACE = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "//": np.floor_divide,
             "%": np.remainder, "**": np.power, "@": np.matmul, "|": np.bitwise_or, "&": np.bitwise_and,
             "^": np.bitwise_xor, "<<": np.left_shift, ">>": np.right_shift}


def array_kind(x):
    """``(shape, dtype)`` of an array ``x`` (what ``x op= v`` must keep), None for anything else (a number is rebound)."""
    return (x.shape, x.dtype) if type(x) is np.ndarray else None


def in_place(new, kind, op):
    """``x`` after ``x op= v``, given ``new = x op v`` and ``kind = array_kind(x)`` read before.

    numpy writes the result into an array ``x``, so it keeps ``x``'s shape
    and dtype: numpy computes ``new`` in the same loop and casts it into
    ``x`` by the rule ``same_kind``, so ``float32 += float64`` is
    ``new.astype(float32)``, and a result that is not ``same_kind``
    (``int_array += 0.5``) or would grow ``x`` raises numpy's error.
    Anything else (a number, a list) is rebound to ``new``, as Python does.
    """
    if kind is None or type(new) is np.ndarray and new.shape == kind[0] and new.dtype == kind[1]:
        return new
    shape, dtype = kind
    if np.shape(new) != shape:
        raise ValueError(f"non-broadcastable output operand with shape {_numpy_shape(shape)} doesn't match the "
                         f"broadcast shape {_numpy_shape(np.shape(new))}")
    if not np.can_cast(np.result_type(new), dtype, "same_kind"):
        raise TypeError(f"Cannot cast ufunc '{_IN_PLACE[op].__name__}' output from {np.result_type(new)!r} to "
                        f"{dtype!r} with casting rule 'same_kind'")
    return np.asarray(new).astype(dtype)


def _numpy_shape(shape) -> str:
    """``(2,3)``: a shape as numpy's messages print it."""
    return f"({','.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def cast_into(value, x, casting):
    """``value``, to be written into ``x`` by ``out=x`` or ``np.copyto(x, value)``: numpy casts it by the rule
    ``casting`` (``same_kind`` unless told), so a float into an integer array raises, never truncates."""
    if type(x) is np.ndarray and not np.can_cast(np.result_type(value), x.dtype, casting):
        raise TypeError(f"Cannot cast array data from {np.result_type(value)!r} to {x.dtype!r} according to "
                        f"the rule {casting!r} (numpy's out= and np.copyto write into {x.dtype} this way)")
    return value


class Overwritten:
    """What ``a[index] = value`` overwrote in a numpy array: the index and a copy of the old values there."""

    __slots__ = ("index", "values")

    def __init__(self, index, values):
        self.index = index
        self.values = values


def overwritten(a, index):
    """Saved before ``a[index] = value`` for ``restored``: the values at ``index`` (copied), or ``a`` itself
    when it is not a numpy array (a list, a Dask array: those are saved whole)."""
    if type(a) is not np.ndarray:
        return a
    if type(index) is list:  # a list the function may grow in place afterwards
        index = list(index)
    return Overwritten(index, np.array(a[index], copy=True))


def restored(current, saved):
    """The value before the write ``saved`` records: a copy of ``current`` (the array after the write)
    with the overwritten values put back; ``saved`` itself when it is the whole value."""
    if type(saved) is not Overwritten:
        return saved
    if type(current) is not np.ndarray:  # cannot happen if the sweeps restore in order: never guess
        raise RuntimeError(f"astgrad internal error: restoring a write into a {type(current).__name__}")
    out = np.array(current, copy=True)
    out[saved.index] = saved.values
    return out


def number_items(g, count):
    """``_like(g, items)`` for a list of ``count`` numbers (passes/number_items.py): ``np.reshape(g[i], ())`` of
    each, which is ``g[i].reshape(())`` (the method ``np.reshape`` calls) for an array ``g``."""
    if type(g) is np.ndarray:
        return [g[i].reshape(()) for i in range(count)]
    return [np.reshape(g[i], ()) for i in range(count)]


def number_scalars(g, count):
    """``number_items(g, count)`` as numpy numbers, not 0-d arrays (the same values; arithmetic on a number skips
    the array machinery): read only where no ``is_zero`` test can see the difference (passes/number_items.py)."""
    if type(g) is np.ndarray and g.ndim == 1:
        return [g[i] for i in range(count)]
    return number_items(g, count)


def only_shape(value):
    """``value``'s shape, for ``shape()`` to read back, instead of the array (numbers are kept)."""
    if type(value) is np.ndarray:
        return Shaped(value.shape, value.dtype)
    return value


# -- results written into an operand that is not read again -------------------
# The generated code calls these only where the transformer proved that
# ``buffer`` is an array it made itself, that no other name refers to it and
# that nothing reads it afterwards (``transform.inplace``).  What is left to
# check at run time is whether the result fits: the operator's own result
# has ``buffer``'s shape and dtype.  Otherwise the operator runs as written.
# Below ``SMALL`` elements (rules._support) a new array costs less than the
# checks and ``out=``.

def add_into(buffer, other):
    """``buffer + other``, written into ``buffer`` when the result has its shape and dtype."""
    if type(buffer) is np.ndarray and buffer.size > SMALL and _fits(buffer, other):
        return np.add(buffer, other, out=buffer)
    return buffer + other


def subtract_into(buffer, other):
    """``buffer - other``, written into ``buffer`` when the result has its shape and dtype."""
    if type(buffer) is np.ndarray and buffer.size > SMALL and _fits(buffer, other):
        return np.subtract(buffer, other, out=buffer)
    return buffer - other


def multiply_into(buffer, other):
    """``buffer * other``, written into ``buffer`` when the result has its shape and dtype."""
    if type(buffer) is np.ndarray and buffer.size > SMALL and _fits(buffer, other):
        return np.multiply(buffer, other, out=buffer)
    return buffer * other


def divide_into(buffer, other):
    """``buffer / other``, written into ``buffer`` when the result has its shape and dtype."""
    if type(buffer) is np.ndarray and buffer.size > SMALL and _fits(buffer, other):
        return np.true_divide(buffer, other, out=buffer)
    return buffer / other


def _fits(buffer, other) -> bool:
    """Whether ``buffer (op) other`` has ``buffer``'s shape and (floating) dtype and may overwrite it.

    A 0-d array is left alone: the operator gives a numpy scalar there, not an array.
    """
    dtype = buffer.dtype
    if not buffer.ndim or dtype.kind not in "fc" or not buffer.flags.writeable:
        return False
    kind = type(other)
    if kind is float or kind is int:
        return True  # a Python number takes the array's dtype
    if kind is not np.ndarray:
        return isinstance(other, np.generic) and np.result_type(buffer, other) == dtype
    if other.dtype != dtype and np.result_type(dtype, other.dtype) != dtype:
        return False
    have, want = other.shape, buffer.shape
    if have == want:
        return True
    if len(have) > len(want):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(have), reversed(want)))


# -- the gradient of indexing added at its index (transform.passes.accumulate) ---

def added_at(total, g, shape, index):
    """``total + scatter(g, shape, index)``: a copy of ``total`` with ``g`` added at ``index``, without zeros
    of the whole shape; as written where ``total`` is not a float array of that shape and ``g``'s dtype."""
    if _adds_at(total, g, shape):
        out = total.copy()
        if _add_at(out, g, index):
            return out
    return total + rules.scatter(g, shape, index)


def add_at(total, g, shape, index):
    """``added_at`` written into ``total`` itself.

    The generated code calls it only where the transformer proved that
    ``total`` holds an array the code made and no other name can reach
    (passes/accumulate.py); ``total`` must also be writeable (not a broadcast).
    """
    if (type(index) is int or type(index) is np.int64) and type(g) is np.float64 and type(total) is np.ndarray \
            and total.dtype is _FLOAT64 and total.shape == shape and total.flags.writeable:
        total[index] += g  # one number at an integer, y[i] in a loop: what the general path below does, in one line
        return total
    if type(index) is slice and type(g) is np.ndarray and type(total) is np.ndarray and g.dtype is total.dtype \
            and total.dtype.kind in "fc" and total.shape == shape and total.flags.writeable:
        selected = total[index]  # a stencil's u[1:-1]: a view, g of its shape (the general path's test, in line)
        if selected.shape == g.shape:
            np.add(selected, g, out=selected)
            return total
    if _adds_at(total, g, shape) and total.flags.writeable and _add_at(total, g, index):
        return total
    return total + rules.scatter(g, shape, index)


def subtract_at(total, g, shape, index):
    """``add_at(total, -g, shape, index)``, where ``-g`` is exact (``g`` of floats, passes/negations.py).

    A stencil's slice (``total[1:-1]``, ``g`` of its shape and dtype) is
    written ``np.subtract(selected, g, out=selected)``: ``a - g`` is
    ``a + (-g)`` by IEEE's definition, element by element, and no array
    ``-g`` is made.  Everything else goes through ``add_at`` with ``-g``.
    """
    if type(index) is slice and type(g) is np.ndarray and type(total) is np.ndarray and g.dtype is total.dtype \
            and total.dtype.kind in "fc" and total.shape == shape and total.flags.writeable:
        selected = total[index]
        if selected.shape == g.shape:
            np.subtract(selected, g, out=selected)
            return total
    return add_at(total, -g, shape, index)


_FLOAT64 = np.dtype(np.float64)


def adds_items(total, shape) -> bool:
    """Whether ``add_at(total, g, shape, i)`` of a numpy float64 ``g`` at an integer ``i`` is ``total[i] += g``: ``total``
    a writeable float64 array of that shape (passes/item_adds.py tests it once before a loop)."""
    return type(total) is np.ndarray and total.dtype is _FLOAT64 and total.shape == shape and total.flags.writeable


def setitem_into(a, index, value):
    """``setitem(a, index, value)`` written into ``a`` itself where it is a writeable numpy array.

    The generated code calls it only where the transformer proved that no
    other name reaches ``a``'s array or a view of it (passes/write_in_place.py).
    """
    if type(a) is np.ndarray and a.flags.writeable:
        a[index] = value
        return a
    return rules.setitem(a, index, value)


def copied(value):
    """A copy of an array, which the loop after it adds into with ``add_at``; anything else as it is."""
    return value.copy() if type(value) is np.ndarray else value


def _adds_at(total, g, shape) -> bool:
    """Whether ``total + scatter(g, shape, index)`` has ``total``'s shape and dtype, a float one."""
    if type(total) is not np.ndarray or total.shape != shape or total.dtype.kind not in "fc":
        return False
    kind = type(g)
    if kind is float:  # scatter's zeros of a Python float are float64
        return total.dtype == np.float64
    return (kind is np.ndarray or isinstance(g, np.generic)) and g.dtype == total.dtype


def _add_at(out, g, index) -> bool:
    """``out[index] += g`` as ``scatter`` adds (every repeat of a position counted); False, ``out`` unchanged,
    where ``g`` has not the shape of ``out[index]`` (numpy's write would drop leading axes of length 1)."""
    basic = _basic(index)
    if not basic and may_repeat(index):
        np.add.at(out, index, g)  # the same call scatter makes into zeros: the same broadcasting
        return True
    selected = out[index]  # an array (a view where the index is basic) or a numpy number
    if type(g) is not float and g.shape and g.shape != selected.shape:
        return False
    if basic and type(selected) is np.ndarray:
        np.add(selected, g, out=selected)
    else:  # a number, or a copy (a boolean mask)
        out[index] = selected + g
    return True


def _basic(index) -> bool:
    """Whether ``out[index]`` is a view or one element: integers, slices, ``None`` and ``...`` only."""
    kind = type(index)
    if kind is int or kind is slice or kind is np.int64:
        return True
    for item in index if kind is tuple else (index,):
        if not (type(item) is int or type(item) is slice or item is None or item is Ellipsis
                or isinstance(item, np.integer)):
            return False
    return True


# -- reverse loops solved as linear recurrences (transform.recurrences) ---------

_NUMBERS = frozenset({int, float, complex} | {t for t in set(np.sctypeDict.values()) if issubclass(t, np.number)})


def pop_numbers(stack, steps, pops, adjoint, *read):
    """The values a loop of ``len(steps)`` steps would pop, as one array each; else None.

    ``pops`` has a letter for each value a step pops, in the order it pops
    them: ``n`` a number the steps read, ``c`` one read before it is popped
    (the value the previous step popped: what the last step pops is not
    read, the ``None`` a name held before the primal loop, say), ``-`` one
    nothing reads.  Only if every value read, and every value in ``read``,
    is a plain number (Python's or numpy's, exactly those types: not
    arrays, not subclasses with operators of their own) are they taken off
    ``stack``: a float or complex array a pop, indexed by step, the first
    step of the primal first (None for a ``-``).  ``adjoint``, the value
    the steps update, may also be a float or complex ndarray (each step
    scales and shifts it by numbers).  Otherwise the stack is untouched and
    the loop runs as written.
    """
    if type(adjoint) not in _NUMBERS and not (type(adjoint) is np.ndarray and adjoint.dtype.kind in "fc"):
        return None
    for v in read:  # a loop: any() over a generator takes more memory than W5's whole gradient
        if type(v) not in _NUMBERS:
            return None
    per_step = len(pops)
    if not per_step:
        return ()  # the steps pop nothing
    count = len(steps) * per_step
    start = len(stack) - count
    out: list = []
    for j, kind in enumerate(pops):
        if kind == "-":
            out.append(None)
            continue
        if per_step == 1 and start == 0 and kind == "n":
            column = stack  # the stack holds the loop's values only: no copy of it beside the array
        else:
            column = stack[start + per_step - 1 - j:start + count:per_step]
        if kind == "c" and column:
            column[0] = 0.0
        if column and (type(column[0]) not in _NUMBERS or not set(map(type, column)) <= _NUMBERS):
            return None
        try:
            values = np.array(column, dtype=None if column else float)
        except (OverflowError, ValueError, TypeError):  # a Python int beyond int64
            return None
        if values.dtype.kind not in "fc":
            return None  # integers: numpy's wrap around where Python's grow
        out.append(values)
    del stack[start:]
    return out


def shifted(popped, before):
    """What a step reads before it pops: the value the step after it popped, ``before`` for the last step."""
    return np.append(popped[1:], before)


def linear_recurrence(d, a, b, steps, then=None):
    """``d`` after ``for t in reversed(range(steps)): d = a[t] * d + b[t]``, times ``then`` if given.

    ``a`` and ``b`` are numbers or arrays of ``steps`` numbers (``b`` None
    for zeros); ``d`` a number or an array.  Unrolled, ``d * a[0] ...
    a[n-1] + sum_t b[t] * a[0] ... a[t-1]``: one cumulative product and one
    dot product.  Where those are not finite (the products can overflow
    where the loop's partial sums do not), the loop itself runs.

    ``then``, a Python number, is the factor of ``e = d * then`` after the
    loop (passes/recurrences.py): where ``d``'s factor is one number, the
    two numbers are multiplied first and the array once, unless their
    product leaves the normal floats (it would overflow or lose digits where
    two multiplications of ``d`` do not).
    """
    if steps == 0:
        return d if then is None else d * then
    if b is None and type(a) in (int, float):  # d * a ** steps: no arrays at all
        try:
            scale = float(a) ** steps
        except OverflowError:  # where numpy would give inf
            pass
        else:
            if then is None:
                return d * scale
            both = scale * then
            if _MIN_NORMAL <= abs(both) <= _MAX_FLOAT or both == 0 and (scale == 0 or then == 0):
                return d * both
            return d * scale * then
    a = _steps_of(a, steps)
    with np.errstate(over="ignore", invalid="ignore"):  # the loop below reports what the loop would
        prefix = np.cumprod(a)
        scale = prefix[-1]
        if b is not None:
            b = _steps_of(b, steps)
            shift = b[0] + np.dot(b[1:], prefix[:-1])
    if b is None and np.isfinite(scale):
        d = d * scale
    elif b is not None and np.isfinite(scale) and np.isfinite(shift):
        d = d * scale + shift
    else:
        for t in range(steps - 1, -1, -1):
            d = a[t] * d if b is None else a[t] * d + b[t]
    return d if then is None else d * then


#: the normal float64 range: a product of two numbers inside it lost no digits to underflow, and is finite
_MIN_NORMAL, _MAX_FLOAT = float(np.finfo(np.float64).tiny), float(np.finfo(np.float64).max)


def _steps_of(value, steps):
    """``value`` as an array of ``steps`` numbers (a number repeated)."""
    if type(value) is np.ndarray and value.shape == (steps,):
        return value
    return np.full(steps, value, dtype=np.result_type(value, 1.0))  # an int constant: floats, never wrapping
