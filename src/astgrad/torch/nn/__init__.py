"""``torch.nn``: ``Parameter``, ``Module``, ``Linear`` and ``functional``."""

from . import functional
from .modules import Linear, Module
from .parameter import Parameter

__all__ = ["Linear", "Module", "Parameter", "functional"]
