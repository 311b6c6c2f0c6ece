"""``astgrad.autograd``: ``backward`` and ``grad`` on the taped engine."""

from .tape import Node, backward, enable_grad, grad, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Node", "no_grad", "enable_grad", "set_grad_enabled"]
