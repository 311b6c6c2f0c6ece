"""``torch.nn.Module`` and ``torch.nn.Linear``: what small models in autograd examples use.

A module registers the ``Parameter``s and modules assigned to its attributes,
lists them (``parameters()``, ``named_parameters()``), clears their gradients
(``zero_grad()``) and prints as PyTorch prints it.  Initial values come from
the tape's generator (``torch.manual_seed``): repeatable, not PyTorch's numbers.
"""

from __future__ import annotations

import math

from ...tape import empty, no_grad, rand
from . import functional as F
from .parameter import Parameter

__all__ = ["Module", "Linear"]


class Module:
    """Base of every layer: attributes holding Parameters and Modules are registered in order."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        parameters = self.__dict__.get("_parameters")
        if parameters is None:
            raise AttributeError("cannot assign parameters before Module.__init__() call")
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            self._modules.pop(name, None)
            parameters[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
            parameters.pop(name, None)
            self._modules[name] = value
        elif name in parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            parameters[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        for store in ("_parameters", "_modules"):
            registered = self.__dict__.get(store)
            if registered is not None and name in registered:
                return registered[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in (self._parameters, self._modules):
            if name in store:
                del store[name]
                return
        object.__delattr__(self, name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

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

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

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


Module.__module__ = "torch.nn.modules.module"
Linear.__module__ = "torch.nn.modules.linear"
