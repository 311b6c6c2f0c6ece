"""Every direction in one sweep: jacfwd, hessian and jacrev as one call of batched generated code.

A Jacobian by forward mode needs the jvp along each basis vector of the
input; a hessian, the jvp of the generated gradient along each; a Jacobian
by reverse mode, the vjp along each basis vector of the output.  Rather
than call the generated product once per direction from Python, its
generated source is batched over the tangent (or seed) parameter, as
``astgrad.vmap`` batches a function (transform/core/batching.py): that
parameter gets every basis vector stacked along a leading axis, and one
call returns every column.  The batched code is made at the first call for
the ranks of the arguments and kept until the product's code is made again.
Many directions of big arguments run in chunks (``CHUNK``), each one call.

Where the batching sweep refuses the product's code (a branch or loop whose
test reads a tangent, a call of a user function, an operation without a
batched form), or the batched code raises (a rule finds at run time that it
cannot batch this case, or ``f`` raises, which the loop then raises at its
line), ``run`` returns None and the caller runs its loop of one product per
direction: a slower answer, never a guessed one.  Arguments other than
plain arrays and numbers take the loop too.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from ..values.trees import is_tree
from ..transform.ir.errors import TransformError
from ..transform.pipeline import build_batched
from .forward import JvpFunction

__all__ = ["Directions", "Shown", "basis", "from_columns", "jacfwd_batched", "jacrev_batched",
           "jacrev_of_gradient_batched"]

#: directions per call at most this over the arguments' numbers: a batched value of an argument's size
#: holds some 2**24 numbers (128 MB of float64) per call, not one per direction of a big hessian at once
CHUNK = 2 ** 24


def _plain(value) -> bool:
    """Whether the batched code is made for ``value``: an array (not a subclass) or a number; Tensors, Dask
    arrays, subclasses and containers take the loop."""
    return type(value) in (np.ndarray, float, int, bool) or isinstance(value, (np.floating, np.integer, np.bool_))


def basis(x) -> np.ndarray:
    """Every basis vector of ``x``'s shape, stacked along a first axis (float64, as the loop's directions)."""
    size = int(np.size(x))
    return np.eye(size).reshape((size,) + np.shape(x))


class Directions:
    """The batched form of one generated product over its tangent parameters: made per ranks, kept, or refused.

    ``batched``: whether the last ``run`` ran every direction in one call
    (None before the first); ``source``: the batched code it ran.
    """

    def __init__(self, level):
        self._level = level
        self._made: dict = {}  # (names, ranks) -> (the product's Generated, the batched Generated or the refusal)
        self.batched, self._last = None, None

    @property
    def source(self) -> str:
        return self._last.source if self._last is not None else ""

    def run(self, product, function, args, kwargs, tangents=(), seeds=None):
        """``product.function``'s value for every direction at once, or None where the code is not batched.

        ``product``: the Generated product (a jvp or vjp) of ``function``,
        called as ``product.function(*positional, *tangents, **keywords,
        **seeds)`` with ``args`` and ``kwargs`` bound to ``function``'s
        signature; ``tangents`` (its positional parameters after
        ``function``'s) and ``seeds`` (keywords) hold every direction along
        their first axis.
        """
        self.batched = False
        seeds = seeds or {}
        signature = inspect.signature(function)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
            return None
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:
            return None  # the loop raises the error a call with these arguments gets
        bound.apply_defaults()
        values = [*bound.arguments.values(), *tangents, *seeds.values()]
        if not all(_plain(v) or v is None or type(v) is str for v in values):
            return None
        params = list(inspect.signature(product.function).parameters.values())
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = positional[len(bound.args):]
        if len(names) != len(tangents) or set(names) & set(seeds):
            return None
        directions = {**dict(zip(names, tangents)), **seeds}
        if not directions:
            return None
        ranks = {name: (np.ndim(value), type(value) is int) for name, value in bound.arguments.items()
                 if _plain(value)}
        ranks.update((name, (np.ndim(value) - 1, False)) for name, value in directions.items())
        for p in params:
            if p.name not in ranks and type(p.default) in (int, float):  # seeds the call leaves to their defaults
                ranks[p.name] = (0, type(p.default) is int)
        key = (tuple(directions), tuple(sorted(ranks.items())))
        made = self._made.get(key)
        if made is None or made[0] is not product or not isinstance(made[1], Exception) and not made[1].current():
            try:
                made = (product, build_batched(product.function, list(directions), ranks, self._level))
            except TransformError as exc:
                made = (product, exc)
            self._made[key] = made
        batched = made[1]
        if isinstance(batched, Exception):
            return None
        count = len(next(iter(directions.values())))
        numbers = sum(int(np.size(v)) for v in bound.arguments.values() if _plain(v))
        step = max(1, min(count, CHUNK // max(1, numbers)))  # directions per call
        parts = []
        for start in range(0, count, step):
            chunk = slice(start, start + step)
            try:
                parts.append(batched.run(*bound.args, *[t[chunk] for t in tangents], **bound.kwargs,
                                         **{name: s[chunk] for name, s in seeds.items()}))
            except Exception:  # noqa: BLE001 -- a rule that found, running, no batched form (Unbatchable), the
                return None    # memory of a big batch, or an error of f's, which the loop raises at its line
        self.batched, self._last = True, batched
        return parts[0] if len(parts) == 1 else _joined(parts)


def _joined(parts):
    """The values of the calls on consecutive chunks of directions, joined along the batch axis."""
    if isinstance(parts[0], (tuple, list)):
        return type(parts[0])(_joined([p[i] for p in parts]) for i in range(len(parts[0])))
    return np.concatenate([np.asarray(p) for p in parts], axis=0)


def from_columns(columns, outer, inner):
    """The derivative of a value shaped like ``outer`` along the elements of ``inner`` (compose's ``_assemble``
    block, of shape ``outer.shape + inner.shape``) from ``columns``, its value along each element stacked first."""
    columns = np.broadcast_to(np.asarray(columns, dtype=np.float64), (np.size(inner),) + np.shape(outer))
    return np.moveaxis(columns, 0, -1).reshape(np.shape(outer) + np.shape(inner))  # float64, as the loop's


def jacfwd_batched(f, product, directions, args, kwargs, inputs, checked):
    """The blocks of ``jacfwd(f)`` (one per argument in ``inputs``) from one call of ``f``'s jvp ``product``
    batched over its tangents, or None where that code is not batched.

    The tangent of each argument holds every basis vector of every
    argument: its own where the direction is along it, zeros elsewhere.
    ``checked(value, f, "jacfwd")`` is the shape of ``f``'s value, which it
    refuses unless it is one real array or number.
    """
    directions.batched = False
    if type(product) is not JvpFunction or product.__astgrad_function__ is not f or product._refused is not None \
            or any(is_tree(x) or not np.size(x) for x in inputs):
        return None
    sizes = [int(np.size(x)) for x in inputs]
    starts = np.cumsum([0] + sizes)
    tangents = []
    for x, start, size in zip(inputs, starts, sizes):
        t = np.zeros((starts[-1], size))
        t[start:start + size] = np.eye(size)
        tangents.append(t.reshape((starts[-1],) + np.shape(x)))
    found = directions.run(product._as_callee()[0], f, args, kwargs, tangents)
    if found is None:
        return None
    value, tangent = found
    if is_tree(value) or is_tree(tangent):
        directions.batched = False
        return None
    out_shape = checked(value[0], f, "jacfwd")
    tangent = np.broadcast_to(tangent, (starts[-1],) + out_shape)
    return tuple(from_columns(tangent[start:start + size], value[0], x) for x, start, size in zip(inputs, starts, sizes))


class Shown:
    """``.source`` of a product whose columns may have run batched: the batched code then, else the product's."""

    def __init__(self, product, directions):
        self._product, self._directions = product, directions

    @property
    def source(self) -> str:
        return self._directions.source if self._directions.batched else self._product.source


def jacrev_batched(f, wrt, level, directions, args, kwargs, inputs, out_shape):
    """The blocks of ``jacobian(f)`` (one per argument in ``inputs``) from one call of ``f``'s vjp batched over
    its seed, which holds every basis vector of the output, or None where that code is not batched.

    The vjp is the one generated at optimize=1 or below (no writes in
    place, no stand-ins: code the batching sweep reads), for the ranks of
    these arguments.
    """
    from . import gradient  # the public gradients, which import this module's neighbours

    directions.batched = False
    size = int(np.prod(out_shape, dtype=int))
    if not isinstance(f, types.FunctionType) or not size or any(is_tree(x) for x in inputs):
        return None
    product = gradient.vjp(f, wrt, optimize=min(level, 1))
    if product._refused is not None:
        return None
    if not product._generated.current():
        product._rebuild()
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    code = product._specialised(dict(bound.arguments))
    seed = list(inspect.signature(code.function).parameters)[-1]
    found = directions.run(code, f, args, kwargs, seeds={seed: basis(np.empty(out_shape))})
    if found is None:
        return None
    rows = found if isinstance(wrt, (tuple, list)) else (found,)
    blocks = [_rows_of(g, x, size) for g, x in zip(rows, inputs)]
    if len(rows) != len(inputs) or any(b is None for b in blocks):
        directions.batched = False
        return None
    return tuple(b.reshape(tuple(out_shape) + np.shape(x)) for b, x in zip(blocks, inputs))


def jacrev_of_gradient_batched(f, wrt, level, directions, args, kwargs, inputs, out_shape):
    """The blocks of ``jacobian(grad(g))`` by reverse over reverse in one call, or None where that is not batched.

    ``f`` is a generated gradient (``grad(g)``, or a gradient of one).  The
    code it runs (``higher.lower_code``: a plain Python function of ``g``'s
    arguments and, as keywords, of its seeds) is differentiated again by
    reverse mode and that vjp is batched over its seed, as for any function
    (:func:`jacrev_batched`).  Where reverse mode does not take that code
    again (it saves values on a stack or calls functions of its own, see
    higher.py), None: the caller tries forward over reverse.
    """
    from . import gradient  # the public gradients, which import this module's neighbours
    from .higher import _facts, lower_code

    directions.batched = False
    try:
        code = lower_code(f, gradient._gradient_function)
    except (TransformError, TypeError):
        return None  # the row loop raises it where the user's call does
    if code.pick or _facts(code.function)[2]:
        return None
    return jacrev_batched(code.function, wrt, level, directions, args, {**kwargs, **code.constants}, inputs,
                          out_shape)


def _rows_of(g, x, size):
    """The gradient of ``x`` along each seed, stacked in float64 (as the loop's rows); None where it is not an
    array of real numbers (a None gradient the batched code stacked)."""
    if not isinstance(g, np.ndarray) or g.dtype.kind not in "biuf" or np.shape(g)[:1] != (size,):
        return None
    if isinstance(x, (float, int)) and not isinstance(x, bool) and np.ndim(g) > 1:
        g = np.sum(g, axis=tuple(range(1, np.ndim(g))))  # a number's gradient: the sum, as for one seed
    missing = np.ndim(x) - (np.ndim(g) - 1)
    if missing > 0:  # one seed's gradient of fewer axes (a zero of no shape) is broadcast to x's, as one call's
        g = g.reshape(np.shape(g)[:1] + (1,) * missing + np.shape(g)[1:])
    try:
        return np.array(np.broadcast_to(g, (size,) + np.shape(x)), dtype=np.float64)
    except ValueError:
        return None  # the row loop raises it
