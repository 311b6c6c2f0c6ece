"""Calls that write into an existing array: ``out=``, ``x.sort()``, ``x.fill(v)``, ``np.copyto``.

numpy stores their result in memory that already belongs to an array.  The
generated code keeps old values for the adjoint and cannot do that, so each
becomes the item assignment ``x[...] = value``, a new array under the same
name, which the aliasing check then proves no other name sees (or refuses).
Calls that write in place in ways one item assignment does not express
(``x.put``, ``np.add.at``, ``x.resize``, ...) are refused here, located,
with what to write instead.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import compat, primitives
from .compat import gast
from .parse import MISSING
from .tangents import stack_pop

#: ndarray methods that change the array in place and have no rewrite here
_REFUSED_METHODS = {
    "put": "Write {x}[indices] = values instead.",
    "itemset": "Write {x}[index] = value instead.",
    "partition": "Write {x} = np.partition({x}, kth) (a new array) instead.",
    "resize": "Write {x} = np.resize({x}, shape) (a new array) instead.",
    "setfield": "Build a new array instead.",
    "byteswap": "Write {x} = {x}.byteswap() (a new array) instead.",
}
_REWRITTEN_METHODS = ("sort", "fill")
#: list methods that change the list
_LIST_CHANGES = {"extend", "insert", "pop", "remove", "reverse", "sort", "clear"}


_REFUSED_FUNCTIONS = {
    np.put: "Write a[indices] = values instead.",
    np.place: "Write a = np.where(mask, values, a) instead.",
    np.putmask: "Write a = np.where(mask, values, a) instead.",
    np.fill_diagonal: "Write a[np.arange(n), np.arange(n)] = value instead.",
    np.put_along_axis: "Build the result as a new array instead.",
    np.random.shuffle: "Write x = x[np.random.permutation(len(x))] instead.",
}


def write_call(n, target, expr) -> bool:
    """Emit ``expr``, a call that may write into an array, on normalizer ``n``; False if it writes nowhere.

    ``target`` receives what the call returns (``None`` when the call is a statement).
    """
    func = expr.func
    obj = n.static(func)
    if obj is MISSING and isinstance(func, gast.Attribute):
        if isinstance(func.value, gast.Name) and func.attr in _LIST_CHANGES and (
                func.value.id in n.sequences or func.value.id == n.forward_stack):
            return _list_change(n, target, expr)
        owner = n.static(func.value)
        if isinstance(owner, np.ufunc) and func.attr == "at":
            raise n.error(expr, f"np.{owner.__name__}.at writes into its first argument in place, which "
                          "astgrad's generated code does not reproduce",
                          "Build the result as a new array (for example a[idx] = a[idx] + v when idx "
                          "has no repeats).")
        if (owner is MISSING or isinstance(owner, np.ndarray)) and (func.attr in _REFUSED_METHODS or func.attr in _REWRITTEN_METHODS):
            return _method(n, target, expr, func.attr)
    elif obj is not MISSING:
        _refuse_function(n, expr, obj)
        if _same(obj, np.copyto):
            return _copyto(n, target, expr)
    out = _out_argument(n, expr, obj)
    if out is None:
        return False
    name, call = out
    _write_into(n, expr, name, call, f"out={name}", f"{name} = {compat.to_source(call).strip()}")
    if target is not None:
        n.emit([target], "copy", compat.name(name), expr, args=[compat.name(name)])
    return True


def _list_change(n, target, expr):
    """``lst.extend(v)``: runs as written; the list's gradient cannot follow, so an error if it must."""
    lst, method = expr.func.value.id, expr.func.attr
    if lst == n.forward_stack and method == "pop" and not expr.args and not expr.keywords:
        # a pop of generated code's stack: the forward sweep pops the tangent beside the value
        n.refuse_stack_without_tangent(expr)
        n.emit([target or n.temp()], "prim", compat.call(compat.name(n.ns.bind(stack_pop, "stack_pop")),
                                                        [compat.name(lst)]), expr, stack_pop, [compat.name(lst)])
        n.out[-1].kind = "prim"  # popped even under no_grad: the tangent stack must keep in step
        return True
    args = [n.atomize(a) for a in expr.args]
    error = (f"{lst}.{method}(...) changes the list {lst} in place, which astgrad's generated code does "
             "not follow", "Build the list with lst.append(v) or a list comprehension instead.")
    node = compat.call(compat.attr(compat.name(lst), method), args)
    start = len(n.out)
    n.emit([target or n.temp()], "opaque", node, expr, args=[compat.name(lst)] + args, error=error)
    n.emit([lst], "opaque", compat.name(lst), expr, args=[compat.name(lst)] + args, error=error)
    for made in n.out[start:]:  # a real write in place: aliasing checks what reads the list before
        made.inplace = (f"{lst}.{method}(...)", None)
    return True


def _method(n, target, expr, method):
    base = expr.func.value
    if not isinstance(base, gast.Name):
        raise n.error(expr, f".{method}() writes into the array it is called on, which is not a name here",
                      "Assign the array to a name first.")
    x = base.id
    if method in _REFUSED_METHODS:
        raise n.error(expr, f"{x}.{method}(...) writes into {x}'s memory, which astgrad's generated code "
                      "does not reproduce", _REFUSED_METHODS[method].format(x=x))
    if method == "fill":
        if len(expr.args) != 1 or expr.keywords:
            raise n.error(expr, f"{x}.fill takes one value here")
        value = expr.args[0]
        instead = f"{x} = {x} * 0.0 + {compat.to_source(value).strip()}"
    else:
        args = [compat.name(x)] + [n.atomize(a) for a in expr.args]
        kwargs = {kw.arg: n.atomize(kw.value) for kw in expr.keywords}
        value = compat.name(n.temp())
        n.emit([value.id], "prim", compat.call(n.ns.ref(np.sort), args, kwargs), expr, np.sort, args, kwargs)
        instead = f"{x} = np.sort({x})"
    _write_into(n, expr, x, value, f"{x}.{method}(...)", instead)
    if target is not None:
        n.emit([target], "nondiff", compat.const(None), expr)
    return True


def _copyto(n, target, expr):
    if len(expr.args) != 2 or expr.keywords or not isinstance(expr.args[0], gast.Name):
        raise n.error(expr, "np.copyto is supported as np.copyto(name, value) only",
                      "Write name[...] = value (item assignment) instead.")
    x = expr.args[0].id
    _write_into(n, expr, x, expr.args[1], f"np.copyto({x}, ...)", "")
    if target is not None:
        n.emit([target], "nondiff", compat.const(None), expr)
    return True


def _refuse_function(n, expr, obj):
    for fn, hint in _REFUSED_FUNCTIONS.items():
        if _same(obj, fn):
            raise n.error(expr, f"np.{fn.__name__} writes into an array in place, which astgrad's generated "
                          "code does not reproduce", hint)


def _same(obj, fn) -> bool:
    """``obj`` is ``fn`` (bound methods such as ``np.random.shuffle`` are new objects on each access)."""
    return obj is fn or type(obj) is type(fn) and obj == fn


def _out_argument(n, expr, obj):
    """(name of the array written, the call without its output) or None when the call has no ``out``."""
    if obj is not MISSING and not _numpy_callable(obj):
        return None
    value, keywords, args = None, list(expr.keywords), list(expr.args)
    for kw in keywords:
        if kw.arg == "out":
            value = kw.value
            keywords.remove(kw)
            break
    at = _out_position(obj, expr.func)
    if value is None and at is not None and len(args) > at and not _none(args[at]):
        if len(args) > at + 1 and not isinstance(obj, np.ufunc):
            raise n.error(expr, "an output array passed by position, followed by more arguments",
                          "Pass out= and the arguments after it by keyword.")
        value = args[at] if len(args) == at + 1 else compat.tuple_(args[at:])
        args = args[:at]
    if value is None or _none(value):
        return None
    if isinstance(value, gast.Tuple) and len(value.elts) == 1:
        value = value.elts[0]
    if not isinstance(value, gast.Name):
        raise n.error(expr, "out= must name one array",
                      "Assign the result to a name instead of passing out=.")
    if any(kw.arg == "where" for kw in keywords):
        raise n.error(expr, f"out={value.id} with where= keeps part of {value.id}'s old values, which "
                      "astgrad does not reproduce", f"Write {value.id} = np.where(mask, result, {value.id}) instead.")
    return value.id, compat.make("Call", func=expr.func, args=args, keywords=keywords,
                                 lineno=expr.lineno, col_offset=expr.col_offset)


def _none(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def _out_position(obj, func):
    """Where ``obj`` (or the method ``func`` names) takes its output array by position, or None."""
    shift = 0
    if obj is MISSING:  # x.sum(0, None, out): the method of an array, numpy's function without ``a``
        entry = primitives.METHODS.get(getattr(func, "attr", None))
        if entry is None or entry[1]:
            return None
        obj, shift = entry[0], 1
    if isinstance(obj, np.ufunc):
        return obj.nin - shift
    try:
        names = [p.name if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else "*"
                 for p in inspect.signature(obj).parameters.values()]
    except (TypeError, ValueError):
        names = _documented_parameters(obj)
    for i, name in enumerate(names):
        if name == "*":
            return None
        if name == "out":
            return i - shift
    return None


def _documented_parameters(obj) -> list:
    """The parameters the first line of ``obj``'s docstring names, ``*`` from the first not taken by position.

    numpy before 2.3 gives its builtins no signature (``np.dot``,
    ``np.concatenate``) but states it there: ``dot(a, b, out=None)``,
    ``concatenate((a1, a2, ...), axis=0, out=None, ...)``.
    """
    name, doc = getattr(obj, "__name__", ""), (getattr(obj, "__doc__", None) or "").lstrip()
    if not name or not doc.startswith(name + "("):
        return []
    names: list = []
    token, depth = "", 0
    for ch in doc[len(name) + 1:]:
        if depth == 0 and ch in ",)":
            token = token.strip()
            if token.startswith("*"):
                return names + ["*"]
            if token and token != "/":
                names.append(token.split("=")[0].strip())
            if ch == ")":
                return names
            token = ""
            continue
        depth += (ch in "([{") - (ch in ")]}")
        token += ch
    return []


def _numpy_callable(obj) -> bool:
    if isinstance(obj, np.ufunc) or isinstance(getattr(obj, "__self__", None), (np.ufunc, np.ndarray)):
        return True
    if primitives.is_user_function(obj):
        return False
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "numpy"


def _write_into(n, expr, x, value, what, instead):
    """``x[...] = value``: the aliasing check sees it as the write into ``x`` it stands for."""
    target = compat.make("Subscript", value=compat.name(x), slice=compat.const(Ellipsis), ctx=gast.Store(),
                         lineno=expr.lineno, col_offset=expr.col_offset)
    n.store(target, value, outside=False)
    n.out[-1].inplace = (what, instead)
