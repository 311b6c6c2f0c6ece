"""``astgrad.autograd``: ``backward`` and ``grad`` on the taped engine."""

from .tape import backward, grad
from .tape._graph import Node
from .tape._modes import enable_grad, no_grad, set_grad_enabled

__all__ = ["backward", "grad", "Node", "no_grad", "enable_grad", "set_grad_enabled"]
