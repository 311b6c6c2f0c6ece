"""Building and rewriting generated trees: function definitions, comment markers, substitution.

Comments cannot live in an AST, so the passes insert marker statements
(``__comment_3__``) that back/emit.py replaces by ``# grad of line N: ...``
after rendering.  ``arguments`` and ``function_def`` build the signature of
a generated function from the user's; ``rewrite`` replaces subtrees in place.
"""

from __future__ import annotations

from . import compat
from .compat import gast

_AST = gast.AST


def marker(index: int):
    return compat.expr_stmt(compat.name(f"__comment_{index}__"))


def is_marker(stmt) -> bool:
    """Whether ``stmt`` is a comment marker made by ``marker``."""
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Name) \
        and stmt.value.id.startswith("__comment_")


def arguments(fn_def, ns, fn, *, first=(), seed=None, seed_default=None, keep_params=True, defaults=True):
    """An ``arguments`` node: ``first`` names, the user's parameters, then the seed.

    Defaults are ``fn``'s as they are now (``fn.__defaults__``, not the source's
    text), for a callee; an entry function gets none: its caller binds them
    at each call, as Python does.
    """
    original = fn_def.args
    args = [compat.make("Name", id=n, ctx=gast.Param()) for n in first]
    kwonly, kw_defaults, values = [], [], []
    if keep_params:
        positional = list(original.posonlyargs or []) + list(original.args)
        args += [compat.make("Name", id=a.id, ctx=gast.Param()) for a in positional]
        live = list(fn.__defaults__ or ())[-len(positional):] if defaults and positional else []
        values = [_default(value, ns, a) for a, value in zip(positional[len(positional) - len(live):], live)]
        kwvalues = (fn.__kwdefaults__ or {}) if defaults else {}
        for a in original.kwonlyargs:
            kwonly.append(compat.make("Name", id=a.id, ctx=gast.Param()))
            kw_defaults.append(_default(kwvalues[a.id], ns, a) if a.id in kwvalues else None)
    if seed is not None:
        kwonly.append(compat.make("Name", id=seed, ctx=gast.Param()))
        kw_defaults.append(None if seed_default is None else compat.const(seed_default))
    return compat.make("arguments", args=args, posonlyargs=[], vararg=None, kwonlyargs=kwonly,
                       kw_defaults=kw_defaults, kwarg=None, defaults=values)


def _default(value, ns, param):
    """A default as a literal when it is a plain number, string or None; else bound by name."""
    if _plain(value):
        return compat.tuple_([compat.const(v) for v in value]) if type(value) is tuple else compat.const(value)
    return compat.name(ns.bind(value, f"{param.id}_default"))


def _plain(value) -> bool:
    if type(value) is tuple:
        return all(type(v) is not tuple and _plain(v) for v in value)
    if type(value) in (int, float, complex):
        return value == value and abs(value) != float("inf")  # nan and inf have no literal
    return value is None or type(value) in (bool, str)


def function_def(name, args, body):
    return compat.make("FunctionDef", name=name, args=args, body=body, decorator_list=[], returns=None)


def rewrite(node, fn):
    """``node`` with every subtree for which ``fn`` returns a replacement replaced (in place)."""
    return _transform(node, fn)


def _transform(node, fn):
    new = fn(node)
    if new is not None:
        return new
    fields = node.__dict__
    for field, value in list(fields.items()):
        if value.__class__ is list:
            fields[field] = [_transform(v, fn) if isinstance(v, _AST) else v for v in value]
        elif isinstance(value, _AST):
            fields[field] = _transform(value, fn)
    return node
