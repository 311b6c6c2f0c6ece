"""The tangent map at one point, as a reusable function: ``out, jvp_fn = linearize(f, *primals)`` (JAX's).

``linearize`` runs the primal half of f's generated jvp once
(transform/core/linearize.py) and keeps the values its tangent half reads,
in the order it reads them; each ``jvp_fn(*tangents)`` runs the tangent
half alone.  The promises are the pullback's (pullback.py): the primals
are copied, arrays read from outside are compared at each call, and an
array returned is never one the record holds.
"""

from __future__ import annotations

import numpy as np

from ..transform.core.linearize import NotCut
from ..transform.front.expressions import CALLING_A_LOCAL
from ..transform.front.locate import bind_now, own_signature
from ..transform.ir.errors import TransformError
from ..transform.pipeline import build_linearized
from ..transform.runtime.origins import add_location
from ..values import trees as _trees
from ..values.returned import _unwrap
from ..values.trees import is_tree
from . import gradient
from .arguments import arguments_of_plain_types
from .forward import _tangent as _forward_tangent, jvp as _jvp
from .generated import GeneratedCallable
from .pullback import _array_ids, _outside, _unchanged, copied, splittable

__all__ = ["linearize"]


def linearize(f, *primals, has_aux: bool = False, optimize: int | None = None):
    """``(out, jvp_fn)`` (``(out, jvp_fn, aux)`` with ``has_aux``): JAX's ``linearize``.

    ``jvp_fn(*tangents)`` is ``J u``, the Jacobian of ``f`` at ``primals``
    times the tangents (one per primal, each of its primal's structure and
    shape).  ``linearize`` runs the primal half of f's generated jvp once
    (transform/core/linearize.py) and keeps what its tangent half reads;
    each ``jvp_fn`` call runs the tangent half alone.  The primals are
    copied (later writes into them change nothing), and arrays the code
    reads from outside are compared at each call with what they held, and
    refused when changed.  Where the cut does not model the code (a
    generated gradient, ``try``, ``with``), each call runs the whole jvp at
    the copied primals: the same numbers, without the reuse.
    """
    if not primals:
        raise TypeError("astgrad.linearize(f, *primals): give the point, one primal per differentiated argument")
    primals = tuple(copied(_unwrap(p)) for p in primals)
    if splittable(f):
        try:
            return _linearized_at(f, primals, has_aux, optimize)
        except NotCut:
            pass
        except TransformError as exc:
            if not exc.reason.startswith(CALLING_A_LOCAL):
                raise
    product = _jvp(f, wrt=tuple(range(len(primals))), optimize=optimize)
    out = f(*primals)
    aux = None
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"astgrad.linearize(..., has_aux=True): {getattr(f, '__qualname__', f)} must return a "
                            f"pair (output, aux); it returned {type(out).__name__}")
        out, aux = out

    return (copied(out), Linearized(f, product, primals, has_aux)) + ((aux,) if has_aux else ())


def _linearized_at(f, primals, has_aux, optimize):
    signature = own_signature(f)
    names = [p.name for p in signature.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(primals) > len(names):
        raise TypeError(f"astgrad.linearize: {f.__qualname__} takes {len(names)} positional arguments and was given "
                        f"{len(primals)} primals")
    names = names[:len(primals)]
    bound = bind_now(f, signature, primals, {})
    arguments_of_plain_types(bound, names, f"astgrad.linearize of {f.__qualname__}")
    trees = tuple(sorted(name for name in names if is_tree(bound.arguments.get(name))))
    generated = _cached_linearized(f, names, trees, gradient._level(optimize, "jvp"))
    try:
        value, record = generated.run(*bound.args, **bound.kwargs)
    except Exception as exc:
        add_location(generated, exc, f"the linearization of {f.__qualname__}")
        raise
    aux = None
    if has_aux:
        if not (type(value) in (tuple, list) and len(value) == 2):
            raise TypeError(f"astgrad.linearize(..., has_aux=True): {f.__qualname__} must return a pair (output, "
                            f"aux); it returned {type(value).__name__}")
        value, aux = value
    tangent_map = Linearization(f, generated, record, primals, names, has_aux, _outside(generated))
    return (copied(value), tangent_map) + ((copied(aux),) if has_aux else ())  # neither shares the record


def _cached_linearized(f, wrt, trees, level):
    """f's generated linearization, kept with its gradients (gradient._gradients_of) until ``f`` changes; raises
    NotCut (again, from the cache) where the cut does not model the code."""
    code = f.__code__
    key = (code, tuple(wrt), "linearize", trees, level)
    per_fn = gradient._gradients_of(f)
    found = per_fn.get(key)
    if found is None or not found.current():
        for old in [k for k in per_fn if k[0] is not code]:
            del per_fn[old]
        try:
            found = per_fn[key] = build_linearized(f, list(wrt), level, trees)
        except NotCut:
            per_fn[key] = _NotCutHere()
            raise
    if isinstance(found, _NotCutHere):
        raise NotCut()
    return found


class _NotCutHere:
    """A cache entry: the linearization of this code is the rerunning one."""

    @staticmethod
    def current() -> bool:
        return True


_END = object()


class _TangentMap(GeneratedCallable):
    """What both forms of ``jvp_fn`` share: f's names, the repr, and one tangent per primal."""

    def __init__(self, f, primals):
        self.__wrapped__ = f
        self.__name__ = f"linearized_{getattr(f, '__name__', 'f')}"
        self.__qualname__ = f"linearize({getattr(f, '__qualname__', f)})"
        self._primals = primals

    def __repr__(self):
        return f"<astgrad.{self.__qualname__}: the tangent map at one point>"

    def _count(self, tangents) -> None:
        if len(tangents) != len(self._primals):
            raise TypeError(f"{self.__qualname__} takes one tangent per primal ({len(self._primals)}); it was "
                            f"given {len(tangents)}")


class Linearization(_TangentMap):
    """``jvp_fn(*tangents)``: the tangent half of f's generated jvp, reading the values its primal half recorded
    when ``linearize`` ran it."""

    def __init__(self, f, generated, record, primals, names, has_aux, outside):
        super().__init__(f, primals)
        self._generated, self._record, self._names = generated, record, names
        self._tangent = generated.namespace[generated.backward]
        self._aux, self._outside = has_aux, outside
        self._held = _array_ids(record) | _array_ids(list(primals))

    @property
    def source(self) -> str:
        return self._generated.source

    def __call__(self, *tangents):
        self._count(tangents)
        tangents = tuple(_forward_tangent(name, p, _unwrap(t)) for name, p, t in zip(self._names, self._primals, tangents))
        _unchanged(self._outside, self.__wrapped__, "linearize")
        taken = iter(self._record)
        try:
            tangent = self._tangent(taken.__next__, *tangents)
        except StopIteration:
            raise RuntimeError(f"astgrad.linearize: the tangent half of {self.__wrapped__.__qualname__} read more "
                               "values than its primal half recorded (an internal error: please report it)") from None
        except Exception as exc:
            add_location(self._generated, exc, f"the linearization of {self.__wrapped__.__qualname__}")
            raise
        if next(taken, _END) is not _END:
            raise RuntimeError(f"astgrad.linearize: the tangent half of {self.__wrapped__.__qualname__} read fewer "
                               "values than its primal half recorded (an internal error: please report it)")
        if self._aux:
            tangent = tangent[0]
        return _own(tangent, self._held)


def _own(value, held):
    """``value`` with each array in it that the record (or a primal) holds copied: a write into what
    ``jvp_fn`` returns must not reach what its next call reads."""
    if isinstance(value, np.ndarray):
        return value.copy() if id(value) in held or value.base is not None and id(value.base) in held else value
    if is_tree(value):
        return _trees.tree_map(lambda leaf: _own(leaf, held) if isinstance(leaf, np.ndarray) else leaf, value)
    return value


class Linearized(_TangentMap):
    """``jvp_fn(*tangents)`` where the cut does not model f: f's generated jvp run at the primals at each call."""

    def __init__(self, f, product, primals, has_aux):
        super().__init__(f, primals)
        self._product, self._aux = product, has_aux

    @property
    def source(self) -> str:
        return self._product.source

    def __call__(self, *tangents):
        self._count(tangents)
        _, tangent = self._product(*copied(self._primals), tuple(_unwrap(t) for t in tangents))
        return tangent[0] if self._aux else tangent
