"""Turn generated trees into source text, and source into functions.

Comments cannot live in an AST, so the passes insert marker statements
(``__comment_3__``) that are replaced by ``# grad of line N: ...`` after
astor renders the module.  The text is registered in ``linecache`` under a
pseudo-filename before compiling, so tracebacks and pdb show the generated
lines; the entry goes when the code's owner is freed (``drop_lines_with``).
"""

from __future__ import annotations

import linecache
import re
import weakref

from . import compat
from .compat import gast

_MARKER = re.compile(r"^(\s*)__comment_(\d+)__$", re.MULTILINE)


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


def render(functions, comments, header) -> str:
    module = compat.make("Module", body=list(functions), type_ignores=[])
    text = compat.to_source(module)
    text = _MARKER.sub(lambda m: f"{m.group(1)}# {comments[int(m.group(2))]}", text)
    text = re.sub(r"\n\n\ndef ", "\n\n\ndef ", text)
    return "".join(f"# {printable(line)}\n" for line in header) + text


def printable(text: str) -> str:
    """``text`` on one line: a line break in a name (``f.__qualname__``) cannot end a comment early."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def compile_source(source: str, filename: str, namespace) -> str:
    """Execute ``source`` into ``namespace``, registered for tracebacks and pdb.

    Returns the filename used: ``filename``, or ``filename`` numbered (``#2``)
    when a live entry has it (the same function transformed twice, such as two
    closures of one ``def``), so each text keeps its own lines.
    """
    filename = _unused(filename)
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    return filename


def drop_lines_with(owner, filename: str) -> None:
    """Forget ``filename``'s lines in ``linecache`` once ``owner`` (what runs the code) is freed."""
    weakref.finalize(owner, _drop, filename, linecache.cache[filename])


def _drop(filename, entry):
    if linecache.cache.get(filename) is entry:
        del linecache.cache[filename]


def _unused(filename: str) -> str:
    number, name = 1, filename
    while name in linecache.cache:
        number += 1
        name = f"{filename[:-1]} #{number}>"
    return name
