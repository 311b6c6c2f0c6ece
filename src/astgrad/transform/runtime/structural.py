"""Structural zeros: entries of a gradient that are zero because of the program's structure.

``inv_r = 1 / np.sqrt(r2); inv_r[r2 == 0] = 0``: the entries the item
assignment overwrites reach nothing, so their adjoint is exactly zero; the
rule of ``1 / np.sqrt(r2)`` multiplies it by the derivative there, which is
infinite, and ``0 * inf`` is NaN (JAX's and PyTorch's "double where" trap).
The same holds for the side of ``np.where(c, a, b)`` it does not select,
and for the entries of each choice (and the default) ``np.select`` does
not take.

The reverse sweep knows where such zeros stand and carries them as a mask:
``written`` (the entries an item assignment overwrote) and ``unselected``
(the entries ``np.where`` did not take from an operand), ``unchosen`` (a
list of them, one for each choice ``np.select`` picks from, which the
adjoint of the list literal hands to its items with ``nth``) and
``not_defaulted`` (``np.select``'s default) make it beside the
operand's adjoint, and the rule of the operation that produced that
operand has its gradients ``cleaned``: zero at the mask, whatever the rule
computed there.  Only those entries change: a NaN anywhere else (a true
one, from a derivative that is infinite where the value is used) stays.
The mask passes on through elementwise operations whose operand has the
result's shape (the same entries), while the operand's adjoint gets nothing
else (reverse.py decides that); a shape that does not match drops it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["written", "unselected", "unchosen", "not_defaulted", "nth", "cleaned"]


def written(grad, index, before=None):
    """The entries of ``grad`` (an array gradient) that ``a[index] = v`` overwrote, or'ed with ``before``
    (the mask of the result's own adjoint); None where ``grad`` is not an array."""
    if type(grad) is not np.ndarray:
        return None
    mask = np.zeros(grad.shape, dtype=bool)
    mask[index] = True
    return _joined(mask, before)


def unselected(grad, condition, taken, before=None):
    """The entries of an operand's gradient ``grad`` that ``np.where(condition, ...)`` did not take from it
    (``taken``: whether it is the operand taken where the condition holds), or'ed with ``before``; None
    unless the operand has the result's shape (its gradient is then not a sum over broadcast entries)."""
    if type(grad) is not np.ndarray:
        return None
    if before is None and type(condition) is np.ndarray and condition.dtype is _BOOL and condition.shape == grad.shape:
        return ~condition if taken else condition  # a comparison of the operand's shape, in a loop: no broadcast_to
    condition = np.asarray(condition, dtype=bool)
    if np.broadcast_shapes(condition.shape, grad.shape) != grad.shape:
        return None
    mask = np.broadcast_to(~condition if taken else condition, grad.shape)
    if before is not None and np.shape(before) != grad.shape:
        return None
    return _joined(mask, before)


def unchosen(grads, condlist, before=None):
    """For the choices of ``np.select(condlist, choices)``, whose gradients are ``grads``: a list with, for
    each, the entries its condition is not the first true one at (``np.select`` took nothing from it
    there), or'ed with ``before``; None for a choice whose gradient is not an array the conditions so far
    broadcast to (a sum over entries some of which it did take), and None for a choicelist not a list."""
    if not isinstance(grads, (list, tuple)) or len(grads) != len(condlist):
        return None
    masks: list = []
    taken = np.zeros((), dtype=bool)  # some earlier condition holds
    for condition, grad in zip(condlist, grads):
        first = np.logical_and(np.asarray(condition, dtype=bool), ~taken)
        taken = np.logical_or(taken, np.asarray(condition, dtype=bool))
        masks.append(unselected(grad, first, True, before))
    return masks


def not_defaulted(grad, condlist, before=None):
    """The entries of the gradient of ``np.select``'s default where some condition holds (the default is
    not taken there), or'ed with ``before``; None as ``unselected`` gives it."""
    some = np.zeros((), dtype=bool)
    for condition in condlist:
        some = np.logical_or(some, np.asarray(condition, dtype=bool))
    return unselected(grad, some, False, before)


def nth(masks, *positions):
    """Where none of the items at ``positions`` of the masks ``unchosen`` made is taken: the one item's mask,
    and'ed for a value that stands at several (``np.select(c, [s, s])``); None where one of them is None."""
    if masks is None or any(masks[i] is None for i in positions):
        return None
    found = masks[positions[0]]
    for i in positions[1:]:
        found = found & masks[i] if np.shape(masks[i]) == np.shape(found) else None
        if found is None:
            return None
    return found


def cleaned(mask, grad):
    """``grad`` with zeros at ``mask`` (entries whose adjoint is structurally zero), where the shapes agree."""
    if mask is None:
        return grad
    if type(grad) is np.ndarray:  # np.shape and np.result_type without their dispatch
        return grad if grad.shape != mask.shape else np.where(mask, np.zeros((), grad.dtype), grad)
    if np.shape(grad) != mask.shape:
        return grad
    return np.where(mask, np.zeros((), np.result_type(grad)), grad)


_BOOL = np.dtype(bool)


def _joined(mask, before):
    if before is None or np.shape(before) != mask.shape:
        return mask
    return mask | before
