"""Lists and tuples of batched arrays read by an index every example shares (``astgrad.vmap``).

A list or tuple whose every item has the batch axis (core/batching.py's
*items*) is indexed as it is: its item at a number is a batched array.
The index of a loop over ``zip(...)`` or ``enumerate(...)``, which the
front end lowers to ``seq[i]``, is a name, known to be a number only when
it runs, so the batched code checks it there.  A None every example shares
(a rule's missing gradient in a tuple of batched ones) gets the batch axis
as an array of None, which ``x is None`` reads as None again.
"""

from __future__ import annotations

import operator

import numpy as np

from ...rules.batching import Unbatchable, aligned, broadcast_batch
from . import gradient_tuple, is_zero
from .tangents import zero_tangent

__all__ = ["item_of", "none_examples", "part_of_items", "gradients_of_tuple", "unpacked_gradient_of_items",
           "zero_examples", "zero_tangents_of_examples", "not_examples"]


def item_of(items, index):
    """``items[index]`` for a list or tuple of batched arrays and a number ``index``: that batched array; another
    index (a slice: a list of them) raises."""
    try:
        at = operator.index(index)
    except TypeError:
        raise Unbatchable("astgrad.vmap: a list or tuple of arrays with a batch axis indexed by other than a number; "
                          "loop over the examples") from None
    return items[at]


def none_examples(x) -> bool:
    """``x is None`` of each example of the batched ``x``, which they share: True for a None given the batch axis
    (an array of None), False for an array of anything else; examples that differ raise."""
    if x is None:  # a None in a tuple of batched values (a rule's missing gradient)
        return True
    if not isinstance(x, np.ndarray) or x.dtype.kind != "O":
        return False
    nones = [v is None for v in x.reshape(-1)]
    if all(nones):
        return True
    if any(nones):
        raise Unbatchable("astgrad.vmap: a value that is None for some examples only; loop over the examples")
    return False


def part_of_items(items, index):
    """``part(items, index)`` (a sequence gradient's item, 0.0 where nothing flowed) of a list or tuple of batched
    gradients: that batched array, or the batched 0.0 where its examples are a None given the batch axis."""
    value = item_of(items, index)
    return broadcast_batch(0.0, len(value)) if none_examples(value) else value


def gradients_of_tuple(value, count, needed=(), rule="a rule"):
    """``gradient_tuple`` of a rule's tuple of batched gradients, one per argument; a list is one argument's
    gradient, a list of batched arrays where the batched code reads a batched array, so it raises."""
    if type(value) is not tuple:
        raise Unbatchable(f"astgrad.vmap: the gradient of a list or tuple argument of {rule}, a list of values "
                          "with a batch axis; loop over the examples")
    return gradient_tuple(value, count, needed, rule)


def unpacked_gradient_of_items(parts, value, value_batched, array):
    """``unpacked_gradient(parts, value)`` (the gradient of ``value`` from those of the names ``a, b = value``
    unpacked it into) for a list or tuple of batched ``parts``: with ``array``, ``value`` an array (batched where
    ``value_batched``) gets a batched array, its rows the parts (zero where one is None); else a tuple or list gets
    the tuple of the parts, None where a part is the number zero or None.  A value of the other kind raises."""
    if array != isinstance(value, np.ndarray) or not array and not isinstance(value, (tuple, list)):
        raise Unbatchable("astgrad.vmap: the gradient of an unpacked value that is not the array or tuple the "
                          "batched code expected; loop over the examples")
    present = [g for g in parts if not none_examples(g)]
    if not array:
        return tuple(None if none_examples(g) or zero_examples(g) else g for g in parts)
    if not present:
        raise Unbatchable("astgrad.vmap: the gradient of an unpacked value with no part to give the batch size")
    size = len(present[0])
    shape = np.shape(value)[1:] if value_batched else np.shape(value)
    grad = np.zeros((size,) + shape)
    for i, g in enumerate(parts):
        if not none_examples(g):
            grad[:, i] = aligned(g, len(shape) - 1)
    return grad


def zero_examples(g) -> bool:
    """``is_zero`` of every example of the batched ``g``, which they must share: True where each is the number
    zero (or None) standing for a gradient of unknown shape (a shared ``0.0`` given the batch axis), False where
    none is (an example with axes never is); examples that differ raise, since the loop would skip the rule for
    some of them only."""
    if not isinstance(g, np.ndarray) or np.ndim(g) != 1 or g.dtype.kind not in "fO":
        return False
    zero = [is_zero(v) for v in g] if g.dtype.kind == "O" else g == 0.0
    if np.all(zero):
        return True
    if np.any(zero):
        raise Unbatchable("astgrad.vmap: a gradient that is the number zero for some examples only (a rule the loop "
                          "skips for those); loop over the examples")
    return False


def zero_tangents_of_examples(value):
    """``zero_tangent`` of each example of the batched ``value``: zeros of its shape (the batched zeros), a None
    given the batch axis kept."""
    return value if none_examples(value) else zero_tangent(value)


def not_examples(x):
    """``not x`` of each example of the batched ``x``: one truth value per example, whose negation each gets; an
    example holding more than one value raises as ``not`` of it does."""
    if np.ndim(x) != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous (astgrad.vmap: `not` "
                         "of an example holding more than one value)")
    return np.logical_not(x)
