"""``torch.optim``: the optimizers of PyTorch's tutorials and ``lr_scheduler``, with PyTorch's update rules.

``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad`` and ``Adadelta``
update as PyTorch's single-tensor implementations do, print as PyTorch's
(``repr`` lists each group's settings), and save and load their state with
``state_dict()`` / ``load_state_dict()``.
"""

from . import lr_scheduler
from .algorithms import SGD, Adadelta, Adagrad, Adam, AdamW, RMSprop
from .optimizer import Optimizer

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr_scheduler"]
