"""``nn.Conv1d``, ``nn.Conv2d`` and the pooling layers, with PyTorch's attributes, parameter shapes and reprs.

Initial values follow PyTorch's distribution (kaiming-uniform with
``a=sqrt(5)``: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the
bias, ``fan_in = in_channels / groups * prod(kernel_size)``), drawn from the
tape's generator: repeatable, not PyTorch's numbers.
"""

from __future__ import annotations

import math

from ...tape import check_device, empty, no_grad, rand
from . import functional as F
from .module import Module
from .parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool2d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, spatial: int) -> tuple:
    if isinstance(value, int):
        return (value,) * spatial
    value = tuple(value)
    return value * spatial if len(value) == 1 else value


class _ConvNd(Module):
    spatial = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None):
        super().__init__()
        check_device(device)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'replicate', 'circular', 'reflect'}}, but got "
                             f"padding_mode='{padding_mode}'")
        if padding_mode != "zeros":
            raise NotImplementedError(f"astgrad.torch: padding_mode='{padding_mode}' is not supported; pad the input "
                                      "yourself and use padding_mode='zeros' with padding=0")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, self.spatial)
        self.stride, self.dilation = _tuple(stride, self.spatial), _tuple(dilation, self.spatial)
        self.padding: str | tuple
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of {{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _tuple(padding, self.spatial)
        self.transposed, self.output_padding = False, (0,) * self.spatial
        self.padding_mode = padding_mode
        self.weight = Parameter(empty((out_channels, in_channels // groups, *self.kernel_size), dtype=dtype))
        self._parameters["bias"] = Parameter(empty(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the weight and the bias."""
        fan_in = self.in_channels // self.groups * math.prod(self.kernel_size)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        with no_grad():
            for p in self._parameters.values():
                if p is not None:
                    p.copy_(rand(*p.shape, dtype=p.dtype) * (2 * bound) - bound)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self.spatial:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self.spatial:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv1d(_ConvNd):
    """``F.conv1d`` with a weight (out_channels, in_channels / groups, kernel_size) and a bias."""

    spatial = 1

    def forward(self, input):
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """``F.conv2d`` with a weight (out_channels, in_channels / groups, *kernel_size) and a bias."""

    spatial = 2

    def forward(self, input):
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """``F.max_pool1d`` as a layer."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """``F.max_pool2d`` as a layer."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool1d(Module):
    """``F.avg_pool1d`` as a layer; its settings are kept as one-element tuples, as PyTorch keeps them."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, 1)
        self.stride = _tuple(stride if stride is not None else kernel_size, 1)
        self.padding = _tuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """``F.avg_pool2d`` as a layer."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """``F.adaptive_avg_pool2d`` as a layer (output sizes that divide the input's)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


Conv1d.__module__ = Conv2d.__module__ = "torch.nn.modules.conv"
for _pooling in (MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool2d):
    _pooling.__module__ = "torch.nn.modules.pooling"
