"""Turn generated trees into source text, and source into functions.

Comments cannot live in an AST, so the passes insert marker statements
(``__comment_3__``) that are replaced by ``# grad of line N: ...`` after
astor renders the module.  The text is registered in ``linecache`` under a
stable pseudo-filename before compiling, so tracebacks and pdb show the
generated lines.
"""

from __future__ import annotations

import linecache
import re

from . import compat
from .compat import gast

_MARKER = re.compile(r"^(\s*)__comment_(\d+)__$", re.MULTILINE)


def marker(index: int):
    return compat.expr_stmt(compat.name(f"__comment_{index}__"))


def is_marker(stmt) -> bool:
    """Whether ``stmt`` is a comment marker made by ``marker``."""
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Name) \
        and stmt.value.id.startswith("__comment_")


def arguments(fn_def, ns, fn, *, first=(), seed=None, seed_default=None, keep_params=True):
    """An ``arguments`` node: ``first`` names, the user's parameters, then the seed."""
    original = fn_def.args
    args = [compat.make("Name", id=n, ctx=gast.Param()) for n in first]
    kwonly, kw_defaults, defaults = [], [], []
    if keep_params:
        args += [compat.make("Name", id=a.id, ctx=gast.Param()) for a in list(original.posonlyargs or []) + list(original.args)]
        values = list(fn.__defaults__ or ())
        defaults = [_default(node, value, ns, a) for node, value, a in
                    zip(original.defaults, values, original.args[len(original.args) - len(values):])]
        kwvalues = fn.__kwdefaults__ or {}
        for a, node in zip(original.kwonlyargs, original.kw_defaults):
            kwonly.append(compat.make("Name", id=a.id, ctx=gast.Param()))
            kw_defaults.append(None if node is None else _default(node, kwvalues.get(a.id), ns, a))
    if seed is not None:
        kwonly.append(compat.make("Name", id=seed, ctx=gast.Param()))
        kw_defaults.append(None if seed_default is None else compat.const(seed_default))
    return compat.make("arguments", args=args, posonlyargs=[], vararg=None, kwonlyargs=kwonly,
                       kw_defaults=kw_defaults, kwarg=None, defaults=defaults)


def _default(node, value, ns, param):
    if compat.is_literal(node):
        return compat.clone(node)
    return compat.name(ns.bind(value, f"{param.id}_default"))


def function_def(name, args, body):
    return compat.make("FunctionDef", name=name, args=args, body=body, decorator_list=[], returns=None)


def render(functions, comments, header) -> str:
    module = compat.make("Module", body=list(functions), type_ignores=[])
    text = compat.to_source(module)
    text = _MARKER.sub(lambda m: f"{m.group(1)}# {comments[int(m.group(2))]}", text)
    text = re.sub(r"\n\n\ndef ", "\n\n\ndef ", text)
    return "".join(f"# {line}\n" for line in header) + text


def compile_source(source: str, filename: str, namespace) -> None:
    """Execute ``source`` into ``namespace``, registered for tracebacks and pdb."""
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)
