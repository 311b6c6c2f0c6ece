"""Derivative rules for callables that read Python sequences of values.

``np.array([x, 2 * x])`` builds an array from a (nested) list; its gradient
is the incoming gradient cut back into the same nesting.  The builtins
``sum``, ``max`` and ``min`` over a list (``sum(losses)``) or over an array
(its first axis, as Python iterates it) are everyday Python and get rules too.
"""

from __future__ import annotations

import builtins

import numpy as np

from ._registry import defjvp, defvjp, primitive
from ._support import integral, unbroadcast


def _like(g, obj):
    """``g`` cut into the nesting of ``obj``: lists for lists, ``obj``'s shape for an array or a number."""
    if isinstance(obj, (list, tuple)):
        return [_like(g[i], item) for i, item in enumerate(obj)]
    return np.reshape(g, np.shape(obj))


@defvjp(np.array)
def array(g, ans, object, dtype=None, *args, **kwargs):
    if dtype is not None and integral(ans.dtype):
        return _like(np.zeros_like(g), object)
    return _like(g, object)


@defvjp(np.asarray)
def asarray(g, ans, a, dtype=None, *args, **kwargs):
    if dtype is not None and integral(ans.dtype):
        return _like(np.zeros_like(g), a)
    return _like(g, a)


@defvjp(builtins.sum)
def builtin_sum(g, ans, iterable, start=0):
    """Every item gets ``g`` (summed back to its own shape); an array's first axis is what is iterated."""
    if isinstance(iterable, (list, tuple)):
        return [unbroadcast(g, np.shape(item)) for item in iterable], g
    return np.broadcast_to(g, np.shape(iterable)), g


def _chosen(items, ans):
    """The position of the item ``max``/``min`` returned: the first one it is, else the first equal one."""
    for i, item in enumerate(items):
        if item is ans:
            return i
    for i, item in enumerate(items):
        if np.all(item == ans):
            return i
    raise ValueError("astgrad: cannot tell which item max/min returned; use np.max or np.min")


def _extreme(g, ans, args):
    """The gradient of ``max``/``min``: all of it to the item returned, as Python returns the first extreme."""
    items = args[0] if len(args) == 1 else args
    k = _chosen(items, ans)
    if isinstance(items, (list, tuple)):
        grads = [np.zeros_like(item) for item in items]
        grads[k] = g
        return grads if len(args) == 1 else tuple(grads)
    out = np.zeros(np.shape(items), np.result_type(items))
    out[k] = g
    return out


@defvjp(builtins.max)
def builtin_max(g, ans, *args, key=None, default=None):
    return _extreme(g, ans, args)


@defvjp(builtins.min)
def builtin_min(g, ans, *args, key=None, default=None):
    return _extreme(g, ans, args)


# -- forward rules: the tangents of the items, arranged as the output arranges the items


@defjvp(np.array)
def array_jvp(t, ans, object, dtype=None, *args, **kwargs):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.array(t, dtype=np.result_type(ans, 1.0))


@defjvp(np.asarray)
def asarray_jvp(t, ans, a, dtype=None, *args, **kwargs):
    if dtype is not None and integral(ans.dtype):
        return np.zeros(np.shape(ans))
    return np.asarray(t, dtype=np.result_type(ans, 1.0))


def builtin_sum_jvp(t, ans, iterable, start=0):
    """Python adds the items (an array's rows) one after the other: so do their tangents."""
    total = 0.0
    for item in t:
        total = total + item
    return total


def builtin_sum_jvp_start(t, ans, iterable, start=0):
    return t


defjvp(builtins.sum, builtin_sum_jvp, builtin_sum_jvp_start)


def builtin_extreme_jvp(t, ans, *args, argnum, key=None, default=None):
    """The tangent of the item ``max``/``min`` returned (the first extreme, as its reverse rule); others give none."""
    if len(args) == 1:
        return t[_chosen(args[0], ans)]
    return t if _chosen(args, ans) == argnum else None


defjvp(builtins.max, rest=builtin_extreme_jvp)
defjvp(builtins.min, rest=builtin_extreme_jvp)


# -- the transformer's list appends ------------------------------------------
# ``items.append(item)`` on a list the function builds is normalised into
# ``items = append(items, item)``, so the list's versions are plain values.
# Where no other name, call or return can see the list (transform/front/lists.py
# proves it), ``grow`` appends in place instead and the adjoint pops the item
# again: no copy per append, so a loop of n appends costs n, not n * n.

@primitive
def append(items, item):
    """``items + [item]`` as a function: list appends without mutation."""
    return list(items) + [item]


def grow(items, item):
    """``items.append(item)``, returning ``items``: ``append`` in place, with ``append``'s rule."""
    items.append(item)
    return items


@defvjp(append)
def append_vjp(g, ans, items, item):
    rest, last = split_last(g)  # an appended item nothing read later has no gradient (0.0)
    return rest, last


class GradientList(list):
    """A list's gradient that the generated code made and only one adjoint name holds.

    Its helpers (``split_last``, the runtime's ``add_item``) change it in
    place, so gradients of lists built by appends in a loop cost one item
    per step rather than a copy of the list.  A gradient list from anywhere
    else (a user's seed, a rule's result) is copied once first.
    """

    __slots__ = ()


class GradientDict(dict):
    """A dict's gradient that the generated code made and only one adjoint name holds (the keys that got
    one): the runtime's ``add_item``, ``accumulate`` and ``replaced_gradient`` change it in place, so a
    dict keyed by step costs one entry per read rather than a copy of the dict."""

    __slots__ = ()


def split_last(g):
    """``(g[:-1], g[-1])`` for the gradient of ``items + [item]``: the list's, then the item's."""
    if type(g) is np.ndarray:  # numpy read the list as one array: rows (views, no copy)
        return g[:-1], g[-1]
    if not isinstance(g, (list, tuple)):
        return g, 0.0  # no gradient flowed into the list
    rest = g if type(g) is GradientList else GradientList(g)
    last = rest.pop()
    return rest, 0.0 if last is None else last


def part(grad, i):
    """Item ``i`` (a position, or a dict's key) of a sequence gradient; 0.0 where nothing flowed.

    A list that numpy read as an array (``np.sum([a, b])``) gets an array
    gradient: item ``i`` is its row ``i``.  Generated code calls it too.
    """
    if type(grad) is np.ndarray:
        return grad[i]
    if isinstance(grad, dict):  # a dict's gradient holds the keys that got one
        value = grad.get(i)
        return 0.0 if value is None else value
    if grad is None or not isinstance(grad, (list, tuple)):
        return 0.0
    value = grad[i]
    return 0.0 if value is None else value


def append_jvp_items(t, ans, items, item):
    return list(t) + [None]


def append_jvp_item(t, ans, items, item):
    return [None] * len(items) + [t]


defjvp(append, append_jvp_items, append_jvp_item)
