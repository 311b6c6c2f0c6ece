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

from ...rules.batching import Unbatchable, aligned, broadcast_batch, spread_examples
from . import gradient_tuple, is_zero, sequence_gradient
from .tangents import tangent_of, zero_tangent
from ...rules.sequences import GradientList

__all__ = ["item_of", "part_of_array", "tangent_of_kinds", "split_last_items", "add_tangents_items",
           "isinstance_examples", "every_item_batched", "any_example", "each_example", "zero_items",
           "accumulate_items", "gradient_of_items", "none_examples", "part_of_items", "gradients_of_tuple",
           "unpacked_gradient_of_items", "zero_examples", "zero_tangents_of_examples", "not_examples"]


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


def gradient_of_items(g, items, index, g_items):
    """``sequence_gradient(g, items, index)`` (``getitem_gradient`` too) of a list or tuple ``items`` (of batched
    arrays, or shared: only its length is read): a list of batched gradients, None where nothing flowed.  ``g`` is one batched gradient (``index`` must
    be a number) or, with ``g_items``, a list of them (a slice's); another pairing raises."""
    if not isinstance(items, (list, tuple)):
        raise Unbatchable("astgrad.vmap: the gradient of an item of a value the batched code expected to be a list "
                          "or tuple; loop over the examples")
    if not g_items:
        item_of(items, index)  # a number, in range
    elif not isinstance(index, slice) or not isinstance(g, (list, tuple)):
        raise Unbatchable("astgrad.vmap: the gradient of a slice of a list or tuple of arrays with a batch axis "
                          "that is not a list of them; loop over the examples")
    return sequence_gradient(g, items, index)


def add_tangents_items(a, b, a_kind, b_kind):
    """``add_tangents(a, b)`` where one is a list or tuple of batched tangents (kind True), the other shared
    (None), a batched array (False) or such a list: item by item; a number added to a list must be the zero a
    join writes (``add_tangents`` raises for another), an array adds its rows."""
    for value, kind in ((a, a_kind), (b, b_kind)):
        if kind is None and not (value is None or type(value) is float and value == 0.0 or isinstance(
                value, (list, tuple))) or kind is False and np.ndim(value) < 2 and not (
                none_examples(value) or zero_examples(value)):
            raise Unbatchable("astgrad.vmap: a tangent that is a number other than zero added to that of a list; "
                              "loop over the examples")
    return accumulate_items(a, b, a_kind, b_kind)


def split_last_items(g, size):
    """``split_last(g)`` of a list of batched gradients: the list's (the same list, as ``split_last`` keeps it)
    and the last item's, the batched 0.0 where nothing flowed."""
    if not isinstance(g, (list, tuple)):
        if none_examples(g):  # nothing flowed into the list yet
            return g, broadcast_batch(0.0, size)
        raise Unbatchable("astgrad.vmap: the gradient of a list that is not a list of arrays with a batch axis; "
                          "loop over the examples")
    rest = g if type(g) is GradientList else GradientList(g)
    last = rest.pop()
    return rest, broadcast_batch(0.0, size) if last is None or none_examples(last) else last


def tangent_of_kinds(t, like, kind, size):
    """``tangent_of(t, like)`` of a batched tangent ``t`` of ``kind`` (None shared, False a batched array, True a
    list or tuple of them, a tuple of kinds item by item) of a value ``like`` every example shares: each part
    spread over its item's shape, None as batched zeros."""
    if kind is None:
        return tangent_of(t, like)
    if kind is False:
        if t is None or none_examples(t):
            return broadcast_batch(zero_tangent(like), size)
        return spread_examples(t, like, False)
    if not isinstance(like, (tuple, list)):
        raise Unbatchable("astgrad.vmap: the tangent of a tuple or list spread over a value that is not one; loop "
                          "over the examples")
    kinds = kind if type(kind) is tuple else (False,) * len(like)
    if t is None or not isinstance(t, (tuple, list)) and none_examples(t):
        t = (None,) * len(like)
    if not isinstance(t, (tuple, list)) or len(t) != len(like) or len(kinds) != len(like):
        raise Unbatchable("astgrad.vmap: the tangent of a tuple or list spread over a value of another length; "
                          "loop over the examples")
    return type(t)(tangent_of_kinds(p, o, k, size) for p, o, k in zip(t, like, kinds))


def part_of_array(g, index):
    """``part(g, index)`` of a batched array ``g`` (a list's gradient numpy read as one array): each example's row
    ``index``; the batched 0.0 where each example's is no gradient (the number zero or None)."""
    if np.ndim(g) >= 2:
        return g[:, index]
    if none_examples(g) or zero_examples(g):
        return broadcast_batch(0.0, len(g))
    raise Unbatchable("astgrad.vmap: an item of a list's gradient that is a number for each example; loop over "
                      "the examples")


def accumulate_items(total, grad, total_kind, grad_kind):
    """``accumulate(total, grad)`` where one is a list or tuple of batched gradients (kind True), the other shared
    (None), a batched array (False) or such a list: item by item, as ``accumulate`` adds each example's (a number
    adds nothing to a list, an array with axes adds its rows), batched items aligned to each other's ranks."""
    lists = [v for v, k in ((total, total_kind), (grad, grad_kind)) if k is True and isinstance(v, (list, tuple))]
    if not lists:  # a list's gradient not there yet on either side: a None given the batch axis
        if all(k is not True or none_examples(v) for v, k in ((total, total_kind), (grad, grad_kind))):
            return total if total_kind is True else grad
        raise Unbatchable("astgrad.vmap: the gradient of a list that is not a list of arrays with a batch axis; "
                          "loop over the examples")
    count, kind = len(lists[0]), type(lists[0])
    pairs = zip(_gradient_items(total, total_kind, count), _gradient_items(grad, grad_kind, count))
    return kind([b if a is None else a if b is None else _sum(a, b) for a, b in pairs])


def _gradient_items(value, kind, count):
    """``value``'s items as each example's ``accumulate`` reads a list's gradient (runtime's ``_items``), None where
    nothing flowed."""
    if kind is True:
        if not isinstance(value, (list, tuple)):
            if none_examples(value):  # no gradient yet (a None given the batch axis)
                return [None] * count
            raise Unbatchable("astgrad.vmap: the gradient of a list that is not a list of arrays with a batch axis; "
                              "loop over the examples")
        if len(value) != count:
            raise Unbatchable("astgrad.vmap: gradients of lists of different lengths added; loop over the examples")
        return [None if v is None or none_examples(v) else v for v in value]
    if kind is None:
        if isinstance(value, (list, tuple)) or type(value) is np.ndarray and np.ndim(value):
            if isinstance(value, (list, tuple)) and all(v is None or is_zero(v) for v in value):
                return [None] * count
            raise Unbatchable("astgrad.vmap: a gradient every example shares added to that of a list of arrays with "
                              "a batch axis; loop over the examples")
        return [None] * count  # a number (the 0.0 a join writes) adds nothing to a list
    if np.ndim(value) < 2 or none_examples(value):  # each example's a number
        return [None] * count
    rows = np.moveaxis(value, 1, 0)
    if len(rows) != count:
        raise Unbatchable("astgrad.vmap: gradients of lists of different lengths added; loop over the examples")
    return list(rows)


def _sum(a, b):
    a, b = aligned(a, np.ndim(b) - 1), aligned(b, np.ndim(a) - 1)
    return a + b


def zero_items(g) -> bool:
    """``is_zero`` of a list or tuple of batched gradients, which every example shares: a tuple of None (or of
    None given the batch axis) is no gradient; examples that differ raise."""
    if not isinstance(g, (list, tuple)):
        return none_examples(g)  # a None given the batch axis
    return type(g) is tuple and all(v is None or none_examples(v) for v in g)


def each_example(check, size, kinds, *args, **kwargs):
    """``check(*args, **kwargs)`` (a function that only raises) for each example: a batched argument (kind False)
    gives its row, a list or tuple of batched arrays (True) each item's, a shared one (None) itself."""
    def example(a, kind, k):
        if kind is None or a is None:
            return a
        if kind is False or not isinstance(a, (list, tuple)):  # an array, or a None given the batch axis
            return a[k]
        return type(a)(example(v, False, k) for v in a)

    for k in range(size):
        check(*(example(a, kind, k) for a, kind in zip(args, kinds)), **kwargs)


def any_example(test) -> bool:
    """Whether any example's ``test`` holds (an ``if`` that raises: a loop over the examples raises at the first
    that holds); an example holding more than one value raises as its ``if`` does."""
    if np.ndim(test) != 1:
        raise ValueError("The truth value of an array with more than one element is ambiguous (astgrad.vmap: an "
                         "if's test holding more than one value for an example)")
    return bool(np.any(test))


def every_item_batched(items, size, batched):
    """The tuple ``items`` with its shared items (``batched`` false) given the batch axis."""
    return tuple(v if b else broadcast_batch(v, size) for v, b in zip(items, batched))


def isinstance_examples(x, kind, container):
    """``isinstance(example, kind)`` of every example of ``x``, which they must share: a list or tuple of batched
    values (``container``) is each example's list or tuple; a batched array's examples are arrays (views of it),
    except where each is a number, whose type the batch does not keep (a Python float or a numpy scalar): there
    the answer must not depend on it, else it raises."""
    if container:
        return isinstance(None if not isinstance(x, (list, tuple)) and none_examples(x) else x, kind)
    if not isinstance(x, np.ndarray) or np.ndim(x) == 0:
        raise Unbatchable("astgrad.vmap: isinstance of a value with a batch axis that is not an array; loop over the "
                          "examples")
    if np.ndim(x) > 1 or not len(x):
        return isinstance(x[:1].reshape(np.shape(x)[1:]), kind)
    numbers = {isinstance(x[k], kind) for k in range(len(x))}
    answers = numbers | {isinstance(np.asarray(x[0]), kind)}
    if x.dtype.kind in "biufc":
        answers |= {isinstance(x[0].item(), kind)}
    if len(answers) != 1:
        raise Unbatchable("astgrad.vmap: isinstance of examples that are numbers, whose type (a Python number, a "
                          "numpy scalar or an array of no axes) the batch does not keep; loop over the examples")
    return answers.pop()


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
