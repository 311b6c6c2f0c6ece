"""``vmap(vjp_fn)``: a reusable pullback applied to many cotangents at once (``jax.vmap(vjp_fn)``).

``out, vjp_fn = vjp(f, *primals)`` keeps the values the backward half of
f's generated pair reads.  Batched over its cotangent, the backward half
is generated code like any other (core/batching.py), except for what the
batching sweep cannot take: the optimised pair's in-place helpers
(``add_into``) and ``del`` statements.  So the first call of
``vmap(vjp_fn)`` makes a second pair at optimize=1, runs its forward half
once at the point ``vjp`` was given (its copy), and batches that pair's
backward half over the cotangent: every cotangent in one sweep, the saved
values shared.  What the sweep refuses in the backward half is refused at
its line, never run one cotangent at a time.

Each row of the result is ``vjp_fn(cotangents[i])``: one gradient per
primal, with the primal's shape and dtype, the batch axis at ``out_axes``.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import numpy as np

from ..transform.pipeline import build_batched
from ..transform.runtime.checkpoints import fresh_containers
from ..transform.runtime.origins import add_location
from ..values.returned import finish_examples
from ..values.trees import is_tree
from .generated import GeneratedCallable
from .pullback import Pullback, _array_ids, _cached_pullback, _unchanged, copied

__all__ = ["VmapOfPullback"]

#: the optimize=1 pair (kept with f's gradients, pullback._cached_pullback) -> {(seed rank, level): its backward
#: half batched over the seed}
_BATCHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class VmapOfPullback(GeneratedCallable):
    """``vmap(vjp_fn)(cotangents)``: ``vjp_fn`` of each cotangent stacked along ``in_axes``, by one batched sweep."""

    def __init__(self, pullback: Pullback, in_axes, out_axes, level):
        name = pullback.__wrapped__.__qualname__
        if isinstance(in_axes, tuple) and len(in_axes) == 1:
            in_axes = in_axes[0]
        if type(in_axes) is not int:
            raise TypeError(f"astgrad.vmap of the pullback of {name}: in_axes is the cotangents' batch axis (an int); "
                            f"got {in_axes!r}")
        if not all(type(axis) is int for axis in (out_axes if isinstance(out_axes, tuple) else (out_axes,))):
            raise TypeError(f"astgrad.vmap of the pullback of {name}: out_axes is an int, or a tuple of one per "
                            f"primal; got {out_axes!r}")
        if is_tree(pullback._out):
            raise TypeError(f"astgrad.vmap of the pullback of {name}, whose output is a {type(pullback._out).__name__}: "
                            f"batching is offered for an array output; loop over the cotangents, or vjp a function "
                            f"returning one array")
        self.__wrapped__ = pullback.__wrapped__
        self.__name__ = f"vmap_{pullback.__name__}"
        self.__qualname__ = f"vmap({pullback.__qualname__})"
        self._pullback, self._in_axes, self._out_axes, self._level = pullback, in_axes, out_axes, level
        self._made: Any = None  # (saved values, the batched backward half, the seeds' rank)

    @property
    def source(self) -> str:
        if self._made is None:
            raise AttributeError(f"{self.__qualname__} is made at the first call: call it first")
        return self._made[1].source

    def __repr__(self):
        return f"<astgrad.{self.__qualname__} in_axes={self._in_axes!r} out_axes={self._out_axes!r}>"

    def _make(self, seeds):
        pullback = self._pullback
        f = pullback.__wrapped__
        bound, wrt, trees, has_aux, ranks, floats = pullback._point
        pair = _cached_pullback(f, wrt, trees, has_aux, ranks, floats, 1)  # no in-place helpers, no del
        try:
            _, saved = pair.run(*copied(bound.args), **{k: copied(v) for k, v in bound.kwargs.items()})
        except Exception as exc:
            add_location(pair, exc, f"the pullback of {f.__qualname__}")
            raise
        backward = pair.namespace[pair.backward]
        seed = list(inspect.signature(backward).parameters)[-1]
        key = (np.ndim(seeds) - 1, self._level)
        per_pair = _BATCHED.setdefault(pair, {})
        batched = per_pair.get(key)
        if batched is None or not batched.current():
            batched = per_pair[key] = build_batched(backward, [seed], {seed: (key[0], False)}, self._level)
        self._made = (saved, batched, np.ndim(seeds))
        return self._made

    def __call__(self, cotangents):
        pullback = self._pullback
        f = pullback.__wrapped__
        seeds = np.asarray(cotangents)
        if not -np.ndim(seeds) <= self._in_axes < np.ndim(seeds):
            raise ValueError(f"astgrad.vmap of the pullback of {f.__qualname__}: in_axes={self._in_axes} and the "
                             f"cotangents have {np.ndim(seeds)} axes")
        seeds = np.moveaxis(seeds, self._in_axes, 0)
        if seeds.shape[1:] != np.shape(pullback._out):
            raise ValueError(f"astgrad.vmap of the pullback of {f.__qualname__}: each cotangent has shape "
                             f"{seeds.shape[1:]}; the output has shape {np.shape(pullback._out)} (a cotangent is "
                             f"never broadcast)")
        _unchanged(pullback._outside, f)
        made = self._made
        if made is None or not made[1].current() or made[2] != np.ndim(seeds):
            made = self._make(seeds)  # the pair's forward half runs once, at the point's copy
        saved, batched = made[:2]
        try:
            grads = batched.run(fresh_containers(saved, {}) if pullback._containers else list(saved), seeds)
        except Exception as exc:
            add_location(batched, exc, f"the batched pullback of {f.__qualname__}")
            raise
        primals = pullback._primals
        grads = (grads,) if len(primals) == 1 else tuple(grads)
        size = len(seeds)
        taken = _array_ids(saved) | {id(cotangents), id(seeds)}
        out = []
        for g, p in zip(grads, primals):  # a new array of the primal's dtype is returned as it is; else a copy
            out.append(g if _owned(g, p, size, taken) else finish_examples(g, p, False, size))
            taken.add(id(g))
        axes = self._out_axes if isinstance(self._out_axes, tuple) else (self._out_axes,) * len(out)
        if len(axes) != len(out):
            raise ValueError(f"astgrad.vmap of the pullback of {f.__qualname__}: out_axes={self._out_axes!r} has "
                             f"{len(axes)} entries for {len(out)} primals")
        return tuple(np.moveaxis(g, 0, axis) for g, axis in zip(out, axes))


def _owned(g, primal, size, taken) -> bool:
    """Whether the batched gradient ``g`` may be returned as it is: an array of ``size`` examples of the primal's
    shape and float dtype that owns its memory and is none of the arrays in ``taken`` (saved values, the
    cotangents, gradients returned beside it)."""
    return (type(g) is np.ndarray and type(primal) is np.ndarray and g.shape == (size,) + primal.shape
            and g.dtype == primal.dtype and g.dtype.kind in "fc" and g.base is None and g.flags.writeable
            and id(g) not in taken)
