"""The public face of the source transformer: grad, value_and_grad, vjp, show.

Each returns a callable with the user function's signature whose work is
done by generated code (``.source``).  Transformations are cached on the
function object, so ``grad(f)`` twice costs one transform, and go when ``f``
and its gradients are no longer referenced.  A gradient transforms again,
on its next call, once anything it was built from changed (see
transform.parse.Dependencies).

Long: grad's callable, the compiled entry written per gradient, the cache of
gradients per function and the variants per rank and per function argument all
live here; they are due to move into an ``api/`` subpackage with one base for
the generated callables (the layout by stage).
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import types
from typing import Any

import numpy as np

from ..transform import DEFAULT_LEVEL, LEVELS, STAGES, build, check, describe_ranks
from ..transform.pipeline import ENTRY, show_forward
from ..transform.back.emit import compile_source, drop_lines_with
from ..transform.ir.errors import TransformError
from ..transform.front.expressions import CALLING_A_LOCAL
from ..transform.runtime.origins import add_location
from ..transform.runtime.checks import arguments_in
from ..transform.runtime import floats as _floats
from .callables import resolve_wrt, split
from .fresh import fresh_like
from .generated import GeneratedCallable
from .higher import HigherGradient
from ..values import dask as _dask
from .. import backends as _backends
from ..values.returned import _finish, _unwrap
from ..values.trees import is_tree
from .arguments import arguments_of_plain_types, refuse_other_meanings
from ..transform.front.locate import bind_now, locate, own_signature

__all__ = ["grad", "value_and_grad", "vjp", "show", "TransformError"]

#: the attribute of a function holding its _Gradients
_CACHE = "__astgrad_gradients__"


class GradientFunction(GeneratedCallable):
    """A generated gradient, callable like the function it differentiates."""

    _general: Any  # the Generated code for any ranks, or None
    _ranked: dict
    _tree_variants: dict

    def __init__(self, fn, wrt, mode, preserve_result, has_aux=False, level=DEFAULT_LEVEL, backend="numpy"):
        self.__class__ = type(GradientFunction.__name__, (GradientFunction,), {
            "__slots__": (), "__module__": __name__, "__qualname__": GradientFunction.__qualname__})  # see _entry
        self.__astgrad_function__ = fn
        functools.update_wrapper(self, fn)
        self.__dict__.pop(_CACHE, None)  # fn's own gradients, copied with fn.__dict__
        self._wrt = wrt
        self._mode = mode
        self._preserve = preserve_result
        self._aux = has_aux  # f returns (loss, aux); the generated function returns the pair as its value
        self._level, self._backend = level, _backends.hook(backend, mode)  # optimisation level (pipeline.py); None: numpy
        self._rebuild()

    def _rebuild(self, stage=None):
        """Transform again: at first, and once anything the transform read changed (``current()``).

        The signature is read again too: ``f.__code__`` may have been replaced.
        With ``stage``, only the source after that pass is returned (``show``).
        """
        fn, mode = self.__astgrad_function__, self._mode
        signature = own_signature(fn)  # the wrapper's own, not __wrapped__'s
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
            check(fn)  # raises the located error for *args / **kwargs
        names, single = _wrt_names(fn, signature, self._wrt)
        params = list(signature.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        self._signature, self._names, self._single = signature, names, single
        self._function_variants, self._called, self._refused = {}, (), None  # see _for_functions
        if stage is not None:
            return self._build(None, stage=stage).shown
        try:
            generated = self._build(None, keep=True)
        except TransformError as exc:
            self._called = refused_for_functions(exc, fn, signature, names)
            if not self._called:
                raise
            # the code depends on the functions they hold (rk4(f, y0, t, p) calls f): made at each call's first
            self._refused = exc  # raised again for a call that gives none
            self._generated = self._general = None
            self._ranked, self._tree_variants = {}, {}
            self._entry = _call_general
            return None
        # positional calls with every argument given skip Signature.bind
        self._arity = len(params) + (mode == "vjp") if plain else -1
        self._positions = [[p.name for p in params].index(n) for n in names] if plain else []
        self._generated = self._general = generated
        self._ranked = {}  # (ranks, parameters of real floats) of the arguments -> (Generated, entry): see _specialised
        self._tree_variants = {}  # frozenset of the wrt names that hold containers -> Generated
        self._seed = _seed_name(self._generated.function)
        self._entry = _call_general
        if self._arity >= 0 and not generated.rank_dependent and not generated.float_dependent:
            self._entry = _compile_entry(self, generated)

    def _build(self, ranks=None, trees=(), stage=None, callables=(), floats=frozenset(), keep=False, kept=None):
        mode = self._mode
        return build(self.__astgrad_function__, self._names, mode="vjp" if mode == "vjp" else "grad",
                     preserve_result=self._preserve or self._aux or mode == "value_and_grad",
                     has_aux=self._aux, trees=trees, ranks=ranks, level=self._level, stage=stage, backend=self._backend,
                     callables=callables, floats=floats, keep=keep, kept=kept)

    def _for_functions(self, arguments, trees):
        """The generated code for a call whose parameters hold these functions, where the code for any
        refused (``_refused``: calling a parameter on a differentiated value).

        ``rk4(f, y0, t, p)`` calling ``f(t[i], y, p)``, or passing ``f`` on to
        a function that does: the code calls the function ``f`` holds in this
        call (transformed as a callee), so it is made per function, at the
        first call with it, and kept (with the function, so its ``id`` stays
        its own) for the next; the oldest goes past ``_MAX_SIGNATURES``.

        Without containers it is then specialised as ``_specialised`` does the
        general adjoint: for the ranks and real floats of this call's arguments,
        where knowing them changes the code, one module per kinds, kept beside
        the one for any kinds (``Generated.by_kinds``).
        """
        generated = function_variant(self, arguments, trees, lambda functions: self._build(
            trees=tuple(sorted(trees)), callables=functions, keep=not trees))
        if not trees and (generated.rank_dependent or generated.float_dependent):
            called: tuple[str, ...] = self._called
            held = tuple((param, arguments[param]) for param in called if param in arguments
                         and callable(arguments[param]) and not isinstance(arguments[param], type))
            key, ranks, floats = _kinds_of(generated, {param: _unwrap(value) for param, value in arguments.items()
                                                       if param in self._signature.parameters})
            if key is not None:
                found = generated.by_kinds.get(key)
                if found is None or not found.current():
                    if len(generated.by_kinds) >= _MAX_SIGNATURES:
                        self._generated = generated
                        return generated
                    found = generated.by_kinds[key] = self._build(
                        ranks if generated.rank_dependent else None, trees=(), callables=held,
                        floats=floats if floats is not None else frozenset(),
                        kept=generated.kept if generated.current() else None)
                generated = found
        self._generated = generated  # the one .source shows
        return generated

    def _specialised(self, arguments, seed=None):
        """The adjoint for arguments of these ranks, and of real floats or not, transformed at the first call
        with them.

        Each is asked for only where the general adjoint says it would change
        the code (``rank_dependent``; ``float_dependent``: a value left
        uncomputed is guarded by ``floats(...)``, which folds where the
        arguments are real floats).  Sets it as the one ``.source`` shows and
        the compiled entry takes; that entry takes only arguments of the same
        ranks and the same kinds.  A vjp's ``seed`` counts among the kinds
        (not the ranks): whether it holds real floats.
        """
        general = self._general
        by_rank, by_floats = general.rank_dependent, general.float_dependent
        ranks = {name: rank for name, value in arguments.items() if (rank := _rank(value)) is not None}
        floats = frozenset(name for name in ranks if _floats(arguments[name])) if by_floats else None
        kinds = set(ranks)
        if floats is not None and self._mode == "vjp" and _rank(seed) is not None:
            kinds.add(self._seed)
            floats = floats | {self._seed} if _floats(seed) else floats
        if not ranks or not (by_rank or by_floats):
            return general
        key = (tuple(ranks.items()) if by_rank else (), floats)
        found = self._ranked.get(key)
        if found is None:
            if len(self._ranked) >= _MAX_SIGNATURES:
                return general
            given = ranks if by_rank else None
            if given is None and not floats:  # no real floats: the general adjoint, with an entry of its own
                generated = general
            else:
                generated = self._build(given, floats=floats if floats is not None else frozenset(),
                                        kept=general.kept if general.current() else None)  # its passes so far
            entry = _compile_entry(self, generated, given, floats, kinds) if self._arity >= 0 else _call_general
            found = self._ranked[key] = (generated, entry)
        self._generated, self._entry = found
        return found[0]

    @property
    def source(self) -> str:
        """The whole generated module that ran last (before any call: the general one)."""
        if self._generated is None:
            raise AttributeError(f"the generated code of {self.__wrapped__.__qualname__} calls the functions its "
                                 f"parameters {', '.join(self._called)} hold, so it is made at the first call: call "
                                 "the gradient, then read .source")
        return self._generated.source

    @property
    def sources(self) -> dict:
        """Every generated module, by the arguments it is for: their ranks, or which hold containers.

        ``"any"`` is the general one, for arguments of any ranks.
        """
        found = {"any": self._general.source} if self._general is not None else {}
        for (ranks, floats), (generated, _) in self._ranked.items():
            if generated is not self._general:  # the general one, with an entry for arguments of no real floats
                found[describe_ranks(dict(ranks), floats or ())[len(", for "):]] = generated.source
        for trees, generated in self._tree_variants.items():
            found[f"{', '.join(sorted(trees))} holding dicts, lists or tuples"] = generated.source
        for (_, trees), (generated, functions) in self._function_variants.items():
            held = ", ".join(f"{name} holding {getattr(f, '__qualname__', type(f).__name__)}" for name, f in functions)
            found[held + (f"; {', '.join(sorted(trees))} holding containers" if trees else "")] = generated.source
        return found

    @property
    def wrt(self) -> tuple:
        return tuple(self._names)

    def __repr__(self):
        return f"<astgrad.{self._mode} of {self.__wrapped__.__qualname__} wrt {', '.join(self._names)}>"

    def __call__(self, *args, **kwargs):
        return _call_general(self, args, kwargs)  # until _entry installs the compiled entry

    @property
    def _entry(self):
        """What a call runs: the entry compiled for the adjoint in use (_compile_entry), or _call_general.

        The compiled entry is the ``__call__`` of this gradient's own class
        (made in ``__init__``): a call then runs it directly, without a
        ``__call__`` of the shared class calling it (a tenth of a
        microsecond, a few percent of a 2x2 gradient).
        """
        return vars(type(self)).get("__call__", _call_general)

    @_entry.setter
    def _entry(self, entry):
        own = type(self)
        if entry is _call_general:
            if "__call__" in vars(own):
                del own.__call__
        else:
            own.__call__ = entry  # type: ignore[method-assign]

    def _locate(self, exc, generated=None):
        """Note on ``exc`` the user's line the generated code was at (see transform.runtime_errors)."""
        add_location(generated or self._generated, exc,
                     f"the generated {self._mode} of {self.__wrapped__.__qualname__}")

    def _for_trees(self, trees):
        """The generated code for a call whose wrt arguments ``trees`` hold dicts, lists or tuples.

        Built at the first such call and kept per set of names: the code reads
        the containers' structure when it runs, so one variant serves every
        structure (other keys, other lengths, a list where a tuple was).
        """
        generated = self._tree_variants.get(trees)
        if generated is None or not generated.current():
            generated = self._tree_variants[trees] = self._build(trees=tuple(sorted(trees)))
        self._generated = generated  # the one .source shows
        return generated

    def _call_general(self, args, kwargs):
        """Every call the compiled entry does not take: keywords, Tensors, lists, a rebound callee,
        and arguments of other ranks than the adjoint the entry runs was specialised for."""
        if self._generated is not None and not self._generated.current():
            self._rebuild()
        seed_value = None
        if self._mode == "vjp":
            if not args:
                raise TypeError("a vjp is called as df(*args, seed)")
            *args, seed_value = args
            refuse_other_meanings({"seed": seed_value}, f"astgrad.vjp of {self.__wrapped__.__qualname__}")
        bound = bind_now(self.__wrapped__, self._signature, args, kwargs)  # defaults as they are now
        arguments_of_plain_types(bound, self._names, f"astgrad.{self._mode} of {self.__wrapped__.__qualname__}")
        originals = {name: bound.arguments.get(name) for name in self._names}
        trees = frozenset(name for name, value in originals.items() if is_tree(value))
        if self._called:
            generated = self._for_functions(bound.arguments, trees)
        elif trees:
            generated = self._for_trees(trees)
        else:
            generated = self._specialised({name: _unwrap(value) for name, value in bound.arguments.items()
                                           if name in self._signature.parameters}, _unwrap(seed_value))
        seed = {_seed_name(generated.function): _unwrap(seed_value)} if self._mode == "vjp" else {}
        for name in generated.kept_dicts:  # Tensors in it: the code would get, and write into, a new dict
            if _unwrap(bound.arguments.get(name)) is not bound.arguments.get(name):
                raise TypeError(f"astgrad: {self.__wrapped__.__qualname__} writes into the dict {name}, which holds "
                                f"Tensors; astgrad runs the code on a dict of their arrays, which the write would "
                                f"change instead of yours. Pass a dict of numpy arrays")
        args = [_unwrap(a) for a in bound.args]
        kwargs = {k: _unwrap(v) for k, v in bound.kwargs.items()}
        try:
            if _dask.any_lazy([*args, *kwargs.values(), *seed.values()]):
                with _dask.refusing_fallbacks():
                    out = generated.run(*args, **kwargs, **seed)
            else:
                out = generated.run(*args, **kwargs, **seed)
        except Exception as exc:
            self._locate(exc, generated)
            raise
        value: Any = None
        if self._preserve or self._aux or self._mode == "value_and_grad":
            out, value = out
        grads = out if len(self._names) > 1 else (out,)
        grads = tuple(_finish(g, originals[name]) for g, name in zip(grads, self._names))
        result = grads[0] if self._single else grads
        if self._mode == "value_and_grad":
            return value, result
        if self._preserve:
            return result, value
        if self._aux:
            return result, value[1]
        return result


_call_general = GradientFunction._call_general
# a write into a differentiated argument through a global is refused where it runs (runtime_checks); a tree
# argument (the only kind such a write can reach without writing into an array) takes _call_general
arguments_in(_call_general.__code__, lambda frame_locals: frame_locals.get("originals"))
_PLAIN = frozenset({np.ndarray, float, int})
#: adjoints kept per gradient for arguments of different ranks; calls with more use the general one
_MAX_SIGNATURES = 16


def function_variant(owner, arguments, trees, make):
    """The generated code (``make(functions)``) for the functions ``owner._called``'s parameters hold in
    ``arguments``, kept in ``owner._function_variants`` (see GradientFunction._for_functions)."""
    functions = tuple((name, arguments[name]) for name in owner._called
                      if name in arguments and callable(arguments[name]) and not isinstance(arguments[name], type))
    if not functions:
        raise owner._refused.with_traceback(None)
    key = (tuple((name, id(f)) for name, f in functions), trees)
    found = owner._function_variants.pop(key, None)  # popped: put back as the newest
    if found is None or not found[0].current():
        found = (make(functions), functions)
    if len(owner._function_variants) >= _MAX_SIGNATURES:
        owner._function_variants.pop(next(iter(owner._function_variants)))
    owner._function_variants[key] = found
    return found[0]


def refused_for_functions(exc, fn, signature, wrt) -> tuple:
    """The parameters whose functions the code may wait for, when ``exc`` refused calling one (else empty)."""
    return parameters_called(fn, signature, wrt) if exc.reason.startswith(CALLING_A_LOCAL) else ()


def parameters_called(fn, signature, wrt) -> tuple:
    """The parameters (not differentiated) that ``fn``'s body calls, ``f(t, y)``, or passes to a call,
    ``rk4(f, y0)``: they may hold functions."""
    names: set = set()
    for node in ast.walk(locate(fn).node):
        if isinstance(node, ast.Call):
            names.update(a.id for a in [node.func, *node.args, *(k.value for k in node.keywords)]
                         if isinstance(a, ast.Name))
    return tuple(p for p in signature.parameters if p not in wrt and p in names)


def _kinds_of(general, arguments):
    """``(key, ranks, floats)`` of the arguments, for the variant of ``general`` (a Generated) specialised on them
    (``GradientFunction._for_functions``): the key is None where nothing it would specialise on is known."""
    ranks = {name: rank for name, value in arguments.items() if (rank := _rank(value)) is not None}
    floats = frozenset(name for name in ranks if _floats(arguments[name])) if general.float_dependent else None
    if not ranks:
        return None, ranks, floats
    return (tuple(ranks.items()) if general.rank_dependent else (), floats), ranks, floats


def _rank(value):
    """(rank, is a Python int or an array of integers) of an argument, or None when it has no one rank (a list,
    an object).  An array's integers are told (front/ranks.py): ``x[idx[i, 0]]`` drops one of x's axes."""
    kind = type(value)
    if kind is np.ndarray:
        return (value.ndim, value.ndim > 0 and value.dtype.kind in "iu")
    if kind is int:
        return (0, True)
    if kind in (float, bool, complex) or isinstance(value, np.generic):
        return (0, False)
    if _dask.is_lazy(value):  # a Dask array: the adjoint for its rank (a matrix-vector rule in one form, not three)
        return (value.ndim, False)
    return None


# The common call, positional numpy arrays and numbers with no keywords, as
# code compiled per GradientFunction (by _compile_entry) for its arity, wrt
# positions and mode, installed as the gradient's ``__call__`` (see _entry).
# The arguments are positional-only parameters defaulting to _ABSENT (no
# tuple of them is made and unpacked; an argument not given is _ABSENT,
# which no guard takes).  Everything else goes to _call_general, which
# checks for a rebound callee again and transforms anew (the call after
# that runs the general path).
_ENTRY = """
def entry(self, {params}, /, *args, **kwargs):
    if not args and not kwargs:
        if {plain}:
            try:
                current = {current}  # Dependencies.current(), inline
            except (AttributeError, KeyError, ValueError):
                current = False
            if current:
                try:
                    {unpack} = _function({call})
                except Exception as exc:  # free when nothing is raised
                    self._locate(exc, _generated)
                    raise
{keep}
                return {result}
    return _call_general(self, _given(({args},), args), kwargs)
"""


class _Absent:
    """An argument the compiled entry was not given (see _ENTRY)."""

    __slots__ = ()

    def __repr__(self):
        return "<no argument>"


_ABSENT = _Absent()


def _given(head, rest):
    """The positional arguments of a call of the compiled entry: those given of ``head``, then ``rest``."""
    for i, value in enumerate(head):
        if value is _ABSENT:
            return head[:i] + rest  # the parameters are positional-only: the given ones come first
    return head + rest


# A gradient is returned as it is when fresh: an array of its argument's
# shape and float dtype that is no view of anything (``base`` is None: numpy
# records where an array's memory comes from unless the array allocated
# it), is writeable, and is none of the arguments nor a gradient returned
# before it (for an argument the guard did not prove an array, ``t is
# _ndarray`` first).  Otherwise _finish copies it (or makes the float of a number
# argument).  (The dtype is compared by ``is`` first: with the one the guard
# read, or float64; ``base`` is read instead of ``flags.owndata``, since
# ``flags`` makes an object at each read.)  Where the code proves all of
# this for every gradient (api/fresh.py), the tests are left out.
_KEEP = """\
                if not (type({g}) is _ndarray and {t}{g}.shape == {a}.shape
                        and {dtype}
                        and {g}.base is None and {g}.flags.writeable and {others}):
                    {g} = _finish({g}, {a})
"""
# Numba's arrays never own their memory: ``base`` is Numba's record of it
# (``_allocator``), whose ``parent`` is the caller's array it belongs to and
# whose ``refcount`` counts the arrays on it.  One that Numba allocated and
# only this gradient holds is as fresh as a numpy array whose ``base`` is
# None; views of the arguments, and two gradients on one buffer, are copied.
_KEEP_NUMBA = _KEEP.replace(
    "{g}.base is None",
    "((b := {g}.base) is None or type(b) is _allocator and b.parent is None and b.refcount == 1)")


def _compile_entry(gf, generated=None, ranks=None, floats=None, kinds=()):
    """``gf.__call__`` for the common call, a function of ``(gf, *args, **kwargs)``.

    With ``ranks`` (the adjoint is specialised for them) the entry takes
    only arguments of those ranks (and types); others go to _call_general.
    With ``floats`` (the adjoint is specialised for the parameters that
    hold real floats among ``kinds``), it takes only arguments that are
    float arrays where ``floats`` names them and are not elsewhere in
    ``kinds`` (stricter than ``runtime.floats``: a byte-swapped array goes
    to _call_general, which tells exactly).
    """
    generated = generated or gf._generated
    namespace = {"_function": generated.run, "_generated": generated, "_finish": _finish, "_ndarray": np.ndarray,
                 "_float64": np.dtype(np.float64), "_PLAIN": _PLAIN, "_call_general": _call_general,
                 "_ABSENT": _ABSENT, "_given": _given, "_allocator": generated.allocator,
                 "_FLOAT_DTYPES": _FLOAT_DTYPES}
    args = [f"a{i}" for i in range(gf._arity)]  # with types t0, t1, ...
    grads = [f"g{i}" for i in range(len(gf._names))]
    call = ", ".join(args)
    if gf._mode == "vjp":  # the seed is the last argument, a keyword of the generated function
        call = f"{', '.join(args[:-1])}, {gf._seed}={args[-1]}"
    unpack = ", ".join(grads)  # one gradient is not a tuple
    if gf._preserve or gf._aux or gf._mode == "value_and_grad":
        unpack = f"({unpack}), value"
    names = list(gf._signature.parameters) + ([gf._seed] if gf._mode == "vjp" else [])  # a vjp's seed: last
    rank = [(ranks or {}).get(names[i]) if i < len(names) else None for i in range(len(args))]
    # the arguments the guard takes only as arrays of real floats: their dtypes are read there (d0, d1, ...)
    floating = {i for i in range(len(args)) if i < len(names) and floats is not None and names[i] in kinds
                and names[i] in floats}
    keep = "".join((_KEEP if generated.allocator is None else _KEEP_NUMBA).format(
        g=g, a=args[i], t="" if _array(rank[i]) or i in floating else f"t{i} is _ndarray and ", dtype=_same_dtype(g, args[i], i, floating),
        others=" and ".join(f"{g} is not {o}" for o in args + grads[:n])) for n, (g, i) in enumerate(zip(grads, gf._positions)))
    if gf._mode == "grad" and not (gf._preserve or gf._aux) and fresh_like(generated, {i for i in floating if _array(rank[i])}) == gf._positions:
        keep = ""  # every gradient is a new array like its argument, proven from the code (api/fresh.py)
    result = grads[0] if gf._single else f"({', '.join(grads)},)"
    if gf._mode == "value_and_grad":
        result = f"value, {result}"
    elif gf._preserve:
        result = f"{result}, value"
    elif gf._aux:
        result = f"{result}, value[1]"
    plain = " and ".join(_guard(i, a, rank[i]) + _kind(i, a, rank[i], names[i] if i < len(names) else None,
                                                      floats, kinds) for i, a in enumerate(args))
    source = _ENTRY.format(params=", ".join(f"{a}=_ABSENT" for a in args), args=", ".join(args), call=call, unpack=unpack, keep=keep.rstrip(),
                           plain=plain, current=generated.dependencies.test_source(namespace), result=result)
    filename = compile_source(source, generated.filename[:-1] + " entry>", namespace)
    drop_lines_with(generated, filename)
    wrt = {name: f"a{i}" for name, i in zip(gf._names, gf._positions)}
    arguments_in(namespace["entry"].__code__, lambda frame_locals: {n: frame_locals.get(a) for n, a in wrt.items()})
    return namespace["entry"]


def _array(rank) -> bool:
    """Whether the guard for ``rank`` (see _guard) takes nothing but an ndarray."""
    return rank is not None and rank[0] > 0


def _guard(i, arg, rank):
    """The entry's test that argument ``i`` is plain and (with ``rank``) of the rank the adjoint is for."""
    if rank is None:
        return f"(t{i} := type({arg})) in _PLAIN"
    if rank[1] and rank[0] == 0:
        return f"(t{i} := type({arg})) is int"
    if rank[1]:
        return f"(t{i} := type({arg})) is _ndarray and {arg}.ndim == {rank[0]} and {arg}.dtype.kind in 'iu'"
    if rank[0] == 0:
        return f"((t{i} := type({arg})) is float or t{i} is _ndarray and {arg}.ndim == 0)"
    return f"(t{i} := type({arg})) is _ndarray and {arg}.ndim == {rank[0]}"


#: the dtypes of the arrays the compiled entry takes as real floats, besides float64 (see _kind)
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16))


def _same_dtype(g, arg, i, floating) -> str:
    """The entry's test that gradient ``g`` has argument ``arg``'s dtype, a real or complex float one.

    Where the guard read the argument's dtype as a real float (``d{i}``,
    ``floating``), that dtype is compared: numpy's dtypes of native floats
    are single objects, so ``is`` answers at once.
    """
    if i in floating:
        return f"({g}.dtype is d{i} or {g}.dtype == d{i})"
    return f'({g}.dtype is {arg}.dtype is _float64 or {g}.dtype == {arg}.dtype and {g}.dtype.kind in "fc")'


def _kind(i, arg, rank, name, floats, kinds) -> str:
    """The entry's test, after _guard's, that argument ``i`` holds real floats or not, as the adjoint assumes."""
    if floats is None or name not in kinds:
        return ""
    test = f"((d{i} := {arg}.dtype) is _float64 or d{i} in _FLOAT_DTYPES)"
    if not _array(rank):
        test = f"(t{i} is _ndarray and {test})"
    return f" and {test}" if name in floats else f" and not {test}"


def _seed_name(fn):
    return list(inspect.signature(fn).parameters)[-1]


def _wrt_names(fn, signature, wrt):
    names = [p.name for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return resolve_wrt(wrt, names, fn.__qualname__)


def _cached(fn, wrt, mode, preserve_result, has_aux=False, optimize=None, backend="numpy"):
    if _composable(fn) and _backends.hook(backend, mode, composed=True) is None:  # grad(grad(f)): see _higher
        return HigherGradient(fn, wrt, mode, preserve_result, has_aux, _level(optimize, mode), _gradient_function)
    cached, rebind = _gradient_function(fn, wrt, mode, preserve_result, has_aux, optimize, backend)
    return rebind(cached)


def _composable(fn) -> bool:
    """A generated gradient itself (numpy-run), returning the gradient alone: its generated code can be differentiated."""
    return isinstance(fn, (GradientFunction, HigherGradient)) and fn._mode == "grad" and not fn._preserve \
        and not fn._aux and getattr(fn, "_backend", None) is None


def _gradient_function(fn, wrt, mode, preserve_result, has_aux, optimize, backend="numpy"):
    """The cached GradientFunction of ``fn`` (a plain function) and how to bind it as ``fn`` was bound."""
    level = _level(optimize, mode)
    generated = _generated_inside(fn)
    if generated is not None:
        raise _higher_order_error(fn, generated, mode)
    fn, wrt, rebind = split(fn, wrt, mode)  # a bound method or partial: its function, rebound below
    code = fn.__code__
    key = (code, _freeze(wrt), mode, preserve_result, has_aux, level, backend)
    per_fn = _gradients_of(fn)
    cached = per_fn.get(key)
    if cached is None:
        for old in [k for k in per_fn if k[0] is not code]:  # built for code fn no longer runs
            del per_fn[old]
        per_fn[key] = cached = GradientFunction(fn, wrt, mode, preserve_result, has_aux, level, backend)
    elif cached._generated is not None and not cached._generated.current():
        cached._rebuild()
    return cached, rebind


def _level_from_environment() -> int:
    """``ASTGRAD_OPTIMIZE``, when set, replaces the default level (to run a test suite at each level)."""
    value = os.environ.get("ASTGRAD_OPTIMIZE", "")
    if value.strip() == "":
        return DEFAULT_LEVEL
    if value.strip() not in [str(n) for n in LEVELS]:
        raise ValueError(f"ASTGRAD_OPTIMIZE={value!r}; the optimisation levels are "
                         f"{', '.join(map(str, LEVELS))}")
    return int(value)


#: the level of a gradient made without ``optimize=``
_default_level = _level_from_environment()


def _set_default_level(level) -> None:
    """For test suites: the level ``grad(f)`` uses without ``optimize=`` (see tests/conftest.py)."""
    global _default_level
    _default_level = _level(level, "grad")


def _level(optimize, mode) -> int:
    if optimize is None:
        return _default_level
    if type(optimize) is not int or optimize not in LEVELS:
        raise ValueError(f"astgrad.{mode}: optimize={optimize!r}; the levels are 0 (the adjoint as the rules "
                         f"write it), 1 (dead code out, copies read through, elementwise chains fused) and 2 "
                         f"(the default: 1 and the memory work)")
    return optimize


def _gradients_of(fn) -> dict:
    """The cache of ``fn``'s gradients, kept on ``fn`` itself.

    A cache outside ``fn`` would hold each gradient, and each gradient holds
    ``fn``: neither could be freed.  On ``fn`` the two form a cycle that the
    garbage collector frees with ``fn``.  The cache checks that it belongs to
    ``fn`` (``functools.wraps`` copies it to wrappers).  ``fn`` is a plain
    function (``split`` took bound methods and partials apart); anything
    else would get a new gradient each time.
    """
    if type(fn) is not types.FunctionType:
        return {}
    cache: Any = fn.__dict__.get(_CACHE)
    if getattr(cache, "owner", None) is fn:
        return cache
    fresh = fn.__dict__[_CACHE] = _Gradients()
    fresh.owner = fn
    return fresh


class _Gradients(dict):
    """A function's gradients by (code, wrt, options).

    Pickled empty and ownerless: cloudpickle copies a closure's ``__dict__``,
    and a gradient (compiled code) cannot be pickled.
    """

    owner: Any

    __slots__ = ("owner",)

    def __reduce__(self):
        return _Gradients, ()


def _generated_inside(fn):
    """The generated gradient ``fn`` is or wraps (``functools.wraps``, ``functools.partial``), if any."""
    seen = set()
    while fn is not None and id(fn) not in seen:
        if isinstance(fn, (GradientFunction, HigherGradient)):
            return fn
        seen.add(id(fn))
        fn = fn.func if isinstance(fn, functools.partial) else getattr(fn, "__wrapped__", None)
    return None


def _higher_order_error(fn, gf, mode) -> TypeError:
    """Differentiating a generated gradient again: refused, never the lower-order answer."""
    inner = gf.__wrapped__.__qualname__
    given = repr(gf) if fn is gf else f"{getattr(fn, '__qualname__', fn)!r}, which wraps {gf!r}"
    return TypeError(
        f"astgrad.{mode} was given {given}, a function astgrad generated; the generated engine differentiates "
        f"generated code again (a higher derivative) only for the object grad(f) returns itself, without "
        f"preserve_result or has_aux (not value_and_grad, vjp, or a wrapper or partial of one), and "
        f"differentiating {inner} instead would give a lower-order derivative. Write grad(grad(f)), "
        f"astgrad.hessian(f) or astgrad.hvp(f), or use the tape: "
        f"x = astgrad.tensor(x0, dtype=np.float64, requires_grad=True); (g,) = astgrad.autograd.grad({inner}(x), x, "
        f"create_graph=True); (h,) = astgrad.autograd.grad(g, x)  (for an array x, differentiate g.sum() "
        f"or a component g[i]).")


def _freeze(wrt):
    return tuple(wrt) if isinstance(wrt, list) else wrt


def grad(f=None, wrt=0, *, preserve_result: bool = False, has_aux: bool = False, optimize: int | None = None, backend: str = "numpy"):
    """The gradient of a scalar function ``f`` by generated code.

    ``wrt`` is a parameter position, a parameter name, or a tuple of them.
    The result takes ``f``'s arguments and returns the gradient (a tuple for
    a tuple ``wrt``); with ``preserve_result=True`` it returns
    ``(gradient, value)``.  ``f`` must return a number (a float, int or 0-d
    array; anything else raises TypeError when called); with
    ``has_aux=True`` it returns ``(loss, aux)``, only ``loss`` is
    differentiated, and the result is ``(gradient, aux)``.  Usable as
    ``@grad`` and ``@grad(wrt=(0, 1))``.  ``optimize`` is the optimisation
    level of the generated code: 0 (the adjoint as the rules write it), 1
    (what a careful person tidies by hand) or 2 (the default: and the memory
    work); every level gives the same gradient.  ``backend``: "numpy", "numba" or "auto" (docs/backends.md).
    """
    if preserve_result and has_aux:
        raise ValueError("grad: preserve_result=True and has_aux=True together are not supported; "
                         "use value_and_grad(f, has_aux=True), which returns ((loss, aux), gradient)")
    if f is None:
        return lambda fn: grad(fn, wrt, preserve_result=preserve_result, has_aux=has_aux, optimize=optimize, backend=backend)
    return _cached(f, wrt, "grad", preserve_result, has_aux, optimize, backend)


def value_and_grad(f=None, wrt=0, *, has_aux: bool = False, optimize: int | None = None, backend: str = "numpy"):
    """Like :func:`grad`, returning ``(value, gradient)``; ``((loss, aux), gradient)`` with ``has_aux``."""
    if f is None:
        return lambda fn: value_and_grad(fn, wrt, has_aux=has_aux, optimize=optimize, backend=backend)
    return _cached(f, wrt, "value_and_grad", False, has_aux, optimize, backend)


def vjp(f=None, wrt=0, *, optimize: int | None = None, backend: str = "numpy"):
    """``df(*args, seed)``: the vector-Jacobian product of a non-scalar ``f``.

    ``seed`` has the shape of ``f``'s output; the result is the gradient of
    ``sum(f(*args) * seed)``, what ``y.backward(seed)`` computes on the tape.
    A seed of another shape raises ``ValueError`` (numpy would broadcast it).
    """
    if f is None:
        return lambda fn: vjp(fn, wrt, optimize=optimize, backend=backend)
    return _cached(f, wrt, "vjp", False, False, optimize, backend)


def show(f, wrt=0, *, stage="emit", optimize=None, mode="grad") -> str:
    """Print and return the gradient astgrad generates for ``f``, as it is after the pass ``stage``.

    The stages are the passes of the pipeline in order (``astgrad.transform.STAGES``):
    up to "check" the function as parsed, up to "remat" its normal form
    (one operation a line; "fusion", "scalar_seeds" and "remat" also print
    what they chose), then the generated function; "emit" (the
    default) is the whole module that runs, ``grad(f, wrt).source``.
    ``mode`` is "grad", "vjp" or "jvp" (forward mode, whose passes are
    ``astgrad.transform.FORWARD_STAGES``: ``jvp(f, wrt).source`` at "emit").
    """
    if mode == "jvp":
        fn, names, _ = split(f, wrt, "show")
        text = show_forward(fn, _wrt_names(fn, own_signature(fn), names)[0], _level(optimize, "jvp"), stage)
        print(text)
        return text
    if stage not in STAGES:
        raise ValueError(f"astgrad.show: unknown stage {stage!r}; the stages are {', '.join(STAGES)}")
    gf, _ = _gradient_function(f, wrt, "vjp" if mode == "vjp" else "grad", False, False, optimize)
    needs = next(p.level for p in ENTRY if p.name == stage)
    if needs > gf._level:
        raise ValueError(f"astgrad.show: the pass {stage!r} runs at optimize={needs} and above, and this "
                         f"gradient is built at optimize={gf._level}; pass optimize={needs}")
    text = gf._general.source if stage == "emit" else gf._rebuild(stage=stage)
    print(text)
    return text
