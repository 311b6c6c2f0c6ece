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
import inspect
import types

import numpy as np

from .generated import GeneratedCallable
from .gradient import GradientFunction, _composable, _generated_inside, _gradients_of, _level
from .higher import HigherGradient
from ..transform.front.locate import bind_now, own_signature
from ..transform.pipeline import build, build_batched
from ..rules.batching import broadcast_batch
from ..values.returned import finish_examples, handed_over
from ..transform.runtime.origins import add_location

__all__ = ["vmap"]

_NUMBERS = (np.ndarray, np.generic, int, float, complex, bool)


class VmapFunction(GeneratedCallable):
    """A generated batched function, called with ``f``'s arguments, the batched ones holding a batch axis."""

    __astgrad_no_data__ = True  # holds generated code only: the run-time net does not walk it (runtime/net.py)

    def __init__(self, fn, in_axes, out_axes, level):
        self.__astgrad_function__ = fn
        functools.update_wrapper(self, fn)
        self.__dict__.pop("__astgrad_gradients__", None)  # fn's own cache, copied with fn.__dict__
        self._in_axes, self._out_axes, self._level = in_axes, out_axes, level
        self._signature = own_signature(fn)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in self._signature.parameters.values()):
            from ..transform import check
            check(fn)  # the located error for *args / **kwargs
        self._variants: dict = {}  # (batched parameters, their example ranks) -> Generated
        self._last = None

    def __repr__(self):
        return f"<astgrad.vmap of {self.__astgrad_function__.__qualname__} in_axes={self._in_axes!r} out_axes={self._out_axes!r}>"

    @property
    def source(self) -> str:
        """The generated function that ran last (it is made at the first call, for the ranks of one example)."""
        if self._last is None:
            raise AttributeError(f"the vmap of {self.__astgrad_function__.__qualname__} is made at the first call, for the "
                                 f"ranks of one example: call it first")
        return self._last.source

    def __call__(self, *args, **kwargs):
        fn = self.__astgrad_function__
        bound, batched, ranks = self._prepare(fn, args, kwargs)
        items = _items(bound, batched)
        key = (tuple(batched), tuple(sorted(ranks.items())), items)
        generated = self._variants.get(key)
        if generated is None or not generated.current():
            generated = self._variants[key] = build_batched(fn, batched, ranks, self._level, items=items)
        return self._run(generated, bound)

    def _run(self, generated, bound, finish=None):
        self._last = generated
        try:
            value = generated.run(*bound.args, **bound.kwargs)
        except Exception as exc:
            add_location(generated, exc, f"the generated vmap of {self.__astgrad_function__.__qualname__}")
            raise
        if finish is not None:  # the result handed over whole: finish may return the arrays nothing else holds
            box = [value]
            del value
            value = finish(box)
        out_axes = self._out_axes
        several = generated.returns_items or finish is not None and isinstance(value, tuple)
        if isinstance(out_axes, (tuple, dict)):  # one per item of the result
            name = self.__astgrad_function__.__qualname__
            if isinstance(out_axes, dict) or not several or len(value) != len(out_axes):
                raise ValueError(f"astgrad.vmap of {name}: out_axes={out_axes!r} is not a tree prefix of the "
                                 f"result: {_described(out_axes)} for "
                                 f"{f'a {type(value).__name__} of {len(value)} arrays' if several else 'one array'}")
            for k, axis in enumerate(out_axes):
                if not isinstance(axis, int) and not _all_none(axis):
                    raise ValueError(f"astgrad.vmap of {name}: out_axes={out_axes!r} is not a tree prefix of the "
                                     f"result: out_axes[{k}] is {_described(axis)}, where the result holds an array")
            return type(value)(np.moveaxis(v, 0, axis) for v, axis in zip(value, out_axes))
        if out_axes == 0:
            return value
        if several:
            return type(value)(np.moveaxis(v, 0, out_axes) for v in value)
        return np.moveaxis(value, 0, out_axes)

    def _prepare(self, fn, args, kwargs):
        """``(bound, batched, ranks)``: the arguments bound, the batched ones with their batch axis moved first;
        the names of those; each array's or number's ``(rank of one example, is a Python int)``."""
        bound = bind_now(fn, self._signature, args, kwargs)
        axes = self._axes(len(args))
        names = list(self._signature.parameters)
        arguments = dict(bound.arguments)
        batched: list[str] = []
        size = None
        for i, axis in enumerate(axes):
            if i < len(names) and isinstance(axis, (tuple, dict)):
                axis = _resolved(fn, names[i], arguments[names[i]], axis)
            if axis is None or isinstance(axis, tuple) and all(a is None for a in axis):
                continue
            name = names[i]
            value = arguments[name]
            if isinstance(axis, tuple):  # one batch axis per item of a tuple or list argument
                value, size = self._items_moved(fn, name, value, axis, size, batched)
                arguments[name] = value
                batched.append(name)
                continue
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
        for name, p in self._signature.parameters.items():  # defaults the call leaves (a gradient's seed)
            if name not in arguments and type(p.default) in (int, float):
                ranks[name] = (0, type(p.default) is int)
        bound.arguments.update(arguments)
        return bound, batched, ranks

    def _items_moved(self, fn, name, value, axes, size, batched):
        """The items of the tuple or list argument ``value``, each with its batch axis (``axes``, one per item)
        moved first, and those every example shares given one (``broadcast_batch``); and the batch size."""
        if not isinstance(value, (tuple, list)) or len(value) != len(axes):
            raise ValueError(f"astgrad.vmap of {fn.__qualname__}: in_axes gives {name} one batch axis per item, "
                             f"{axes!r}, and {name} is "
                             f"{f'a {type(value).__name__} of {len(value)}' if isinstance(value, (tuple, list)) else f'a {type(value).__name__}'}")
        items = []
        for k, (item, axis) in enumerate(zip(value, axes)):
            if axis is None:
                items.append(item)
                continue
            item = np.asarray(item) if not isinstance(item, np.ndarray) else item
            if not -np.ndim(item) <= axis < np.ndim(item):
                raise ValueError(f"astgrad.vmap of {fn.__qualname__}: in_axes gives item {k} of {name} the batch "
                                 f"axis {axis}, and it has {np.ndim(item)} axes")
            item = np.moveaxis(item, axis, 0)
            if size is not None and np.shape(item)[0] != size:
                raise ValueError(f"astgrad.vmap of {fn.__qualname__}: the batch axes differ in size: "
                                 f"{batched[0] if batched else 'an earlier item'} has {size} examples and item {k} "
                                 f"of {name} has {np.shape(item)[0]}")
            size = np.shape(item)[0]
            items.append(item)
        items = [broadcast_batch(item, size) if axis is None else item for item, axis in zip(items, axes)]
        return type(value)(items), size

    def _axes(self, given):
        """The batch axis of each positional parameter (None: shared), from ``in_axes``."""
        count = len(self._signature.parameters)
        in_axes = self._in_axes
        if isinstance(in_axes, (tuple, list)):
            if len(in_axes) != given:
                raise ValueError(f"astgrad.vmap of {self.__astgrad_function__.__qualname__}: in_axes={in_axes!r} has "
                                 f"{len(in_axes)} entries for {given} positional arguments; give one for each")
            return list(in_axes) + [None] * (count - given)
        return [in_axes] * given + [None] * (count - given)


class VmapOfGradient(VmapFunction):
    """``vmap(grad(f))``: per-example gradients, by batching the code ``grad(f)`` generates.

    At the first call with arguments of given ranks, ``grad(f)``'s code is
    generated for one example of those ranks (at optimize=1: no in-place
    helpers), and that code, itself Python source, is batched like any
    function, the values it saves on its stack included (a value with a
    batch axis is pushed marked, and its pop checks the mark).
    """

    def __init__(self, gradient, in_axes, out_axes, level):
        super().__init__(gradient.__astgrad_function__, in_axes, out_axes, level)
        self._gradient = gradient
        self._grads: dict = {}  # key -> the gradient's Generated for one example of those ranks

    def __repr__(self):
        return f"<astgrad.vmap of {self._gradient!r} in_axes={self._in_axes!r} out_axes={self._out_axes!r}>"

    def __call__(self, *args, **kwargs):
        fn = self.__astgrad_function__
        bound, batched, ranks = self._prepare(fn, args, kwargs)
        key = (tuple(batched), tuple(sorted(ranks.items())), _items(bound, batched))
        gradient, generated = self._grads.get(key), self._variants.get(key)
        if gradient is None or not gradient.current():
            gradient = self._grads[key] = build(fn, list(self._gradient.wrt), ranks=ranks, level=min(self._level, 1))
            generated = None
        if generated is None or not generated.current():
            seeds = {name: (0, type(p.default) is int) for name, p in inspect.signature(gradient.function).parameters.items()
                     if p.kind is p.KEYWORD_ONLY and name not in bound.arguments and type(p.default) in (int, float)}
            generated = self._variants[key] = build_batched(gradient.function, batched, {**ranks, **seeds}, self._level,
                                                            items=_items(bound, batched))
        names = self._gradient.wrt
        size = len(bound.arguments[batched[0]])

        def finish(box):  # each example's gradient as grad(f) gives it: its argument's dtype and shape
            value = box.pop()
            taken = list(value) if len(names) > 1 else [value]
            del value
            grads = tuple(finish_examples(g, bound.arguments[name], name in batched, size, sole)
                          for (g, sole), name in zip(handed_over(taken), names))
            return grads if len(names) > 1 or not self._gradient._single else grads[0]
        return self._run(generated, bound, finish)  # grad(f, wrt=(0,)) gives a tuple of one: so does its vmap


def _axis_or_none(value, what):
    if value is None or type(value) is int:
        return value
    raise TypeError(f"astgrad.vmap: {what} entries are ints (a batch axis) or None (shared by every example); "
                    f"got {value!r}")


def _items(bound, batched) -> tuple:
    """The batched parameters holding a tuple or list of batched arrays (in_axes gave them one axis per item)."""
    return tuple(name for name in batched if isinstance(bound.arguments[name], (tuple, list)))


def _tree_of_axes(tree, what, leaf=_axis_or_none):
    """``tree`` (nested tuples, lists and dicts of axes) checked leaf by leaf, its lists made tuples."""
    if isinstance(tree, (tuple, list)):
        return tuple(_tree_of_axes(entry, what, leaf) for entry in tree)
    if isinstance(tree, dict):
        return {key: _tree_of_axes(entry, what, leaf) for key, entry in tree.items()}
    return leaf(tree, what)


def _in_axes(in_axes):
    """``in_axes`` checked: an int or None, or a tuple (list) of one entry per positional argument, where an
    entry is itself a tree of tuples, lists and dicts of ints and None, a prefix of its argument's (JAX's
    in_axes)."""
    if isinstance(in_axes, dict):
        raise TypeError(f"astgrad.vmap: in_axes is an int, None, or a tuple with one entry per positional argument; "
                        f"got the dict {in_axes!r}: for a dict argument, write in_axes=({in_axes!r},)")
    return _tree_of_axes(in_axes, "in_axes")


def _out_axis(value, what):
    if type(value) is int:
        return value
    raise TypeError(f"astgrad.vmap: out_axes entries are ints (where each result's batch axis goes); got {value!r}"
                    + (" (a result every example shares is stacked all the same: give it an axis)"
                       if value is None else ""))


def _hashable(tree):
    """A key for the cache of an axes tree (dicts as sorted pairs)."""
    if isinstance(tree, tuple):
        return tuple(_hashable(entry) for entry in tree)
    if isinstance(tree, dict):
        return ("dict", tuple(sorted(((repr(k), _hashable(v)) for k, v in tree.items()))))
    return tree


def _all_none(tree) -> bool:
    if isinstance(tree, tuple):
        return all(_all_none(entry) for entry in tree)
    if isinstance(tree, dict):
        return all(_all_none(entry) for entry in tree.values())
    return tree is None


def _described(tree) -> str:
    if isinstance(tree, tuple):
        return f"a tuple of {len(tree)}"
    if isinstance(tree, dict):
        return f"a dict with keys {sorted(tree, key=repr)}"
    return repr(tree)


def _prefix_checked(fn, where, value, tree):
    """Refuse an in_axes ``tree`` that is not a prefix of the argument's ``value`` (JAX's rule): a tuple or list
    entry for a tuple or list of its length, a dict entry for a dict of its keys, an int or None for anything."""
    name = fn.__qualname__
    if isinstance(tree, tuple):
        if not isinstance(value, (tuple, list)) or len(value) != len(tree):
            kind = f"a {type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list, dict)) \
                else f"a {type(value).__name__}"
            raise ValueError(f"astgrad.vmap of {name}: in_axes is not a tree prefix of the arguments: it has "
                             f"{_described(tree)} for {where}, which is {kind}")
        for k, (item, entry) in enumerate(zip(value, tree)):
            _prefix_checked(fn, f"{where}[{k}]", item, entry)
    elif isinstance(tree, dict):
        if not isinstance(value, dict) or set(value) != set(tree):
            kind = f"a dict with keys {sorted(value, key=repr)}" if isinstance(value, dict) \
                else f"a {type(value).__name__}"
            raise ValueError(f"astgrad.vmap of {name}: in_axes is not a tree prefix of the arguments: it has "
                             f"{_described(tree)} for {where}, which is {kind}")
        for key, entry in tree.items():
            _prefix_checked(fn, f"{where}[{key!r}]", value[key], entry)


def _resolved(fn, name, value, tree):
    """An argument's in_axes tree as the batching sweep takes it: None (every leaf shared), or a tuple of one
    int or None per item of a flat tuple or list; a batch axis deeper in (a dict's value, a tuple in a tuple)
    is refused, saying what to pass instead."""
    _prefix_checked(fn, name, value, tree)
    if _all_none(tree):
        return None
    if isinstance(tree, tuple) and all(isinstance(e, int) or _all_none(e) for e in tree):
        return tuple(None if _all_none(e) else e for e in tree)
    raise ValueError(f"astgrad.vmap of {fn.__qualname__}: in_axes gives a batch axis to an array inside "
                     f"{'a dict' if isinstance(tree, dict) else 'a tuple or list within a tuple or list'} ({name}); "
                     f"vmap batches arrays and flat tuples or lists of them (every dict or nested container may be "
                     f"shared, in_axes None). Pass the batched arrays as arguments of their own, or in a flat tuple")


def vmap(f=None, in_axes=0, out_axes=0, *, optimize: int | None = None):
    """``f`` for a stack of examples: ``vmap(f)(xs)`` is ``np.stack([f(x) for x in xs])``, by generated code.

    ``in_axes``: the batch axis of every positional argument (an int), or
    ``None`` (shared by every example), or a tuple with one entry per
    positional argument, each a tree prefix of its argument as JAX reads it
    (tuples, lists and dicts of ints and None: ``in_axes=((0, None), 1)``,
    ``({"W": None, "b": None}, 0)``); a batch axis may go to an array or to
    the items of a flat tuple or list, and a mismatched tree is a
    ValueError naming where; keyword arguments are shared.
    ``out_axes``: where the result's batch axis goes (an int; for a tuple or
    list result, each item's, or a tuple of one per item).  A user function called with a batched value is batched too;
    an ``if`` on a batched test runs both branches and chooses per example
    where they only compute.  An operation without a batching rule, a loop
    whose test differs from example to example, or a branch on one that
    does more than compute is refused at the user's line, never run one
    example at a time.  ``optimize`` is the level, as for :func:`astgrad.grad`.
    """
    if f is None:
        return lambda fn: vmap(fn, in_axes, out_axes, optimize=optimize)
    in_axes = _in_axes(in_axes)
    out_axes = _tree_of_axes(out_axes, "out_axes", _out_axis)
    level = _level(optimize, "vmap")
    if isinstance(f, GradientFunction) and _composable(f) and not isinstance(f, HigherGradient):
        return VmapOfGradient(f, in_axes, out_axes, level)
    from .pullback import Pullback, RerunningPullback
    if isinstance(f, Pullback):  # vmap(vjp_fn): many cotangents in one batched sweep
        from .batched_pullback import VmapOfPullback
        return VmapOfPullback(f, in_axes, out_axes, level)
    if isinstance(f, RerunningPullback):
        raise TypeError(f"astgrad.vmap of {f!r}: a pullback that reruns f at each call (f is a partial, a method "
                        f"or generated code) is not batched. Loop over the cotangents, or take the vjp of a plain "
                        f"Python function: def g(*args): return f(*args)")
    if _generated_inside(f) is not None or hasattr(f, "__astgrad_function__"):
        raise TypeError(f"astgrad.vmap was given {f!r}, a function astgrad generated: of those, vmap batches the "
                        f"object grad(f) returns (per-example gradients), without preserve_result or has_aux, and the "
                        f"vjp_fn of out, vjp_fn = vjp(f, *primals), not value_and_grad, vjp(f), jvp, grad(grad(f)) or a "
                        f"wrapper of one. Loop over the examples: "
                        f"np.stack([g(x) for x in xs]).")
    if not isinstance(f, types.FunctionType):
        raise TypeError(f"astgrad.vmap batches a Python function; it was given {f!r}. Wrap it: "
                        f"def g(x): return f(x)")
    key = (f.__code__, _hashable(in_axes), _hashable(out_axes), "vmap", level)
    per_fn = _gradients_of(f)
    cached = per_fn.get(key)
    if cached is None:
        for old in [k for k in per_fn if k[0] is not f.__code__]:
            del per_fn[old]
        per_fn[key] = cached = VmapFunction(f, in_axes, out_axes, level)
    return cached


vmap.__astgrad_vmap__ = True  # type: ignore[attr-defined]  # astgrad.vmap(g)(x) inside a differentiated function
