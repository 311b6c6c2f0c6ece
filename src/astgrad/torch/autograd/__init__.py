"""``torch.autograd``: ``grad``, ``backward``, grad modes, ``functional`` and the legacy ``Variable``."""

import warnings

from ...tape import (
    Node, backward, enable_grad, from_numpy, grad, inference_mode, is_tensor, no_grad, set_grad_enabled,
)
from . import forward_ad, function, functional
from .function import Function

FLOAT_ONLY = "Only Tensors of floating point and complex dtype can require gradients"
VOLATILE_WARNING = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return is_tensor(obj)


class Variable(metaclass=_VariableMeta):
    """The pre-0.4 wrapper. Calling it returns a Tensor sharing ``data``'s storage."""

    def __new__(cls, data=None, requires_grad=False, volatile=None):
        if volatile is not None:
            warnings.warn(VOLATILE_WARNING, UserWarning, stacklevel=2)
        if not is_tensor(data):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if requires_grad and not (data.dtype.is_floating_point or data.dtype.is_complex):
            raise RuntimeError(FLOAT_ONLY)
        return from_numpy(data.detach().numpy()).requires_grad_(bool(requires_grad))


Variable.__module__ = "torch.autograd.variable"


class graph:
    """``torch.autograd.graph``: the node base class."""

    Node = Node


__all__ = ["Function", "Variable", "backward", "forward_ad", "function", "functional", "grad", "graph", "no_grad", "enable_grad",
           "set_grad_enabled", "inference_mode"]
