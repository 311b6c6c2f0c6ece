"""The pullback at one point, as a reusable function: ``vjp(f, *primals)`` (linearize.py: its forward twin).

``astgrad.vjp`` is the function here: without primals it is gradient.vjp
(the generated ``df(*args, seed)``).

``out, vjp_fn = vjp(f, x, y)`` runs f once, by the forward half of its
generated forward/backward pair (transform.pipeline's ``pullback``), and
keeps the values the backward half reads (its stack).  Each
``vjp_fn(cotangent)`` runs the backward half alone on a fresh list of those
values: many cotangents, one forward sweep.

The pullback is the one at the point ``vjp`` was given, or an error: the
primals are copied before f runs (a later write into them changes nothing),
``out`` is returned as a copy (a write into it cannot reach a saved value),
and arrays the code reads from outside (globals, closures, defaults) are
compared at each call with what they held, refused when they changed.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from ..transform.back.namespace import LiveGlobals
from ..transform.front.expressions import CALLING_A_LOCAL
from ..transform.ir.errors import TransformError
from ..transform.front.locate import bind_now, own_signature
from ..transform.pipeline import build_pullback
from ..transform.runtime.checkpoints import fresh_containers
from ..transform.runtime.origins import add_location
from ..transform.runtime import floats as _floats, net
from ..values import trees as _trees
from ..values.returned import _finish, _unwrap
from ..values.trees import is_tree
from . import gradient
from .arguments import arguments_of_plain_types
from .generated import GeneratedCallable

__all__ = ["vjp"]


def vjp(f=None, *primals, wrt=None, has_aux: bool = False, optimize: int | None = None, backend: str = "numpy"):
    """The vector-Jacobian products of a non-scalar ``f``, in two forms told apart by the call.

    * ``vjp(f)`` or ``vjp(f, wrt=...)`` (no primals): ``df(*args, seed)``, a
      generated function that runs ``f`` and its adjoint at each call.
      ``seed`` has the shape of ``f``'s output; the result is the gradient of
      ``sum(f(*args) * seed)``, what ``y.backward(seed)`` computes on the
      tape.  A seed of another shape raises ``ValueError`` (numpy would
      broadcast it).
    * ``vjp(f, *primals)`` (JAX's and torch.func's form): ``(out, vjp_fn)``,
      ``f``'s output at the primals and its pullback there;
      ``vjp_fn(cotangent)`` returns one cotangent per primal (a tuple) and
      reuses the forward sweep ``vjp`` ran: call it with many cotangents.
      With ``has_aux=True``, ``f`` returns ``(output, aux)`` and ``vjp``
      returns ``(out, vjp_fn, aux)``.

    A single positional argument after ``f`` that is an int, a string or a
    tuple or list of them is refused as ambiguous (``wrt`` spelled
    positionally, as ``vjp(f, 1)`` once meant): write ``wrt=`` for the
    first form, a float primal for the second.
    """
    if primals:
        if wrt is not None:
            raise TypeError("astgrad.vjp: give either wrt= (vjp(f, wrt=...) returns df(*args, seed)) or primals "
                            "(vjp(f, *primals) returns (out, vjp_fn)), not both")
        if _looks_like_wrt(primals[0]):
            raise TypeError(f"astgrad.vjp(f, {primals[0]!r}) is ambiguous: the arguments after f are primals (the "
                            f"point: vjp(f, x) returns (out, vjp_fn)), and {primals[0]!r} reads as the wrt= of "
                            f"vjp(f, wrt={primals[0]!r}), which returns df(*args, seed). Write wrt= for that, or a "
                            f"float primal (vjp(f, 1.0)) for the pullback at a point")
        if backend != "numpy":
            raise ValueError("astgrad.vjp(f, *primals): the pullback runs on numpy (backend='numpy')")
        return vjp_at(f, primals, has_aux, optimize)
    if has_aux:
        raise TypeError("astgrad.vjp(f, wrt=..., has_aux=True) is not supported; has_aux goes with the primals form: "
                        "out, vjp_fn, aux = astgrad.vjp(f, *primals, has_aux=True)")
    return gradient.vjp(f, 0 if wrt is None else wrt, optimize=optimize, backend=backend)


def _looks_like_wrt(value) -> bool:
    """Whether ``value`` reads as a ``wrt`` (a position, a name, a tuple or list of them) rather than a point."""
    if isinstance(value, (tuple, list)):
        return bool(value) and all(type(v) in (int, str) for v in value)
    return type(value) in (int, str)


class Pullback(GeneratedCallable):
    """``vjp_fn(cotangent)``: the cotangent times f's Jacobian at the point ``vjp`` ran f at, one per primal."""

    def __init__(self, fn, generated, saved, out, primals, outside):
        self.__wrapped__ = fn
        self.__name__ = f"vjp_{getattr(fn, '__name__', 'f')}"
        self.__qualname__ = f"vjp({getattr(fn, '__qualname__', fn)})"
        self._generated = generated
        self._backward = generated.namespace[generated.backward]
        self._saved = saved
        self._out = out  # the output the cotangent must match (structure and shapes)
        self._primals = primals
        self._outside = outside  # (place, key, array, its copy) of each array read from outside
        self._held = None  # ids of the arrays in ``saved``, found at the first call (see _fresh)
        self._containers = _holds_containers(saved)  # lists or dicts the backward half may pop from or write
        self._point: Any = None  # (bound copies, wrt, trees, has_aux, ranks, floats): vmap(vjp_fn)'s pair is made from

    @property
    def source(self) -> str:
        return self._generated.source

    def __repr__(self):
        return f"<astgrad.{self.__qualname__}: the pullback at one point>"

    def __call__(self, cotangent):
        seed = _cotangent(_unwrap(cotangent), self._out, self.__wrapped__)
        _unchanged(self._outside, self.__wrapped__)
        try:
            saved = fresh_containers(self._saved, {}) if self._containers else list(self._saved)
            grads = self._backward(saved, seed)
        except Exception as exc:
            add_location(self._generated, exc, f"the pullback of {self.__wrapped__.__qualname__}")
            raise
        if len(self._primals) == 1:
            grads = (grads,)
        if self._held is None:
            self._held = _array_ids(self._saved)
        taken = self._held | {id(cotangent), id(seed)}
        finished = []
        for g, p in zip(grads, self._primals):
            finished.append(g if _fresh(g, p, taken) else _finish(g, p))
            taken.add(id(g))
        return tuple(finished)


def _fresh(g, original, taken) -> bool:
    """Whether the gradient ``g`` may be returned as it is: an array of ``original``'s shape and float dtype
    that owns its memory, none of the arrays in ``taken`` (saved values, the cotangent, gradients returned
    beside it).  Else _finish copies it: a write into it must not reach what the next call reads."""
    return (type(g) is np.ndarray and type(original) is np.ndarray and g.shape == original.shape
            and g.dtype == original.dtype and g.dtype.kind in "fc" and g.base is None and g.flags.writeable
            and id(g) not in taken)


def _holds_containers(saved) -> bool:
    """Whether the saved values hold a list or dict (the user's lists, which the backward half pops from)."""
    work = list(saved)
    while work:
        value = work.pop()
        if isinstance(value, (list, dict)):
            return True
        if type(value) is tuple:
            work.extend(value)
    return False


def _array_ids(saved) -> set:
    """The ids of the arrays in the saved values (lists, tuples and dicts walked), and of what they view."""
    found, work = set(), [saved]
    while work:
        value = work.pop()
        if isinstance(value, np.ndarray):
            while isinstance(value, np.ndarray):
                found.add(id(value))
                value = value.base
        elif isinstance(value, (list, tuple)):
            work.extend(value)
        elif isinstance(value, dict):
            work.extend(value.values())
        elif is_tree(value):
            work.extend(leaf for _, leaf in _trees.leaves(value))
    return found


class RerunningPullback(GeneratedCallable):
    """A pullback for a function the pullback machinery does not split (a generated gradient, a method, a
    partial, code calling a function its parameter holds): each call runs today's ``vjp(f, wrt)`` at the
    saved primals, forward sweep included: the same numbers, without the reuse."""

    def __init__(self, f, primals, out):
        self.__wrapped__ = f
        self.__name__ = f"vjp_{getattr(f, '__name__', 'f')}"
        self.__qualname__ = f"vjp({getattr(f, '__qualname__', f)})"
        self._product = gradient.vjp(f, wrt=tuple(range(len(primals))))
        self._primals, self._out = primals, out

    @property
    def source(self) -> str:
        return self._product.source

    def __repr__(self):
        return f"<astgrad.{self.__qualname__}: the pullback at one point, rerunning f at each call>"

    def __call__(self, cotangent):
        seed = _cotangent(_unwrap(cotangent), self._out, self.__wrapped__)
        return self._product(*copied(self._primals), seed)  # a tuple: wrt is one


def vjp_at(f, primals, has_aux=False, optimize=None):
    """``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with ``has_aux``): see :func:`astgrad.vjp`."""
    if splittable(f):
        names = [p.name for p in own_signature(f).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(primals) > len(names):
            raise TypeError(f"astgrad.vjp: {f.__qualname__} takes {len(names)} positional arguments and was given "
                            f"{len(primals)} primals")
        try:
            value, pullback, aux = pullback_at(f, primals, {}, names[:len(primals)], has_aux, optimize)
            return (value, pullback) + ((aux,) if has_aux else ())
        except TransformError as exc:
            if not exc.reason.startswith(CALLING_A_LOCAL):
                raise
    if has_aux:
        raise TypeError(f"astgrad.vjp(..., has_aux=True) of {getattr(f, '__qualname__', f)!r}: has_aux is "
                        f"supported for plain Python functions; wrap it: def g(*args): return f(*args)")
    primals = tuple(copied(_unwrap(p)) for p in primals)
    out = f(*primals)
    return copied(out), RerunningPullback(f, primals, out)


def splittable(f) -> bool:
    """Whether ``f`` gets a pullback of its own (a plain Python function, not one astgrad generated)."""
    return type(f) is types.FunctionType and gradient._generated_inside(f) is None


def pullback_at(f, args, kwargs, wrt, has_aux=False, optimize=None):
    """``(value, vjp_fn, aux)``: ``f``'s output at ``f(*args, **kwargs)`` and its pullback, which returns one
    cotangent per parameter named in ``wrt`` (a tuple); ``aux`` is None without ``has_aux``."""
    level = gradient._level(optimize, "vjp")
    signature = own_signature(f)
    originals = bind_now(f, signature, args, kwargs)
    bound = bind_now(f, signature, [copied(_unwrap(a)) for a in args],
                     {k: copied(_unwrap(v)) for k, v in kwargs.items()})
    arguments_of_plain_types(bound, wrt, f"astgrad.vjp of {f.__qualname__}")
    trees = tuple(sorted(name for name in wrt if is_tree(bound.arguments.get(name))))
    ranks = {name: rank for name, value in bound.arguments.items()
             if name in signature.parameters and (rank := gradient._rank(value)) is not None}
    floats = frozenset(name for name in ranks if _floats(bound.arguments[name]))
    generated = _cached_pullback(f, list(wrt), trees, has_aux, ranks, floats, level)
    try:
        value, saved = generated.run(*bound.args, **bound.kwargs)
    except Exception as exc:
        add_location(generated, exc, f"the pullback of {f.__qualname__}")
        raise
    aux = None
    if has_aux:
        value, aux = value  # a pair: the generated code checked (runtime.outputs.aux_pair)
    primals = tuple(originals.arguments[name] for name in wrt)
    pullback = Pullback(f, generated, saved, value, primals, _outside(generated))
    # what vmap(vjp_fn) builds its own pair from (batched_pullback.py): the point, copied again (the forward run
    # had these), and the transformation's settings
    pullback._point = (bind_now(f, signature, [copied(_unwrap(a)) for a in args],
                                {k: copied(_unwrap(v)) for k, v in kwargs.items()}), list(wrt), trees, has_aux, ranks,
                       floats)
    return copied(value), pullback, copied(aux)  # a write into either cannot reach a saved value


def _cached_pullback(f, wrt, trees, has_aux, ranks, floats, level):
    """The generated pullback of ``f`` for arguments of these ranks and real floats (it serves the one forward
    run at them, as a specialised adjoint serves calls of them), kept with f's gradients (gradient._gradients_of)
    until ``f`` changes; past gradient._MAX_SIGNATURES of them, one more is built for any ranks."""
    code = f.__code__
    key = (code, tuple(wrt), "pullback", trees, has_aux, tuple(ranks.items()), floats, level)
    per_fn = gradient._gradients_of(f)
    found = per_fn.get(key)
    if found is None or not found.current():
        for old in [k for k in per_fn if k[0] is not code]:
            del per_fn[old]
        if sum(k[2] == "pullback" for k in per_fn) >= gradient._MAX_SIGNATURES:
            key, ranks, floats = key[:5] + ((), None, level), None, None
            found = per_fn.get(key)
            if found is not None and found.current():
                return found
        found = per_fn[key] = build_pullback(f, wrt, level, trees, has_aux, ranks, floats)
    return found


def copied(value):
    """``value`` with each array in it copied: what the caller writes into later cannot reach it."""
    if type(value) is np.ndarray:
        return value.copy()
    if is_tree(value):
        return _trees.tree_map(lambda leaf: leaf.copy() if isinstance(leaf, np.ndarray) else leaf, value)
    return value


def _cotangent(cotangent, out, f):
    """``cotangent``, refused unless it has the structure and shapes of ``f``'s output (numpy would broadcast)."""
    if type(cotangent) in (list, tuple) and not is_tree(out):
        raise TypeError(f"astgrad.vjp: the cotangent is a {type(cotangent).__name__} where "
                        f"{getattr(f, '__qualname__', f)} returns an array (or a number); pass the cotangent as an "
                        f"array of the output's shape, np.asarray(cotangent)")
    if is_tree(out) or is_tree(cotangent):
        ours, theirs = list(_trees.leaves(out)), list(_trees.leaves(cotangent)) if is_tree(cotangent) else None
        if theirs is None or [p for p, _ in ours] != [p for p, _ in theirs]:
            raise ValueError(f"astgrad.vjp: the cotangent must have the structure of the output of "
                             f"{getattr(f, '__qualname__', f)} ({type(out).__name__}); it is a "
                             f"{type(cotangent).__name__}")
        for (path, a), (_, b) in zip(ours, theirs):
            if np.shape(a) != np.shape(b):
                raise ValueError(f"astgrad.vjp: the cotangent at {_trees.path_text(path)} has shape {np.shape(b)}; "
                                 f"the output there has shape {np.shape(a)}")
        return cotangent
    if np.shape(cotangent) != np.shape(out):
        raise ValueError(f"astgrad.vjp: the cotangent has shape {np.shape(cotangent)}; the output of "
                         f"{getattr(f, '__qualname__', f)} has shape {np.shape(out)} (a cotangent is never broadcast)")
    return cotangent


def _outside(generated) -> list:
    """``(place, key, array, copy)`` for each array the generated module reads from outside, as it is now."""
    namespace = generated.namespace
    found = []
    if isinstance(namespace, LiveGlobals):
        for place, key in namespace.live.values():
            try:
                value = place.cell_contents if isinstance(place, types.CellType) else place[key]
            except (KeyError, ValueError):
                continue
            arrays: dict = {}
            net._collect(value, arrays)
            found += [(place, key, a, a.copy()) for a in arrays.values()]
    arrays = {}
    for name, value in dict.items(namespace):
        if not name.startswith("__") and net._data(value):
            net._collect(value, arrays)
    found += [(None, None, a, a.copy()) for a in arrays.values()]
    return found


def _unchanged(outside, f, what="vjp") -> None:
    """Refuse a pullback (a linearization) whose function reads arrays from outside that changed since ``vjp``
    (``linearize``) ran it."""
    for place, key, array, snapshot in outside:
        if place is not None:
            try:
                now = place.cell_contents if isinstance(place, types.CellType) else place[key]
            except (KeyError, ValueError):
                now = None
            rebound = now is not array and not (isinstance(now, np.ndarray) and _holds(now, array))
        else:
            rebound = False
        if rebound or not np.array_equal(array, snapshot, equal_nan=array.dtype.kind in "fc"):
            where = f" ({key})" if key is not None else ""
            raise RuntimeError(f"astgrad.{what}: {getattr(f, '__qualname__', f)} reads an array from outside its "
                               f"arguments{where} that changed since {what} ran it; the "
                               f"{'pullback' if what == 'vjp' else 'tangent map'} is the one at the point {what} was "
                               f"given, which no longer holds: call astgrad.{what} again")


def _holds(value, array) -> bool:
    arrays: dict = {}
    net._collect(value, arrays)
    return id(array) in arrays
