"""``import astgrad.torch as torch``: PyTorch's autograd names over the taped engine.

A facade only: every name is the taped engine's own object, under the name
PyTorch tutorials use.  ``astgrad.torch`` is a package (not one module as
DESIGN.md sketches) so that ``from astgrad.torch.autograd import Variable``
works like the original import in the legacy tutorials.
"""

import builtins as _builtins

import numpy as _np

from ..tape import (
    DType, Generator, Size, Tensor, arange, as_tensor, bfloat16, bool_ as bool, cat, complex64, complex128, concat,
    concatenate, device, einsum, empty, enable_grad, equal, eye, float16, float32, float64, from_numpy, full, full_like,
    get_default_device, get_default_dtype, inference_mode, int8, int16, int32, int64, is_grad_enabled, is_inference_mode_enabled,
    is_tensor, linspace, manual_seed, no_grad, numel, ones, ones_like, rand, randint, randn, randn_like, randperm,
    set_default_device, set_default_dtype, set_grad_enabled, stack, tensor, uint8, where, zeros, zeros_like,
)
from ..tape import FUNCTIONS as _FUNCTIONS
from . import accelerator, autograd, backends, cuda, func, linalg, nn, optim, utils
from .serialization import load, save

globals().update(_FUNCTIONS)

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
dtype = DType


def _legacy_constructor(np_dtype_name: str, type_name: str):
    """``torch.FloatTensor([...])`` and friends: a tensor of a fixed dtype."""

    np_dtype = _np.dtype(np_dtype_name)

    def construct(*args):
        if len(args) == 1 and not isinstance(args[0], _builtins.int):
            return tensor(args[0], dtype=np_dtype)
        return zeros(*args, dtype=np_dtype)

    construct.__name__ = construct.__qualname__ = type_name
    return construct


FloatTensor = _legacy_constructor("float32", "FloatTensor")
DoubleTensor = _legacy_constructor("float64", "DoubleTensor")
LongTensor = _legacy_constructor("int64", "LongTensor")
IntTensor = _legacy_constructor("int32", "IntTensor")
BoolTensor = _legacy_constructor("bool", "BoolTensor")
