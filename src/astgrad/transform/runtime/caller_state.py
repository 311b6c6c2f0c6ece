"""Writes into a dict or object the caller keeps: ``bn_param["running_mean"] = v``, ``layer.x = x``.

The generated code runs such a write into the caller's dict, in place (``front/caller_state``), and
carries the gradients of the items the function reads back through the parameter, by key; an attribute
is set (``put_attribute``) where nothing reads it back.  That is the gradient of the code that runs
while the function reaches the caller's object by that one parameter only: ``caller_dict``, the
function's first statement (and each caller's, before a call it passes the object down to), refuses it
when another argument, a global or closure variable the generated code reads, or one that the user's
function or what it calls reads (``_named_by``: a helper run as written), is that object or holds it
(a read through the other route would not carry the written value's gradient).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import types

import numpy as np

from .checks import _reachable

__all__ = ["caller_dict", "put_attribute", "put_kept", "repeating"]

#: the name of a transformation running the function more than once for one call of its own (jacobian)
_REPEATING: contextvars.ContextVar = contextvars.ContextVar("astgrad_repeating", default=None)


@contextlib.contextmanager
def repeating(name):
    """While ``name`` (``jacobian``, ``jacfwd``, ...) runs generated code once per row or column, a write into
    the caller's dict is refused: one call of the function writes once."""
    token = _REPEATING.set(name)
    try:
        yield
    finally:
        _REPEATING.reset(token)


def caller_dict(obj, name, others, text, function=None):
    """Refuse ``obj``, the caller's ``name`` that ``text`` (``name["key"] = ...``, ``name.attr = ...``) writes
    into, if it is a dict or an object that ``others`` (the other arguments), what the generated module reads,
    or its own items or attributes also reach.  Anything else is left to ``put_kept`` and ``put_attribute``:
    the write may not run for these inputs."""
    if type(obj) is dict:
        held = list(obj.values())
    elif _plain_object(obj):
        held = list(vars(obj).values())
    else:
        return
    outside = sys._getframe(1).f_globals
    routes = [(f"the argument {other_name}", value) for other_name, value in others.items()]
    routes += [(f"the global or closure variable {key}", value) for key, value in _outside(outside)]
    if function is not None:  # what a function run as written (not transformed) may read: helper() reading G
        routes += [(f"the global or closure variable {key} of {where}", value)
                   for key, value, where in _named_by(function)]
    routes += [(f"{name} itself (an item or attribute holds it)", value) for value in held]
    for where, value in routes:
        if any(part is obj for part in _reachable(value)):
            raise TypeError(f"astgrad: `{text}` writes into {name}, which the function also reaches through "
                            f"{where}; the gradient follows what it holds only through {name}, so a read or write "
                            f"the other way would be missed. Pass the {'dict' if type(obj) is dict else 'object'} "
                            f"once, and only as an argument")


def put_kept(items, index, value, name, text):
    """``items[index] = value`` (``text``) into the caller's ``name``, in place, as numpy runs it; refused for
    anything but a dict (a write into an array or another object is not run into the caller's)."""
    if type(items) is not dict:
        raise TypeError(f"astgrad: `{text}` writes into the {type(items).__name__!r} given as {name}; astgrad "
                        f"runs such writes into the caller's object for a dict only. Pass a dict, or return the "
                        f"value (has_aux=True returns it beside the gradient) and store it outside")
    repeated = _REPEATING.get()
    if repeated is not None:
        raise TypeError(f"astgrad: `{text}` writes into the caller's {name}, and astgrad.{repeated} runs the "
                        f"function once per row or column of its result, so the dict would be written that many "
                        f"times where one call writes once (and each run would read the last one's values). Take "
                        f"the derivative with grad, value_and_grad, vjp or jvp, or return the value (has_aux=True) "
                        f"instead of writing it")
    items[index] = value
    return items


def put_attribute(obj, attr, value, name, text):
    """``obj.attr = value`` (``text``) on the caller's ``name``, in place, as Python runs it; refused for
    what is not a plain object (an array, a container, a class, a module) or whose class runs code of its
    own for the store (a property's setter, ``__setattr__``), and under a transformation that runs the
    function once per row or column."""
    if not _plain_object(obj):
        raise TypeError(f"astgrad: `{text}` sets an attribute of the {type(obj).__name__!r} given as {name}; "
                        f"astgrad runs such writes into the caller's object for an instance of a class of plain "
                        f"attributes only. Return the value (has_aux=True returns it beside the gradient) and "
                        f"store it outside")
    kind = type(obj)
    if kind.__setattr__ is not object.__setattr__ or hasattr(getattr(kind, attr, None), "__set__"):
        raise TypeError(f"astgrad: `{text}`: {kind.__qualname__} runs code of its own to set {attr} (a property "
                        f"or __setattr__), which may read or store more than astgrad follows. Set a plain "
                        f"attribute, or return the value (has_aux=True) and store it outside")
    repeated = _REPEATING.get()
    if repeated is not None:
        raise TypeError(f"astgrad: `{text}` writes into the caller's {name}, and astgrad.{repeated} runs the "
                        f"function once per row or column of its result, so the object would be written that many "
                        f"times where one call writes once. Take the derivative with grad, value_and_grad, vjp or "
                        f"jvp, or return the value (has_aux=True) instead of storing it")
    object.__setattr__(obj, attr, value)


def _plain_object(obj) -> bool:
    """An instance whose attributes live in its ``__dict__``: not an array, number, container, class or module."""
    return isinstance(getattr(obj, "__dict__", None), dict) and not isinstance(
        obj, (type, types.ModuleType, types.FunctionType, np.ndarray, dict, list, tuple))


def _named_by(function, limit=2000):
    """``(name, value, function name)`` of the data that ``function``'s code, and the code of the functions,
    methods and classes it names (transitively), may look up as a global or closure variable."""
    seen: set = set()
    work = [function]
    while work and len(seen) < limit:
        fn = work.pop()
        fn = getattr(fn, "__func__", fn)  # a bound method: its function
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, type):
            if fn.__module__ != "builtins":
                work += [v for k, v in vars(fn).items() if not k.startswith("__") or k == "__init__"]
            continue
        code = getattr(fn, "__code__", None)
        if not isinstance(code, types.CodeType):
            continue
        where = getattr(fn, "__qualname__", "a function")
        names: set = set()
        codes = [code]
        while codes:
            c = codes.pop()
            names.update(c.co_names)
            codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
        found = [(n, fn.__globals__[n]) for n in sorted(names) if n in fn.__globals__]
        found += [(n, cell.cell_contents) for n, cell in zip(code.co_freevars, fn.__closure__ or ())
                  if _filled(cell)]
        for key, value in found:
            if isinstance(value, types.ModuleType):  # cfg.G: the module's data the code names
                if not _library(value.__name__):
                    yield from ((f"{key}.{n}", v, where) for n in sorted(names)
                                if not callable(v := getattr(value, n, None)) and v is not None
                                and not isinstance(v, types.ModuleType))
            elif callable(value):
                if value is not function and not _library(getattr(value, "__module__", None) or "builtins"):
                    work.append(value)
            else:
                yield key, value, where


#: the roots of modules whose code reads no data of the user's: numpy's functions, the standard library's
_LIBRARIES = frozenset({"numpy", "scipy", "astgrad", "torch", "jax", "numba", "dask"}) | frozenset(
    getattr(sys, "stdlib_module_names", ()))


def _library(module_name) -> bool:
    return module_name.split(".")[0] in _LIBRARIES


def _filled(cell) -> bool:
    """Whether a closure cell holds a value yet (``cell_contents`` of an empty one raises)."""
    try:
        return cell.cell_contents is not _filled
    except ValueError:
        return False


def _outside(namespace):
    """``(name, value)`` of the data a generated module reads from outside: what it bound at transform time
    and the globals and closure variables it looks up live (``back/namespace.LiveGlobals``)."""
    for key, value in dict.items(namespace):
        if not key.startswith("__") and not callable(value) and not isinstance(value, types.ModuleType):
            yield key, value
    for key in getattr(namespace, "live", {}):
        try:
            yield key, namespace[key]
        except (KeyError, TypeError):
            continue
