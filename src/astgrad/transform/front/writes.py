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

import sysconfig

import numpy as np

from ..ir import compat
from . import numpy_writes, primitives
from .. import runtime
from ..ir.compat import gast
from .parse import MISSING
from ...rules.sequences import grow
from ..runtime.tangents import stack_pop

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
    found: tuple = ()
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
        method = numpy_writes.ufunc_method(owner, func.attr)
        if method is not None:  # np.add.reduce(m, 0, None, y): the ufunc's method has its own out
            obj = method
        elif (owner is MISSING or isinstance(owner, np.ndarray)) and (func.attr in _REFUSED_METHODS or func.attr in _REWRITTEN_METHODS):
            return _method(n, target, expr, func.attr)
        elif owner is MISSING or isinstance(owner, np.ndarray):
            found = numpy_writes.method_doors(func.attr)
        elif _numpy_callable(getattr(owner, func.attr, None)):  # RNG.random(None, np.float64, a): a Generator's
            found = numpy_writes.doors(getattr(owner, func.attr))
    elif obj is grow and n.forward_stack is not None and len(expr.args) == 2 and not expr.keywords \
            and isinstance(expr.args[0], gast.Name):
        # generated code appending in place to a list it pops in its adjoint (transform/front/lists.py): the forward
        # sweep pushes the tangent beside the value, as for its stack
        items, item = compat.name(expr.args[0].id), n.atomize(expr.args[1])
        n.emit([target or n.temp()], "prim", compat.call(compat.name(n.ns.helper(grow)), [items, item]), expr,
               grow, [compat.name(expr.args[0].id), item])
        return True
    elif obj is stack_pop and n.batching and len(expr.args) == 1 and not expr.keywords \
            and isinstance(expr.args[0], gast.Name):
        # vmap of a jvp of generated code: its pops, of the stack and of the tangent stack, are the batching sweep's
        lst = expr.args[0].id
        n.emit([target or n.temp()], "prim", compat.call(compat.name(n.ns.bind(stack_pop, "stack_pop")),
                                                        [compat.name(lst)]), expr, stack_pop, [compat.name(lst)])
        return True
    elif obj is runtime.pop_numbers and n.batching:
        # a reverse loop's pops taken as arrays where they are plain numbers: None, its answer where they are not
        # (the loop then runs as written, popping values the batching sweep tells apart)
        n.emit([target or n.temp()], "nondiff", compat.const(None), expr, None, [])
        if target is not None and target in n.locals:
            n.unsaved.add(target)
        return True
    elif obj is reversed and n.batching and len(expr.args) == 1 and not expr.keywords:
        # a jvp's reverse loop over steps (``t = reversed(range(3))``, then ``for i in t``): as a tuple, which the
        # loop indexes
        steps = n.atomize(expr.args[0])
        value = compat.call(compat.name(n.ns.bind(tuple, "tuple")),
                            [compat.call(compat.name(n.ns.bind(reversed, "reversed")), [steps])])
        n.emit([target or n.temp()], "nondiff", value, expr, None, [steps])
        return True
    if obj is not MISSING:
        _refuse_function(n, expr, obj)
        if _same(obj, np.copyto):
            return _copyto(n, target, expr)
        if not _numpy_callable(obj):
            return _library_call(n, target, expr, obj)
        found = numpy_writes.doors(obj)
    if _flags(n, target, expr, found):
        return True
    out = _out_argument(n, expr, found)
    if out is None:
        return False
    name, call = out
    casting = next((k.value.value for k in call.keywords if k.arg == "casting" and compat.is_literal(k.value)),
                   "same_kind")
    _write_into(n, expr, name, call, f"out={name}", f"{name} = {compat.to_source(call).strip()}", casting)
    if target is not None:
        n.emit([target], "copy", compat.name(name), expr, args=[compat.name(name)])
    return True


def _flags(n, target, expr, found) -> bool:
    """``np.median(a, overwrite_input=True)``, ``np.nan_to_num(a, copy=False)``: a flag that lets numpy write
    into an argument.  Given a new array (arithmetic, ``.copy()``), the flag is dropped (numpy's result is the
    same, and nothing else sees that array); ``copy=False`` on a name is the write ``a[...] = np.nan_to_num(a)``;
    anything else is refused.  Emits the call and returns True when a flag was open."""
    keywords = {kw.arg: kw.value for kw in expr.keywords if kw.arg}
    opened = [w for w in numpy_writes.used(found, expr.args, keywords)
              if w.door.kind not in (numpy_writes.OUT, numpy_writes.SIZED)]
    if not opened:
        return False
    args, kws = list(expr.args), list(expr.keywords)
    into = None
    for w in opened:
        door, node = w.door, w.node
        if node is None:  # x.byteswap(inplace=True)
            raise n.error(expr, f".{compat.to_source(expr.func).strip().rsplit('.', 1)[-1]}(...) with "
                          f"{door.parameter}= writes into the array it is called on, which astgrad's generated code "
                          "does not reproduce", "Assign the new array to a name instead.")
        shown = compat.to_source(node).strip()
        flag = keywords[door.parameter] if w.position is None else args[w.position]
        flag_text = repr(flag.value) if isinstance(flag, gast.Constant) else compat.to_source(flag).strip()
        what = f"{compat.to_source(expr.func).strip()}(..., {door.parameter}={flag_text})"
        off = compat.const(door.parameter == "copy")  # the flag's value that writes nowhere
        if w.position is None:
            kws = [compat.make("keyword", arg=k.arg, value=off) if k.arg == door.parameter else k for k in kws]
        else:
            args[w.position] = off
        if _new_array(n, node):
            continue
        if door.kind == numpy_writes.IN_PLACE and isinstance(node, gast.Name) and node.id not in n.sequences \
                and into is None:
            into = node.id
            continue
        if door.kind == numpy_writes.SCRAMBLE:
            raise n.error(expr, f"{what} may leave {shown}'s values in any order (the library's choice), which "
                          "astgrad's generated code does not reproduce",
                          f"Drop {door.parameter}=... (numpy's result is the same), or give it a new array: "
                          f"{shown}.copy().")
        raise n.error(expr, f"{what} writes into {shown}, which is not a name here",
                      f"Assign {shown} to a name first, or drop {door.parameter}=....")
    call = compat.make("Call", func=expr.func, args=args, keywords=kws, lineno=expr.lineno,
                       col_offset=expr.col_offset)
    if into is None:
        n.assign(target or n.temp(), call)
        return True
    _write_into(n, expr, into, call, f"{compat.to_source(expr).strip()}",
                f"{into} = {compat.to_source(call).strip()}")
    if target is not None:
        n.emit([target], "copy", compat.name(into), expr, args=[compat.name(into)])
    return True


def _library_call(n, target, expr, obj) -> bool:
    """A function of another library (``scipy.linalg.solve(a, b, overwrite_a=True)``): its flags are read and
    handled as numpy's; an ``out`` is refused, since what it computes without one is not known."""
    code = getattr(obj, "__code__", None)
    if not callable(obj) or str(getattr(obj, "__module__", "")).startswith(("astgrad", "builtins")) or \
            code is not None and not code.co_filename.startswith(_LIBRARY_PATHS):
        return False  # the user's own function: transformed, its writes checked in its body
    found = numpy_writes.doors(obj)
    keywords = {kw.arg: kw.value for kw in expr.keywords if kw.arg}
    if any(w.door.kind in (numpy_writes.OUT, numpy_writes.SIZED) for w in numpy_writes.used(found, expr.args, keywords)):
        raise n.error(expr, f"{compat.to_source(expr.func).strip()}(...) is given an array to write its result into, "
                      "which astgrad's generated code does not reproduce for a function outside numpy",
                      "Assign the result to a name instead of passing out=.")
    return _flags(n, target, expr, found)


_LIBRARY_PATHS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})


def _new_array(n, node) -> bool:
    """``node`` surely makes an array no name sees: arithmetic, ``v.copy()``, ``np.copy(v)``."""
    if isinstance(node, gast.BinOp) or isinstance(node, gast.UnaryOp) and not isinstance(node.op, gast.Not):
        return True
    if isinstance(node, gast.Call) and not node.keywords:
        if isinstance(node.func, gast.Attribute) and node.func.attr == "copy" and not node.args:
            return True
        return n.static(node.func) is np.copy
    return False


def _list_change(n, target, expr):
    """``lst.extend(v)``: runs as written; the list's gradient cannot follow, so an error if it must."""
    lst, method = expr.func.value.id, expr.func.attr
    if method == "pop" and not expr.args and not expr.keywords and n.forward_stack is not None:
        # a pop of generated code's stack, or of a list it grew in place (transform/front/lists.py) and pops in its
        # adjoint: the forward sweep pops the tangent beside the value
        if lst == n.forward_stack:
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
    _write_into(n, expr, x, expr.args[1], f"np.copyto({x}, ...)", "", "same_kind")
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


def _out_argument(n, expr, found):
    """(name of the array written, the call without its output) or None when the call has no ``out``.

    ``found``: the callable's doors (``numpy_writes``), which say where it takes its output by position.
    """
    value, keywords, args = None, list(expr.keywords), list(expr.args)
    for kw in keywords:
        if kw.arg == "out":
            value = kw.value
            keywords.remove(kw)
            break
    outs = sorted(d.position for d in found if d.kind == numpy_writes.OUT and d.position is not None)
    at = outs[0] if outs else None
    sized = any(d.kind == numpy_writes.SIZED for d in found)
    if value is not None and not _none(value) and (sized or not any(d.kind == numpy_writes.OUT for d in found)):
        shown = compat.to_source(expr.func).strip()
        why = "its out sets the result's shape" if sized else "astgrad cannot tell what it computes without out="
        raise n.error(expr, f"{shown}(..., out={compat.to_source(value).strip()}) writes its result into an "
                      f"existing array, and {why}", "Assign the result to a name instead (for a random "
                      "generator, pass size=x.shape).")
    sized_at = [d.position for d in found if d.kind == numpy_writes.SIZED and d.position is not None]
    if sized_at and len(args) > sized_at[0] and not _none(args[sized_at[0]]):
        raise n.error(expr, f"{compat.to_source(expr.func).strip()}(...) is given an output array by position, "
                      "which sets its result's shape", "Assign the result to a name instead (pass size=x.shape).")
    if value is None and at is not None and len(args) > at and not _none(args[at]):
        if len(args) > at + len(outs):
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


def _out_position(obj, func):
    """Where ``obj`` (or, when ``obj`` is MISSING, the array method ``func`` names) takes its output array by
    position, or None: read from numpy by ``numpy_writes``."""
    found = numpy_writes.method_doors(getattr(func, "attr", "")) if obj is MISSING else numpy_writes.doors(obj)
    return min((d.position for d in found if d.kind == numpy_writes.OUT and d.position is not None), default=None)


def _none(node) -> bool:
    return isinstance(node, gast.Constant) and node.value is None


def _numpy_callable(obj) -> bool:
    if isinstance(obj, np.ufunc) or isinstance(getattr(obj, "__self__", None), (np.ufunc, np.ndarray)):
        return True
    if callable(obj) and type(getattr(obj, "__self__", None)).__module__.startswith("numpy"):
        return True  # a method of a numpy object: np.random.Generator's
    if primitives.is_user_function(obj):
        return False
    return (getattr(obj, "__module__", None) or "").split(".")[0] == "numpy"


def _write_into(n, expr, x, value, what, instead, casting=None):
    """``x[...] = value``: the aliasing check sees it as the write into ``x`` it stands for.

    ``casting``: the rule numpy casts ``value`` into ``x`` by (``same_kind`` for ``out=`` and ``np.copyto``),
    which an item assignment does not check (it truncates a float into an integer array): ``cast_into`` does.
    """
    if casting is not None and casting != "unsafe":
        args = [n.atomize(value), compat.name(x), compat.const(casting)]
        value = compat.name(n.temp())
        n.emit([value.id], "prim", compat.call(n.ns.ref(runtime.cast_into), compat.clone(args)), expr,
               runtime.cast_into, args)
    target = compat.make("Subscript", value=compat.name(x), slice=compat.const(Ellipsis), ctx=gast.Store(),
                         lineno=expr.lineno, col_offset=expr.col_offset)
    n.store(target, value, outside=False)
    n.out[-1].inplace = (what, instead)
