"""``torch.nn``: ``Parameter``, ``Module``, layers, losses and ``functional``."""

from . import functional
from .conv import AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d
from .modules import (
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, Dropout, Embedding, Flatten, HuberLoss, L1Loss, LayerNorm, LeakyReLU,
    Linear, LogSoftmax, MSELoss, NLLLoss, ReLU, Sequential, Sigmoid, SmoothL1Loss, Softmax, Tanh,
)
from .module import Module
from .parameter import Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from . import utils

__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "Dropout", "Embedding", "Flatten", "HuberLoss",
           "L1Loss", "LayerNorm", "LeakyReLU", "Linear", "LogSoftmax", "Module", "MSELoss", "NLLLoss", "Parameter",
           "ReLU", "Sequential", "Sigmoid", "SmoothL1Loss", "Softmax", "Tanh", "functional"]
__all__ += ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase", "utils"]
__all__ += ["AdaptiveAvgPool2d", "AvgPool1d", "AvgPool2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d"]
