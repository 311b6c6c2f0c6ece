"""The generated module compiled by Numba, and the function that runs it.

``attach`` is the pipeline's backend hook (``build(backend=...)``): it takes
the finished numpy module, writes its Numba variant (lower.py), executes
that text and wraps each generated function in ``numba.njit``.  Numba
compiles a function at its first call with each new set of argument types
and keeps the result, so the gradient compiles once per signature.

What it cannot do is said, never hidden:

* before compiling, the module is refused when it reads a global's value at
  each call (numpy code sees a changed global weight; Numba would freeze
  the value it saw when it compiled);
* when Numba cannot compile the code (a numpy function it lacks, a Python
  object, a variable that is a number on one path and an array on
  another), the error names the user's line the generated line came from
  and Numba's reason;
* an exception raised by the compiled code at run time (a shape mismatch,
  a non-scalar output) is raised again by the numpy module on the same
  arguments, whose traceback names the user's line and whose message is
  the numpy backend's.

With ``backend="auto"`` each of the first two falls back to the numpy
module instead, with one warning that says why.
"""

from __future__ import annotations

import importlib.util
import inspect
import linecache
import os
import re
import warnings

from ...transform.ir.compat import add_note, gast
from ...transform.back.emit import compile_source, drop_lines_with, render
from ...transform.ir.trees import is_marker
from ...transform.ir.errors import TransformError
from ...transform.ir.nodes import assigned
from ...transform.pipeline import Generated
from ...transform.runtime.origins import add_location, origins, user_line
from . import diskcache, helpers, pruning, shaping
from .callees import (call_counts, callee_stacks_per_name, own_stacks, returned_saves, single_saves,
                      stacks_per_name, unread_parameters)
from .steps import saves_per_step
from .lower import lower

_ADVICE = "use backend='numpy', or backend='auto' to fall back to it with a warning"


def available() -> bool:
    """Whether Numba can be imported (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def attach(ctx, generated, strict=True):
    """The Generated that runs ``generated``'s module compiled by Numba (the hook of ``build``).

    ``strict`` (backend="numba") raises where Numba cannot serve; otherwise
    (backend="auto") warns once and returns the numpy ``generated``.
    """
    try:
        return _numba_module(ctx, generated, strict)
    except TransformError as exc:
        if strict:
            raise
        _fall_back(exc)
        return generated


def _numba_module(ctx, generated, strict):
    if not available():
        raise TransformError("backend='numba' needs Numba, which is not installed: pip install 'astgrad[numba]'",
                             *_where(ctx.fn), "", _ADVICE)
    import numba  # the optional dependency, imported only when a numba gradient is built
    helpers.register()
    module = ctx.module
    namespace = module.ns.globals
    functions = lower(module.functions, namespace, _parameter_gradients(ctx), module.ns.stack, _adjoints(ctx),
                      module.callee_adjoints)
    constants = _numeric_constants(namespace, generated.dependencies)
    _refuse_live_globals(functions, module, {k: v for k, v in namespace.live.items() if k not in constants})
    _refuse_squeeze_without_axis(functions, module, namespace)
    _refuse_foreign_calls(functions, module, namespace)
    _refuse_recursion(functions, module)
    pairs = [v[:2] for v in module.variants.values() if isinstance(v, tuple)]
    stack_of, extra = own_stacks(functions, module.ns.stack, pairs)
    stacks_per_name(functions[0], module.ns.stack)
    callee_stacks_per_name(functions, module.ns.stack)
    apart = returned_saves(functions, module.ns.stack, pairs, stack_of, extra)  # else inlined into the entry
    if apart:
        single_saves(functions)
    saves_per_step(functions)
    header = [line[2:] for line in generated.source.splitlines() if line.startswith("# ")][:1]
    header.append("Compiled by Numba (nopython mode) at the first call with each kind of arguments.")
    source = render(functions, module.comments, header)
    compiled_namespace = dict(namespace)
    compiled_namespace.update(constants)  # Numba compiles their values in; a new value transforms again
    on_disk = diskcache.source_file(source, functions, compiled_namespace)  # None: not cached
    if on_disk is None:
        filename = compile_source(source, generated.filename[:-1] + " numba>", compiled_namespace)
    else:  # a file named by the hash of what the machine code depends on: Numba's cache of it is never stale
        filename = on_disk
        compiled_namespace["__name__"] = diskcache.__name__  # Numba's cache imports it to rebuild the environment
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), compiled_namespace)
    names = [f.name for f in functions]
    calls = call_counts(functions)
    pipeline = pruning.compiler() if pruning.needed(functions, compiled_namespace) else None
    for position, name in enumerate(names):  # callees compiled apart, or inlined into the entry (one list each)
        inline = "always" if position and (not apart or calls.get(name, 0) == 1) else "never"
        cache = on_disk is not None and not position
        wrappers = {} if not position else {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}  # called from code
        compiled_namespace[name] = numba.njit(boundscheck=True, inline=inline, cache=cache,  # type: ignore[call-overload]
                                              pipeline_class=pipeline, **wrappers)(compiled_namespace[name])
    saves = diskcache.held(compiled_namespace[names[0]]) if on_disk is not None else None
    result = Generated(source, None, filename, compiled_namespace, generated.dependencies,
                       origins(functions, module.comment_origins))
    result.rank_dependent = generated.rank_dependent
    result.float_dependent = generated.float_dependent
    result.numpy = generated  # type: ignore[attr-defined]  # the same adjoint in numpy: it reports errors, and backend="auto" falls back to it
    result.allocator = _allocation_type()
    result.function = _Runner(compiled_namespace[names[0]], result, ctx.fn, strict, unread_parameters(functions),
                              [compiled_namespace[name] for name in names[1:] if calls.get(name, 0) != 1 and apart],
                              saves)
    drop_lines_with(result, filename)
    return result


def _allocation_type():
    """The type of the ``base`` of an array Numba allocated and returned (its record of the memory).

    Such an array never owns its memory, so the entry's test for a fresh
    array (``base is None``) would copy every result.  Numba's record says
    more: ``parent`` is the array of the caller's whose memory it is (None
    when Numba allocated it) and ``refcount`` how many arrays hold it.
    """
    from numba.core.runtime import _nrt_python  # type: ignore[attr-defined]
    return _nrt_python._MemInfo


def _adjoints(ctx) -> dict:
    """The entry's adjoint names, to the names of the values they are the gradients of."""
    return {adjoint: name for name, adjoint in ctx.adjoints.table.items()}


def _parameter_gradients(ctx) -> dict:
    """The entry's adjoint names of parameters its body never rebinds, to those parameters."""
    kept = set(ctx.params) - assigned(ctx.body)
    return {adjoint: name for name, adjoint in ctx.adjoints.table.items() if name in kept}


class _Runner:
    """Calls the compiled entry; turns Numba's refusal into a located error (or the fallback)."""

    def __init__(self, compiled, generated, fn, strict, unread=(), callees=(), saves=None):
        from numba.core.errors import NumbaError
        self.refused = NumbaError  # what Numba raises when it cannot compile
        self.compiled = compiled
        self.callees = list(callees)  # the callees compiled apart (the others are inlined into the entry)
        self.saves = saves  # writes the entry's machine code to the disk cache, once the checks passed
        self.overloads = compiled.overloads  # Numba's dict of what it compiled, added to in place
        self.generated = generated
        self.fn = fn
        self.strict = strict
        self.fallen_back = False
        self.refusal = None  # the integer arithmetic refused in code Numba compiled (and keeps)
        self.unread = frozenset(unread)  # positions of parameters the code never reads: given None
        self.__signature__ = inspect.signature(generated.numpy.function)  # api reads the seed's name from it
        # a list seed is copied: the code pops and adds to a list's gradient in place, and Numba reflects that
        self.seeds = sum(p.default is p.empty for p in self.__signature__.parameters.values())  # where seeds start

    def __call__(self, *args, **kwargs):
        if self.fallen_back:
            return self.generated.numpy.run(*args, **kwargs)
        if self.refusal is not None:  # the dispatcher holds the refused machine code: it would run it
            raise self.refusal
        compiled, overloads, known = self.compiled, self.overloads, len(self.overloads)
        given, named = args, kwargs  # as called: the numpy module, run below on errors, gets these
        if self.unread:  # a function passed on to a callee the gradient inlined (RK4's f): Numba cannot type it
            given = tuple(None if i in self.unread else a for i, a in enumerate(args))
        if len(given) > self.seeds and any(type(a) is list for a in given[self.seeds:]):
            given = given[:self.seeds] + tuple(list(a) if type(a) is list else a for a in given[self.seeds:])
        if kwargs:
            named = {k: list(v) if type(v) is list else v for k, v in kwargs.items()}
        try:
            result = compiled(*given, **named) if kwargs else compiled(*given)  # an empty ** costs Numba 0.15 us
            if len(overloads) != known:  # compiled just now (or read from the disk cache), for new argument types
                try:
                    for dispatcher in [compiled, *self.callees]:
                        _check_integer_arithmetic(dispatcher, self.generated, self.fn)
                except TransformError as refused:
                    self.refusal = refused if self.strict else None
                    raise
                if self.saves is not None:  # the callees passed the check: a read of the cache need not see them
                    self.saves()
            return result  # Numba's arrays: the entry keeps those only they hold (api._KEEP_NUMBA)
        except (self.refused, TransformError) as exc:  # compiling for these argument types failed
            error = exc if isinstance(exc, TransformError) else _compile_error(exc, self.generated, self.fn)
            if self.strict:
                raise error from None
            _fall_back(error)
            self.fallen_back = True
            return self.generated.numpy.run(*args, **kwargs)
        except Exception as exc:
            if _in_compiler(exc):  # Numba failed inside its own compiler (an internal assertion): a refusal
                error = _compile_error(exc, self.generated, self.fn, _compiler_line(exc, self.generated), True)
                if self.strict:
                    raise error from None
                _fall_back(error)
                self.fallen_back = True
                return self.generated.numpy.run(*args, **kwargs)
            result = self._numpy_result(args, kwargs)  # raises what numpy raises, at the user's line
            if self.strict:
                add_note(exc, "astgrad: raised by the Numba-compiled gradient; the numpy backend does not raise here")
                raise
            _fall_back(f"the compiled gradient raised {type(exc).__name__}: {exc} where numpy does not")
            self.fallen_back = True
            return result

    def _numpy_result(self, args, kwargs):
        """What the numpy module returns on these arguments, or what it raises (located)."""
        numpy = self.generated.numpy
        try:
            return numpy.run(*args, **kwargs)
        except Exception as exc:
            add_location(numpy, exc, f"the generated gradient of {self.fn.__qualname__} (backend='numba')")
            raise exc from None


#: integer operations whose result can pass 2**63 from small operands (sums need operands near it)
_GROWING = {"mul", "pow", "lshift", "imul", "ipow", "ilshift"}


def _check_integer_arithmetic(compiled, generated, fn) -> None:
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
            filename, line, text = origin[:3] if origin else (*_where(fn)[:2], "")
            raise TransformError("backend='numba': this line multiplies integers (or raises them to a power), "
                                 "which compiled code does in 64 bits where Python's integers do not "
                                 "overflow", filename, line, len(text) - len(text.lstrip()), text,
                                 hint=f"write float(n) for an integer that only scales a value, or {_ADVICE}")


def _fall_back(error) -> None:
    warnings.warn(f"astgrad: backend='auto' runs the numpy backend here: {error}", RuntimeWarning, stacklevel=4)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _in_compiler(exc) -> bool:
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


def _compiler_line(exc, generated):
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


def _compile_error(exc, generated, fn, lineno=None, internal=False) -> TransformError:
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
            if generated_line else "") + _ADVICE
    if origin is None:
        return TransformError(message, *_where(fn), "", hint)
    filename, line, source_text, _ = origin
    return TransformError(message, filename, line, len(source_text) - len(source_text.lstrip()), source_text,
                          hint=hint)


def _numeric_constants(namespace, dependencies) -> dict:
    """The globals (and closure cells) the module reads at each call that hold numbers now, with their values.

    Numba compiles a global's value into the code.  For a number that is
    what the module computes with until the global is rebound, and each
    is recorded as a dependency of the gradient (by identity, as the
    callables it binds are): rebinding it (``ALPHA = 0.3``) makes the
    gradient transform again, and compile for the new value, at its next
    call.  An array (a weight a training loop updates in place) is not a
    number: refused (``_refuse_live_globals``).
    """
    import types

    import numpy as np
    out = {}
    for name, (place, key) in namespace.live.items():
        try:
            value = place.cell_contents if isinstance(place, types.CellType) else place[key]
        except (KeyError, ValueError):
            continue
        if type(value) in (int, float, bool, complex) or isinstance(value, (np.number, np.bool_)):
            out[name] = value
            if isinstance(place, types.CellType):
                dependencies.record_cell(place, value, always=True)
            else:
                dependencies.record_key(place, key, value, always=True)
    return out


def _refuse_live_globals(functions, module, live) -> None:
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
                                 hint=f"pass `{user}` as an argument of the function, or {_ADVICE}")
    user = live[sorted(live)[0]][1]
    raise TransformError(f"backend='numba': the gradient reads the global `{user}` when it runs; Numba would "
                         f"compile in the value it has now", hint=_ADVICE)


_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def _refuse_squeeze_without_axis(functions, module, namespace) -> None:
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
                             hint=f"name the axes, as in np.squeeze(x, axis=1) (or write x[:, 0]), or {_ADVICE}")


#: the packages whose functions compiled code may call: Numba implements numpy's and math's, astgrad's helpers
#: have implementations (helpers.py), builtins such as range and len Numba knows
_COMPILED_PACKAGES = frozenset({"numpy", "math", "cmath", "builtins", "astgrad", "numba", "operator"})


def _refuse_foreign_calls(functions, module, namespace) -> None:
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
            raise TransformError(f"backend='numba' cannot compile this gradient: {reason[0]}", hint=_ADVICE)
        filename, line, text, _ = origin
        raise TransformError(f"backend='numba' cannot compile the gradient of this line: {reason[0]}", filename,
                             line, len(text) - len(text.lstrip()), text,
                             hint=f"{reason[1]}, or {_ADVICE}" if reason[1] else _ADVICE)


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


def _refuse_recursion(functions, module) -> None:
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
                                 hint=f"write the recursion as a loop, or {_ADVICE}")
    raise TransformError("backend='numba' does not compile gradients through recursive calls", hint=_ADVICE)


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


def _where(fn) -> tuple[str, int, int]:
    """File, first line and column 0 of ``fn``'s ``def``."""
    code = fn.__code__
    return code.co_filename, code.co_firstlineno, 0
