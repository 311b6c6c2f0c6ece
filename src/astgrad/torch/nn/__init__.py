"""``torch.nn``: ``Parameter``, ``Module``, layers, losses and ``functional``."""

from . import functional
from .modules import (
    BCELoss, CrossEntropyLoss, Flatten, LeakyReLU, Linear, LogSoftmax, Module, MSELoss, NLLLoss, ReLU, Sequential,
    Sigmoid, Softmax, Tanh,
)
from .parameter import Parameter

__all__ = ["BCELoss", "CrossEntropyLoss", "Flatten", "LeakyReLU", "Linear", "LogSoftmax", "Module", "MSELoss",
           "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "functional"]
