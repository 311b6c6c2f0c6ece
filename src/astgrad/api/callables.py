"""What ``grad`` accepts besides a function: bound methods, partials, callable objects.

Each is a Python function with some arguments fixed: ``obj.method`` fixes
``self``, ``functools.partial(f, a, k=1)`` fixes ``a`` and ``k``, an object
with a ``__call__`` method is that method bound to the object.  The
function is differentiated and the same arguments are bound to its
gradient, as constants: ``grad(obj.method)`` is
``MethodType(grad(type(obj).method, wrt="x"), obj)``.  ``wrt`` counts the
parameters the caller still passes, as ``inspect.signature`` shows them.
Anything else is refused with a TypeError that says what was given.
"""

from __future__ import annotations

import functools
import types

from ..transform.front.locate import own_signature
from ..transform.runtime.checkpoints import Checkpointed


def split(f, wrt, mode):
    """``(function, wrt, rebind)``: what to differentiate, and how to bind the gradient as ``f`` is bound."""
    if isinstance(f, types.FunctionType):
        return f, wrt, _same
    if isinstance(f, staticmethod):  # as found in a class's __dict__
        return split(f.__func__, wrt, mode)
    if isinstance(f, Checkpointed):  # checkpointing marks calls inside a differentiated function: here it is f
        return split(f.__wrapped__, wrt, mode)
    if isinstance(f, types.MethodType):
        params = _parameters(f.__func__, f, mode)
        if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
            raise TypeError(f"astgrad.{mode}: {f!r} has no parameter for the object it is bound to")
        names = _by_name(wrt, params[1:], params[:1], f, mode)
        fn, names, rebind = split(f.__func__, names, mode)
        return fn, names, lambda gradient: types.MethodType(rebind(gradient), f.__self__)
    if isinstance(f, functools.partial):
        params = _parameters(f.func, f, mode)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        fixed = positional[:len(f.args)]
        names = _by_name(wrt, [p for p in params if p not in fixed], fixed, f, mode)
        fn, names, rebind = split(f.func, names, mode)
        return fn, names, lambda gradient: functools.partial(rebind(gradient), *f.args, **f.keywords)
    call = getattr(type(f), "__call__", None)
    if not isinstance(f, type) and isinstance(call, types.FunctionType):
        return split(types.MethodType(call, f), wrt, mode)
    raise TypeError(f"astgrad.{mode} differentiates a Python function, a bound method, a functools.partial "
                    f"or an object whose class defines __call__ in Python; it was given {_describe(f)}. "
                    f"Differentiate a Python function that calls it (def f(x): return ...).")


def _same(gradient):
    return gradient


def _parameters(inner, f, mode) -> list:
    """The parameters a call of ``inner`` binds, as ``f`` sees them before fixing its own."""
    if isinstance(inner, types.FunctionType):
        return [p for p in own_signature(inner).parameters.values()
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if isinstance(inner, types.MethodType):
        return _parameters(inner.__func__, f, mode)[1:]
    if isinstance(inner, functools.partial):
        params = _parameters(inner.func, f, mode)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        return [p for p in params if p not in positional[:len(inner.args)]]
    split(inner, 0, mode)  # raises the TypeError for what is inside
    raise TypeError(f"astgrad.{mode}: cannot see the parameters of {_describe(inner)} inside {f!r}")


def resolve_wrt(wrt, names, owner) -> tuple[list, bool]:
    """The parameter names ``wrt`` means among ``names``, and whether it was one item (not a tuple or list).

    ``wrt`` is a position, a name, or a tuple or list of them; the one
    resolver every transformation uses, so ``grad``, ``jvp`` and the
    higher-order derivatives read ``wrt`` alike.  ``owner`` names the
    function in the errors.
    """
    single = not isinstance(wrt, (tuple, list))
    chosen: list = []
    for item in ([wrt] if single else list(wrt)):
        item = wrt_item(item, names, owner)
        if item not in names:
            raise ValueError(f"wrt={item!r}: {owner} has no parameter {item!r} (its parameters: {', '.join(names)})")
        if item in chosen:
            raise ValueError(f"wrt names {item!r} twice")
        chosen.append(item)
    if not chosen:
        raise ValueError("wrt must name at least one parameter")
    return chosen, single


def wrt_item(item, names, owner) -> str:
    """One entry of ``wrt``, a position among ``names`` or a name, as a name (a name is checked by the caller)."""
    if isinstance(item, bool) or not isinstance(item, (int, str)):
        raise TypeError(f"wrt must be a parameter position, a name or a tuple of them, got {item!r}")
    if isinstance(item, int):
        if not -len(names) <= item < len(names):
            raise ValueError(f"wrt={item}: {owner} takes {len(names)} parameters ({', '.join(names)})")
        return names[item]
    return item


def _by_name(wrt, params, fixed, f, mode):
    """``wrt`` (positions among ``params`` or names) as names, a tuple for a tuple."""
    names = [p.name for p in params]
    single = not isinstance(wrt, (tuple, list))
    chosen = []
    for item in ([wrt] if single else list(wrt)):
        item = wrt_item(item, names, repr(f))
        if item in [p.name for p in fixed]:
            raise ValueError(f"wrt={item!r}: {f!r} fixes {item!r} (it is a constant there); "
                             f"differentiate the function itself to vary it")
        chosen.append(item)
    return chosen[0] if single else tuple(chosen)


def _describe(f) -> str:
    if isinstance(f, type):
        return f"the class {f.__qualname__}"
    kind = type(f).__name__
    name = getattr(f, "__qualname__", None) or getattr(f, "__name__", None)
    return f"a {kind} {name}" if name else f"a {kind} object {f!r}"
