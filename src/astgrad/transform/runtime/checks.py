"""Checks generated code makes when a statement runs, before one it could not follow.

Each raises a ``TypeError`` naming the user's code and what to write
instead, where the transform cannot tell at transform time what a value
will be: a list joined by ``+``, a dict looped over, a write through an
item or into an object the function does not own, ``x op= v`` on what a
called function returned.  ``runtime_errors`` adds the user's file and line.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
import weakref

import numpy as np

from ...values import trees as _trees
from ..ir.errors import UnsupportedSyntaxError

__all__ = ["not_joined", "not_a_dict", "written_through", "a_number", "a_returned_number", "written_outside",
           "written_by_call", "same_method"]


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


def same_method(obj, name, expected, text):
    """Refuse ``obj.name(...)`` (``text``) unless it calls ``expected`` bound to ``obj``: the function the
    gradient was made for (transform.methods), not a subclass's override or a function stored on ``obj``."""
    bound = getattr(obj, name)
    if getattr(bound, "__func__", None) is expected and getattr(bound, "__self__", None) is obj:
        return
    runs = getattr(getattr(bound, "__func__", bound), "__qualname__", type(bound).__name__)
    raise TypeError(f"astgrad: `{text}` calls {runs} here ({type(obj).__qualname__} object), and the gradient was "
                    f"made for {expected.__qualname__}, the method the class it was written in has; astgrad "
                    f"differentiates the function that runs or nothing. Call the method through the class you "
                    f"mean (`{expected.__qualname__}(...)` with the object first), or differentiate the "
                    f"subclass's method itself")


def a_returned_number(value, made, x, what, line):
    """Refuse what a user function returned (``made``: ``e0 = energy(pos, vel)``) unless it is a number:
    an array there may share memory with ``x``, which ``what`` (on ``line``) later writes into, and
    astgrad's write goes to a copy, so the two names would differ."""
    if not isinstance(value, (int, float, complex, bool, np.generic)):
        raise TypeError(f"astgrad: `{made}` gives a {type(value).__name__}, which may share memory with {x}, and "
                        f"`{what}` on line {line} changes {x} before it is read; astgrad's `{what}` writes to a "
                        f"copy, so the two would differ. Copy first (`{x}.copy()` where the value is made), or "
                        f"finish writing {x} before calling the function")


def an_array(value, what, aliases, instead):
    """Refuse ``x op= v`` (``what``) unless ``x`` holds an array, which it writes into: the generated code binds
    the aliases ``z = x`` again after it, which numpy's names see only for an array (on a numpy scalar ``x op= v``
    rebinds ``x`` alone)."""
    if type(value) is not np.ndarray:
        raise TypeError(f"astgrad: `{what}` on a {type(value).__name__}, with {aliases} bound to the old value: "
                        f"numpy rebinds only the written name there, which astgrad does not follow. Write "
                        f"{instead} (a new value; nothing else changes)")


def written_outside(items, text, attribute):
    """Refuse ``config[k] = v`` (``attribute``: ``state.k = v``) kept as written on an object the function
    does not own unless it is a dict or list (for an attribute: anything but an array): writing into an
    array changes memory the adjoint may read after the function ran.  Also refuse a write into any object
    inside a differentiated argument of a gradient running on this thread (``_ARGUMENTS``): the function would
    read the new value, while the gradient is counted for the argument's old one."""
    shown = f"{text}.{attribute}" if isinstance(attribute, str) else f"{text}{'.' if attribute else '[...]'}"
    if type(items) is dict or type(items) is list or attribute and not isinstance(items, np.ndarray):
        name = _argument_holding(items)
        if name is None:
            return
        raise TypeError(f"astgrad: `{shown} = ...` writes into the differentiated "
                        f"argument {name} (the object written into is {name} or inside it), which astgrad cannot "
                        f"follow: the function reads the new value, while the gradient is counted for the old "
                        f"one. Don't write into the argument through a global: pass the object explicitly, or "
                        f"copy it first ({text}_copy = copy.deepcopy({text})) and write into the copy")
    raise TypeError(f"astgrad: `{shown} = ...` writes into a {type(items).__name__!r} "
                    "object the function does not own; astgrad runs such writes as written into dicts, lists and "
                    "attributes of objects other than arrays (the adjoint may read an array's values after the "
                    "function ran): copy it into a local name first")


# code object of a function that runs generated code -> arguments(frame locals): {name: differentiated argument}.
# written_outside walks the calling frames (this thread's, nested gradients and callees included) for them:
# nothing is set or reset per call, so a function that writes into no global pays nothing.
_ARGUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def arguments_in(code, arguments):
    """Record that a frame running ``code`` holds its differentiated arguments as ``arguments(f_locals)``."""
    _ARGUMENTS[code] = arguments


def _running_arguments(depth=3):
    """``(name, value)`` of each differentiated argument of the gradients running on this thread."""
    frame: types.FrameType | None = sys._getframe(depth)
    while frame is not None:
        arguments = _ARGUMENTS.get(frame.f_code)
        if arguments is not None:
            yield from (arguments(frame.f_locals) or {}).items()
        frame = frame.f_back


def _argument_holding(items):
    """The name of a differentiated argument of a running gradient that is ``items`` or holds it, or None."""
    for name, value in _running_arguments():
        if _inside(items, value):
            return name
    return None


def written_by_call(site, callee, *given):
    """Refuse a call the transform runs as written (``site``: a ``callee_writes.CallSite``, whose plan says what
    the function may write into, read from its source) when an object it may write into is, is inside or
    shares memory with a differentiated argument, or is an array (the adjoint may read it after the call)."""
    found = callable_code(callee)
    if found is None:
        _written_by_builtin(site, callee, given)
        return
    plan = site.plan(found)
    if plan is None:
        return
    if site.given_gradient:  # a method known only now (dense1.forward(x)): refused where it runs
        stores_given(site, found[0], plan)
    arguments = None
    for kind, where, steps, shown in plan.writes:
        if kind == GLOBAL:
            base = where[0].get(where[1], _NOTHING)
        elif kind == SELF:
            base = found[1]
        elif kind == GIVEN and type(where) is tuple:  # the objects *args or **kwargs collect: each wholly
            if arguments is None:
                arguments = list(_running_arguments(2))
            for obj in (part for i in where for part in _reachable(given[i])):
                _refuse_overlap(plan, obj, arguments, shown)
            continue
        elif kind == GIVEN:
            base = given[where]
        else:
            try:
                base = where.cell_contents
            except ValueError:
                continue
        if base is _NOTHING or base is None or isinstance(base, (int, float, complex, str, bytes, bool)):
            continue
        if steps and steps[-1] is WHOLLY:  # anywhere into the object the path reaches
            base, steps = follow(base, steps[:-1]), None
            if base is _NOTHING:
                continue
        exact = follow(base, steps) if steps is not None else _NOTHING
        if arguments is None:
            arguments = list(_running_arguments(2))
        for obj in ([exact] if exact is not _NOTHING else _reachable(base)):
            _refuse_overlap(plan, obj, arguments, shown)


def _refuse_overlap(plan, obj, arguments, shown):
    """Refuse ``obj``, which ``plan``'s function may write into, if it overlaps a differentiated argument or is
    an array."""
    name = _overlap(obj, arguments)
    if name is not None:
        raise TypeError(f"astgrad: {plan.name}(...) is run as written (its result carries no gradient), "
                        f"and it may write into the differentiated argument {name} ({shown}): the function "
                        "would read the new values, while the gradient is counted for the old ones. Pass "
                        "the values in and return the new ones (x = f(x)), or write into a copy")
    if isinstance(obj, np.ndarray):
        raise TypeError(f"astgrad: {plan.name}(...) is run as written (its result carries no gradient), and "
                        f"it may write into an array ({shown}) whose values the adjoint may read after the "
                        "call. Give it a copy (f(a.copy())), return the new values and use them (a = f(a)), "
                        "or call the function outside the differentiated one")


def stores_given(site, fn, plan, source=None):
    """Refuse a call run as written that is given a value carrying a gradient and may store anything: what it
    stores may be computed from that value (``self.output = x @ self.W``), and read back later (``layer.output``)
    it would count as a constant, a zero gradient.  ``source``: raise the located error now (transform time)."""
    storing = [shown for *_, shown in (plan.writes if plan is not None else ()) if not _stores_text(shown)]
    if not storing:
        return  # log.append(f"mean {np.mean(x)}"): no string carries a gradient
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "the function")
    message = (f"{name}(...) in `{site.given_gradient}` is run as written (its result is not used), it is given "
               f"a value that carries a gradient, and it stores values ({storing[0]}) that may be computed "
               f"from it; read back later they would count as constants, so the gradient through them would be lost")
    hint = ("Return the values from the function and use its result (astgrad then differentiates it), "
            "or call it outside the differentiated function.")
    if source is not None:
        raise source.error(site.node, message, hint, UnsupportedSyntaxError)
    raise TypeError(f"astgrad: {message}. {hint}")


def _stores_text(shown) -> bool:
    """Whether the write ``shown`` (``file:line: statement``) surely stores strings (f-strings, ``str(...)``,
    ``"%s" % v``) or constants: values that carry no gradient."""
    try:
        tree = ast.parse(shown.split(": ", 1)[-1].strip())
    except SyntaxError:
        return False
    stmt = tree.body[0] if len(tree.body) == 1 else None
    values: list = []
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        values = [stmt.value]
    elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        values = list(stmt.value.args) + [k.value for k in stmt.value.keywords]
    else:
        return False
    return bool(values) and all(_text(v) for v in values)


def _text(node) -> bool:
    if isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("str", "repr", "format")


#: builtins that only read what they are given and keep no reference to it (fresh_results adds the iterators)
READ_ONLY_BUILTINS = frozenset({print, len, hasattr, callable, isinstance, issubclass, type, id, repr, str, bool, int,
                                 float, abs, min, max, sum, round})


def _written_by_builtin(site, callee, given):
    """A callable without Python source (a C method, ``rng.shuffle(G)``, ``G.__setitem__(0, v)``) may write into
    its object and what it is given: refuse those that are a global's (``site.outside``) and overlap a
    differentiated argument or are arrays."""
    if callee in READ_ONLY_BUILTINS:
        return  # hasattr(a, 'shape'), callable(a): they read what they are given and keep nothing
    owner = getattr(callee, "__self__", None)
    if (owner is None or isinstance(owner, types.ModuleType)) and site.only_reads(callee):
        return  # a numpy function or a builtin that only reads (a method of an object may change it: rng.shuffle)
    objects = [owner if not isinstance(owner, types.ModuleType) else None, *given]
    name = getattr(callee, "__qualname__", None) or getattr(callee, "__name__", None) or type(callee).__name__
    if site.given_gradient and isinstance(owner, (list, dict, set)) or site.given_gradient and any(site.outside):
        # KEPT.append(x * 2.0): the value is kept where the function may read it back as a constant
        raise TypeError(f"astgrad: {name}(...) in `{site.given_gradient}` is run as written (it has no gradient "
                        f"rule and its result is not used), it is given a value that carries a gradient, and it may "
                        f"keep it in an object outside the function; read back later it would count as a constant, "
                        f"so the gradient through it would be lost. Build the list in the function (lst = []; "
                        f"lst.append(v)) or return the value, or call it outside the differentiated function")
    arguments = None
    for obj, outside in zip(objects, site.outside):
        if not outside or obj is None or isinstance(obj, (int, float, complex, str, bytes, bool, tuple)):
            continue
        if arguments is None:
            arguments = list(_running_arguments(3))
        holder = _overlap(obj, arguments)
        if holder is not None or isinstance(obj, np.ndarray):
            what = f"the differentiated argument {holder}" if holder is not None else "an array the function does not own"
            raise TypeError(f"astgrad: {name}(...) is run as written (it has no gradient rule and its result is "
                            f"not used), and it may write into {what}, which astgrad cannot follow: the adjoint "
                            "would read the values as changed. Call it outside the differentiated function, or on "
                            "a copy")


_NOTHING = object()


#: where a root object is found when the check runs: a global (``(globals, name)``), a closure cell, ``self`` of
#: the bound method the caller calls, or the i-th object the caller's check is given (an argument of the call)
GLOBAL, CELL, SELF, GIVEN = "global", "cell", "self", "given"
#: the last step of a path written into anywhere (given to a function not read, a method not known)
WHOLLY = ("wholly", None)


def callable_code(obj):
    """``(function, self)`` of a Python callable whose source a call runs, or None (a builtin, a C method)."""
    if isinstance(obj, types.FunctionType):
        return obj, None
    if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
        return obj.__func__, obj.__self__
    call = inspect.getattr_static(type(obj), "__call__", None)  # the class's own, found as Python finds it
    if isinstance(call, types.FunctionType) and not isinstance(obj, type):
        return call, obj
    return None


def follow(value, steps, missing=_NOTHING):
    """The object at ``steps`` from ``value``, or ``missing`` where a step fails."""
    for how, key in steps:
        try:
            value = getattr(value, key) if how == "attr" else value[key]
        except Exception:
            return missing
    return value


def _reachable(value, limit=10000):
    """``value`` and what its items and attributes hold, each once (cycles, shared objects), at most ``limit``."""
    seen: set = set()
    work = [value]
    while work and len(seen) < limit:
        obj = work.pop()
        if id(obj) in seen or obj is None or isinstance(obj, (int, float, complex, str, bytes, bool)):
            continue
        seen.add(id(obj))
        yield obj
        if type(obj) is dict or isinstance(obj, dict):
            work.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            work.extend(obj)
        elif not isinstance(obj, (np.ndarray, np.generic, type)) and isinstance(getattr(obj, "__dict__", None), dict):
            work.extend(vars(obj).values())


def _overlap(obj, arguments):
    """The name of a differentiated argument that is ``obj``, holds it, or shares memory with it, or None."""
    for name, value in arguments:
        for part in _reachable(value):
            if part is obj or isinstance(obj, np.ndarray) and isinstance(part, np.ndarray) and \
                    np.may_share_memory(obj, part):
                return name
    return None


def _inside(items, value):
    if value is items:
        return True
    if type(value) is dict:
        return any(_inside(items, v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_inside(items, v) for v in value)
    if _trees.is_object(value):  # a dataclass's fields, a registered class's children
        return any(_inside(items, v) for v in _trees.children(value)[0])
    return False
