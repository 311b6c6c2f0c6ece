"""``torch.nn.Module``: registering parameters, buffers and submodules, listing them, state dicts, modes.

A module registers the ``Parameter``s, buffers and modules assigned to its
attributes, lists them (``parameters()``, ``named_parameters()``,
``buffers()``), clears their gradients (``zero_grad()``), gives and loads
state dicts with PyTorch's key names and messages, and prints as PyTorch
prints it.  Every layer class defined in ``astgrad.torch.nn`` is recorded
here by name, so that a pickle can name it (``_new_module``).
"""

from __future__ import annotations

import collections
import collections.abc

import numpy as np


from ...tape import (
    CUDA_MISSING, DType, check_device, empty, float16, float32, float64, is_tensor, no_grad,
)
from .parameter import Parameter


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


def _new_module(name: str) -> Module:
    """An empty instance of this package's layer class ``name``; unpickling then restores its attributes."""
    cls = _LAYERS.get(name)
    if cls is None:
        raise TypeError(f"{name!r} is not a layer of astgrad.torch.nn")
    return cls.__new__(cls)


_LAYERS["Module"] = Module
Module.__module__ = "torch.nn.modules.module"
