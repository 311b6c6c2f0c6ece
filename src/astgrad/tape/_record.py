"""Recording one operation: compute it with numpy, then attach a graph node.

``apply_op`` is the single door through which every differentiable tensor
operation passes, whether it was called as a Tensor method, an operator, a
numpy function or a user primitive; the operators' two operands and a lone
tensor take fast paths inside it.  The node's backward is the rule for
``fn`` in the shared table.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ..rules import _registry, lookup, raw
from ._compat import IGNORE_ERRORS, restore, set_errors
from ._dtypes import default_float, result_dtype
from ._graph import BOTH, FIRST, accumulation_node, attach_node
from ._modes import _state
from ._tensor import Tensor


def is_tensor(value) -> bool:
    return isinstance(value, Tensor)


def unwrap(value):
    """Arrays for tensors, recursively through lists and tuples."""
    if is_tensor(value):
        return value._data
    if isinstance(value, list):
        return [unwrap(v) for v in value]
    if isinstance(value, tuple):
        return tuple(unwrap(v) for v in value)
    return value


_SLOT_VALUES = (np.ndarray, int, float, np.number)
_NDARRAY, _MASKED = np.ndarray, np.ma.MaskedArray


def plain_constant(value):
    """An array operand as PyTorch reads one: the numbers of an ``np.matrix`` (or another subclass of ndarray)
    as a plain array, so ``*`` stays elementwise; a masked array refused, since its masked entries would be counted."""
    if isinstance(value, _MASKED):
        raise TypeError("astgrad: a numpy.ma.MaskedArray given to a Tensor operation: its masked entries would "
                        "be counted as numbers (numpy's masked operations leave them out). Pass the values "
                        "wanted: m.filled(0.0), m.compressed(), or np.where(np.ma.getmaskarray(m), 0.0, m.data)")
    return np.asarray(value)


_dual = False  # set by _dual while a forward_ad.dual_level() is active: one check per operation otherwise


class _Forwarding(threading.local):
    inside = False  # this thread is in _dual.forward_op, which records through apply_op once more


_forwarding = _Forwarding()
_forward_op: Any = None  # _dual.forward_op and _dual.constant_result, set by _dual (which builds on this module)
_constant_result: Any = None




def edge_of(value):
    """The graph edge ``(node, output_nr)`` a value contributes, or ``(None, 0)``."""
    if not is_tensor(value) or not value._requires_grad:
        return (None, 0)
    if value._grad_fn is not None:
        return (value._grad_fn, 0)
    return (accumulation_node(value), 0)




def promoted_dtype(raw_args) -> np.dtype | None:
    """PyTorch's result dtype for an elementwise op over these operands."""
    operands: list = []
    for a in raw_args:
        if isinstance(a, np.ndarray):
            operands.append(a)
        elif isinstance(a, (bool, int, float, complex, np.generic)):
            operands.append(a)
    if not operands or not any(isinstance(a, np.ndarray) for a in operands):
        return None
    return result_dtype(operands)


def torch_result_dtype(out_dtype: np.dtype, promoted: np.dtype | None) -> np.dtype:
    """numpy's result dtype corrected to PyTorch's promotion."""
    if promoted is None or out_dtype.kind == "b":
        return out_dtype
    if out_dtype.kind == "f":  # a real result of complex inputs (abs, real, angle) stays real
        return promoted if promoted.kind == "f" else out_dtype if promoted.kind == "c" else default_float()
    if out_dtype.kind in "iu":
        return promoted if promoted.kind in "iu" else out_dtype
    return out_dtype


def apply_op(name: str, fn, args, kwargs=None, slots=None, promote: bool = False, rule=None, impl=None):
    """Run ``fn(*args, **kwargs)`` on arrays and record it as a ``name`` node.

    ``slots`` lists the argument positions (``(i,)`` or ``(i, j)`` for the
    j-th tensor of a list argument) that appear in ``next_functions``; by
    default every tensor, array and number (not a bool), and every tensor or
    array inside a list argument.
    ``promote`` applies PyTorch's type promotion to the result.  ``rule``
    (``fn``'s entry in the table) and ``impl`` (what computes ``fn``) are
    looked up when not given.  Two operands (tensors, arrays or numbers: the
    operators) and one tensor (``np.sin(t)``, ``t.exp()``) without keywords
    take the fast paths below, with the same result, node and errors as the
    general path at the end.  (Pass the options by keyword; they are not
    keyword-only because keyword-only defaults cost every operation a
    dictionary lookup each.)
    """
    edges: Any  # a tuple on the fast paths, a list built on the general one
    meta: tuple  # the slots' (shape, dtype) on the fast paths
    if _dual and not _forwarding.inside:  # inside forward_ad.dual_level(): the same, then the result's tangent
        return _forward_op(name, fn, args, kwargs, slots, promote, rule, impl)
    if impl is None:
        impl = fn if type(fn) is _UFUNC else raw(fn)  # a ufunc is never a primitive's wrapper
    if slots is not None and slots is not FIRST and slots is not SECOND:  # ((0,),) spelled out: the fast paths
        if slots == FIRST:
            slots = FIRST
        elif slots == SECOND:
            slots = SECOND
    count = len(args)
    if count == 2 and not kwargs and (slots is None or slots is FIRST or slots is SECOND):  # the operators
        a, b = args
        if isinstance(a, Tensor):
            x, tensor_a = a._data, True
        else:
            x, tensor_a = a if type(a) is _NDARRAY or not isinstance(a, _NDARRAY) else (a := plain_constant(a)), False
        if isinstance(b, Tensor):
            y, tensor_b = b._data, True
        else:
            y, tensor_b = b if type(b) is _NDARRAY or not isinstance(b, _NDARRAY) else (b := plain_constant(b)), False
        if (tensor_a or isinstance(x, _OPERANDS)) and (tensor_b or isinstance(y, _OPERANDS)):
            token = set_errors(IGNORE_ERRORS)
            try:
                out = impl(x, y)
            except (ValueError, IndexError) as error:
                _reraise(error, (x, y))
            finally:
                restore(token)
            if type(out) is not np.ndarray:
                out = np.asarray(out)
            dtype = out.dtype
            if promote and not (type(x) is np.ndarray and x.dtype == dtype
                                and (type(y) in _WEAK_SCALARS or type(y) is np.ndarray and y.dtype == dtype)):
                wanted = _promoted(dtype, (x, y))
                if wanted != dtype:
                    out = out.astype(wanted)
                    dtype = wanted
            result = _new_tensor(out)
            if dtype.kind not in "fc" or not _state.enabled:  # is_grad_enabled(), inlined
                return result
            mask = 0  # bit i: operand i has an edge
            edge_a = edge_b = _NO_EDGE
            if tensor_a and a._requires_grad:
                mask = 1
                edge_a = (a._grad_fn or accumulation_node(a), 0)
            if tensor_b and b._requires_grad:
                mask |= 2
                edge_b = (b._grad_fn or accumulation_node(b), 0)
            if slots is FIRST:
                mask &= 1
            elif slots is SECOND:
                mask &= 2
            if not mask:
                return result
            # an operand with an edge is a tensor: its slot's (shape, dtype) is its array's, for the node's meta
            # (the type checker cannot know an edge means an array: hence the ignores)
            if slots is None:  # by default: tensors, arrays and numbers other than bools
                slot_a = tensor_a or isinstance(a, _SLOT_VALUES) and a is not True and a is not False
                slot_b = tensor_b or isinstance(b, _SLOT_VALUES) and b is not True and b is not False
                if slot_a and slot_b:
                    slots, edges = BOTH, (edge_a, edge_b)
                    meta = ((x.shape, x.dtype) if mask & 1 else None,  # type: ignore[union-attr]
                            (y.shape, y.dtype) if mask & 2 else None)  # type: ignore[union-attr]
                elif slot_a:
                    slots, edges, meta = FIRST, (edge_a,), ((x.shape, x.dtype),)  # type: ignore[union-attr]
                else:
                    slots, edges, meta = SECOND, (edge_b,), ((y.shape, y.dtype),)  # type: ignore[union-attr]
            elif slots is FIRST:
                edges, meta = (edge_a,), ((x.shape, x.dtype),)  # type: ignore[union-attr]
            else:
                edges, meta = (edge_b,), ((y.shape, y.dtype),)  # type: ignore[union-attr]
            if rule is None:  # _attach's lookup, inlined
                try:
                    entry = _rules.get(fn)
                except TypeError:  # an unhashable callable: looked up every time
                    entry = None
                rule = entry[1] if entry is not None and entry[0] is _registry.version else _rule_of(fn)
            if rule.vjp is None:
                return result
            return attach_node(result, rule, name, (a, b), _NO_KWARGS, slots, edges, (x, y), mask, meta)
    elif count == 1 and (slots is None or slots is FIRST) and isinstance(args[0], Tensor) \
            and (not kwargs or _plain(kwargs)):
        a = args[0]  # one tensor: np.sin(t), np.mean(t), t.exp(), t.sum(dim=1)
        x = a._data
        token = set_errors(IGNORE_ERRORS)
        try:
            out = impl(x, **kwargs) if kwargs else impl(x)
        except (ValueError, IndexError) as error:
            _reraise(error, (x,))
        finally:
            restore(token)
        if type(out) is not np.ndarray:
            out = np.asarray(out)
        dtype = out.dtype
        if promote and x.dtype != dtype:
            wanted = _promoted(dtype, (x,))
            if wanted != dtype:
                out = out.astype(wanted)
                dtype = wanted
        result = _new_tensor(out)
        if dtype.kind not in "fc" or not _state.enabled or not a._requires_grad:
            return result
        if rule is None:  # _attach's lookup, inlined
            try:
                entry = _rules.get(fn)
            except TypeError:  # an unhashable callable: looked up every time
                entry = None
            rule = entry[1] if entry is not None and entry[0] is _registry.version else _rule_of(fn)
        if rule.vjp is None:
            return result
        return attach_node(result, rule, name, (a,), kwargs or _NO_KWARGS, FIRST,
                           ((a._grad_fn or accumulation_node(a), 0),), (x,), 1, ((x.shape, x.dtype),))
    # any arguments: lists of tensors, keywords, explicit slots
    if any(isinstance(a, _NDARRAY) and type(a) is not _NDARRAY for a in args):
        args = tuple(plain_constant(a) if isinstance(a, _NDARRAY) else a for a in args)
    raw_args: tuple | list
    if count == 1:
        a = args[0]
        raw_args = (a._data if isinstance(a, Tensor) else unwrap(a) if isinstance(a, (list, tuple)) else a,)
    else:
        raw_args = [a._data if isinstance(a, Tensor) else unwrap(a) if isinstance(a, (list, tuple)) else a
                    for a in args]
    if kwargs:
        raw_kwargs = {k: unwrap(v) for k, v in kwargs.items()}
    else:
        kwargs = raw_kwargs = _NO_KWARGS
    token = set_errors(IGNORE_ERRORS)
    try:  # ufuncs are called fastest with positional arguments spelled out (vectorcall)
        if raw_kwargs:
            out = impl(*raw_args, **raw_kwargs)
        elif len(raw_args) == 2:
            out = impl(raw_args[0], raw_args[1])
        elif len(raw_args) == 1:
            out = impl(raw_args[0])
        else:
            out = impl(*raw_args)
    except (ValueError, IndexError) as error:
        _reraise(error, raw_args)
    finally:
        restore(token)
    if not isinstance(out, np.ndarray):
        out = np.asarray(out)
    if promote:
        dtype = _promoted(out.dtype, raw_args)
        if dtype != out.dtype:
            out = out.astype(dtype)
    result = _new_tensor(out)
    if out.dtype.kind not in "fc" or not _state.enabled:  # is_grad_enabled(), inlined
        return result
    edges = []
    mask = 0  # bit i: positional argument i has an edge
    if slots is None:  # by default: tensors, arrays, numbers (not bools), tensors in lists
        slots = []
        for i, value in enumerate(args):
            if isinstance(value, Tensor):
                slots.append(_POSITIONS[i] if i < 8 else (i,))
                if value._requires_grad:
                    mask |= 1 << i
                    edges.append((value._grad_fn or accumulation_node(value), 0))
                else:
                    edges.append(_NO_EDGE)
            elif isinstance(value, _SLOT_VALUES) and value is not True and value is not False:
                slots.append(_POSITIONS[i] if i < 8 else (i,))
                edges.append(_NO_EDGE)
            elif isinstance(value, (list, tuple)):
                for j, item in enumerate(value):
                    if isinstance(item, (Tensor, np.ndarray)):
                        slots.append((i, j))
                        edge = edge_of(item)
                        if edge[0] is not None:
                            mask |= 1 << i
                        edges.append(edge)
        slots = tuple(slots)
    else:
        for slot in slots:
            value = args[slot[0]] if len(slot) == 1 else args[slot[0]][slot[1]]
            if isinstance(value, Tensor) and value._requires_grad:
                mask |= 1 << slot[0]
                edges.append((value._grad_fn or accumulation_node(value), 0))
            else:
                edges.append(_NO_EDGE)
    if not mask:
        return result
    return _attach(result, fn, rule, name, args, kwargs, slots, tuple(edges), raw_args, mask)


def _plain(kwargs) -> bool:
    """Whether no keyword argument holds a tensor, a list or a nested tuple: ``unwrap`` would give each back."""
    for value in kwargs.values():
        if isinstance(value, _UNWRAPPED):
            if type(value) is not tuple:
                return False
            for item in value:
                if isinstance(item, _UNWRAPPED):
                    return False
    return True


def _attach(result, fn, rule, name, args, kwargs, slots, edges, raw_args, mask, meta=None):
    """Give ``result`` its node, unless ``fn`` is declared non-differentiable; returns ``result``.

    ``meta``: each slot's (shape, dtype) where it has an edge, when the caller has it (``attach_node``).
    """
    if rule is None:
        try:
            entry = _rules.get(fn)
        except TypeError:  # an unhashable callable: looked up every time
            entry = None
        rule = entry[1] if entry is not None and entry[0] is _registry.version else _rule_of(fn)
    if rule.vjp is None:
        return result
    return attach_node(result, rule, name, args, kwargs, slots, edges, raw_args, mask, meta)


#: (table version, rule) of each function recorded without a rule named: the operators and the
#: methods name none, and ``lookup`` costs a failed attribute lookup per call on a ufunc and a key
#: and a table lookup on a primitive; an entry holds while ``_registry.version`` is the one it saw
_rules: dict = {}


def _rule_of(fn):
    """``lookup(fn)``, remembered until the table changes (a function without a rule raises, never remembered)."""
    rule = lookup(fn)
    try:
        if len(_rules) > 1024:
            _rules.clear()
        _rules[fn] = (_registry.version, rule)
    except TypeError:  # an unhashable callable
        pass
    return rule


def _reraise(error, raw_args):
    """Raise PyTorch's error for numpy's ``error`` (called in its ``except`` block), else ``error`` itself."""
    if isinstance(error, ValueError) and "could not be broadcast" in str(error):
        raise RuntimeError(_broadcast_message(raw_args)) from None
    translated = torch_index_error(error)
    if translated is None:
        raise error
    raise translated from None


_new_tensor = Tensor._make  # bound once: the attribute lookup made a bound method for every operation


def compare(name: str, fn, test, a, b):
    """``a < b`` (``fn`` the ufunc, ``test`` the same comparison of Python numbers), as ``apply_op`` records it.

    A 0-d float64 tensor against a Python float, or an int that float64
    holds exactly (``while np.linalg.norm(y) < 1000``), is compared as two
    Python floats: the same IEEE comparison numpy makes (NaN compares
    false, and unequal), without the ufunc's and its scalar's conversions,
    three quarters of the operation.  The result is a 0-d bool tensor,
    which records nothing, as on every path.  Anything else is
    ``apply_op``'s.
    """
    x = a._data
    kind = type(b)
    if (kind is float or kind is int and -_EXACT <= b <= _EXACT) and type(x) is np.ndarray and x.ndim == 0 \
            and x.dtype is _FLOAT64 and not _dual and type(a) is Tensor:
        return _new_tensor(_array(test(x.item(), b)))
    return apply_op(name, fn, (a, b))


_EXACT = 2 ** 53  # ints up to this size are float64s exactly: numpy converts them, Python compares them exactly
_FLOAT64 = np.dtype(np.float64)
_array = np.array
_OPERANDS = (np.ndarray, int, float, complex, np.generic)
_UNWRAPPED = (Tensor, list, tuple)
_UFUNC = np.ufunc
SECOND: tuple = ((1,),)
_NO_KWARGS: dict = {}
_NO_EDGE: tuple = (None, 0)
_POSITIONS = tuple((i,) for i in range(8))
_promotions: dict = {}
_WEAK_SCALARS = frozenset({int, float, bool})


def _promoted(out_dtype: np.dtype, raw_args) -> np.dtype:
    """``torch_result_dtype`` cached by what it depends on: dtypes, 0-d or not, scalar types, the default dtype."""
    for a in raw_args:  # arrays of numpy's result dtype and Python scalars: PyTorch agrees with numpy
        if isinstance(a, np.ndarray):
            if a.dtype != out_dtype:
                break
        elif type(a) not in _WEAK_SCALARS:
            break
    else:
        return out_dtype
    key = (out_dtype, default_float(),  # set_default_dtype changes what Python floats promote to
           *[(a.dtype, a.ndim != 0) if isinstance(a, np.ndarray) else type(a) for a in raw_args])
    dtype = _promotions.get(key)
    if dtype is None:
        if len(_promotions) > 4096:
            _promotions.clear()
        dtype = _promotions[key] = torch_result_dtype(out_dtype, promoted_dtype(raw_args))
    return dtype


def _broadcast_message(raw_args) -> str:
    """PyTorch's words for operands whose shapes do not broadcast (first clash from the right)."""
    a, b = (np.shape(x) for x in raw_args[:2])
    ndim = max(len(a), len(b))
    for i in range(ndim - 1, -1, -1):
        size_a = a[i - ndim + len(a)] if i - ndim + len(a) >= 0 else 1
        size_b = b[i - ndim + len(b)] if i - ndim + len(b) >= 0 else 1
        if size_a != size_b and size_a != 1 and size_b != 1:
            return (f"The size of tensor a ({size_a}) must match the size of tensor b ({size_b}) at "
                    f"non-singleton dimension {i}")
    return f"shapes {a} and {b} cannot be broadcast together"


def torch_index_error(error) -> IndexError | None:
    """PyTorch's IndexError for numpy's axis and index errors, or ``None`` for other errors."""
    if isinstance(error, np.exceptions.AxisError) and error.axis is not None and error.ndim is not None:
        ndim = max(error.ndim, 1)
        return IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                          f"but got {error.axis})")
    message = str(error)
    if isinstance(error, IndexError) and " is out of bounds for axis " in message:
        return IndexError(message.replace(" for axis ", " for dimension "))
    if isinstance(error, IndexError) and message.startswith("too many indices for array"):
        dims = message.split("array is ")[-1].split("-dimensional")[0]
        return IndexError(f"too many indices for tensor of dimension {dims}")
    return None


def apply_nondiff(fn, args, kwargs=None):
    """Run ``fn`` on arrays; the result (tensor-wrapped when it is an array) carries no grad."""
    try:
        out = raw(fn)(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in (kwargs or {}).items()})
    except IndexError as error:
        translated = torch_index_error(error)
        if translated is None:
            raise
        raise translated from None
    if isinstance(out, np.ndarray) or isinstance(out, np.generic):
        result = Tensor._make(np.asarray(out))
        return _constant_result(result, args, kwargs) if _dual else result
    if isinstance(out, tuple) and all(isinstance(o, np.ndarray) for o in out):
        results = tuple(Tensor._make(o) for o in out)
        return tuple(_constant_result(r, args, kwargs) for r in results) if _dual else results
    return out
