"""A vmapped function called inside a differentiated function: its derivatives are batched products.

``grad(lambda X, w: np.sum(vmap(g, in_axes=(0, None))(X, w) ** 2))``: the
call of ``vmap(g)`` (a bound name, or ``astgrad.vmap(g, ...)`` written in
the call, front/generated_calls.py) is recorded as the primitive
``vmap_at(vg, *args)``.  Its reverse rule is the vmap of ``g``'s pullback:
the code ``vjp(g)`` generates for one example, batched (core/batching.py)
over the batched arguments and the seed, which holds each example's
cotangent; an argument every example shares (``in_axes`` None) gets the
sum of its per-example gradients.  Its forward rule is the vmap of ``g``'s
jvp, batched over the batched arguments and, where the argument is batched,
its tangent.  Each batched product is made at the first call for the ranks
of one example and kept while the code it was made from is current.

Where the batching sweep refuses the product's code (a gradient that saves
values on a stack, an operation without a batched form), the rule runs the
product once per example and stacks (or sums) the results: slower, never a
guess.  Arguments other than real float arrays and numbers (a list, a
complex array) are refused when the rule runs.  A ``g`` returning a tuple
gets one cotangent per item: its pullback runs once per example (the
batched code takes no tuple at its entry), its jvp batched, one tangent per
item.  The reverse rule has forward rules of its own (a hessian by forward
over reverse through the call): linear in the seed, and along an argument
the jvp of ``g``'s pullback code (generated code, transformed again), run
once per example; ``grad(grad(f))`` takes that route too.  Inside a function vmap
batches, the call's batching rule runs ``g`` vmapped over the outer and
inner examples at once (``_nested``), and so does its reverse rule's
(``vmap(grad(f))``, per-example gradients through the call).
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any

import numpy as np

from ..rules import defbatch, defjvp, defvjp
from ..transform.ir.errors import TransformError
from ..transform.pipeline import build_batched, build_forward
from ..transform.runtime.tangents import STACK_MARK
from .batched import VmapFunction, VmapOfGradient, vmap as _vmap
from .forward import jvp as _jvp
from .gradient import vjp as _vjp

#: vmapped function -> {key: (the product's Generated, its batched Generated or None: run per example)}
_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def vmap_at(vmapped, *args):
    """``vmapped(*args)``: a vmapped function called inside a differentiated function (rules: batched products).

    Arrays are given as read-only views: a write into one (or into the
    value, where it is an argument itself) would change what the caller's
    gradient reads back, so it raises instead.
    """
    return vmapped(*(_read_only(a) if isinstance(a, np.ndarray) else a for a in args))


def _read_only(array):
    view = array.view()
    view.flags.writeable = False
    return view


def refusal(vmapped, keywords) -> tuple[str, str] | None:
    """Why a call of ``vmapped`` inside a differentiated function cannot be ``vmap_at`` and what to write, or None."""
    name = vmapped.__astgrad_function__.__qualname__
    if isinstance(vmapped, VmapOfGradient):
        return (f"calling astgrad.vmap of a gradient of {name} inside a differentiated function is not supported: its "
                f"derivative is a per-example second derivative, which is not generated",
                "Compute the per-example gradients outside the differentiated function, or loop over the examples "
                "calling grad(g) (a gradient called inside a gradient is differentiated).")
    params = list(vmapped._signature.parameters.values())
    axes = vmapped._in_axes if isinstance(vmapped._in_axes, tuple) else ()
    if isinstance(vmapped._out_axes, (tuple, dict)) or any(isinstance(axis, (tuple, dict)) for axis in axes):
        return (f"astgrad.vmap of {name} with a batch axis per item (in_axes or out_axes of tuples), called inside a "
                f"differentiated function, is not supported: its derivative is made for arrays",
                f"Pass the items of the tuple as arguments of {name} of their own.")
    if keywords or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return (f"astgrad.vmap of {name} called inside a differentiated function takes every argument by "
                f"position (its in_axes give each one's batch axis)",
                f"Pass every argument of {name} by position, with in_axes None for those every example shares.")
    return None


def _as_primitive(vmapped, keywords):
    """``(vmap_at, None)`` for a differentiated function calling ``vmapped``, or ``(None, why not)``."""
    why = refusal(vmapped, keywords)
    return (None, why) if why else (vmap_at, None)


VmapFunction._as_primitive = _as_primitive  # type: ignore[attr-defined]


def _checked(vmapped, args):
    """Refuse what the batched products are not made for: containers and complex numbers a gradient could
    reach (a float in a list would get no gradient), a ``g`` of a tuple."""
    name = vmapped.__astgrad_function__.__qualname__
    for value, param in zip(args, vmapped._signature.parameters):
        kind = value.dtype.kind if isinstance(value, (np.ndarray, np.generic)) else None
        if isinstance(value, (np.ndarray, np.generic, int, float, str, type(None))) and kind in (None, *"biuf"):
            continue
        if kind == "c" or isinstance(value, complex):
            raise ValueError(f"astgrad: the derivative of astgrad.vmap of {name}, called inside a differentiated "
                            f"function, is made for real numbers; its argument {param} is complex. Pass the real "
                            f"and imaginary parts as two real arguments")
        raise TypeError(f"astgrad: the derivative of astgrad.vmap of {name}, called inside a differentiated "
                        f"function, is made for arrays and numbers; its argument {param} is a "
                        f"{type(value).__name__}. Pass np.asarray(...)")


def _varies(value) -> bool:
    """An argument a derivative flows to: a float or an array of floats (not an int, a bool or a string)."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return False
    return isinstance(value, (float, np.floating)) or isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _one_of(value, what, name):
    if isinstance(value, (tuple, list)):
        raise TypeError(f"astgrad: the derivative of astgrad.vmap of {name}, called inside a differentiated "
                        f"function, is made for a function returning one array; {name} returns a "
                        f"{type(value).__name__} ({what}). Vmap one function per result")
    return value


def _example(bound, batched, i):
    """``bound`` with each batched argument's example ``i`` (the batch axis is first)."""
    arguments = dict(bound.arguments)
    for name in batched:
        arguments[name] = arguments[name][i]
    return inspect.BoundArguments(bound.signature, arguments)  # type: ignore[arg-type]


def _made(vmapped, key, code, directions, ranks):
    """The batched form of ``code`` over ``directions``, made once per key; None where it is not batched."""
    per = _MADE.get(vmapped)
    if per is None:
        per = _MADE[vmapped] = {}
    found = per.get(key)
    if found is not None and found[0] is code and (found[1] is None or found[1].current()):
        return found[1]
    batched = None
    if STACK_MARK not in code.namespace or code.namespace[STACK_MARK] not in code.function.__code__.co_varnames:
        try:  # a stack's items are not known to be batched or not: such code runs per example
            batched = build_batched(code.function, directions, ranks, vmapped._level)
        except TransformError:
            batched = None
    per[key] = (code, batched)
    return batched


class _Pullback:
    """``g``'s pullback for one call of ``vmap_at``: the arguments bound (batch axes first), which are batched,
    their ranks and axes, those a gradient flows to (``wrt``), the seed (batch axis first) and ``vjp(g)``'s code
    for one example (``code``, seed parameter ``seed_name``)."""

    def __init__(self, vmapped, seed, ans, args):
        _checked(vmapped, args)
        fn = vmapped.__astgrad_function__
        self.vmapped, self.args = vmapped, args
        self.bound, self.batched, self.ranks = vmapped._prepare(fn, args, {})
        self.params = list(vmapped._signature.parameters)
        self.axes = vmapped._axes(len(args))
        self.varying = [k for k, value in enumerate(args) if _varies(value)]
        self.wrt = tuple(self.params[k] for k in self.varying)
        self.seed: Any  # the batch axis first: an array, or a tuple of them for a tuple of g
        self.parts = isinstance(ans, (tuple, list))  # g returns a tuple: one cotangent per item, each example's
        if self.parts:                                # pullback taking them as a tuple
            seeds = seed if isinstance(seed, (tuple, list)) and len(seed) == len(ans) else None
            if isinstance(seed, np.ndarray) and np.shape(seed) == _stacked_shape(ans):
                seeds = list(seed)  # items of one shape, whose cotangents numpy stacked (t[1] of the tuple t)
            if seeds is None:
                raise TypeError(f"astgrad: the cotangent of astgrad.vmap of {fn.__qualname__}, which returns a "
                                f"{type(ans).__name__} of {len(ans)}, is a {type(seed).__name__}; please report this")
            self.seed = tuple(np.moveaxis(np.broadcast_to(0.0 if s is None else s, np.shape(a)), vmapped._out_axes, 0)
                              for s, a in zip(seeds, ans))
            self.count = len(self.seed[0])
        else:
            self.seed = np.moveaxis(np.broadcast_to(seed, np.shape(ans)), vmapped._out_axes, 0)
            self.count = len(self.seed)
        if not self.wrt:
            return
        product = _vjp(fn, self.wrt if len(self.wrt) > 1 else self.wrt[0], optimize=min(vmapped._level, 1))
        if product._refused is not None:
            raise product._refused.with_traceback(None)
        if not product._generated.current():
            product._rebuild()
        self.code = product._specialised(dict(_example(self.bound, self.batched, 0).arguments))
        self.seed_name = list(inspect.signature(self.code.function).parameters)[-1]

    def per_example(self, code, i, *tangent):
        """``code`` (the pullback or its jvp) run on example ``i`` with its seed."""
        b = _example(self.bound, self.batched, i)
        seed = tuple(s[i] for s in self.seed) if self.parts else self.seed[i]
        return code.run(*b.args, *tangent, **b.kwargs, **{self.seed_name: seed})

    def gradients(self, rows):
        """One gradient per argument from the rows of ``wrt``'s (the batch axis first): summed over the
        examples for an argument they share, the batch axis moved back to ``in_axes`` for a batched one."""
        out: list = [None] * len(self.args)
        for k, row in zip(self.varying, rows):
            row = np.asarray(row)
            if self.axes[k] is None:  # shared by every example: the sum of their gradients
                total = np.sum(row, axis=0).astype(np.result_type(row), copy=False)
                out[k] = np.asarray(total) if isinstance(self.args[k], np.ndarray) else total[()]
            else:
                row = np.broadcast_to(row, np.shape(self.bound.arguments[self.params[k]]))  # the batch axis first
                out[k] = np.array(np.moveaxis(row, 0, self.axes[k]))
        return tuple(out)

    def stacked(self, each):
        """The rows of ``wrt``'s gradients from one pullback's value per example."""
        single = len(self.wrt) == 1
        return tuple(np.stack([np.asarray(e if single else e[j]) for e in each]) for j in range(len(self.wrt)))


def vmap_cotangents(seed, ans, vmapped, args):
    """The gradient of each argument of ``vmap_at(vmapped, *args)`` for the cotangent ``seed`` of its value."""
    p = _Pullback(vmapped, seed, ans, args)
    if not p.wrt:
        return (None,) * len(args)
    seed, code, seed_name = p.seed, p.code, p.seed_name
    key = ("vjp", p.wrt, tuple(p.batched), tuple(sorted(p.ranks.items())), p.parts or np.ndim(seed))
    made = None  # a tuple of cotangents (g returns a tuple): the batched code takes none at its entry
    if not p.parts:
        made = _made(vmapped, key, code, [*p.batched, seed_name], {**p.ranks, seed_name: (np.ndim(seed) - 1, False)})
    if made is not None:
        rows = made.run(*p.bound.args, **p.bound.kwargs, **{seed_name: seed})
        rows = (rows,) if len(p.wrt) == 1 else tuple(rows)
    else:  # one pullback per example
        rows = p.stacked([p.per_example(code, i) for i in range(p.count)])
    return p.gradients(rows)


def _inner_examples(vmapped, args, bdims, axes):
    """The inner vmap's number of examples: the length of the first argument's inner batch axis (past the
    outer one where ``bdims`` says the argument has it in front)."""
    inner = next((np.shape(a)[ax + (d == 0) if ax >= 0 else ax] for a, d, ax in zip(args, bdims, axes)
                  if ax is not None), None)
    if inner is None:
        raise ValueError(f"astgrad.vmap of {vmapped.__astgrad_function__.__qualname__}: no argument has a batch "
                         f"axis (in_axes={vmapped._in_axes!r})")
    return inner


@defvjp(vmap_at)
def vmap_at_vjp(g, ans, vmapped, *args):
    return (None, *vmap_cotangents(g, ans, vmapped, args))


def vmap_at_vjp_along_seed(t, ans, g, value, vmapped, *args):
    """The tangent of ``vmap_at_vjp(g, ...)`` along ``t`` in ``g``: the pullback is linear in its seed."""
    return vmap_at_vjp(t, value, vmapped, *args)


def vmap_at_vjp_along_argument(t, ans, g, value, vmapped, *args, argnum):
    """The tangent of ``vmap_at_vjp(g, value, vmapped, *args)`` along ``t`` in ``args[argnum - 3]``: per example,
    the jvp of ``g``'s pullback code (forward over reverse), summed where an argument is shared."""
    p = _Pullback(vmapped, g, value, args)
    k = argnum - 3
    if not p.wrt or not _varies(args[k]):
        return (None,) * (len(args) + 1)
    tangent = np.broadcast_to(np.asarray(t), np.shape(args[k]))
    if p.axes[k] is not None:
        tangent = np.moveaxis(tangent, p.axes[k], 0)
    per = _MADE.get(vmapped)
    if per is None:
        per = _MADE[vmapped] = {}
    key = ("vjp-jvp", p.wrt, p.params[k], tuple(p.batched), tuple(sorted(p.ranks.items())),
           p.parts or np.ndim(p.seed))
    found = per.get(key)
    if found is None or found[0] is not p.code or not found[1].current():
        found = per[key] = (p.code, build_forward(p.code.function, [p.params[k]], min(vmapped._level, 1)))
    forward = found[1]
    each = [p.per_example(forward, i, tangent[i] if p.axes[k] is not None else tangent)[1]
            for i in range(p.count)]
    return (None, *p.gradients(p.stacked(each)))


def vmap_at_jvp(t, ans, vmapped, *args, argnum):
    """The tangent of ``vmapped(*args)`` along ``t`` in argument ``argnum - 1``."""
    _checked(vmapped, args)
    fn = vmapped.__astgrad_function__
    k = argnum - 1
    bound, batched, ranks = vmapped._prepare(fn, args, {})
    params = list(vmapped._signature.parameters)
    axis = vmapped._axes(len(args))[k]
    tangent = np.asarray(t, dtype=np.result_type(t, np.asarray(args[k]).dtype))
    tangent = np.broadcast_to(tangent, np.shape(args[k]))
    if axis is not None:
        tangent = np.moveaxis(tangent, axis, 0)
    code = _jvp(fn, k, optimize=vmapped._level)._as_callee()[0]
    direction = list(inspect.signature(code.function).parameters)[len(params)]
    rank = ranks.get(params[k], (np.ndim(tangent) - (axis is not None), False))[0]
    directions = [*batched, direction] if axis is not None else list(batched)
    key = ("jvp", k, tuple(batched), tuple(sorted(ranks.items())))
    made = _made(vmapped, key, code, directions, {**ranks, direction: (rank, False)})
    if made is not None:
        value = made.run(*bound.args, tangent, **bound.kwargs)[1]
    else:  # one jvp per example
        size = len(bound.arguments[batched[0]])
        each = [code.run(*(b := _example(bound, batched, i)).args, tangent[i] if axis is not None else tangent,
                         **b.kwargs)[1] for i in range(size)]
        value = type(ans)(np.stack(items) for items in zip(*each)) if isinstance(ans, (tuple, list)) \
            else np.stack(each)
    if isinstance(ans, (tuple, list)):  # one tangent per item of g's tuple, each example's along a first axis
        return type(ans)(_placed(v, a, vmapped._out_axes) for v, a in zip(value, ans))
    return _placed(value, ans, vmapped._out_axes)


def _stacked_shape(items):
    """The shape numpy reads a tuple of arrays as (their shapes stacked), or None where they differ."""
    try:
        return np.shape(items)
    except ValueError:
        return None


def _placed(value, ans, out_axes):
    """A tangent with the examples along a first axis, of the shape of ``ans`` with its batch axis at ``out_axes``."""
    value = np.broadcast_to(value, np.shape(np.moveaxis(np.asarray(ans), out_axes, 0)))
    return np.array(np.moveaxis(value, 0, out_axes))


defjvp(vmap_at, None, rest=vmap_at_jvp)


def _nested(bdims, vmapped, args):
    """``vmapped(*args)`` for each example of an outer vmap (the arguments whose ``bdims`` is 0 hold them along a
    first axis), stacked along a first axis: one call of ``g`` vmapped over the outer and inner examples at once.

    Each argument gets one axis of ``outer * inner`` examples: an outer and
    inner batched one its two batch axes merged, one batched by one vmap
    only its examples repeated for the other's; the value's merged axis is
    split again and the inner one moved to ``out_axes`` in each example.
    """
    fn = vmapped.__astgrad_function__
    axes = vmapped._axes(len(args))
    outer = next(np.shape(a)[0] for a, d in zip(args, bdims) if d == 0)
    inner = _inner_examples(vmapped, args, bdims, axes)
    merged: list = []
    merged_axes: list[int | None] = []
    for a, d, ax in zip(args, bdims, axes):
        if d is None and ax is None:
            merged.append(a)
            merged_axes.append(None)
            continue
        a = np.asarray(a)
        if ax is None:  # outer examples only: each serves every inner one
            a = np.repeat(a, inner, axis=0)
        else:
            a = np.moveaxis(a, ax + (d == 0) if ax >= 0 else ax, int(d == 0))
            if d is None:  # inner examples only: the same for every outer one
                a = np.broadcast_to(a, (outer,) + a.shape)
            a = a.reshape((outer * inner,) + a.shape[2:])
        merged.append(a)
        merged_axes.append(0)
    value = _vmap(fn, in_axes=tuple(merged_axes), optimize=vmapped._level)(*merged)
    value = _one_of(value, "its value", fn.__qualname__)
    value = value.reshape((outer, inner) + value.shape[1:])
    out = vmapped._out_axes
    return np.moveaxis(value, 1, out + 1 if out >= 0 else out)


def vmap_at_batched(bdims, vmapped, *args):
    return _nested(bdims[1:], vmapped, args)


defbatch(vmap_at, vmap_at_batched)
vmap_at_batched.__astgrad_internal__ = True  # type: ignore[attr-defined]


def _merged(a, d, ax, outer, inner):
    """``a`` (batched by an outer vmap where ``d`` is 0, by the vmapped call along ``ax``) with one first axis of
    ``outer * inner`` examples: each outer example's inner ones in order, repeated where a vmap shares it."""
    a = np.asarray(a)
    if d is None:
        a = np.broadcast_to(a, (outer,) + a.shape)
    if ax is None:
        a = np.broadcast_to(a[:, None], (outer, inner) + a.shape[1:])
    else:
        a = np.moveaxis(a, ax + 1 if ax >= 0 else ax, 1)
    return a.reshape((outer * inner,) + a.shape[2:])


def vmap_at_vjp_batched(bdims, g, value, vmapped, *args):
    """``vmap_at_vjp`` for each example of an outer vmap (``vmap(grad(f))`` where ``f`` calls ``vmap(g)``): one
    pullback of ``g`` over the outer and inner examples at once, as ``_nested`` runs ``g``.

    Every argument a gradient flows to gets one axis of ``outer * inner``
    examples (an argument the vmapped call shares is repeated for its
    inner examples, so its gradient is the sum over them, per outer
    example); the seed, the cotangent of the call's value, gets the same.
    The gradients come back per outer example, a tuple of batched values.
    """
    fn = vmapped.__astgrad_function__
    _one_of(value, "its value", fn.__qualname__)
    _checked(vmapped, args)
    axes, out = vmapped._axes(len(args)), vmapped._out_axes
    batched = [(x, d) for x, d in zip((g, value, *args), (bdims[0], bdims[1], *bdims[3:])) if d == 0]
    outer = np.shape(batched[0][0])[0]
    inner = _inner_examples(vmapped, args, bdims[3:], axes)
    merged: list = []
    merged_axes: list[int | None] = []
    for a, d, ax in zip(args, bdims[3:], axes):
        if d is None and ax is None and not _varies(a):  # a constant every example shares
            merged.append(a)
            merged_axes.append(None)
            continue
        merged.append(_merged(a, d, ax, outer, inner))
        merged_axes.append(0)
    if bdims[0] is None:  # one cotangent for every outer example (a number standing for zeros, say)
        g = np.broadcast_to(g, np.shape(value)[1:] if bdims[1] == 0 else np.shape(value))
    seed, at = _merged(g, bdims[0], out, outer, inner), _merged(value, bdims[1], out, outer, inner)
    grads = vmap_cotangents(seed, at, _vmap(fn, in_axes=tuple(merged_axes), optimize=vmapped._level), tuple(merged))
    found: list = [None]
    for grad, a, d, ax, m in zip(grads, args, bdims[3:], axes, merged_axes):
        if grad is None or m is None:
            found.append(None)
            continue
        grad = np.asarray(grad).reshape((outer, inner) + np.shape(grad)[1:])
        found.append(np.sum(grad, axis=1) if ax is None else np.moveaxis(grad, 1, ax + 1 if ax >= 0 else ax))
    return tuple(found)


@defvjp(vmap_at_vjp)
def vmap_at_vjp_vjp(c, ans, g, value, vmapped, *args):
    """Reverse over the reverse rule, for the cotangent ``c`` of each argument's gradient: the seed's is ``g``'s
    jvp along ``c``, each argument's the jvp of the pullback along ``c`` (the hessian is symmetric).  Generated
    code calling ``vmap_at_vjp`` is differentiated by forward mode (api/higher.py reads
    ``__astgrad_forward_only__``); this rule completes the entry."""
    seed, grads = None, [None] * len(args)
    for k, ck in enumerate(tuple(c)[1:]):
        if ck is None or not _varies(args[k]):
            continue
        term = vmap_at_jvp(ck, value, vmapped, *args, argnum=k + 1)
        seed = term if seed is None else seed + term
        for j, part in enumerate(vmap_at_vjp_along_argument(ck, None, g, value, vmapped, *args, argnum=k + 3)[1:]):
            if part is not None:
                grads[j] = part if grads[j] is None else grads[j] + part
    return (seed, None, None, *grads)


def vmap_at_vjp_along_value(t, ans, g, value, vmapped, *args):
    """None: ``value`` (``g``'s, which the rule reads for its shape) moves no cotangent."""
    return (None,) * (len(args) + 1)


defjvp(vmap_at_vjp, vmap_at_vjp_along_seed, vmap_at_vjp_along_value, None, rest=vmap_at_vjp_along_argument)
vmap_at_vjp.__astgrad_forward_only__ = True  # type: ignore[attr-defined]  # grad(grad(f)): forward over reverse
# generated code calls the rules themselves: the reverse rule's derivative is its own entry (above), the forward
# rule's would be a second one, not transformed
vmap_at_jvp.__astgrad_internal__ = True  # type: ignore[attr-defined]
defbatch(vmap_at_vjp, vmap_at_vjp_batched)
vmap_at_vjp_batched.__astgrad_internal__ = True  # type: ignore[attr-defined]
vmap_at_vjp_batched.items = True  # type: ignore[attr-defined]  # a tuple of batched gradients (core/batching.py)

__all__ = ["vmap_at", "vmap_cotangents", "refusal"]
