"""What the Numba backend refuses, and how it says so: each refusal a TransformError at the user's line.

Before compiling (called by compiled.py's ``_numba_module``): a module that
reads a global's value at each call (Numba would freeze it), ``np.squeeze``
without an axis (the rank of its result depends on lengths), a call of a
function Numba cannot compile, recursion.  After Numba compiled or failed
to: its compile error (or an exception of its compiler that is not one of
its errors) at the generated line it names, and integer products in the
typed code (64 bits where Python's integers do not overflow).
"""

from __future__ import annotations

import os
import re

from ...transform.ir.compat import gast
from ...transform.ir.errors import TransformError
from ...transform.ir.trees import is_marker
from ...transform.runtime.origins import origins, user_line
from . import shaping

ADVICE = "use backend='numpy', or backend='auto' to fall back to it with a warning"


#: integer operations whose result can pass 2**63 from small operands (sums need operands near it)
_GROWING = {"mul", "pow", "lshift", "imul", "ipow", "ilshift"}


def check_integer_arithmetic(compiled, generated, fn) -> None:
    """Refuse compiled code that multiplies, raises to a power or shifts integers.

    Python's integers never overflow and Numba's are 64 bits: ``x * (n * n *
    n)`` with n = 2**22 is 0.0 compiled.  Which values are integers is known
    only once Numba typed the code, so this reads its typed statements.
    """
    from numba.core import ir, types
    for overload in compiled.overloads.values():
        annotation = overload.type_annotation
        if isinstance(annotation, str):  # read from the disk cache, written only once this check passed (held)
            continue
        lines = [stmt.loc.line for block in annotation.blocks.values() for stmt in block.body
                 if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                 and stmt.value.op in ("binop", "inplace_binop")
                 and getattr(stmt.value.fn, "__name__", "") in _GROWING
                 and isinstance(annotation.typemap.get(stmt.target.name), types.Integer)]
        for lineno in lines:
            origin = user_line(generated, lineno)
            filename, line, text = origin[:3] if origin else (*def_location(fn)[:2], "")
            raise TransformError("backend='numba': this line multiplies integers (or raises them to a power), "
                                 "which compiled code does in 64 bits where Python's integers do not "
                                 "overflow", filename, line, len(text) - len(text.lstrip()), text,
                                 hint=f"write float(n) for an integer that only scales a value, or {ADVICE}")


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def in_compiler(exc) -> bool:
    """Whether ``exc`` was raised while Numba compiled (its dispatcher's compile on the traceback), not by the
    compiled code running: machine code raises at the call, with no compiler frame between."""
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "_compile_for_args" and code.co_filename.endswith(os.path.join("numba", "core",
                                                                                             "dispatcher.py")):
            return True
        tb = tb.tb_next
    return False


def compiler_line(exc, generated):
    """The generated line Numba's compiler was at when it raised ``exc`` (the innermost frame holding a ``loc``
    in the generated file), or None."""
    found, tb = None, exc.__traceback__
    while tb is not None:
        loc = tb.tb_frame.f_locals.get("loc")
        filename, line = getattr(loc, "filename", None), getattr(loc, "line", None)
        if isinstance(line, int) and isinstance(filename, str) and (filename == generated.filename or os.path.isabs(
                generated.filename) and os.path.abspath(filename) == generated.filename):
            found = line
        tb = tb.tb_next
    return found


def compile_error(exc, generated, fn, lineno=None, internal=False) -> TransformError:
    """Numba's compile error as a TransformError at the user's line the failing generated line came from
    (``lineno``, the generated line, where the error's text does not name it; ``internal``, an exception of
    Numba's compiler that is not one of its errors, named by its type)."""
    text = _ANSI.sub("", str(exc))
    if internal:
        text = f"{type(exc).__name__} inside Numba's compiler" + (f": {text}" if text else "")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = next((line for line in lines if not line.startswith(("Failed in", "During:", "File "))), "")
    for match in re.finditer(r'File "([^"]*)", line (\d+)', text) if lineno is None else ():
        if match.group(1) == generated.filename or os.path.isabs(generated.filename) \
                and os.path.abspath(match.group(1)) == generated.filename:  # a cached file: Numba writes it relative
            lineno = int(match.group(2))
            break
    origin = user_line(generated, lineno) if lineno is not None else None
    source_lines = generated.source.splitlines()
    generated_line = source_lines[lineno - 1].strip() if lineno is not None and lineno <= len(source_lines) else ""
    message = f"backend='numba': Numba cannot compile the gradient of this line: {reason}"
    if "Cannot unify" in reason:
        message += (" (a variable holds a number on one path and an array on another, such as a gradient that "
                    "starts as 0.0 before a loop; Numba needs one type per variable)")
    elif "list.append" in reason:
        message += (" (the values saved on one stack are of different kinds, a number in one loop iteration or call "
                    "and an array in another; Numba's list holds one type)")
    hint = (f"(generated line {lineno}: {generated_line}; the whole module is the gradient's .source)\n"
            if generated_line else "") + ADVICE
    if origin is None:
        return TransformError(message, *def_location(fn), "", hint)
    filename, line, source_text, _ = origin
    return TransformError(message, filename, line, len(source_text) - len(source_text.lstrip()), source_text,
                          hint=hint)


def refuse_live_globals(functions, module, live) -> None:
    """Refuse a module that reads a global's (or closure cell's) value at each call: Numba would freeze it."""
    if not live:
        return
    found = origins(functions, module.comment_origins)
    statements = _statements(functions)
    for stmt, origin in zip(statements, found):
        own = [node for field, value in gast.iter_fields(stmt) if field not in _BLOCKS  # not nested statements
               for node in (value if isinstance(value, list) else [value]) if isinstance(node, gast.AST)]
        used = sorted({n.id for node in own for n in gast.walk(node) if isinstance(n, gast.Name) and n.id in live})
        if used and origin is not None:
            filename, line, text, _ = origin
            user = live[used[0]][1]
            raise TransformError(f"backend='numba': the gradient reads the global `{user}` when it runs; Numba "
                                 f"would compile in the value it has now and miss later changes", filename, line,
                                 len(text) - len(text.lstrip()), text,
                                 hint=f"pass `{user}` as an argument of the function, or {ADVICE}")
    user = live[sorted(live)[0]][1]
    raise TransformError(f"backend='numba': the gradient reads the global `{user}` when it runs; Numba would "
                         f"compile in the value it has now", hint=ADVICE)


_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def refuse_squeeze_without_axis(functions, module, namespace) -> None:
    """Refuse ``np.squeeze(x)`` without an axis where it is written: its result's rank depends on ``x``'s lengths.

    Numba types every variable with a rank when it compiles, from the
    arguments' ranks alone; which axes have length 1 is known only when the
    code runs.  With the axis written out the rank is known (shaping.py).
    """
    def resolve(node):
        if isinstance(node, gast.Name):
            return namespace.get(node.id)
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
            return getattr(namespace.get(node.value.id), node.attr, None)
        return None
    for stmt, origin in zip(_statements(functions), origins(functions, module.comment_origins)):
        own = [node for field, value in gast.iter_fields(stmt) if field not in _BLOCKS
               for node in (value if isinstance(value, list) else [value]) if isinstance(node, gast.AST)]
        if origin is None or not any(shaping.squeeze_without_axis(n, resolve) for node in own for n in gast.walk(node)):
            continue
        filename, line, text, _ = origin
        raise TransformError("backend='numba' does not compile np.squeeze without an axis: the rank of its result "
                             "depends on which axes have length 1, and Numba fixes every rank when it compiles",
                             filename, line, len(text) - len(text.lstrip()), text,
                             hint=f"name the axes, as in np.squeeze(x, axis=1) (or write x[:, 0]), or {ADVICE}")


#: the packages whose functions compiled code may call: Numba implements numpy's and math's, astgrad's helpers
#: have implementations (helpers.py), builtins such as range and len Numba knows
_COMPILED_PACKAGES = frozenset({"numpy", "math", "cmath", "builtins", "astgrad", "numba", "operator"})


def refuse_foreign_calls(functions, module, namespace) -> None:
    """Refuse, at the user's line, a call Numba cannot make from compiled code: a function of a package it
    does not implement (scipy's ``gammaln``, ``norm.cdf``, ``logsumexp``, ``cho_factor``), or a call the
    gradient runs as written (``rng.standard_normal(n)``, a function of the user's it does not differentiate),
    which the numpy backend checks in Python before it runs, on the run's values."""
    from ...transform.runtime import checks
    for stmt, origin in zip(_statements(functions), origins(functions, module.comment_origins)):
        own = [node for field, value in gast.iter_fields(stmt) if field not in _BLOCKS
               for node in (value if isinstance(value, list) else [value]) if isinstance(node, gast.AST)]
        calls = [n for node in own for n in gast.walk(node) if isinstance(n, gast.Call)
                 and isinstance(n.func, gast.Name) and n.func.id in namespace]
        reason = None
        for call in calls:
            obj = namespace[call.func.id]
            if obj is checks.written_by_call and len(call.args) >= 2:
                reason = (f"it calls `{_dotted(call.args[1])}` as written (without its gradient), which Numba "
                          "cannot compile: the numpy backend checks such a call in Python before it runs it",
                          "compute the value outside the function and pass it as an argument")
                break
            package = _package(obj)
            if package is not None and package not in _COMPILED_PACKAGES:
                where = f"from {package}" if package != "?" else "(a ufunc that is not numpy's)"
                reason = (f"it calls `{getattr(obj, '__qualname__', call.func.id)}` {where}, which Numba "
                          "cannot call from compiled code", "")
                break
        if reason is None:
            continue
        if origin is None:
            raise TransformError(f"backend='numba' cannot compile this gradient: {reason[0]}", hint=ADVICE)
        filename, line, text, _ = origin
        raise TransformError(f"backend='numba' cannot compile the gradient of this line: {reason[0]}", filename,
                             line, len(text) - len(text.lstrip()), text,
                             hint=f"{reason[1]}, or {ADVICE}" if reason[1] else ADVICE)


def _package(obj):
    """The top-level package ``obj`` (a function, a method, a ufunc) comes from, or None where not known."""
    import numpy as np
    if isinstance(obj, np.ufunc):
        return "numpy" if getattr(np, obj.__name__, None) is obj else "?"
    if isinstance(obj, (type, int, float, complex, str, tuple)) or obj is None:
        return None
    owner = getattr(obj, "__self__", None)
    name = getattr(obj, "__module__", None) or getattr(type(owner), "__module__", None)
    return name.split(".")[0] if isinstance(name, str) else None


def _dotted(node) -> str:
    if isinstance(node, gast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, gast.Name) else "the function"


def refuse_recursion(functions, module) -> None:
    """Refuse a module whose callees call themselves (directly or round a cycle), at the recursive call.

    A callee's forward and backward functions are inlined into the entry or
    compiled apart and called (``callees.returned_saves``); either way Numba
    types them from the calls it sees, which a recursive function cannot be.
    """
    if len(functions) == 1:
        return
    names = {f.name for f in functions}
    calls = {f.name: {n.func.id for n in gast.walk(f) if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                      and n.func.id in names} for f in functions}
    recursive = {name for name in names if name in _reachable(calls, name)}
    if not recursive:
        return
    owner = None
    for stmt, origin in zip(_statements(functions), origins(functions, module.comment_origins)):
        if isinstance(stmt, gast.FunctionDef):
            owner = stmt.name
            continue
        if owner not in recursive or isinstance(stmt, _COMPOUND) or origin is None:
            continue
        called = [n.func.id for n in gast.walk(stmt) if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                  and n.func.id in recursive and owner in _reachable(calls, n.func.id) | {n.func.id}]
        if called:
            filename, line, text, _ = origin
            raise TransformError(f"backend='numba' does not compile gradients through recursive calls (here "
                                 f"`{called[0].split('_', 1)[1]}`): the called functions are compiled with the "
                                 f"gradient, typed from their calls, and a recursive one cannot be", filename, line,
                                 len(text) - len(text.lstrip()), text,
                                 hint=f"write the recursion as a loop, or {ADVICE}")
    raise TransformError("backend='numba' does not compile gradients through recursive calls", hint=ADVICE)


def _reachable(calls, start) -> set:
    """The functions ``start`` calls, directly or through others."""
    seen: set = set()
    todo = list(calls[start])
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(calls[name])
    return seen


_COMPOUND = (gast.For, gast.While, gast.If)


def _statements(functions) -> list:
    """Every statement in source order, as ``origins.origins`` counts them (markers left out)."""
    out: list = []

    def block(stmts):
        for s in stmts:
            if is_marker(s):
                continue
            out.append(s)
            for field in _BLOCKS:
                block(getattr(s, field, None) or [])
    block(functions)
    return out


def def_location(fn) -> tuple[str, int, int]:
    """File, first line and column 0 of ``fn``'s ``def``."""
    code = fn.__code__
    return code.co_filename, code.co_firstlineno, 0
