"""``astgrad.vmap``: a function of one example run on a stack of examples, by generated code.

``vmap(f, in_axes=0, out_axes=0)(*args)`` is ``np.stack([f(*example) for
example in zip(...)], axis=out_axes)`` without the loop: the generated
function (``.source``, transform/core/batching.py) writes every operation
of ``f`` for arrays that carry the examples along a batch axis.  It is made
at the first call for the ranks of one example (the batching rules of ``@``
and of the reductions depend on them), one per signature, cached on ``f``
as ``grad`` is and transformed again once anything it was built from
changed.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from .api import _freeze, _generated_inside, _gradients_of, _level
from .transform.front.locate import bind_now, own_signature
from .transform.pipeline import build_batched
from .transform.runtime.origins import add_location

__all__ = ["vmap"]

_NUMBERS = (np.ndarray, np.generic, int, float, complex, bool)


class VmapFunction:
    """A generated batched function, called with ``f``'s arguments, the batched ones holding a batch axis."""

    def __init__(self, fn, in_axes, out_axes, level):
        self.__astgrad_function__ = fn
        functools.update_wrapper(self, fn)
        self.__dict__.pop("__astgrad_gradients__", None)  # fn's own cache, copied with fn.__dict__
        self._in_axes, self._out_axes, self._level = in_axes, out_axes, level
        self._signature = own_signature(fn)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in self._signature.parameters.values()):
            from .transform import check
            check(fn)  # the located error for *args / **kwargs
        self._variants: dict = {}  # (batched parameters, their example ranks) -> Generated
        self._last = None

    def __repr__(self):
        return f"<astgrad.vmap of {self.__wrapped__.__qualname__} in_axes={self._in_axes!r} out_axes={self._out_axes!r}>"

    @property
    def source(self) -> str:
        """The generated function that ran last (it is made at the first call, for the ranks of one example)."""
        if self._last is None:
            raise AttributeError(f"the vmap of {self.__wrapped__.__qualname__} is made at the first call, for the "
                                 f"ranks of one example: call it first")
        return self._last.source

    def __call__(self, *args, **kwargs):
        fn = self.__astgrad_function__
        bound = bind_now(fn, self._signature, args, kwargs)
        axes = self._axes(len(args))
        names = list(self._signature.parameters)
        arguments = dict(bound.arguments)
        batched, size = [], None
        for i, axis in enumerate(axes):
            if axis is None:
                continue
            name = names[i]
            value = arguments[name]
            if isinstance(value, (list, tuple)) or not isinstance(value, _NUMBERS):
                value = np.asarray(value)
            if np.ndim(value) == 0:
                raise ValueError(f"astgrad.vmap of {fn.__qualname__}: in_axes gives {name} the batch axis {axis}, "
                                 f"and {name} is a number; give it in_axes None (every example shares it)")
            if not -np.ndim(value) <= axis < np.ndim(value):
                raise ValueError(f"astgrad.vmap of {fn.__qualname__}: in_axes gives {name} the batch axis {axis}, "
                                 f"and {name} has {np.ndim(value)} axes")
            value = np.moveaxis(value, axis, 0) if axis not in (0, -np.ndim(value)) else value
            if size is not None and np.shape(value)[0] != size:
                raise ValueError(f"astgrad.vmap of {fn.__qualname__}: the batch axes differ in size: "
                                 f"{batched[0]} has {size} examples and {name} has {np.shape(value)[0]}")
            size = np.shape(value)[0]
            arguments[name] = value
            batched.append(name)
        if not batched:
            raise ValueError(f"astgrad.vmap of {fn.__qualname__}: no argument has a batch axis (in_axes={self._in_axes!r})")
        ranks = {}
        for name, value in arguments.items():
            if isinstance(value, _NUMBERS):
                ranks[name] = (np.ndim(value) - (name in batched), type(value) is int)
        key = (tuple(batched), tuple(sorted(ranks.items())))
        generated = self._variants.get(key)
        if generated is None or not generated.current():
            generated = self._variants[key] = build_batched(fn, batched, ranks, self._level)
        self._last = generated
        bound.arguments.update(arguments)
        try:
            value = generated.run(*bound.args, **bound.kwargs)
        except Exception as exc:
            add_location(generated, exc, f"the generated vmap of {fn.__qualname__}")
            raise
        if self._out_axes == 0:
            return value
        if generated.returns_items:
            return type(value)(np.moveaxis(v, 0, self._out_axes) for v in value)
        return np.moveaxis(value, 0, self._out_axes)

    def _axes(self, given):
        """The batch axis of each positional parameter (None: shared), from ``in_axes``."""
        count = len(self._signature.parameters)
        in_axes = self._in_axes
        if isinstance(in_axes, (tuple, list)):
            if len(in_axes) != given:
                raise ValueError(f"astgrad.vmap of {self.__wrapped__.__qualname__}: in_axes={in_axes!r} has "
                                 f"{len(in_axes)} entries for {given} positional arguments; give one for each")
            return list(in_axes) + [None] * (count - given)
        return [in_axes] * given + [None] * (count - given)


def _axis_or_none(value, what):
    if value is None or type(value) is int:
        return value
    raise TypeError(f"astgrad.vmap: {what} entries are ints (a batch axis) or None (shared by every example); "
                    f"got {value!r}")


def vmap(f=None, in_axes=0, out_axes=0, *, optimize=None):
    """``f`` for a stack of examples: ``vmap(f)(xs)`` is ``np.stack([f(x) for x in xs])``, by generated code.

    ``in_axes``: the batch axis of every positional argument (an int), or
    ``None`` (shared by every example), or a tuple with one of those per
    positional argument; keyword arguments are shared.  ``out_axes``: where
    the result's batch axis goes (an int; for a tuple or list result, each
    item's).  An operation without a batching rule, a branch or loop whose
    test differs from example to example, or a call of a user function
    given a batched value is refused at the user's line, never run one
    example at a time.  ``optimize`` is the level, as for :func:`astgrad.grad`.
    """
    if f is None:
        return lambda fn: vmap(fn, in_axes, out_axes, optimize=optimize)
    for axis in in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,):
        _axis_or_none(axis, "in_axes")
    if type(out_axes) is not int:
        raise TypeError(f"astgrad.vmap: out_axes is an int (where the result's batch axis goes); got {out_axes!r}")
    level = _level(optimize, "vmap")
    if _generated_inside(f) is not None or hasattr(f, "__astgrad_function__"):
        raise TypeError(f"astgrad.vmap was given {f!r}, a function astgrad generated: batching generated code "
                        f"(per-example gradients, vmap(grad(f))) is not generated yet. Loop over the examples: "
                        f"np.stack([g(x) for x in xs]), or use the tape.")
    if not isinstance(f, types.FunctionType):
        raise TypeError(f"astgrad.vmap batches a Python function; it was given {f!r}. Wrap it: "
                        f"def g(x): return f(x)")
    key = (f.__code__, _freeze(in_axes), out_axes, "vmap", level)
    per_fn = _gradients_of(f)
    cached = per_fn.get(key)
    if cached is None:
        for old in [k for k in per_fn if k[0] is not f.__code__]:
            del per_fn[old]
        per_fn[key] = cached = VmapFunction(f, in_axes, out_axes, level)
    return cached
