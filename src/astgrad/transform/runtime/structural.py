"""Structural zeros: entries of a gradient that are zero because of the program's structure.

``inv_r = 1 / np.sqrt(r2); inv_r[r2 == 0] = 0``: the entries the item
assignment overwrites reach nothing, so their adjoint is exactly zero; the
rule of ``1 / np.sqrt(r2)`` multiplies it by the derivative there, which is
infinite, and ``0 * inf`` is NaN (JAX's and PyTorch's "double where" trap).
The same holds for the side of ``np.where(c, a, b)`` it does not select.

The reverse sweep knows where such zeros stand and carries them as a mask:
``written`` (the entries an item assignment overwrote) and ``unselected``
(the entries ``np.where`` did not take from an operand) make it beside the
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

__all__ = ["written", "unselected", "cleaned"]


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
    condition = np.asarray(condition, dtype=bool)
    if np.broadcast_shapes(condition.shape, grad.shape) != grad.shape:
        return None
    mask = np.broadcast_to(~condition if taken else condition, grad.shape)
    if before is not None and np.shape(before) != grad.shape:
        return None
    return _joined(mask, before)


def cleaned(mask, grad):
    """``grad`` with zeros at ``mask`` (entries whose adjoint is structurally zero), where the shapes agree."""
    if mask is None or np.shape(grad) != mask.shape:
        return grad
    return np.where(mask, np.zeros((), np.result_type(grad)), grad)


def _joined(mask, before):
    if before is None or np.shape(before) != mask.shape:
        return mask
    return mask | before
