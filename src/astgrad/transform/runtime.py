"""Helpers the generated code calls.

Only what cannot be written inline: accumulating gradients of sequences,
the transformer's functional ``append``, and splitting a rule's return value
into per-argument gradients when the rule does not return a literal tuple.
"""

from __future__ import annotations

import math

import numpy as np

from .. import rules
from ..rules import defvjp, linalg, primitive

__all__ = ["append", "accumulate", "part", "sequence_gradient", "unpacked_gradient", "gradient_tuple",
           "shape", "size", "unbroadcast", "T", "only_shape"]


@primitive
def append(items, item):
    """``items + [item]`` as a function: list appends without mutation."""
    return list(items) + [item]


@defvjp(append)
def append_vjp(g, ans, items, item):
    return g[:-1], part(g, -1)  # an appended item nothing read later has no gradient (None)


def accumulate(total, grad):
    """``total + grad`` for gradients that may be sequences or missing (None)."""
    if total is None:
        return grad
    if grad is None:
        return total
    if isinstance(total, (list, tuple)) or isinstance(grad, (list, tuple)):
        total = total if isinstance(total, (list, tuple)) else [None] * len(grad)
        grad = grad if isinstance(grad, (list, tuple)) else [None] * len(total)
        return type(total)(accumulate(a, b) for a, b in zip(total, grad))
    return total + grad


def part(grad, i):
    """Item ``i`` of a sequence gradient; 0.0 where nothing flowed."""
    if grad is None or not isinstance(grad, (list, tuple)):
        return 0.0
    value = grad[i]
    return 0.0 if value is None else value


def sequence_gradient(g, items, index):
    """The gradient of ``items`` (a list or tuple) from ``g`` flowing into ``items[index]``."""
    out = [None] * len(items)
    if isinstance(index, slice):
        for position, value in zip(range(*index.indices(len(items))), g):
            out[position] = value
    else:
        out[index] = g
    return out


def getitem_gradient(g, items, index):
    """The gradient of ``items[index]`` for a value that may be an array or a sequence."""
    if isinstance(items, (list, tuple)):
        return sequence_gradient(g, items, index)
    from ..rules import scatter
    return scatter(g, np.shape(items), index)


def unpacked_gradient(parts, value):
    """The gradient of ``value`` from those of the names it was unpacked into (``a, b = value``).

    An array gets an array (rows without a gradient are zero); a tuple or
    list gets a tuple that keeps ``None`` for parts without one.
    """
    if not isinstance(value, np.ndarray):
        return tuple(parts)
    grad = np.zeros(np.shape(value))
    for i, g in enumerate(parts):
        if g is not None:
            grad[i] = g
    return grad


def gradient_tuple(value, count):
    """A rule's return value as one gradient per positional argument."""
    if isinstance(value, tuple) and len(value) == count:
        return value
    return (value,) + (None,) * (count - 1)


def filled(value, shape):
    """``value`` spread over ``shape``: the gradient of a reduction over every axis.

    A read-only broadcast view for large shapes (no memory); a small array
    for small ones, where ``np.full`` costs a fraction of ``np.broadcast_to``.
    """
    if isinstance(value, (float, int)) and math.prod(shape) <= 4096:
        out = np.empty(shape)  # np.full is empty and copyto, through two Python-level calls
        out.fill(value)
        return out
    return np.broadcast_to(value, shape)


def zeros_for(value):
    """A zero gradient shaped like ``value``."""
    if isinstance(value, (list, tuple)):
        return type(value)(zeros_for(v) for v in value)
    if isinstance(value, float):
        return 0.0
    return np.zeros(np.shape(value))


# -- fast equivalents of numpy and rule helpers ------------------------------
# The same values as ``np.shape``, ``np.size``, ``rules.unbroadcast`` and ``linalg.T``,
# without numpy's conversion of Python numbers or its dispatch: on a number
# or a small array the call is most of the cost of the statement.

def shape(value):
    """``np.shape(value)``: ``()`` for a Python number, ``.shape`` for an array."""
    kind = type(value)
    if kind is np.ndarray or kind is np.float64 or kind is Shaped:
        return value.shape
    if kind is float or kind is int:
        return ()
    return np.shape(value)


def size(value):
    """``np.size(value)``: the number of elements."""
    kind = type(value)
    if kind is np.ndarray:
        return value.size
    if kind is Shaped:
        return math.prod(value.shape)
    return np.size(value)


def unbroadcast(g, to):
    """``rules.unbroadcast(g, to)``, returning ``g`` at once when it already has the shape ``to``.

    An array that broadcasting only gave leading axes (a bias: (32, 64) to
    (64,)) is summed over them by ``np.add.reduce``, what ``np.sum`` calls
    after its Python-level dispatch.
    """
    if type(g) is np.ndarray:
        have = g.shape
        if have == to:
            return g
        extra = len(have) - len(to)
        if extra > 0 and have[extra:] == to:
            return np.add.reduce(g, axis=tuple(range(extra)))
    elif shape(g) == to:
        return g
    return rules.unbroadcast(g, to)


def T(x):
    """``linalg.T(x)``, the transpose of the last two axes: ``x.T`` for a matrix."""
    if type(x) is np.ndarray and x.ndim == 2:
        return x.T
    return linalg.T(x)


FASTER = {rules.unbroadcast: unbroadcast, linalg.T: T}


class Shaped:
    """What the stack keeps of an array that the adjoint reads only for its shape."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


def only_shape(value):
    """``value``'s shape, for ``shape()`` to read back, instead of the array (numbers are kept)."""
    if type(value) is np.ndarray:
        return Shaped(value.shape)
    return value
