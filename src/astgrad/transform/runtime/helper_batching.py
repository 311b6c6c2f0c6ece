"""Batching rules of the helpers generated code calls (``vmap(grad(f))``, ``hessian``: generated code batched).

Grouped by what the helper does:

* checks that raise or return None (``scalar_output``, ``checks.*``,
  ``check_seed``): every example shares the answer (``shared``), since the
  examples of a batched array share its type, dtype and shape; a check of
  a value's type is asked of one example.
* shapes, counts and keys (``broadcast_shape``, ``reduced_shape``,
  ``matmul_shape``, ``reduced_count``, ``last_writes``, ``keys_of``): their
  arguments are shapes, axes and indices, which every example shares; a
  batched one (a shape that differs from example to example) is refused.
* values passed through (``only_shape``, ``stand_in``, ``cast_into``,
  ``in_place``, ``item``, ``jvp_tangent``): the helper of each example,
  with one example's shape where it compares shapes.
* gradients of arrays (``accumulate``, ``add_tangents``, ``getitem_gradient``,
  ``part``, ``split_last``, ``replacing_gradient``, ``replaced_gradient``,
  ``unpacked_gradient``, ``gradient_tuple``, the structural masks): the
  helper on each example's axes (an index moves past the batch axis).  A
  list, tuple or dict with a batch axis is refused where it is met: the
  batching sweep holds batched arrays in flat lists only, so the gradients
  of lists and dicts (``sequence_gradient``, ``add_item``, ``np.select``'s
  masks) are refused at the line, and an array helper given a container
  when it runs raises (never a number).
"""

from __future__ import annotations

import numpy as np

from ...rules import _support, batching, defbatch, sequences
from ...rules._extra import last_writes
from ...rules._forward import add_tangents
from ...rules.batching import (Unbatchable, aligned, aligned_operands, batch_index, broadcast_batch, listed,
                               scatter_examples, shared, transposed_axes, unbatchable)
from .. import runtime
from . import attributes, caller_state, checkpoints, checks, outputs, structural
from .batched_items import none_examples
from .tangents import jvp_tangent

__all__: list = []


def one_example(value):
    """The first example of the batched ``value`` (a check of its type speaks for every example)."""
    return value[0] if isinstance(value, np.ndarray) and value.ndim else value


def _missing(value) -> bool:
    """None, or a None given the batch axis (an array of None): no gradient for any example."""
    return value is None or isinstance(value, np.ndarray) and value.dtype.kind == "O" and none_examples(value)


def _array(value, what):
    """``value``, refused unless an array (a list, tuple or dict with a batch axis is not batched)."""
    if isinstance(value, (list, tuple, dict)) or not isinstance(value, (np.ndarray, np.generic, float, int, complex)):
        raise Unbatchable(f"astgrad.vmap: {what} of a {type(value).__name__} with a batch axis (vmap batches arrays, "
                          "and flat lists of them); loop over the examples")
    return value


# -- checks: one answer for every example ------------------------------------------------------

def _checked_on_one_example(check):
    def rule(bdims, value, *args, **kwargs):
        return check(one_example(value) if bdims[0] is not None else value, *args, **kwargs)
    rule.__name__ = f"{check.__name__}_batched"
    return shared(rule)


for _check in (outputs.scalar_output, outputs.aux_pair, checks.not_joined, checks.not_a_dict, checks.a_number,
               checks.a_returned_number, checks.an_array, checks.same_method):
    defbatch(_check, _checked_on_one_example(_check))


def _checked_as_batched(check):
    def rule(bdims, *args, **kwargs):
        return check(*args, **kwargs)  # reads types, and memory shared between arrays, which the batch axis keeps
    rule.__name__ = f"{check.__name__}_batched"
    return shared(rule)


for _check in (outputs.not_scalar, checks.written_through, checks.written_outside, caller_state.caller_dict,
               checkpoints.fixed_state):
    defbatch(_check, _checked_as_batched(_check))


@defbatch(runtime.check_seed)
@shared
def check_seed_batched(bdims, seed, out_shape, name):
    if bdims[1] is not None:
        unbatchable("a vjp's output shape that differs from example to example")
    return runtime.check_seeds(seed, out_shape, name)


# -- shapes, counts, keys: every example shares them ------------------------------------------

def _of_shapes(fn, what):
    def rule(bdims, *args, **kwargs):
        return unbatchable(f"{what} that differ from example to example")
    rule.__name__ = f"{fn.__name__}_batched"
    return rule


for _fn, _what in ((runtime.broadcast_shape, "broadcast_shape of shapes"),
                   (runtime.reduced_shape, "the shape of a reduction over shapes or axes"),
                   (runtime.matmul_shape, "the shape of a @ b of shapes"),
                   (_support.reduced_count, "the count of a reduction over shapes or axes"),
                   (last_writes, "the writes numpy keeps at a shape or index"),
                   (runtime.keys_of, "the keys of dicts")):
    defbatch(_fn, _of_shapes(_fn, _what))


# -- values passed through ---------------------------------------------------------------------

@defbatch(runtime.only_shape)
def only_shape_batched(bdims, value):
    return runtime.only_shape(value)  # the batched shape: shape()'s batching rule reads one example's from it


@defbatch(runtime.stand_in)
def stand_in_batched(bdims, value):
    return runtime.stand_in(value)


@defbatch(runtime.array_kind)
@shared
def array_kind_batched(bdims, x):
    return (x.shape[1:], x.dtype) if type(x) is np.ndarray else None


@defbatch(runtime.in_place)
def in_place_batched(bdims, new, kind, op):
    if bdims[1] is not None:
        unbatchable("x op= v where x's shape or dtype differs from example to example")
    if kind is None:
        return new
    return runtime.in_place(new, ((np.shape(new)[0],) + tuple(kind[0]), kind[1]), op)  # each example x's kind


@defbatch(runtime.cast_into)
def cast_into_batched(bdims, value, x, casting):
    if bdims[0] is None:  # a value every example shares, written into each example's x
        return broadcast_batch(runtime.cast_into(value, x, casting), len(x))
    return runtime.cast_into(value, x, casting)


@defbatch(attributes.item)
def item_batched(bdims, value, where):
    return attributes.item(value, where)


def _attribute_of_examples(obj, name):
    """``obj.name`` of each example of the batched array ``obj``: its transposes and its parts."""
    if type(obj) is not np.ndarray:
        raise Unbatchable(f"astgrad.vmap: the attribute {name} of a {type(obj).__name__} with a batch axis; loop over "
                          "the examples")
    if name == "T":
        return np.transpose(obj, transposed_axes(None, obj.ndim))
    if name == "mT" and obj.ndim >= 3:
        return np.swapaxes(obj, -1, -2)
    if name in ("real", "imag"):
        return getattr(obj, name)
    raise Unbatchable(f"astgrad.vmap: the attribute {name} of an array with a batch axis (x.shape, x.ndim, x.size "
                      "and x.dtype are one example's; T, mT, real and imag are batched); loop over the examples")


@defbatch(attributes.attribute)
def attribute_batched(bdims, obj, name):
    return _attribute_of_examples(obj, name)


@defbatch(attributes.field)
def field_batched(bdims, obj, name):
    return _attribute_of_examples(obj, name)


@defbatch(jvp_tangent)
def jvp_tangent_batched(bdims, value, tangent, what):
    for given in (value, tangent):
        _array(given, "the argument or tangent of a jvp called inside a differentiated function")
    shapes = [np.shape(v)[1:] if b is not None else np.shape(v) for v, b in zip((value, tangent), bdims)]
    if shapes[0] != shapes[1]:
        raise ValueError(f"astgrad.jvp: {what} has a tangent of shape {shapes[1]} and the argument has shape "
                         f"{shapes[0]}; a tangent is a direction of its argument's shape")
    tangent = np.asarray(tangent, dtype=np.result_type(tangent, 1.0))
    return tangent if bdims[1] is not None else broadcast_batch(tangent, len(value))


# -- gradients of arrays ---------------------------------------------------------------------------

def added_examples(bdims, total, grad):
    """``accumulate`` (``add_tangents``) of batched gradients: ``total + grad`` aligned as numpy aligns one
    example's, a missing one (None) the other (given the batch axis where it is shared)."""
    for given in (total, grad):
        if given is not None:
            _array(given, "the sum of gradients")
    if _missing(total) or _missing(grad):
        present, present_batched = (grad, bdims[1]) if _missing(total) else (total, bdims[0])
        if present_batched is not None or _missing(present):
            return present
        return broadcast_batch(present, len(total if bdims[0] is not None else grad))
    a, b = aligned_operands(bdims, total, grad)
    return a + b


defbatch(runtime.accumulate, added_examples)
defbatch(add_tangents, added_examples)


@defbatch(runtime.sequence_gradient)
def sequence_gradient_batched(bdims, g, items, index):
    return unbatchable("the gradient of an item of a list, tuple or dict with a batch axis (vmap holds arrays with "
                       "a batch axis in flat lists only)")


@defbatch(runtime.add_item)
def add_item_batched(bdims, total, g, items, index):
    return unbatchable("the gradient of an item of a list or dict with a batch axis (vmap holds arrays with a batch "
                       "axis in flat lists only)")


@defbatch(runtime.getitem_gradient)
def getitem_gradient_batched(bdims, g, items, index):
    if bdims[2] is not None:
        return unbatchable("the gradient of an item at an index that differs from example to example")
    _array(items, "the gradient of an item")
    shape = np.shape(items)[1:] if bdims[1] is not None else np.shape(items)
    if bdims[0] is None:  # every example's gradient the same, at an item of each example
        g = broadcast_batch(g, len(items))
    return scatter_examples(g, shape, index)


@defbatch(sequences.part)
def part_batched(bdims, grad, i):
    if bdims[1] is not None:
        return unbatchable("an item of a gradient at an index that differs from example to example")
    if _missing(grad):
        return broadcast_batch(0.0, len(grad))
    return _array(grad, "an item of a gradient")[batch_index(i)]


@defbatch(sequences.split_last)
@listed
def split_last_batched(bdims, g):
    if _missing(g):
        return g, broadcast_batch(0.0, len(g))
    _array(g, "the gradient of items + [item]")
    return g[:, :-1], g[:, -1]


@defbatch(runtime.replacing_gradient)
def replacing_gradient_batched(bdims, g, index):
    if bdims[1] is not None:
        return unbatchable("an item written at an index that differs from example to example")
    if _missing(g) and not isinstance(index, slice):
        return broadcast_batch(0.0, len(g))
    if _missing(g):
        return g
    return _array(g, "the gradient of an item written into a list")[batch_index(index)]


@defbatch(runtime.replaced_gradient)
def replaced_gradient_batched(bdims, g, index):
    if bdims[1] is not None:
        return unbatchable("an item written at an index that differs from example to example")
    if _missing(g):
        return g
    rows = np.array(_array(g, "the gradient of a list an item is written into"), copy=True)
    rows[batch_index(index)] = 0.0
    return rows


@defbatch(runtime.unpacked_gradient)
def unpacked_gradient_batched(bdims, parts, value):
    if bdims[0] is not None:
        return unbatchable("the gradient of an unpacked value from parts with a batch axis that are not a flat list")
    if type(_array(value, "the gradient of an unpacked value")) is not np.ndarray or value.ndim < 2:
        raise Unbatchable("astgrad.vmap: the gradient of an unpacked value whose examples are not arrays; loop over "
                          "the examples")
    grad = np.zeros(np.shape(value))
    for i, g in enumerate(parts):
        if g is not None:
            grad[:, i] = g  # a part every example shares
    return grad


@defbatch(runtime.gradient_tuple)
@listed
def gradient_tuple_batched(bdims, value, count, needed=(), rule="a rule"):
    if any(b is not None for b in bdims[1:]):
        return unbatchable("a rule's count of arguments that differs from example to example")
    return batching.gradients_of_items(value, count, needed, rule)


@defbatch(attributes.attribute_gradient)
def attribute_gradient_batched(bdims, g, obj, name, value):
    if name != "T" or type(obj) is not np.ndarray:
        return unbatchable("the gradient of an object's field with a batch axis (vmap batches arrays)")
    if bdims[0] is None:
        return broadcast_batch(np.transpose(g), len(obj))
    return np.transpose(g, transposed_axes(None, np.ndim(g)))


defbatch(_support.within, batching.elementwise)


# -- structural zeros: masks of each example ---------------------------------------------------------

def _joined_examples(mask, before, before_batched):
    """``mask | before`` where ``before`` is a mask of each example's shape (batched) or of one (shared)."""
    if before is None or _missing(before):
        return mask
    shape = np.shape(mask) if before_batched else np.shape(mask)[1:]
    return mask if np.shape(before) != shape else mask | before


def _given(bdims, k):
    return len(bdims) > k and bdims[k] is not None


@defbatch(structural.written)
def written_batched(bdims, grad, index, before=None):
    if bdims[1] is not None:
        return unbatchable("an item written at an index that differs from example to example")
    if type(grad) is not np.ndarray or _missing(grad):
        return None
    mask = np.zeros(grad.shape if bdims[0] is not None else (len(before),) + grad.shape, dtype=bool)
    mask[batch_index(index)] = True
    return _joined_examples(mask, before, _given(bdims, 2))


def unselected_examples(bdims, grad, condition, taken, before=None):
    """``structural.unselected`` of each example (``bdims`` of ``grad``, ``condition``, ``taken``, ``before``)."""
    if _given(bdims, 2):
        unbatchable("np.where's operand order differing from example to example")
    if type(grad) is not np.ndarray or _missing(grad):
        return None
    size = len(grad) if bdims[0] is not None else len(condition) if _given(bdims, 1) else len(before)
    example = grad.shape[1:] if bdims[0] is not None else grad.shape
    condition = np.asarray(condition, dtype=bool)
    if np.broadcast_shapes(condition.shape[1:] if _given(bdims, 1) else condition.shape, example) != example:
        return None
    if _given(bdims, 1):
        condition = aligned(condition, len(example))
    mask = np.broadcast_to(~condition if taken else condition, (size,) + example)
    if before is not None and not _missing(before) \
            and (np.shape(before)[1:] if _given(bdims, 3) else np.shape(before)) != example:
        return None
    return _joined_examples(mask, before, _given(bdims, 3))


defbatch(structural.unselected, unselected_examples)


@defbatch(structural.not_defaulted)
def not_defaulted_batched(bdims, grad, condlist, before=None):
    if _given(bdims, 1):  # (a list of batched conditions is refused where the list is given)
        return unbatchable("np.select's conditions with a batch axis")
    some = np.zeros((), dtype=bool)
    for condition in condlist:
        some = np.logical_or(some, np.asarray(condition, dtype=bool))
    return unselected_examples((bdims[0], None, None, bdims[2] if len(bdims) > 2 else None), grad, some, False, before)


@defbatch(structural.unchosen)
def unchosen_batched(bdims, grads, condlist, before=None):
    return unbatchable("the masks of np.select's choices with a batch axis (a list of masks per example)")


@defbatch(structural.nth)
def nth_batched(bdims, masks, *positions):
    return unbatchable("the masks of np.select's choices with a batch axis (a list of masks per example)")
