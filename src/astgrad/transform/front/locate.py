"""Find the source text of the code object that runs, or refuse.

``inspect.getsource`` reads a file as it is now, follows ``__wrapped__`` to
the function a decorator wrapped, and cannot tell two lambdas on one line
apart.  Any of these would differentiate code other than the code that runs.
Here the text is found from the function's own code object: the file's
current text (as ``linecache`` gives it to tracebacks) is compiled whole,
the code object compiled at the function's first line is compared with
``f.__code__`` (bytecode, constants, names, line numbers), and the syntax
node is picked by line and, for a lambda, by column (where Python records
none, Python 3.10 or ``-X no_debug_ranges``, by compiling the file again
with each lambda of the line moved to lines of its own).  A file edited since
import, or a second notebook cell registered under the same name, gives a
different code object: refused, never differentiated.
"""

from __future__ import annotations

import __future__
import ast
import inspect
import linecache
import sys
import types
from typing import Any

from ..ir.errors import TransformError

_FUTURE_FLAGS = 0  # the __future__ imports that still change compilation (annotations, not nested_scopes)
for _feature in (getattr(__future__, name) for name in __future__.all_feature_names):
    if _feature.getMandatoryRelease() is None or _feature.getMandatoryRelease() > sys.version_info:
        _FUTURE_FLAGS |= _feature.compiler_flag

_COMPILED: dict = {}  # (filename, rewritten) -> (text, flags, tree, module code); recent files
_PYTEST_REWRITE = "_pytest.assertion.rewrite"
_KEEP = 8


class Located:
    """A function's syntax node in its file's tree, with the file's lines."""

    def __init__(self, filename, lines, node, class_name):
        self.filename = filename
        self.lines = lines  # the whole file, as linecache holds it
        self.node = node  # an ``ast`` FunctionDef or Lambda, at the file's own lines and columns
        self.class_name = class_name  # the innermost class around it: Python mangles ``__x`` there


def locate(fn) -> Located:
    """The syntax node that compiles to ``fn.__code__``; TransformError when there is none."""
    code = fn.__code__
    filename = code.co_filename
    name = getattr(fn, "__qualname__", code.co_name)
    linecache.checkcache(filename)
    module_globals = fn.__globals__ if isinstance(getattr(fn, "__globals__", None), dict) else None
    lines = linecache.getlines(filename, module_globals)
    if not lines:
        raise TransformError(
            f"cannot read the source of {name}: the file {filename} is not available", filename,
            code.co_firstlineno, hint="Define the function in a file (not in an interactive prompt or with exec).")
    rewriters = [None]
    if module_globals and "@pytest_ar" in module_globals and _PYTEST_REWRITE in sys.modules:
        rewriters.append(sys.modules[_PYTEST_REWRITE].rewrite_asserts)  # as pytest compiled a test module
    text, flags = "".join(lines), code.co_flags & _FUTURE_FLAGS
    for rewrite in rewriters:
        tree, module_code = _compiled(filename, text, flags, rewrite)
        compiled = [c for c in _code_objects(module_code, code.co_firstlineno) if c.co_name == code.co_name]
        if tree is not None and any(_same_code(c, code) for c in compiled):
            break
    else:
        raise _stale(name, filename, code.co_firstlineno, lines)
    parents = _covering(tree, code.co_firstlineno)
    if code.co_name == "<lambda>":
        return _lambda(code, parents, lines, compiled, name, lambda node: _moved(node, text, flags, rewrite, code))
    for node in parents:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name \
                and _first_line(node) == code.co_firstlineno:
            return Located(filename, lines, node, _class_around(node, parents))
    raise _stale(name, filename, code.co_firstlineno, lines)


def _lambda(code, parents, lines, compiled, name, compiles_to_code):
    """The lambda at ``code``'s line and column whose own compiled code equals ``code``.

    Without columns, the lambda of the line that ``compiles_to_code`` (compiled
    on lines of its own): any such lambda is code that runs exactly as ``code``.
    """
    lambdas = [n for n in parents if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    if _spots(code):
        node = _pick(code, lambdas)
        found = node is not None and any(_pick(c, lambdas) is node and _same_code(c, code) for c in compiled)
    elif len(lambdas) == 1 or lambdas and all(_same_code(c, code) for c in compiled):
        node, found = lambdas[0], any(_same_code(c, code) for c in compiled)
    else:
        node = next((n for n in lambdas if compiles_to_code(n)), None)
        found = node is not None
    if not found:
        raise _stale(name, code.co_filename, code.co_firstlineno, lines)
    return Located(code.co_filename, lines, node, _class_around(node, parents))


def _covering(tree, line) -> dict:
    """Each node whose lines include ``line``, mapped to its parent: the paths down to that line."""
    parents = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if hasattr(child, "lineno") and not _first_line(child) <= line <= (getattr(child, "end_lineno", None) or child.lineno):
                continue
            parents[child] = node
            stack.append(child)
    return parents


def _class_around(node, parents):
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.ClassDef):
            return node.name
    return None


def _pick(code, lambdas):
    """The innermost of ``lambdas`` whose body holds every instruction of ``code`` (by column)."""
    spots = _spots(code)
    holding = [n for n in lambdas if all(_inside(n.body, p) for p in spots)]
    return max(holding, key=lambda n: (n.body.lineno, n.body.col_offset), default=None)


def _spots(code) -> list:
    """Positions (line, end line, column, end column) of ``code``'s instructions that have a column.

    Empty on Python 3.10, whose code objects record lines only (``co_positions`` is 3.11's).
    """
    positions = getattr(code, "co_positions", None)
    if positions is None:
        return []
    return [p for p in positions() if p[2] is not None and (p[2], p[3]) != (0, 0)]


def _moved(node, text, flags, rewrite, code) -> bool:
    """Whether the lambda ``node`` compiles to ``code``, told apart from its line's other lambdas without columns.

    The file is parsed again and ``node`` (every node inside it) moved past the
    file's last line; compiled, the code object that starts there is the
    lambda's own, compared with ``code`` line for line after the move.
    """
    shift = text.count("\n") + 2
    tree = ast.parse(text, code.co_filename)
    span = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
    for lam in [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]:
        if (lam.lineno, lam.col_offset, lam.end_lineno, lam.end_col_offset) == span:
            for inner in ast.walk(lam):
                if hasattr(inner, "lineno"):
                    located: Any = inner  # an expression, statement, argument or keyword: it has a position
                    located.end_lineno = (located.end_lineno or located.lineno) + shift
                    located.lineno += shift
    if rewrite is not None:
        rewrite(tree, text.encode("utf-8"), code.co_filename)
    own = next(_code_objects(_compile(tree, code.co_filename, flags), node.lineno + shift), None)
    return own is not None and _same_code(own, code, shift)  # the first found is the outermost: the lambda's own


def _inside(node, position) -> bool:
    line, end_line, col, end_col = position
    return (node.lineno, node.col_offset) <= (line, col) and (end_line, end_col) <= (node.end_lineno, node.end_col_offset)


def _first_line(node) -> int:
    """A statement's first line: its first decorator's, if it has any."""
    decorators = getattr(node, "decorator_list", None)
    return decorators[0].lineno if decorators else node.lineno


def _stale(name, filename, line, lines):
    text = lines[line - 1].rstrip("\n") if 0 < line <= len(lines) else ""
    return TransformError(
        f"the source of {name} no longer matches the code that runs (the file was edited since it was "
        f"imported, another source was registered under the name {filename}, or an import hook compiled "
        f"something other than the file's text)", filename, line, 0, text,
        hint="Reload the module (importlib.reload) or run the cell that defines the function again, "
             "then take the gradient of the new function.")


def _compiled(filename, text, flags, rewrite=None):
    """The file's tree and module code object; None when the text no longer compiles.

    ``rewrite`` is pytest's assertion rewriter, for a test module pytest compiled itself.
    """
    key = (filename, rewrite is not None)
    cached = _COMPILED.get(key)
    if cached is not None and cached[0] == text and cached[1] == flags:
        return cached[2:]
    try:
        tree = ast.parse(text, filename)
        compiled_tree = tree
        if rewrite is not None:  # rewrites the asserts in place: our tree keeps the user's text
            compiled_tree = ast.parse(text, filename)
            rewrite(compiled_tree, text.encode("utf-8"), filename)
    except (SyntaxError, ValueError):
        tree = compiled_tree = None
    code = tree and _compile(compiled_tree, filename, flags)
    tree = tree if code else None
    if len(_COMPILED) >= _KEEP:
        del _COMPILED[next(iter(_COMPILED))]
    _COMPILED[key] = (text, flags, tree, code)
    return tree, code


def _compile(tree, filename, flags):
    """The module code of ``tree``; None when it does not compile."""
    for extra in (0, ast.PyCF_ALLOW_TOP_LEVEL_AWAIT):  # notebooks compile cells with top-level await
        try:
            return compile(tree, filename, "exec", flags | extra, dont_inherit=True)
        except (SyntaxError, ValueError):
            pass
    return None


def _code_objects(code, line):
    """The code objects inside ``code`` that start on ``line`` (those that do not end before it, searched)."""
    for const in code.co_consts if code is not None else ():
        if isinstance(const, types.CodeType) and (const.co_firstlineno <= line):
            if const.co_firstlineno == line:
                yield const
            yield from _code_objects(const, line)


def _same_code(a, b, shift=0) -> bool:
    """Whether two code objects do the same: bytecode, constants, names, flags and line numbers.

    ``a`` may have been compiled ``shift`` lines below ``b`` (see ``_moved``).
    """
    if (a.co_code, a.co_names, a.co_varnames, a.co_freevars, a.co_cellvars, a.co_flags, a.co_argcount,
            a.co_posonlyargcount, a.co_kwonlyargcount, a.co_firstlineno - shift) != (
            b.co_code, b.co_names, b.co_varnames, b.co_freevars, b.co_cellvars, b.co_flags, b.co_argcount,
            b.co_posonlyargcount, b.co_kwonlyargcount, b.co_firstlineno):
        return False
    if [line if line is None else line - shift for _, _, line in a.co_lines()] != [line for _, _, line in b.co_lines()]:
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    return all(_same_const(x, y, shift) for x, y in zip(a.co_consts, b.co_consts))


def _same_const(x, y, shift=0) -> bool:
    if hasattr(x, "co_code") or hasattr(y, "co_code"):
        return hasattr(x, "co_code") and hasattr(y, "co_code") and _same_code(x, y, shift)
    if type(x) is not type(y):  # tells 1 from 1.0 and True
        return False
    if isinstance(x, tuple):  # keyword names of a call, for one: marshal's bytes depend on reference counts
        return len(x) == len(y) and all(_same_const(a, b) for a, b in zip(x, y))
    if isinstance(x, frozenset):
        return sorted(map(repr, x)) == sorted(map(repr, y))
    if isinstance(x, (float, complex)):  # tells 0.0 from -0.0; nan equals nan
        return repr(x) == repr(y)
    return x == y


def own_signature(fn) -> inspect.Signature:
    """``fn``'s own parameters, as its code takes them.

    ``inspect.signature`` reports the parameters of ``fn.__wrapped__`` (what
    ``functools.wraps`` points at) or of a ``__signature__`` attribute;
    neither is what a call of ``fn`` binds.
    """
    plain = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    plain.__kwdefaults__ = fn.__kwdefaults__
    return inspect.signature(plain)


def bound_arguments(op, source) -> dict:
    """``{parameter: atom}`` of ``op``, a call of a user function; a located error if the call cannot bind."""
    try:
        bound = own_signature(op.fn).bind(*op.args, **op.kwargs)
    except (TypeError, ValueError) as exc:
        raise source.error(op.node, f"cannot call {op.fn.__name__} this way: {exc}") from None
    return dict(bound.arguments)


def passed_functions(ctx, bound) -> tuple:
    """``(parameter, function)`` for the functions a call of a user function passes (``integrate(rhs, y0)``):
    a name the generated module binds to a callable at transform time (a global function, a partial, a
    bound method), or a parameter of the caller specialised on the function it holds (``ctx.callables``).
    The callee's variant is specialised on them, so its calls of that parameter are calls of the function."""
    found = []
    for param, atom in bound.items():
        name = getattr(atom, "id", None)
        if name is None:
            continue
        value = ctx.callables.get(name) if name in ctx.callables else dict.get(ctx.ns.globals, name)
        if value is not None and callable(value) and not isinstance(value, (type, types.ModuleType)):
            found.append((param, value))
    return tuple(found)


def in_wrapper(fn, error) -> TransformError:
    """``error``, raised in the code of a decorator's wrapper, saying so and what to do instead."""
    code = fn.__code__
    last = max((line for _, _, line in code.co_lines() if line is not None), default=code.co_firstlineno)
    if getattr(fn, "__wrapped__", None) is None or error.filename != code.co_filename \
            or not code.co_firstlineno <= error.lineno <= last:
        return error
    return type(error)(
        f"{error.reason}; this is the wrapper a decorator put around {fn.__qualname__}, which is the function "
        f"that runs, so it is what astgrad differentiates (never the function it wraps)",
        error.filename, error.lineno, error.col, error.source_line,
        (error.hint + "\n" if error.hint else "") + "To differentiate the undecorated function, pass it "
        "explicitly, e.g. grad(f.__wrapped__), or write the wrapper with named parameters.")


def bind_now(fn, signature, args, kwargs) -> inspect.BoundArguments:
    """``args`` and ``kwargs`` bound to ``signature`` with ``fn``'s defaults as they are at this call.

    Python reads ``fn.__defaults__`` and ``fn.__kwdefaults__`` at each call, so
    a default reassigned after definition (or after ``grad(fn)``) is the one
    used; never the literal in the source, never a copy taken earlier.
    """
    bound = signature.bind_partial(*args, **kwargs)
    given = bound.arguments
    positional = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    defaults = fn.__defaults__ or ()
    kwdefaults = fn.__kwdefaults__ or {}
    start = len(positional) - len(defaults)
    missing = []
    for i, name in enumerate(positional):
        if name not in given:
            if i >= start:
                given[name] = defaults[i - start]
            else:
                missing.append(name)
    for p in signature.parameters.values():
        if p.kind is p.KEYWORD_ONLY and p.name not in given:
            if p.name in kwdefaults:
                given[p.name] = kwdefaults[p.name]
            else:
                missing.append(p.name)
    if missing:
        raise TypeError(f"{fn.__qualname__}() missing {len(missing)} required argument"
                        f"{'s' if len(missing) > 1 else ''}: {', '.join(map(repr, missing))}")
    return bound
