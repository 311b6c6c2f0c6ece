"""``torch.nn.Module``, ``Linear``, ``Sequential``, activations and losses: what small models in examples use.

A module registers the ``Parameter``s and modules assigned to its attributes,
lists them (``parameters()``, ``named_parameters()``), clears their gradients
(``zero_grad()``) and prints as PyTorch prints it.  Initial values come from
the tape's generator (``torch.manual_seed``): repeatable, not PyTorch's numbers.
"""

from __future__ import annotations

import collections
import collections.abc
import math

import numpy as np


from ...tape import (
    CUDA_MISSING, DType, check_device, empty, float16, float32, float64, is_tensor, no_grad, ones, rand, randn,
    zeros,
)
from . import functional as F
from .parameter import Parameter

__all__ = ["Module", "Linear", "Sequential", "ReLU", "LeakyReLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
           "Flatten", "Embedding", "Dropout", "LayerNorm", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss",
           "CrossEntropyLoss", "BCELoss", "BCEWithLogitsLoss"]


_LAYERS: dict = {}


def _typename(value) -> str:
    """PyTorch's ``torch.typename``: ``torch.FloatTensor`` for a tensor, the class's name for anything else."""
    return value.type() if is_tensor(value) else type(value).__name__


class _IncompatibleKeys(collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: printed ``<All keys matched successfully>`` when both lists are empty."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class Module:
    """Base of every layer: attributes holding Parameters and Modules are registered in order."""

    def __init_subclass__(cls, **kwargs):
        """Each layer class defined in astgrad.torch.nn is recorded, so that a pickle can name it (``_new_module``)."""
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(f"{__package__}."):  # not a user's subclass: those pickle by their own module
            _LAYERS[cls.__name__] = cls

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        parameters = self.__dict__.get("_parameters")
        if parameters is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        buffers = self.__dict__.get("_buffers", {})  # a module pickled before buffers existed has none
        if isinstance(value, Parameter):
            self._forget(name, keep=parameters)
            parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name, keep=self._modules)
            self._modules[name] = value
        elif name in parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            parameters[name] = None
        elif name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = None
        elif name in buffers:
            if value is not None and not is_tensor(value):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.nn.Buffer, torch.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: dict) -> None:
        """``name`` leaves every store but ``keep``, the one it is about to enter (where it keeps its place)."""
        for store in (self.__dict__, self._parameters, self.__dict__.get("_buffers", {}), self._modules):
            if store is not keep:
                store.pop(name, None)
        self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)

    def __getattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            registered = self.__dict__.get(store)
            if registered is not None and name in registered:
                return registered[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self.__dict__.get("_buffers", {}), self._modules):
            if name in store:
                del store[name]
                self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)
                return
        object.__delattr__(self, name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def __reduce_ex__(self, protocol):
        """Pickle this package's layers by their name here: the module they print (``torch.nn...``) may not exist."""
        cls = type(self)
        if _LAYERS.get(cls.__name__) is not cls:  # the user's own subclass: pickled by its own module, as usual
            return super().__reduce_ex__(protocol)
        return _new_module, (cls.__name__,), dict(self.__dict__)

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """A tensor that is state but not a parameter (no gradient from the optimizer): ``self.name`` reads it,
        ``state_dict()`` holds it unless ``persistent=False``, and ``to(dtype)`` casts it if it is floating."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name(name, "buffer", registered=self._buffers)
        if tensor is not None and not is_tensor(tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' (torch Tensor or None "
                            "required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """``(dotted name, buffer)`` pairs, this module's first (each buffer once unless ``remove_duplicate=False``)."""
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, b in module.__dict__.get("_buffers", {}).items():
                if b is None or remove_duplicate and id(b) in seen:
                    continue
                seen.add(id(b))
                yield (f"{module_prefix}.{name}" if module_prefix else name), b

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def register_parameter(self, name: str, param) -> None:
        """``self.name = param`` with PyTorch's checks of the name; ``None`` reserves the name (no parameter)."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name(name, "parameter", registered=self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' (torch.nn.Parameter "
                            "or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param

    def add_module(self, name: str, module) -> None:
        """``self.name = module`` with PyTorch's checks of the name; ``None`` reserves the name."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._check_name(name, "module", registered=self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_name(self, name, kind: str, registered: dict) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registered:
            raise KeyError(f"attribute '{name}' already exists")

    def apply(self, fn) -> "Module":
        """``fn(module)`` for every submodule, children first, then this module (``model.apply(init_weights)``)."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """``(dotted name, parameter)`` pairs, each parameter once, this module's first."""
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, p in module._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{module_prefix}.{name}" if module_prefix else name), p

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_modules(self, prefix: str = ""):
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.detach_().zero_()

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """Every parameter under its dotted name, in registration order, as PyTorch names them.

        The values are ``detach()``ed parameters sharing their storage (the
        parameters themselves with ``keep_vars=True``): a later step changes
        them too, so keep a copy (``copy.deepcopy``) of a state you want to
        come back to.  A parameter tied under two names is listed under both.
        """
        destination = collections.OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._persistent_buffers().items():
            destination[prefix + name] = b if keep_vars else b.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy ``state_dict``'s tensors into the parameters of the same names (in place, cast to their dtype).

        ``strict`` refuses missing and unexpected names with PyTorch's
        message; a tensor of another shape is refused whatever ``strict``
        says.  ``assign=True`` puts the given tensors in place of the
        parameters instead of copying (as Parameters, keeping
        ``requires_grad``).  Returns ``(missing_keys, unexpected_keys)``.
        """
        if not isinstance(state_dict, collections.abc.Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        self._load_state(dict(state_dict), "", assign, missing, unexpected, errors)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__,
                                                                                   "\n\t".join(errors)))
        return _IncompatibleKeys(missing, unexpected)

    def _persistent_buffers(self) -> dict:
        skipped = self.__dict__.get("_non_persistent_buffers_set", set())
        return {name: b for name, b in self.__dict__.get("_buffers", {}).items() if b is not None and name not in skipped}

    def _load_state(self, state_dict: dict, prefix: str, assign: bool, missing: list, unexpected: list,
                    errors: list) -> None:
        """This module's part of ``load_state_dict``, then its children's, each seeing the keys under its prefix."""
        local = {name: p for name, p in self._parameters.items() if p is not None}
        local.update(self._persistent_buffers())
        for name, p in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            given = state_dict[key]
            if not is_tensor(given):
                errors.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                              f"object from checkpoint but received {type(given)}")
                continue
            if p.dim() == 0 and given.dim() == 1 and given.shape[0] == 1:
                given = given[0]
            if given.shape != p.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape {given.shape} from checkpoint, "
                              f"the shape in current model is {p.shape}.")
                continue
            try:
                with no_grad():
                    if assign and isinstance(p, Parameter):
                        replacement = given if isinstance(given, Parameter) else Parameter(given, p.requires_grad)
                        setattr(self, name, replacement.requires_grad_(p.requires_grad))
                    elif assign:  # a buffer
                        setattr(self, name, given)
                    else:
                        p.copy_(given)
            except Exception as error:
                errors.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                              f"{p.size()} and whose dimensions in the checkpoint are {given.size()}, an exception "
                              f"occurred : {error.args}.")
        for key in state_dict:
            if key.startswith(prefix):
                head = key[len(prefix):].split(".", 1)
                if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local):
                    unexpected.append(key)
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = f"{prefix}{name}."
                child._load_state({k: v for k, v in state_dict.items() if k.startswith(child_prefix)}, child_prefix,
                                  assign, missing, unexpected, errors)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def _cast(self, dtype, only_floating: bool = True) -> "Module":
        """Every parameter (and its ``.grad``) cast to ``dtype`` in place: the Parameter objects stay the same.

        Buffers are replaced by cast copies, as PyTorch replaces them.
        """
        for p in self.parameters():
            if only_floating and not (p.is_floating_point() or p.is_complex()):
                continue
            p.data = p.data.to(dtype)
            if p.grad is not None:
                p.grad = p.grad.to(dtype)
        for module in self.modules():
            buffers = module.__dict__.get("_buffers", {})
            for name, b in buffers.items():
                if b is not None and (not only_floating or b.is_floating_point() or b.is_complex()):
                    buffers[name] = b.to(dtype)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``: the CPU is the only device here.

        A dtype casts the floating point and complex parameters, as PyTorch does.
        """
        kwargs.pop("non_blocking", None)
        dtype = kwargs.get("dtype")
        given = list(args)
        if given and is_tensor(given[0]):
            dtype = given[0].dtype
        else:
            if given and not isinstance(given[0], (DType, np.dtype, type)):
                check_device(given.pop(0))
            if "device" in kwargs:
                check_device(kwargs["device"])
            if given:
                dtype = given[0]
        if dtype is None:
            return self
        desired = empty(0, dtype=dtype).dtype
        if not (desired.is_floating_point or desired.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={desired}")
        return self._cast(dtype)

    def cpu(self) -> "Module":
        return self

    def cuda(self, device=None) -> "Module":
        raise AssertionError(CUDA_MISSING)

    def double(self) -> "Module":
        return self._cast(float64)

    def float(self) -> "Module":
        return self._cast(float32)

    def half(self) -> "Module":
        return self._cast(float16)

    def type(self, dst_type) -> "Module":
        return self._cast(dst_type, only_floating=False)

    def train(self, mode: bool = True) -> "Module":
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not self._modules:
            return f"{type(self).__name__}({extra})"
        return type(self).__name__ + "(\n  " + "\n  ".join(lines) + "\n)"


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


_LAYERS["Module"] = Module
Module.__module__ = "torch.nn.modules.module"
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

def _new_module(name: str) -> Module:
    """An empty instance of this package's layer class ``name``; unpickling then restores its attributes."""
    cls = _LAYERS.get(name)
    if cls is None:
        raise TypeError(f"{name!r} is not a layer of astgrad.torch.nn")
    return cls.__new__(cls)


Sequential.__module__ = "torch.nn.modules.container"
Flatten.__module__ = "torch.nn.modules.flatten"
