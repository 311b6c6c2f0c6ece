"""``clip_grad_norm_`` and ``clip_grad_value_``: the parameters' ``.grad`` rescaled or clamped in place.

Both run under ``no_grad`` as in PyTorch (the returned norm has no
``grad_fn``); ``foreach`` is accepted and changes nothing here.
"""

import math

from ....tape import is_tensor, no_grad, stack, tensor
from ... import linalg


def _parameters(parameters):
    return [parameters] if is_tensor(parameters) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale every gradient by ``max_norm / (total norm + 1e-6)`` when that is below 1; return the total norm.

    The total norm is the ``norm_type`` norm of all gradients as one vector
    (``'inf'`` for the largest magnitude), computed before clipping.
    """
    grads = [p.grad for p in _parameters(parameters) if p.grad is not None]
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        total = linalg.vector_norm(stack([linalg.vector_norm(g, norm_type) for g in grads]), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
        scale = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _parameters(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
