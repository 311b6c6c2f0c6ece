"""Module-level tensor functions (``cat``, ``stack``, ``where``, ``exp``, ...)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._factories import tensor
from ._record import apply_op, is_tensor

if TYPE_CHECKING:
    from ._tensor import Tensor


def _as_tensor(value):
    return value if is_tensor(value) else tensor(value)


def cat(tensors, dim: int = 0, *, axis: int | None = None):
    """Concatenate along an existing dimension (``CatBackward0``)."""
    axis = dim if axis is None else axis
    _check_cat_sizes(tensors, axis)
    return apply_op("CatBackward0", np.concatenate, (list(tensors),), {"axis": axis}, promote=True)


concatenate = concat = cat


def stack(tensors, dim: int = 0, *, axis: int | None = None):
    """Stack along a new dimension (``StackBackward0``)."""
    axis = dim if axis is None else axis
    shapes = [tuple(np.shape(_data(t))) for t in tensors]
    for i, shape in enumerate(shapes[1:], 1):
        if shape != shapes[0]:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shapes[0])} at entry 0 "
                               f"and {list(shape)} at entry {i}")
    return apply_op("StackBackward0", np.stack, (list(tensors),), {"axis": axis}, promote=True)


def _data(value):
    return value._data if is_tensor(value) else value


def _check_cat_sizes(tensors, axis) -> None:
    """PyTorch's message when the tensors differ outside the concatenation dimension."""
    shapes = [np.shape(_data(t)) for t in tensors]
    if not shapes or not shapes[0] or len({len(s) for s in shapes}) != 1:  # ``any`` is torch.any here
        return
    axis = axis % len(shapes[0])
    for i, shape in enumerate(shapes[1:], 1):
        for d, (expected, got) in enumerate(zip(shapes[0], shape)):
            if d != axis and expected != got:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {axis}. Expected size {expected} but got "
                    f"size {got} for tensor number {i} in the list."
                )


def where(condition, input, other) -> Tensor:
    """Elementwise choice; the condition never carries a gradient."""
    return apply_op("WhereBackward0", np.where, (condition, input, other), slots=((1,), (2,)), promote=True)


def einsum(equation, *operands):
    """``np.einsum`` of tensors, one node (``ViewBackward0``, PyTorch's name for ``einsum("i,i->", a, b)``).

    The operands may also come as one list, as ``torch.einsum("ij,jk", [a, b])``.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    return apply_op("ViewBackward0", np.einsum, (equation, *operands), promote=True)


def equal(a, b) -> bool:
    """True when both tensors have the same shape and elements."""
    return a.shape == b.shape and bool(np.array_equal(a._data, b._data))




def numel(t) -> int:
    return t.numel()


def _method(name: str):
    def call(input, *args, **kwargs):
        return getattr(_as_tensor(input), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``input.{name}(...)`` as a function."
    return call


_METHODS = (
    "add", "sub", "mul", "div", "pow", "neg", "exp", "log", "log1p", "expm1", "sin", "cos", "tan", "tanh",
    "sigmoid", "relu", "abs", "sqrt", "rsqrt", "square", "reciprocal", "sign", "floor", "ceil", "round",
    "clamp", "clip", "sum", "mean", "prod", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin",
    "norm", "all", "any", "cumsum", "matmul", "mm", "mv", "dot", "outer", "reshape", "flatten", "t",
    "transpose", "permute", "squeeze", "unsqueeze", "clone", "eq", "ne", "lt", "le", "gt", "ge",
    "maximum", "minimum", "softmax", "log_softmax", "split", "chunk", "unbind", "narrow", "gather", "masked_fill",
    "sort", "topk", "tril", "triu", "flip",
)


def _pow(input, exponent):
    """``input ** exponent``; a Python-number base gives ``PowBackward2`` as in torch."""
    if not is_tensor(input) and is_tensor(exponent):
        return exponent.__rpow__(input)
    return _as_tensor(input).pow(exponent)


_pow.__name__ = _pow.__qualname__ = "pow"

#: ``torch.<name>(tensor, ...)`` for every method name, kept out of this
#: module's namespace so ``sum``, ``max``, ``any``... stay Python's here.
FUNCTIONS = {name: _method(name) for name in _METHODS}
FUNCTIONS["pow"] = _pow
FUNCTIONS["absolute"] = FUNCTIONS["abs"]
FUNCTIONS["negative"] = FUNCTIONS["neg"]
