"""``Linear``, ``Sequential``, activations, losses, ``Embedding``, ``Dropout``, ``LayerNorm``: what small models use.

Initial values come from the tape's generator (``torch.manual_seed``):
repeatable, not PyTorch's numbers.
"""

from __future__ import annotations

import collections
import collections.abc
import math



from ...tape import (
    check_device, empty, no_grad, ones, rand, randn,
    zeros,
)
from . import functional as F
from .parameter import Parameter

from .module import Module, _new_module  # noqa: F401  (_new_module: pickles name it here)

__all__ = ["Linear", "Sequential", "ReLU", "LeakyReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Embedding", "Dropout", "LayerNorm", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss"]


class Linear(Module):
    """``y = x W^T + b`` with ``W`` (out x in) and ``b`` drawn uniformly from +-1/sqrt(in_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty((out_features, in_features), dtype=dtype))
        self._parameters["bias"] = Parameter(empty(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias."""
        bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
        with no_grad():
            for p in self._parameters.values():
                if p is not None:
                    p.copy_(rand(*p.shape, dtype=p.dtype) * (2 * bound) - bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


Linear.__module__ = "torch.nn.modules.linear"


class Sequential(Module):
    """Modules called one after another, registered as ``0``, ``1``, ... (or by the keys of an OrderedDict)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], collections.OrderedDict):
            for name, module in modules[0].items():
                self._modules[name] = module
        else:
            for index, module in enumerate(modules):
                self._modules[str(index)] = module

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(collections.OrderedDict(list(self._modules.items())[index]))
        return modules[index]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module) -> "Sequential":
        self._modules[str(len(self._modules))] = module
        return self

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


def _activation(name: str, function, doc: str, **defaults):
    """A Module class calling ``function(input, **its settings)``; printed with the settings that have names."""

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        settings = dict(defaults)
        settings.update(zip(defaults, args))
        settings.update(kwargs)
        for key, value in settings.items():
            object.__setattr__(self, key, value)

    def forward(self, input):
        return function(input, **{key: getattr(self, key) for key in defaults})

    def extra_repr(self) -> str:
        shown = [f"{key}={getattr(self, key)}" for key in defaults if key != "inplace" or getattr(self, key)]
        return ", ".join(shown)

    cls = type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                 "__doc__": doc})
    cls.__module__ = "torch.nn.modules.activation"
    return cls


ReLU = _activation("ReLU", F.relu, "``F.relu`` as a layer.", inplace=False)
LeakyReLU = _activation("LeakyReLU", F.leaky_relu, "``F.leaky_relu`` as a layer.", negative_slope=0.01,
                        inplace=False)
Tanh = _activation("Tanh", F.tanh, "``F.tanh`` as a layer.")
Sigmoid = _activation("Sigmoid", F.sigmoid, "``F.sigmoid`` as a layer.")
Softmax = _activation("Softmax", F.softmax, "``F.softmax`` along ``dim`` as a layer.", dim=None)
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "``F.log_softmax`` along ``dim`` as a layer.", dim=None)


class Flatten(Module):
    """``input.flatten(start_dim, end_dim)``: by default every dimension but the batch."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _loss(name: str, function, doc: str, **defaults):
    """A loss Module: ``function(input, target, reduction=..., **settings)``; printed as ``MSELoss()``."""

    def __init__(self, *args, size_average=None, reduce=None, reduction="mean", **kwargs):
        Module.__init__(self)
        settings = dict(defaults)
        settings.update(zip(defaults, args))
        settings.update(kwargs)
        if size_average is not None or reduce is not None:
            reduction = F._reduction(size_average, reduce, reduction)
        object.__setattr__(self, "reduction", reduction)
        for key, value in settings.items():
            object.__setattr__(self, key, value)

    def forward(self, input, target):
        return function(input, target, reduction=self.reduction, **{key: getattr(self, key) for key in defaults})

    cls = type(name, (Module,), {"__init__": __init__, "forward": forward, "__doc__": doc})
    cls.__module__ = "torch.nn.modules.loss"
    return cls


MSELoss = _loss("MSELoss", F.mse_loss, "``F.mse_loss`` as a Module.")
NLLLoss = _loss("NLLLoss", F.nll_loss, "``F.nll_loss`` as a Module.", weight=None, ignore_index=-100)
CrossEntropyLoss = _loss("CrossEntropyLoss", F.cross_entropy, "``F.cross_entropy`` as a Module.", weight=None,
                         ignore_index=-100, label_smoothing=0.0)
BCELoss = _loss("BCELoss", F.binary_cross_entropy, "``F.binary_cross_entropy`` as a Module.", weight=None)
BCEWithLogitsLoss = _loss("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits,
                          "``F.binary_cross_entropy_with_logits`` as a Module.", weight=None, pos_weight=None)
L1Loss = _loss("L1Loss", F.l1_loss, "``F.l1_loss`` as a Module.")
SmoothL1Loss = _loss("SmoothL1Loss", F.smooth_l1_loss, "``F.smooth_l1_loss`` as a Module.", beta=1.0)
HuberLoss = _loss("HuberLoss", F.huber_loss, "``F.huber_loss`` as a Module.", delta=1.0)


class Embedding(Module):
    """A table of ``num_embeddings`` vectors of ``embedding_dim``, drawn from N(0, 1); the padding row starts at 0."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        check_device(device)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, scale_grad_by_freq, sparse
        weight = randn(num_embeddings, embedding_dim, dtype=dtype) if _weight is None else _weight.detach()
        self.weight = Parameter(weight, requires_grad=not _freeze)
        if _weight is None and padding_idx is not None:
            self.weight.detach().numpy()[padding_idx] = 0  # the padding row starts at zero

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, **kwargs) -> "Embedding":
        rows, columns = embeddings.shape
        return cls(rows, columns, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze, **kwargs)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            text += f", padding_idx={self.padding_idx}"
        return text


class Dropout(Module):
    """``F.dropout`` while training (``model.train()``), the identity after ``model.eval()``."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class LayerNorm(Module):
    """``F.layer_norm`` over the trailing ``normalized_shape`` axes, with a weight of ones and a bias of zeros."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        check_device(device)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, dtype=dtype))
            self._parameters["bias"] = Parameter(zeros(*self.normalized_shape, dtype=dtype)) if bias else None
        else:
            self._parameters["weight"] = None
            self._parameters["bias"] = None

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


Embedding.__module__ = "torch.nn.modules.sparse"
Dropout.__module__ = "torch.nn.modules.dropout"
LayerNorm.__module__ = "torch.nn.modules.normalization"


Sequential.__module__ = "torch.nn.modules.container"
Flatten.__module__ = "torch.nn.modules.flatten"
