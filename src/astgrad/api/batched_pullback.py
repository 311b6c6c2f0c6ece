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
from typing import Any

import numpy as np

from ..transform.pipeline import build_batched, build_pullback
from ..transform.runtime.checkpoints import fresh_containers
from ..transform.runtime.origins import add_location
from ..values.returned import finish_examples
from ..values.trees import is_tree
from .generated import GeneratedCallable
from .pullback import Pullback, _unchanged, copied

__all__ = ["VmapOfPullback"]


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
        self._made: Any = None  # (saved values, the batched backward half), at the first call

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
        pair = build_pullback(f, wrt, 1, trees, has_aux, ranks, floats)  # no in-place helpers, no del
        try:
            _, saved = pair.run(*copied(bound.args), **{k: copied(v) for k, v in bound.kwargs.items()})
        except Exception as exc:
            add_location(pair, exc, f"the pullback of {f.__qualname__}")
            raise
        backward = pair.namespace[pair.backward]
        seed = list(inspect.signature(backward).parameters)[-1]
        batched = build_batched(backward, [seed], {seed: (np.ndim(seeds) - 1, False)}, self._level)
        self._made = (saved, batched)
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
        saved, batched = self._made if self._made is not None and self._made[1].current() else self._make(seeds)
        try:
            grads = batched.run(fresh_containers(saved, {}) if pullback._containers else list(saved), seeds)
        except Exception as exc:
            add_location(batched, exc, f"the batched pullback of {f.__qualname__}")
            raise
        primals = pullback._primals
        grads = (grads,) if len(primals) == 1 else tuple(grads)
        size = len(seeds)
        out = tuple(finish_examples(g, p, False, size) for g, p in zip(grads, primals))
        axes = self._out_axes if isinstance(self._out_axes, tuple) else (self._out_axes,) * len(out)
        if len(axes) != len(out):
            raise ValueError(f"astgrad.vmap of the pullback of {f.__qualname__}: out_axes={self._out_axes!r} has "
                             f"{len(axes)} entries for {len(out)} primals")
        return tuple(np.moveaxis(g, 0, axis) for g, axis in zip(out, axes))
