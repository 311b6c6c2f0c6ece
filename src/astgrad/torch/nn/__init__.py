"""``torch.nn``: ``Parameter``, ``Module``, layers, losses and ``functional``."""

from . import functional
from .conv import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .modules import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout, Embedding, Flatten, HuberLoss, L1Loss, LayerNorm, LeakyReLU,
    Linear, LogSoftmax, Module, MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, SmoothL1Loss, Softmax, Tanh,
)
from .parameter import Parameter

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "HuberLoss",
           "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "Module", "MSELoss", "NLLLoss", "Parameter",
           "ReLU", "Sequential", "Sigmoid", "SmoothL1Loss", "Softmax", "Tanh", "functional"]
__all__ += ["AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d"]
