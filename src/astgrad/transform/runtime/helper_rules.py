"""Table entries for the helpers generated code calls, so that generated code can be differentiated again.

A hessian is the derivative of a generated gradient.  The engines read the
adjoint's calls of ``filled``, ``unbroadcast`` or ``shape`` as they read
``np.sin``: from the table.  The helpers that spread or sum a gradient are
linear in it, so each rule is the helper again (forward) or its transpose
(reverse); the ones that compute shapes, counts or checks carry no gradient.

The helpers that write into an operand (``add_into`` and its family, at
optimize=2) have no entry on purpose: a second sweep reads the operand
after the write, so their derivative would be computed from the wrong
values.  Composed transformations differentiate the optimize=1 adjoint,
which has none of them.

The entries live here, beside the runtime, because the rule table must not
import the transformer.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ...rules import _support, batching, defbatch, defjvp, defnondiff, defvjp
from ...rules._support import expand_reduced, filled, reverse_cumsum
from ...rules.sequences import GradientDict
from . import attributes, caller_state, checkpoints, checks, structural
from . import outputs
from .. import runtime
from .attributes import attribute_gradient, attribute_tangent
from . import batched_items
from .batched_items import zero_examples, zero_tangents_of_examples
from . import (T, broadcast_shape, getitem_gradient, gradient_tuple, is_zero, part, replacing_gradient,
               sequence_gradient, shape, split_last, unbroadcast, unpacked_gradient)
from .tangents import add_tangents, jvp_tangent, tangent_of, zero_tangent


# -- shapes, counts and checks: no gradient flows through them --------------

defnondiff(runtime.shape, runtime.keys_of, runtime.size, runtime.ndim, runtime.broadcast_shape, runtime.reduced_shape,
           runtime.matmul_shape, runtime.only_shape, runtime.check_seed, runtime.is_zero, _support.reduced_count,
           _support.within, outputs.scalar_output, outputs.not_scalar, outputs.aux_pair, zero_tangent,
           checks.not_joined, checks.not_a_dict, checks.written_through, checks.a_number,
           checks.a_returned_number, checks.written_outside, checks.same_method,
           checks.an_array, caller_state.caller_dict, runtime.floats, runtime.checked, checkpoints.fixed_state)


# -- spreading a gradient over a shape, and summing it back -------------------

@defvjp(_support.filled)
def filled_vjp(g, ans, g_in, shape):
    return g  # the engines sum it back to g_in's shape


@defjvp(_support.filled)
def filled_jvp(t, ans, g_in, shape):
    return t  # the engines spread it over the output's shape


def _unbroadcast_vjp(g, ans, g_in, to):
    """Spread ``g`` back over the shape ``g_in`` and ``to`` broadcast to (the engines then sum it to ``g_in``'s)."""
    return filled(g, broadcast_shape(shape(g), shape(g_in)))


def _unbroadcast_jvp(t, ans, g_in, to):
    return unbroadcast(t, to)


for _helper in (runtime.unbroadcast, _support.unbroadcast):
    defvjp(_helper, _unbroadcast_vjp)
    defjvp(_helper, _unbroadcast_jvp)


def _summed_vjp(g, ans, g_in):
    """``summed(g_in)`` is ``unbroadcast(g_in, ())``: ``g`` spread back over ``g_in``'s shape."""
    return filled(g, broadcast_shape(shape(g), shape(g_in)))


def _summed_jvp(t, ans, g_in):
    return runtime.summed(t)


defvjp(runtime.summed, _summed_vjp)
defjvp(runtime.summed, _summed_jvp)


@defvjp(_support.expand_reduced)
def expand_reduced_vjp(g, ans, g_in, shape, axis=None, keepdims=False):
    if not len(shape):
        return g
    return np.sum(g, axis=axis, keepdims=keepdims)  # the engines sum on to g_in's shape, if it is smaller


@defjvp(_support.expand_reduced)
def expand_reduced_jvp(t, ans, g_in, shape, axis=None, keepdims=False):
    return expand_reduced(t, shape, axis, keepdims)


@defvjp(runtime.T)
def transpose_vjp(g, ans, x):
    return T(g)


# -- batching rules of the helpers (vmap of generated code: per-example gradients) ------------------

@defbatch(runtime.shape)
@batching.shared
def shape_batched(bdims, value):
    return shape(value)[1:]


@defbatch(runtime.size)
@batching.shared
def size_batched(bdims, value):
    return int(np.prod(shape(value)[1:]))


@defbatch(runtime.ndim)
@batching.shared
def ndim_batched(bdims, value):
    return len(shape(value)) - 1


@defbatch(runtime.floats)
@batching.shared
def floats_batched(bdims, *values):
    return runtime.floats(*values)  # an array of examples has one example's dtype


@defbatch(runtime.checked)
@batching.shared
def checked_batched(bdims, value):
    return runtime.checked(value)  # numpy raised, if it does, where the value was computed


@defbatch(runtime.is_zero)
@batching.shared
def is_zero_batched(bdims, g):
    return zero_examples(g)


@defbatch(zero_tangent)
def zero_tangent_batched(bdims, value):
    return zero_tangents_of_examples(value)


for _helper in (runtime.unbroadcast, _support.unbroadcast):
    defbatch(_helper, batching.unbroadcast_batched)


@defbatch(runtime.summed)
def summed_batched(bdims, g):
    return batching.unbroadcast_batched((bdims[0], None), g, ())
defbatch(_support.filled, batching.filled_batched)
defbatch(_support.within, batching.within_batched)
defbatch(_support.expand_reduced, batching.expand_reduced_batched)


@defbatch(runtime.T)
def transpose_batched(bdims, x):
    if np.ndim(x) >= 3:
        return T(x)
    return batching.unbatchable("T (the transpose of the last two axes) of one example with fewer than two axes")


@defjvp(runtime.T)
def transpose_jvp(t, ans, x):
    return T(t)


@defvjp(_support.reverse_cumsum)
def reverse_cumsum_vjp(g, ans, x, axis):
    return np.cumsum(g, axis)


@defjvp(_support.reverse_cumsum)
def reverse_cumsum_jvp(t, ans, x, axis):
    return reverse_cumsum(t, axis)


defbatch(_support.reverse_cumsum, batching.reverse_cumsum_batched)


# -- a gradient gathered from the names a value was unpacked into (a, b = x) ---

@defvjp(runtime.unpacked_gradient)
def unpacked_gradient_vjp(g, ans, parts, value):
    return [None if part is None else g[i] for i, part in enumerate(parts)]


def _unpacked_gradient_jvp(t, ans, parts, value):
    return unpacked_gradient([None if part is None else tangent for part, tangent in zip(parts, t)], value)


def _reads_only_the_shape(t, ans, *args):
    return None  # the value unpacked is read for its type and shape


def _an_index(t, ans, *args):
    return None  # a key or position says where a gradient goes; a tangent on it (a key popped from a
    # stack beside values that have one) moves nothing


defjvp(runtime.unpacked_gradient, _unpacked_gradient_jvp, _reads_only_the_shape)


def _in_place_vjp(g, ans, new, kind, op):
    return g  # a cast between floats (float32 += float64) passes the gradient as it is


def _in_place_jvp(t, ans, new, kind, op):
    return t


def _read_for_dtype_and_shape(t, ans, *args):
    return None


def _passed_first(t, ans, *args):
    return t


def _cast_into_vjp(g, ans, value, x, casting):
    return g, 0.0, None  # x is read for its dtype alone


defvjp(runtime.cast_into, _cast_into_vjp)
defjvp(runtime.cast_into, _passed_first, _read_for_dtype_and_shape, None)
defvjp(runtime.in_place, _in_place_vjp)
defjvp(runtime.in_place, _in_place_jvp)
defnondiff(runtime.array_kind)


# -- the helpers of generated forward-mode code (a jvp differentiated again: a third derivative) -----
# ``zero_tangent(y)`` is zeros whatever ``y`` holds; ``tangent_of(t, ans)`` spreads ``t`` over ``ans``'s shape
# and dtype (``ans`` is read for them alone); ``add_tangents`` adds.  All are linear in the tangents.

def _tangent_of_vjp(g, ans, t, like):
    return g, 0.0  # the engines sum g back to t's shape; like is read for its shape and dtype (a zero, not None:
    # reverse mode over a jvp differentiates like too, and None there is an error)


def _add_tangents_vjp(g, ans, a, b):
    return g, g


def _spread(t, ans, tangent, like):
    return tangent_of(t, like)


def _passed(t, ans, *args):
    return t


defvjp(tangent_of, _tangent_of_vjp)
defjvp(tangent_of, _spread, _reads_only_the_shape)
defvjp(add_tangents, _add_tangents_vjp)
defjvp(add_tangents, _passed, _passed)


defbatch(tangent_of, batching.tangent_of_batched)  # a jvp batched over its tangents (hessian, jacfwd)


def _jvp_tangent_vjp(g, ans, value, tangent, what):
    return 0.0, g, None  # the argument is read for its shape alone


defvjp(jvp_tangent, _jvp_tangent_vjp)
defjvp(jvp_tangent, _reads_only_the_shape, _passed)


# -- gradients of containers and lists, and a rule's gradients split per argument ---
# Each is linear in the gradients it is given (the containers, indexes and
# counts only say where they go), so its forward rule is the helper again,
# applied to the tangent, and its reverse rule the transpose.  The forward
# sweep adds the contributions of several arguments with ``add_tangents``,
# key by key for dicts (see CONTAINER_VALUED in forward.py).

def _gradient_like(g, value):
    """``g`` read as the gradient of ``value``: key by key, item by item, summed to an array's shape."""
    if value is None or is_zero(g):
        return None
    if isinstance(value, dict):
        return {key: _gradient_like(part(g, key), item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_gradient_like(part(g, i), item) for i, item in enumerate(value))
    return unbroadcast(g, shape(value))


@defvjp(runtime.accumulate)
def accumulate_vjp(g, ans, total, grad):
    return _gradient_like(g, total), _gradient_like(g, grad)


defjvp(runtime.accumulate, _passed, _passed)


@defvjp(runtime.sequence_gradient)
def sequence_gradient_vjp(g, ans, grad, items, index):
    return replacing_gradient(g, index)


def sequence_gradient_jvp(t, ans, grad, items, index):
    return sequence_gradient(t, items, index)


defjvp(runtime.sequence_gradient, sequence_gradient_jvp, _reads_only_the_shape, _an_index)  # items: kind, length


@defvjp(runtime.getitem_gradient)
def getitem_gradient_vjp(g, ans, grad, items, index):
    if isinstance(items, (list, tuple, dict)):
        return replacing_gradient(g, index)
    return rules.getitem(g, index)


def getitem_gradient_jvp(t, ans, grad, items, index):
    return getitem_gradient(t, items, index)


defjvp(runtime.getitem_gradient, getitem_gradient_jvp, _reads_only_the_shape, _an_index)


@defvjp(attributes.attribute)
def attribute_vjp(g, ans, obj, name):
    return attribute_gradient(g, obj, name, ans), None


@defjvp(attributes.attribute)
def attribute_jvp(t, ans, obj, name):
    return attribute_tangent(t, obj, name, ans)


# field: the read generated code writes (attribute, with the check of types numpy gives other meanings)
defvjp(attributes.field, attribute_vjp)
defjvp(attributes.field, attribute_jvp)
# item: the value itself, looked at; stand_in: the value itself (ones stand in only for a Shaped, never differentiated)
defvjp(attributes.item, lambda g, ans, value, where: (g, None))
defjvp(attributes.item, lambda t, ans, value, where: t)
defvjp(runtime.stand_in, lambda g, ans, value: g)
defjvp(runtime.stand_in, lambda t, ans, value: t)


@defvjp(attributes.attribute_gradient)
def attribute_gradient_vjp(g, ans, grad, obj, name, value):
    return attribute_tangent(g, obj, name, value)  # the item at the child obj.name read


def _attribute_gradient_jvp(t, ans, grad, obj, name, value):
    return attribute_gradient(t, obj, name, value)


defjvp(attributes.attribute_gradient, _attribute_gradient_jvp, _reads_only_the_shape, None, _reads_only_the_shape)


@defvjp(runtime.add_item)
def add_item_vjp(g, ans, total, grad, items, index):
    return _gradient_like(g, total), replacing_gradient(g, index)


def _added_item_jvp(t, ans, total, grad, items, index):
    return sequence_gradient(t, items, index)


defjvp(runtime.add_item, _passed, _added_item_jvp, _reads_only_the_shape, _an_index)


# items[index] = value in a list or dict: the value's gradient is the item's part of the container's, and the
# container's keeps the rest.  replaced_gradient drops the item from a GradientDict in place, which the
# generated code may do to its own; a rule works on a copy, as the gradient or tangent it is given may be
# read again.

def _own(g):
    return GradientDict(g) if isinstance(g, dict) else g


@defvjp(runtime.replacing_gradient)
def replacing_gradient_vjp(g, ans, grad, index):
    return None if is_zero(g) or grad is None else getitem_gradient(g, grad, index)


def replacing_gradient_jvp(t, ans, grad, index):
    return replacing_gradient(t, index)


defjvp(runtime.replacing_gradient, replacing_gradient_jvp, _an_index)


@defvjp(runtime.replaced_gradient)
def replaced_gradient_vjp(g, ans, grad, index):
    return runtime.replaced_gradient(_own(g), index)


def replaced_gradient_jvp(t, ans, grad, index):
    return runtime.replaced_gradient(_own(t), index)


defjvp(runtime.replaced_gradient, replaced_gradient_jvp, _an_index)


@defvjp(runtime.part)
def part_vjp(g, ans, grad, i):
    if is_zero(grad):
        return None  # the part is the number 0.0, whatever moves
    return getitem_gradient(g, grad, i)


@defjvp(runtime.part)
def part_jvp(t, ans, grad, i):
    return part(t, i)


@defvjp(runtime.split_last)
def split_last_vjp(g, ans, grad):
    rest, last = g
    if type(grad) is np.ndarray:  # rows of an array
        out = np.zeros(grad.shape, dtype=np.result_type(grad, 1.0))
        out[:-1] = 0.0 if rest is None else rest
        out[-1] = 0.0 if last is None else last
        return out
    if not isinstance(grad, (list, tuple)):
        return rest
    return list(rest) + [last]


@defjvp(runtime.split_last)
def split_last_jvp(t, ans, grad):
    return split_last(t)


@defvjp(runtime.gradient_tuple)
def gradient_tuple_vjp(g, ans, value, count, needed=(), rule="a rule"):
    if isinstance(value, tuple):  # the gradient of the argument value, a tuple: the first of the rule's
        return tuple(g[:len(value)]) + (None,) * (len(value) - count), None, None, None
    return g[0]


@defjvp(runtime.gradient_tuple)
def gradient_tuple_jvp(t, ans, value, count, needed=(), rule="a rule"):
    return gradient_tuple(t, count)


# -- structural zeros: a gradient cleaned where it is structurally zero --------

defnondiff(structural.written, structural.unselected, structural.unchosen, structural.not_defaulted, structural.nth)


@defvjp(structural.cleaned)
def cleaned_vjp(g, ans, mask, grad):
    return None, structural.cleaned(mask, g)


@defjvp(structural.cleaned, argnum=1)
def cleaned_jvp(t, ans, mask, grad):
    return structural.cleaned(mask, t)


@defbatch(structural.cleaned)
def cleaned_batched(bdims, mask, grad):
    # each example of grad cleaned where its mask (each example's, or one every example shares) says
    if mask is None or batched_items.none_examples(mask):
        return grad if bdims[1] is not None else batching.broadcast_batch(grad, len(mask))
    example = shape(grad)[1:] if bdims[1] is not None else shape(grad)
    if (mask.shape[1:] if bdims[0] is not None else mask.shape) != example:
        return grad if bdims[1] is not None else batching.broadcast_batch(grad, len(mask))
    return np.where(mask, np.zeros((), np.result_type(grad)), grad)


from . import helper_batching  # noqa: E402,F401  (the batching rules of the helpers whose entries are made above)
