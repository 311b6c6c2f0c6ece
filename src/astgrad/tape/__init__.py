"""The taped engine: a numpy-backed Tensor with PyTorch's autograd semantics.

These names are the tape's public API; ``astgrad.torch`` is built on them
alone.  ``apply_op`` is the one door through which an operation is recorded:
a new tensor function computes with numpy and names its node, and the rule
table differentiates it.
"""

from . import _copying, _inplace, _methods, _numpy_protocol, _selecting, _shaping  # noqa: F401  (Tensor's methods)
from ._autograd import backward, grad, is_checkpoint_valid
from ._dual import (
    UnpackedDualTensor, enter_dual_level, exit_dual_level, make_dual, set_tangent, tangent_of, unpack_dual,
)
from ._examples import RANDOMNESS, ExampleLoop, inside_transform
from ._device import CUDA_MISSING, check_device, device, get_default_device, set_default_device
from ._dtypes import (
    DType, Size, bfloat16, bool_, complex64, complex128, float16, float32, float64, get_default_dtype, int8, int16,
    int32, int64, set_default_dtype, uint8,
)
from ._factories import (
    Generator, arange, as_tensor, empty, eye, from_numpy, full, full_like, linspace, manual_seed, ones,
    generator_state, ones_like, rand, randint, randn, randn_like, randperm, set_generator_state, tensor, zeros,
    zeros_like,
)
from ._gathering import OutputGradients, record_gathering
from ._functions import FUNCTIONS, cat, concat, concatenate, einsum, equal, numel, stack, where
from ._graph import AccumulateGrad, Node
from ._modes import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from ._record import apply_op, is_tensor
from ._tensor import RemovableHandle, Tensor
