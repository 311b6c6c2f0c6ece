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
module instead, with one warning that says why.  The refusals and the
errors' wording are refusals.py's.
"""

from __future__ import annotations

import gc
import importlib.util
import inspect
import linecache
import warnings

from ...transform.ir.compat import add_note
from ...transform.back.emit import compile_source, drop_lines_with, render
from ...transform.ir.errors import TransformError
from ...transform.ir.nodes import assigned
from ...transform.pipeline import Generated
from ...transform.runtime.origins import add_location, origins
from . import diskcache, helpers, pipeline as numba_pipeline, pruning
from .callees import (call_counts, callee_stacks_per_name, own_stacks, returned_saves, single_saves,
                      stacks_per_name, unread_parameters)
from .steps import saves_per_step
from .loops import proven_adds, proven_loops
from .lower import lower
from .refusals import (ADVICE, check_integer_arithmetic, compile_error, compiler_line, in_compiler,
                       refuse_foreign_calls, refuse_live_globals, refuse_recursion, refuse_squeeze_without_axis,
                       def_location)


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
                             *def_location(ctx.fn), "", ADVICE)
    import numba  # the optional dependency, imported only when a numba gradient is built
    helpers.register()
    module = ctx.module
    namespace = module.ns.globals
    functions = lower(module.functions, namespace, _parameter_gradients(ctx), module.ns.stack, _adjoints(ctx),
                      module.callee_adjoints)
    one_shape = _one_shape(ctx)
    if one_shape is not None:
        proven_loops(functions[0], namespace, one_shape)
        proven_adds(functions[0], namespace, one_shape)
    constants = _numeric_constants(namespace, generated.dependencies)
    refuse_live_globals(functions, module, {k: v for k, v in namespace.live.items() if k not in constants})
    refuse_squeeze_without_axis(functions, module, namespace)
    refuse_foreign_calls(functions, module, namespace)
    refuse_recursion(functions, module)
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
    pipeline = pruning.compiler() if pruning.needed(functions, compiled_namespace) else numba_pipeline.compiler()
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


def _one_shape(ctx):
    """Whether the entry's names (a gradient's name standing for its value's) surely hold one shape, every array
    among them: each, unless its every value is of rank 0 (a number: no array the loop's test compares), has
    the symbol ``("of", X)`` of one ``X`` (front/same_shapes.py: every value it holds has X's shape).  A
    gradient has its value's shape, or a number (the adjoint un-broadcasts every term it adds to its value's
    shape, or proved that a no-op); names the analysis does not know prove nothing.  None without the
    analysis."""
    analysis = getattr(ctx, "analysis", None)
    shapes, ranks = getattr(analysis, "shapes", None), getattr(analysis, "ranks", None)
    if shapes is None or ranks is None:
        return None
    value_of = _adjoints(ctx)

    def one_shape(names) -> bool:
        found = set()
        for name in names:
            value = value_of.get(name, name)
            if ranks.value.get(value, (None,))[0] == 0:
                continue
            symbol = shapes.symbol.get(value)
            if symbol is None or symbol[0] != "of":
                return False
            found.add(symbol)
        return len(found) == 1
    return one_shape


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
            frozen = not known and _freeze()  # the first call compiles
            try:
                result = compiled(*given, **named) if kwargs else compiled(*given)  # an empty ** costs Numba 0.15 us
            finally:
                if frozen:
                    gc.unfreeze()
            if len(overloads) != known:  # compiled just now (or read from the disk cache), for new argument types
                try:
                    for dispatcher in [compiled, *self.callees]:
                        check_integer_arithmetic(dispatcher, self.generated, self.fn)
                except TransformError as refused:
                    self.refusal = refused if self.strict else None
                    raise
                if self.saves is not None:  # the callees passed the check: a read of the cache need not see them
                    self.saves()
            return result  # Numba's arrays: the entry keeps those only they hold (api._KEEP_NUMBA)
        except (self.refused, TransformError) as exc:  # compiling for these argument types failed
            error = exc if isinstance(exc, TransformError) else compile_error(exc, self.generated, self.fn)
            if self.strict:
                raise error from None
            _fall_back(error)
            self.fallen_back = True
            return self.generated.numpy.run(*args, **kwargs)
        except Exception as exc:
            if in_compiler(exc):  # Numba failed inside its own compiler (an internal assertion): a refusal
                error = compile_error(exc, self.generated, self.fn, compiler_line(exc, self.generated), True)
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


def _freeze() -> bool:
    """Whether the objects the collector tracks were moved aside for a compile (``gc.freeze``; the caller
    puts them back with ``gc.unfreeze``): not where the collector is off or someone else froze some
    (``gc.unfreeze`` would put theirs back too; Python 3.12 starts with a few hundred frozen, so there
    the compile runs as before).

    Numba's compile makes objects by the hundred thousand, and the collector, at each of its full
    passes, walked every object the process held (Numba's own modules and types among them): a tenth of
    RK4's first call (S2: 3.3 s to 3.0 s).  Frozen, a pass walks only the objects made since, and frees
    the compile's garbage as before (the same peak memory); the objects put back are collected as ever.
    """
    if not gc.isenabled() or gc.get_freeze_count():
        return False
    gc.freeze()
    return True


def _fall_back(error) -> None:
    warnings.warn(f"astgrad: backend='auto' runs the numpy backend here: {error}", RuntimeWarning, stacklevel=4)


def _numeric_constants(namespace, dependencies) -> dict:
    """The globals (and closure cells) the module reads at each call that hold numbers now, with their values.

    Numba compiles a global's value into the code.  For a number that is
    what the module computes with until the global is rebound, and each
    is recorded as a dependency of the gradient (by identity, as the
    callables it binds are): rebinding it (``ALPHA = 0.3``) makes the
    gradient transform again, and compile for the new value, at its next
    call.  An array (a weight a training loop updates in place) is not a
    number: refused (``refuse_live_globals``).
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
