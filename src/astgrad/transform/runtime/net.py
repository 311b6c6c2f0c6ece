"""The run-time net under the static write checks: arrays the gradient reads are read-only while it runs.

The static analysis (aliasing, callee_writes, runtime_checks) refuses the
writes it can see, with located messages.  It is a list, and numpy writes
through doors no list holds (a ufunc's positional out, ``copy=False``, a
bound method kept in a name, ``exec``, ``globals()``, a default argument, a
C function handed an array).  So a generated module whose code calls
anything astgrad cannot prove only reads (``doors``) runs under a net: for
the call's duration every array it is given (inside containers and
objects too) and every array it reads from outside (globals and closure
variables, looked up live; defaults and other objects bound at transform
time), with the arrays those are views of, has numpy's ``writeable`` flag
cleared; so has every array given to a primitive of the user's while that
primitive runs (``_holding``: values the function computed reach a door
only by being given to it).  A write into one then raises inside numpy,
and ``_guard`` turns that into a ``TypeError`` naming the user's line.  Flags go back as they
were in a ``finally``: an array already read-only is left alone, and an
array held by several calls at once (threads, re-entrant gradients) is
writeable again only when the last of them is done.  A module whose calls
all only read (the common case: rules, astgrad's helpers, generated
functions) has no net and pays nothing.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import threading
import types

import numpy as np

from ..ir.compat import gast
from .origins import user_line

__all__ = ["plan", "WriteIntoReadArray"]

#: builtins that only read what they are given (none of them calls a function it is given)
_READING_BUILTINS = frozenset(getattr(builtins, name) for name in (
    "len", "range", "enumerate", "zip", "isinstance", "float", "int", "complex", "bool", "abs", "min", "max",
    "sum", "round", "tuple", "list", "dict", "set", "frozenset", "reversed", "divmod", "pow", "type",
    "str", "repr", "slice", "iter", "all", "any", "id", "hash", "chr", "ord", "print", "issubclass", "format"))
#: methods astgrad's generated code calls on its own lists, dicts and stacks (none writes into an array); a
#: user object's method of one of these names is taken to be the list's or dict's
_READING_METHODS = frozenset({"append", "pop", "items", "keys", "values", "get", "copy", "index", "count"})
#: parameters through which a library function writes into what it is given
_WRITING_PARAMETERS = ("out", "overwrite_", "copy")


class WriteIntoReadArray(TypeError):
    """A write, during a generated gradient, into an array the gradient reads (caught by the net)."""


def plan(functions, namespace, generated, wrt=()):
    """The function that runs ``generated`` under the net, or None when its code calls no door.

    ``functions``: the module's gast function definitions; ``namespace``:
    its globals (a ``LiveGlobals``, or a plain dict where nothing is read live); ``wrt``: the differentiated
    parameters.
    The entry's other parameters handed by name to a call run for its effect
    are left writeable: the static checks let that call write into them
    (they carry no gradient and nothing read them before it).  Rebinds, in
    ``namespace``, each primitive of the user's the module calls by name
    to a wrapper holding what it is given (``_hold_given``).
    """
    entry_params = list(inspect.signature(generated.function).parameters)
    defined = {f.name for f in functions if isinstance(f, gast.FunctionDef)}
    doors = [call for fn in functions for call in _calls(fn) if _is_door(call, namespace, defined)]
    if not doors:
        return None
    _hold_given(doors, namespace)
    foreseen: set = set()
    for stmt in _nodes(functions[0], gast.Expr):
        if any(stmt.value is door for door in doors):
            found, callee = _callee(stmt.value, namespace, defined)
            if not found or callee is not None and _runs_for_effect(callee):
                foreseen.update(a.id for a in stmt.value.args
                                if isinstance(a, gast.Name) and a.id in entry_params and a.id not in wrt)
    bound = [value for name, value in dict.items(namespace) if not name.startswith("__") and _data(value)]
    live = list(getattr(namespace, "live", {}).values())  # a plain dict where nothing is read live
    return _guard(generated, [i for i, p in enumerate(entry_params) if p not in foreseen], foreseen, bound, live)


def _hold_given(doors, namespace) -> None:
    """Bind each primitive of the user's that the module calls by name to ``_holding`` of it (a value the
    function computed, saved for the adjoint, reaches such a call only by being given to it)."""
    from ... import rules
    for call in doors:
        name = call.func.id if isinstance(call.func, gast.Name) else None
        callee = dict.get(namespace, name) if name is not None else None
        if callee is not None and rules.find(callee) is not None and not getattr(callee, "__astgrad_holding__", False):
            dict.__setitem__(namespace, name, _holding(callee))


def _holding(callee):
    """``callee`` (a primitive with a rule) holding the arrays it is given read-only while it runs.

    It keeps ``callee``'s entry in the rule table (``__astgrad_primitive__``)
    and signature (``functools.wraps``), so code that transforms the
    generated module again (``hessian``) finds the same rule.
    """
    @functools.wraps(callee)
    def holding(*args, **kwargs):
        arrays: dict = {}
        for value in args:
            _collect(value, arrays)
        for value in kwargs.values():
            _collect(value, arrays)
        held = _hold(arrays.values())
        try:
            out = callee(*args, **kwargs)
        except Exception as exc:
            if held and _read_only(exc):
                exc.astgrad_held = True  # type: ignore[attr-defined]  # the module's guard turns it into the located refusal
            raise
        finally:
            _release(held)
        if held:
            _writeable_again(out, {id(a) for a in held})
        return out

    holding.__astgrad_primitive__ = getattr(callee, "__astgrad_primitive__", callee)  # type: ignore[attr-defined]  # as the table keys it
    holding.__astgrad_holding__ = True  # type: ignore[attr-defined]
    return holding


def _nodes(tree, kind):
    """The nodes of type ``kind`` in ``tree`` (``gast.walk`` without its generator per node: a third of the time)."""
    work = [tree]
    while work:
        node = work.pop()
        if type(node) is kind:
            yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                work.extend(v for v in value if type(v) not in _LEAVES and isinstance(v, gast.AST))
            elif type(value) not in _LEAVES and isinstance(value, gast.AST) and field != "ctx":
                work.append(value)


#: nodes that hold no call (most of a generated function's nodes): not walked into
_LEAVES = frozenset({gast.Name, gast.Constant, gast.Load, gast.Store, gast.Del})


def _calls(tree):
    return _nodes(tree, gast.Call)


def _callee(call, namespace, defined):
    """``(found, obj)``: whether the callable ``call`` calls is known here (a generated function, a name bound
    in the namespace, an attribute of a module), and that object (None for a generated function)."""
    func = call.func
    if isinstance(func, gast.Name):
        if func.id in defined:
            return True, None
        if dict.__contains__(namespace, func.id):
            return True, dict.__getitem__(namespace, func.id)
        return False, None  # a local (a bound method kept in a name) or a global read live
    if isinstance(func, gast.Attribute):
        path, base = [func.attr], func.value
        while isinstance(base, gast.Attribute):
            path.append(base.attr)
            base = base.value
        if isinstance(base, gast.Name) and dict.__contains__(namespace, base.id) \
                and isinstance(dict.__getitem__(namespace, base.id), types.ModuleType):
            obj = dict.__getitem__(namespace, base.id)
            for attr in reversed(path):
                obj = getattr(obj, attr, None)
            return True, obj
    return False, None


def _is_door(call, namespace, defined) -> bool:
    """Whether ``call`` (in generated code) may write into an array astgrad does not know it writes."""
    if any(isinstance(a, gast.Starred) for a in call.args) or _hands_on(call, namespace, defined):
        return True
    found, callee = _callee(call, namespace, defined)
    if found:
        return callee is not None and not _only_reads(callee, call)
    func = call.func  # a method: astgrad's own on its lists and stacks only read arrays
    return not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
                and func.attr in _READING_METHODS)


def _hands_on(call, namespace, defined) -> bool:
    """Whether ``call`` is given a callable, which it may call (``map``, a function given a callback)."""
    for arg in call.args:
        if isinstance(arg, gast.Name) and arg.id not in defined:
            value = dict.get(namespace, arg.id)
            if _callable(value) and value not in _READING_BUILTINS:
                return True
    return False


def _runs_for_effect(callee) -> bool:
    """Whether the static checks treat a statement calling ``callee`` as a call for its effect that may write
    into what it is given (one without a rule: ``rng.shuffle(idx)``), and so let it write into an argument."""
    from ... import rules
    return rules.find(callee) is None and callee not in _READING_BUILTINS and callee not in (exec, eval)


def _only_reads(obj, call) -> bool:
    """Whether calling ``obj`` as ``call`` does writes only astgrad knows of: a helper of astgrad's, a rule
    astgrad ships called with its inputs alone, or a builtin that only reads."""
    if obj is None:
        return False
    if obj in _READING_BUILTINS:
        return True
    if getattr(obj, "__astgrad_holding__", False):
        return False
    module = getattr(obj, "__module__", None) or ""
    if module.startswith("astgrad."):
        return True
    from ... import rules
    if rules.find(obj) is None or not rules.is_shipped(obj):
        return False
    if isinstance(obj, np.ufunc):
        return len(call.args) <= obj.nin and all(k.arg not in ("out", "where") for k in call.keywords)
    parameters = _PARAMETERS.get(obj, _PARAMETERS)
    if parameters is _PARAMETERS:
        try:
            parameters = _PARAMETERS[obj] = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            parameters = _PARAMETERS[obj] = None
    if parameters is None:  # math.log and min, max: no signature, no output argument
        return not call.keywords
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        names += ["*"] * len(call.args)
    given = names[:len(call.args)] + [k.arg or "**" for k in call.keywords]
    return len(given) == len(call.args) + len(call.keywords) and "**" not in given and not any(
        name.startswith(_WRITING_PARAMETERS) for name in given)


#: the parameters of each shipped primitive asked about (None: no signature), found once
_PARAMETERS: dict = {}


def _callable(value) -> bool:
    return callable(value) and not isinstance(value, (type, types.ModuleType))


def _data(value) -> bool:
    """Whether ``value``, bound in a generated namespace, is data that may hold arrays (a default, an object)."""
    return not (callable(value) or isinstance(value, (types.ModuleType, int, float, complex, str, bytes, bool))
                or value is None)


# -- run time ----------------------------------------------------------------------------------------------

_LOCK = threading.Lock()
#: id(array) -> [array, how many running calls hold it]: the arrays whose flag the net cleared
_HELD: dict = {}
#: arrays let go whose flag could not be set again yet (their base is still held): set when it is
_WAITING: list = []


def _guard(generated, positions, foreseen, bound, live):
    """``generated.function`` holding, while it runs, the arrays in its arguments (but at ``foreseen``'s
    names and at positions not in ``positions``), in ``bound`` objects and in the ``live`` places."""
    function = generated.function

    def guarded(*args, **kwargs):
        arrays: dict = {}
        for i in positions:
            if i < len(args):
                _collect(args[i], arrays)
        for name, value in kwargs.items():
            if name not in foreseen:
                _collect(value, arrays)
        for value in bound:
            _collect(value, arrays)
        for place, key in live:
            try:
                value = place.cell_contents if isinstance(place, types.CellType) else place[key]
            except (KeyError, ValueError):
                continue
            _collect(value, arrays)
        held = _hold(arrays.values())
        try:
            out = function(*args, **kwargs)
        except Exception as exc:
            if (held or getattr(exc, "astgrad_held", False)) and _read_only(exc):
                raise _refusal(generated, exc).with_traceback(exc.__traceback__) from None
            raise
        finally:
            _release(held)
        if held:
            _writeable_again(out, {id(a) for a in held})
        return out

    guarded.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]  # api reads the seed's name from it
    guarded.__qualname__ = guarded.__name__ = function.__name__
    return guarded


def _collect(value, arrays, limit=10000) -> None:
    """Every ndarray ``value`` is, holds (in containers and objects' attributes) or is a view of, by id."""
    if type(value) is np.ndarray:  # the common argument, without the walk
        while isinstance(value, np.ndarray):
            arrays[id(value)] = value
            value = value.base
        return
    if value is None or type(value) in _PLAIN:
        return
    seen: set = set()
    work = [value]
    while work and len(seen) < limit:
        obj = work.pop()
        if obj is None or id(obj) in seen or isinstance(obj, (int, float, complex, str, bytes, bool)):
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            while isinstance(obj, np.ndarray):
                arrays[id(obj)] = obj
                obj = obj.base
        elif isinstance(obj, dict):
            work.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            work.extend(obj)
        elif not isinstance(obj, _OPAQUE) and isinstance(getattr(obj, "__dict__", None), dict) \
                and not hasattr(obj, "__dask_graph__") \
                and not getattr(type(obj), "__astgrad_no_data__", False):  # a Dask collection: lazy, no flag; its
            # graph is not walked; nor is astgrad's own object that holds generated code and no user data
            work.extend(vars(obj).values())


_PLAIN = frozenset({int, float, complex, bool, str, bytes})
#: objects whose attributes are not the user's data
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, np.generic)


def _hold(arrays) -> list:
    """Clear the flag of each writeable array (or count one more holder of one held); those held, in order."""
    held = []
    with _LOCK:
        for array in arrays:
            entry = _HELD.get(id(array))
            if entry is not None:
                entry[1] += 1
            elif array.flags.writeable:
                try:
                    array.setflags(write=False)
                except ValueError:  # a subclass that refuses: not held
                    continue
                _HELD[id(array)] = [array, 1]
            else:
                continue  # read-only already, by its owner: left as it is
            held.append(array)
    return held


def _release(held) -> None:
    """One holder fewer of each array; the flag is set again on those no running call holds any more.

    Bases come after their views in ``held`` (``_collect``), so they are set
    first.  A view whose base another running call still holds cannot be
    set: it waits in ``_WAITING`` until a release can set it.
    """
    with _LOCK:
        freed = []
        for array in held:
            entry = _HELD[id(array)]
            entry[1] -= 1
            if not entry[1]:
                del _HELD[id(array)]
                freed.append(array)
        if not _WAITING:  # the common case: set each, bases first
            for array in reversed(freed):
                try:
                    array.setflags(write=True)
                except ValueError:
                    _WAITING.append(array)
            return
        pending = freed[::-1] + _WAITING
        _WAITING.clear()
        while pending:
            for array in pending:
                try:
                    array.setflags(write=True)
                except ValueError:
                    _WAITING.append(array)
            if len(_WAITING) == len(pending):
                break  # nothing more can be set now
            pending = _WAITING[:]  # set bases let views waiting on them go
            _WAITING.clear()


def _writeable_again(out, held_ids, limit=1000) -> None:
    """Views of held arrays made during the call and returned (a value, an aux) are read-only: make them
    writeable as a view made after the call would be."""
    if type(out) is np.ndarray and out.base is None or type(out) in _PLAIN:
        return  # a fresh gradient or a number: the common case
    seen: set = set()
    work = [out]
    while work and len(seen) < limit:
        obj = work.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, np.ndarray):
            if not obj.flags.writeable and _views_of(obj, held_ids):
                try:
                    obj.setflags(write=True)
                except ValueError:
                    pass
        elif isinstance(obj, (tuple, list)):
            work.extend(obj)
        elif isinstance(obj, dict):
            work.extend(obj.values())


def _views_of(array, held_ids) -> bool:
    base = array.base
    while isinstance(base, np.ndarray):
        if id(base) in held_ids:
            return True
        base = base.base
    return False


def _read_only(exc) -> bool:
    """Whether ``exc`` is numpy's (or a buffer's) refusal to write into a read-only array."""
    if not isinstance(exc, (ValueError, TypeError, BufferError)) or isinstance(exc, WriteIntoReadArray):
        return False
    text = str(exc)
    return "read-only" in text or "readonly" in text


def _refusal(generated, exc) -> WriteIntoReadArray:
    """The error for a write the net caught: where (the user's line the generated code was at) and what to do."""
    where = ""
    tb, lineno = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == generated.filename:
            lineno = tb.tb_lineno
        tb = tb.tb_next
    origin = user_line(generated, lineno) if lineno is not None else None
    if origin is not None:
        filename, line, text, _ = origin
        where = f" at {filename}:{line} (`{text.strip()}`)"
    return WriteIntoReadArray(
        f"astgrad: the differentiated function wrote{where} into an array the gradient reads (an argument, or an "
        f"array it reads from a global, a closure, a default or an object's attribute), through a door astgrad's "
        f"checks do not see; the gradient would be counted for the old values. astgrad holds those arrays "
        f"read-only while the gradient runs, so numpy refused the write ({exc}); they are writeable again now. "
        f"Write into a copy (a = a.copy() first) or compute new values and use them (a = np.maximum(a, 0.0))")


def held_now() -> int:
    """How many arrays the net holds read-only at this moment (for tests: 0 once every gradient returned)."""
    with _LOCK:
        return len(_HELD) + len(_WAITING)

